// SPDX-License-Identifier: MIT
// The FFT item: an fft node (ir/fft.hpp) run by the backend's FFT, from its operand's contiguous
// memory into a buffer of its own. An operand that is not contiguous from offset 0 (a lazy
// expression, a transposed view) is materialized first by a kernel, into which what produces it
// fuses; what reads the result (a scale, the magnitude of a spectrum) fuses into the next kernel.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "../ir/fft.hpp"
#include "../schedule/schedule.hpp"
#include "item.hpp"

namespace lazytensor::detail {

struct FftItem : ItemDefaults {
    static constexpr ScheduleItem::Kind kind = ScheduleItem::Kind::Fft;
    ir::Fft call;

    /// Lowers group g (its root an fft node): g.inputs is the operand's buffer, or the operand
    /// is materialized first.
    static std::optional<Materialize> lower(const Schedule& s, Group& g) {
        g.inputs.clear();
        Node* operand = g.root->src[0].get();
        Reached r = walk_views(s, &g, operand, IndexMap::identity(operand->shape));
        if (!r.load || r.access.offset != 0 || !is_contiguous_layout(operand->shape, r.access.strides, 0))
            return Materialize{operand, "operand of an fft (read from contiguous memory)", true};
        g.inputs.push_back(r.node);
        g.kernel = ir::Kernel{};
        g.scalars.clear();
        g.ops = {"fft"};
        return std::nullopt;
    }
    static FftItem of(const Group& g) {
        FftItem item;
        item.call = graph::fft_call(*g.root);
        return item;
    }

    void describe(ScheduleItem& item, Device) const { item.ir = ir::to_string(call); }
    std::string routine(Backend& backend) const { return backend.fft_routine(call); }
    double flops() const {
        double n = 1;
        for (int a : call.axes) n *= static_cast<double>(call.shape[static_cast<std::size_t>(a)]);
        const double lines = static_cast<double>(numel(call.shape)) / n;
        return (call.kind == FftKind::C2C ? 5.0 : 2.5) * lines * n * std::log2(n > 1 ? n : 2);
    }
    void run(const ItemRun& r) const { r.backend.fft(call, *r.params[0], r.out()); }
    /// The host's transform; magnitudes: each output element's bound, the scale times the sum of
    /// the absolute values of the elements of its transform block (an FFT's output is a sum of
    /// the inputs times unit roots).
    const char* reference(const HostRun& h) const {
        if (!h.magnitudes) {
            h.host.fft(call, *h.params[0], *h.params.back());
            return "the host's FFT";
        }
        visit_dtype(call.dtype, [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
                magnitudes(static_cast<const T*>(h.params[0]->handle()), static_cast<T*>(h.params.back()->handle()));
        });
        return "the host's FFT";
    }
    /// The FFT computes sums in another order on a device, with other twiddles: ~log2 n ulps.
    void widen_tolerance(CheckTolerance& t, DType) const {
        double n = 1;
        for (int a : call.axes) n *= static_cast<double>(call.shape[static_cast<std::size_t>(a)]);
        t.atol *= 4 * std::log2(n > 2 ? n : 2);
    }
    std::string listing() const { return "--- fft ---\n" + ir::to_string(call); }

private:
    /// out[e] = |scale| * sum over e's block of |in| (complex elements: |re| + |im|; C2R counts
    /// the bins it mirrors twice).
    template <class T>
    void magnitudes(const T* in, T* out) const {
        const Shape in_shape = call.kind == FftKind::R2C ? call.shape : call.complex_shape();
        const Shape out_shape = call.kind == FftKind::C2R ? call.shape : call.complex_shape();
        const int pair_in = call.kind == FftKind::R2C ? 1 : 2, pair_out = call.kind == FftKind::C2R ? 1 : 2;
        const std::size_t rank = in_shape.size();
        std::vector<bool> transformed(rank, false);
        for (int a : call.axes) transformed[static_cast<std::size_t>(a)] = true;
        // Blocks are numbered by the indices along the axes not transformed (row-major).
        auto block_of = [&](std::int64_t flat, const Shape& shape) {
            std::int64_t block = 0, stride = 1;
            for (std::size_t d = rank; d-- > 0;) {
                const std::int64_t i = flat % shape[d];
                flat /= shape[d];
                if (!transformed[d]) {
                    block += i * stride;
                    stride *= shape[d];
                }
            }
            return block;
        };
        std::int64_t blocks = 1;
        for (std::size_t d = 0; d < rank; ++d)
            if (!transformed[d]) blocks *= in_shape[d];
        std::vector<double> sum(static_cast<std::size_t>(blocks), 0.0);
        const double factor = call.kind == FftKind::C2R ? 2 : 1;
        for (std::int64_t e = 0; e < numel(in_shape); ++e) {
            double m = 0;
            for (int p = 0; p < pair_in; ++p) m += std::fabs(static_cast<double>(in[e * pair_in + p]));
            sum[static_cast<std::size_t>(block_of(e, in_shape))] += m;
        }
        for (std::int64_t e = 0; e < numel(out_shape); ++e)
            for (int p = 0; p < pair_out; ++p)
                out[e * pair_out + p] = static_cast<T>(factor * std::fabs(call.scale) * sum[static_cast<std::size_t>(block_of(e, out_shape))]);
    }
};

}  // namespace lazytensor::detail
