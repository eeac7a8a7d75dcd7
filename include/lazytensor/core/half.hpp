// SPDX-License-Identifier: MIT
// lazytensor::half: IEEE 754 binary16 as a storage type (1 sign, 5 exponent, 10 mantissa bits).
//
// A half holds its 16 bits. It converts to float exactly and implicitly, and from float,
// double or an integer explicitly (narrowing should be visible), rounding to nearest even:
// values from 65520 up become infinity, values below the normal range become subnormals or
// zero, NaN stays NaN (made quiet, sign and top payload bits kept, as F16C does). Arithmetic
// between two halfs is done in float and rounded back to half (correctly rounded: float has
// more than twice half's precision); comparisons are done in float; a half mixed with another
// arithmetic type converts to float first (half + float is float).
//
// In tensors a half is storage only: kernels widen every half to float when they load it,
// compute in float, and round to half when they store it or cast to it (host and OpenCL alike).
#pragma once

#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#if defined(__F16C__)
#include <immintrin.h>
#endif

namespace lazytensor {

namespace detail {

/// Rounds a binary floating value (bits of type U, M mantissa bits, exponent bias B) to the
/// nearest half, ties to even. Exact from double too: no double rounding through float.
template <class U, int M, int B>
constexpr std::uint16_t round_to_half_bits(U x) {
    constexpr int W = static_cast<int>(sizeof(U)) * 8;
    const auto sign = static_cast<std::uint16_t>((x >> (W - 1)) << 15);
    const U abs = x & ~(U(1) << (W - 1));
    const U inf = ((U(1) << (W - 1 - M)) - 1) << M;
    if (abs >= inf) {  // infinity, or NaN: quiet, keeping the top payload bits
        if (abs == inf) return static_cast<std::uint16_t>(sign | 0x7c00u);
        return static_cast<std::uint16_t>(sign | 0x7e00u | ((abs >> (M - 10)) & 0x3ffu));
    }
    const int e = static_cast<int>(abs >> M) - B;  // unbiased exponent
    if (e >= 16) return static_cast<std::uint16_t>(sign | 0x7c00u);
    if (e < -25) return sign;  // below half the smallest subnormal (also every subnormal input)
    const U m = (abs & ((U(1) << M) - 1)) | (U(1) << M);  // with the implicit bit
    // Normal results keep 11 bits; subnormal ones count units of 2^-24.
    const int shift = e >= -14 ? M - 10 : M - 24 - e;
    U q = m >> shift;
    const U rest = m & ((U(1) << shift) - 1), halfway = U(1) << (shift - 1);
    if (rest > halfway || (rest == halfway && (q & 1))) ++q;
    // A normal q includes the implicit bit (0x400), which adds one to the exponent field; a
    // carry out of the mantissa moves into the exponent (up to infinity), as it should.
    const U exponent = e >= -14 ? static_cast<U>(e + 14) << 10 : 0;
    return static_cast<std::uint16_t>(sign | (exponent + q));
}

inline std::uint16_t float_to_half_bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return round_to_half_bits<std::uint32_t, 23, 127>(u);
}

inline std::uint16_t double_to_half_bits(double d) {
    std::uint64_t u;
    std::memcpy(&u, &d, sizeof u);
    return round_to_half_bits<std::uint64_t, 52, 1023>(u);
}

inline float half_bits_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    std::uint32_t u;
    if (e == 0x1f)
        u = sign | 0x7f800000u | (m ? 0x400000u | (m << 13) : 0u);  // NaN made quiet, as F16C does
    else if (e != 0)
        u = sign | ((e + 112) << 23) | (m << 13);
    else if (m == 0)
        u = sign;
    else {  // subnormal: m * 2^-24, a normal float (exact)
        const float f = static_cast<float>(m) * 5.9604644775390625e-8f;
        return sign ? -f : f;
    }
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}

}  // namespace detail

/// IEEE 754 binary16. Trivially copyable; default construction leaves it uninitialized (like
/// float), value initialization (half{}) makes +0.
struct half {
    /// The IEEE binary16 bit pattern.
    std::uint16_t bits;

    /// Uninitialized, like float (half{} is +0).
    half() = default;
    /// Rounds to nearest even (integers: exactly, then rounded).
    template <class A, class = std::enable_if_t<std::is_arithmetic_v<A>>>
    explicit half(A x) : bits(convert(x)) {}

    /// The half with bit pattern `b`.
    static constexpr half from_bits(std::uint16_t b) { return half(Bits{}, b); }

    /// The exact float value (implicit).
    operator float() const { return detail::half_bits_to_float(bits); }

