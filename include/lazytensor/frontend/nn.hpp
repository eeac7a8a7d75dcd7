// SPDX-License-Identifier: MIT
// Neural-network composites, built from primitives so that the scheduler fuses them: a row
// softmax is one kernel (max, sum of exponentials and the normalized store are three phases of
// it), logsumexp and layer_norm likewise; cross_entropy is one kernel per row plus the mean.
#pragma once

#include <optional>

#include "indexing.hpp"
#include "random.hpp"
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

///@{
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
///@}

namespace detail {

/// centered / sqrt(var + eps) as centered times one rsqrt per group (PyTorch's rstd): a division
/// per element costs several times a product on every backend, and the gradient of one rsqrt
/// node reads only its value (the backward pass keeps the forward's kernel count).
inline NodePtr normalized(const NodePtr& centered, const NodePtr& var, double eps) {
    namespace g = graph;
    return g::binary(BinaryOp::Mul, centered, g::rsqrt(g::binary(BinaryOp::Add, var, Scalar::of<double>(eps))));
}

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
    detail::NodePtr out = detail::normalized(centered, var, eps);
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
                  "lazytensor: cross_entropy needs integer class labels (int8 to int64, uint8 to uint64), not floating or "
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

namespace detail {

/// [1, C, 1, ...]: a per-channel tensor broadcast over x's batch and spatial axes.
inline NodePtr per_channel(const NodePtr& v, std::size_t rank) {
    Shape shape(rank, 1);
    shape[1] = v->shape[0];
    return graph::reshape(v, shape);
}

inline void check_per_channel(const char* op, const char* what, const Shape& given, const Shape& x) {
    if (given != Shape{x[1]})
        fail<ShapeError>(op, ": the ", what, " must have shape [", x[1], "] (one per channel of x, shape ", x,
                         "), got ", given);
}

template <class R>
Tensor<R> batch_norm(const NodePtr& input, Tensor<R>* running_mean, Tensor<R>* running_var,
                     const std::optional<Tensor<R>>& weight, const std::optional<Tensor<R>>& bias, bool training,
                     double momentum, double eps) {
    namespace g = graph;
    const char* op = "batch_norm";
    const NodePtr v = floating(input);
    if (v->shape.size() < 2)
        fail<ShapeError>(op, ": x must have at least 2 axes ([batch, channels, ...]), got shape ", v->shape);
    if (!(eps >= 0)) fail<ValueError>(op, ": eps must be >= 0, got ", eps);
    if (!(momentum >= 0 && momentum <= 1)) fail<ValueError>(op, ": momentum must be in [0, 1], got ", momentum);
    if (running_mean) check_per_channel(op, "running mean", running_mean->shape(), v->shape);
    if (running_var) check_per_channel(op, "running variance", running_var->shape(), v->shape);
    if (weight) check_per_channel(op, "weight", weight->shape(), v->shape);
    if (bias) check_per_channel(op, "bias", bias->shape(), v->shape);
    const std::size_t rank = v->shape.size();
    NodePtr out;
    if (training) {
        Axes axes{0};
        for (std::size_t k = 2; k < rank; ++k) axes.push_back(static_cast<int>(k));
        const std::int64_t count = numel(v->shape) / std::max<std::int64_t>(v->shape[1], 1);
        if (count < 2)
            fail<ValueError>(op, ": training needs more than one value per channel (as PyTorch's), got x of shape ",
                             v->shape);
        const NodePtr mean = g::mean(v, axes, true, true);
        const NodePtr centered = g::binary(BinaryOp::Sub, v, mean);
        const NodePtr var = g::mean(g::binary(BinaryOp::Mul, centered, centered), axes, true, true);
        out = normalized(centered, var, eps);
        // The running statistics become lazy updates (PyTorch's: the unbiased variance), computed
        // with whatever realizes them next; no gradient flows into them.
        const Shape channels{v->shape[1]};
        auto update = [&](Tensor<R>* running, const NodePtr& batch_value) {
            const NodePtr old = g::binary(BinaryOp::Mul, running->build(), Scalar::of<double>(1 - momentum));
            const NodePtr fresh = g::binary(BinaryOp::Mul, g::stop_gradient(g::reshape(batch_value, channels)),
                                            Scalar::of<double>(momentum));
            *running = Tensor<R>(g::cast(g::binary(BinaryOp::Add, old, fresh), dtype_of<R>()));
        };
        if (running_mean) update(running_mean, mean);
        if (running_var)
            update(running_var, g::binary(BinaryOp::Mul, var,
                                          Scalar::of<double>(static_cast<double>(count) / static_cast<double>(count - 1))));
    } else {
        if (!running_mean || !running_var)
            fail<ValueError>(op, ": evaluation (training = false) needs the running mean and variance");
        out = normalized(g::binary(BinaryOp::Sub, v, per_channel(running_mean->build(), rank)),
                         per_channel(running_var->build(), rank), eps);
    }
    if (weight) out = g::binary(BinaryOp::Mul, out, per_channel(weight->build(), rank));
    if (bias) out = g::binary(BinaryOp::Add, out, per_channel(bias->build(), rank));
    return Tensor<R>(out);
}

}  // namespace detail

/// PyTorch's batch_norm over x [N, C, ...]: each channel normalized by the batch's mean and
/// biased variance over every axis but the channels (training), or by the running statistics
/// (evaluation), then times `weight` and plus `bias` ([C] each, when given). In training the
/// running statistics, when given, are replaced by lazy updates, (1 - momentum) * running +
/// momentum * batch (the variance unbiased, as PyTorch's), realized with whatever realizes them
/// next; gradients flow through the batch statistics, none into the running ones. ShapeError for
/// a per-channel tensor not of shape [C]; ValueError for training on one value per channel,
/// evaluation without running statistics, eps < 0 or momentum outside [0, 1].
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto batch_norm(const E& x, Tensor<detail::mean_t<typename E::value_type>>& running_mean,
                Tensor<detail::mean_t<typename E::value_type>>& running_var,
                const std::optional<Tensor<detail::mean_t<typename E::value_type>>>& weight = std::nullopt,
                const std::optional<Tensor<detail::mean_t<typename E::value_type>>>& bias = std::nullopt,
                bool training = false, double momentum = 0.1, double eps = 1e-5) {
    using R = detail::mean_t<typename E::value_type>;
    return detail::batch_norm<R>(x.build(), &running_mean, &running_var, weight, bias, training, momentum, eps);
}
/// batch_norm without running statistics: the batch's statistics (training).
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto batch_norm(const E& x, std::nullopt_t, std::nullopt_t,
                const std::optional<Tensor<detail::mean_t<typename E::value_type>>>& weight = std::nullopt,
                const std::optional<Tensor<detail::mean_t<typename E::value_type>>>& bias = std::nullopt,
                bool training = true, double momentum = 0.1, double eps = 1e-5) {
    using R = detail::mean_t<typename E::value_type>;
    return detail::batch_norm<R>(x.build(), nullptr, nullptr, weight, bias, training, momentum, eps);
}

/// PyTorch's group_norm over x [N, C, ...]: the channels split into `num_groups` groups, each
/// sample's group normalized by its mean and biased variance (over its channels and every
/// spatial position), then times `weight` and plus `bias` ([C] each, when given). ValueError if
/// num_groups does not divide C.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto group_norm(const E& x, std::int64_t num_groups,
                const std::optional<Tensor<detail::mean_t<typename E::value_type>>>& weight = std::nullopt,
                const std::optional<Tensor<detail::mean_t<typename E::value_type>>>& bias = std::nullopt, double eps = 1e-5) {
    using R = detail::mean_t<typename E::value_type>;
    namespace g = detail::graph;
    const char* op = "group_norm";
    const detail::NodePtr v = detail::floating(x.build());
    if (v->shape.size() < 2)
        detail::fail<ShapeError>(op, ": x must have at least 2 axes ([batch, channels, ...]), got shape ", v->shape);
    if (!(eps >= 0)) detail::fail<ValueError>(op, ": eps must be >= 0, got ", eps);
    if (num_groups < 1 || v->shape[1] % num_groups != 0)
        detail::fail<ValueError>(op, ": num_groups = ", num_groups, " must be at least 1 and divide the ", v->shape[1],
                                 " channels of x (shape ", v->shape, ")");
    if (weight) detail::check_per_channel(op, "weight", weight->shape(), v->shape);
    if (bias) detail::check_per_channel(op, "bias", bias->shape(), v->shape);
    std::int64_t per_group = v->shape[1] / num_groups;
    for (std::size_t k = 2; k < v->shape.size(); ++k) per_group *= v->shape[k];
    const detail::NodePtr grouped = g::reshape(v, Shape{v->shape[0], num_groups, per_group});
    const detail::NodePtr centered = g::binary(BinaryOp::Sub, grouped, g::mean(grouped, Axes{2}, true, true));
    const detail::NodePtr var = g::mean(g::binary(BinaryOp::Mul, centered, centered), Axes{2}, true, true);
    detail::NodePtr out = g::reshape(detail::normalized(centered, var, eps), v->shape);
    if (weight) out = g::binary(BinaryOp::Mul, out, detail::per_channel(weight->build(), v->shape.size()));
    if (bias) out = g::binary(BinaryOp::Add, out, detail::per_channel(bias->build(), v->shape.size()));
    return Tensor<R>(out);
}

