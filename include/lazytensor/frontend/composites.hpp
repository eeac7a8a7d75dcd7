// Composite element-wise functions: rewrites into the primitives of ir/ops.hpp, written once
// here (tinygrad's decompositions), so that every backend runs them as it runs the primitives,
// fused into the kernel of whatever reads them. Each is written to be exact at the extremes.
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
inline constexpr bool is_floating_element_v = std::is_floating_point_v<T> || std::is_same_v<T, half>;

}  // namespace detail

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
