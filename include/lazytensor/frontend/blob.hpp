// SPDX-License-Identifier: MIT
// Wrapping memory the user owns as a tensor, without a copy: lt::from_blob.
#pragma once

#include <cstdint>
#include <functional>
#include <type_traits>
#include <utility>

#include "tensor.hpp"

namespace lazytensor {

namespace detail {

/// T where it must not be deduced (a deleter given as a lambda names no T).
template <class T>
struct no_deduce {
    using type = T;
};
template <class T>
using no_deduce_t = typename no_deduce<T>::type;

/// The elements a layout reaches from element [0, ..., 0] (1 + the largest offset; 0 for an
/// empty shape), after the checks every wrapped layout gets: extents and strides that do not
/// fit the shape, negative strides and 64-bit overflow are errors naming `op`.
inline std::int64_t wrapped_span(const Shape& shape, const Strides& strides, std::size_t element_size, const char* op) {
    check_extents(shape, op);
    if (strides.size() != shape.size())
        fail<ShapeError>(op, ": ", strides.size(), " strides ", strides, " for a shape of ", shape.size(), " dimensions ",
                         shape);
    for (std::size_t k = 0; k < shape.size(); ++k)
        if (strides[k] < 0)
            fail<ValueError>(op, ": negative stride ", strides[k], " on axis ", k, " (shape ", shape, ", strides ", strides,
                             "); wrap the memory from its lowest address with positive strides and flip() the tensor");
    if (numel(shape) == 0) return 0;
    std::int64_t last = 0, bytes = 0;  // the largest element offset; the bytes up to it
    for (std::size_t k = 0; k < shape.size(); ++k) {
        std::int64_t reach = 0;
        if (__builtin_mul_overflow(shape[k] - 1, strides[k], &reach) || __builtin_add_overflow(last, reach, &last))
            fail<ShapeError>(op, ": shape ", shape, " with strides ", strides, " reaches past a 64-bit element offset");
    }
    if (__builtin_mul_overflow(last + 1, static_cast<std::int64_t>(element_size), &bytes))
        fail<ShapeError>(op, ": shape ", shape, " with strides ", strides, " spans more bytes than 64 bits can count");
    return last + 1;
}

/// A tensor of host memory at `data` (from_blob's checks, then the seam's wrap_memory).
template <class T>
Tensor<T> wrap_host(const T* data, Shape shape, Strides strides, std::function<void()> release, bool writable) {
    const char* op = "lt::from_blob";
    if (strides.empty() && !shape.empty()) {
        check_extents(shape, op);
        strides = contiguous_strides(shape);
    }
    const std::int64_t span = wrapped_span(shape, strides, sizeof(T), op);
    if (!data && span > 0) fail<ValueError>(op, ": null pointer for a tensor of shape ", shape);
    if (reinterpret_cast<std::uintptr_t>(data) % alignof(T) != 0)
        fail<ValueError>(op, ": the pointer ", static_cast<const void*>(data), " is not aligned for ", dtype_of<T>(),
                         " (to ", alignof(T), " bytes)");
    BufferPtr buf = wrap_memory(Device::host(), dtype_of<T>(), span, const_cast<T*>(data), std::move(release), writable);
    return Tensor<T>(graph::buffer(std::move(buf), std::move(shape), std::move(strides), 0));
}

}  // namespace detail

/// A host tensor whose memory is `data`, the user's, without a copy: element [i, j, ...] is
/// data[i * strides[0] + j * strides[1] + ...]. Strides are in elements, 0 or more (0 repeats
/// an element along an axis); none means row-major. Reading sees the values in the memory when
/// a kernel reads it, and x.assign(...) writes into it. The deleter, if any, is called with
/// `data` once, when the last tensor, view or schedule using the memory lets go; without one,
/// the memory must outlive every tensor that uses it. If from_blob throws, the deleter is not
/// called. ShapeError for strides that do not fit the shape; ValueError for a negative stride,
/// a null `data` with elements, or a pointer not aligned for T.
template <class T, class = std::enable_if_t<!std::is_const_v<T>>>
Tensor<T> from_blob(T* data, Shape shape, Strides strides = {}, std::function<void(detail::no_deduce_t<T>*)> deleter = {}) {
    std::function<void()> release;
    if (deleter) release = [data, deleter = std::move(deleter)] { deleter(data); };
    return detail::wrap_host<T>(data, std::move(shape), std::move(strides), std::move(release), true);
}

/// from_blob(data, shape, {}, deleter): row-major memory with a deleter.
template <class T, class Deleter,
          class = std::enable_if_t<!std::is_const_v<T> && std::is_invocable_v<Deleter&, T*>>>
Tensor<T> from_blob(T* data, Shape shape, Deleter deleter) {
    return from_blob<T>(data, std::move(shape), Strides{}, std::function<void(T*)>(std::move(deleter)));
}

/// A read-only tensor of the user's memory (as from_blob above): lazytensor never writes it;
/// assign() into it and data() are ValueErrors (const_data() reads it).
template <class T>
Tensor<T> from_blob(const T* data, Shape shape, Strides strides = {},
                    std::function<void(const detail::no_deduce_t<T>*)> deleter = {}) {
    std::function<void()> release;
    if (deleter) release = [data, deleter = std::move(deleter)] { deleter(data); };
    return detail::wrap_host<T>(data, std::move(shape), std::move(strides), std::move(release), false);
}

/// from_blob(data, shape, {}, deleter) of read-only memory.
template <class T, class Deleter, class = std::enable_if_t<std::is_invocable_v<Deleter&, const T*>>>
Tensor<T> from_blob(const T* data, Shape shape, Deleter deleter) {
    return from_blob<T>(data, std::move(shape), Strides{}, std::function<void(const T*)>(std::move(deleter)));
}

}  // namespace lazytensor
