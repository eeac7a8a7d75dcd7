// SPDX-License-Identifier: MIT
// The host backend's element-wise arithmetic: one functor per op in ir/ops.hpp, each with a
// scalar form (every dtype the op allows) and an xsimd form (float and double). The loops run
// over a block of elements; a tail shorter than a SIMD batch is padded into one batch, so every
// element of a float tensor goes through the same SIMD code wherever it sits.
//
// Integer arithmetic wraps (it is done in unsigned types: no undefined behaviour), floating
// maximum/minimum propagate NaN like NumPy, and float-to-integer casts saturate.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <type_traits>

#include "../core/config.hpp"
LAZYTENSOR_XSIMD_WARNINGS_OFF
#include <xsimd/xsimd.hpp>
#if defined(__SSE2__)
#include <immintrin.h>
#endif

#include "../core/dtype.hpp"
#include "../core/philox.hpp"
#include "../ir/ops.hpp"
#include "../ir/shared_functions.hpp"
#include "simd_arch.hpp"

namespace lazytensor::detail::host {

template <class T>
using batch = xsimd::batch<T, simd_arch>;

template <class T>
inline constexpr bool is_simd_float = std::is_same_v<T, float> || std::is_same_v<T, double>;

template <class T>
using wrap_t = std::make_unsigned_t<decltype(T{} + T{})>;

template <class T, class F>
inline T wrapping(T a, T b, F f) {
    return static_cast<T>(f(static_cast<wrap_t<T>>(a), static_cast<wrap_t<T>>(b)));
}

template <class T>
inline bool is_nan(T x) {
    if constexpr (std::is_floating_point_v<T>)
        return x != x;
    else
        return false;
}

// -------------------------------------------------------------------------------- unary functors

// xsimd's exp-like functions overflow and flush to 0 a little before C's do: lanes beyond
// [lo, hi] take f(x) = f(x / 2)^2 instead. Its log-like functions are wrong for subnormal
// doubles: those lanes take f(x * 2^s) - s * f(2).
template <class B, class F>
inline B exp_like_ends(const B& x, F f, typename B::value_type lo, typename B::value_type hi) {
    using T = typename B::value_type;
    B r = f(x);
    const auto edge = (x > B(hi)) || (x < B(lo));
    if (xsimd::any(edge)) {
        const B h = f(x * B(T(0.5)));
        r = xsimd::select(edge, h * h, r);
    }
    return r;
}
template <class B, class F>
inline B log_like_subnormals(const B& x, F f) {
    using T = typename B::value_type;
    const T shift = std::is_same_v<T, float> ? T(24) : T(54);
    B r = f(x);
    const auto tiny = (x > B(T(0))) && (x < B(std::numeric_limits<T>::min()));
    if (xsimd::any(tiny)) r = xsimd::select(tiny, f(x * B(std::exp2(shift))) - B(shift) * f(B(T(2))), r);
    return r;
}


struct Neg {
    template <class T>
    static T scalar(T x) {
        if constexpr (std::is_integral_v<T>) return wrapping<T>(T(0), x, [](auto a, auto b) { return a - b; });
        else return -x;
    }
    // The sign bit flipped: xsimd 8's AVX-512 negation is 0 - x, which gives +0 for +0 (C and
    // OpenCL give -0).
    template <class B>
    static B simd(const B& x) { return xsimd::bitwise_xor(x, B(typename B::value_type(-0.0))); }
};
struct Abs {
    template <class T>
    static T scalar(T x) {
        if constexpr (std::is_unsigned_v<T>) return x;
        else if constexpr (std::is_integral_v<T>) return x < 0 ? Neg::scalar(x) : x;
        else return std::fabs(x);
    }
    template <class B>
    static B simd(const B& x) { return xsimd::abs(x); }
};
struct Relu {
    template <class T>
    static T scalar(T x) { return x < T(0) ? T(0) : x; }  // NaN stays NaN
    template <class B>
    static B simd(const B& x) { return xsimd::select(x < B(0), B(0), x); }
};
/// Float exp for x in [-87, 88] (and NaN): Cody-Waite reduction x = k ln2 + r, Cephes' degree-7
/// polynomial for exp(r), then 2^k put in the exponent. No division, unlike xsimd's rational
/// form: faster, and as accurate (bench/ulp_error; bench/README.md has both measurements).
template <class B>
inline B exp_float_in_range(const B& x) {
    const B k = xsimd::nearbyint(x * B(1.44269504088896341f));
    B r = xsimd::fnma(k, B(0.693359375f), x);
    r = xsimd::fnma(k, B(-2.12194440e-4f), r);
    B y = xsimd::fma(B(1.9875691500e-4f), r, B(1.3981999507e-3f));
    y = xsimd::fma(y, r, B(8.3334519073e-3f));
    y = xsimd::fma(y, r, B(4.1665795894e-2f));
    y = xsimd::fma(y, r, B(1.6666665459e-1f));
    y = xsimd::fma(y, r, B(5.0000001201e-1f));
    y = xsimd::fma(y, r * r, r + B(1.0f));
    using I = xsimd::batch<std::int32_t, typename B::arch_type>;
    return y * xsimd::bitwise_cast<B>((xsimd::to_int(k) + I(127)) << 23);
}

struct Exp {
    template <class T>
    static T scalar(T x) { return std::exp(x); }
    template <class B>
    static B simd(const B& x) {
        using T = typename B::value_type;
        if constexpr (std::is_same_v<T, float>) {
            // NaN propagates through the polynomial; past the ends, exp(x/2)^2 with x/2 clamped
            // into range (so that inf gives inf and -inf 0).
            B r = exp_float_in_range(x);
            const auto edge = (x > B(88.0f)) || (x < B(-87.0f));
            if (xsimd::any(edge)) {
                const B h = exp_float_in_range(xsimd::min(xsimd::max(x * B(0.5f), B(-87.0f)), B(88.0f)));
                r = xsimd::select(edge, h * h, r);
            }
            return r;
        } else
            return exp_like_ends(x, [](const B& v) { return xsimd::exp(v); }, T(-708), T(709));
    }
};
struct Log {
    template <class T>
    static T scalar(T x) { return std::log(x); }
    template <class B>
    static B simd(const B& x) { return log_like_subnormals(x, [](const B& v) { return xsimd::log(v); }); }
};
struct Sqrt {
    template <class T>
    static T scalar(T x) { return std::sqrt(x); }
    template <class B>
    static B simd(const B& x) { return xsimd::sqrt(x); }
};
// xsimd reduces a batch with any lane past 64 pi (float) / 2^18 pi (double), or NaN, through
// fdlibm's rem_pio2 lane by lane, which shifts a negative int (undefined behaviour in C++17) for
// lanes in [2^19 pi/2, 2^23). Such batches go lane by lane through the C library in a wider type
// instead (no slower than xsimd's own lane loop there): glibc's double tan is off by 14 ulp near
// poles of huge arguments, its long double one is not.
template <class B, class Wide>
inline B trig_simd(const B& x, Wide wide, B (*simd)(const B&)) {
    using T = typename B::value_type;
    using W = std::conditional_t<std::is_same_v<T, float>, double, long double>;
    constexpr T reduced_in_simd = std::is_same_v<T, float> ? T(201) : T(823549);
    if (xsimd::all(xsimd::abs(x) <= B(reduced_in_simd))) return simd(x);
    alignas(B::arch_type::alignment()) T lanes[B::size];
    x.store_aligned(lanes);
    for (T& lane : lanes) lane = static_cast<T>(wide(static_cast<W>(lane)));
    return B::load_aligned(lanes);
}
struct Sin {
    template <class T>
    static T scalar(T x) { return std::sin(x); }
    template <class B>
    static B simd(const B& x) {
        return trig_simd(x, [](auto w) { return std::sin(w); }, +[](const B& v) { return xsimd::sin(v); });
    }
};
struct Cos {
    template <class T>
    static T scalar(T x) { return std::cos(x); }
    template <class B>
    static B simd(const B& x) {
        return trig_simd(x, [](auto w) { return std::cos(w); }, +[](const B& v) { return xsimd::cos(v); });
    }
};
struct Tanh {
    template <class T>
    static T scalar(T x) { return shared::lt_tanh(x); }
    template <class B>
    static B simd(const B& x) {
        if constexpr (std::is_same_v<typename B::value_type, float>) {
            // x P(x^2) / Q(x^2), a minimax fit of ours (relative error 6.6e-9 on [0, 9]); at
            // most 5 ulp after float rounding (with fused multiply-adds: 5.4 without), the accuracy OpenCL requires of tanh, at 2.4x
            // the speed of xsimd::tanh. |x| >= 9 rounds to +-1 anyway.
            const B x2 = x * x;
            B p = multiply_add(B(-8.48867189165813245519e-14f), x2, B(5.27793475621368267175e-11f));
            p = multiply_add(p, x2, B(-2.02252015544119457764e-08f));
            p = multiply_add(p, x2, B(1.11543035277132232787e-05f));
            p = multiply_add(p, x2, B(3.10395585838538857354e-03f));
            p = multiply_add(p, x2, B(1.30840098167550673993e-01f));
            p = multiply_add(p, x2, B(9.99999993391046065536e-01f));
            B q = multiply_add(B(2.54614463948461333483e-04f), x2, B(2.44951770869502727136e-02f));
            q = multiply_add(q, x2, B(4.64173369197804130981e-01f));
            q = multiply_add(q, x2, B(1.0f));
            return xsimd::select(xsimd::abs(x) >= B(9.0f), xsimd::copysign(B(1.0f), x), x * p / q);
        } else {
            return xsimd::tanh(x);
        }
    }
};
struct Exp2 {
    template <class T>
    static T scalar(T x) { return std::exp2(x); }
    template <class B>
    static B simd(const B& x) {
        using T = typename B::value_type;
        constexpr bool f32 = std::is_same_v<T, float>;
        const T top = f32 ? T(127) : T(1023);
        const B r = exp_like_ends(x, [](const B& v) { return xsimd::exp2(v); }, f32 ? T(-126) : T(-1022), top);
        // xsimd overflows one binade early, at `top` itself: 2 exp2(x - 1) is exact there.
        const auto last_binade = x >= B(top);
        return xsimd::any(last_binade) ? xsimd::select(last_binade, xsimd::exp2(x - B(T(1))) * B(T(2)), r) : r;
    }
};
struct Log2 {
    template <class T>
    static T scalar(T x) { return std::log2(x); }
    template <class B>
    static B simd(const B& x) { return log_like_subnormals(x, [](const B& v) { return xsimd::log2(v); }); }
};
struct Reciprocal {
    template <class T>
    static T scalar(T x) { return T(1) / x; }
    template <class B>
    static B simd(const B& x) { return B(1) / x; }
};
/// 1 / sqrt(x), rounded twice: the same value on every backend (a reciprocal square root
/// instruction is an approximation).
struct Rsqrt {
    template <class T>
    static T scalar(T x) { return T(1) / std::sqrt(x); }
    template <class B>
    static B simd(const B& x) { return B(1) / xsimd::sqrt(x); }
};
struct Tan {
    template <class T>
    static T scalar(T x) { return std::tan(x); }
    template <class B>
    static B simd(const B& x) {
        return trig_simd(x, [](auto w) { return std::tan(w); }, +[](const B& v) { return xsimd::tan(v); });
    }
};
/// erf, with xsimd's NaN for huge doubles (|x| > 1e154) fixed: erf rounds to +-1 from |x| = 6 on.
template <class B>
inline B erf_simd(const B& x) {
    using T = typename B::value_type;
    return xsimd::select(xsimd::abs(x) > B(T(6)), xsimd::copysign(B(T(1)), x), xsimd::erf(x));
}
// Rounding: integers are already whole (identity); round is half to even (NumPy, PyTorch).
struct Floor {
    template <class T>
    static T scalar(T x) {
        if constexpr (std::is_integral_v<T>) return x;
        else return std::floor(x);
    }
    template <class B>
    static B simd(const B& x) { return xsimd::floor(x); }
};
struct Ceil {
    template <class T>
    static T scalar(T x) {
        if constexpr (std::is_integral_v<T>) return x;
        else return std::ceil(x);
    }
    template <class B>
    static B simd(const B& x) { return xsimd::ceil(x); }
};
struct Round {
    template <class T>
    static T scalar(T x) {
        if constexpr (std::is_integral_v<T>) return x;
        else return std::nearbyint(x);  // the default rounding mode: to nearest, ties to even
    }
    template <class B>
    static B simd(const B& x) { return xsimd::nearbyint(x); }
};
struct Trunc {
    template <class T>
    static T scalar(T x) {
        if constexpr (std::is_integral_v<T>) return x;
        else return std::trunc(x);
    }
    template <class B>
    static B simd(const B& x) { return xsimd::trunc(x); }
};
struct BitwiseNot {
    template <class T>
    static T scalar(T x) {
        if constexpr (std::is_same_v<T, bool>) return !x;
        else return static_cast<T>(~static_cast<wrap_t<T>>(x));
    }
};
// Predicates: bool results; `mask` is the SIMD form (static kernels' where() conditions).
struct LogicalNot {
    template <class T>
    static bool scalar(T x) { return x == T(0); }
    template <class B>
    static auto mask(const B& x) { return x == B(0); }
};
struct IsNan {
    template <class T>
    static bool scalar(T x) { return is_nan(x); }
    template <class B>
    static auto mask(const B& x) { return xsimd::isnan(x); }
};
struct IsInf {
    template <class T>
    static bool scalar(T x) {
        if constexpr (std::is_floating_point_v<T>) return std::isinf(x);
        else return false;
    }
    template <class B>
    static auto mask(const B& x) { return xsimd::isinf(x); }
};

/// A scalar function applied lane by lane (ops with no exact or accurate SIMD form).
template <class B, class F>
inline B lanewise(const B& x, F f) {
    using T = typename B::value_type;
    alignas(64) T v[B::size];
    x.store_aligned(v);
    for (T& lane : v) lane = f(lane);
    return B::load_aligned(v);
}
template <class B, class F>
inline B lanewise(const B& a, const B& b, F f) {
    using T = typename B::value_type;
    alignas(64) T va[B::size], vb[B::size];
    a.store_aligned(va);
    b.store_aligned(vb);
    for (std::size_t i = 0; i < B::size; ++i) va[i] = f(va[i], vb[i]);
    return B::load_aligned(va);
}

// Functions whose xsimd form is within a few ulp of C's (docs/numerics.md's accuracy table).
#define LAZYTENSOR_XSIMD_FUNCTION(Name, fn)                      \
    struct Name {                                                \
        template <class T>                                       \
        static T scalar(T x) { return std::fn(x); }              \
        template <class B>                                       \
        static B simd(const B& x) { return xsimd::fn(x); }       \
    };
LAZYTENSOR_XSIMD_FUNCTION(Asin, asin)
LAZYTENSOR_XSIMD_FUNCTION(Acos, acos)
LAZYTENSOR_XSIMD_FUNCTION(Atan, atan)
LAZYTENSOR_XSIMD_FUNCTION(Sinh, sinh)
LAZYTENSOR_XSIMD_FUNCTION(Cosh, cosh)
LAZYTENSOR_XSIMD_FUNCTION(Asinh, asinh)
LAZYTENSOR_XSIMD_FUNCTION(Atanh, atanh)
#undef LAZYTENSOR_XSIMD_FUNCTION
// xsimd's log1p and expm1 give +0 for -0 (C gives -0): x itself there.
struct Log1p {
    template <class T>
    static T scalar(T x) { return std::log1p(x); }
    template <class B>
    static B simd(const B& x) { return xsimd::select(x == B(0), x, xsimd::log1p(x)); }
};
struct Expm1 {
    template <class T>
    static T scalar(T x) { return std::expm1(x); }
    // xsimd's expm1 also overflows early, as its exp does: where exp(x) - 1 rounds to exp(x),
    // Exp's patched form.
    template <class B>
    static B simd(const B& x) {
        using T = typename B::value_type;
        const auto big = x > B(std::is_same_v<T, float> ? T(20) : T(40));
        const B r = xsimd::select(x == B(T(0)), x, xsimd::expm1(x));
        return xsimd::any(big) ? xsimd::select(big, Exp::simd(x), r) : r;
    }
};
struct Acosh {
    template <class T>
    static T scalar(T x) { return std::acosh(x); }
    template <class B>
    static B simd(const B& x) {  // xsimd's gives 0, not NaN, below 1
        using T = typename B::value_type;
        return xsimd::select(x < B(T(1)), B(std::numeric_limits<T>::quiet_NaN()), xsimd::acosh(x));
    }
};
struct Erf {
    template <class T>
    static T scalar(T x) { return std::erf(x); }
    // xsimd's float erf is within 2.5 ulp; its double erf is 68 ulp off near 2.2: C's there.
    template <class B>
    static B simd(const B& x) {
        if constexpr (std::is_same_v<typename B::value_type, float>) return erf_simd(x);
        else return lanewise(x, [](auto v) { return std::erf(v); });
    }
};
// Error-free products for erfc: one FMA where the target has them; elsewhere (SSE2, AVX without
// FMA) xsimd's fma rounds twice, and Dekker's product of halves takes its place. (Not Dekker's
// everywhere: GCC contracts a * b - c into an FMA by default where it can, which would break
// the halves' arithmetic.)
#if defined(__FMA__) || defined(__aarch64__) || XSIMD_WITH_AVX512F
inline constexpr bool exact_fma = true;
#else
inline constexpr bool exact_fma = false;
#endif

/// a b - p exactly, for p = a b rounded (|a b| far from overflow).
template <class B>
inline B product_error(const B& a, const B& b, const B& p) {
    if constexpr (exact_fma) {
        return multiply_add(a, b, -p);
    } else {
        using T = typename B::value_type;
        const B split(std::is_same_v<T, float> ? T(4097) : T(134217729));  // 2^12 + 1, 2^27 + 1
        const B ca = a * split, cb = b * split;
        const B ah = ca - (ca - a), bh = cb - (cb - b), al = a - ah, bl = b - bh;
        return ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    }
}

/// c - a b exactly, where it is a double (c within a factor 2 of a b rounded: Sterbenz).
template <class B>
inline B residual(const B& c, const B& a, const B& b) {
    if constexpr (exact_fma) {
        return multiply_add(-a, b, c);
    } else {
        const B p = a * b;
        return (c - p) - product_error(a, b, p);
    }
}

/// exp(x) of doubles for x in [-746, 0] (erfc's exp(-a^2)), as (1 + w) 2^k1 2^k2, the sum
/// not rounded, so that erfc's product with it rounds once: Cody-Waite reduction x = k ln2 + r
/// (|r| <= ln2 / 2), w = exp(r) - 1 by its Taylor polynomial to degree 13 (the rest is below
/// 4e-18 there), and 2^k as two exact powers of two, so that a subnormal result rounds once.
/// (xsimd's double exp is a rational form, a division, and flushes to 0 from -708 on.)
template <class B>
struct ExpParts {
    B w, scale1, scale2;
};
template <class B>
inline ExpParts<B> exp_double_nonpositive(const B& x_in) {
    static constexpr double inverse_factorial[12] = {0.5, 0.16666666666666666, 0.041666666666666664, 0.0083333333333333332,
                                                     0.0013888888888888889, 0.00019841269841269841, 2.4801587301587302e-05,
                                                     2.7557319223985893e-06, 2.7557319223985888e-07, 2.505210838544172e-08,
                                                     2.08767569878681e-09, 1.6059043836821613e-10};  // 1/2! ... 1/13!
    const B x = xsimd::max(x_in, B(-746.0));
    const B k = xsimd::nearbyint(x * B(0x1.71547652b82fep+0));
    // ln2 as a 32-bit head (k times it is exact, and so is x less that: Sterbenz) and a tail
    const B r = (x - k * B(0x1.62e42fee00000p-1)) - k * B(0x1.a39ef35793c76p-33);
    B q(inverse_factorial[11]);
    for (int n = 10; n >= 0; --n) q = multiply_add(q, r, B(inverse_factorial[n]));
    using I = xsimd::batch<std::int64_t, typename B::arch_type>;
    const I ki = xsimd::to_int(k), k1 = ki >> 1, k2 = ki - k1;
    return {multiply_add(r * r, q, r), xsimd::bitwise_cast<B>((k1 + I(1023)) << 52), xsimd::bitwise_cast<B>((k2 + I(1023)) << 52)};
}

/// erfc of doubles, vectorized (xsimd's is far off: its erfc(2.2) is 3e4 ulp from C's). With
/// a = |x|: below 0.5, 1 - x P(x^2), P erf(x) / x's Taylor series to degree 12 (its rest is
/// below 1e-17 there). From 0.5 on, erfc(a) = exp(-a^2) erfcx(a), and (4 + a) erfcx(a) is a
/// polynomial of degree 24 in t = (a - 4) / (a + 4), which maps [0, inf] onto [-1, 1]
/// (Weideman's variable): the Chebyshev interpolant at 25 points (its rest is below 1e-17),
/// computed with mpmath at 50 digits and expanded in powers of t (they decay: Horner's rule is
/// stable, where Clenshaw's recurrence lost 3 ulp near t = -1);
/// a^2 is split exactly so that exp sees its rounding only as the factor 1 - lo. Below
/// -0.5, 2 - erfc(a). Beyond a = 27.3 erfc is below half the smallest subnormal: 0. NaN stays
/// NaN. bench/ulp_error and tests/test_ulp.cpp measure it against a long double reference.
template <class B>
inline B erfc_double_simd(const B& x) {
    static_assert(std::is_same_v<typename B::value_type, double>);
    static constexpr double series[25] = {  // in powers of t
        0x1.18932bf08e154p+0, -0x1.f3fe31ecb49bfp-1, 0x1.8be202d26c705p-1, -0x1.14eacb1ad0338p-1, 0x1.52cac237101a8p-2,
        -0x1.645fd8a4bc0c5p-3, 0x1.38dbd2c8e096bp-4, -0x1.b00c052c4aa08p-6, 0x1.908f47249f50dp-8, -0x1.269b51c9aae73p-12,
        -0x1.dd2844a3d9ae3p-12, 0x1.72cda1cde29afp-13, -0x1.e7ecfab463e8bp-19, -0x1.3c6de66a974bdp-16, 0x1.3b14737569986p-18,
        0x1.7e21437f1e71cp-20, -0x1.c7340dca5c782p-21, -0x1.3f8e921d5cce8p-24, 0x1.10a0f6ca5119cp-23, -0x1.2ec53a73236e0p-32,
        -0x1.38d2f997ae382p-26, 0x1.83a5155e48ddap-31, 0x1.3f851e782fdfep-29, -0x1.504c62ecdb042p-34, -0x1.9984314b1e611p-33};
    static constexpr double taylor[13] = {
        1.1283791670955126,     -0.37612638903183754,   0.11283791670955126,    -0.026866170645131252,  0.0052239776254421879,
        -0.00085483270234508533, 0.00012055332981789664, -1.492565035840625e-05, 1.6462114365889248e-06, -1.6365844691234924e-07,
        1.4807192815879218e-08, -1.2290555301717928e-09, 9.4227590646504113e-11};
    const B a = xsimd::abs(x);
    const auto small = a < B(0.5);
    B r(0.0);
    if (xsimd::any(small)) {
        const B s = x * x;
        B p(taylor[12]);
        for (int k = 11; k >= 0; --k) p = multiply_add(p, s, B(taylor[k]));
        r = multiply_add(-x, p, B(1.0));
    }
    if (!xsimd::all(small)) {
        // t = (a - 4) / (a + 4) with the roundings of a - 4, a + 4 (Knuth's TwoSum) and of the
        // quotient (its remainder n - t0 d, exact) put back: f is steep near t = -1,
        // where they cost up to 7 ulp.
        const B d = a + B(4.0), n = a - B(4.0);
        const B dd = d - a, dn = n - a;
        const B ed = (a - (d - dd)) + (B(4.0) - dd), en = (a - (n - dn)) + (B(-4.0) - dn);
        const B q = B(1.0) / d, t0 = n * q;  // (one division: t0's error goes into the remainder)
        const B t = multiply_add(multiply_add(-t0, ed, en) + residual(n, t0, d), q, t0);
        B g(series[24]);
        for (int k = 23; k >= 1; --k) g = multiply_add(g, t, B(series[k]));
        // f = series[0] + t g = f + fl, its last step exact (TwoProd, TwoSum): the terms cancel
        // by half where t nears 1, and this rounding would count double there.
        const B tg = t * g, tgl = product_error(t, g, tg);
        const B f = B(series[0]) + tg, fb = f - B(series[0]);
        const B fl = ((B(series[0]) - (f - fb)) + (tg - fb)) + tgl;
        const B hi = a * a, lo = product_error(a, a, hi);  // a^2 = hi + lo exactly
        // erfc(a) = exp(-hi) (1 - lo) f / (a + 4), and 1 / (a + 4) = q (1 + eq - ed q) to first
        // order, eq the rounding of q (exact). With (f + fl) q = p + pl and
        // exp(-hi) = (1 + w) 2^k: erfc(a) = (p + (p v + pl)) 2^k, v = (1 + w)(1 + c) - 1 and
        // c = eq - ed q - lo (w c matters: lo reaches 2^-53 a^2), one rounding where it matters.
        const B eq = residual(B(1.0), d, q);
        const B p = f * q, pl = multiply_add(fl, q, product_error(f, q, p));
        const ExpParts<B> e = exp_double_nonpositive(-hi);
        const B v = multiply_add(eq - multiply_add(ed, q, lo), B(1.0) + e.w, e.w);
        B big = (p + multiply_add(p, v, pl)) * e.scale1 * e.scale2;
        big = xsimd::select(a > B(27.3), B(0.0), big);
        big = xsimd::select(x < B(0.0), B(2.0) - big, big);
        r = xsimd::select(small, r, big);
    }
    return r;
}

/// erfc: doubles by erfc_double_simd (2.95 ulp over bench/ulp_error's sample, C's 3.32, at a
/// third of its time: C's was a call per lane, 13 ns); floats through it too, rounded once (0.50
/// ulp; C's erfcf 2.74).
struct Erfc {
    template <class T>
    static T scalar(T x) { return static_cast<T>(erfc_double_simd(batch<double>(static_cast<double>(x))).get(0)); }
    template <class B>
    static B simd(const B& x) {
        using T = typename B::value_type;
        if constexpr (std::is_same_v<T, double>) {
            return erfc_double_simd(x);
        } else {
            using D = batch<double>;
            alignas(64) T v[B::size];
            alignas(64) double w[D::size];
            x.store_aligned(v);
            for (std::size_t i = 0; i < B::size; i += D::size) {
                for (std::size_t j = 0; j < D::size; ++j) w[j] = static_cast<double>(v[i + j]);
                erfc_double_simd(D::load_aligned(w)).store_aligned(w);
                for (std::size_t j = 0; j < D::size; ++j) v[i + j] = static_cast<T>(w[j]);
            }
            return B::load_aligned(v);
        }
    }
};

// ------------------------------------------------------------------------------- binary functors

struct Add {
    template <class T>
    static T scalar(T a, T b) {
        if constexpr (std::is_integral_v<T>) return wrapping(a, b, [](auto x, auto y) { return x + y; });
        else return a + b;
    }
    template <class B>
    static B simd(const B& a, const B& b) { return a + b; }
};
struct Sub {
    template <class T>
    static T scalar(T a, T b) {
        if constexpr (std::is_integral_v<T>) return wrapping(a, b, [](auto x, auto y) { return x - y; });
        else return a - b;
    }
    template <class B>
    static B simd(const B& a, const B& b) { return a - b; }
};
struct Mul {
    template <class T>
    static T scalar(T a, T b) {
        if constexpr (std::is_integral_v<T>) return wrapping(a, b, [](auto x, auto y) { return x * y; });
        else return a * b;
    }
    template <class B>
    static B simd(const B& a, const B& b) { return a * b; }
};
struct Div {
    template <class T>
    static T scalar(T a, T b) { return a / b; }  // floating only (true division)
    template <class B>
    static B simd(const B& a, const B& b) { return a / b; }
};
struct Pow {
    template <class T>
    static T scalar(T a, T b) {
        if constexpr (std::is_floating_point_v<T>) return shared::lt_pow(a, b);
        else return shared::lt_ipow(a, b);
    }
    template <class B>
    static B simd(const B& a, const B& b) {
        // exp(b log a) for a > 0: float lanes compute it in double, which keeps the result
        // correctly rounded (within 1 ulp) over float's whole range, subnormals and results near
        // FLT_MAX included (in float, b log a loses |b log a| ulp and xsimd::exp flushes and
        // overflows early: pow(0.1f, 40) was 0). Double lanes use the patched Exp and Log (C's
        // range, subnormal bases) and keep exp's amplified error, about |b log a| ulp.
        // xsimd::pow misses C's special cases (pow(x, 0) = 1, pow(1, y) = 1, zero, infinite and
        // negative bases); lanes with such inputs take std::pow.
        using T = typename B::value_type;
        B r;
        if constexpr (std::is_same_v<T, float>) r = exp_log_in_double(a, b);
        else r = Exp::simd(b * Log::simd(a));
        // The common exponents are exact: squares, reciprocals, square roots (as in scalar()).
        r = xsimd::select(b == B(T(2)), a * a, r);
        r = xsimd::select(b == B(T(1)), a, r);
        r = xsimd::select(b == B(T(-1)), B(T(1)) / a, r);
        r = xsimd::select(b == B(T(0.5)), xsimd::sqrt(a), r);
        const auto special = (a <= B(T(0))) || (a == B(T(1))) || xsimd::isinf(a) || xsimd::isnan(a) ||
                             (b == B(T(0))) || xsimd::isinf(b) || xsimd::isnan(b);
        if (!xsimd::any(special)) return r;
        alignas(64) T va[B::size], vb[B::size], vr[B::size];
        a.store_aligned(va);
        b.store_aligned(vb);
        r.store_aligned(vr);
        for (std::size_t i = 0; i < B::size; ++i)
            if (!(va[i] > T(0)) || va[i] == T(1) || !std::isfinite(va[i]) || vb[i] == T(0) || !std::isfinite(vb[i]))
                vr[i] = scalar(va[i], vb[i]);
        return B::load_aligned(vr);
    }
    /// exp(b log a) of float lanes (a > 0 finite, b finite), computed in double and rounded
    /// once. A float is never a subnormal double, and xsimd's double exp gives 0 and inf beyond
    /// its range, as float needs (b log a outside [-104, 89] is 0 or inf in float).
    template <class B>
    static B exp_log_in_double(const B& a, const B& b) {
        using D = batch<double>;
        static_assert(B::size % D::size == 0, "double batches must tile a float batch");
        alignas(64) float fa[B::size], fb[B::size];
        alignas(64) double da[B::size], db[B::size];
        a.store_aligned(fa);
        b.store_aligned(fb);
        for (std::size_t i = 0; i < B::size; ++i) da[i] = fa[i], db[i] = fb[i];
        for (std::size_t k = 0; k < B::size; k += D::size)
            xsimd::exp(D::load_aligned(db + k) * xsimd::log(D::load_aligned(da + k))).store_aligned(da + k);
        for (std::size_t i = 0; i < B::size; ++i) fa[i] = static_cast<float>(da[i]);
        return B::load_aligned(fa);
    }
};
// b where it wins or is NaN, else a: NaN in a propagates, and ties (-0 and +0) give the first
// operand, as NumPy and PyTorch do.
struct Maximum {
    template <class T>
    static T scalar(T a, T b) { return (b > a || is_nan(b)) ? b : a; }
    template <class B>
    static B simd(const B& a, const B& b) { return xsimd::select((b > a) || xsimd::isnan(b), b, a); }  // xsimd != is ordered
};
struct Minimum {
    template <class T>
    static T scalar(T a, T b) { return (b < a || is_nan(b)) ? b : a; }
    template <class B>
    static B simd(const B& a, const B& b) { return xsimd::select((b < a) || xsimd::isnan(b), b, a); }
};
// Comparisons; simd() gives the lanes' mask. (xsimd's != is ordered: NaN != NaN would be false.)
struct Lt {
    template <class T> static bool scalar(T a, T b) { return a < b; }
    template <class B> static auto simd(const B& a, const B& b) { return a < b; }
};
struct Le {
    template <class T> static bool scalar(T a, T b) { return a <= b; }
    template <class B> static auto simd(const B& a, const B& b) { return a <= b; }
};
struct Gt {
    template <class T> static bool scalar(T a, T b) { return a > b; }
    template <class B> static auto simd(const B& a, const B& b) { return a > b; }
};
struct Ge {
    template <class T> static bool scalar(T a, T b) { return a >= b; }
    template <class B> static auto simd(const B& a, const B& b) { return a >= b; }
};
struct Eq {
    template <class T> static bool scalar(T a, T b) { return a == b; }
    template <class B> static auto simd(const B& a, const B& b) { return a == b; }
};
struct Ne {
    template <class T> static bool scalar(T a, T b) { return a != b; }
    template <class B> static auto simd(const B& a, const B& b) { return !(a == b); }
};

template <class Op>
inline constexpr bool is_comparison =
    std::is_same_v<Op, Lt> || std::is_same_v<Op, Le> || std::is_same_v<Op, Gt> || std::is_same_v<Op, Ge> ||
    std::is_same_v<Op, Eq> || std::is_same_v<Op, Ne>;


// Integer division and remainder: the shared functions (by 0 they give 0; INT_MIN by -1 wraps).
struct Fmod {
    // C's fmod: the result has the dividend's sign (integers: C's truncated %).
    template <class T>
    static T scalar(T a, T b) {
        if constexpr (std::is_floating_point_v<T>) return std::fmod(a, b);
        else return shared::lt_ifmod(a, b);
    }
    template <class B>
    static B simd(const B& a, const B& b) {
        return lanewise(a, b, [](auto x, auto y) { return std::fmod(x, y); });
    }
};
struct TruncDiv {  // integers: C's truncated /
    template <class T>
    static T scalar(T a, T b) { return shared::lt_idiv(a, b); }
};
// Bitwise ops: integers, or bool (logical and, or, xor).
struct BitAnd {
    template <class T>
    static T scalar(T a, T b) {
        if constexpr (std::is_same_v<T, bool>) return a && b;
        else return static_cast<T>(a & b);
    }
};
struct BitOr {
    template <class T>
    static T scalar(T a, T b) {
        if constexpr (std::is_same_v<T, bool>) return a || b;
        else return static_cast<T>(a | b);
    }
};
struct BitXor {
    template <class T>
    static T scalar(T a, T b) {
        if constexpr (std::is_same_v<T, bool>) return a != b;
        else return static_cast<T>(a ^ b);
    }
};
// Shifts: the shared functions (counts outside [0, bits) give 0, or -1 for >> of a negative).
struct Shl {
    template <class T>
    static T scalar(T a, T b) { return shared::lt_shl(a, b); }
};
struct Shr {
    template <class T>
    static T scalar(T a, T b) { return shared::lt_shr(a, b); }
};
struct Philox {  // integers; the random generator uses it on int64
    template <class T>
    static T scalar(T a, T b) {
        return static_cast<T>(philox_bits(static_cast<std::uint64_t>(a), static_cast<std::uint64_t>(b)));
    }
};
struct Atan2 {
    template <class T>
    static T scalar(T a, T b) { return std::atan2(a, b); }
    // xsimd's misses C's special cases (atan2(0, 0) is NaN there, not 0): C's for those lanes.
    template <class B>
    static B simd(const B& a, const B& b) {
        using T = typename B::value_type;
        const auto special = (a == B(T(0)) && b == B(T(0))) || xsimd::isinf(a) || xsimd::isinf(b);
        if (xsimd::any(special)) return lanewise(a, b, [](auto x, auto y) { return std::atan2(x, y); });
        return xsimd::atan2(a, b);
    }
};
struct Hypot {
    // xsimd's is sqrt(a^2 + b^2), which overflows and underflows: C's, lane by lane.
    template <class T>
    static T scalar(T a, T b) { return std::hypot(a, b); }
    template <class B>
    static B simd(const B& a, const B& b) { return lanewise(a, b, [](auto x, auto y) { return std::hypot(x, y); }); }
};
struct Copysign {
    template <class T>
    static T scalar(T a, T b) { return std::copysign(a, b); }
    template <class B>
    static B simd(const B& a, const B& b) { return xsimd::copysign(a, b); }
};
// Logical ops: any dtype, x != 0 is true (NaN too), bool results.
struct LogicalAnd { template <class T> static bool scalar(T a, T b) { return a != T(0) && b != T(0); } };
struct LogicalOr { template <class T> static bool scalar(T a, T b) { return a != T(0) || b != T(0); } };

/// Whether an op is defined for element type T (its TypeRule, applied to the computed type).
template <class T>
constexpr bool rule_allows(TypeRule rule) {
    switch (rule) {
        case TypeRule::Numeric:
        case TypeRule::Arith: return !std::is_same_v<T, bool>;
        case TypeRule::Floating:
        case TypeRule::TrueDiv: return std::is_floating_point_v<T>;
        case TypeRule::Ordered:
        case TypeRule::Compare:
        case TypeRule::Predicate: return true;
        case TypeRule::Bitwise: return std::is_integral_v<T>;  // bool included
        case TypeRule::Shift: return std::is_integral_v<T> && !std::is_same_v<T, bool>;
    }
    return false;
}

// -------------------------------------------------------------------------------------- loops

/// Writes a lane mask as bool bytes (0 or 1): one masked byte store on AVX-512 (BW and VL),
/// xsimd's lane-by-lane store elsewhere.
template <class T>
inline void store_bools(const xsimd::batch_bool<T, simd_arch>& mask, bool* dst) {
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    if constexpr (simd_is_avx512) {
        const __m128i bytes = _mm_maskz_set1_epi8(static_cast<__mmask16>(mask.data), 1);
        if constexpr (batch<T>::size == 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), bytes);
        else std::memcpy(dst, &bytes, batch<T>::size);
        return;
    }
#endif
    mask.store_unaligned(dst);
}

