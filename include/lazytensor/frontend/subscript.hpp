// SPDX-License-Identifier: MIT
// Subscripts with NumPy's rules in PyTorch's C++ spelling: x.index({...}) and x(...),
// x.index_put({...}, value), and the selections whose shape depends on the data: nonzero,
// where(cond), masked_select, unique.
//
// Basic indices (integers, slices, new axes, the ellipsis) are views. Index tensors and masks
// are one gather of the view they leave: the indexed axes are moved first and merged, and the
// positions are the indices' linear combination, so any number of index tensors is one lazy
// gather that fuses with what reads it. A mask becomes its nonzero coordinates first. Writes
// through index tensors scatter (graph::scatter) into a copy that is assigned back.
//
// Data-dependent shapes realize only what decides them: a mask's true count (one reduction read
// back); the coordinates themselves stay lazy (a cumsum gives each true element its slot, and a
// scatter puts its position there).
#pragma once

#include <cstdint>
#include <vector>

#include "assign.hpp"
#include "creation.hpp"
#include "indexing.hpp"
#include "sorting.hpp"
#include "tensor.hpp"

namespace lazytensor {

namespace detail {

inline NodePtr int64_constant(std::int64_t v, const Shape& shape, Device device) {
    return graph::constant(Scalar::of<std::int64_t>(v), DType::Int64, shape, device);
}

/// The flat positions (int64, [count]) of the true elements of `mask` (bool) in its contiguous
/// order, ascending. Realizes the count (the result's extent); the positions stay lazy.
inline NodePtr true_positions(const NodePtr& mask, const char* op) {
    const std::int64_t n = numel(mask->shape);
    const Device device = mask->device;
    if (n == 0) return int64_constant(0, Shape{0}, device);
    const NodePtr ones = graph::cast(graph::reshape(mask, Shape{n}), DType::Int64);
    const NodePtr total = graph::reduce(ReduceOp::Sum, ones, std::nullopt, false, op);
    realize_nodes({total.get()});
    const std::int64_t count = read_elements<std::int64_t>(*total)[0];
    // Each true element's slot is the count of true elements up to it, less one.
    const NodePtr slot = graph::binary(BinaryOp::Sub, graph::scan(ReduceOp::Sum, ones, 0, op), Scalar::of<std::int64_t>(1));
    const NodePtr target = graph::where(graph::reshape(graph::cast(mask, DType::Bool), Shape{n}), slot, Scalar::of<std::int64_t>(-1));
    const NodePtr positions = graph::index(Shape{n}, Strides{1}, device);
    return graph::scatter(int64_constant(0, Shape{count}, device), target, positions, false);
}

/// The coordinates along each axis of `shape` of flat positions `flat` (int64, [count]).
inline std::vector<NodePtr> coordinates_of(const NodePtr& flat, const Shape& shape) {
    std::vector<NodePtr> out;
    const Strides strides = contiguous_strides(shape);
    for (std::size_t d = 0; d < shape.size(); ++d) {
        NodePtr c = flat;
        if (strides[d] != 1) c = graph::floor_divide(c, Scalar::of<std::int64_t>(strides[d]));
        if (d > 0) c = graph::remainder(c, Scalar::of<std::int64_t>(shape[d]));
        out.push_back(c);
    }
    return out;
}

/// One index tensor (or integer) of an advanced index: the axis of the view it indexes, its
/// positions (any integer dtype, negative counting from the end) and that axis' extent.
struct AdvancedIndex {
    std::size_t axis;
    NodePtr positions;
    std::int64_t extent;
    bool in_range = false;  // known to be (a mask's coordinates, an integer checked already)
};

/// view[advanced indices], the other axes kept: NumPy's placement (the indices' broadcast shape
/// where the first indexed axis was when the indexed axes are adjacent, else first).
inline NodePtr gather_advanced(const NodePtr& view, const std::vector<AdvancedIndex>& adv, const char* op) {
    const Shape& vs = view->shape;
    Shape b;  // the indices' broadcast shape
    for (const AdvancedIndex& a : adv) b = broadcast_shapes(b, a.positions->shape, op);
    bool adjacent = true;
    for (std::size_t i = 1; i < adv.size(); ++i) adjacent = adjacent && adv[i].axis == adv[i - 1].axis + 1;
    Axes perm;
    std::vector<char> indexed(vs.size(), 0);
    std::int64_t merged = 1;
    for (const AdvancedIndex& a : adv) {
        perm.push_back(static_cast<int>(a.axis));
        indexed[a.axis] = 1;
        merged *= a.extent;
    }
    Shape rest;
    for (std::size_t d = 0; d < vs.size(); ++d)
        if (!indexed[d]) {
            perm.push_back(static_cast<int>(d));
            rest.push_back(vs[d]);
        }
    Shape data_shape{merged};
    for (std::int64_t e : rest) data_shape.push_back(e);
    const NodePtr data = graph::reshape(graph::permute(view, perm), data_shape);
    // The linear position in the merged axis, over b (negative indices wrapped).
    NodePtr linear;
    std::int64_t stride = 1;
    for (std::size_t i = adv.size(); i-- > 0;) {
        NodePtr p = graph::cast(adv[i].positions, DType::Int64);
        p = graph::where(graph::binary(BinaryOp::Lt, p, Scalar::of<std::int64_t>(0)),
                         graph::binary(BinaryOp::Add, p, Scalar::of<std::int64_t>(adv[i].extent)), p);
        if (stride != 1) p = graph::binary(BinaryOp::Mul, p, Scalar::of<std::int64_t>(stride));
        p = graph::expand(p, b);
        linear = linear ? graph::binary(BinaryOp::Add, linear, p) : p;
        stride *= adv[i].extent;
    }
    const std::int64_t count = numel(b);
    Shape spread{count}, out{count};
    for (std::int64_t e : rest) {
        spread.push_back(1);
        out.push_back(e);
    }
    const NodePtr at = graph::expand(graph::reshape(linear, spread), out);
    NodePtr result;
    if (count == 0 || merged == 0) {  // nothing to read (an empty index, or an empty axis no index can name)
        result = graph::constant(Scalar::of<std::int64_t>(0).cast(view->dtype), view->dtype, out, view->device);
    } else {
        result = graph::gather(data, 0, at);
    }
    Shape shaped = b;
    for (std::int64_t e : rest) shaped.push_back(e);
    result = graph::reshape(result, shaped);
    const std::size_t first = adv.front().axis, nb = b.size();
    if (!adjacent || first == 0) return result;
    Axes move;  // rest[:first] + b + rest[first:]
    for (std::size_t d = 0; d < first; ++d) move.push_back(static_cast<int>(nb + d));
    for (std::size_t d = 0; d < nb; ++d) move.push_back(static_cast<int>(d));
    for (std::size_t d = first; d < rest.size(); ++d) move.push_back(static_cast<int>(nb + d));
    return graph::permute(result, move);
}

/// Checks index tensors' values against their axes (one realize for all of them): IndexError
/// naming the first out of range.
inline void check_index_tensors(const std::vector<AdvancedIndex>& adv, const std::vector<int>& user_axes, const Shape& shape,
                                const char* op) {
    std::vector<NodePtr> bounds;
    std::vector<Node*> wanted;
    for (const AdvancedIndex& a : adv) {
        if (a.in_range || numel(a.positions->shape) == 0) continue;
        const NodePtr wide = graph::cast(a.positions, DType::Int64);
        bounds.push_back(graph::reduce(ReduceOp::Min, wide, std::nullopt, false, op));
        bounds.push_back(graph::reduce(ReduceOp::Max, wide, std::nullopt, false, op));
        wanted.push_back(a.positions.get());
        wanted.push_back(bounds[bounds.size() - 2].get());
        wanted.push_back(bounds.back().get());
    }
    if (wanted.empty()) return;
    realize_nodes(wanted);
    std::size_t b = 0;
    for (std::size_t i = 0; i < adv.size(); ++i) {
        if (adv[i].in_range || numel(adv[i].positions->shape) == 0) continue;
        const std::int64_t lo = read_elements<std::int64_t>(*bounds[b])[0], hi = read_elements<std::int64_t>(*bounds[b + 1])[0];
        b += 2;
        const std::int64_t n = adv[i].extent;
        if (lo < -n || hi >= n)
            fail<IndexError>(op, ": index ", lo < -n ? lo : hi, " is out of range for axis ", user_axes[i], " of extent ", n,
                             " (shape ", shape, "; valid: ", -n, " to ", n - 1, ")");
    }
}

/// x[indices] (TensorBase::index): the node, with `op` naming the caller in errors.
inline NodePtr index_node(const NodePtr& x, const std::vector<TensorIndex>& indices, const char* op) {
    using Kind = TensorIndex::Kind;
    const Shape& shape = x->shape;
    const std::size_t rank = shape.size();
    std::size_t consumed = 0;
    int ellipses = 0;
    bool any_tensor = false;
    for (const TensorIndex& i : indices) {
        switch (i.kind()) {
            case Kind::Integer:
            case Kind::Slice: ++consumed; break;
            case Kind::Ellipsis: ++ellipses; break;
            case Kind::NewAxis: break;
            case Kind::Tensor:
                any_tensor = true;
                consumed += i.tensor()->dtype == DType::Bool ? i.tensor()->shape.size() : 1;
                break;
        }
    }
    if (ellipses > 1) fail<IndexError>(op, ": an index can hold one lt::Ellipsis, got ", ellipses);
    if (consumed > rank)
        fail<IndexError>(op, ": too many indices for a tensor of ", rank, " dimensions (shape ", shape, "): they index ",
                         consumed, " axes");
    NodePtr view = x;
    std::size_t axis = 0;  // the axis of `view` the next index applies to
    int user_axis = 0;     // and of x
    std::vector<AdvancedIndex> adv;
    std::vector<int> adv_axes;  // per advanced index: x's axis, for errors
    for (const TensorIndex& i : indices) {
        switch (i.kind()) {
            case Kind::Ellipsis: {
                const std::size_t skip = rank - consumed;
                axis += skip;
                user_axis += static_cast<int>(skip);
                break;
            }
            case Kind::NewAxis: {
                Shape s = view->shape;
                s.insert(axis, 1);
                view = graph::reshape(view, s, op);
                ++axis;
                break;
            }
            case Kind::Slice: {
                const Slice& sl = i.slice();
                if (sl.step && *sl.step == 0) fail<ValueError>(op, ": slice step cannot be zero (axis ", user_axis, ")");
                view = graph::slice(view, static_cast<int>(axis), sl.start, sl.stop, sl.step.value_or(1));
                ++axis;
                ++user_axis;
                break;
            }
            case Kind::Integer: {
                const std::int64_t n = view->shape[axis], k = i.integer();
                if (k < -n || k >= n)
                    fail<IndexError>(op, ": index ", k, " is out of range for axis ", user_axis, " of extent ", n, " (shape ",
                                     shape, ")");
                const std::int64_t at = k < 0 ? k + n : k;
                if (any_tensor) {  // NumPy: an integer beside index tensors is one of them
                    adv.push_back({axis, int64_constant(at, Shape{}, view->device), n, true});
                    adv_axes.push_back(user_axis);
                    ++axis;
                } else {
                    Shape s = view->shape;
                    s.erase(axis);
                    view = graph::reshape(graph::slice(view, static_cast<int>(axis), at, at + 1, 1), s, op);
                }
                ++user_axis;
                break;
            }
            case Kind::Tensor: {
                const NodePtr& t = i.tensor();
                if (t->device != x->device)
                    fail<DeviceError>(op, ": the tensor is on ", x->device, " and an index tensor on ", t->device);
                if (t->dtype == DType::Bool) {
                    const std::size_t nd = t->shape.size();
                    if (nd == 0)
                        fail<IndexError>(op, ": a 0-dimensional bool index is not supported; use a bool tensor of the "
                                             "indexed axes' shape (a mask)");
                    Shape covered;
                    for (std::size_t d = axis; d < axis + nd && d < view->shape.size(); ++d) covered.push_back(view->shape[d]);
                    if (covered != t->shape)
                        fail<IndexError>(op, ": the mask's shape ", t->shape, " does not match the shape ", covered,
                                         " of the axes it indexes (from axis ", user_axis, " of shape ", shape, ")");
                    const std::vector<NodePtr> coords = coordinates_of(true_positions(t, op), t->shape);
                    for (std::size_t d = 0; d < nd; ++d) {
                        adv.push_back({axis + d, coords[d], view->shape[axis + d], true});
                        adv_axes.push_back(user_axis + static_cast<int>(d));
                    }
                    axis += nd;
                    user_axis += static_cast<int>(nd);
                } else if (is_integral(t->dtype)) {
                    adv.push_back({axis, t, view->shape[axis]});
                    adv_axes.push_back(user_axis);
                    ++axis;
                    ++user_axis;
                } else {
                    fail<DTypeError>(op, ": index tensors must be integers or bool (a mask), got ", t->dtype, " for axis ",
                                     user_axis);
                }
                break;
            }
        }
    }
    if (adv.empty()) return view;
    check_index_tensors(adv, adv_axes, shape, op);
    return gather_advanced(view, adv, op);
}

/// The flat positions in x's contiguous order of the elements x.index(indices) names, in the
/// result's shape: indexing the positions themselves.
inline NodePtr indexed_positions(const NodePtr& x, const std::vector<TensorIndex>& indices, const char* op) {
    const NodePtr flat = graph::index(x->shape, contiguous_strides(x->shape), x->device);
    return index_node(flat, indices, op);
}

}  // namespace detail

template <class T, class D>
Tensor<T> TensorBase<T, D>::index(const std::vector<TensorIndex>& indices) const {
    return Tensor<T>(detail::index_node(self().build(), indices, "index"));
}

/// x[indices] = value in place (PyTorch's index_put_; see the declaration in Tensor).
template <class T>
template <class V>
Tensor<T>& Tensor<T>::index_put(const std::vector<TensorIndex>& indices, const V& value, bool accumulate) {
    const detail::NodePtr x = build();
    bool basic = true;
    for (const TensorIndex& i : indices) basic = basic && i.kind() != TensorIndex::Kind::Tensor;
    if (basic) {  // a view of x: written through
        Tensor<T> view(detail::index_node(x, indices, "index_put"));
        if (!accumulate) {
            view.assign(value);
        } else {
            const BinaryOp add = std::is_same_v<T, bool> ? BinaryOp::LogicalOr : BinaryOp::Add;
            detail::graph::Operand v = detail::graph::Operand(detail::make_scalar(T(0)));
            if constexpr (detail::is_scalar_v<V>) v = detail::graph::Operand(detail::make_scalar(value));
            else v = detail::graph::Operand(value.build());
            view.assign(Tensor<T>(detail::graph::cast(detail::graph::binary(add, view.build(), v), dtype_of<T>())));
        }
        return *this;
    }
    // x[mask] = v with one mask over all of x and one value: an element-wise select, one pass
    // and no count to read back.
    if (indices.size() == 1 && indices[0].kind() == TensorIndex::Kind::Tensor && indices[0].tensor()->dtype == DType::Bool &&
        indices[0].tensor()->shape == x->shape) {
        const detail::NodePtr mask = indices[0].tensor();
        if (mask->device != x->device)
            detail::fail<DeviceError>("index_put: the tensor is on ", x->device, " and the mask on ", mask->device);
        detail::NodePtr one;
        if constexpr (detail::is_scalar_v<V>) one = detail::graph::constant(detail::make_scalar(value), dtype_of<T>(), Shape{}, x->device);
        else if (numel(value.build()->shape) == 1) one = detail::graph::reshape(detail::graph::cast(value.build(), dtype_of<T>()), Shape{});
        if (one) {
            const BinaryOp add = std::is_same_v<T, bool> ? BinaryOp::LogicalOr : BinaryOp::Add;
            const detail::NodePtr update = accumulate ? detail::graph::binary(add, x, one) : one;
            assign(Tensor<T>(detail::graph::where(mask, update, x)));
            return *this;
        }
    }
    // The target gets its memory first (assign would): the scatter then reads it as it is, a
    // copy where it is not row-major (graph::row_major_operand).
    detail::realize_for_write(x, "index_put");
    const detail::NodePtr target_node = x;
    const detail::NodePtr positions = detail::indexed_positions(target_node, indices, "index_put");
    detail::NodePtr values;
    if constexpr (detail::is_scalar_v<V>) values = detail::graph::constant(detail::make_scalar(value), dtype_of<T>(), positions->shape, x->device);
    else values = value.build();
    if (values->device != x->device)
        detail::fail<DeviceError>("index_put: the tensor is on ", x->device, " and the value on ", values->device);
    const Shape target = positions->shape;
    if (detail::broadcast_shapes(values->shape, target, "index_put") != target)
        detail::fail<ShapeError>("index_put: a value of shape ", values->shape, " does not broadcast to the indexed shape ", target);
    const std::int64_t n = numel(target);
    values = detail::graph::reshape(detail::graph::expand(detail::graph::cast(values, dtype_of<T>()), target), Shape{n});
    assign(Tensor<T>(detail::graph::scatter(target_node, detail::graph::reshape(positions, Shape{n}), values, accumulate)));
    return *this;
}

/// The coordinates of x's nonzero (true) elements, one row each in row-major order: int64
/// [count, x.ndim()] (PyTorch's nonzero). Realizes the count, which sets the shape; the
/// coordinates stay lazy.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
Tensor<std::int64_t> nonzero(const E& x) {
    namespace g = detail::graph;
    const detail::NodePtr n = x.build();
    const detail::NodePtr mask = n->dtype == DType::Bool ? n : g::binary(BinaryOp::Ne, n, Scalar::of<std::int64_t>(0));
    const detail::NodePtr flat = detail::true_positions(mask, "nonzero");
    const std::int64_t count = flat->shape[0];
    const std::int64_t rank = static_cast<std::int64_t>(n->shape.size());
    if (rank == 0) return Tensor<std::int64_t>(detail::int64_constant(0, Shape{count, 0}, n->device));
    std::vector<Tensor<std::int64_t>> columns;
    for (const detail::NodePtr& c : detail::coordinates_of(flat, n->shape)) columns.emplace_back(c);
    return stack(columns, 1);
}

/// NumPy's one-argument where (and np.nonzero): one int64 tensor per axis of cond with the
/// coordinates of its nonzero (true) elements along that axis, in row-major order, so that
/// x.index({where(c)[0], where(c)[1]}) are x's elements where c holds. Realizes the count.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
std::vector<Tensor<std::int64_t>> where(const E& cond) {
    namespace g = detail::graph;
    const detail::NodePtr n = cond.build();
    const detail::NodePtr mask = n->dtype == DType::Bool ? n : g::binary(BinaryOp::Ne, n, Scalar::of<std::int64_t>(0));
    std::vector<Tensor<std::int64_t>> out;
    for (const detail::NodePtr& c : detail::coordinates_of(detail::true_positions(mask, "where"), n->shape)) out.emplace_back(c);
    return out;
}

/// The elements of x where mask holds, in row-major order, as a 1-d tensor (PyTorch's
/// masked_select): x and mask broadcast together first. Realizes the mask's true count (the
/// length); the values stay lazy, and their gradient reaches x. ShapeError if they do not
/// broadcast, DTypeError unless mask is bool.
template <class E, class M, class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_tensor_like_v<M>>>
Tensor<typename E::value_type> masked_select(const E& x, const M& mask) {
    using T = typename E::value_type;
    namespace g = detail::graph;
    const detail::NodePtr data = x.build(), m = mask.build();
    if (m->dtype != DType::Bool) detail::fail<DTypeError>("masked_select: the mask must be bool, got ", m->dtype);
    const Shape shape = detail::broadcast_shapes(data->shape, m->shape, "masked_select");
    const std::int64_t n = numel(shape);
    const detail::NodePtr at = detail::true_positions(g::expand(m, shape), "masked_select");
    const detail::NodePtr flat = g::reshape(g::expand(data, shape), Shape{n});
    if (at->shape[0] == 0) return Tensor<T>(g::constant(Scalar::of<std::int64_t>(0).cast(data->dtype), data->dtype, Shape{0}, data->device));
    return Tensor<T>(g::gather(flat, 0, at));
}

/// The result of lt::unique_all (NumPy's unique_all): the distinct values in ascending order,
/// the flat position of each one's first occurrence, for every element of x the position of its
/// value in `values` (x's shape), and how often each value occurs.
template <class T>
struct UniqueResult {
    Tensor<T> values;              ///< the distinct values, ascending
    Tensor<std::int64_t> indices;  ///< per value: the flat position of its first occurrence in x
    Tensor<std::int64_t> inverse;  ///< x's shape: each element's position in `values`
    Tensor<std::int64_t> counts;   ///< per value: how many elements of x have it
};

/// The distinct values of x (flattened) in ascending order, with first positions, inverse and
/// counts (NumPy's unique_all; NaNs count as one value, as NumPy's equal_nan). Sorts once and
/// realizes the number of distinct values (the length); the rest stays lazy.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
UniqueResult<typename E::value_type> unique_all(const E& x) {
    using T = typename E::value_type;
    namespace g = detail::graph;
    const detail::NodePtr data = x.build();
    const std::int64_t n = numel(data->shape);
    const Device device = data->device;
    UniqueResult<T> r;
    if (n == 0) {
        r.values = Tensor<T>(g::constant(Scalar::of<std::int64_t>(0).cast(data->dtype), data->dtype, Shape{0}, device));
        r.indices = r.counts = Tensor<std::int64_t>(detail::int64_constant(0, Shape{0}, device));
        r.inverse = Tensor<std::int64_t>(detail::int64_constant(0, data->shape, device));
        return r;
    }
    const Tensor<T> flat(g::reshape(data, Shape{n}));
    const auto [sorted, order] = sort(flat);
    // A value starts a group where it differs from the one before it (NaNs equal each other).
    const detail::NodePtr s = sorted.build();
    const detail::NodePtr here = g::slice(s, 0, 1, std::nullopt, 1), before = g::slice(s, 0, 0, n - 1, 1);
    detail::NodePtr same = g::binary(BinaryOp::Eq, here, before);
    if (is_floating(data->dtype))
        same = g::binary(BinaryOp::LogicalOr, same, g::binary(BinaryOp::LogicalAnd, g::unary(UnaryOp::IsNan, here), g::unary(UnaryOp::IsNan, before)));
    const detail::NodePtr starts = g::pad(g::unary(UnaryOp::LogicalNot, same), {1}, {0}, Scalar::of<bool>(true));
    const detail::NodePtr ones = g::cast(starts, DType::Int64);
    const detail::NodePtr total = g::reduce(ReduceOp::Sum, ones, std::nullopt, false, "unique");
    detail::realize_nodes({total.get()});
    const std::int64_t count = detail::read_elements<std::int64_t>(*total)[0];
    const detail::NodePtr group = g::binary(BinaryOp::Sub, g::scan(ReduceOp::Sum, ones, 0, "unique"), Scalar::of<std::int64_t>(1));
    const detail::NodePtr first = g::where(starts, group, Scalar::of<std::int64_t>(-1));
    const detail::NodePtr zeros = detail::int64_constant(0, Shape{count}, device);
    r.values = Tensor<T>(g::scatter(g::constant(Scalar::of<std::int64_t>(0).cast(data->dtype), data->dtype, Shape{count}, device),
                                    first, s, false));
    r.indices = Tensor<std::int64_t>(g::scatter(zeros, first, order.build(), false));
    r.counts = Tensor<std::int64_t>(g::scatter(zeros, group, detail::int64_constant(1, Shape{n}, device), true));
    r.inverse = Tensor<std::int64_t>(g::reshape(g::scatter(detail::int64_constant(0, Shape{n}, device), order.build(), group, false), data->shape));
    return r;
}

/// The distinct values of x (flattened) in ascending order (NumPy's unique; NaNs count as one).
/// Realizes their number (the length). unique_all also gives positions, inverse and counts.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
Tensor<typename E::value_type> unique(const E& x) {
    return unique_all(x).values;
}

}  // namespace lazytensor
