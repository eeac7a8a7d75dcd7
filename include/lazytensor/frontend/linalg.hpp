// SPDX-License-Identifier: MIT
// Norms, built from the primitive reductions so that the scheduler fuses them: a p-norm over
// rows is one kernel (the largest |x| of the row, then the sum of the scaled powers: two phases,
// like softmax's).
#pragma once

#include <cmath>
#include <limits>
#include <string>
#include <type_traits>

#include "reductions.hpp"

namespace lazytensor {

/// Infinity, for the order of a norm: lt::norm(x, lt::inf) is the largest |x|.
inline constexpr double inf = std::numeric_limits<double>::infinity();

namespace detail {

/// The p-norm of x's elements over `user_axes` (all when empty), PyTorch's vector_norm: the
/// largest |x| (p = inf), the smallest (-inf), the count of non-zeros (0), else
/// (sum |x|^p)^(1/p). Integers compute in float32, half and bfloat16 in float32 rounded once.
inline NodePtr vector_norm(const NodePtr& x, double p, const Axes& user_axes, bool keepdim) {
    const char* op = "lt::norm";
    namespace g = graph;
    if (std::isnan(p)) fail<ValueError>(op, ": the order p must be a number or +-inf, got NaN");
    const Axes axes = user_axes.empty() ? all_axes(x->shape.size()) : normalize_axes(user_axes, x->shape.size(), op, x->shape);
    if (is_reduced_float(x->dtype))
        return g::cast(vector_norm(g::cast(x, DType::Float32), p, axes, keepdim), x->dtype);
    const NodePtr v = floating(x);
    const NodePtr a = g::unary(UnaryOp::Abs, v);
    if (std::isinf(p)) return g::reduce(p > 0 ? ReduceOp::Max : ReduceOp::Min, a, axes, keepdim, op);
    if (p == 0)
        return g::reduce(ReduceOp::Sum, g::cast(g::binary(BinaryOp::Ne, v, Scalar::of<double>(0.0)), v->dtype), axes,
                         keepdim, op);
    if (p == 1) return g::reduce(ReduceOp::Sum, a, axes, keepdim, op);
    auto root = [&](const NodePtr& terms) {
        const NodePtr total = g::reduce(ReduceOp::Sum, terms, axes, keepdim, op);
        return p == 2 ? g::unary(UnaryOp::Sqrt, total) : g::binary(BinaryOp::Pow, total, Scalar::of<double>(1.0 / p));
    };
    auto power = [&](const NodePtr& base) {
        return p == 2 ? g::binary(BinaryOp::Mul, base, base) : g::binary(BinaryOp::Pow, base, Scalar::of<double>(p));
    };
    bool empty = false;
    for (int k : axes) empty = empty || x->shape[static_cast<std::size_t>(k)] == 0;
    // An empty sum is 0: the norm is 0 for p > 0 and inf for p < 0 (0^(1/p)); no extreme to scale by.
    if (empty) return root(power(a));
    // |x| divided by its largest value (the smallest for p < 0, whose terms are the large ones),
    // so that no |x|^p overflows or underflows: the scaled terms lie in [0, 1] with one of them
    // 1. A scale of 0, inf or NaN is left at 1: the sum then gives 0 (all zero), inf or NaN.
    const NodePtr extreme = g::reduce(p > 0 ? ReduceOp::Max : ReduceOp::Min, a, axes, true, op);
    const NodePtr usable = g::binary(BinaryOp::LogicalAnd, g::binary(BinaryOp::Gt, extreme, Scalar::of<double>(0.0)),
                                     g::binary(BinaryOp::Lt, extreme, Scalar::of<double>(inf)));
    const NodePtr scale = g::where(usable, extreme, Scalar::of<double>(1.0));
    const NodePtr scaled = root(power(g::binary(BinaryOp::Div, a, scale)));
    return g::binary(BinaryOp::Mul, scaled, keepdim ? scale : g::squeeze_axes(scale, axes));
}

/// The norm named `ord`: "fro" (the square root of the sum of squares); "nuc" and anything else
/// are ValueErrors.
inline NodePtr named_norm(const NodePtr& x, const std::string& ord, const Axes& axes, bool keepdim) {
    if (ord == "fro") return vector_norm(x, 2, axes, keepdim);
    if (ord == "nuc")
        fail<ValueError>("lt::norm: ord \"nuc\" (the nuclear norm, the sum of the singular values) is not a norm of "
                         "lt::norm's; sum the singular values: lt::sum(lt::linalg::svdvals(x), {-1})");
    fail<ValueError>("lt::norm: unknown ord \"", ord, "\"; use a number p (a vector norm: 2, 1, 0, lt::inf, -lt::inf, any other "
                     "p) or \"fro\"");
}

/// Norms take every element type but bool: a compile error here, naming the fix.
template <class T>
constexpr void check_norm_dtype() {
    static_assert(!std::is_same_v<T, bool>,
                  "lazytensor: norm is not defined for bool tensors; cast first, e.g. lt::norm(lt::cast<float>(x))");
}

}  // namespace detail

///@{
/// The p-norm of x's elements over `axes` (all axes when empty; negative axes count from the
/// end; keepdim keeps them with extent 1): torch.linalg.vector_norm's semantics, also for a
/// matrix or more axes (the 2-norm over two axes is the Frobenius norm, not the spectral norm).
/// p = 2 (default): sqrt(sum x^2); 1: sum |x|; lt::inf: max |x|; -lt::inf: min |x|; 0: the
/// number of non-zero elements (NaN counts); any other p, negative too: (sum |x|^p)^(1/p).
/// Computed as m (sum (|x|/m)^p)^(1/p) with m the largest |x| (the smallest for p < 0), in the
/// same kernel, so that no power overflows or underflows: the 2-norm of floats near 1e30 is
/// right. All zeros give 0, an infinite element inf, a NaN NaN. Floating tensors keep their
/// type (half and bfloat16 compute in float32, rounded once); integers give float32; bool does not compile.
/// Over an empty axis: 0 for p > 0 (inf for p < 0); ValueError for +-inf. Lazy. ValueError for
/// a NaN p, AxisError for a bad axis.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto norm(const E& x, double p = 2, const Axes& axes = {}, bool keepdim = false) {
    using T = typename E::value_type;
    detail::check_norm_dtype<T>();
    return Tensor<detail::mean_t<T>>(detail::vector_norm(x.build(), p, axes, keepdim));
}
template <class E, class I,
          class = std::enable_if_t<detail::is_tensor_like_v<E> && std::is_integral_v<I> && !std::is_same_v<I, bool>>>