/// Bool bytes (any non-zero is true) as a lane mask of W lanes: AVX-512 only (BW and VL).
#if defined(__AVX512BW__) && defined(__AVX512VL__)
template <std::size_t W>
inline std::uint32_t load_bool_mask(const unsigned char* c) {
    __m128i bytes;
    if constexpr (W == 16) bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(c));
    else bytes = _mm_loadl_epi64(reinterpret_cast<const __m128i*>(c));
    return static_cast<std::uint32_t>(_mm_test_epi8_mask(bytes, bytes)) & ((std::uint32_t(1) << W) - 1);
}
#endif

using UnaryFn = void (*)(void* dst, const void* a, std::int64_t n);
using BinaryFn = void (*)(void* dst, const void* a, const void* b, std::int64_t n);
using WhereFn = void (*)(void* dst, const void* c, const void* a, const void* b, std::int64_t n);

template <class T, class Op, bool Predicate>
void unary_loop(void* dst, const void* src, std::int64_t n) {
    using Out = std::conditional_t<Predicate, bool, T>;
    Out* d = static_cast<Out*>(dst);
    const T* x = static_cast<const T*>(src);
    if constexpr (!Predicate && is_simd_float<T>) {
        constexpr std::int64_t W = batch<T>::size;
        std::int64_t i = 0;
        for (; i + W <= n; i += W) Op::simd(batch<T>::load_unaligned(x + i)).store_unaligned(d + i);
        if (i < n) {
            alignas(64) T tmp[W] = {};
            std::copy(x + i, x + n, tmp);
            Op::simd(batch<T>::load_aligned(tmp)).store_aligned(tmp);
            std::copy(tmp, tmp + (n - i), d + i);
        }
    } else {
        for (std::int64_t i = 0; i < n; ++i) d[i] = Op::scalar(x[i]);
    }
}

