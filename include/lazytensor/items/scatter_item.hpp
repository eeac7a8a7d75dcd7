// SPDX-License-Identifier: MIT
// The scatter item: a scatter node (graph::scatter: a copy of a tensor with values written or
// added at flat positions) run by the backend's scatter. Its three operands (the base, the
// positions and the values) are read from contiguous memory: a kernel materializes each lazy one
// that is not, and what produces it fuses into that kernel; one that is realized memory laid out
// otherwise (a view the user realized, maybe after the scatter was built) is copied by a kernel
// of the item's own. Indexed writes (index_put), nonzero, masked_select and unique build on it.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "../codegen/lower.hpp"
#include "../schedule/schedule.hpp"
#include "item.hpp"

namespace lazytensor::detail {

struct ScatterItem : ItemDefaults {
    static constexpr ScheduleItem::Kind kind = ScheduleItem::Kind::Scatter;
    DType dtype = DType::Float32;
    std::int64_t numel = 0, count = 0;  // the result's elements; the positions'
    bool accumulate = false;
    // An operand that is realized memory but not contiguous from offset 0 (a view the user
    // realized): the item copies it with a kernel of its own first. `copied` is which (-1: none).
    int copied = -1;
    ir::Kernel operand;

    /// Lowers group g (its root a scatter node): g.inputs are the operands' buffers (but the
    /// copied one's), then the inputs of the kernel that copies it; or the first lazy operand not
    /// in contiguous memory of its own from offset 0 is materialized first.
    static std::optional<Materialize> lower(const Schedule& s, Group& g) {
        static const char* const what[3] = {"tensor written into by a scatter", "positions of a scatter",
                                            "values of a scatter"};
        g.inputs.clear();
        g.kernel = ir::Kernel{};
        g.scalars.clear();
        g.ops = {g.root->params[0] ? "scatter add" : "scatter"};
        int copy = -1;
        for (int k = 0; k < 3; ++k) {
            Node* operand = g.root->src[static_cast<std::size_t>(k)].get();
            Reached r = walk_views(s, &g, operand, IndexMap::identity(operand->shape));
            if (r.load && is_contiguous_layout(operand->shape, r.access.strides, r.access.offset)) {
                g.inputs.push_back(r.node);
            } else if (operand->realized() && copy < 0) {
                copy = k;  // nothing computes it again: the item copies it
            } else {
                return Materialize{operand, concat(what[k], " (read from contiguous memory)"), true};
            }
        }
        if (copy >= 0) {
            Group copier = g;
            copier.root = g.root->src[static_cast<std::size_t>(copy)].get();
            copier.inputs.clear();
            if (std::optional<Materialize> m = Lowering(s, copier).run()) return m;
            g.kernel = std::move(copier.kernel);
            g.scalars = std::move(copier.scalars);
            for (Node* in : copier.inputs) g.inputs.push_back(in);
            g.ops.insert(g.ops.begin(), "copy");
        }
        return std::nullopt;
    }
    static ScatterItem of(const Group& g) {
        ScatterItem item;
        item.dtype = g.root->dtype;
        item.numel = lazytensor::numel(g.root->shape);
        item.count = g.root->src[1]->shape[0];
        item.accumulate = g.root->params[0] != 0;
        item.operand = g.kernel;
        if (!item.operand.phases.empty())  // the first realized operand not contiguous from offset 0 (as lower() chose)
            for (int k = 0; k < 3 && item.copied < 0; ++k) {
                const Node& operand = *g.root->src[static_cast<std::size_t>(k)];
                if (operand.realized() && (operand.offset != 0 || !is_contiguous_layout(operand.shape, operand.strides, 0)))
                    item.copied = k;
            }
        return item;
    }
    const ir::Kernel* own_kernel() const { return operand.phases.empty() ? nullptr : &operand; }

