// SPDX-License-Identifier: MIT
// The scatter item: a scatter node (graph::scatter: a copy of a tensor with values written or
// added at flat positions) run by the backend's scatter. Its three operands (the base, the
// positions and the values) are read from contiguous memory: a kernel materializes each one that
// is not, and what produces it fuses into that kernel. Indexed writes (index_put), nonzero,
// masked_select and unique build on it.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "../schedule/schedule.hpp"
#include "item.hpp"

namespace lazytensor::detail {

struct ScatterItem : ItemDefaults {
    static constexpr ScheduleItem::Kind kind = ScheduleItem::Kind::Scatter;
    DType dtype = DType::Float32;
    std::int64_t numel = 0, count = 0;  // the result's elements; the positions'
    bool accumulate = false;

    /// Lowers group g (its root a scatter node): g.inputs are the operands' buffers, or the first
    /// operand not in contiguous memory of its own from offset 0 is materialized first.
    static std::optional<Materialize> lower(const Schedule& s, Group& g) {
        static const char* const what[3] = {"tensor written into by a scatter", "positions of a scatter",
                                            "values of a scatter"};
        g.inputs.clear();
        for (int k = 0; k < 3; ++k) {
            Node* operand = g.root->src[static_cast<std::size_t>(k)].get();
            Reached r = walk_views(s, &g, operand, IndexMap::identity(operand->shape));
            if (!r.load || r.access.offset != 0 || !is_contiguous_layout(operand->shape, r.access.strides, 0))
                return Materialize{operand, concat(what[k], " (read from contiguous memory)"), true};
            g.inputs.push_back(r.node);
        }
        g.kernel = ir::Kernel{};
        g.scalars.clear();
        g.ops = {g.root->params[0] ? "scatter add" : "scatter"};
        return std::nullopt;
    }
    static ScatterItem of(const Group& g) {
        ScatterItem item;
        item.dtype = g.root->dtype;
        item.numel = lazytensor::numel(g.root->shape);
        item.count = g.root->src[1]->shape[0];
        item.accumulate = g.root->params[0] != 0;
        return item;
    }

    void describe(ScheduleItem& item, Device) const { item.ir = what(); }
    std::string routine(Backend& backend) const {
        return concat("scatter", accumulate ? " add" : "", " of ", dtype, " on ", backend.device());
    }
    /// Check mode compares adds (whose sums the device makes in another order); an overwrite at a
    /// repeated position may keep another of its values on a device, so it has nothing to compare.
    bool checked_on(const Backend& backend) const { return accumulate && backend.device().kind != Device::Kind::Host; }
    void run(const ItemRun& r) const { r.backend.scatter(*r.params[0], r.out(), *r.params[1], *r.params[2], count, accumulate); }
    const char* reference(const HostRun& h) const {
        if (!h.magnitudes || !is_floating(dtype)) {
            h.host.scatter(*h.params[0], *h.params.back(), *h.params[1], *h.params[2], count, accumulate);
            return "the host's scatter";
        }
        // Magnitudes: the base's and the values' absolute values, added the same way.
        BufferPtr base = h.host.allocate(dtype, numel), values = h.host.allocate(dtype, count);
        visit_dtype(dtype, [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (is_floating_v<T>) {
                auto absolute = [](const Buffer& from, Buffer& to, std::int64_t n) {
                    const T* f = static_cast<const T*>(from.handle());
                    T* t = static_cast<T*>(to.handle());
                    for (std::int64_t i = 0; i < n; ++i) t[i] = static_cast<T>(std::fabs(static_cast<double>(f[i])));
                };
                absolute(*h.params[0], *base, numel);
                absolute(*h.params[2], *values, count);
            }
        });
        h.host.scatter(*base, *h.params.back(), *h.params[1], *values, count, true);
        return "the host's scatter";
    }
    std::string listing() const { return "--- scatter ---\n" + what(); }

private:
    std::string what() const {
        return concat("    scatter", accumulate ? " add" : "", " ", dtype, ": ", count, " positions into ", numel, " elements\n");
    }
};

}  // namespace lazytensor::detail
