// SPDX-License-Identifier: MIT
// The sort item: a sort node (graph::sort_positions: the positions of the first k elements of
// each row along the last axis, in sorted order, stably) run by the backend's row sort (host:
// in parallel over rows; OpenCL: a bitonic sort in device memory). lt::sort, argsort and topk
// build one, and gather the values at its positions: lazy like any node, differentiable through
// the gather, checked against the host's sort.
//
// The backend sorts contiguous rows. Where the operand is not such a buffer, the item first
// computes it into one with a kernel lowered like any other, so the element-wise work that
// produces the operand runs in that kernel: argsort(exp(x) * w) is one item.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../codegen/lower.hpp"
#include "../schedule/fuse_products.hpp"
#include "../schedule/schedule.hpp"
#include "item.hpp"

namespace lazytensor::detail {

struct SortItem : ItemDefaults {
    static constexpr ScheduleItem::Kind kind = ScheduleItem::Kind::Sort;
    DType dtype = DType::Float32;  // the operand's
    std::int64_t rows = 0, n = 0, k = 0;
    bool descending = false;
    ir::Kernel operand;  // computes the operand into contiguous rows first (no phases: read in place)
    int values = -1;     // the node of the values at the positions, stored by the sort (-1: not)

    /// Lowers group g (its root a sort node): g.kernel computes the operand into contiguous rows
    /// unless it is in a buffer as such (then g.kernel has no phases and g.inputs is that buffer).
    static std::optional<Materialize> lower(const Schedule& s, Group& g) { return lower_contiguous_operand(s, g, "sort"); }
    /// Where an item's root gathers a sort's operand at the sort's positions (lt::sort's values,
    /// stored on their own), the sort stores them as it sorts and that item goes: one pass over
    /// the values less. Schedule::group_of_root is stale afterwards.
    static void fuse_values(Schedule& s) {
        std::vector<char> gone(s.groups.size(), 0);
        bool any = false;
        for (std::size_t i = 0; i < s.groups.size(); ++i) {
            Group& g = s.groups[i];
            const Node* r = g.root;
            if (!g.is_kernel() || r->kind != NodeKind::Gather || r->axes[0] + 1 != static_cast<int>(r->shape.size())) continue;
            const auto sort = s.group_of_root.find(r->src[1].get());
            if (sort == s.group_of_root.end()) continue;
            Group& sorter = s.groups[static_cast<std::size_t>(sort->second)];
            if (!sorter.is_sort() || sorter.sorted_values || sorter.root->src[0] != r->src[0]) continue;
            sorter.sorted_values = g.root;
            gone[i] = 1;
            any = true;
        }
        if (any) fuse_detail::drop_gone(s, gone);
    }
    template <class Index>
    static SortItem of(const Group& g, const Index& index) {
        SortItem item = of(g.root, g.kernel);
        if (g.sorted_values) item.values = index(g.sorted_values);
        return item;
    }
    static SortItem of(const Node* sort, ir::Kernel operand_kernel) {
        SortItem item;
        const Node& values = *sort->src[0];
        item.dtype = values.dtype;
        item.n = values.shape.back();
        item.rows = item.n == 0 ? 0 : numel(values.shape) / item.n;
        item.k = sort->params[0];
        item.descending = sort->params[1] != 0;
        item.operand = std::move(operand_kernel);
        return item;
    }

    const ir::Kernel* own_kernel() const { return operand.phases.empty() ? nullptr : &operand; }
    SmallVector<int, 3> fused_away() const {
        if (values < 0) return {};
        return {values};
    }
    /// The values get their buffer before the items that read them run.
    void allocate_results(Backend& backend, const SmallVector<char, 32>&, std::vector<BufferPtr>& produced) const {
        if (values >= 0) produced[static_cast<std::size_t>(values)] = backend.allocate(dtype, rows * k);
    }
    void describe(ScheduleItem& item, Device) const {
        item.ir = (own_kernel() ? "    operand computed into contiguous rows:\n" + ir::to_string(operand) : std::string()) +
                  what();
    }
    std::string source(Backend& backend, const CompiledKernel* compiled) const {
        return compiled ? backend.kernel_source(*compiled) : std::string();
    }
    void run(const ItemRun& r) const {
        sort_on(r.backend, r.compiled, r.params, r.scalars, values >= 0 ? r.produced[static_cast<std::size_t>(values)].get() : nullptr);
    }
    const char* reference(const HostRun& h) const {
        const std::shared_ptr<CompiledKernel> host_operand = own_kernel() ? h.host.get_kernel(on_interpreter()) : nullptr;
        sort_on(h.host, host_operand.get(), h.params, h.scalars, nullptr);
        return own_kernel() ? "the host interpreter and the host's sort" : "the host's sort";
    }
    std::string listing() const { return "--- sort ---\n" + what() + (own_kernel() ? ir::to_string(operand) : std::string()); }

private:
    std::string what() const {
        return concat("    sort ", descending ? "descending" : "ascending", " ", dtype, ": ", rows, " rows of ", n,
                      ", the first ", k, " positions of each", values >= 0 ? " and their values" : "", "\n");
    }
    /// The operand's kernel on the interpreter (check mode's reference, not a compiled loop).
    ir::Kernel on_interpreter() const {
        ir::Kernel kernel = operand;
        kernel.candidate = nullptr;
        return kernel;
    }
    /// params: the operand's buffer (or its kernel's inputs), then the positions' [rows, k];
    /// `into`: the values' buffer, or null where only the positions are wanted.
    void sort_on(Backend& backend, CompiledKernel* compiled, const std::vector<Buffer*>& params,
                 const std::vector<Scalar>& scalars, Buffer* into) const {
        if (rows * k == 0) return;
        BufferPtr contiguous;
        if (compiled) {
            contiguous = backend.allocate(dtype, rows * n);
            std::vector<Buffer*> buffers(params.begin(), params.end() - 1);
            buffers.push_back(contiguous.get());
            backend.launch(*compiled, buffers, scalars);
        }
        const BufferPtr scratch = into ? nullptr : backend.allocate(dtype, rows * k);
        backend.sort_rows(contiguous ? *contiguous : *params[0], rows, n, k, descending, into ? *into : *scratch, *params.back());
    }
};

}  // namespace lazytensor::detail