template <class T, class Op, bool Compare>
void binary_loop(void* dst, const void* lhs, const void* rhs, std::int64_t n) {
    const T* a = static_cast<const T*>(lhs);
    const T* b = static_cast<const T*>(rhs);
    if constexpr (Compare) {
        bool* d = static_cast<bool*>(dst);
        std::int64_t i = 0;
        if constexpr (is_simd_float<T> && is_comparison<Op>) {
            constexpr std::int64_t W = batch<T>::size;
            for (; i + W <= n; i += W) store_bools<T>(Op::simd(batch<T>::load_unaligned(a + i), batch<T>::load_unaligned(b + i)), d + i);
        }
        for (; i < n; ++i) d[i] = Op::scalar(a[i], b[i]);
    } else if constexpr (std::is_integral_v<T> && (std::is_same_v<Op, Maximum> || std::is_same_v<Op, Minimum>)) {
        // Integers and bool (a byte, 0 or 1: its maximum is "or"): xsimd's integer max and min.
        using U = std::conditional_t<std::is_same_v<T, bool>, std::uint8_t, T>;
        const U* x = reinterpret_cast<const U*>(a);
        const U* y = reinterpret_cast<const U*>(b);
        U* d = static_cast<U*>(dst);
        constexpr std::int64_t W = batch<U>::size;
        std::int64_t i = 0;
        for (; i + W <= n; i += W) {
            const batch<U> u = batch<U>::load_unaligned(x + i), v = batch<U>::load_unaligned(y + i);
            if constexpr (std::is_same_v<Op, Maximum>) xsimd::max(u, v).store_unaligned(d + i);
            else xsimd::min(u, v).store_unaligned(d + i);
        }
        for (; i < n; ++i) d[i] = static_cast<U>(Op::scalar(x[i], y[i]));
    } else if constexpr (is_simd_float<T>) {
        T* d = static_cast<T*>(dst);
        constexpr std::int64_t W = batch<T>::size;
        std::int64_t i = 0;
        for (; i + W <= n; i += W)
            Op::simd(batch<T>::load_unaligned(a + i), batch<T>::load_unaligned(b + i)).store_unaligned(d + i);
        if (i < n) {
            alignas(64) T ta[W] = {};
            alignas(64) T tb[W] = {};
            std::copy(a + i, a + n, ta);
            std::copy(b + i, b + n, tb);
            Op::simd(batch<T>::load_aligned(ta), batch<T>::load_aligned(tb)).store_aligned(ta);
            std::copy(ta, ta + (n - i), d + i);
        }
    } else {
        T* d = static_cast<T*>(dst);
        for (std::int64_t i = 0; i < n; ++i) d[i] = Op::scalar(a[i], b[i]);
    }
}