    void describe(ScheduleItem& item, Device) const {
        item.ir = (own_kernel() ? concat("    operand ", copied, " copied into contiguous memory:\n", ir::to_string(operand))
                                : std::string()) +
                  what();
    }
    std::string source(Backend& backend, const CompiledKernel* compiled) const {
        return compiled ? backend.kernel_source(*compiled) : std::string();
    }
    std::string routine(Backend& backend) const {
        return concat("scatter", accumulate ? " add" : "", " of ", dtype, " on ", backend.device());
    }
    /// Check mode compares adds (whose sums the device makes in another order); an overwrite at a
    /// repeated position may keep another of its values on a device, so it has nothing to compare.
    bool checked_on(const Backend& backend) const { return accumulate && backend.device().kind != Device::Kind::Host; }
    void run(const ItemRun& r) const { scatter_on(r.backend, r.compiled, r.params, r.scalars); }
    const char* reference(const HostRun& h) const {
        const std::shared_ptr<CompiledKernel> host_copy = own_kernel() ? h.host.get_kernel(on_interpreter()) : nullptr;
        if (!h.magnitudes || !is_floating(dtype)) {
            scatter_on(h.host, host_copy.get(), h.params, h.scalars);
            return "the host's scatter";
        }
        // Magnitudes: the base's and the values' absolute values, added the same way.
        Operands o = operands_on(h.host, host_copy.get(), h.params, h.scalars);
        BufferPtr base = h.host.allocate(dtype, numel), values = h.host.allocate(dtype, count);
        visit_dtype(dtype, [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (is_floating_v<T>) {
                auto absolute = [](const Buffer& from, Buffer& to, std::int64_t n) {
                    const T* f = static_cast<const T*>(from.handle());
                    T* t = static_cast<T*>(to.handle());
                    for (std::int64_t i = 0; i < n; ++i) t[i] = static_cast<T>(std::fabs(static_cast<double>(f[i])));
                };
                absolute(*o.at[0], *base, numel);
                absolute(*o.at[2], *values, count);
            }
        });
        h.host.scatter(*base, *h.params.back(), *o.at[1], *values, count, true);
        return "the host's scatter";
    }
    std::string listing() const { return "--- scatter ---\n" + what(); }

private:
    /// The three operands' buffers: params in order, but the copied one, which its kernel (the
    /// params after the other two) computes into `copy`.
    struct Operands {
        Buffer* at[3] = {nullptr, nullptr, nullptr};
        BufferPtr copy;
    };
    Operands operands_on(Backend& backend, CompiledKernel* compiled, const std::vector<Buffer*>& params,
                         const std::vector<Scalar>& scalars) const {
        Operands o;
        std::size_t next = 0;
        for (int k = 0; k < 3; ++k)
            if (k != copied) o.at[k] = params[next++];
        if (copied >= 0) {
            o.copy = backend.allocate(copied == 1 ? DType::Int64 : dtype, copied == 0 ? numel : count);
            std::vector<Buffer*> buffers(params.begin() + static_cast<std::ptrdiff_t>(next), params.end() - 1);
            buffers.push_back(o.copy.get());
            backend.launch(*compiled, buffers, scalars);
            o.at[copied] = o.copy.get();
        }
        return o;
    }
    void scatter_on(Backend& backend, CompiledKernel* compiled, const std::vector<Buffer*>& params,
                    const std::vector<Scalar>& scalars) const {
        const Operands o = operands_on(backend, compiled, params, scalars);
        backend.scatter(*o.at[0], *params.back(), *o.at[1], *o.at[2], count, accumulate);
    }
    /// The copy's kernel on the interpreter (check mode's reference, not a compiled loop).
    ir::Kernel on_interpreter() const {
        ir::Kernel kernel = operand;
        kernel.candidate = nullptr;
        return kernel;
    }
    std::string what() const {
        return concat("    scatter", accumulate ? " add" : "", " ", dtype, ": ", count, " positions into ", numel, " elements\n");
    }
};

}  // namespace lazytensor::detail
