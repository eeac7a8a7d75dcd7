// SPDX-License-Identifier: MIT
// Lowering a matmul item: where the elements of its two operands are (ir::Gemm).
//
// Each operand is followed through its views to a buffer, so a transposed, sliced or batch-
// broadcast operand is read in place (transpose flags, leading dimensions, zero batch strides).
// An operand that is not in a buffer yet (a constant, a reshape the index math cannot follow)
// is materialized first, and the schedule is made again. Layouts BLAS cannot read (no unit
// stride) are the backend's business: the host GEMM packs any strides, the CLBlast path copies.
#pragma once

#include "../schedule/schedule.hpp"

namespace lazytensor::detail {

inline void lower_gemm(const Schedule& s, Group& g) {
    Node* product = g.root;
    ir::Gemm& gemm = g.gemm;
    gemm.dtype = product->dtype;
    const std::size_t rank = product->shape.size();
    gemm.batch = Shape(product->shape.begin(), product->shape.end() - 2);
    gemm.m = product->shape[rank - 2];
    gemm.n = product->shape[rank - 1];
    gemm.k = product->src[0]->shape[rank - 1];
    g.inputs.clear();
    for (int i = 0; i < 2; ++i) {
        Node* operand = product->src[static_cast<std::size_t>(i)].get();
        Reached r = walk_views(s, &g, operand, IndexMap::identity(operand->shape));
        if (!r.load) throw NeedsMaterialization{operand, "operand of a matrix product, not yet in a buffer"};
        ir::MatrixLayout& layout = i == 0 ? gemm.a : gemm.b;
        layout.offset = r.access.offset;
        layout.row_stride = r.access.strides[rank - 2];
        layout.col_stride = r.access.strides[rank - 1];
        layout.batch_strides = Strides(r.access.strides.begin(), r.access.strides.end() - 2);
        g.inputs.push_back(r.node);
    }
    // CLBlast reads BLAS layouts only; the fold must not turn a readable layout into another.
    ir::normalize(gemm, product->device.kind != Device::Kind::Host);
    g.ops = {"matmul"};
}

}  // namespace lazytensor::detail
