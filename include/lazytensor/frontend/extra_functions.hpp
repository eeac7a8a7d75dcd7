// SPDX-License-Identifier: MIT
// Everyday NumPy/PyTorch functions beyond the basics, each a composite of graph primitives
// (element-wise ops, views, reductions, gathers, sorts, matrix products), so that every
// backend runs them and reverse mode differentiates them through their parts:
//   comparison   isclose, allclose
//   element-wise square, log10 (exp2 and log2 are ops: frontend/functions.hpp)
//   movement     roll, diff, meshgrid
//   matrices     diagonal, diag, trace, outer, tensordot
//   statistics   median, quantile, max_with_indices, min_with_indices
//   indexing     take, scatter, index_add, index_copy, searchsorted, bincount
// Positions given as tensors are checked as indexing.hpp checks them (detail::check_positions:
// the index is realized with its minimum and maximum, an IndexError names a bad one).
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "composites.hpp"
#include "creation.hpp"
#include "einsum.hpp"
#include "functions.hpp"
#include "indexing.hpp"
#include "movement.hpp"
#include "reductions.hpp"
#include "sorting.hpp"
#include "tensor.hpp"

namespace lazytensor {

namespace detail {

/// x moved so that `axis` (normalized) is last.
inline NodePtr axis_last(const NodePtr& x, int axis) {
    Axes perm;
    for (int d = 0; d < static_cast<int>(x->shape.size()); ++d)
        if (d != axis) perm.push_back(d);
    perm.push_back(axis);
    return graph::permute(x, perm);
}

/// The inverse of axis_last: the last axis of x moved back to position `axis`.
inline NodePtr last_to_axis(const NodePtr& x, int axis) {
    const int r = static_cast<int>(x->shape.size());
    Axes perm;
    for (int d = 0, from = 0; d < r; ++d) perm.push_back(d == axis ? r - 1 : from++);
    return graph::permute(x, perm);
}

/// x with an extent-1 axis inserted at `axis` (keepdim's shape of a reduction along it).
inline NodePtr insert_axis(const NodePtr& x, int axis) {
    Shape s = x->shape;
    s.insert(static_cast<std::size_t>(axis), 1);
    return graph::reshape(x, s);
}

/// The element at position `at` along the last axis of x, that axis dropped (a strided view).
inline NodePtr pick_last(const NodePtr& x, std::int64_t at) {
    Shape s = x->shape;
    s.pop_back();
    return graph::reshape(graph::slice(x, -1, at, at + 1, 1), s);
}

/// out = base, with out[i with i[k] = positions[j]] = values[j] for every j in positions' shape
/// (PyTorch's scatter; the caller checked ranks, extents and positions). Where several j name
/// one element, the one last along axis k wins. As graph::scatter_add, computed over
/// [base's shape..., positions' extent along k]: per output element the last j that hits it
/// (a max reduction), then that j's value (a gather): numel(base) * positions.shape[k] work.
inline NodePtr scatter_last(const NodePtr& base, int k, const NodePtr& positions, const NodePtr& values) {
    const Shape& s = base->shape;
    const std::size_t r = s.size();
    const auto ku = static_cast<std::size_t>(k);
    const std::int64_t count = positions->shape[ku];
    const Shape window(positions->shape);
    Shape domain = s;
    domain.push_back(count);
    // t cut to positions' shape, axis k moved last, padded with `fill` to base's extents on the
    // other axes and spread over the domain (graph::scatter_add's layout).
    auto spread = [&](const NodePtr& t, Scalar fill) {
        SmallVector<std::int64_t, 12> whole;
        Axes last;
        Shape before(r, 0), after(r, 0), lifted;
        for (std::size_t d = 0; d < r; ++d) {
            whole.push_back(0);
            whole.push_back(1);
            if (d != ku) {
                after[last.size()] = s[d] - window[d];
                last.push_back(static_cast<int>(d));
                lifted.push_back(s[d]);
            }
        }
        last.push_back(k);
        lifted.insert(ku, 1);
        lifted.push_back(count);
        NodePtr part = graph::permute(graph::window(t, whole, window), last);
        part = graph::reshape(graph::pad(part, before, after, fill), lifted);
        return graph::expand(part, domain);
    };
    const int j_axis = static_cast<int>(r);
    const NodePtr at = spread(graph::cast(positions, DType::Int64), Scalar::of<std::int64_t>(-1));
    const NodePtr from = spread(values, Scalar::of<std::int64_t>(0).cast(values->dtype));
    const NodePtr hit = graph::binary(BinaryOp::Eq, at, graph::iota(domain, k, base->device));
    const NodePtr j = graph::where(hit, graph::iota(domain, j_axis, base->device), Scalar::of<std::int64_t>(-1));
    const NodePtr last = graph::reduce(ReduceOp::Max, j, Axes{j_axis}, true, "scatter");  // [s..., 1], -1: no hit
    const NodePtr picked = graph::gather(from, j_axis, graph::binary(BinaryOp::Maximum, last, Scalar::of<std::int64_t>(0)));
    const NodePtr written = graph::reshape(graph::binary(BinaryOp::Ge, last, Scalar::of<std::int64_t>(0)), s);
    return graph::where(written, graph::reshape(picked, s), base);
}

/// positions (1-d, one per slice of src along k) spread to src's shape, as gather and scatter read them.
inline NodePtr spread_index(const NodePtr& positions, const Shape& src, std::size_t k) {
    Shape lifted(src.size(), 1);
    lifted[k] = positions->shape[0];
    return graph::expand(graph::reshape(positions, lifted), src);
}

/// The flat (row-major) positions in a tensor of shape `s` of the elements i with i[k] replaced by
/// `at[i]`, for every i of at's shape (at: int64 positions along axis k, checked).
inline NodePtr flat_positions_along(const Shape& s, std::size_t k, const NodePtr& at) {
    const Strides strides = contiguous_strides(s);
    Strides coefs = strides;
    coefs[k] = 0;
    const NodePtr along = graph::binary(BinaryOp::Mul, graph::cast(at, DType::Int64), Scalar::of<std::int64_t>(strides[k]));
    return graph::reshape(graph::binary(BinaryOp::Add, graph::index(at->shape, coefs, at->device), along), Shape{numel(at->shape)});
}

/// Up to this many positions along the axis, scatter and index_copy run as a reduction over them
/// per element (deterministic: the last repeated position wins); beyond, as one scatter pass
/// over them (graph::scatter: a repeated position keeps one of its values).
constexpr std::int64_t kOverwriteByReduction = 64;

/// index_add's and index_copy's checks: a 1-d integer index of src's extent along k, src of x's
/// rank and x's extents elsewhere, and positions in range. Returns the normalized axis.
inline std::size_t check_index_update(const NodePtr& x, int axis, const NodePtr& positions, const NodePtr& src, const char* op) {
    const Shape& s = x->shape;
    const auto k = static_cast<std::size_t>(normalize_axis(axis, s.size(), op, s));
    if (positions->shape.size() != 1) fail<ShapeError>(op, ": the index must be 1-dimensional, got shape ", positions->shape);
    Shape want = s;
    want[k] = positions->shape[0];
    if (src->shape != want)
        fail<ShapeError>(op, ": source shape ", src->shape, " does not fit: x has shape ", s, " and the index ",
                         positions->shape[0], " position(s) along axis ", axis, ", so the source must have shape ", want);
    check_positions(positions, s[k], op, "index", concat("axis ", axis, " of extent ", s[k], " (shape ", s, ")"));
    return k;
}

/// NumPy's and PyTorch's linear interpolation a + (b - a) t, computed from b's side for
/// t >= 0.5 (exact at t = 0 and t = 1, and monotone).
inline NodePtr lerp(const NodePtr& a, const NodePtr& b, double t) {
    const NodePtr d = graph::binary(BinaryOp::Sub, b, a);
    if (t < 0.5) return graph::binary(BinaryOp::Add, a, graph::binary(BinaryOp::Mul, d, Scalar::of<double>(t)));
    return graph::binary(BinaryOp::Sub, b, graph::binary(BinaryOp::Mul, d, Scalar::of<double>(1.0 - t)));
}

/// Whether a < b with NaN the largest value (NumPy's sort order; searchsorted's comparison).
inline NodePtr nan_last_less(const NodePtr& a, const NodePtr& b) {
    const NodePtr less = graph::binary(BinaryOp::Lt, a, b);
    if (!is_floating(a->dtype)) return less;
    const NodePtr a_number = graph::binary(BinaryOp::Eq, a, a), b_nan = graph::binary(BinaryOp::Ne, b, b);
    return graph::binary(BinaryOp::LogicalOr, less, graph::binary(BinaryOp::LogicalAnd, a_number, b_nan));
}

}  // namespace detail

// --------------------------------------------------------------------------------- comparison

/// Whether a and b are equal within a tolerance, element by element (NumPy's isclose):
/// |a - b| <= atol + rtol * |b| where b is finite, else a == b (so inf is close only to the same
/// inf), and NaN is close to nothing unless equal_nan, when two NaN are close. Not symmetric
/// (rtol scales |b|), as NumPy's. a and b broadcast; floating operands compare in their promoted
/// type (half and bfloat16 in float32), integer and bool ones in float64 (as NumPy's: integers past 2^53 that
/// round to one double count as close even with rtol = atol = 0).
/// Lazy, bool. ShapeError if the shapes do not broadcast; ValueError for a negative or NaN
/// rtol or atol.
template <class A, class B, class = std::enable_if_t<detail::is_tensor_like_v<A> && detail::is_tensor_like_v<B>>>
Tensor<bool> isclose(const A& a, const B& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) {
    namespace g = detail::graph;
    const char* op = "lt::isclose";
    if (!(rtol >= 0) || !(atol >= 0))
        detail::fail<ValueError>(op, ": rtol and atol must be non-negative numbers, got rtol = ", rtol, " and atol = ", atol);
    const detail::NodePtr x = a.build(), y = b.build();
    broadcast_shapes(x->shape, y->shape, op);
    const DType p = dtype_of<promote_t<typename A::value_type, typename B::value_type>>();
    const DType f = !is_floating(p) ? DType::Float64 : value_dtype(p);
    const detail::NodePtr xf = g::cast(x, f), yf = g::cast(y, f);
    const detail::NodePtr bound =
        g::binary(BinaryOp::Add, g::binary(BinaryOp::Mul, g::unary(UnaryOp::Abs, yf), Scalar::of<double>(rtol)), Scalar::of<double>(atol));
    detail::NodePtr close = g::binary(BinaryOp::Le, g::unary(UnaryOp::Abs, g::binary(BinaryOp::Sub, xf, yf)), bound);
    if (is_floating(p)) {  // |a - b| <= inf where b is inf: only a == b counts there
        const detail::NodePtr finite = g::binary(BinaryOp::Lt, g::unary(UnaryOp::Abs, yf), Scalar::of<double>(std::numeric_limits<double>::infinity()));
        close = g::binary(BinaryOp::LogicalAnd, close, finite);
    }
    close = g::binary(BinaryOp::LogicalOr, close, g::binary(BinaryOp::Eq, x, y));
    if (equal_nan && is_floating(p))
        close = g::binary(BinaryOp::LogicalOr, close, g::binary(BinaryOp::LogicalAnd, g::unary(UnaryOp::IsNan, xf), g::unary(UnaryOp::IsNan, yf)));
    return Tensor<bool>(close);
}

/// Whether every element of a is close to b's (isclose's rule; true for empty tensors). Realizes
/// the answer now and returns it.
template <class A, class B, class = std::enable_if_t<detail::is_tensor_like_v<A> && detail::is_tensor_like_v<B>>>
bool allclose(const A& a, const B& b, double rtol = 1e-5, double atol = 1e-8, bool equal_nan = false) {
    return isclose(a, b, rtol, atol, equal_nan).all().item();
}

// ------------------------------------------------------------------------------- element-wise

/// x * x, in x's type (integers wrap, as NumPy's). Bool does not compile. Lazy.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto square(const E& x) {
    static_assert(!std::is_same_v<typename E::value_type, bool>,
                  "lazytensor: square needs a number tensor, not bool; cast first, e.g. lt::square(lt::cast<std::int32_t>(x))");
    const auto t = detail::read_once(x);
    return Tensor<typename E::value_type>(t * t);
}

