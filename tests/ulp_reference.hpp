// SPDX-License-Identifier: MIT
// Accuracy in ulps of the floating element-wise functions, against an independent reference in
// long double (x86's 80-bit format: 11 more bits than double, so the reference's own error is
// below 0.001 ulp of a double result). Shared by bench/ulp_error.cpp (the dense measurement
// behind docs/numerics.md's accuracy table) and tests/test_ulp.cpp (the asserted bounds), so that both
// sample, evaluate and count ulps the same way.
//
// One ulp is the spacing of T at the correctly rounded result r = T(reference): 2^(e - p + 1)
// for |r| in [2^e, 2^(e+1)), 2^-149 (float) or 2^-1074 (double) where r is subnormal or zero,
// and the spacing at the largest finite value where r overflows. An infinite result where the
// reference is finite counts as 2^(emax+1), the next value after the largest finite one.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <lazytensor.hpp>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

namespace ulp_ref {

namespace lt = lazytensor;
using LD = long double;
static_assert(std::numeric_limits<LD>::digits >= 64, "the reference needs x86's 80-bit long double");

// ------------------------------------------------------------------------------- the functions

/// The element-wise floating functions of the library (README's "functions" and the floating
/// arithmetic with a rounding of its own); `binary` ones take two operands.
struct Function {
    const char* name;
    bool binary;
    // The dense linear range of arguments where the function is not constant (float, double).
    double lin_lo_f, lin_hi_f, lin_lo_d, lin_hi_d;
};

inline const std::vector<Function>& functions() {
    static const std::vector<Function> list = {
        {"exp", false, -104, 89, -746, 710},       {"exp2", false, -150, 128, -1075, 1024},
        {"log", false, 0, 4, 0, 4},                {"log2", false, 0, 4, 0, 4},
        {"sqrt", false, 0, 4, 0, 4},               {"rsqrt", false, 0, 4, 0, 4},
        {"reciprocal", false, -4, 4, -4, 4},       {"sin", false, -10, 10, -10, 10},
        {"cos", false, -10, 10, -10, 10},          {"tan", false, -10, 10, -10, 10},
        {"tanh", false, -10, 10, -20, 20},         {"sigmoid", false, -105, 20, -746, 40},
        {"silu", false, -105, 20, -746, 40},       {"gelu", false, -15, 10, -40, 10},
        {"div", true, -10, 10, -10, 10},           {"pow", true, 0, 4, 0, 4},
        {"fmod", true, -10, 10, -10, 10},          {"remainder", true, -10, 10, -10, 10},
        {"log1p", false, -1, 4, -1, 4},            {"expm1", false, -20, 89, -40, 710},
        {"erf", false, -6, 6, -6, 6},              {"erfc", false, -6, 11, -6, 28},
        {"asin", false, -1, 1, -1, 1},             {"acos", false, -1, 1, -1, 1},
        {"atan", false, -10, 10, -10, 10},         {"sinh", false, -90, 90, -711, 711},
        {"cosh", false, -90, 90, -711, 711},       {"asinh", false, -100, 100, -100, 100},
        {"acosh", false, 1, 100, 1, 100},          {"atanh", false, -1, 1, -1, 1},
        {"atan2", true, -10, 10, -10, 10},         {"hypot", true, -10, 10, -10, 10},
        {"copysign", true, -10, 10, -10, 10},
    };
    return list;
}

inline LD gelu_ref(LD x) {
    // 0.5 x erfc(-x / sqrt(2)): erfc, not 1 + erf, keeps the tail where 1 + erf cancels. The
    // argument x / sqrt(2) is rounded in long double; its residual du (from the rounding of the
    // product and of the constant) is added back to first order, as erfc'(v) du, because erfc
    // magnifies a relative error of the argument by 2 v^2 (about 3000 at double's tail).
    if (std::isinf(x)) return x > 0 ? x : -0.0L;
    static const LD c = 0.707106781186547524400844362104849039284836L;
    static const LD c_lo = -std::fma(c, c, -0.5L) / (2 * c);  // 1/sqrt(2) - c
    const LD u = x * c, du = std::fma(x, c, -u) + x * c_lo;
    const LD v = -u;  // erfc's argument, exactly v - du
    const LD two_over_sqrt_pi = 1.128379167095512573896158903121545172L;
    return 0.5L * x * (std::erfc(v) + two_over_sqrt_pi * std::exp(-v * v) * du);
}

/// The reference value of function `name` at (a, b), in long double.
inline LD reference(const std::string& name, LD a, LD b = 0) {
    if (name == "exp") return std::exp(a);
    if (name == "exp2") return std::exp2(a);
    if (name == "log") return std::log(a);
    if (name == "log2") return std::log2(a);
    if (name == "sqrt") return std::sqrt(a);
    if (name == "rsqrt") return 1 / std::sqrt(a);
    if (name == "reciprocal") return 1 / a;
    if (name == "sin") return std::sin(a);
    if (name == "cos") return std::cos(a);
    if (name == "tan") return std::tan(a);
    if (name == "tanh") return std::tanh(a);
    if (name == "sigmoid") return 1 / (1 + std::exp(-a));
    if (name == "silu") return a == -INFINITY ? -0.0L : a / (1 + std::exp(-a));
    if (name == "gelu") return gelu_ref(a);
    if (name == "div") return a / b;
    if (name == "pow") return std::pow(a, b);
    if (name == "fmod") return std::fmod(a, b);  // exact
    if (name == "remainder") {                   // NumPy's %: the divisor's sign
        const LD r = std::fmod(a, b);
        if (b == 0) return r;
        if (r == 0) return std::copysign(0.0L, b);
        return (r < 0) != (b < 0) ? r + b : r;
    }
    if (name == "log1p") return std::log1p(a);
    if (name == "expm1") return std::expm1(a);
    if (name == "erf") return std::erf(a);
    if (name == "erfc") return std::erfc(a);
    if (name == "asin") return std::asin(a);
    if (name == "acos") return std::acos(a);
    if (name == "atan") return std::atan(a);
    if (name == "sinh") return std::sinh(a);
    if (name == "cosh") return std::cosh(a);
    if (name == "asinh") return std::asinh(a);
    if (name == "acosh") return std::acosh(a);
    if (name == "atanh") return std::atanh(a);
    if (name == "atan2") return std::atan2(a, b);
    if (name == "hypot") return std::hypot(a, b);
    if (name == "copysign") return std::copysign(a, b);
    return NAN;
}

/// The library's result of `name` at each (a[i], b[i]) on `device`, as one expression template
/// (a compiled loop on the host unless compiled loops are switched off).
template <class T>
lt::Tensor<T> evaluate(const std::string& name, const lt::Tensor<T>& a, const lt::Tensor<T>& b) {
    if (name == "exp") return lt::exp(a);
    if (name == "exp2") return lt::exp2(a);
    if (name == "log") return lt::log(a);
    if (name == "log2") return lt::log2(a);
    if (name == "sqrt") return lt::sqrt(a);
    if (name == "rsqrt") return lt::rsqrt(a);
    if (name == "reciprocal") return lt::reciprocal(a);
    if (name == "sin") return lt::sin(a);
    if (name == "cos") return lt::cos(a);
    if (name == "tan") return lt::tan(a);
    if (name == "tanh") return lt::tanh(a);
    if (name == "sigmoid") return lt::sigmoid(a);
    if (name == "silu") return lt::silu(a);
    if (name == "gelu") return lt::gelu(a);
    if (name == "div") return a / b;
    if (name == "pow") return lt::pow(a, b);
    if (name == "fmod") return lt::fmod(a, b);
    if (name == "remainder") return lt::remainder(a, b);
    if (name == "log1p") return lt::log1p(a);
    if (name == "expm1") return lt::expm1(a);
    if (name == "erf") return lt::erf(a);
    if (name == "erfc") return lt::erfc(a);
    if (name == "asin") return lt::asin(a);
    if (name == "acos") return lt::acos(a);
    if (name == "atan") return lt::atan(a);
    if (name == "sinh") return lt::sinh(a);
    if (name == "cosh") return lt::cosh(a);
    if (name == "asinh") return lt::asinh(a);
    if (name == "acosh") return lt::acosh(a);
    if (name == "atanh") return lt::atanh(a);
    if (name == "atan2") return lt::atan2(a, b);
    if (name == "hypot") return lt::hypot(a, b);
    if (name == "copysign") return lt::copysign(a, b);
    throw std::invalid_argument("ulp_ref::evaluate: unknown function " + name);
}

// ------------------------------------------------------------------------------------ the ulp

template <class T>
using Bits = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;

template <class T>
T from_bits(Bits<T> b) {
    T x;
    std::memcpy(&x, &b, sizeof x);
    return x;
}
template <class T>
Bits<T> to_bits(T x) {
    Bits<T> b;
    std::memcpy(&b, &x, sizeof b);
    return b;
}

/// The spacing of T at the correctly rounded result r (see the top of the file).
template <class T>
LD ulp_at(T r) {
    using L = std::numeric_limits<T>;
    if (std::isinf(r)) r = L::max();
    if (std::fabs(r) < L::min()) return static_cast<LD>(L::denorm_min());
    return std::ldexp(1.0L, std::ilogb(r) - (L::digits - 1));
}

/// The error of `got` in ulps of T against `ref`; infinite where one is NaN and the other not,
/// or where the result is infinite and the reference finite beyond rounding. A zero of the
/// wrong sign where the reference is an exact zero sets *zero_sign.
template <class T>
LD ulp_error(T got, LD ref, bool* zero_sign = nullptr) {
    using L = std::numeric_limits<T>;
    if (std::isnan(ref) || std::isnan(got)) return std::isnan(ref) && std::isnan(got) ? 0 : INFINITY;
    if (zero_sign) *zero_sign = ref == 0 && got == 0 && std::signbit(ref) != std::signbit(got);
    const T r = static_cast<T>(ref);
    if (std::isinf(r) && got == r) return 0;  // overflows, as it should
    if (std::isinf(ref)) return INFINITY;
    const LD beyond = std::ldexp(1.0L, L::max_exponent);  // 2^(emax+1)
    const LD g = std::isinf(got) ? std::copysign(beyond, static_cast<LD>(got)) : static_cast<LD>(got);
    return std::fabs(g - ref) / ulp_at(r);
}

// ------------------------------------------------------------------------------------ samples

/// Arguments of one function: a (and b for binary functions), in T.
template <class T>
struct Sample {
    std::vector<T> a, b;
    void add(T x, T y = T(0)) {
        a.push_back(x);
        b.push_back(y);
    }
    std::size_t size() const { return a.size(); }
};

/// Values every function is checked at: zeros, infinities, NaN, the subnormal and normal ends,
/// and small whole numbers and halves.
template <class T>
std::vector<T> special_values() {
    using L = std::numeric_limits<T>;
    std::vector<T> v = {T(0),       L::infinity(), L::quiet_NaN(), L::denorm_min(), T(2) * L::denorm_min(),
                        L::min(),   std::nextafter(L::min(), T(0)), L::max(), std::nextafter(L::max(), T(0)),
                        T(1),       std::nextafter(T(1), T(0)), std::nextafter(T(1), T(2)), T(0.5), T(2), T(3), T(10),
                        T(1e-8),    T(1e8)};
    const std::size_t n = v.size();
    for (std::size_t i = 0; i < n; ++i) v.push_back(-v[i]);
    return v;
}

/// Where a function changes regime: overflow and underflow thresholds, the library's own
/// switch points (simd_ops.hpp: exp's edges, TinyExp, tanh's 9, gelu's erf cut at 6 sqrt(2),
/// erfc's branches at 0.5 and 27.3),
/// the points where results become subnormal, and multiples of pi/2. Each is checked with its
/// neighbours a few ulp away.
template <class T>
std::vector<double> edges(const std::string& name) {
    const bool f = std::is_same_v<T, float>;
    const double lmax = std::log(double(std::numeric_limits<T>::max()));
    const double lmin = f ? std::log(0x1p-126) : std::log(0x1p-1022), lden = f ? std::log(0x1p-149) : -744.44007192138126;
    if (name == "exp") return {lmax, lmin, lden, f ? 88.0 : 709.0, f ? -87.0 : -708.0, 0};
    if (name == "exp2") return {128, -126, -149, 127, 1024, -1022, -1074, 1023, f ? 128.0 : 1024.0, 0};
    if (name == "sin" || name == "cos" || name == "tan") {
        // Near multiples of pi/2 the result needs pi/2 to many more bits than T has; the last
        // two are the arguments of binary32 and binary64 closest to a multiple of pi/2.
        std::vector<double> v = {1e22, f ? 3.0e38 : 1.7e308, f ? 0x1.f37c8ap+95 : 0x1.6ac5b262ca1ffp+849};
        for (double k : {1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0, 16.0, 17.0, 64.0, 100.0, 1000.0, 0x1p12, 0x1p16, 0x1p20, 0x1p24, 0x1p30})
            v.push_back(k * M_PI / 2);
        return v;
    }
    if (name == "tanh") return {9, -9, 0.55, 20, 22};
    if (name == "sigmoid" || name == "silu") return {f ? -80.0 : -700.0, f ? -87.0 : -708.0, lden, lden - 30, 36, 17};
    if (name == "gelu") return {6 * M_SQRT2, -6 * M_SQRT2, f ? -13.2 : -37.5, f ? -14.4 : -38.6};
    if (name == "log" || name == "log2" || name == "log1p") return {1, 0x1p-1022, 0x1p-126, -1};
    if (name == "expm1") return {lmax, f ? 88.0 : 709.0, -1e-5, 1e-5, 0.5, -0.5};
    if (name == "sinh" || name == "cosh") return {lmax + M_LN2, lmax, f ? 89.0 : 710.0, -(lmax + M_LN2)};
    if (name == "erf" || name == "erfc") return {6, -6, 0.5, -0.5, f ? 9.19 : 26.5, f ? 10.05 : 27.2, 27.3};
    if (name == "asin" || name == "acos" || name == "atanh") return {1, -1, 0.5, -0.5};
    if (name == "acosh") return {1, 2, 1e8};
    return {};
}

/// n arguments of function `fn` in T from `seed`: a quarter spread log-uniformly over all finite
/// values (uniform bit patterns: every binade, the subnormals included, equally likely; signs
/// random), half evenly spaced over the function's linear range, a quarter log-uniform within
/// [2^-8, 2^8]; then the special values (binary functions: every pair) and the edges with
/// neighbours. pow draws its exponent so that the result's binade is uniform over all of T's,
/// subnormal results and overflow included.
template <class T>
Sample<T> make_sample(const Function& fn, std::size_t n, unsigned seed) {
    using L = std::numeric_limits<T>;
    using U = Bits<T>;
    std::mt19937_64 gen(seed);
    const U max_bits = to_bits(L::max());
    std::uniform_int_distribution<U> all_bits(0, max_bits);
    std::uniform_int_distribution<U> mid_bits(to_bits(T(0x1p-8)), to_bits(T(0x1p8)));
    std::bernoulli_distribution coin;
    auto any_finite = [&] { return coin(gen) ? -from_bits<T>(all_bits(gen)) : from_bits<T>(all_bits(gen)); };
    auto mid = [&] { return coin(gen) ? -from_bits<T>(mid_bits(gen)) : from_bits<T>(mid_bits(gen)); };
    const bool f32 = std::is_same_v<T, float>;
    const double lo = f32 ? fn.lin_lo_f : fn.lin_lo_d, hi = f32 ? fn.lin_hi_f : fn.lin_hi_d;
    const std::string name = fn.name;
    Sample<T> s;
    s.a.reserve(n + 4096);
    s.b.reserve(n + 4096);
    const std::size_t quarter = n / 4, half = n / 2;
    if (name == "pow") {
        // a > 0 anywhere, b such that b log2(a) is uniform over [log2(min subnormal) - 2, emax + 2].
        const double tlo = L::min_exponent - L::digits - 2, thi = L::max_exponent + 2;
        std::uniform_real_distribution<double> target(tlo, thi), small_b(-8, 8), lin_a(0, 4);
        std::uniform_int_distribution<int> whole(f32 ? -40 : -300, f32 ? 40 : 300);
        for (std::size_t i = 0; i < half; ++i) {
            const T a = from_bits<T>(all_bits(gen));
            const double l = std::log2(double(a));
            s.add(a, l == 0 || !std::isfinite(l) ? T(small_b(gen)) : T(target(gen) / l));
        }
        for (std::size_t i = 0; i < quarter / 2; ++i) s.add(any_finite(), any_finite());   // mostly 0, 1 or inf
        for (std::size_t i = 0; i < quarter / 2; ++i) s.add(-std::fabs(mid()), T(whole(gen)));  // negative bases
        for (std::size_t i = 0; i < quarter; ++i) s.add(T(lin_a(gen)), T(small_b(gen)));
    } else {
        for (std::size_t i = 0; i < quarter; ++i) s.add(any_finite(), fn.binary ? any_finite() : T(0));
        for (std::size_t i = 0; i < half; ++i) {
            const T x = T(lo + (hi - lo) * (double(i) + 0.5) / double(half));
            s.add(x, fn.binary ? T(lo + (hi - lo) * double((i * 7919) % half) / double(half)) : T(0));
        }
        for (std::size_t i = 0; i < quarter; ++i) s.add(mid(), fn.binary ? mid() : T(0));
    }
    const std::vector<T> sp = special_values<T>();
    if (fn.binary) {
        for (T x : sp)
            for (T y : sp) s.add(x, y);
    } else {
        for (T x : sp) s.add(x);
        for (double e : edges<T>(name)) {
            for (double sign : {1.0, -1.0}) {
                T x = T(sign * e);
                if (!std::isfinite(x)) continue;
                for (int k = 0; k < 8; ++k) x = std::nextafter(x, -L::infinity());
                for (int k = 0; k < 17; ++k, x = std::nextafter(x, L::infinity())) s.add(x);
            }
        }
    }
    return s;
}

// ------------------------------------------------------------------------------------ results

/// The worst error of a function over a sample, and where it occurred.
template <class T>
struct Worst {
    LD ulps = 0;
    T a = 0, b = 0, got = 0;
    LD ref = 0;
    std::size_t points = 0;
};

/// Whether a reference result is a normal number of T (or zero), away from T's ends: the
/// range where a function is usually judged, without subnormal results or overflow.
template <class T>
bool normal_result(LD ref) {
    using L = std::numeric_limits<T>;
    return ref == 0 || (std::fabs(ref) >= L::min() && std::fabs(ref) <= L::max());
}

/// The worst errors over a sample: `all` of it, and `normal` where the arguments are finite
/// and the reference is a normal number or zero. `zero_sign` counts zeros of the wrong sign
/// where the reference is an exact zero (not in the ulps: 0 and -0 are 0 ulp apart).
template <class T>
struct Measured {
    Worst<T> all, normal;
    std::size_t zero_sign = 0;
    T zero_sign_a = 0;
};

template <class T>
Measured<T> measure(const Sample<T>& s, const std::vector<T>& got, const std::vector<LD>& ref) {
    Measured<T> m;
    m.all.points = s.size();
    for (std::size_t i = 0; i < s.size(); ++i) {
        bool zs = false;
        const LD e = ulp_error(got[i], ref[i], &zs);
        if (zs && !m.zero_sign++) m.zero_sign_a = s.a[i];
        const bool normal = std::isfinite(s.a[i]) && std::isfinite(s.b[i]) && normal_result<T>(ref[i]);
        for (Worst<T>* w : {&m.all, normal ? &m.normal : nullptr}) {
            if (!w) continue;
            if (w == &m.normal) ++w->points;
            if (e > w->ulps) *w = Worst<T>{e, s.a[i], s.b[i], got[i], ref[i], w->points};
        }
    }
    return m;
}

template <class T>
std::vector<LD> references(const std::string& name, const Sample<T>& s) {
    std::vector<LD> r(s.size());
    for (std::size_t i = 0; i < s.size(); ++i) r[i] = reference(name, s.a[i], s.b[i]);
    return r;
}

}  // namespace ulp_ref