/// exp(a op b) in one pass, op one of Add, Sub, Mul (softmax's exp(x - max), sigmoid's and
/// logsumexp's): the intermediate never leaves the vector registers. `uniform` says which operand
/// is one value for every lane (0: neither, 1: a, 2: b), read once instead of at every lane.
using ExpOfBinaryFn = void (*)(void* dst, const void* a, const void* b, int uniform, std::int64_t n);

template <class T, class Op>
void exp_of_binary_loop(void* dst, const void* lhs, const void* rhs, int uniform, std::int64_t n) {
    static_assert(is_simd_float<T>);
    const T* a = static_cast<const T*>(lhs);
    const T* b = static_cast<const T*>(rhs);
    T* d = static_cast<T*>(dst);
    constexpr std::int64_t W = batch<T>::size;
    const std::int64_t step_a = uniform == 1 ? 0 : 1, step_b = uniform == 2 ? 0 : 1;
    auto operand = [](const T* p, std::int64_t step, std::int64_t i) {
        return step ? batch<T>::load_unaligned(p + i) : batch<T>(p[0]);
    };
    std::int64_t i = 0;
    for (; i + W <= n; i += W) Exp::simd(Op::simd(operand(a, step_a, i), operand(b, step_b, i))).store_unaligned(d + i);
    if (i < n) {
        alignas(64) T ta[W] = {};
        alignas(64) T tb[W] = {};
        for (std::int64_t t = i; t < n; ++t) {
            ta[t - i] = a[t * step_a];
            tb[t - i] = b[t * step_b];
        }
        Exp::simd(Op::simd(batch<T>::load_aligned(ta), batch<T>::load_aligned(tb))).store_aligned(ta);
        std::copy(ta, ta + (n - i), d + i);
    }
}

