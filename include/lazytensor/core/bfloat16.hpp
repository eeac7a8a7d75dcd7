// SPDX-License-Identifier: MIT
// lazytensor::bfloat16: the top 16 bits of an IEEE 754 binary32 (1 sign, 8 exponent, 7 mantissa
// bits), modelled on lazytensor::half.
//
// A bfloat16 holds its 16 bits. It converts to float exactly and implicitly (the bits shifted
// up), and from float, double or an integer explicitly, rounding to nearest even: float's range,
// so only values past the largest bfloat16 (3.3895e38) by half a unit become infinity; values
// below the normal range become subnormals (units of 2^-133) or zero; NaN stays NaN (made quiet,
// sign and top payload bits kept). A double or an integer is rounded once (through float rounded
// to odd, which has 16 more bits than bfloat16 needs, so no double rounding). Arithmetic between two bfloat16
// is done in float and rounded back; comparisons are done in float.
//
// Tensors of it (dtype bfloat16) are storage only, like float16: kernels widen to float as they
// load and round once as they store (docs/dtypes.md).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

namespace lazytensor {

namespace detail {

/// Rounds a float to the nearest bfloat16, ties to even; NaN is kept, made quiet.
inline std::uint16_t float_to_bfloat16_bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((u >> 16) | 0x0040u);
    // Adding 0x7fff (and the bit that makes a tie round to even) carries into bit 16 exactly when
    // the dropped half is above (or at, for an odd result) one half unit; a carry out of the
    // mantissa moves into the exponent, up to infinity, as it should.
    u += 0x7fffu + ((u >> 16) & 1u);
    return static_cast<std::uint16_t>(u >> 16);
}

/// d as a float rounded to odd: the float toward zero, with its last bit set when d is not a
/// float. A float has 16 more mantissa bits than a bfloat16, so rounding that to nearest even
/// gives d's correctly rounded bfloat16.
inline float double_to_float_round_to_odd(double d) {
    std::uint32_t u;
    if (std::fabs(d) > static_cast<double>(std::numeric_limits<float>::max()) && !std::isinf(d)) {
        // Past float's range (a cast would be undefined): the largest float, which is odd and
        // past bfloat16's last tie, so it rounds to infinity.
        u = d < 0 ? 0xff7fffffu : 0x7f7fffffu;
        float big;
        std::memcpy(&big, &u, sizeof big);
        return big;
    }
    float f = static_cast<float>(d);
    if (std::isnan(d) || std::isinf(d) || static_cast<double>(f) == d) return f;
    std::memcpy(&u, &f, sizeof u);
    if (std::fabs(static_cast<double>(f)) > std::fabs(d)) --u;  // the float toward zero (same sign)
    u |= 1u;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

/// An integer as a float rounded to odd (its top 24 bits, the last one set when bits below are
/// lost), for the same purpose: a float holds every integer of up to 24 bits, so only longer ones
/// change.
template <class I>
inline float integer_to_float_round_to_odd(I x) {
    bool negative = false;
    if constexpr (std::is_signed_v<I>) negative = x < 0;
    // The magnitude, as uint64 (the most negative int64's too).
    std::uint64_t m = negative ? std::uint64_t(0) - static_cast<std::uint64_t>(x) : static_cast<std::uint64_t>(x);
    int length = 0;
    while (length < 64 && (m >> length) != 0) ++length;
    int drop = 0;
    if (length > 24) {
        drop = length - 24;
        const bool lost = (m & ((std::uint64_t(1) << drop) - 1)) != 0;
        m = (m >> drop) | (lost ? 1u : 0u);
    }
    const float f = std::ldexp(static_cast<float>(m), drop);  // exact: m has at most 24 bits
    return negative ? -f : f;
}

inline float bfloat16_bits_to_float(std::uint16_t b) {
    const std::uint32_t u = static_cast<std::uint32_t>(b) << 16;
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

}  // namespace detail

/// Brain floating point: float's sign and exponent, 7 mantissa bits. Trivially copyable;
/// default construction leaves it uninitialized (like float), value initialization makes +0.
struct bfloat16 {
    /// The bit pattern (the top half of the float it stands for).
    std::uint16_t bits;

    /// Uninitialized, like float (bfloat16{} is +0).
    bfloat16() = default;
    /// Rounds to nearest even (a double or an integer once).
    template <class A, class = std::enable_if_t<std::is_arithmetic_v<A>>>
    explicit bfloat16(A x) : bits(convert(x)) {}
    /// The bfloat16 with bit pattern `b`.
    static constexpr bfloat16 from_bits(std::uint16_t b) { return bfloat16(Bits{}, b); }

    /// The exact float value (implicit).
    operator float() const { return detail::bfloat16_bits_to_float(bits); }

    /// Computed in float, rounded back to bfloat16.
    bfloat16& operator+=(bfloat16 o) { return *this = bfloat16(float(*this) + float(o)); }
    bfloat16& operator-=(bfloat16 o) { return *this = bfloat16(float(*this) - float(o)); }
    bfloat16& operator*=(bfloat16 o) { return *this = bfloat16(float(*this) * float(o)); }
    bfloat16& operator/=(bfloat16 o) { return *this = bfloat16(float(*this) / float(o)); }

private:
    struct Bits {};
    constexpr bfloat16(Bits, std::uint16_t b) : bits(b) {}

    template <class A>
    static std::uint16_t convert(A x) {
        if constexpr (std::is_same_v<A, float>) return detail::float_to_bfloat16_bits(x);
        else if constexpr (std::is_same_v<A, bool>) return x ? 0x3f80 : 0;
        else if constexpr (std::is_integral_v<A>)  // char types included
            return detail::float_to_bfloat16_bits(detail::integer_to_float_round_to_odd(x));
        else  // double, long double (via double)
            return detail::float_to_bfloat16_bits(detail::double_to_float_round_to_odd(static_cast<double>(x)));
    }
};
static_assert(sizeof(bfloat16) == 2 && std::is_trivially_copyable_v<bfloat16> &&
              std::is_trivially_default_constructible_v<bfloat16>);

/// Arithmetic in float, rounded to bfloat16; negation flips the sign bit; comparisons in float
/// (NaN compares unequal to everything).
inline bfloat16 operator+(bfloat16 a, bfloat16 b) { return bfloat16(float(a) + float(b)); }
inline bfloat16 operator-(bfloat16 a, bfloat16 b) { return bfloat16(float(a) - float(b)); }
inline bfloat16 operator*(bfloat16 a, bfloat16 b) { return bfloat16(float(a) * float(b)); }
inline bfloat16 operator/(bfloat16 a, bfloat16 b) { return bfloat16(float(a) / float(b)); }
inline bfloat16 operator-(bfloat16 a) { return bfloat16::from_bits(static_cast<std::uint16_t>(a.bits ^ 0x8000u)); }
inline bfloat16 operator+(bfloat16 a) { return a; }
inline bool operator==(bfloat16 a, bfloat16 b) { return float(a) == float(b); }
inline bool operator!=(bfloat16 a, bfloat16 b) { return float(a) != float(b); }
inline bool operator<(bfloat16 a, bfloat16 b) { return float(a) < float(b); }
inline bool operator<=(bfloat16 a, bfloat16 b) { return float(a) <= float(b); }
inline bool operator>(bfloat16 a, bfloat16 b) { return float(a) > float(b); }
inline bool operator>=(bfloat16 a, bfloat16 b) { return float(a) >= float(b); }

namespace detail {

/// dst[i] = float(src[i]) (exact: the bits shifted up; a plain loop the compiler vectorizes).
inline void bfloat16_to_float(const bfloat16* src, float* dst, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) {
        const std::uint32_t u = static_cast<std::uint32_t>(src[i].bits) << 16;
        std::memcpy(dst + i, &u, sizeof u);
    }
}

/// dst[i] = bfloat16(src[i]), rounding to nearest even, NaN kept quiet.
inline void float_to_bfloat16(const float* src, bfloat16* dst, std::int64_t n) {
    for (std::int64_t i = 0; i < n; ++i) dst[i].bits = float_to_bfloat16_bits(src[i]);
}

}  // namespace detail

}  // namespace lazytensor

