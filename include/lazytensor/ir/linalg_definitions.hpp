// SPDX-License-Identifier: MIT
// The definitions of ir/linalg.hpp's builders (documented there), compiled where the engine is.
#pragma once

#include <vector>

#include "linalg.hpp"

#if !LAZYTENSOR_ENGINE_DEFINITIONS
#error "lazytensor: ir/linalg_definitions.hpp holds definitions of the runtime; a LAZYTENSOR_SEPARATE_RUNTIME unit must not include it"
#endif

namespace lazytensor::detail::graph {

namespace linalg_detail {

/// The results in `packed` ([batch..., total]) as views of their own shapes.
inline std::vector<NodePtr> unpack(const std::vector<LinalgPart>& parts, const NodePtr& packed) {
    const Shape batch(packed->shape.begin(), packed->shape.end() - 1);
    std::vector<NodePtr> out;
    for (const LinalgPart& part : parts) {
        SmallVector<std::int64_t, 12> starts_steps;
        for (std::size_t d = 0; d < batch.size(); ++d) {
            starts_steps.push_back(0);
            starts_steps.push_back(1);
        }
        starts_steps.push_back(part.offset);
        starts_steps.push_back(1);
        Shape cut = batch, shaped = batch;
        cut.push_back(numel(part.shape));
        for (std::int64_t e : part.shape) shaped.push_back(e);
        out.push_back(reshape(window(packed, starts_steps, cut), shaped, "lt::linalg"));
    }
    return out;
}

}  // namespace linalg_detail

LAZYTENSOR_ENGINE_API std::vector<NodePtr> linalg_results(const Node& node, const NodePtr& packed) {
    const auto& p = node.params;
    return linalg_detail::unpack(linalg_parts(static_cast<LinalgOp>(p[0]), static_cast<int>(p[1]), p[2], p[3], p[4]), packed);
}

LAZYTENSOR_ENGINE_API std::vector<NodePtr> linalg(LinalgOp op, int flags, const NodePtr& a, const NodePtr& b, const char* api) {
#if !LAZYTENSOR_LAPACK
    (void)op, (void)flags, (void)a, (void)b;
    fail<Error>(api, ": needs LAPACK through LAPACKE, and this lazytensor was built without it (Debian: apt-get install "
                     "liblapacke-dev; CMake then finds it, or define LAZYTENSOR_LAPACK=1 and link -llapacke)");
#else
    const bool two = linalg_info(op).operands == 2;
    auto check_dtype = [&](const NodePtr& x, const char* which) {
        if (x->dtype != DType::Float32 && x->dtype != DType::Float64)
            fail<DTypeError>(api, ": needs float32 or float64 matrices, but ", which, " has dtype ", x->dtype, " (shape ",
                             x->shape, "); cast it first (lt::cast<double>(...))");
    };
    auto check_rank = [&](const NodePtr& x, const char* which) {
        if (x->shape.size() < 2)
            fail<ShapeError>(api, ": ", which, " must be a matrix or a batch of matrices ([..., rows, columns]), got shape ",
                             x->shape);
    };
    check_dtype(a, "A");
    check_rank(a, "A");
    const std::size_t ar = a->shape.size();
    const std::int64_t m = a->shape[ar - 2], n = a->shape[ar - 1];
    const bool any_shape = op == LinalgOp::Qr || op == LinalgOp::Svd || op == LinalgOp::Lstsq;
    if (!any_shape && m != n)
        fail<ShapeError>(api, ": needs square matrices, but A has shape ", a->shape, " (", m, " rows, ", n, " columns)");
    Shape batch(a->shape.begin(), a->shape.end() - 2);
    std::int64_t k = 0;
    Device device = a->device;
    if (two) {
        check_dtype(b, "B");
        check_rank(b, "B");
        if (b->dtype != a->dtype)
            fail<DTypeError>(api, ": A and B must have one dtype, got ", a->dtype, " A of shape ", a->shape, " and ", b->dtype,
                             " B of shape ", b->shape, "; cast one of them");
        const std::size_t br = b->shape.size();
        if (b->shape[br - 2] != m)
            fail<ShapeError>(api, ": B of shape ", b->shape, " must have as many rows as A of shape ", a->shape, " (", m,
                             "), but has ", b->shape[br - 2]);
        k = b->shape[br - 1];
        const Shape b_batch(b->shape.begin(), b->shape.end() - 2);
        try {
            batch = broadcast_shapes(batch, b_batch, api);
        } catch (const ShapeError&) {
            fail<ShapeError>(api, ": the batch dimensions of A of shape ", a->shape, " and B of shape ", b->shape, " (", batch,
                             " and ", b_batch, ") cannot be broadcast together");
        }
        const Operand first(a), second(b);
        device = common_device({&first, &second}, api);
    }
    auto with = [&](std::int64_t r, std::int64_t c) {
        Shape s = batch;
        s.push_back(r);
        s.push_back(c);
        return s;
    };
    const std::vector<LinalgPart> parts = linalg_parts(op, flags, m, n, k);
    std::int64_t total = 0;
    for (const LinalgPart& p : parts) total += numel(p.shape);
    Shape packed_shape = batch;
    packed_shape.push_back(total);
    check_extents(packed_shape, api);
    if (numel(packed_shape) == 0)  // nothing to compute: every result is empty
        return linalg_detail::unpack(parts, constant(Scalar::of<std::int64_t>(0), a->dtype, packed_shape, device));
    NodePtr node = make(NodeKind::Linalg, a->dtype, device, packed_shape);
    const NodePtr ae = expand(a, with(m, n), api);
    node = two ? with_sources(node, {ae, expand(b, with(m, k), api)}) : with_sources(node, {ae});
    node->params = {static_cast<std::int64_t>(op), flags, m, n, k};
    return linalg_detail::unpack(parts, node);
#endif
}

}  // namespace lazytensor::detail::graph
