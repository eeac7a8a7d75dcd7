// SPDX-License-Identifier: MIT
// Neural-network composites, built from primitives so that the scheduler fuses them: a row
// softmax is one kernel (max, sum of exponentials and the normalized store are three phases of
// it), logsumexp and layer_norm likewise; cross_entropy is one kernel per row plus the mean.
#pragma once

#include <optional>

#include "indexing.hpp"
#include "reductions.hpp"

namespace lazytensor {

namespace detail {

/// Whether any of `axes` (valid for `x`) has extent 0: a softmax or logsumexp over it has nothing
/// to shift by (the maximum of no elements), and nothing that could overflow either.
inline bool over_empty_axis(const NodePtr& x, const Axes& axes, const char* op) {
    for (int a : normalize_axes(axes, x->shape.size(), op, x->shape))
        if (x->shape[static_cast<std::size_t>(a)] == 0) return true;
    return false;
}

/// log(sum(exp(x))) over `axes`, shifted by the maximum so that nothing overflows. An
/// all-(-inf) row gives -inf and a +inf element gives +inf, as the exact value would; over an
/// empty axis, log(0) = -inf.
inline NodePtr log_sum_exp(const NodePtr& x, const Axes& axes, bool keepdim) {
    const NodePtr v = floating(x);
    if (over_empty_axis(v, axes, "logsumexp"))
        return graph::unary(UnaryOp::Log, graph::reduce(ReduceOp::Sum, graph::unary(UnaryOp::Exp, v), axes, keepdim, "logsumexp"));
    // The shift cancels: it passes no gradient (which would be zero, at the cost of kernels).
    const NodePtr m = graph::stop_gradient(graph::reduce(ReduceOp::Max, v, axes, true, "logsumexp"));
    const NodePtr infinite = graph::binary(BinaryOp::Eq, graph::unary(UnaryOp::Abs, m), Scalar::of<double>(INFINITY));
    const NodePtr shift = graph::where(infinite, Scalar::of<double>(0.0), m);
    const NodePtr sum = graph::reduce(ReduceOp::Sum, graph::unary(UnaryOp::Exp, graph::binary(BinaryOp::Sub, v, shift)),
                                      axes, keepdim, "logsumexp");
    const NodePtr kept = keepdim ? shift : graph::squeeze_axes(shift, normalize_axes(axes, x->shape.size(), "logsumexp", x->shape));
    return graph::binary(BinaryOp::Add, graph::unary(UnaryOp::Log, sum), kept);
}

}  // namespace detail

/// exp(x) / sum(exp(x)) along `axis` (shifted by the maximum), same shape (empty along an empty
/// axis); integers compute in float32. Lazy; a softmax over rows is one kernel. AxisError for a
/// bad axis.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto softmax(const E& x, int axis = -1) {
    using R = detail::mean_t<typename E::value_type>;
    namespace g = detail::graph;
    const detail::NodePtr v = detail::floating(x.build());
    const Axes axes{axis};
    const detail::NodePtr shifted = detail::over_empty_axis(v, axes, "softmax")
                                        ? v
                                        : g::binary(BinaryOp::Sub, v, g::stop_gradient(g::reduce(ReduceOp::Max, v, axes, true, "softmax")));
    const detail::NodePtr e = g::unary(UnaryOp::Exp, shifted);
    return Tensor<R>(g::binary(BinaryOp::Div, e, g::reduce(ReduceOp::Sum, e, axes, true, "softmax")));
}

/// log(softmax(x, axis)), computed as x - logsumexp(x, axis) (no log of a rounded 0). Same
/// shape; integers compute in float32. Lazy.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto log_softmax(const E& x, int axis = -1) {
    using R = detail::mean_t<typename E::value_type>;
    const detail::NodePtr v = detail::floating(x.build());
    return Tensor<R>(detail::graph::binary(BinaryOp::Sub, v, detail::log_sum_exp(v, Axes{axis}, true)));
}

/// log(sum(exp(x))) over `axes` (all when empty), without overflow; integers compute in float32.
/// Lazy.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto logsumexp(const E& x, const Axes& axes = {}, bool keepdim = false) {
    using R = detail::mean_t<typename E::value_type>;
    const detail::NodePtr v = x.build();
    return Tensor<R>(detail::log_sum_exp(v, axes.empty() ? detail::all_axes(v->shape.size()) : axes, keepdim));
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto logsumexp(const E& x, int axis, bool keepdim = false) {
    return logsumexp(x, Axes{axis}, keepdim);
}

namespace detail {

/// layer_norm's check of its weight's or bias's shape (`what`), before anything is built: it
/// must broadcast to x's shape. A ShapeError names both shapes and the normalized shape (x's
/// extents along the normalized axes, with the axes before them left out: [C] for the last axis
/// of [N, C], [N, 1] for axis 0), the shape a weight usually has.
inline void check_layer_norm_affine(const char* what, const Shape& p, const Shape& x, const Axes& norm) {
    Shape normalized(x.size(), 1);
    for (int a : norm) normalized[static_cast<std::size_t>(a)] = x[static_cast<std::size_t>(a)];
    std::size_t lead = 0;
    while (lead < normalized.size() && normalized[lead] == 1) ++lead;
    normalized = Shape(normalized.begin() + static_cast<std::ptrdiff_t>(lead), normalized.end());
    bool fits = p.size() <= x.size();
    for (std::size_t k = 0; fits && k < p.size(); ++k) {
        const std::int64_t e = p[p.size() - 1 - k], xe = x[x.size() - 1 - k];
        fits = e == 1 || e == xe;
    }
    if (!fits)
        fail<ShapeError>("layer_norm: the ", what, "'s shape ", p, " does not fit the normalized shape ", normalized,
                         " (x has shape ", x, ", normalized over axes ", norm, "); the ", what,
                         " must broadcast to x's shape, e.g. have shape ", normalized);
}

}  // namespace detail