/// The base-10 logarithm, log2(x) * log10(2) (within 2 ulp of the exact value; exact at powers
/// of 10 in float32 from 1e-7 to 1e10). Integers give float32; bool does not compile. Lazy.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto log10(const E& x) {
    using R = decltype(log2(x));
    return Tensor<typename R::value_type>(log2(x) * 0.30102999566398119521);
}

// ----------------------------------------------------------------------------------- movement

/// x shifted by `shift` positions along `axis`, elements that leave at one end coming back at
/// the other (NumPy's and PyTorch's roll): out[i] = x[(i - shift) mod n]. Negative shifts go
/// the other way; any shift is taken modulo the extent. Lazy: two slices (views) joined, fused
/// into whatever reads them. AxisError for a bad axis.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto roll(const E& x, std::int64_t shift, int axis) {
    using T = typename E::value_type;
    const Tensor<T> t(x);
    const int k = normalize_axis(axis, t.ndim(), "lt::roll", t.shape());
    const std::int64_t n = t.shape()[static_cast<std::size_t>(k)];
    const std::int64_t s = n == 0 ? 0 : ((shift % n) + n) % n;
    if (s == 0) return t;
    return concat<T>({t.slice(k, n - s, n), t.slice(k, 0, n - s)}, k);
}

/// roll along several axes, shifts[i] along axes[i] (an axis may come twice: its shifts add).
/// ValueError unless there are as many shifts as axes.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto roll(const E& x, const std::vector<std::int64_t>& shifts, const Axes& axes) {
    using T = typename E::value_type;
    if (shifts.size() != axes.size())
        detail::fail<ValueError>("lt::roll: ", shifts.size(), " shift(s) but ", axes.size(), " axes ", axes, "; give one shift per axis");
    Tensor<T> t(x);
    for (std::size_t i = 0; i < axes.size(); ++i) t = roll(t, shifts[i], axes[i]);
    return t;
}