namespace std {

/// bfloat16's limits: float's exponent range, 8 significant bits.
template <>
class numeric_limits<lazytensor::bfloat16> {
    using B = lazytensor::bfloat16;

public:
    static constexpr bool is_specialized = true;
    static constexpr bool is_signed = true;
    static constexpr bool is_integer = false;
    static constexpr bool is_exact = false;
    static constexpr bool has_infinity = true;
    static constexpr bool has_quiet_NaN = true;
    static constexpr bool has_signaling_NaN = true;
    static constexpr float_denorm_style has_denorm = denorm_present;
    static constexpr bool has_denorm_loss = false;
    static constexpr float_round_style round_style = round_to_nearest;
    static constexpr bool is_iec559 = false;
    static constexpr bool is_bounded = true;
    static constexpr bool is_modulo = false;
    static constexpr int digits = 8;
    static constexpr int digits10 = 2;
    static constexpr int max_digits10 = 4;
    static constexpr int radix = 2;
    static constexpr int min_exponent = -125;
    static constexpr int min_exponent10 = -37;
    static constexpr int max_exponent = 128;
    static constexpr int max_exponent10 = 38;
    static constexpr bool traps = false;
    static constexpr bool tinyness_before = false;

    static constexpr B min() noexcept { return B::from_bits(0x0080); }
    static constexpr B lowest() noexcept { return B::from_bits(0xff7f); }
    static constexpr B max() noexcept { return B::from_bits(0x7f7f); }
    static constexpr B epsilon() noexcept { return B::from_bits(0x3c00); }
    static constexpr B round_error() noexcept { return B::from_bits(0x3f00); }
    static constexpr B infinity() noexcept { return B::from_bits(0x7f80); }
    static constexpr B quiet_NaN() noexcept { return B::from_bits(0x7fc0); }
    static constexpr B signaling_NaN() noexcept { return B::from_bits(0x7fa0); }
    static constexpr B denorm_min() noexcept { return B::from_bits(0x0001); }
};

}  // namespace std