/// (x - mean) / sqrt(var + eps) over `axes` (all when empty; biased variance, as PyTorch's layer_norm), then
/// times `weight` and plus `bias` when given (each broadcast to x's shape: usually of the
/// normalized shape, [C] for the last axis of [N, C]). Integers compute in float32. Lazy.
/// ValueError if eps is negative or NaN; AxisError for a bad axis; ShapeError for a weight or
/// bias that does not broadcast to x's shape (a larger one too).
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto layer_norm(const E& x, const Axes& axes, double eps = 1e-5,
                const std::optional<Tensor<detail::mean_t<typename E::value_type>>>& weight = std::nullopt,
                const std::optional<Tensor<detail::mean_t<typename E::value_type>>>& bias = std::nullopt) {
    using R = detail::mean_t<typename E::value_type>;
    namespace g = detail::graph;
    if (!(eps >= 0)) detail::fail<ValueError>("layer_norm: eps must be >= 0, got ", eps);
    const detail::NodePtr v = detail::floating(x.build());
    const Axes norm = axes.empty() ? detail::all_axes(v->shape.size())  // all, as var and logsumexp
                                   : detail::normalize_axes(axes, v->shape.size(), "layer_norm", v->shape);
    if (weight) detail::check_layer_norm_affine("weight", weight->shape(), v->shape, norm);
    if (bias) detail::check_layer_norm_affine("bias", bias->shape(), v->shape, norm);
    const detail::NodePtr centered = g::binary(BinaryOp::Sub, v, g::mean(v, norm, true, true));
    const detail::NodePtr var = g::mean(g::binary(BinaryOp::Mul, centered, centered), norm, true, true);
    detail::NodePtr out = g::binary(BinaryOp::Div, centered,
                                    g::unary(UnaryOp::Sqrt, g::binary(BinaryOp::Add, var, Scalar::of<double>(eps))));
    if (weight) out = g::binary(BinaryOp::Mul, out, weight->build());
    if (bias) out = g::binary(BinaryOp::Add, out, bias->build());
    return Tensor<R>(out);
}
/// layer_norm over one axis (the last by default), without weight and bias.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto layer_norm(const E& x, int axis = -1, double eps = 1e-5) {
    return layer_norm(x, Axes{axis}, eps);
}

/// How cross_entropy combines the per-sample losses: their Mean or Sum (a 0-d tensor), or
/// None (one loss per sample, in labels' shape).
enum class Reduction { Mean, Sum, None };

/// The negative log-likelihood of `labels` (integers in [0, C)) under softmax(logits) along
/// the last axis: logsumexp(logits) - logits[label], per sample ([...]) or its mean or sum.
/// logits have shape [..., C] and labels [...] (ShapeError otherwise); labels are realized now
/// and checked: one out of range is an IndexError. Floating or bool labels do not compile.
template <class E, class I, class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_tensor_like_v<I>>>
auto cross_entropy(const E& logits, const I& labels, Reduction reduction = Reduction::Mean) {
    static_assert(detail::is_integer_label_v<typename I::value_type>,
                  "lazytensor: cross_entropy needs integer class labels (uint8, int32 or int64), not floating or "
                  "bool ones; cast them first, e.g. lt::cross_entropy(logits, lt::cast<std::int64_t>(labels))");
    using R = detail::mean_t<typename E::value_type>;
    namespace g = detail::graph;
    const char* op = "cross_entropy";
    const detail::NodePtr x = detail::floating(logits.build()), l = labels.build();
    if (x->shape.empty()) detail::fail<ShapeError>(op, ": logits need a class axis, got a 0-d tensor");
    const Shape batch(x->shape.begin(), x->shape.end() - 1);
    if (l->shape != batch)
        detail::fail<ShapeError>(op, ": labels of shape ", l->shape, " do not match logits of shape ", x->shape,
                                 " (expected labels of shape ", batch, ")");
    const std::int64_t classes = x->shape[x->shape.size() - 1];
    detail::check_positions(l, classes, op, "label", detail::concat(classes, " classes (logits shape ", x->shape, ")"));
    Shape spread = batch;
    spread.push_back(1);
    const int last = static_cast<int>(batch.size());
    const detail::NodePtr is_label =
        g::binary(BinaryOp::Eq, g::iota(x->shape, last, x->device), g::reshape(g::cast(l, DType::Int64), spread));
    const detail::NodePtr picked =
        g::reduce(ReduceOp::Sum, g::where(is_label, x, Scalar::of<double>(0.0)), Axes{last}, false, op);
    detail::NodePtr loss = g::binary(BinaryOp::Sub, detail::log_sum_exp(x, Axes{last}, false), picked);
    if (reduction == Reduction::Mean) loss = g::mean(loss, std::nullopt, false, true);
    if (reduction == Reduction::Sum) loss = g::reduce(ReduceOp::Sum, loss, std::nullopt, false, op);
    return Tensor<R>(loss);
}

}  // namespace lazytensor
