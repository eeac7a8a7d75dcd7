// SPDX-License-Identifier: MIT
// Movement ops: slices, flips, pads, squeezes, tiles, concatenation, splits. Slices, flips,
// splits and movedim are strided views (zero-copy, read in place by every kernel); squeeze,
// unsqueeze, flatten, tile and repeat_interleave are reshapes and broadcasts; pad and concat
// are fused into the kernel that reads them, which reads each part only where it lies.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <utility>
#include <vector>

#include "tensor.hpp"

namespace lazytensor {

template <class T, class D>
Tensor<T> TensorBase<T, D>::slice(int axis, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                                  std::int64_t step) const {
    return Tensor<T>(detail::graph::slice(self().build(), axis, start, stop, step));
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::select(int axis, std::int64_t index) const {
    const Shape& shape = self().shape();
    const auto k = static_cast<std::size_t>(detail::normalize_axis(axis, shape.size(), "select", shape));
    if (index < -shape[k] || index >= shape[k])
        detail::fail<IndexError>("select: index ", index, " is out of range for axis ", axis, " of extent ", shape[k],
                                 " (shape ", shape, ")");
    const std::int64_t i = index < 0 ? index + shape[k] : index;
    Shape out;
    for (std::size_t j = 0; j < shape.size(); ++j)
        if (j != k) out.push_back(shape[j]);
    return Tensor<T>(detail::graph::reshape(detail::graph::slice(self().build(), axis, i, i + 1, 1), out, "select"));
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::flip(const Axes& axes) const {
    return Tensor<T>(detail::graph::flip(self().build(), axes));
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::unfold(int axis, std::int64_t size, std::int64_t step) const {
    return Tensor<T>(detail::graph::unfold(self().build(), axis, size, step, 1, "unfold"));
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::pad(const std::vector<std::pair<std::int64_t, std::int64_t>>& widths, T value) const {
    Shape before, after;
    for (const auto& w : widths) {
        before.push_back(w.first);
        after.push_back(w.second);
    }
    return Tensor<T>(detail::graph::pad(self().build(), before, after, Scalar::of<T>(value)));
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::squeeze() const {
    Shape out;
    for (auto e : self().shape())
        if (e != 1) out.push_back(e);
    return reshape(out);
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::squeeze(const Axes& axes) const {
    const Shape& shape = self().shape();
    const Axes norm = detail::normalize_axes(axes, shape.size(), "squeeze", shape);
    Shape out;
    for (std::size_t j = 0, a = 0; j < shape.size(); ++j) {
        if (a < norm.size() && norm[a] == static_cast<int>(j)) {
            ++a;
            if (shape[j] != 1)
                detail::fail<ShapeError>("squeeze: axis ", j, " has extent ", shape[j], ", not 1 (shape ", shape, ")");
            continue;
        }
        out.push_back(shape[j]);
    }
    return reshape(out);
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::unsqueeze(int axis) const {
    Shape out = self().shape();
    const auto k = static_cast<std::size_t>(detail::normalize_axis(axis, out.size() + 1, "unsqueeze", out));
    out.insert(k, 1);
    return reshape(out);
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::flatten(int start, int end) const {
    const Shape& shape = self().shape();
    if (shape.empty()) return reshape(Shape{1});
    const auto a = static_cast<std::size_t>(detail::normalize_axis(start, shape.size(), "flatten", shape));
    const auto b = static_cast<std::size_t>(detail::normalize_axis(end, shape.size(), "flatten", shape));
    if (a > b)
        detail::fail<AxisError>("flatten: start axis ", start, " comes after end axis ", end, " (shape ", shape, ")");
    Shape out;
    std::int64_t merged = 1;
    for (std::size_t j = 0; j < shape.size(); ++j) {
        if (j < a || j > b) out.push_back(shape[j]);
        else merged *= shape[j];
        if (j == b) out.push_back(merged);
    }
    return reshape(out);
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::tile(const Shape& reps) const {
    Shape shape = self().shape();
    for (auto r : reps)
        if (r < 0) detail::fail<ValueError>("tile: repetitions must be >= 0, got ", reps);
    Shape r = reps;
    while (shape.size() < r.size()) shape.insert(0, 1);
    while (r.size() < shape.size()) r.insert(0, 1);
    // [s0, s1] -> [1, s0, 1, s1] -> expand [r0, s0, r1, s1] -> [r0 * s0, r1 * s1]
    Shape spread, expanded, out;
    for (std::size_t k = 0; k < shape.size(); ++k) {
        spread.push_back(1);
        spread.push_back(shape[k]);
        expanded.push_back(r[k]);
        expanded.push_back(shape[k]);
        out.push_back(r[k] * shape[k]);
    }
    detail::NodePtr x = detail::graph::reshape(self().build(), spread, "tile");
    return Tensor<T>(detail::graph::reshape(detail::graph::expand(x, expanded, "tile"), out, "tile"));
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::repeat_interleave(std::int64_t repeats, int axis) const {
    const Shape& shape = self().shape();
    if (repeats < 0) detail::fail<ValueError>("repeat_interleave: repeats must be >= 0, got ", repeats);
    const auto k = static_cast<std::size_t>(detail::normalize_axis(axis, shape.size(), "repeat_interleave", shape));
    Shape spread = shape, expanded = shape, out = shape;
    spread.insert(k + 1, 1);
    expanded.insert(k + 1, repeats);
    out[k] *= repeats;
    detail::NodePtr x = detail::graph::reshape(self().build(), spread, "repeat_interleave");
    return Tensor<T>(detail::graph::reshape(detail::graph::expand(x, expanded, "repeat_interleave"), out, "repeat_interleave"));
}

/// The tensors joined along `axis` (they must agree on every other extent, on dtype and device).
/// Lazy; fused into the kernel that reads it, each output element reading only the part it lies
/// in. ValueError for an empty list, ShapeError or DeviceError for parts that do not agree.
template <class T>
Tensor<T> concat(const std::vector<Tensor<T>>& parts, int axis = 0) {
    const char* op = "concat";
    if (parts.empty()) detail::fail<ValueError>(op, ": needs at least one tensor");
    const Shape& first = parts[0].shape();
    const auto k = static_cast<std::size_t>(detail::normalize_axis(axis, first.size(), op, first));
    Shape out = first;
    out[k] = 0;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        const Shape& s = parts[i].shape();
        bool fits = s.size() == first.size();
        for (std::size_t j = 0; fits && j < s.size(); ++j) fits = j == k || s[j] == first[j];
        if (!fits)
            detail::fail<ShapeError>(op, ": tensor ", i, " has shape ", s, " but tensor 0 has shape ", first,
                                     "; they may differ only along axis ", axis);
        if (parts[i].device() != parts[0].device())
            detail::fail<DeviceError>(op, ": tensor ", i, " is on ", parts[i].device(), " but tensor 0 is on ",
                                      parts[0].device());
        out[k] += s[k];
    }
    if (parts.size() == 1) return parts[0];
    // Each part padded to the full extent, chosen by where the position lies along the axis.
    const detail::NodePtr position = detail::graph::iota(out, static_cast<int>(k), parts[0].device());
    detail::NodePtr result;
    std::int64_t end = out[k];
    for (std::size_t i = parts.size(); i-- > 0;) {
        const std::int64_t extent = parts[i].shape()[k];
        const std::int64_t begin = end - extent;
        Shape before(first.size(), 0), after(first.size(), 0);
        before[k] = begin;
        after[k] = out[k] - end;
        detail::NodePtr padded = detail::graph::pad(parts[i].build(), before, after, Scalar::of<T>(T(0)));
        if (!result) {
            result = padded;
        } else if (extent > 0) {
            const detail::NodePtr inside =
                detail::graph::binary(BinaryOp::Lt, position, Scalar::of<std::int64_t>(end));
            result = detail::graph::where(inside, padded, result);
        }
        end = begin;
    }
    return Tensor<T>(result);
}

/// concat({a, b}, axis): the braced form.
template <class T>
Tensor<T> concat(std::initializer_list<Tensor<T>> parts, int axis = 0) {
    return lazytensor::concat<T>(std::vector<Tensor<T>>(parts), axis);
}

/// The tensors (all of one shape) stacked along a new axis at position `axis` of the result.
/// Lazy, as concat. ValueError for an empty list, ShapeError for differing shapes.
template <class T>
Tensor<T> stack(const std::vector<Tensor<T>>& parts, int axis = 0) {
    if (parts.empty()) detail::fail<ValueError>("stack: needs at least one tensor");
    std::vector<Tensor<T>> spread;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (parts[i].shape() != parts[0].shape())
            detail::fail<ShapeError>("stack: tensor ", i, " has shape ", parts[i].shape(), " but tensor 0 has shape ",
                                     parts[0].shape(), "; stacked tensors must have one shape");
        spread.push_back(parts[i].unsqueeze(axis));
    }
    return lazytensor::concat<T>(spread, axis);
}

/// stack({a, b}, axis): the braced form.
template <class T>
Tensor<T> stack(std::initializer_list<Tensor<T>> parts, int axis = 0) {
    return lazytensor::stack<T>(std::vector<Tensor<T>>(parts), axis);
}

///@{
/// Free forms of the members: lt::slice(x, ...) is x.slice(...), and likewise flip, pad,
/// squeeze, unsqueeze, flatten, tile and repeat_interleave.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto slice(const E& x, int axis, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
           std::int64_t step = 1) {
    return x.slice(axis, start, stop, step);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto flip(const E& x, const Axes& axes) {
    return x.flip(axes);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto unfold(const E& x, int axis, std::int64_t size, std::int64_t step) {
    return x.unfold(axis, size, step);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto pad(const E& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& widths,
         typename E::value_type value = typename E::value_type(0)) {
    return x.pad(widths, value);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto squeeze(const E& x) {
    return x.squeeze();
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto unsqueeze(const E& x, int axis) {
    return x.unsqueeze(axis);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto flatten(const E& x, int start = 0, int end = -1) {
    return x.flatten(start, end);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto tile(const E& x, const Shape& reps) {
    return x.tile(reps);
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto repeat_interleave(const E& x, std::int64_t repeats, int axis) {
    return x.repeat_interleave(repeats, axis);
}
///@}


/// x cut along `axis` into pieces of `size` elements (the last one shorter if the extent is
/// not a multiple), as zero-copy views: PyTorch's split. An extent of 0 gives one empty piece.
/// ValueError for a size below 1.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto split(const E& x, std::int64_t size, int axis = 0) {
    using T = typename E::value_type;
    const Tensor<T> t(x);
    const auto k = detail::normalize_axis(axis, t.shape().size(), "lt::split", t.shape());
    if (size < 1) detail::fail<ValueError>("lt::split: the piece size must be at least 1, got ", size);
    const std::int64_t n = t.shape()[static_cast<std::size_t>(k)];
    std::vector<Tensor<T>> parts;
    if (n == 0) parts.push_back(t);
    for (std::int64_t start = 0; start < n; start += size) parts.push_back(t.slice(k, start, std::min(n, start + size)));
    return parts;
}

/// x cut along `axis` into pieces of the given sizes, as zero-copy views. ShapeError unless the
/// sizes (each at least 0) add up to the extent.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto split(const E& x, const std::vector<std::int64_t>& sizes, int axis = 0) {
    using T = typename E::value_type;
    const Tensor<T> t(x);
    const auto k = detail::normalize_axis(axis, t.shape().size(), "lt::split", t.shape());
    const std::int64_t n = t.shape()[static_cast<std::size_t>(k)];
    std::int64_t total = 0;
    for (std::int64_t s : sizes) {
        if (s < 0) detail::fail<ShapeError>("lt::split: negative piece size ", s);
        if (__builtin_add_overflow(total, s, &total)) total = std::numeric_limits<std::int64_t>::max();
    }
    if (total != n)
        detail::fail<ShapeError>("lt::split: the piece sizes add up to ", total, " but axis ", axis, " of shape ",
                                 t.shape(), " has ", n, " elements");
    std::vector<Tensor<T>> parts;
    std::int64_t start = 0;
    for (std::int64_t s : sizes) {
        parts.push_back(t.slice(k, start, start + s));
        start += s;
    }
    return parts;
}

/// x cut along `axis` into at most `chunks` pieces of ceil(extent / chunks) elements (fewer
/// pieces when they run out first, as PyTorch's chunk). ValueError for chunks below 1.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto chunk(const E& x, std::int64_t chunks, int axis = 0) {
    using T = typename E::value_type;
    const Tensor<T> t(x);
    const auto k = detail::normalize_axis(axis, t.shape().size(), "lt::chunk", t.shape());
    if (chunks < 1) detail::fail<ValueError>("lt::chunk: the number of chunks must be at least 1, got ", chunks);
    const std::int64_t n = t.shape()[static_cast<std::size_t>(k)];
    return split(t, std::max<std::int64_t>(1, n / chunks + (n % chunks != 0)), k);
}

/// The slices of x along `axis`, each without that axis (zero-copy views): PyTorch's unbind.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto unbind(const E& x, int axis = 0) {
    using T = typename E::value_type;
    const Tensor<T> t(x);
    const auto k = detail::normalize_axis(axis, t.shape().size(), "lt::unbind", t.shape());
    std::vector<Tensor<T>> parts;
    for (std::int64_t i = 0; i < t.shape()[static_cast<std::size_t>(k)]; ++i) parts.push_back(t.select(k, i));
    return parts;
}

///@{
/// x with its axes `from` moved to positions `to` (the other axes keep their order): a
/// zero-copy permute, NumPy's moveaxis. AxisError for an axis out of range or given twice;
/// ValueError for lists of different lengths.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto movedim(const E& x, const Axes& from, const Axes& to) {
    using T = typename E::value_type;
    const Tensor<T> t(x);
    const std::size_t n = t.shape().size();
    if (from.size() != to.size())
        detail::fail<ValueError>("lt::movedim: ", from.size(), " source axes ", from, " but ", to.size(),
                                 " destinations ", to);
    std::vector<int> src, dst;
    for (std::size_t i = 0; i < from.size(); ++i) {
        src.push_back(detail::normalize_axis(from[i], n, "lt::movedim", t.shape()));
        dst.push_back(detail::normalize_axis(to[i], n, "lt::movedim", t.shape()));
    }
    detail::normalize_axes(Axes(src), n, "lt::movedim", t.shape());  // duplicates
    detail::normalize_axes(Axes(dst), n, "lt::movedim", t.shape());
    std::vector<int> order(n, -1);
    std::vector<bool> moved(n, false);
    for (std::size_t i = 0; i < src.size(); ++i) {
        order[static_cast<std::size_t>(dst[i])] = src[i];
        moved[static_cast<std::size_t>(src[i])] = true;
    }
    int next = 0;
    for (int& o : order) {
        if (o >= 0) continue;
        while (moved[static_cast<std::size_t>(next)]) ++next;
        o = next++;
    }
    return t.permute(Axes(order));
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto movedim(const E& x, int from, int to) {
    return movedim(x, Axes{from}, Axes{to});
}
///@}

/// x broadcast to `shape` (NumPy's broadcast_to; PyTorch's name for expand): a zero-copy view.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto broadcast_to(const E& x, const Shape& shape) {
    return x.expand(shape);
}

}  // namespace lazytensor