/// Dropout: each element kept with probability 1 - p and scaled by 1 / (1 - p), else 0, from
/// counter-based random bits of `seed` (the same mask on every device); x itself when not
/// training or p = 0. Lazy, one kernel with its producer. ValueError unless 0 <= p <= 1.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto dropout(const E& x, double p, std::uint64_t seed, bool training = true) {
    using T = typename E::value_type;
    static_assert(detail::is_floating_v<T>, "lazytensor: dropout needs a floating tensor");
    namespace g = detail::graph;
    if (!(p >= 0 && p <= 1)) detail::fail<ValueError>("dropout: p must be in [0, 1], got ", p);
    const detail::NodePtr v = x.build();
    if (!training || p == 0) return Tensor<T>(v);
    const detail::NodePtr keep =
        g::binary(BinaryOp::Ge, rand<float>(v->shape, seed, v->device).build(), Scalar::of<double>(p));
    const detail::NodePtr scaled = p == 1 ? g::binary(BinaryOp::Mul, v, Scalar::of<double>(0.0))
                                          : g::binary(BinaryOp::Mul, v, Scalar::of<double>(1.0 / (1.0 - p)));
    return Tensor<T>(g::where(keep, scaled, Scalar::of<double>(0.0).cast(v->dtype)));
}

/// Dropout with a key (training mode): as dropout with a seed, on a mask of its own drawn from
/// the key (unrelated to rand of the same key), the same on every device. Each element is kept
/// with probability 1 - p and scaled by 1 / (1 - p); x itself when not training or p = 0.
/// Lazy. ValueError unless 0 <= p <= 1.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto dropout(const E& x, double p, Key key, bool training = true) {
    return dropout(x, p, detail::draw_seed(key, detail::RandomUse::Dropout, x.shape(), "dropout"), training);
}

}  // namespace lazytensor
