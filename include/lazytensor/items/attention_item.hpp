// SPDX-License-Identifier: MIT
// The attention item: softmax(f(q @ kt), -1) @ v as one kernel (ir/attention.hpp), where the
// backend fuses it (schedule/fuse_attention.hpp makes it from a product, a row softmax and a
// product). The scores and the weights are computed on the way and reach memory only where a
// tensor outside the graph holds them: then the item runs as the three items it stands for.
#pragma once

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../ir/attention.hpp"
#include "item.hpp"

namespace lazytensor::detail {

struct AttentionItem : ItemDefaults {
    static constexpr ScheduleItem::Kind kind = ScheduleItem::Kind::Attention;
    ir::Attention attention;
    int scores = -1, weights = -1;  // the nodes computed on the way

    SmallVector<int, 3> fused_away() const { return {scores, weights}; }
    void describe(ScheduleItem& item, Device) const { item.ir = ir::to_string(attention); }
    std::string routine(Backend& backend) const { return backend.attention_routine(attention); }
    std::string source(Backend& backend, const CompiledKernel*) const { return backend.attention_source(attention); }
    /// Both products (the softmax's exponentials are not counted).
    double flops() const {
        const ir::Gemm& s = attention.scores;
        return 2.0 * static_cast<double>(s.batch_count() * s.m) * static_cast<double>(s.n) *
               static_cast<double>(s.k + attention.values.n);
    }

    /// Builds the one kernel (where a realize keeps neither the scores nor the weights, the
    /// common case: otherwise its products and softmax build at their first run).
    void prepare(Backend& backend) const { backend.prepare_attention(attention); }
    /// params: q, kt, v, out.
    void run(const ItemRun& r) const {
        const ir::Attention& a = attention;
        if (!r.keeps(scores) && !r.keeps(weights))
            return r.backend.attention(a, *r.params[0], *r.params[1], *r.params[2], r.out(), r.scalars);
        const std::int64_t count = a.scores.batch_count() * a.scores.m * a.scores.n;
        BufferPtr s = r.backend.allocate(DType::Float32, count), w = r.backend.allocate(DType::Float32, count);
        r.backend.gemm(a.scores, *r.params[0], *r.params[1], *s);
        r.backend.launch(*r.backend.get_kernel(a.softmax), {s.get(), w.get()}, r.scalars);
        r.backend.gemm(a.values, *w, *r.params[2], r.out());
        if (r.keeps(scores)) r.produced[static_cast<std::size_t>(scores)] = std::move(s);
        if (r.keeps(weights)) r.produced[static_cast<std::size_t>(weights)] = std::move(w);
    }

    /// On the host as its three items. Magnitudes: the weights times |v|, each row scaled by 1 +
    /// its largest |f(score)| (an error in a score moves the output by about that error times
    /// the weighted values).
    const char* reference(const HostRun& h) const {
        Backend& host = h.host;
        const ir::Attention& a = attention;
        const std::int64_t rows = a.scores.batch_count() * a.scores.m, keys = a.scores.n, depth = a.values.n;
        BufferPtr s = host.allocate(DType::Float32, rows * keys), w = host.allocate(DType::Float32, rows * keys);
        host.gemm(a.scores, *h.params[0], *h.params[1], *s);
        interpret_on_host(host, a.softmax, {s.get(), w.get()}, h.scalars, false);
        const char* what = "the host's packed GEMM and interpreter, as three items";
        if (!h.magnitudes) {
            host.gemm(a.values, *w, *h.params[2], *h.params[3]);
            return what;
        }
        const BufferPtr absolute = absolute_copy(host, *h.params[2]);
        host.gemm(a.values, *w, *absolute, *h.params[3]);
        interpret_on_host(host, a.score_function, {s.get(), w.get()}, h.scalars, false);  // f(s), for each row's largest
        const auto* fs = static_cast<const float*>(w->handle());
        auto* out = static_cast<float*>(h.params[3]->handle());
        for (std::int64_t r = 0; r < rows; ++r) {
            float largest = 0;
            for (std::int64_t j = 0; j < keys; ++j) largest = std::max(largest, std::fabs(fs[r * keys + j]));
            for (std::int64_t c = 0; c < depth; ++c) out[r * depth + c] *= 1 + largest;
        }
        return what;
    }
    std::string listing() const { return "--- attention ---\n" + ir::to_string(attention); }
};

}  // namespace lazytensor::detail