/// The fused loop for exp(a op b) in dtype t, or null where there is none.
inline ExpOfBinaryFn exp_of_binary_fn(BinaryOp op, DType t) {
    auto pick = [&](auto tag) -> ExpOfBinaryFn {
        using T = typename decltype(tag)::type;
        switch (op) {
            case BinaryOp::Add: return &exp_of_binary_loop<T, Add>;
            case BinaryOp::Sub: return &exp_of_binary_loop<T, Sub>;
            case BinaryOp::Mul: return &exp_of_binary_loop<T, Mul>;
            default: return nullptr;
        }
    };
    if (t == DType::Float32) return pick(type_tag<float>{});
    if (t == DType::Float64) return pick(type_tag<double>{});
    return nullptr;
}

/// Both operands are read at every lane and the condition as the byte a bool is (0 or 1), so
/// that the loop compiles to a blend: with a branch per element it was 0.7 ns an element on
/// random conditions, ten times an arithmetic op. Eight-byte values are blended as bits under
/// a mask (GCC 12 does not vectorize a select of them by a byte: 0.76 ns an element, now 0.18).
template <class T>
void where_loop(void* dst, const void* cond, const void* lhs, const void* rhs, std::int64_t n) {
    const unsigned char* c = static_cast<const unsigned char*>(cond);
    std::int64_t start = 0;
#if defined(__AVX512BW__) && defined(__AVX512VL__)
    if constexpr (simd_is_avx512 && (sizeof(T) == 8 || sizeof(T) == 4)) {
        // A mask from the condition bytes, then one blend per 64 bytes of values.
        constexpr std::int64_t W = 64 / sizeof(T);
        const char* a = static_cast<const char*>(lhs);
        const char* b = static_cast<const char*>(rhs);
        char* d = static_cast<char*>(dst);
        for (; start + W <= n; start += W) {
            const std::uint32_t m = load_bool_mask<W>(c + start);
            const __m512i x = _mm512_loadu_si512(a + start * static_cast<std::int64_t>(sizeof(T)));
            const __m512i y = _mm512_loadu_si512(b + start * static_cast<std::int64_t>(sizeof(T)));
            const __m512i r = sizeof(T) == 8 ? _mm512_mask_blend_epi64(static_cast<__mmask8>(m), y, x)
                                             : _mm512_mask_blend_epi32(static_cast<__mmask16>(m), y, x);
            _mm512_storeu_si512(d + start * static_cast<std::int64_t>(sizeof(T)), r);
        }
    }
#endif
    if constexpr (sizeof(T) == 8) {
        char* d = static_cast<char*>(dst);
        const char* a = static_cast<const char*>(lhs);
        const char* b = static_cast<const char*>(rhs);
        for (std::int64_t i = start; i < n; ++i) {
            std::uint64_t x, y;
            std::memcpy(&x, a + i * 8, 8);
            std::memcpy(&y, b + i * 8, 8);
            const std::uint64_t m = std::uint64_t(0) - std::uint64_t(c[i] != 0), r = (x & m) | (y & ~m);
            std::memcpy(d + i * 8, &r, 8);
        }
    } else {
        T* d = static_cast<T*>(dst);
        const T* a = static_cast<const T*>(lhs);
        const T* b = static_cast<const T*>(rhs);
        for (std::int64_t i = start; i < n; ++i) {
            const T x = a[i], y = b[i];
            d[i] = c[i] ? x : y;
        }
    }
}

