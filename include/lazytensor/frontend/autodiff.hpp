// SPDX-License-Identifier: MIT
// Automatic differentiation, functional and reverse mode: lt::grad, lt::vjp, lt::value_and_grad
// and lt::stop_gradient. No state hides in tensors: a gradient is taken of the lazy graph that
// an output was built from, and comes back as lazy tensors, which the scheduler fuses with each
// other and with the output when they are realized together. The rules are in
// autodiff/reverse.hpp.
//
// A tensor that is realized is a constant from then on (realize computes it into memory and lets
// its graph go, as MLX's eval does): take gradients before realizing the output, then realize
// the output and its gradients together.
#pragma once

#include <initializer_list>
#include <type_traits>
#include <utility>
#include <vector>

#include "tensor.hpp"

namespace lazytensor {

namespace detail {

template <class T>
inline constexpr void check_differentiable() {
    static_assert(is_floating_v<T>, "lazytensor: gradients exist for floating tensors only (float, double, half, bfloat16); "
                                    "cast integer or bool tensors with lt::cast<float>(x) first");
}

template <class P>
std::vector<Tensor<P>> typed_gradients(const std::vector<NodePtr>& outputs, const std::vector<NodePtr>& cotangents,
                                       const std::vector<Tensor<P>>& inputs, const char* op) {
    check_differentiable<P>();
    std::vector<NodePtr> in;
    in.reserve(inputs.size());
    for (const Tensor<P>& x : inputs) in.push_back(x.build());
    std::vector<Tensor<P>> out;
    for (NodePtr& gx : vjp_nodes(outputs, cotangents, in, op)) out.emplace_back(std::move(gx));
    return out;
}

/// A braced list of parameters of several dtypes ({w_float, v_double}), which the list forms of
/// lt::grad, lt::vjp and lt::value_and_grad cannot take: a std::initializer_list<Tensor<P>> has
/// one element type. Choosing this overload is the mistake; its constructor says so. (A list
/// of one dtype takes the initializer_list overload: this constructor is not viable for it.)
struct ParamsOfSeveralDtypes {
    template <class A, class B, class... Rest,
              class = std::enable_if_t<!(std::is_same_v<A, B> && (std::is_same_v<A, Rest> && ...))>>
    ParamsOfSeveralDtypes(const Tensor<A>&, const Tensor<B>&, const Tensor<Rest>&...) {
        static_assert(!std::is_same_v<A, A>,
                      "lazytensor: the parameters in one list of lt::grad, lt::value_and_grad or lt::vjp must all "
                      "have one dtype (the list is a std::vector<Tensor<T>> of one T); for parameters of several "
                      "dtypes, take the gradients once per dtype, e.g. lt::grad(loss, {w, b}) for the float ones "
                      "and lt::grad(loss, {v}) for the double ones, and realize them together");
    }
};

/// The 0-d loss's node and a cotangent of 1.
template <class L>
std::pair<NodePtr, NodePtr> loss_and_seed(const L& loss) {
    check_differentiable<typename L::value_type>();
    NodePtr y = loss.build();
    if (!y->shape.empty())
        fail<ShapeError>("grad: the loss must be a 0-d tensor, got shape ", y->shape,
                         "; reduce it (lt::sum, .mean()) or give a cotangent of its shape to lt::vjp");
    return {y, graph::constant(Scalar::of<std::int64_t>(1), y->dtype, y->shape, y->device)};
}

}  // namespace detail

/// x's value, as a constant to lt::grad and lt::vjp: no gradient flows through it (JAX's and
/// MLX's stop_gradient, PyTorch's detach). Costs nothing: a view.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
Tensor<typename E::value_type> stop_gradient(const E& x) {
    return Tensor<typename E::value_type>(detail::graph::stop_gradient(x.build()));
}

///@{
/// The gradients of a 0-d floating `loss` with respect to `params`, in their order, each of its
/// parameter's shape and dtype, as lazy tensors: auto g = lt::grad(loss, {w, b}). A parameter
/// that the loss does not depend on gets zeros. ShapeError if the loss is not 0-d; ValueError
/// if a parameter may have been cut off by a realize (see above).
template <class L, class P, class = std::enable_if_t<detail::is_tensor_like_v<L>>>
std::vector<Tensor<P>> grad(const L& loss, const std::vector<Tensor<P>>& params) {
    auto [y, seed] = detail::loss_and_seed(loss);
    return detail::typed_gradients({y}, {seed}, params, "grad");
}
template <class L, class P, class = std::enable_if_t<detail::is_tensor_like_v<L>>>
std::vector<Tensor<P>> grad(const L& loss, std::initializer_list<Tensor<P>> params) {
    return grad(loss, std::vector<Tensor<P>>(params));
}
/// Parameters of several dtypes in one list: does not compile (detail::ParamsOfSeveralDtypes's
/// static_assert), with the usual result type, so that the static_assert is the one error.
template <class L, class = std::enable_if_t<detail::is_tensor_like_v<L>>>
std::vector<Tensor<float>> grad(const L&, detail::ParamsOfSeveralDtypes) {
    return {};
}
/// The gradient with respect to one parameter: lt::grad(loss, w).
template <class L, class P, class = std::enable_if_t<detail::is_tensor_like_v<L>>>
Tensor<P> grad(const L& loss, const Tensor<P>& param) {
    return grad(loss, std::vector<Tensor<P>>{param})[0];
}
///@}

///@{
/// The vector-Jacobian product: the gradient of sum_i sum(outputs[i] * cotangents[i]) with
/// respect to each of `inputs`, as lazy tensors of the inputs' shapes and dtypes:
/// lt::vjp({y}, {w, b}, {dy}). Each cotangent has its output's shape (ShapeError naming both)
/// and device; it is converted to the output's dtype.
template <class P>
std::vector<Tensor<P>> vjp(const std::vector<TensorRef>& outputs, const std::vector<Tensor<P>>& inputs,
                           const std::vector<TensorRef>& cotangents) {
    std::vector<detail::NodePtr> ys, cs;
    for (const TensorRef& y : outputs) ys.push_back(y.node_ptr());
    for (const TensorRef& c : cotangents) cs.push_back(c.node_ptr());
    return detail::typed_gradients(ys, cs, inputs, "vjp");
}
template <class P>
std::vector<Tensor<P>> vjp(const std::vector<TensorRef>& outputs, std::initializer_list<Tensor<P>> inputs,
                           const std::vector<TensorRef>& cotangents) {
    return vjp(outputs, std::vector<Tensor<P>>(inputs), cotangents);
}
/// Inputs of several dtypes in one list: does not compile (as grad's).
inline std::vector<Tensor<float>> vjp(const std::vector<TensorRef>&, detail::ParamsOfSeveralDtypes,
                                      const std::vector<TensorRef>&) {
    return {};
}
///@}

/// A loss and its gradients (auto [loss, grads] = lt::value_and_grad(...)), lazy until realized.
template <class L, class P>
struct ValueAndGrad {
    Tensor<L> value;                ///< the loss
    std::vector<Tensor<P>> grads;  ///< its gradient with respect to each parameter, in order