/// roll of x flattened (row-major), then given x's shape again: NumPy's roll without axes.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto roll(const E& x, std::int64_t shift) {
    using T = typename E::value_type;
    const Tensor<T> t(x);
    return roll(t.reshape({t.numel()}), shift, 0).reshape(t.shape());
}

/// The n-th discrete difference along `axis` (NumPy's diff): out[i] = x[i + 1] - x[i], n times,
/// so the extent shrinks by n (to 0 at most). Bool gives x[i + 1] != x[i] (NumPy's and
/// PyTorch's rule); integers wrap in their type. Lazy: slices (views) and a subtraction.
/// ValueError for n < 0 or a 0-d x; AxisError for a bad axis.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto diff(const E& x, int n = 1, int axis = -1) {
    using T = typename E::value_type;
    Tensor<T> t(x);
    if (n < 0) detail::fail<ValueError>("lt::diff: the order n must be >= 0, got ", n);
    if (t.ndim() == 0) detail::fail<ValueError>("lt::diff: needs at least one dimension, x is 0-d");
    const int k = normalize_axis(axis, t.ndim(), "lt::diff", t.shape());
    for (int i = 0; i < n; ++i) {
        if (t.shape()[static_cast<std::size_t>(k)] == 0) break;  // stays empty
        const Tensor<T> hi = t.slice(k, 1, std::nullopt), lo = t.slice(k, 0, -1);
        if constexpr (std::is_same_v<T, bool>) t = Tensor<bool>(hi != lo);
        else t = Tensor<T>(hi - lo);
    }
    return t;
}

/// Coordinate grids from 1-d tensors (NumPy's and PyTorch's meshgrid): with k tensors of n_0,
/// ..., n_(k-1) elements, k tensors of shape [n_0, ..., n_(k-1)] ("ij", matrix indexing) or
/// with the first two extents swapped ("xy", Cartesian, NumPy's default), output i holding
/// tensor i's values along its own axis. Each is a broadcast view (no memory). ValueError for
/// another indexing or an empty list; ShapeError for a tensor that is not 1-d (or 0-d, which
/// counts as one element, as PyTorch).
template <class T>
std::vector<Tensor<T>> meshgrid(const std::vector<Tensor<T>>& tensors, const std::string& indexing = "xy") {
    const char* op = "lt::meshgrid";
    if (indexing != "xy" && indexing != "ij")
        detail::fail<ValueError>(op, ": indexing must be \"xy\" or \"ij\", got \"", indexing, "\"");
    if (tensors.empty()) detail::fail<ValueError>(op, ": needs at least one tensor");
    const std::size_t k = tensors.size();
    Shape out;
    for (std::size_t i = 0; i < k; ++i) {
        if (tensors[i].ndim() > 1)
            detail::fail<ShapeError>(op, ": tensor ", i, " has shape ", tensors[i].shape(), "; meshgrid takes 1-d tensors");
        out.push_back(tensors[i].numel());
    }
    const bool xy = indexing == "xy" && k >= 2;
    if (xy) std::swap(out[0], out[1]);
    std::vector<Tensor<T>> grids;
    for (std::size_t i = 0; i < k; ++i) {
        const std::size_t at = xy && i < 2 ? 1 - i : i;  // the output axis tensor i runs along
        Shape lifted(k, 1);
        lifted[at] = out[at];
        grids.push_back(tensors[i].reshape(lifted).expand(out));
    }
    return grids;
}

/// meshgrid({x, y}, indexing): the braced form.
template <class T>
std::vector<Tensor<T>> meshgrid(std::initializer_list<Tensor<T>> tensors, const std::string& indexing = "xy") {
    return meshgrid<T>(std::vector<Tensor<T>>(tensors), indexing);
}

// ----------------------------------------------------------------------------------- matrices