template <class To, class From>
void cast_loop(void* dst, const void* src, std::int64_t n) {
    To* d = static_cast<To*>(dst);
    const From* x = static_cast<const From*>(src);
    for (std::int64_t i = 0; i < n; ++i) d[i] = convert<To>(x[i]);
}

/// A cast to float16: rounds to half precision; the result stays a float register.
template <class From>
void round_to_half_loop(void* dst, const void* src, std::int64_t n) {
    float* d = static_cast<float*>(dst);
    const From* x = static_cast<const From*>(src);
    for (std::int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(half(x[i]));
}

/// A cast to bfloat16: rounds to bfloat16 precision (nearest even, NaN kept quiet); the result
/// stays a float register.
template <class From>
void round_to_bfloat16_loop(void* dst, const void* src, std::int64_t n) {
    float* d = static_cast<float*>(dst);
    const From* x = static_cast<const From*>(src);
    for (std::int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(bfloat16(x[i]));
}

/// n copies of one value (a broadcast per row, a scalar's register), in SIMD stores of its bits:
/// `-O2` leaves std::fill scalar, a tenth of a softmax's time.
template <class T>
void fill_loop(void* dst, const void* value, std::int64_t n) {
    using U = std::conditional_t<sizeof(T) == 1, std::uint8_t,
                                 std::conditional_t<sizeof(T) == 2, std::uint16_t,
                                                    std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>>;
    static_assert(sizeof(U) == sizeof(T));
    U v;
    std::memcpy(&v, value, sizeof(T));
    U* d = static_cast<U*>(dst);
    constexpr std::int64_t W = batch<U>::size;
    const batch<U> all(v);
    std::int64_t i = 0;
    for (; i + W <= n; i += W) all.store_unaligned(d + i);
    for (; i < n; ++i) d[i] = v;
}

/// Copies into memory that will not be read soon, bypassing the caches (no read-for-ownership
/// of the destination, which is a third of the traffic of a streaming kernel). Needs a fence.
inline void stream_copy(char* to, const char* from, std::size_t bytes) {
#if defined(__SSE2__)
    std::size_t head = (16 - reinterpret_cast<std::uintptr_t>(to) % 16) % 16;
    if (head > bytes) head = bytes;
    std::memcpy(to, from, head);
    to += head;
    from += head;
    bytes -= head;
    for (; bytes >= 16; bytes -= 16, to += 16, from += 16)
        _mm_stream_si128(reinterpret_cast<__m128i*>(to), _mm_loadu_si128(reinterpret_cast<const __m128i*>(from)));
#endif
    std::memcpy(to, from, bytes);
}

inline void stream_fence() {
#if defined(__SSE2__)
    _mm_sfence();
#endif
}

// ------------------------------------------------------------------------------ function tables

// Tables are looked up by value dtype: float16 instructions compute on float registers.

inline UnaryFn unary_fn(UnaryOp op, DType t) {
    UnaryFn fn = nullptr;
    visit_value_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        switch (op) {
#define LAZYTENSOR_X(name, text, rule)                                                  \
    case UnaryOp::name:                                                                 \
        if constexpr (rule_allows<T>(TypeRule::rule))                                   \
            fn = &unary_loop<T, host::name, returns_bool(TypeRule::rule)>;              \
        break;
            LAZYTENSOR_UNARY_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
        }
    });
    return fn;
}