auto norm(const E& x, double p, I axis, bool keepdim = false) {
    return norm(x, p, Axes{static_cast<int>(axis)}, keepdim);
}
///@{
/// A norm by name over `axes` (all when empty): "fro", the Frobenius norm (the 2-norm of the
/// elements). "nuc" (it needs singular values) and other names are ValueErrors.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto norm(const E& x, const std::string& ord, const Axes& axes = {}, bool keepdim = false) {
    using T = typename E::value_type;
    detail::check_norm_dtype<T>();
    return Tensor<detail::mean_t<T>>(detail::named_norm(x.build(), ord, axes, keepdim));
}
template <class E, class I,
          class = std::enable_if_t<detail::is_tensor_like_v<E> && std::is_integral_v<I> && !std::is_same_v<I, bool>>>
auto norm(const E& x, const std::string& ord, I axis, bool keepdim = false) {
    return norm(x, ord, Axes{static_cast<int>(axis)}, keepdim);
}
/// A floating or bool value where the axis goes (lt::norm(x, 2, true)) is a compile error, not
/// axis 1.
template <class E, class P, class V,
          class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_non_axis_scalar_v<V>>>
void norm(const E&, P, V, bool = false) {
    static_assert(!std::is_same_v<V, V>,
                  "lazytensor: norm(x, p, axis) takes an integer axis (or a list of axes), not a floating or bool "
                  "value; keepdim is the fourth argument: lt::norm(x, p, axes, true)");
///@}
}
///@}

}  // namespace lazytensor