/// The diagonal of x over axes axis1 and axis2 (PyTorch's diagonal and NumPy's): the elements
/// x[..., i, i + offset] (offset > 0 above the main diagonal, < 0 below), the two axes removed
/// and the diagonal appended as the last axis. A strided view where x's memory allows (a
/// realized row-major x, or a lazy expression, read in place), else a gather; empty where the
/// offset leaves the matrix. AxisError for bad or equal axes.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto diagonal(const E& x, std::int64_t offset = 0, int axis1 = 0, int axis2 = 1) {
    namespace g = detail::graph;
    using T = typename E::value_type;
    const char* op = "lt::diagonal";
    const detail::NodePtr node = x.build();
    const Shape& s = node->shape;
    if (s.size() < 2) detail::fail<ShapeError>(op, ": needs at least 2 dimensions, x has shape ", s);
    const int a1 = normalize_axis(axis1, s.size(), op, s), a2 = normalize_axis(axis2, s.size(), op, s);
    if (a1 == a2) detail::fail<AxisError>(op, ": axis1 and axis2 are both axis ", a1, " (shape ", s, "); give two different axes");
    Axes perm;
    Shape out;
    for (int d = 0; d < static_cast<int>(s.size()); ++d)
        if (d != a1 && d != a2) {
            perm.push_back(d);
            out.push_back(s[static_cast<std::size_t>(d)]);
        }
    perm.push_back(a1);
    perm.push_back(a2);
    const std::int64_t n = s[static_cast<std::size_t>(a1)], m = s[static_cast<std::size_t>(a2)];
    const std::int64_t row = offset < 0 ? -offset : 0, col = offset > 0 ? offset : 0;
    const std::int64_t length = std::max<std::int64_t>(0, std::min(n - row, m - col));
    out.push_back(length);
    if (numel(out) == 0) return Tensor<T>(g::constant(Scalar::of<std::int64_t>(0).cast(node->dtype), node->dtype, out, node->device));
    detail::NodePtr y = g::permute(node, perm, op);
    if (detail::einsum_gathers_diagonal(y.get())) {
        // In memory, but not as rows without gaps: the square window holding the diagonal, read at (i, i).
        y = g::slice(g::slice(y, -2, row, row + length, 1), -1, col, col + length, 1);
        Shape positions = out;
        positions.push_back(1);
        const int last = static_cast<int>(out.size());
        return Tensor<T>(g::reshape(g::gather(y, last, g::iota(positions, last - 1, node->device)), out, op));
    }
    // Rows merged: every (m + 1)-th element from (row, col) is on the diagonal.
    Shape merged(out.begin(), out.end() - 1);
    merged.push_back(n * m);
    const std::int64_t start = row * m + col;
    return Tensor<T>(g::slice(g::reshape(y, merged, op), -1, start, start + (length - 1) * (m + 1) + 1, m + 1));
}

/// NumPy's and PyTorch's diag: of a 1-d x, the square matrix with x on diagonal k (k > 0 above
/// the main one, k < 0 below; extent len(x) + |k|) and zeros elsewhere, lazy; of a 2-d x, its
/// k-th diagonal, diagonal(x, k) (a strided view where x's memory allows). ShapeError for
/// other ranks.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto diag(const E& x, std::int64_t k = 0) {
    namespace g = detail::graph;
    using T = typename E::value_type;
    const detail::NodePtr v = x.build();
    if (v->shape.size() == 2) return diagonal(Tensor<T>(v), k, 0, 1);
    if (v->shape.size() != 1) detail::fail<ShapeError>("lt::diag: needs a 1-d or 2-d tensor, got shape ", v->shape);
    const std::int64_t len = v->shape[0], size = len + (k < 0 ? -k : k);
    const Shape square{size, size};
    // x padded to the matrix's extent, broadcast along columns (k >= 0: row i holds x[i]) or rows.
    const detail::NodePtr padded = g::pad(v, Shape{0}, Shape{size - len}, Scalar::of<std::int64_t>(0).cast(v->dtype));
    const detail::NodePtr spread = g::expand(g::reshape(padded, k >= 0 ? Shape{size, 1} : Shape{1, size}), square);
    const detail::NodePtr on = g::binary(BinaryOp::Eq, g::binary(BinaryOp::Sub, g::iota(square, 1, v->device), g::iota(square, 0, v->device)),
                                         Scalar::of<std::int64_t>(k));
    return Tensor<T>(g::where(on, spread, Scalar::of<std::int64_t>(0).cast(v->dtype)));
}

/// The sum of diagonal(x, offset, axis1, axis2) along it (NumPy's trace; PyTorch's for 2-d x
/// and offset 0): integers and bool sum in int64, as sum. Lazy; 0 for an empty diagonal.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto trace(const E& x, std::int64_t offset = 0, int axis1 = 0, int axis2 = 1) {
    return diagonal(x, offset, axis1, axis2).sum(-1);
}

/// The outer product out[i, j] = a[i] * b[j] (NumPy's outer: operands of more dimensions are
/// flattened; PyTorch's takes 1-d only), in the promoted type. Lazy: one broadcast product.
template <class A, class B, class = std::enable_if_t<detail::is_tensor_like_v<A> && detail::is_tensor_like_v<B>>>
auto outer(const A& a, const B& b) {
    const detail::NodePtr x = a.build(), y = b.build();
    using R = decltype(a * b);
    const Shape col{numel(x->shape), 1}, row{1, numel(y->shape)};
    return Tensor<typename R::value_type>(detail::graph::binary(BinaryOp::Mul, detail::graph::reshape(x, col, "lt::outer"),
                                                                detail::graph::reshape(y, row, "lt::outer")));
}

/// NumPy's tensordot: the sum over axes_a of a and axes_b of b (paired in order) of their
/// product; the result has a's other axes, then b's. Through einsum, so a float or double
/// product is one GEMM (host packed GEMM, CLBlast on OpenCL). ShapeError where paired extents
/// differ; AxisError for a bad or repeated axis; ValueError for lists of different lengths.
template <class A, class B, class = std::enable_if_t<detail::is_tensor_like_v<A> && detail::is_tensor_like_v<B>>>
auto tensordot(const A& a, const B& b, const Axes& axes_a, const Axes& axes_b) {
    using R = dtype_type_t<detail::promote_all<typename A::value_type, typename B::value_type>()>;
    const char* op = "lt::tensordot";
    const detail::NodePtr x = a.build(), y = b.build();
    if (axes_a.size() != axes_b.size())
        detail::fail<ValueError>(op, ": ", axes_a.size(), " axes of a ", axes_a, " but ", axes_b.size(), " axes of b ", axes_b,
                                 "; they are summed in pairs");
    if (x->shape.size() + y->shape.size() > static_cast<std::size_t>(detail::kEinsumLetters))
        detail::fail<ShapeError>(op, ": a and b have ", x->shape.size() + y->shape.size(), " dimensions together; at most ",
                                 detail::kEinsumLetters, " are supported");
    detail::normalize_axes(axes_a, x->shape.size(), op, x->shape);  // duplicates
    detail::normalize_axes(axes_b, y->shape.size(), op, y->shape);
    std::vector<int> la(x->shape.size(), -1), lb(y->shape.size(), -1);
    int next = 0;
    for (std::size_t i = 0; i < axes_a.size(); ++i) {
        const auto p = static_cast<std::size_t>(normalize_axis(axes_a[i], x->shape.size(), op, x->shape));
        const auto q = static_cast<std::size_t>(normalize_axis(axes_b[i], y->shape.size(), op, y->shape));
        if (x->shape[p] != y->shape[q])
            detail::fail<ShapeError>(op, ": axis ", axes_a[i], " of a (shape ", x->shape, ") has extent ", x->shape[p], " but axis ",
                                     axes_b[i], " of b (shape ", y->shape, ") has extent ", y->shape[q]);
        la[p] = lb[q] = next++;
    }
    std::string out;
    for (int& l : la)
        if (l < 0) out += detail::einsum_label_name(l = next++);
    for (int& l : lb)
        if (l < 0) out += detail::einsum_label_name(l = next++);
    std::string subscripts;
    for (int l : la) subscripts += detail::einsum_label_name(l);
    subscripts += ",";
    for (int l : lb) subscripts += detail::einsum_label_name(l);
    return Tensor<R>(detail::einsum(subscripts + "->" + out, {x, y}));
}