inline BinaryFn binary_fn(BinaryOp op, DType t) {
    BinaryFn fn = nullptr;
    visit_value_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        switch (op) {
#define LAZYTENSOR_X(name, text, rule)                                                         \
    case BinaryOp::name:                                                                       \
        if constexpr (rule_allows<T>(TypeRule::rule))                                          \
            fn = &binary_loop<T, host::name, returns_bool(TypeRule::rule)>;                    \
        break;
            LAZYTENSOR_BINARY_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
        }
    });
    return fn;
}

inline WhereFn where_fn(DType t) {
    return visit_value_dtype(t, [](auto tag) -> WhereFn { return &where_loop<typename decltype(tag)::type>; });
}

inline UnaryFn cast_fn(DType to, DType from) {
    if (to == DType::Float16)
        return visit_value_dtype(from, [](auto tag) -> UnaryFn { return &round_to_half_loop<typename decltype(tag)::type>; });
    if (to == DType::BFloat16)
        return visit_value_dtype(from, [](auto tag) -> UnaryFn { return &round_to_bfloat16_loop<typename decltype(tag)::type>; });
    return visit_value_dtype(to, [&](auto to_tag) {
        return visit_value_dtype(from, [&](auto from_tag) -> UnaryFn {
            return &cast_loop<typename decltype(to_tag)::type, typename decltype(from_tag)::type>;
        });
    });
}

inline UnaryFn fill_fn(DType t) {
    return visit_value_dtype(t, [](auto tag) -> UnaryFn { return &fill_loop<typename decltype(tag)::type>; });
}

// ---------------------------------------------------------------------------------- reductions