    /// Computes the loss and every gradient in one schedule (shared parts once); returns *this.
    ValueAndGrad& realize() {
        std::vector<TensorRef> all{value};
        for (const Tensor<P>& g : grads) all.emplace_back(g);
        lazytensor::realize(all);
        return *this;
    }
};

///@{
/// Calls f (with `params`, if it takes them, else with no arguments) for a 0-d loss and gives the
/// loss with its gradients with respect to params: the lazy values of lt::grad, so that
/// .realize() computes them together.
///   auto [loss, g] = lt::value_and_grad([&] { auto d = x.matmul(w) - y; return lt::sum(d * d); }, {w});
template <class F, class P>
auto value_and_grad(F&& f, const std::vector<Tensor<P>>& params) {
    auto loss = [&] {
        if constexpr (std::is_invocable_v<F&, const std::vector<Tensor<P>>&>) return std::forward<F>(f)(params);
        else return std::forward<F>(f)();
    }();
    using L = typename std::decay_t<decltype(loss)>::value_type;
    Tensor<L> value(loss);
    return ValueAndGrad<L, P>{value, grad(value, params)};
}
template <class F, class P>
auto value_and_grad(F&& f, std::initializer_list<Tensor<P>> params) {
    return value_and_grad(std::forward<F>(f), std::vector<Tensor<P>>(params));
}
/// Parameters of several dtypes in one list: does not compile (as grad's; with the usual result
/// type, so that the static_assert is the one error).
template <class F>
ValueAndGrad<float, float> value_and_grad(F&&, detail::ParamsOfSeveralDtypes) {
    return {};
}
///@}

}  // namespace lazytensor