/// tensordot over the last `axes` axes of a and the first `axes` of b (NumPy's default, 2;
/// 0 is the outer product of all elements). ValueError for a count outside either rank.
template <class A, class B, class = std::enable_if_t<detail::is_tensor_like_v<A> && detail::is_tensor_like_v<B>>>
auto tensordot(const A& a, const B& b, int axes = 2) {
    const int ra = static_cast<int>(a.ndim()), rb = static_cast<int>(b.ndim());
    if (axes < 0 || axes > ra || axes > rb)
        detail::fail<ValueError>("lt::tensordot: cannot sum over ", axes, " axes of a (shape ", a.shape(), ") and b (shape ",
                                 b.shape(), ")");
    Axes pa, pb;
    for (int i = 0; i < axes; ++i) {
        pa.push_back(ra - axes + i);
        pb.push_back(i);
    }
    return tensordot(a, b, pa, pb);
}

// --------------------------------------------------------------------------------- statistics

/// The extreme of x along `axis` and its position, as PyTorch's max(x, dim) returns them:
/// {values, indices} (auto [v, i] = lt::max_with_indices(x, 1)). indices is argmax's: the first
/// position holding the largest value, or the first NaN (whose value is NaN). values is x.max
/// along the axis, so its gradient at tied maxima is split between them (PyTorch's goes to the
/// position in indices). Lazy; AxisError for a bad axis, ValueError for an empty axis.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
SortResult<typename E::value_type> max_with_indices(const E& x, int axis, bool keepdim = false) {
    const Tensor<typename E::value_type> t(x);
    return {t.max(axis, keepdim), t.argmax(axis, keepdim)};
}

/// The smallest value of x along `axis` and its position (argmin's: the first, or the first
/// NaN), as PyTorch's min(x, dim). See max_with_indices.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
SortResult<typename E::value_type> min_with_indices(const E& x, int axis, bool keepdim = false) {
    const Tensor<typename E::value_type> t(x);
    return {t.min(axis, keepdim), t.argmin(axis, keepdim)};
}

/// The lower median of x along `axis` and its position, as PyTorch's median(x, dim): of n
/// values, the ((n - 1) / 2)-th smallest (NumPy's median averages the two middle ones for an
/// even n: that is quantile(x, 0.5)). A row holding NaN gives NaN and the position of its
/// first NaN. Lazy: a sort along the axis and a gather; the gradient goes to the median's
/// position. AxisError for a bad axis; ValueError for an empty axis.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
SortResult<typename E::value_type> median(const E& x, int axis, bool keepdim = false) {
    namespace g = detail::graph;
    using T = typename E::value_type;
    const char* op = "lt::median";
    const Tensor<T> t(x);
    if (t.ndim() == 0) {
        if (axis != 0 && axis != -1) normalize_axis(axis, 0, op, t.shape());
        return {t, zeros<std::int64_t>({}, t.device())};
    }
    const int k = normalize_axis(axis, t.ndim(), op, t.shape());
    const std::int64_t n = t.shape()[static_cast<std::size_t>(k)];
    if (n == 0) detail::fail<ValueError>(op, ": axis ", axis, " of shape ", t.shape(), " is empty; an empty row has no median");
    const detail::NodePtr rows = detail::axis_last(t.node_ptr(), k);
    const int last = static_cast<int>(t.ndim()) - 1;
    auto [values, indices] = sort(Tensor<T>(rows), -1);
    detail::NodePtr v, i;
    if constexpr (detail::is_floating_element_v<T>) {
        // NaN sorts last: a row with NaN picks its first NaN, at n - (number of NaN).
        const detail::NodePtr nans =
            g::reduce(ReduceOp::Sum, g::cast(g::unary(UnaryOp::IsNan, rows), DType::Int64), Axes{last}, true, op);
        const detail::NodePtr at = g::where(g::binary(BinaryOp::Gt, nans, Scalar::of<std::int64_t>(0)),
                                            g::binary(BinaryOp::Sub, Scalar::of<std::int64_t>(n), nans), Scalar::of<std::int64_t>((n - 1) / 2));
        Shape s = rows->shape;
        s.pop_back();
        v = g::reshape(g::gather(values.node_ptr(), last, at), s);
        i = g::reshape(g::gather(indices.node_ptr(), last, at), s);
    } else {
        v = detail::pick_last(values.node_ptr(), (n - 1) / 2);
        i = detail::pick_last(indices.node_ptr(), (n - 1) / 2);
    }
    if (keepdim) {
        v = detail::insert_axis(v, k);
        i = detail::insert_axis(i, k);
    }
    return {Tensor<T>(v), Tensor<std::int64_t>(i)};
}

/// The lower median of all of x's elements (PyTorch's median(x)), 0-d; NaN if x holds one.
/// ValueError for an empty x.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
Tensor<typename E::value_type> median(const E& x) {
    const Tensor<typename E::value_type> t(x);
    return median(t.reshape({t.numel()}), 0).values;
}