template <class T, ReduceOp R>
struct Reducer {
    static T identity() {
        if constexpr (R == ReduceOp::Sum) return T(0);
        else if constexpr (R == ReduceOp::Prod) return T(1);
        else if constexpr (R == ReduceOp::Max)
            return std::is_floating_point_v<T> ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
        else
            return std::is_floating_point_v<T> ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    }
    static T scalar(T acc, T v) {
        if constexpr (R == ReduceOp::Sum) return std::is_same_v<T, bool> ? T(acc || v) : Add::scalar(acc, v);
        else if constexpr (R == ReduceOp::Prod) return std::is_same_v<T, bool> ? T(acc && v) : Mul::scalar(acc, v);
        else if constexpr (R == ReduceOp::Max) return Maximum::scalar(acc, v);
        else return Minimum::scalar(acc, v);
    }
    /// Whether simd() exists: float and double for every op; int32 and int64 for sum (wrapping,
    /// as the scalar form), max and min (the argmax/argmin positions are int64 minima).
    static constexpr bool has_simd = is_simd_float<T> || ((std::is_same_v<T, std::int32_t> || std::is_same_v<T, std::int64_t>) &&
                                                          R != ReduceOp::Prod);
    template <class B>
    static B simd(const B& acc, const B& v) {
        if constexpr (R == ReduceOp::Sum) return acc + v;
        else if constexpr (R == ReduceOp::Prod) return acc * v;
        else if constexpr (R == ReduceOp::Max && !is_simd_float<T>) return xsimd::max(acc, v);
        else if constexpr (R == ReduceOp::Min && !is_simd_float<T>) return xsimd::min(acc, v);
        else if constexpr (R == ReduceOp::Max) return Maximum::simd(acc, v);
        else return Minimum::simd(acc, v);
    }
};

/// The reduction primitives of one (op, dtype): fill with identity, fold lanes, fold a vector.
struct ReduceFns {
    void (*init)(void* acc, std::int64_t n) = nullptr;
    void (*fold)(void* acc, const void* v, std::int64_t n) = nullptr;              // acc[i] op= v[i]
    void (*fold_broadcast)(void* acc, const void* v, std::int64_t n) = nullptr;    // acc[i] op= v[0]
    void (*horizontal)(void* acc, std::int64_t n, void* out) = nullptr;            // *out = op over acc[0..n)
    // Where there are SIMD batches (else null): acc[0..batch_lanes) op= v[0..n) folded to one batch
    // first, by 8 running batches and then pairwise; a row is reduced into one batch this way,
    // block by block, not into a block-wide accumulator (issue 17: per-row work).
    void (*fold_batches)(void* acc, const void* v, std::int64_t n) = nullptr;
    std::int64_t batch_lanes = 0;
};

template <class T, ReduceOp R>
ReduceFns reduce_fns_for() {
    using Red = Reducer<T, R>;
    ReduceFns f;
    f.init = [](void* acc, std::int64_t n) { std::fill_n(static_cast<T*>(acc), n, Red::identity()); };
    f.fold = [](void* accp, const void* vp, std::int64_t n) {
        T* acc = static_cast<T*>(accp);
        const T* v = static_cast<const T*>(vp);
        std::int64_t i = 0;
        if constexpr (Red::has_simd) {
            constexpr std::int64_t W = batch<T>::size;
            for (; i + W <= n; i += W)
                Red::simd(batch<T>::load_unaligned(acc + i), batch<T>::load_unaligned(v + i)).store_unaligned(acc + i);
        }
        for (; i < n; ++i) acc[i] = Red::scalar(acc[i], v[i]);
    };
    f.fold_broadcast = [](void* accp, const void* vp, std::int64_t n) {
        T* acc = static_cast<T*>(accp);
        const T v = *static_cast<const T*>(vp);
        std::int64_t i = 0;
        if constexpr (Red::has_simd) {
            constexpr std::int64_t W = batch<T>::size;
            const batch<T> vb(v);
            for (; i + W <= n; i += W) Red::simd(batch<T>::load_unaligned(acc + i), vb).store_unaligned(acc + i);
        }
        for (; i < n; ++i) acc[i] = Red::scalar(acc[i], v);
    };
    if constexpr (Red::has_simd) {
        f.batch_lanes = batch<T>::size;
        f.fold_batches = [](void* accp, const void* vp, std::int64_t n) {
            using B = batch<T>;
            constexpr std::int64_t W = B::size;
            const T* v = static_cast<const T*>(vp);
            const B identity(Red::identity());
            B r0 = identity, r1 = identity, r2 = identity, r3 = identity, r4 = identity, r5 = identity, r6 = identity,
              r7 = identity;
            std::int64_t i = 0;
            for (; i + 8 * W <= n; i += 8 * W) {
                r0 = Red::simd(r0, B::load_unaligned(v + i));
                r1 = Red::simd(r1, B::load_unaligned(v + i + W));
                r2 = Red::simd(r2, B::load_unaligned(v + i + 2 * W));
                r3 = Red::simd(r3, B::load_unaligned(v + i + 3 * W));
                r4 = Red::simd(r4, B::load_unaligned(v + i + 4 * W));
                r5 = Red::simd(r5, B::load_unaligned(v + i + 5 * W));
                r6 = Red::simd(r6, B::load_unaligned(v + i + 6 * W));
                r7 = Red::simd(r7, B::load_unaligned(v + i + 7 * W));
            }
            for (; i + W <= n; i += W) r0 = Red::simd(r0, B::load_unaligned(v + i));
            if (i < n) {
                alignas(64) T tail[W];
                std::fill_n(tail, W, Red::identity());
                std::copy(v + i, v + n, tail);
                r1 = Red::simd(r1, B::load_aligned(tail));
            }
            r0 = Red::simd(Red::simd(Red::simd(r0, r4), Red::simd(r2, r6)), Red::simd(Red::simd(r1, r5), Red::simd(r3, r7)));
            T* acc = static_cast<T*>(accp);
            Red::simd(B::load_unaligned(acc), r0).store_unaligned(acc);
        };
    }
    f.horizontal = [](void* accp, std::int64_t n, void* out) {
        // Pairwise: halves the rounding error growth of a running sum.
        T* acc = static_cast<T*>(accp);
        if (n <= 0) {
            *static_cast<T*>(out) = Red::identity();
            return;
        }
        // Explicit batches, not the auto-vectorizer's: -O2 does not vectorize this loop (issue 17).
        while (n > 1) {
            const std::int64_t half = n / 2;  // acc[i] op= acc[n - half + i]: the ranges never overlap
            std::int64_t i = 0;
            if constexpr (Red::has_simd) {
                constexpr std::int64_t W = batch<T>::size;
                for (; i + W <= half; i += W)
                    Red::simd(batch<T>::load_unaligned(acc + i), batch<T>::load_unaligned(acc + n - half + i))
                        .store_unaligned(acc + i);
            }
            for (; i < half; ++i) acc[i] = Red::scalar(acc[i], acc[n - half + i]);
            n -= half;
        }
        *static_cast<T*>(out) = acc[0];
    };
    return f;
}

inline ReduceFns reduce_fns(ReduceOp op, DType t) {
    return visit_value_dtype(t, [&](auto tag) {
        using T = typename decltype(tag)::type;
        switch (op) {
#define LAZYTENSOR_X(name, text) \
    case ReduceOp::name: return reduce_fns_for<T, ReduceOp::name>();
            LAZYTENSOR_REDUCE_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
        }
        return ReduceFns{};
    });
}

}  // namespace lazytensor::detail::host

LAZYTENSOR_XSIMD_WARNINGS_ON
