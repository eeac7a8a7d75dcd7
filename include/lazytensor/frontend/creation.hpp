// SPDX-License-Identifier: MIT
// Creating tensors: from data, constants, ranges. Data is copied to the device at once;
// constants stay lazy (a constant costs nothing until something reads it).
#pragma once

#include <cmath>
#include <initializer_list>
#include <limits>
#include <type_traits>
#include <vector>

#include "tensor.hpp"

namespace lazytensor {

namespace detail {

template <class T>
Tensor<T> from_host(const T* data, std::int64_t count, Shape shape, Device device) {
    BufferPtr buf = upload(device, dtype_of<T>(), count, data);
    Strides strides = contiguous_strides(shape);
    return Tensor<T>(graph::buffer(std::move(buf), std::move(shape), std::move(strides), 0));
}

/// A complex tensor of std::complex values (frontend/complex.hpp defines it).
template <class C>
Tensor<C> complex_from_host(const std::vector<C>& data, Shape shape, Device device);

template <class E>
Tensor<typename E::value_type> triangle(const E& x, std::int64_t k, bool upper, const char* op) {
    using T = typename E::value_type;
    const NodePtr v = x.build();
    const int n = static_cast<int>(v->shape.size());
    if (n < 2) fail<ShapeError>(op, ": needs at least two axes, got shape ", v->shape);
    const NodePtr offset = graph::binary(BinaryOp::Sub, graph::iota(v->shape, n - 1, v->device),
                                         graph::iota(v->shape, n - 2, v->device));
    const NodePtr keep = graph::binary(upper ? BinaryOp::Ge : BinaryOp::Le, offset, Scalar::of<std::int64_t>(k));
    return Tensor<T>(graph::where(keep, v, Scalar::of<T>(T(0))));
}

}  // namespace detail

/// A tensor holding `data` (row-major) with the given shape, on `device`; copied there now
/// (std::complex values: a complex tensor, frontend/complex.hpp). ShapeError if data.size() is not the shape's element count; DeviceError if `device` is unavailable.
template <class T>
Tensor<T> tensor(const std::vector<T>& data, Shape shape, Device device = default_device()) {
    detail::check_extents(shape, "lt::tensor");
    const std::int64_t count = numel(shape);
    if (static_cast<std::int64_t>(data.size()) != count)
        detail::fail<ShapeError>("lt::tensor: ", data.size(), " values do not fit shape ", shape, " (", count,
                                 " elements)");
    if constexpr (detail::is_complex_element_v<T>) {
        return detail::complex_from_host<T>(data, std::move(shape), device);
    } else if constexpr (std::is_same_v<T, bool>) {
        std::vector<std::uint8_t> bytes(data.begin(), data.end());
        static_assert(sizeof(bool) == 1, "lazytensor stores bool as one byte");
        return detail::from_host<T>(reinterpret_cast<const bool*>(bytes.data()), count, std::move(shape), device);
    } else {
        return detail::from_host<T>(data.data(), count, std::move(shape), device);
    }
}

template <class T, class D>
Tensor<T> TensorBase<T, D>::to(Device device) const {
    Tensor<T> t(self().build());
    if (t.device() == device) return t;
    detail::backend_for(device);  // an unavailable device fails before any work
    // One copy of contiguous memory: a view or expression is made contiguous on its own device first.
    if (!t.is_realized() || !detail::is_contiguous_layout(t.shape(), t.node_ptr()->strides, 0))
        t = Tensor<T>(detail::graph::copy(t.build()));
    t.realize();
    const detail::Node& n = *t.node_ptr();
    BufferPtr moved = detail::copy_to_device(*n.buffer, static_cast<std::size_t>(n.offset) * sizeof(T), dtype_of<T>(),
                                             lazytensor::numel(n.shape), device);
    return Tensor<T>(detail::graph::buffer(std::move(moved), n.shape, contiguous_strides(n.shape), 0));
}

/// A 1-D tensor holding `data`, on `device` (copied there now).
template <class T>
Tensor<T> tensor(std::initializer_list<T> data, Device device = default_device()) {
    return tensor<T>(std::vector<T>(data), Shape{static_cast<std::int64_t>(data.size())}, device);
}

/// A tensor of the given shape with every element equal to `value` (lazy: no memory until realized).
/// ShapeError for a negative extent; DeviceError if `device` is unavailable.
template <class T>
Tensor<T> full(const Shape& shape, T value, Device device = default_device()) {
    detail::check_extents(shape, "lt::full");
    detail::backend_for(device);
    return Tensor<T>(detail::graph::constant(Scalar::of<T>(value), dtype_of<T>(), shape, device));
}

/// full(shape, T(0), device).
template <class T>
Tensor<T> zeros(const Shape& shape, Device device = default_device()) {
    return full<T>(shape, T(0), device);
}

/// full(shape, T(1), device).
template <class T>
Tensor<T> ones(const Shape& shape, Device device = default_device()) {
    return full<T>(shape, T(1), device);
}

/// start, start + step, ... up to (not including) stop, like NumPy's arange (values computed in
/// double, converted to T, copied to `device` now). ValueError for step 0 or a non-finite bound.
template <class T>
Tensor<T> arange(double start, double stop, double step = 1, Device device = default_device()) {
    if (step == 0 || !std::isfinite(step) || !std::isfinite(start) || !std::isfinite(stop))
        detail::fail<ValueError>("lt::arange: start, stop and step must be finite and step non-zero (got ", start,
                                 ", ", stop, ", ", step, ")");
    const double span = std::ceil((stop - start) / step);
    if (span >= 9.0e15)  // beyond 2^53, consecutive values are no longer distinct doubles
        detail::fail<ValueError>("lt::arange: [", start, ", ", stop, ") in steps of ", step, " has ", span,
                                 " elements, too many");
    const std::int64_t count = span > 0 ? static_cast<std::int64_t>(span) : 0;
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        // Every value must be one of T: no out-of-range conversion (undefined), no wrap.
        const double last = start + static_cast<double>(count - 1) * step;
        for (double v : {start, last})
            if (count > 0 && (v < static_cast<double>(std::numeric_limits<T>::min()) ||
                              v >= static_cast<double>(std::numeric_limits<T>::max()) + 1.0))
                detail::fail<ValueError>("lt::arange: [", start, ", ", stop, ") in steps of ", step, " reaches ", v,
                                         ", which does not fit ", dtype_of<T>());
    }
    std::vector<T> values(static_cast<std::size_t>(count));
    for (std::int64_t i = 0; i < count; ++i) values[static_cast<std::size_t>(i)] = static_cast<T>(start + static_cast<double>(i) * step);
    return tensor<T>(values, Shape{count}, device);
}