namespace detail {

/// quantile along the normalized axis k of t (or of all elements, flattened, where k < 0):
/// the result has qs' extent first when `vector`, then t's shape without k (or with extent 1
/// there, keepdim).
template <class T>
Tensor<mean_t<T>> quantile_of(const Tensor<T>& t, const std::vector<double>& qs, bool vector, int k, bool keepdim,
                              const std::string& interpolation) {
    namespace g = graph;
    const char* op = "lt::quantile";
    using R = mean_t<T>;
    if (interpolation != "linear" && interpolation != "lower" && interpolation != "higher" && interpolation != "nearest" &&
        interpolation != "midpoint")
        fail<ValueError>(op, ": interpolation must be \"linear\", \"lower\", \"higher\", \"nearest\" or \"midpoint\", got \"",
                         interpolation, "\"");
    for (double q : qs)
        if (!(q >= 0 && q <= 1)) fail<ValueError>(op, ": q must lie in [0, 1], got ", q);
    const bool flat = k < 0;
    const Tensor<T> src = flat ? t.reshape({t.numel()}) : t;
    const int axis = flat ? 0 : k;
    const std::int64_t n = src.shape()[static_cast<std::size_t>(axis)];
    if (n == 0) fail<ValueError>(op, ": the ", flat ? "tensor" : "axis", " is empty (shape ", t.shape(), "); it has no quantiles");
    // Half and bfloat16 round once at the end; integers give float32 (as mean).
    const DType c = value_dtype(dtype_of<R>());
    const NodePtr rows = g::cast(axis_last(src.node_ptr(), axis), c);
    const int last = static_cast<int>(rows->shape.size()) - 1;
    const NodePtr sorted = g::gather(rows, last, g::sort_positions(rows, n, false, op));
    std::optional<NodePtr> has_nan;
    if constexpr (is_floating_element_v<T>)
        has_nan = g::any_all(false, g::unary(UnaryOp::IsNan, rows), Axes{last}, false);
    std::vector<NodePtr> parts;
    for (double q : qs) {
        const double index = q * static_cast<double>(n - 1);
        const std::int64_t below = static_cast<std::int64_t>(std::floor(index)), above = std::min(below + 1, n - 1);
        const double fraction = index - static_cast<double>(below);
        NodePtr v;
        if (interpolation == "lower" || fraction == 0) v = pick_last(sorted, below);
        else if (interpolation == "higher") v = pick_last(sorted, above);
        else if (interpolation == "nearest") v = pick_last(sorted, std::nearbyint(index) == static_cast<double>(below) ? below : above);
        else v = lerp(pick_last(sorted, below), pick_last(sorted, above), interpolation == "midpoint" ? 0.5 : fraction);
        if (has_nan) v = g::where(*has_nan, Scalar::of<double>(std::numeric_limits<double>::quiet_NaN()), v);
        if (keepdim) v = flat ? g::reshape(v, Shape(t.shape().size(), 1)) : insert_axis(v, k);
        Shape lifted = v->shape;
        lifted.insert(0, 1);
        parts.push_back(vector ? g::reshape(v, lifted) : v);
    }
    if (vector) {
        std::vector<Tensor<R>> typed;
        for (const NodePtr& p : parts) typed.push_back(Tensor<R>(g::cast(p, dtype_of<R>())));
        return concat<R>(typed, 0);
    }
    const NodePtr out = parts[0];
    return Tensor<R>(g::cast(out, dtype_of<R>()));
}

}  // namespace detail

/// NumPy's quantile (and PyTorch's) of x along `axis` at q in [0, 1], by default "linear": of
/// n sorted values v, at position q (n - 1) between v[floor] and v[ceil], interpolated; also
/// "lower", "higher", "nearest" (the nearer one, ties to the even position) and "midpoint"
/// (their mean). A row holding NaN gives NaN. Integers give float32 (as mean); half and
/// bfloat16 compute in float32. Lazy: a sort along the axis and slices of it; differentiable through the
/// sorted values. keepdim keeps the axis with extent 1. ValueError for q outside [0, 1], an
/// unknown interpolation or an empty axis; AxisError for a bad axis.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto quantile(const E& x, double q, int axis, bool keepdim = false, const std::string& interpolation = "linear") {
    using T = typename E::value_type;
    const Tensor<T> t(x);
    const int k = normalize_axis(axis, t.ndim(), "lt::quantile", t.shape());
    return detail::quantile_of(t, {q}, false, k, keepdim, interpolation);
}

/// quantile at several q at once: the result has q's extent as its first axis, then the rest
/// as for one q (NumPy's and PyTorch's layout). ValueError for an empty q.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto quantile(const E& x, const std::vector<double>& q, int axis, bool keepdim = false, const std::string& interpolation = "linear") {
    using T = typename E::value_type;
    const Tensor<T> t(x);
    const int k = normalize_axis(axis, t.ndim(), "lt::quantile", t.shape());
    if (q.empty()) detail::fail<ValueError>("lt::quantile: q is empty; give at least one q");
    return detail::quantile_of(t, q, true, k, keepdim, interpolation);
}

/// quantile of all of x's elements (NumPy's quantile without an axis): 0-d (or, keepdim, every
/// extent 1), or with q's extent first for several q.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto quantile(const E& x, double q, const std::string& interpolation = "linear", bool keepdim = false) {
    using T = typename E::value_type;
    return detail::quantile_of(Tensor<T>(x), {q}, false, -1, keepdim, interpolation);
}
/// quantile over all of x's elements at several q (q's extent first).
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto quantile(const E& x, const std::vector<double>& q, const std::string& interpolation = "linear", bool keepdim = false) {
    using T = typename E::value_type;
    if (q.empty()) detail::fail<ValueError>("lt::quantile: q is empty; give at least one q");
    return detail::quantile_of(Tensor<T>(x), q, true, -1, keepdim, interpolation);
}

// ----------------------------------------------------------------------------------- indexing

/// x's elements at flat (row-major) positions `index`, in index's shape (NumPy's and PyTorch's
/// take). Positions count from 0; negative ones are errors here (as gather's), where NumPy and
/// PyTorch count them from the end. Realizes index now to check it (IndexError naming the bad
/// position and x's element count); the take stays lazy and differentiable in x.
template <class E, class I, class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_tensor_like_v<I>>>
auto take(const E& x, const I& index) {
    using T = typename E::value_type;
    const detail::NodePtr data = x.build(), positions = index.build();
    const std::int64_t n = numel(data->shape);
    detail::check_positions(positions, n, "lt::take", "index", detail::concat("a tensor of ", n, " elements (shape ", data->shape, ")"));
    const detail::NodePtr flat = detail::graph::reshape(data, Shape{n}, "lt::take");
    const detail::NodePtr at = detail::graph::reshape(positions, Shape{numel(positions->shape)}, "lt::take");
    return Tensor<T>(detail::graph::reshape(detail::graph::gather(flat, 0, at), positions->shape, "lt::take"));
}

/// x with src's elements written at the positions index names along `axis`, out of place
/// (PyTorch's scatter): out[i with i[axis] = index[j]] = src[j] for every j in index's shape.
/// index has x's rank, at most src's extent on every axis and x's on every other axis. src is
/// converted to x's type. Up to 64 positions along `axis`: a reduction over them per output
/// element (numel(x) * index.shape[axis] work), where of several j naming one element the last
/// along `axis` wins; beyond, one scatter pass over index (graph::scatter), where such an
/// element keeps one of their values (the host: the last), as PyTorch leaves it undefined.
/// Realizes index now to check it (IndexError); ShapeError for ranks or extents that do not
/// fit. Differentiable in x and src.
template <class E, class I, class S,
          class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_tensor_like_v<I> && detail::is_tensor_like_v<S>>>
