// SPDX-License-Identifier: MIT
// Shapes, strides and axes, and the rules that combine them (NumPy broadcasting, axis
// normalization). All extents and strides are 64-bit: no silent overflow above 2^31 elements.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <ostream>
#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

#include "error.hpp"
#include "small_vector.hpp"

namespace lazytensor {

namespace detail {

template <class Value>
class IntList : public SmallVector<Value, 6> {
    using Base = SmallVector<Value, 6>;

public:
    using Base::Base;
    IntList() = default;
    IntList(std::initializer_list<Value> values) : Base(values) {}
    template <class I, class = std::enable_if_t<std::is_integral_v<I> && !std::is_same_v<I, Value>>>
    IntList(std::initializer_list<I> values) : Base(values.begin(), values.end()) {}
    template <class I, class = std::enable_if_t<std::is_integral_v<I>>>
    IntList(const std::vector<I>& values) : Base(values.begin(), values.end()) {}

    std::vector<Value> to_vector() const { return std::vector<Value>(this->begin(), this->end()); }
};

template <class Value>
std::ostream& operator<<(std::ostream& out, const IntList<Value>& list) {
    out << '[';
    for (std::size_t i = 0; i < list.size(); ++i) out << (i ? ", " : "") << list[i];
    return out << ']';
}

}  // namespace detail

/// A tensor's extents, outermost first. `{}` is the shape of a 0-d tensor.
using Shape = detail::IntList<std::int64_t>;
/// Element strides, one per dimension (may be 0 for broadcast dimensions).
using Strides = detail::IntList<std::int64_t>;
/// A list of axes; negative axes count from the end.
using Axes = detail::IntList<int>;

/// The shape as text, e.g. "[2, 3]" ("[]" for a 0-d shape).
inline std::string to_string(const Shape& shape) {
    std::ostringstream out;
    out << shape;
    return out.str();
}

/// Number of elements of a tensor of this shape: the product of the extents (1 for {}).
inline std::int64_t numel(const Shape& shape) {
    std::int64_t n = 1;
    for (auto e : shape) n *= e;
    return n;
}

/// Row-major strides of a contiguous tensor of this shape.
inline Strides contiguous_strides(const Shape& shape) {
    Strides strides(shape.size(), 1);
    std::int64_t s = 1;
    for (std::size_t i = shape.size(); i-- > 0;) {
        strides[i] = s;
        s *= shape[i];
    }
    return strides;
}

namespace detail {

/// Rejects negative extents and shapes whose element count does not fit in 64 bits.
inline void check_extents(const Shape& shape, const char* op) {
    std::int64_t n = 1;
    for (auto e : shape) {
        if (e < 0) fail<ShapeError>(op, ": negative extent in shape ", shape);
        if (__builtin_mul_overflow(n, e, &n))
            fail<ShapeError>(op, ": shape ", shape, " has more elements than a 64-bit count can hold");
    }
}

/// NumPy broadcasting of two shapes; names the op and both shapes when they do not fit.
inline Shape broadcast_shapes(const Shape& a, const Shape& b, const char* op) {
    const std::size_t n = std::max(a.size(), b.size());
    Shape out(n, 1);
    for (std::size_t i = 0; i < n; ++i) {
        const std::int64_t ea = i < n - a.size() ? 1 : a[i - (n - a.size())];
        const std::int64_t eb = i < n - b.size() ? 1 : b[i - (n - b.size())];
        if (ea != eb && ea != 1 && eb != 1)
            fail<ShapeError>(op, ": shapes ", a, " and ", b, " cannot be broadcast together (dimension ",
                             static_cast<long long>(i) - static_cast<long long>(n), " is ", ea, " vs ", eb, ")");
        out[i] = ea == 1 ? eb : ea;
    }
    check_extents(out, op);
    return out;
}

/// Maps a possibly negative axis into [0, ndim).
inline int normalize_axis(int axis, std::size_t ndim, const char* op, const Shape& shape) {
    const int n = static_cast<int>(ndim);
    if (n == 0) fail<AxisError>(op, ": axis ", axis, " is out of range: the tensor is 0-d (shape []) and has no axes");
    if (axis < -n || axis >= n)
        fail<AxisError>(op, ": axis ", axis, " is out of range for a tensor of ", n, " dimension", n == 1 ? "" : "s",
                        " (shape ", shape, "; valid axes are ", -n, "..", n - 1, ")");
    return axis < 0 ? axis + n : axis;
}

/// Normalizes and sorts a list of axes; rejects duplicates.
inline Axes normalize_axes(const Axes& axes, std::size_t ndim, const char* op, const Shape& shape) {
    Axes out;
    std::vector<bool> seen(ndim, false);
    for (int a : axes) {
        int n = normalize_axis(a, ndim, op, shape);
        if (seen[n]) fail<AxisError>(op, ": axis ", a, " is given twice in ", axes, " (shape ", shape, ")");
        seen[n] = true;
    }
    for (std::size_t i = 0; i < ndim; ++i)
        if (seen[i]) out.push_back(static_cast<int>(i));
    return out;
}

inline Axes all_axes(std::size_t ndim) {
    Axes out;
    for (std::size_t i = 0; i < ndim; ++i) out.push_back(static_cast<int>(i));
    return out;
}

}  // namespace detail
}  // namespace lazytensor
