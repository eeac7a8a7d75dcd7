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

}  // namespace detail

/// A tensor holding `data` (row-major) with the given shape, on `device`; copied there now.
/// ShapeError if data.size() is not the shape's element count; DeviceError if `device` is unavailable.
template <class T>
Tensor<T> tensor(const std::vector<T>& data, Shape shape, Device device = default_device()) {
    detail::check_extents(shape, "lt::tensor");
    const std::int64_t count = numel(shape);
    if (static_cast<std::int64_t>(data.size()) != count)
        detail::fail<ShapeError>("lt::tensor: ", data.size(), " values do not fit shape ", shape, " (", count,
                                 " elements)");
    if constexpr (std::is_same_v<T, bool>) {
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
    return tensor<T>(t.to_vector(), t.shape(), device);
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

}  // namespace lazytensor