    /// Computed in float, rounded back to half.
    half& operator+=(half o) { return *this = half(float(*this) + float(o)); }
    /// \overload
    half& operator-=(half o) { return *this = half(float(*this) - float(o)); }
    /// \overload
    half& operator*=(half o) { return *this = half(float(*this) * float(o)); }
    /// \overload
    half& operator/=(half o) { return *this = half(float(*this) / float(o)); }

private:
    struct Bits {};
    constexpr half(Bits, std::uint16_t b) : bits(b) {}

    template <class A>
    static std::uint16_t convert(A x) {
        if constexpr (std::is_same_v<A, double> || std::is_same_v<A, long double>)  // long double: via double
            return detail::double_to_half_bits(static_cast<double>(x));
        else if constexpr (std::is_same_v<A, bool>)
            return x ? 0x3c00 : 0;
        else  // float; integers pass through double (exact for every value that is not infinity in half)
            return std::is_same_v<A, float> ? detail::float_to_half_bits(static_cast<float>(x))
                                            : detail::double_to_half_bits(static_cast<double>(x));
    }
};

static_assert(sizeof(half) == 2 && std::is_trivially_copyable_v<half> && std::is_trivially_default_constructible_v<half>);

///@{
/// Arithmetic in float, rounded to half; negation flips the sign bit; comparisons in float
/// (NaN compares unequal to everything).
inline half operator+(half a, half b) { return half(float(a) + float(b)); }
inline half operator-(half a, half b) { return half(float(a) - float(b)); }
inline half operator*(half a, half b) { return half(float(a) * float(b)); }
inline half operator/(half a, half b) { return half(float(a) / float(b)); }
inline half operator-(half a) { return half::from_bits(static_cast<std::uint16_t>(a.bits ^ 0x8000u)); }
inline half operator+(half a) { return a; }
inline bool operator==(half a, half b) { return float(a) == float(b); }
inline bool operator!=(half a, half b) { return float(a) != float(b); }
inline bool operator<(half a, half b) { return float(a) < float(b); }
inline bool operator<=(half a, half b) { return float(a) <= float(b); }
inline bool operator>(half a, half b) { return float(a) > float(b); }
inline bool operator>=(half a, half b) { return float(a) >= float(b); }
///@}

namespace detail {

/// dst[i] = float(src[i]): F16C where the compiler may use it, else the exact portable form
/// (the two agree bit for bit, NaN included; the tests check every half).
inline void half_to_float(const half* src, float* dst, std::int64_t n) {
    std::int64_t i = 0;
#if defined(__F16C__)
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(dst + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + i))));
#endif
    for (; i < n; ++i) dst[i] = half_bits_to_float(src[i].bits);
}

/// dst[i] = half(src[i]), rounding to nearest even (F16C or the portable form, as above).
inline void float_to_half(const float* src, half* dst, std::int64_t n) {
    std::int64_t i = 0;
#if defined(__F16C__)
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + i),
                         _mm256_cvtps_ph(_mm256_loadu_ps(src + i), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
#endif
    for (; i < n; ++i) dst[i].bits = float_to_half_bits(src[i]);
}

}  // namespace detail

}  // namespace lazytensor

namespace std {

template <>
class numeric_limits<lazytensor::half> {
    using H = lazytensor::half;

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
    static constexpr bool is_iec559 = true;
    static constexpr bool is_bounded = true;
    static constexpr bool is_modulo = false;
    static constexpr int digits = 11;
    static constexpr int digits10 = 3;
    static constexpr int max_digits10 = 5;
    static constexpr int radix = 2;
    static constexpr int min_exponent = -13;
    static constexpr int min_exponent10 = -4;
    static constexpr int max_exponent = 16;
    static constexpr int max_exponent10 = 4;
    static constexpr bool traps = false;
    static constexpr bool tinyness_before = false;

    static constexpr H min() noexcept { return H::from_bits(0x0400); }
    static constexpr H lowest() noexcept { return H::from_bits(0xfbff); }
    static constexpr H max() noexcept { return H::from_bits(0x7bff); }
    static constexpr H epsilon() noexcept { return H::from_bits(0x1400); }
    static constexpr H round_error() noexcept { return H::from_bits(0x3800); }
    static constexpr H infinity() noexcept { return H::from_bits(0x7c00); }
    static constexpr H quiet_NaN() noexcept { return H::from_bits(0x7e00); }
    static constexpr H signaling_NaN() noexcept { return H::from_bits(0x7d00); }
    static constexpr H denorm_min() noexcept { return H::from_bits(0x0001); }
};

}  // namespace std
