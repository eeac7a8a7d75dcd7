// SPDX-License-Identifier: MIT
// Lowering a scan item: where the elements of its operand are (ir::Scan).
//
// The operand is followed through its views to a buffer and read in place when the axes before
// and after the scanned one are each one strided run (a transposed or sliced operand usually
// is). Otherwise the item copies it into a contiguous buffer first (`kernel`). An operand that
// is not in a buffer yet is materialized first, and the schedule is made again.
#pragma once

#include "../ir/scan.hpp"
#include "../schedule/schedule.hpp"

namespace lazytensor::detail {

inline void lower_scan(const Schedule& s, Group& g) {
    Node* scan = g.root;
    Node* operand = scan->src[0].get();
    const std::size_t axis = static_cast<std::size_t>(scan->axes[0]);
    Reached r = walk_views(s, &g, operand, IndexMap::identity(operand->shape));
    if (!r.load) throw NeedsMaterialization{operand, "operand of a scan, not yet in a buffer"};
    g.inputs = {r.node};
    g.scan = ir::Scan{};
    g.scan.dtype = scan->dtype;
    g.scan.op = scan->reduce_op;
    g.kernel = ir::Kernel{};
    if (!ir::scan_layout(operand->shape, r.access.strides, r.access.offset, axis, g.scan)) {
        g.kernel = ir::contiguous_copy(scan->dtype, operand->shape, r.access);
        ir::scan_layout(operand->shape, contiguous_strides(operand->shape), 0, axis, g.scan);
        g.ops = {"copy", scan->reduce_op == ReduceOp::Sum ? "cumsum" : "cumprod"};
        return;
    }
    g.ops = {scan->reduce_op == ReduceOp::Sum ? "cumsum" : "cumprod"};
}

}  // namespace lazytensor::detail