auto scatter(const E& x, int axis, const I& index, const S& src) {
    using T = typename E::value_type;
    const char* op = "lt::scatter";
    const detail::NodePtr base = x.build(), positions = index.build(), values = detail::graph::cast(src.build(), dtype_of<T>());
    const Shape& s = base->shape;
    const auto r = s.size();
    const auto k = static_cast<std::size_t>(normalize_axis(axis, r, op, s));
    if (positions->shape.size() != r || values->shape.size() != r)
        detail::fail<ShapeError>(op, ": x (shape ", s, "), index (shape ", positions->shape, ") and src (shape ", values->shape,
                                 ") must have the same number of dimensions");
    for (std::size_t d = 0; d < r; ++d)
        if (positions->shape[d] > values->shape[d] || (d != k && positions->shape[d] > s[d]))
            detail::fail<ShapeError>(op, ": index shape ", positions->shape, " must not exceed src shape ", values->shape,
                                     ", nor x shape ", s, " outside axis ", axis);
    detail::check_positions(positions, s[k], op, "index", detail::concat("axis ", axis, " of extent ", s[k], " (shape ", s, ")"));
    if (numel(positions->shape) == 0) return Tensor<T>(base);
    if (positions->shape[k] <= detail::kOverwriteByReduction)
        return Tensor<T>(detail::scatter_last(base, static_cast<int>(k), positions, values));
    detail::SmallVector<std::int64_t, 12> whole;  // src cut to index's shape
    for (std::size_t d = 0; d < r; ++d) {
        whole.push_back(0);
        whole.push_back(1);
    }
    const detail::NodePtr cut = detail::graph::window(values, whole, positions->shape);
    return Tensor<T>(detail::graph::scatter(base, detail::flat_positions_along(s, k, positions),
                                            detail::graph::reshape(cut, Shape{numel(positions->shape)}), false));
}

/// scatter of one value: out[i with i[axis] = index[j]] = value. ValueError if value does not
/// fit x's type.
template <class E, class I, class V,
          class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_tensor_like_v<I> && detail::is_scalar_v<V>>, class = void>
auto scatter(const E& x, int axis, const I& index, V value) {
    using T = typename E::value_type;
    detail::graph::check_scalar_fits(detail::make_scalar(value), dtype_of<T>(), "lt::scatter");
    return scatter(x, axis, index, full<T>(index.shape(), static_cast<T>(value), x.device()));
}

/// x with alpha * src's slices added at the positions `index` (1-d) names along `axis`
/// (PyTorch's index_add): out[..., index[j], ...] += alpha * src[..., j, ...]; repeated
/// positions add up. src has x's shape with index's extent along `axis`, and is converted to
/// x's type. Realizes index now to check it (IndexError); ShapeError for a src or index that
/// does not fit; ValueError for a fractional alpha with an integer x. One scatter-add pass over
/// src (graph::scatter; on OpenCL with atomics, so float sums at a repeated position may differ
/// in the last bits between runs, as PyTorch's do on GPUs). Differentiable in x and src.
template <class E, class I, class S,
          class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_tensor_like_v<I> && detail::is_tensor_like_v<S>>>
auto index_add(const E& x, int axis, const I& index, const S& src, double alpha = 1.0) {
    using T = typename E::value_type;
    static_assert(!std::is_same_v<T, bool>, "lazytensor: index_add adds numbers, not bool; for bool use lt::index_copy or cast first");
    const char* op = "lt::index_add";
    const detail::NodePtr base = x.build(), positions = index.build();
    detail::NodePtr values = src.build();
    if (!is_floating(dtype_of<T>()) && alpha != std::trunc(alpha))
        detail::fail<ValueError>(op, ": alpha ", alpha, " is not a whole number, but x is ", dtype_of<T>());
    const std::size_t k = detail::check_index_update(base, axis, positions, values, op);
    if (numel(positions->shape) == 0) return Tensor<T>(base);
    if (alpha != 1.0) values = detail::graph::binary(BinaryOp::Mul, detail::graph::cast(values, dtype_of<T>()), Scalar::of<double>(alpha));
    const detail::NodePtr at = detail::flat_positions_along(base->shape, k, detail::spread_index(positions, values->shape, k));
    return Tensor<T>(detail::graph::scatter(base, at, detail::graph::reshape(detail::graph::cast(values, dtype_of<T>()), at->shape), true));
}

/// x with src's slices copied to the positions `index` (1-d) names along `axis` (PyTorch's
/// index_copy): out[..., index[j], ...] = src[..., j, ...]. Where a position repeats, the last
/// one in index wins for up to 64 positions (a reduction per element); beyond, one scatter pass
/// keeps one of them (the host: the last), as PyTorch leaves it undefined. Shapes and checks as
/// index_add's.
template <class E, class I, class S,
          class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_tensor_like_v<I> && detail::is_tensor_like_v<S>>>
auto index_copy(const E& x, int axis, const I& index, const S& src) {
    using T = typename E::value_type;
    const detail::NodePtr base = x.build(), positions = index.build(), values = detail::graph::cast(src.build(), dtype_of<T>());
    const std::size_t k = detail::check_index_update(base, axis, positions, values, "lt::index_copy");
    if (numel(positions->shape) == 0) return Tensor<T>(base);
    const detail::NodePtr spread = detail::spread_index(positions, values->shape, k);
    if (positions->shape[0] <= detail::kOverwriteByReduction)
        return Tensor<T>(detail::scatter_last(base, static_cast<int>(k), spread, values));
    const detail::NodePtr at = detail::flat_positions_along(base->shape, k, spread);
    return Tensor<T>(detail::graph::scatter(base, at, detail::graph::reshape(values, at->shape), false));
}

