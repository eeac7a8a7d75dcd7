// SPDX-License-Identifier: MIT
// The free functions and operators of the public API. Element-wise functions are generated
// from the op list (ir/ops.hpp); reductions and views have a free form next to the members.
#pragma once

#include <optional>

#include "expr.hpp"

namespace lazytensor {

#define LAZYTENSOR_X(name, fn, rule)                                                      \
    template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>            \
    auto fn(E&& x) {                                                                      \
        return detail::make_unary<UnaryOp::name>(std::forward<E>(x));                     \
    }
///@{
/// Element-wise unary functions: lt::exp(x), lt::relu(x), ... (one per entry of the op list,
/// ir/ops.hpp). Lazy, same shape. exp, log, sqrt, ... give float32 for integers; abs, floor, ...
/// keep the type (neither kind compiles for bool); isnan, isinf, logical_not give bool.
LAZYTENSOR_UNARY_OPS(LAZYTENSOR_X)
///@}
#undef LAZYTENSOR_X

#define LAZYTENSOR_X(name, fn, rule)                                                      \
    template <class L, class R, class = std::enable_if_t<detail::is_binary_operands_v<L, R>>> \
    auto fn(L&& a, R&& b) {                                                               \
        return detail::make_binary<BinaryOp::name>(std::forward<L>(a), std::forward<R>(b)); \
    }
///@{
/// Element-wise binary functions: lt::maximum(a, b), lt::pow(a, 2.0f), lt::add(a, b), ... A
/// tensor or a C++ scalar on either side, broadcast (NumPy), types promoted (PyTorch). Lazy;
/// ShapeError if the shapes do not broadcast, DeviceError for tensors on different devices.
LAZYTENSOR_PUBLIC_BINARY_OPS(LAZYTENSOR_X)
///@}
#undef LAZYTENSOR_X

#define LAZYTENSOR_X(symbol, name)                                                        \
    template <class L, class R, class = std::enable_if_t<detail::is_binary_operands_v<L, R>>> \
    auto operator symbol(L&& a, R&& b) {                                                  \
        return detail::make_binary<BinaryOp::name>(std::forward<L>(a), std::forward<R>(b)); \
    }
///@{
/// Operators (LAZYTENSOR_OPERATORS, ir/ops.hpp): the same ops, NumPy broadcasting, a tensor or
/// a scalar on either side; && and || are element-wise (both sides are evaluated). Comparisons, && and || give bool tensors. Lazy,
/// and they throw as the functions above do. (% is NumPy's remainder, a composite:
/// frontend/composites.hpp.)
LAZYTENSOR_OPERATORS(LAZYTENSOR_X)
///@}
#undef LAZYTENSOR_X

#define LAZYTENSOR_COMPOUND(X) \
    X(+=, Add) X(-=, Sub) X(*=, Mul) X(/=, Div) X(&=, BitAnd) X(|=, BitOr) X(^=, BitXor) X(<<=, Shl) X(>>=, Shr)
#define LAZYTENSOR_X(symbol, name)                                                                   \
    template <class T, class R, class = std::enable_if_t<detail::is_tensor_like_v<R> || detail::is_scalar_v<R>>> \
    Tensor<T>& operator symbol(Tensor<T>& x, R&& y) {                                                \
        x = detail::make_binary<BinaryOp::name>(x, std::forward<R>(y));                              \
        return x;                                                                                    \
    }
///@{
/// Compound assignment: x += y is x = x + y (a new lazy value; the result type must be T, or it
/// does not compile). It rebinds x only: other handles and views keep the old value (see assign).
/// (%= is with %, in frontend/composites.hpp.)
LAZYTENSOR_COMPOUND(LAZYTENSOR_X)
///@}
#undef LAZYTENSOR_X
#undef LAZYTENSOR_COMPOUND

/// Element-wise negation (not defined for bool: does not compile).
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto operator-(E&& x) {
    return detail::make_unary<UnaryOp::Neg>(std::forward<E>(x));
}
/// Bitwise not of integers; logical not of bool.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto operator~(E&& x) {
    return detail::make_unary<UnaryOp::BitwiseNot>(std::forward<E>(x));
}
/// x == 0, for any dtype (bool result).
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto operator!(E&& x) {
    return detail::make_unary<UnaryOp::LogicalNot>(std::forward<E>(x));
}

/// x where cond is true, y elsewhere (broadcast together; x and y may be scalars). cond is bool,
/// or an integer tensor whose non-zero elements count as true; a floating cond does not compile
/// (compare it: where(t > 0, x, y)). The result has x and y's promoted type. Lazy.
template <class C, class X, class Y,
          class = std::enable_if_t<detail::is_tensor_like_v<C> || detail::is_tensor_like_v<X> || detail::is_tensor_like_v<Y>>>
