// SPDX-License-Identifier: MIT
// Composite element-wise functions: rewrites into the primitives of ir/ops.hpp, written once
// (tinygrad's decompositions), so that every backend runs them as it runs the primitives,
// fused into the kernel of whatever reads them. Each is written to be exact at the extremes.
// Those that reverse mode and the graph builders need too (sigmoid, silu, gelu, sign,
// remainder, floor_divide) are written as graph builders (ir/graph.hpp), which the functions
// below give their types; the others are written here.
#pragma once

#include <cmath>
#include <limits>
#include <optional>
#include <type_traits>

#include "creation.hpp"
#include "functions.hpp"

namespace lazytensor {

namespace detail {

/// x as one lazy graph node, so that a composite that reads it several times computes it once
/// (a subexpression written twice would be computed twice).
template <class E>
Tensor<typename E::value_type> read_once(const E& x) {
    return Tensor<typename E::value_type>(x);
}

template <class T>
inline constexpr bool is_floating_element_v = is_floating_v<T>;

/// A composite of ir/graph.hpp as a typed function: a Tensor of the dtype that the composite's
/// type rule gives (compile-time, as for an op: an element type the rule rejects is a
/// static_assert with the op's message).
template <TypeRule Rule, class E>
auto unary_composite(const E& x, NodePtr (*build)(const NodePtr&)) {
    return Tensor<dtype_type_t<unary_rule_result<Rule, typename E::value_type>()>>(build(x.build()));
}
template <TypeRule Rule, class L, class R>
auto binary_composite(const L& a, const R& b, NodePtr (*build)(const graph::Operand&, const graph::Operand&)) {
    using Result = dtype_type_t<binary_rule_result<Rule, wrapped_t<const L&>, wrapped_t<const R&>>()>;
    return Tensor<Result>(build(operand(wrap(a)), operand(wrap(b))));
}

}  // namespace detail

/// The logistic function 1 / (1 + exp(-x)), from exp(-|x|) (which never overflows) and exact
/// down to the smallest subnormal (sigmoid(-100.f) is 3.78e-44, e^-100 rounded to float). Integers give float32; bool
/// does not compile. Lazy, like the ops.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto sigmoid(const E& x) {
    return detail::unary_composite<TypeRule::Floating>(x, &detail::graph::sigmoid);
}

/// x sigmoid(x) (the swish), exact down to the smallest subnormal (silu(-105.f) is
/// -2.66e-44) and -0 at -inf. Integers give float32; bool does not compile.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto silu(const E& x) {
    return detail::unary_composite<TypeRule::Floating>(x, &detail::graph::silu);
}

/// PyTorch's exact gelu, 0.5 x (1 + erf(x / sqrt(2))), computed as 0.5 x erfc(-x / sqrt(2)) and,
/// far below 0, from erfc's asymptotic series: exact down to the smallest subnormal
/// (gelu(-14.f) is -1.1e-43). Integers give float32; bool does not compile.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto gelu(const E& x) {
    return detail::unary_composite<TypeRule::Floating>(x, &detail::graph::gelu);
}

/// 1, -1 or 0 in x's type; NaN stays NaN and -0 gives 0. Zero gradient. Bool does not compile.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto sign(const E& x) {
    return detail::unary_composite<TypeRule::Numeric>(x, &detail::graph::sign);
}

///@{
/// NumPy's remainder, also a % b: the result has the divisor's sign (a zero result too:
/// remainder(0, -2) is -0). Integer remainders by 0 give 0, float ones NaN; -1 % inf is inf.
/// Operands promote as for +, a tensor or a C++ scalar on either side, broadcast; two bools do
/// not compile.
template <class L, class R, class = std::enable_if_t<detail::is_binary_operands_v<L, R>>>
auto remainder(const L& a, const R& b) {
    return detail::binary_composite<TypeRule::Arith>(a, b, &detail::graph::remainder);
}
template <class L, class R, class = std::enable_if_t<detail::is_binary_operands_v<L, R>>>
auto operator%(const L& a, const R& b) {
    return remainder(a, b);
}
/// x %= y is x = x % y (the result type must be T, or it does not compile; see +=).
template <class T, class R, class = std::enable_if_t<detail::is_tensor_like_v<R> || detail::is_scalar_v<R>>>
Tensor<T>& operator%=(Tensor<T>& x, const R& y) {
    x = remainder(x, y);
    return x;
}
///@}

/// NumPy's floor_divide (Python's //): the floor of the exact quotient, as NumPy's divmod gives
/// it (1 // 0.1 is 9, not floor(1 / 0.1) = 10). Integers divided by 0 give 0 and the most
/// negative value divided by -1 wraps; floats divided by 0 give a / b. Zero gradient. Operands
/// promote as for +; two bools do not compile.
template <class L, class R, class = std::enable_if_t<detail::is_binary_operands_v<L, R>>>
auto floor_divide(const L& a, const R& b) {
    return detail::binary_composite<TypeRule::Arith>(a, b, &detail::graph::floor_divide);
}