/// Where `values` would go in `sorted` to keep it sorted (NumPy's and PyTorch's searchsorted):
/// for each value, the number of elements of its row of sorted that are less than it (right:
/// less than or equal to it), int64 in values' shape. sorted is 1-d, or [..., n] with values
/// [..., m] of the same leading extents (a row of sorted per row of values). NaN counts as
/// larger than every number (NumPy's sort order). sorted must be ascending along its last axis
/// (not checked: otherwise the positions are unspecified). Lazy: a binary search of
/// log2(n) + 1 gathers, element-wise over values (no sort, no reduction). ShapeError for
/// shapes that do not fit.
template <class S, class V, class = std::enable_if_t<detail::is_tensor_like_v<S> && detail::is_tensor_like_v<V>>>
Tensor<std::int64_t> searchsorted(const S& sorted, const V& values, bool right = false) {
    namespace g = detail::graph;
    const char* op = "lt::searchsorted";
    const DType p = dtype_of<promote_t<typename S::value_type, typename V::value_type>>();
    const detail::NodePtr a = g::cast(sorted.build(), p), v0 = g::cast(values.build(), p);
    const Shape& sa = a->shape;
    if (sa.empty()) detail::fail<ShapeError>(op, ": sorted must have at least one dimension, got shape []");
    const std::int64_t n = sa.back();
    detail::NodePtr v = v0;
    int last = 0;
    if (sa.size() == 1) {
        v = g::reshape(v0, Shape{numel(v0->shape)}, op);
    } else {
        const bool fits = v0->shape.size() == sa.size() && std::equal(sa.begin(), sa.end() - 1, v0->shape.begin());
        if (!fits)
            detail::fail<ShapeError>(op, ": sorted has shape ", sa, " and values shape ", v0->shape,
                                     "; for a batch of sorted rows, values must have the same leading extents");
        last = static_cast<int>(sa.size()) - 1;
    }
    detail::NodePtr pos = g::constant(Scalar::of<std::int64_t>(0), DType::Int64, v->shape, v->device);
    if (n > 0 && numel(v->shape) > 0) {
        std::int64_t step = 1;
        while (step <= n / 2) step *= 2;
        for (; step > 0; step /= 2) {
            // Take step more where sorted[pos + step - 1] is still before the value.
            const detail::NodePtr next = g::binary(BinaryOp::Add, pos, Scalar::of<std::int64_t>(step));
            const detail::NodePtr probe = g::gather(a, last, g::binary(BinaryOp::Sub, next, Scalar::of<std::int64_t>(1)));
            const detail::NodePtr before = right ? g::unary(UnaryOp::LogicalNot, detail::nan_last_less(v, probe))
                                                 : detail::nan_last_less(probe, v);
            const detail::NodePtr inside = g::binary(BinaryOp::Le, next, Scalar::of<std::int64_t>(n));
            pos = g::where(g::binary(BinaryOp::LogicalAnd, inside, before), next, pos);
        }
    }
    return Tensor<std::int64_t>(g::reshape(pos, v0->shape, op));
}

/// How often each value 0, 1, ..., occurs in x, a 1-d tensor of non-negative integers (NumPy's
/// and PyTorch's bincount): int64 of length max(max(x) + 1, minlength). The length depends on
/// the data, so bincount realizes x's maximum now to decide it (and checks for negative
/// values: ValueError naming one); the counts stay lazy, one scatter-add pass over x. ShapeError
/// unless x is 1-d; ValueError for a negative minlength. Floating or bool x does not compile.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
Tensor<std::int64_t> bincount(const E& x, std::int64_t minlength = 0);

namespace detail {

/// bincount's checks and length: x 1-d, non-negative; max(max(x) + 1, minlength).
inline std::int64_t bincount_length(const NodePtr& x, std::int64_t minlength) {
    const char* op = "lt::bincount";
    if (x->shape.size() != 1) fail<ShapeError>(op, ": x must be 1-dimensional, got shape ", x->shape);
    if (minlength < 0) fail<ValueError>(op, ": minlength must be >= 0, got ", minlength);
    if (numel(x->shape) == 0) return minlength;
    const NodePtr wide = graph::cast(x, DType::Int64);
    const NodePtr lo = graph::reduce(ReduceOp::Min, wide, std::nullopt, false, op);
    const NodePtr hi = graph::reduce(ReduceOp::Max, wide, std::nullopt, false, op);
    realize_nodes({x.get(), lo.get(), hi.get()});
    const std::int64_t low = read_elements<std::int64_t>(*lo)[0], high = read_elements<std::int64_t>(*hi)[0];
    if (low < 0) fail<ValueError>(op, ": x holds the negative value ", low, "; bincount counts non-negative integers");
    return std::max(high + 1, minlength);
}

}  // namespace detail

template <class E, class>
Tensor<std::int64_t> bincount(const E& x, std::int64_t minlength) {
    static_assert(detail::is_integer_label_v<typename E::value_type>,
                  "lazytensor: bincount counts integers (uint8, int32 or int64), not floating or bool values; cast first");
    const detail::NodePtr v = x.build();
    const std::int64_t length = detail::bincount_length(v, minlength);
    const detail::NodePtr base = detail::graph::constant(Scalar::of<std::int64_t>(0), DType::Int64, Shape{length}, v->device);
    if (numel(v->shape) == 0) return Tensor<std::int64_t>(base);
    const detail::NodePtr ones = detail::graph::constant(Scalar::of<std::int64_t>(1), DType::Int64, v->shape, v->device);
    return Tensor<std::int64_t>(detail::graph::scatter(base, v, ones, true));
}

/// The sums of `weights` by the value of x (NumPy's and PyTorch's bincount with weights):
/// out[c] is the sum of weights[i] where x[i] = c, in weights' type, of the same length as
/// bincount(x, minlength). Realizes x's maximum now (see bincount); ShapeError unless weights
/// has x's shape. Differentiable in weights.
template <class E, class W, class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_tensor_like_v<W>>>
Tensor<typename W::value_type> bincount(const E& x, const W& weights, std::int64_t minlength = 0) {
    using T = typename W::value_type;
    static_assert(!std::is_same_v<T, bool>, "lazytensor: bincount's weights are numbers, not bool; cast them first");
    static_assert(detail::is_integer_label_v<typename E::value_type>,
                  "lazytensor: bincount counts integers (uint8, int32 or int64), not floating or bool values; cast first");
    const detail::NodePtr v = x.build(), w = weights.build();
    if (w->shape != v->shape)
        detail::fail<ShapeError>("lt::bincount: weights have shape ", w->shape, " but x has shape ", v->shape, "; give one weight per value");
    const std::int64_t length = detail::bincount_length(v, minlength);
    const detail::NodePtr base = detail::graph::constant(Scalar::of<std::int64_t>(0).cast(w->dtype), w->dtype, Shape{length}, v->device);
    if (numel(v->shape) == 0) return Tensor<T>(base);
    return Tensor<T>(detail::graph::scatter(base, v, w, true));
}

}  // namespace lazytensor
