// SPDX-License-Identifier: MIT
// Indexing by tensors of positions: gather, index_select, one_hot, scatter_add.
//
// Positions are checked before anything is computed: the index tensor is realized with its
// minimum and maximum (one small schedule), and a position out of range is an IndexError
// naming it. The kernels clamp positions as well, so no read ever leaves a buffer. one_hot
// checks nothing (a label out of range gives a row of zeros) and reads nothing back.
#pragma once

#include <vector>

#include "tensor.hpp"

namespace lazytensor {

namespace detail {

/// Realizes an integer tensor and checks that its values lie in [0, bound).
inline void check_positions(const NodePtr& positions, std::int64_t bound, const char* op, const char* what,
                            const std::string& range) {
    if (!is_integral(positions->dtype))
        fail<ValueError>(op, ": ", what, " must be an integer tensor, got ", positions->dtype);
    if (numel(positions->shape) == 0) return;
    const NodePtr wide = graph::cast(positions, DType::Int64);
    const NodePtr lo = graph::reduce(ReduceOp::Min, wide, std::nullopt, false, op);
    const NodePtr hi = graph::reduce(ReduceOp::Max, wide, std::nullopt, false, op);
    realize_nodes({positions.get(), lo.get(), hi.get()});
    const std::int64_t low = read_elements<std::int64_t>(*lo)[0], high = read_elements<std::int64_t>(*hi)[0];
    if (low < 0 || high >= bound) {
        const std::int64_t bad = low < 0 ? low : high;
        if (bound == 0) fail<IndexError>(op, ": ", what, " ", bad, " is out of range for ", range, " (no position is valid)");
        fail<IndexError>(op, ": ", what, " ", bad, " is out of range for ", range, " (valid: 0 to ", bound - 1, ")");
    }
}

/// Whether labels of element type T are integers (uint8, int32, int64): one_hot's and
/// cross_entropy's static check. The untyped path checks the dtype when it runs (check_positions).
template <class T>
inline constexpr bool is_integer_label_v = std::is_integral_v<T> && !std::is_same_v<T, bool>;

}  // namespace detail

/// out[i] = x[i with i[axis] replaced by index[i]] (PyTorch's gather). index is an integer
/// tensor with x's rank, at most x's extent on every other axis; the result has its shape.
/// Realizes index now to check it (IndexError naming a bad position); the gather stays lazy.
template <class E, class I, class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_tensor_like_v<I>>>
auto gather(const E& x, int axis, const I& index) {
    using T = typename E::value_type;
    const detail::NodePtr data = x.build(), positions = index.build();
    const auto k = static_cast<std::size_t>(detail::normalize_axis(axis, data->shape.size(), "gather", data->shape));
    detail::graph::gather(data, axis, positions);  // shape, dtype and device checks first
    detail::check_positions(positions, data->shape[k], "gather", "index",
                            detail::concat("axis ", axis, " of extent ", data->shape[k], " (shape ", data->shape, ")"));
    return Tensor<T>(detail::graph::gather(data, axis, positions));
}

/// The slices of x at `index` (a 1-d integer tensor) along `axis`, in that order: x's shape
/// with that extent replaced by index's. ShapeError unless index is 1-d; realizes index now to
/// check it (IndexError for a position out of range).
template <class E, class I, class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_tensor_like_v<I>>>
auto index_select(const E& x, int axis, const I& index) {
    using T = typename E::value_type;
    const detail::NodePtr data = x.build(), positions = index.build();
    const auto k = static_cast<std::size_t>(detail::normalize_axis(axis, data->shape.size(), "index_select", data->shape));
    if (positions->shape.size() != 1)
        detail::fail<ShapeError>("index_select: the index must be 1-dimensional, got shape ", positions->shape);
    detail::check_positions(positions, data->shape[k], "index_select", "index",
                            detail::concat("axis ", axis, " of extent ", data->shape[k], " (shape ", data->shape, ")"));
    Shape spread(data->shape.size(), 1), out = data->shape;
    spread[k] = positions->shape[0];
    out[k] = positions->shape[0];
    const detail::NodePtr expanded = detail::graph::expand(detail::graph::reshape(positions, spread), out);
    return Tensor<T>(detail::graph::gather(data, static_cast<int>(k), expanded));
}

/// labels as one-hot int64 vectors along a new last axis: out[..., c] = (labels[...] == c) for c
/// in [0, num_classes). Lazy, one kernel, no read-back: a label outside [0, num_classes)
/// (negative, or num_classes or more) gives a row of zeros, as in JAX's one_hot (PyTorch's
/// raises; checking would read the labels back to the host on every call). num_classes = -1
/// takes the largest label + 1, which reads that one value back (the shape depends on it);
/// negative labels then give rows of zeros too. Floating or bool labels do not compile.
template <class I, class = std::enable_if_t<detail::is_tensor_like_v<I>>>
Tensor<std::int64_t> one_hot(const I& labels, std::int64_t num_classes = -1) {
    static_assert(detail::is_integer_label_v<typename I::value_type>,
                  "lazytensor: one_hot needs integer labels (int8 to int64, uint8 to uint64), not floating or bool ones; "
                  "cast them first, e.g. lt::one_hot(lt::cast<std::int64_t>(labels), num_classes)");
    const detail::NodePtr l = labels.build();
    if (num_classes < -1) detail::fail<ValueError>("one_hot: num_classes must be >= 0 or -1, got ", num_classes);
    if (!is_integral(l->dtype)) detail::fail<ValueError>("one_hot: labels must be integers, got ", l->dtype);
    if (num_classes == -1) {
        if (numel(l->shape) == 0)
            detail::fail<ValueError>("one_hot: cannot infer num_classes from empty labels; pass it");
        const detail::NodePtr hi = detail::graph::reduce(ReduceOp::Max, detail::graph::cast(l, DType::Int64), std::nullopt,
                                                          false, "one_hot");
        detail::realize_nodes({hi.get()});
        num_classes = std::max<std::int64_t>(detail::read_elements<std::int64_t>(*hi)[0] + 1, 0);
    }
    Shape out = l->shape;
    out.push_back(num_classes);
    Shape spread = l->shape;
    spread.push_back(1);
    const detail::NodePtr classes = detail::graph::iota(out, -1, l->device);
    const detail::NodePtr wide = detail::graph::expand(detail::graph::reshape(detail::graph::cast(l, DType::Int64), spread), out);
    return Tensor<std::int64_t>(detail::graph::cast(detail::graph::binary(BinaryOp::Eq, wide, classes), DType::Int64));
}

/// x with src added at the positions index names along `axis` (PyTorch's scatter_add:
/// out[i with i[axis] = index[j]] += src[j] for every j in index's shape). Deterministic:
/// each output element sums its contributions in index order, on every backend. It is
/// computed as a reduction over index's extent along `axis` for every output element, so it
/// costs numel(x) * index.shape[axis] operations (fine for small index extents). src is
/// converted to x's type. Realizes index now to check it (IndexError); ShapeError for ranks or
/// extents that do not fit.
template <class E, class I, class S,
          class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_tensor_like_v<I> && detail::is_tensor_like_v<S>>>
auto scatter_add(const E& x, int axis, const I& index, const S& src) {
    using T = typename E::value_type;
    const char* op = "scatter_add";
    const detail::NodePtr base = x.build(), positions = index.build(), values = detail::graph::cast(src.build(), dtype_of<T>());
    const Shape& s = base->shape;
    const auto r = s.size();
    const auto k = static_cast<std::size_t>(detail::normalize_axis(axis, r, op, s));
    if (positions->shape.size() != r || values->shape.size() != r)
        detail::fail<ShapeError>(op, ": x (shape ", s, "), index (shape ", positions->shape, ") and src (shape ",
                                 values->shape, ") must have the same number of dimensions");
    for (std::size_t d = 0; d < r; ++d) {
        if (positions->shape[d] > values->shape[d] || (d != k && positions->shape[d] > s[d]))
            detail::fail<ShapeError>(op, ": index shape ", positions->shape, " must not exceed src shape ", values->shape,
                                     ", nor x shape ", s, " outside axis ", k);
    }
    detail::check_positions(positions, s[k], op, "index", detail::concat("axis ", axis, " of extent ", s[k], " (shape ", s, ")"));
    return Tensor<T>(detail::graph::scatter_add(base, static_cast<int>(k), positions, values));
}

}  // namespace lazytensor