/// x limited to [lo, hi] (NumPy's clip): minimum(maximum(x, lo), hi), so NaN in any operand
/// propagates and hi wins where lo > hi. lo and hi may be tensors (broadcast) or scalars.
template <class E, class Lo, class Hi,
          class = std::enable_if_t<detail::is_tensor_like_v<E> && (detail::is_tensor_like_v<Lo> || detail::is_scalar_v<Lo>) &&
                                   (detail::is_tensor_like_v<Hi> || detail::is_scalar_v<Hi>)>>
auto clamp(E&& x, Lo&& lo, Hi&& hi) {
    return minimum(maximum(std::forward<E>(x), std::forward<Lo>(lo)), std::forward<Hi>(hi));
}

/// Whether each element is finite (neither NaN nor infinite): bool, same shape. Integers and
/// bool are always finite.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto isfinite(const E& x) {
    using T = typename E::value_type;
    if constexpr (detail::is_floating_element_v<T>) return abs(x) < std::numeric_limits<double>::infinity();  // false for NaN
    else return full<bool>(x.shape(), true, x.device());
}

/// NumPy's nan_to_num: NaN becomes `nan`, +inf `posinf` and -inf `neginf` (by default the
/// largest and the lowest finite value of x's type). Integers and bool are returned as they are.
/// ValueError where a replacement does not fit x's type.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto nan_to_num(const E& x, double nan = 0.0, std::optional<double> posinf = std::nullopt,
                std::optional<double> neginf = std::nullopt) {
    using T = typename E::value_type;
    if constexpr (detail::is_floating_element_v<T>) {
        const double inf = std::numeric_limits<double>::infinity(), top = static_cast<double>(std::numeric_limits<T>::max());
        for (const double v : {nan, posinf.value_or(0.0), neginf.value_or(0.0)})
            if (std::isfinite(v) && std::fabs(v) > top)
                detail::fail<ValueError>("lt::nan_to_num: the replacement ", v, " does not fit ", dtype_of<T>(), " (largest finite value ",
                                 top, ")");
        const T hi = posinf ? static_cast<T>(*posinf) : std::numeric_limits<T>::max();
        const T lo = neginf ? static_cast<T>(*neginf) : std::numeric_limits<T>::lowest();
        const auto t = detail::read_once(x);
        return where(isnan(t), static_cast<T>(nan), where(t == inf, hi, where(t == -inf, lo, t)));
    } else {
        return detail::read_once(x);
    }
}

/// x where it is positive, x * negative_slope elsewhere (PyTorch's leaky_relu); floating x.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto leaky_relu(const E& x, double negative_slope = 0.01) {
    using T = typename E::value_type;
    static_assert(detail::is_floating_element_v<T>, "lazytensor: leaky_relu needs a floating tensor; cast first, e.g. lt::leaky_relu(lt::cast<float>(x))");
    const auto t = detail::read_once(x);
    return where(t > 0.0, t, t * negative_slope);
}

/// x where it is positive, alpha (exp(x) - 1) elsewhere (PyTorch's elu; expm1 keeps small
/// negative x exact); floating x.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto elu(const E& x, double alpha = 1.0) {
    using T = typename E::value_type;
    static_assert(detail::is_floating_element_v<T>, "lazytensor: elu needs a floating tensor; cast first, e.g. lt::elu(lt::cast<float>(x))");
    const auto t = detail::read_once(x);
    return where(t > 0.0, t, alpha * expm1(t));
}

///@{
/// log(1 + exp(x)), as max(x, 0) + log1p(exp(-|x|)): exact at both ends (x itself for large x,
/// exp(x) for very negative x), without PyTorch's cut to x above 20. With beta:
/// softplus(beta x) / beta. Floating x.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto softplus(const E& x) {
    using T = typename E::value_type;
    static_assert(detail::is_floating_element_v<T>, "lazytensor: softplus needs a floating tensor; cast first, e.g. lt::softplus(lt::cast<float>(x))");
    const auto t = detail::read_once(x);
    return maximum(t, 0.0) + log1p(exp(-abs(t)));
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto softplus(const E& x, double beta) {
    if (!(beta > 0) || !std::isfinite(beta)) detail::fail<ValueError>("lt::softplus: beta must be positive and finite, got ", beta);
    return softplus(x * beta) / beta;
}
///@}

/// x with `value` where mask is true (PyTorch's masked_fill): x's type and shape. mask is a bool
/// tensor that broadcasts to x's shape (ShapeError otherwise); ValueError if value does not fit
/// x's type.
template <class E, class M, class V,
          class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_tensor_like_v<M> && detail::is_scalar_v<V>>>
auto masked_fill(const E& x, const M& mask, V value) {
    using T = typename E::value_type;
    static_assert(std::is_same_v<typename M::value_type, bool>,
                  "lazytensor: masked_fill needs a bool mask, e.g. x > 0; for another dtype use x != 0");
    detail::graph::check_scalar_fits(detail::make_scalar(value), dtype_of<T>(), "lt::masked_fill");
    if (broadcast_shapes(x.shape(), mask.shape(), "lt::masked_fill") != x.shape())
        detail::fail<ShapeError>("lt::masked_fill: the mask's shape ", mask.shape(), " does not broadcast to the tensor's shape ",
                         x.shape());
    return where(mask, static_cast<T>(value), x);
}

}  // namespace lazytensor
