// SPDX-License-Identifier: MIT
// Sorting and selection along an axis: sort, argsort and topk. Lazy like every other op: the
// positions are a sort node (a schedule item of its own, items/sort_item.hpp: the device's row
// sort, with the element-wise work that produces its input computed on the way) and the values
// are gathered at them, so they fuse with what reads them and are differentiable. Every sort is
// stable, and NaN sorts after every number (before them when descending), as in PyTorch; -0 and
// +0 are equal.
#pragma once

#include <cstdint>

#include "creation.hpp"
#include "movement.hpp"
#include "tensor.hpp"

namespace lazytensor {

/// The result of lt::sort and lt::topk (and of lt::median, lt::max_with_indices and
/// lt::min_with_indices, frontend/extra_functions.hpp): the values and their positions along the
/// axis, both of the same shape (auto [values, indices] = lt::sort(x)).
template <class T>
struct SortResult {
    Tensor<T> values;               ///< the values, in order
    Tensor<std::int64_t> indices;  ///< where each value was along the axis
};

namespace detail {

/// The first k of x along `axis` in order. AxisError for a bad axis, ValueError for a bad k.
template <class E>
SortResult<typename E::value_type> sort_along(const E& x, int axis, std::int64_t k, bool descending, const char* op) {
    using T = typename E::value_type;
    Tensor<T> t(x);
    if (t.ndim() == 0) {  // one element, as PyTorch: axis 0 or -1
        if (axis != 0 && axis != -1)
            fail<AxisError>(op, ": axis ", axis, " is out of range: the tensor is 0-d (shape []) and has no axes; "
                            "as in PyTorch, axis 0 or -1 takes its one element");
        SortResult<T> r = sort_along(t.reshape({1}), 0, k, descending, op);
        return {r.values.reshape({}), r.indices.reshape({})};
    }
    const int a = normalize_axis(axis, t.ndim(), op, t.shape());
    const std::int64_t n = t.shape()[static_cast<std::size_t>(a)];
    if (k < 0 || k > n)
        fail<ValueError>(op, ": k = ", k, " is outside [0, ", n, "], the extent of axis ", axis, " of shape ", t.shape());
    // The positions along the last axis, and the values gathered at them (lazy both: the
    // gradient of the values reaches x through the gather, as in PyTorch).
    const NodePtr rows = movedim(t, a, -1).node_ptr();
    const NodePtr positions = graph::sort_positions(rows, k, descending, op);
    const int last = t.ndim() - 1;
    return {movedim(Tensor<T>(graph::gather(rows, last, positions)), -1, a), movedim(Tensor<std::int64_t>(positions), -1, a)};
}

}  // namespace detail

/// x sorted along `axis` (ascending, or descending), stably: {values, indices}, where indices
/// are the positions along `axis` the values came from (int64). NaN sorts after every number
/// (before them when descending). Lazy; AxisError for a bad axis.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
SortResult<typename E::value_type> sort(const E& x, int axis = -1, bool descending = false) {
    const std::int64_t n = x.ndim() == 0 ? 1 : x.shape()[static_cast<std::size_t>(normalize_axis(axis, x.ndim(), "lt::sort", x.shape()))];
    return detail::sort_along(x, axis, n, descending, "lt::sort");
}

/// The positions that sort x along `axis` (stable: equal values keep their order), int64.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
Tensor<std::int64_t> argsort(const E& x, int axis = -1, bool descending = false) {
    const std::int64_t n = x.ndim() == 0 ? 1 : x.shape()[static_cast<std::size_t>(normalize_axis(axis, x.ndim(), "lt::argsort", x.shape()))];
    return detail::sort_along(x, axis, n, descending, "lt::argsort").indices;
}

/// The k largest (or, with largest = false, smallest) elements along `axis`, in order (largest
/// first, or smallest first), with their positions: {values, indices}. Equal values come in
/// the order of their positions; NaN counts as the largest value. ValueError unless
/// 0 <= k <= the axis' extent.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
SortResult<typename E::value_type> topk(const E& x, std::int64_t k, int axis = -1, bool largest = true) {
    return detail::sort_along(x, axis, k, largest, "lt::topk");
}

}  // namespace lazytensor