/// 0, 1, ..., n - 1 (empty for n <= 0).
template <class T>
Tensor<T> arange(std::int64_t n, Device device = default_device()) {
    return arange<T>(0.0, static_cast<double>(n), 1.0, device);
}

/// `steps` values from `start` to `end`, both included, evenly spaced (PyTorch's and NumPy's
/// linspace: computed in double, the second half counted back from `end` so that it is exact;
/// integer T truncates toward zero). Copied to `device` now. ValueError for negative steps, a
/// non-finite bound or a value that does not fit T.
template <class T>
Tensor<T> linspace(double start, double end, std::int64_t steps, Device device = default_device()) {
    if (steps < 0 || !std::isfinite(start) || !std::isfinite(end))
        detail::fail<ValueError>("lt::linspace: start and end must be finite and steps non-negative (got ", start,
                                 ", ", end, ", ", steps, ")");
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
        for (double v : {start, end})
            if (steps > 0 && (std::trunc(v) < static_cast<double>(std::numeric_limits<T>::min()) ||
                              std::trunc(v) >= static_cast<double>(std::numeric_limits<T>::max()) + 1.0))
                detail::fail<ValueError>("lt::linspace: ", v, " does not fit ", dtype_of<T>());
    }
    std::vector<T> values(static_cast<std::size_t>(steps));
    const double step = steps > 1 ? (end - start) / static_cast<double>(steps - 1) : 0.0;
    for (std::int64_t i = 0; i < steps; ++i) {
        const double v = i < steps / 2 ? start + step * static_cast<double>(i)
                                       : end - step * static_cast<double>(steps - 1 - i);
        values[static_cast<std::size_t>(i)] = static_cast<T>(steps == 1 ? start : v);
    }
    return tensor<T>(values, Shape{steps}, device);
}

/// The n x m identity matrix (ones on the diagonal), lazy. ShapeError for a negative extent.
template <class T>
Tensor<T> eye(std::int64_t n, std::int64_t m, Device device = default_device()) {
    const Shape shape{n, m};
    detail::check_extents(shape, "lt::eye");
    detail::backend_for(device);
    namespace g = detail::graph;
    const detail::NodePtr diagonal = g::binary(BinaryOp::Eq, g::iota(shape, 0, device), g::iota(shape, 1, device));
    return Tensor<T>(g::cast(diagonal, dtype_of<T>()));
}

/// eye(n, n, device).
template <class T>
Tensor<T> eye(std::int64_t n, Device device = default_device()) {
    return eye<T>(n, n, device);
}

///@{
/// A tensor of x's shape, dtype and device with every element `value`, lazy; and likewise
/// zeros_like and ones_like. ValueError for a value outside an integer dtype (it never wraps).
template <class E, class V, class = std::enable_if_t<detail::is_tensor_like_v<E> && detail::is_scalar_v<V>>>
auto full_like(const E& x, V value) {
    using T = typename E::value_type;
    detail::graph::check_scalar_fits(detail::make_scalar(value), dtype_of<T>(), "lt::full_like");
    return full<T>(x.shape(), static_cast<T>(value), x.device());
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto zeros_like(const E& x) {
    return zeros<typename E::value_type>(x.shape(), x.device());
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto ones_like(const E& x) {
    return ones<typename E::value_type>(x.shape(), x.device());
}
///@}

/// A copy of x with memory of its own once realized (lazy, like every expression: a later
/// assign to x does not change it). Inside a larger expression it fuses like any other read.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto clone(const E& x) {
    return Tensor<typename E::value_type>(detail::graph::copy(x.build()));
}

/// x itself when it is a realized tensor whose elements lie row-major without gaps (any
/// offset), else clone(x): a lazy view (transpose, slice, expand, ...) or expression becomes
/// contiguous memory when realized.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto contiguous(const E& x) {
    Tensor<typename E::value_type> t(x);
    if (t.is_realized() && detail::is_contiguous_layout(t.shape(), t.node_ptr()->strides, 0)) return t;
    return Tensor<typename E::value_type>(detail::graph::copy(t.build()));
}

/// The upper triangle of the last two axes (elements with column - row >= k), zeros below;
/// lazy, one fused read. ShapeError for fewer than two axes.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto triu(const E& x, std::int64_t k = 0) {
    return detail::triangle(x, k, true, "lt::triu");
}

/// The lower triangle of the last two axes (elements with column - row <= k), zeros above.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto tril(const E& x, std::int64_t k = 0) {
    return detail::triangle(x, k, false, "lt::tril");
}

}  // namespace lazytensor
