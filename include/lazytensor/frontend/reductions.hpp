// SPDX-License-Identifier: MIT
// Reductions built from the primitive ones, so that the scheduler fuses them: var and std
// (two reduce phases of one kernel), argmax and argmin (a max, then the first position that
// holds it: one kernel); and cumsum and cumprod, scan nodes (ir/graph.hpp).
#pragma once

#include "tensor.hpp"

namespace lazytensor {

namespace detail {

/// x, or x cast to float32 when it is not floating: what the floating-point composites compute in.
inline NodePtr floating(const NodePtr& x) { return is_floating(x->dtype) ? x : graph::cast(x, DType::Float32); }

/// Variance over `axes` with N - correction in the denominator, computed in floating point
/// (half and bfloat16 in float32, rounded once: a sum of squares and a count, past 65504, are no
/// half; past 256 no longer exact in bfloat16).
inline NodePtr variance(const NodePtr& x, const Axes& user_axes, bool keepdim, int correction, const char* op) {
    const Axes axes = user_axes.empty() ? all_axes(x->shape.size()) : normalize_axes(user_axes, x->shape.size(), op, x->shape);
    if (is_reduced_float(x->dtype))
        return graph::cast(variance(graph::cast(x, DType::Float32), axes, keepdim, correction, op), x->dtype);
    const NodePtr v = floating(x);
    std::int64_t count = 1;
    for (int a : axes) count *= x->shape[static_cast<std::size_t>(a)];
    const NodePtr centered = graph::binary(BinaryOp::Sub, v, graph::mean(v, axes, true, true));
    const NodePtr squares = graph::reduce(ReduceOp::Sum, graph::binary(BinaryOp::Mul, centered, centered), axes, keepdim, op);
    // N - correction <= 0 divides by zero: inf or NaN, like NumPy and PyTorch.
    return graph::binary(BinaryOp::Div, squares, Scalar::of<double>(static_cast<double>(count - correction)));
}

/// argmax (Max) or argmin (Min) along one axis: the first position holding the extreme value,
/// or the first NaN (NumPy's and PyTorch's argmax). Two reduce phases of one kernel: the
/// extreme, then the first position that holds it.
///
/// Max and min propagate NaN, so a row with a NaN has NaN as its extreme, and no value equals
/// it: the NaN test is folded into the comparison with the extreme, as where(extreme is NaN,
/// x, 0) != itself. Every element-wise node over x then also reads the extreme (a node over x
/// alone, such as x != x, is a kernel of its own when x comes from a reduction of another
/// domain: k-means' distances gave a bool buffer of the whole input).
inline NodePtr arg_extreme(ReduceOp extreme, const NodePtr& x, int axis, bool keepdim, const char* op) {
    const int k = normalize_axis(axis, x->shape.size(), op, x->shape);
    const NodePtr best = graph::reduce(extreme, x, Axes{k}, true, op);
    NodePtr hit = graph::binary(BinaryOp::Eq, x, best);
    if (is_floating(x->dtype)) {
        const NodePtr nan_row = graph::binary(BinaryOp::Ne, best, best);
        const NodePtr in_nan_row = graph::where(nan_row, x, Scalar::of<std::int64_t>(0).cast(x->dtype));
        hit = graph::binary(BinaryOp::Maximum, hit, graph::binary(BinaryOp::Ne, in_nan_row, in_nan_row));
    }
    const NodePtr positions = graph::where(hit, graph::iota(x->shape, k, x->device),
                                           Scalar::of<std::int64_t>(x->shape[static_cast<std::size_t>(k)]));
    return graph::reduce(ReduceOp::Min, positions, Axes{k}, keepdim, op);
}

}  // namespace detail

template <class T, class D>
Tensor<detail::mean_t<T>> TensorBase<T, D>::var(const Axes& axes, bool keepdim, int correction) const {
    return Tensor<detail::mean_t<T>>(detail::variance(self().build(), axes, keepdim, correction, "var"));
}

template <class T, class D>
Tensor<detail::mean_t<T>> TensorBase<T, D>::std(const Axes& axes, bool keepdim, int correction) const {
    return Tensor<detail::mean_t<T>>(detail::graph::unary(UnaryOp::Sqrt, detail::variance(self().build(), axes, keepdim, correction, "std")));
}

template <class T, class D>
Tensor<std::int64_t> TensorBase<T, D>::argmax(int axis, bool keepdim) const {
    return Tensor<std::int64_t>(detail::arg_extreme(ReduceOp::Max, self().build(), axis, keepdim, "argmax"));
}

template <class T, class D>
Tensor<std::int64_t> TensorBase<T, D>::argmin(int axis, bool keepdim) const {
    return Tensor<std::int64_t>(detail::arg_extreme(ReduceOp::Min, self().build(), axis, keepdim, "argmin"));
}

template <class T, class D>
Tensor<detail::reduce_t<ReduceOp::Sum, T>> TensorBase<T, D>::cumsum(int axis) const {
    return Tensor<detail::reduce_t<ReduceOp::Sum, T>>(detail::graph::scan(ReduceOp::Sum, self().build(), axis, "cumsum"));
}

template <class T, class D>
Tensor<detail::reduce_t<ReduceOp::Prod, T>> TensorBase<T, D>::cumprod(int axis) const {
    return Tensor<detail::reduce_t<ReduceOp::Prod, T>>(detail::graph::scan(ReduceOp::Prod, self().build(), axis, "cumprod"));
}

#define LAZYTENSOR_FREE_FORM(fn, params, args)                                            \
    template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>             \
    auto fn(const E& x LAZYTENSOR_UNPAREN params) {                                       \
        return x.fn args;                                                                  \
    }
#define LAZYTENSOR_UNPAREN(...) __VA_ARGS__
///@{
/// Free forms of the members, with the members' parameters (so braced axis lists work):
/// lt::var(x, {0, 1}, true) is x.var({0, 1}, true), and likewise std, argmax, argmin, cumsum
/// and cumprod.
LAZYTENSOR_FREE_FORM(var, (, const Axes& axes = {}, bool keepdim = false, int correction = 1), (axes, keepdim, correction))
LAZYTENSOR_FREE_FORM(var, (, int axis, bool keepdim = false, int correction = 1), (axis, keepdim, correction))
LAZYTENSOR_FREE_FORM(std, (, const Axes& axes = {}, bool keepdim = false, int correction = 1), (axes, keepdim, correction))
LAZYTENSOR_FREE_FORM(std, (, int axis, bool keepdim = false, int correction = 1), (axis, keepdim, correction))
LAZYTENSOR_FREE_FORM(argmax, (, int axis, bool keepdim = false), (axis, keepdim))
LAZYTENSOR_FREE_FORM(argmin, (, int axis, bool keepdim = false), (axis, keepdim))
LAZYTENSOR_FREE_FORM(cumsum, (, int axis), (axis))
LAZYTENSOR_FREE_FORM(cumprod, (, int axis), (axis))
LAZYTENSOR_FREE_AXIS_GUARD(var)
LAZYTENSOR_FREE_AXIS_GUARD(std)
LAZYTENSOR_FREE_AXIS_GUARD(argmax)
LAZYTENSOR_FREE_AXIS_GUARD(argmin)
LAZYTENSOR_FREE_AXIS_GUARD(cumsum)
LAZYTENSOR_FREE_AXIS_GUARD(cumprod)
///@}
#undef LAZYTENSOR_UNPAREN
#undef LAZYTENSOR_FREE_FORM

}  // namespace lazytensor
