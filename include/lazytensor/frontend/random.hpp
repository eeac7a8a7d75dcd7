// SPDX-License-Identifier: MIT
// Random tensors from the counter-based Philox 4x32-10 generator (core/philox.hpp): element i
// of a tensor made with seed s is a function of (i, s) alone, so the same seed gives the same
// numbers on every device and thread count, and nothing is stored until the tensor is read.
// Tensors of one shape and seed are equal; use different seeds for independent tensors.
#pragma once

#include <cmath>
#include <cstdint>

#include "tensor.hpp"

namespace lazytensor {

namespace detail {

/// 64 random bits (int64) per element: philox(linear index, seed).
inline NodePtr random_bits(const Shape& shape, std::uint64_t seed, Device device, const char* op) {
    check_extents(shape, op);
    backend_for(device);
    const NodePtr counter = graph::index(shape, contiguous_strides(shape), device);
    return graph::binary(BinaryOp::Philox, counter, Scalar::of<std::int64_t>(static_cast<std::int64_t>(seed)));
}

/// bits >> shift, keeping `width` bits: a non-negative int64 below 2^width.
inline NodePtr bit_field(const NodePtr& bits, int shift, int width) {
    const NodePtr shifted = shift ? graph::binary(BinaryOp::Shr, bits, Scalar::of<std::int64_t>(shift)) : bits;
    return graph::binary(BinaryOp::BitAnd, shifted, Scalar::of<std::int64_t>(static_cast<std::int64_t>((std::uint64_t(1) << width) - 1)));
}

/// Mantissa bits of a floating type: a uniform value with this many random bits is exact.
inline int mantissa_bits(DType t) { return t == DType::Float64 ? 53 : t == DType::Float32 ? 24 : 11; }

/// A field of `width` bits as a floating value in [0, 1) (or (0, 1] with `open_at_zero`).
inline NodePtr unit_interval(const NodePtr& field, int width, DType t, bool open_at_zero) {
    NodePtr v = open_at_zero ? graph::binary(BinaryOp::Add, field, Scalar::of<std::int64_t>(1)) : field;
    return graph::binary(BinaryOp::Mul, graph::cast(v, t), Scalar::of<double>(std::ldexp(1.0, -width)));
}

}  // namespace detail

/// Uniform random numbers in [0, 1) (float, double or half; every value a multiple of 2^-24,
/// 2^-53 or 2^-11 respectively), bit-identical on every device. Lazy (nothing stored until read).
template <class T>
Tensor<T> rand(const Shape& shape, std::uint64_t seed, Device device = default_device()) {
    static_assert(detail::is_floating_v<T>, "lazytensor: rand<T> needs a floating T (float, double, half)");
    const DType t = dtype_of<T>();
    const int width = detail::mantissa_bits(t);
    const detail::NodePtr bits = detail::random_bits(shape, seed, device, "rand");
    return Tensor<T>(detail::unit_interval(detail::bit_field(bits, 64 - width, width), width, t, false));
}

/// Standard normal random numbers (Box-Muller on two uniforms per element, computed in T; in
/// float for half). The same on every device up to the rounding of log, sqrt and cos. Lazy.
template <class T>
Tensor<T> randn(const Shape& shape, std::uint64_t seed, Device device = default_device()) {
    static_assert(detail::is_floating_v<T>, "lazytensor: randn<T> needs a floating T (float, double, half)");
    namespace g = detail::graph;
    const DType t = dtype_of<T>() == DType::Float64 ? DType::Float64 : DType::Float32;
    const int width = t == DType::Float64 ? 32 : 24;
    const detail::NodePtr bits = detail::random_bits(shape, seed, device, "randn");
    const detail::NodePtr u1 = detail::unit_interval(detail::bit_field(bits, 32, width), width, t, true);  // (0, 1]
    const detail::NodePtr u2 = detail::unit_interval(detail::bit_field(bits, 0, width), width, t, false);  // [0, 1)
    const detail::NodePtr radius =
        g::unary(UnaryOp::Sqrt, g::binary(BinaryOp::Mul, g::unary(UnaryOp::Log, u1), Scalar::of<double>(-2.0)));
    const detail::NodePtr angle = g::binary(BinaryOp::Mul, u2, Scalar::of<double>(6.283185307179586476925));
    return Tensor<T>(g::cast(g::binary(BinaryOp::Mul, radius, g::unary(UnaryOp::Cos, angle)), dtype_of<T>()));
}

/// Uniform random integers in [low, high) (bias below (high - low) / 2^63), bit-identical on
/// every device. Lazy. ValueError if high <= low, the range does not fit T or is wider than 2^63 - 1.
template <class T>
Tensor<T> randint(std::int64_t low, std::int64_t high, const Shape& shape, std::uint64_t seed,
                  Device device = default_device()) {
    static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>,
                  "lazytensor: randint<T> needs an integer T (int8_t to int64_t, uint8_t to uint64_t)");
    if (high <= low) detail::fail<ValueError>("randint: needs low < high, got [", low, ", ", high, ")");
    // Values are low + (63 random bits) mod (high - low): the width must fit in int64.
    if (static_cast<std::uint64_t>(high) - static_cast<std::uint64_t>(low) > static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))
        detail::fail<ValueError>("randint: [", low, ", ", high, ") is wider than 2^63 - 1 values");
    using L = std::numeric_limits<T>;  // uint64's maximum is no int64: compared as unsigned
    if (low < static_cast<std::int64_t>(L::min()) || (std::is_unsigned_v<T> && low < 0) ||
        (high - 1 >= 0 && static_cast<std::uint64_t>(high - 1) > static_cast<std::uint64_t>(L::max())))
        detail::fail<ValueError>("randint: [", low, ", ", high, ") does not fit ", dtype_of<T>());
    namespace g = detail::graph;
    const detail::NodePtr bits = detail::random_bits(shape, seed, device, "randint");
    const detail::NodePtr r63 = detail::bit_field(bits, 1, 63);
    // (Both operands are non-negative: C's remainder is NumPy's.)
    const detail::NodePtr offset = g::binary(BinaryOp::Fmod, r63, Scalar::of<std::int64_t>(high - low));
    return Tensor<T>(g::cast(g::binary(BinaryOp::Add, offset, Scalar::of<std::int64_t>(low)), dtype_of<T>()));
}

/// rand and randn of x's shape, dtype and device.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto rand_like(const E& x, std::uint64_t seed) {
    return rand<typename E::value_type>(x.shape(), seed, x.device());
}
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
auto randn_like(const E& x, std::uint64_t seed) {
    return randn<typename E::value_type>(x.shape(), seed, x.device());
}

}  // namespace lazytensor