auto where(C&& cond, X&& x, Y&& y) {
    static_assert(!is_floating(detail::operand_traits<detail::wrapped_t<C>>::dtype),
                  "lazytensor: where needs a bool (or integer) condition, not a floating-point one; compare "
                  "first, e.g. lt::where(t > 0.0f, x, y), or lt::where(t != 0.0f, x, y) for non-zero");
    return detail::WhereExpr<detail::wrapped_t<C>, detail::wrapped_t<X>, detail::wrapped_t<Y>>(
        detail::wrap(std::forward<C>(cond)), detail::wrap(std::forward<X>(x)), detail::wrap(std::forward<Y>(y)));
}

/// Element-wise conversion to U (float to integer saturates; NaN becomes 0).
template <class U, class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto cast(const E& x) {
    return x.template cast<U>();
}

#define LAZYTENSOR_REDUCTION(fn)                                                           \
    template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>             \
    auto fn(const E& x) {                                                                  \
        return x.fn();                                                                     \
    }                                                                                      \
    template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>             \
    auto fn(const E& x, const Axes& axes, bool keepdim = false) {                         \
        return x.fn(axes, keepdim);                                                        \
    }                                                                                      \
    template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>             \
    auto fn(const E& x, int axis, bool keepdim = false) {                                 \
        return x.fn(Axes{axis}, keepdim);                                                  \
    }                                                                                      \
    LAZYTENSOR_FREE_AXIS_GUARD(fn)
///@{
/// Free forms of the reductions: lt::sum(x), lt::sum(x, axes, keepdim), lt::sum(x, axis, keepdim),
/// and likewise max, min, prod, any, all, mean (see the members of TensorBase).
LAZYTENSOR_REDUCTION(sum)
LAZYTENSOR_REDUCTION(max)
LAZYTENSOR_REDUCTION(min)
LAZYTENSOR_REDUCTION(prod)
LAZYTENSOR_REDUCTION(any)
LAZYTENSOR_REDUCTION(all)
LAZYTENSOR_REDUCTION(mean)
///@}
#undef LAZYTENSOR_REDUCTION

///@{
/// PyTorch's rule for max and min: of one tensor (and axes) a reduction, of two tensors the
/// element-wise maximum(a, b) / minimum(a, b).
template <class A, class B,
          class = std::enable_if_t<detail::is_tensor_like_v<std::decay_t<A>> && detail::is_tensor_like_v<std::decay_t<B>>>>
auto max(A&& a, B&& b) {
    return maximum(std::forward<A>(a), std::forward<B>(b));
}
template <class A, class B,
          class = std::enable_if_t<detail::is_tensor_like_v<std::decay_t<A>> && detail::is_tensor_like_v<std::decay_t<B>>>>
auto min(A&& a, B&& b) {
    return minimum(std::forward<A>(a), std::forward<B>(b));
}
///@}

/// Matrix product with NumPy's rules. [m, k] x [k, n] -> [m, n]; batch axes broadcast
/// ([8, 1, 64, 32] x [4, 32, 16] -> [8, 4, 64, 16]); a 1-d left operand is a row vector and a
/// 1-d right operand a column vector, whose axis is dropped from the result (1-d x 1-d is a
/// dot product, a 0-d tensor). Operands meet in their promoted type. Float and double run as
/// a GEMM (host: packed SIMD GEMM on all cores; OpenCL: CLBlast) reading transposed and
/// broadcast operands in place; half and bfloat16 multiply in float. Other types (and OpenCL without
/// CLBlast) run as a fused reduction kernel. Lazy. ShapeError for a 0-d operand, contracted
/// extents that differ or batch axes that do not broadcast; DeviceError across devices.
template <class A, class B, class = std::enable_if_t<detail::is_tensor_like_v<A> && detail::is_tensor_like_v<B>>>
auto matmul(const A& a, const B& b) {
    using R = promote_t<typename std::decay_t<A>::value_type, typename std::decay_t<B>::value_type>;
    return Tensor<R>(detail::graph::matmul(a.build(), b.build()));
}


///@{
/// Free forms of the view members: lt::reshape(x, shape) is x.reshape(shape), and likewise
/// permute, transpose and expand.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto reshape(const E& x, const Shape& shape) {
    return x.reshape(shape);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto permute(const E& x, const Axes& perm) {
    return x.permute(perm);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto transpose(const E& x, int a, int b) {
    return x.transpose(a, b);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto expand(const E& x, const Shape& shape) {
    return x.expand(shape);
}
///@}

}  // namespace lazytensor
