// The scalar semantics of the ops that are not one expression (sigmoid, gelu, integer pow,
// NumPy's remainder and floor division, shifts, ...), each written once, in the subset of C
// that is both C++ and OpenCL C. The host backend calls them as C++ templates
// (backend/host/simd_ops.hpp: the scalar forms, which the SIMD forms must agree with), and the
// OpenCL renderer pastes their text into its programs (backend/opencl/op_spellings.hpp). A
// body may use:
//   T              the value type (float, double, int, long, uchar; half computes as float)
//   U              the unsigned type integers wrap in (the value type for floating T)
//   LT_C(f, d)     a constant: f for float, d for double
//   LT_SIGNED      whether T is a signed type (floating included), 1 or 0: combine it with
//                  & and |, not && and || (Clang warns of a constant operand of those)
//   LT_NEG(v)      v < 0, written so that no compiler warns of it for unsigned T
//   LT_CALL(fn)    another shared function at the same T
// and the math functions of both languages (exp, erfc, fma, copysign, isnan, ...).
#pragma once

#include <cmath>
#include <type_traits>

namespace lazytensor::detail::shared {

using std::copysign;
using std::erfc;
using std::exp;
using std::fabs;
using std::floor;
using std::fma;
using std::fmod;
using std::isfinite;
using std::isnan;
using std::pow;
using std::sqrt;
using std::tanh;

/// A shared function as text, for the OpenCL renderer.
struct SharedFunction {
    const char* name;    // lt_sigmoid: OpenCL C names it lt_sigmoid_float, lt_sigmoid_double, ...
    const char* params;  // "(T x)"
    const char* body;
};

template <class T>
using wrap_type = typename std::conditional_t<std::is_integral_v<T>, std::make_unsigned<decltype(T{} + T{})>,
                                              std::common_type<T>>::type;

template <class T>
constexpr bool negative(T v) {
    if constexpr (std::is_signed_v<T> || std::is_floating_point_v<T>) return v < T(0);
    else return false;
}

#define LT_C(f, d) (sizeof(T) == 4 ? static_cast<T>(f) : static_cast<T>(d))
#define LT_SIGNED (std::is_signed_v<T> || std::is_floating_point_v<T>)
#define LT_NEG(v) ::lazytensor::detail::shared::negative<T>(v)
#define LT_CALL(fn) fn<T>

// Defines template function `name` and `name##_text`, its text.
#define LAZYTENSOR_SHARED_FUNCTION(name, params, ...)                           \
    template <class T, class U = wrap_type<T>>                                  \
    inline T name params {                                                      \
        __VA_ARGS__                                                             \
    }                                                                           \
    inline constexpr SharedFunction name##_text{#name, #params, #__VA_ARGS__};

// ------------------------------------------------------------------------------- floating

// tanh is +-1 where it rounds to it: from |x| = 9 in float and 20 in double (PoCL's float
// tanh(20) was 0.99999994, within OpenCL's 5 ulp).
LAZYTENSOR_SHARED_FUNCTION(lt_tanh, (T x), return fabs(x) >= LT_C(9.0f, 20.0) ? copysign((T)1, x) : tanh(x);)

// sigmoid and silu stay exact where their results are tiny or subnormal: e = exp(-|x|) never
// overflows (sigmoid(x) is 1 / (1 + e) for x >= 0 and e / (1 + e) below), and where e itself
// would be subnormal (below -80 in float, -700 in double) it is exp(x + shift) * exp(-shift),
// the shift exact and the product rounded once, so that x * e keeps its precision
// (silu(-105.f) is -2.66e-44, not -0). The host's SIMD forms use the same constants (TinyExp).
LAZYTENSOR_SHARED_FUNCTION(lt_sigmoid, (T x),
    const T a = -fabs(x);
    const T e = a >= LT_C(-80.0f, -700.0) ? exp(a)
                                          : exp(a + LT_C(64.0f, 512.0)) * LT_C(0x1.969d48p-93f, 0x1.44109edb20931p-739);
    return (x >= (T)0 ? (T)1 : e) / ((T)1 + e);)

// x sigmoid(x); its limit -0 at -inf, not -inf * 0.
LAZYTENSOR_SHARED_FUNCTION(lt_silu, (T x),
    if (x == -(T)INFINITY) return -(T)0;
    if (x < LT_C(-80.0f, -700.0))
        return (x * exp(x + LT_C(64.0f, 512.0))) * LT_C(0x1.969d48p-93f, 0x1.44109edb20931p-739);
    return x * LT_CALL(lt_sigmoid)(x);)

// gelu is 0.5 x erfc(-x / sqrt(2)): PyTorch's exact form 0.5 x (1 + erf(x / sqrt(2))) without its
// cancellation below 0 (in float that gave -0 from x = -5.9 on, where gelu(-7.8f) is -2.8e-14).
// Where erfc is steep, the rounding of z = -x / sqrt(2) is put back to first order
// (erfc(z + dz) = erfc(z) - dz 2/sqrt(pi) exp(-z^2)), and below -10 (float) or -37 (double),
// where erfc nears the subnormals, gelu(x) = -phi(x) S(1 / x^2) with phi the normal density, S
// erfc's asymptotic series (7 terms: within 0.2 ulp there) and x^2 split exactly (fma), exp
// scaled as in lt_sigmoid and the product rounded once. gelu rounds to -0 well before -20 (-50).
LAZYTENSOR_SHARED_FUNCTION(lt_gelu, (T x),
    if (x < LT_C(-20.0f, -50.0)) return -(T)0;
    if (x < LT_C(-10.0f, -37.0)) {
        const T hi = x * x, lo = fma(x, x, -hi), t = (T)1 / hi;
        const T s = (T)1 + t * ((T)-1 + t * ((T)3 + t * ((T)-15 + t * ((T)105 + t * ((T)-945 + t * (T)10395)))));
        const T e = exp((T)-0.5 * hi + LT_C(64.0f, 512.0)) * ((T)1 - (T)0.5 * lo);
        return -((T)0.3989422804014327 * s * e) * LT_C(0x1.969d48p-93f, 0x1.44109edb20931p-739);
    }
    const T c = (T)0.70710678118654752440;  // 1 / sqrt(2), rounded; the rest below
    const T z = -x * c;
    if (!(x < (T)0)) return (T)0.5 * x * erfc(z);
    const T dz = fma(-x, c, -z) - x * LT_C(1.210161710447897e-08f, -4.833646656726457e-17);
    return (T)0.5 * x * (erfc(z) - dz * (T)1.1283791670955126 * exp(-z * z));)

// The common exponents exactly (squares, reciprocals, square roots), whatever the base's sign:
// pow need not round them correctly (glibc's powf(-1.33506155f, 2) is 1 ulp off a * a, NVIDIA's
// pow(0.1f, 1) is 0.100000009).
LAZYTENSOR_SHARED_FUNCTION(lt_pow, (T a, T b),
    if (b == (T)2) return a * a;
    if (b == (T)1) return a;
    if (b == (T)-1) return (T)1 / a;
    if (b == (T)0.5 && a > (T)0 && isfinite(a)) return sqrt(a);
    return pow(a, b);)

// NumPy's %: the result has the divisor's sign. As NumPy's divmod: fmod (exact), plus b where
// the signs differ; a zero result takes b's sign.
LAZYTENSOR_SHARED_FUNCTION(lt_mod, (T a, T b),
    const T r = fmod(a, b);
    if (b == (T)0) return r;
    if (r == (T)0) return copysign((T)0, b);
    return (r < (T)0) != (b < (T)0) ? r + b : r;)

// NumPy's //: the floor of the exact quotient, as NumPy's divmod (and Python's //):
// (a - fmod(a, b)) / b is a whole number up to rounding, so 1 // 0.1 is 9, where floor(1 / 0.1)
// would be 10; a zero quotient keeps the sign of a / b.
LAZYTENSOR_SHARED_FUNCTION(lt_floordiv, (T a, T b),
    if (b == (T)0) return a / b;
    const T m = fmod(a, b);
    T d = (a - m) / b;
    if (m != (T)0 && (b < (T)0) != (m < (T)0)) d -= (T)1;
    if (d == (T)0) return copysign((T)0, a / b);
    const T f = floor(d);
    return d - f > (T)0.5 ? f + (T)1 : f;)

// -------------------------------------------------------------------------------- integers
// Arithmetic wraps (in U); division and remainder by 0 give 0 (NumPy's result; it only warns)
// and INT_MIN by -1 wraps: nothing is undefined behaviour.

// Power by squaring; negative exponents give 0, except for the bases 1 and -1.
LAZYTENSOR_SHARED_FUNCTION(lt_ipow, (T a, T b),
    if (LT_NEG(b)) return a == (T)1 ? (T)1 : (LT_SIGNED & (a == (T)-1)) ? ((b & (T)1) ? (T)-1 : (T)1) : (T)0;
    U r = 1, base = (U)a;
    for (U e = (U)b; e; e >>= 1) {
        if (e & 1) r *= base;
        base *= base;
    }
    return (T)r;)

// C's truncated %: the dividend's sign.
LAZYTENSOR_SHARED_FUNCTION(lt_ifmod, (T a, T b),
    if ((b == (T)0) | (LT_SIGNED & (b == (T)-1))) return (T)0;
    return (T)(a % b);)

// NumPy's %: the divisor's sign (|r| < |b|: r + b does not overflow).
LAZYTENSOR_SHARED_FUNCTION(lt_imod, (T a, T b),
    const T r = LT_CALL(lt_ifmod)(a, b);
    return r != (T)0 && LT_NEG(r) != LT_NEG(b) ? (T)(r + b) : r;)

// NumPy's //: the floor of the quotient.
LAZYTENSOR_SHARED_FUNCTION(lt_ifloordiv, (T a, T b),
    if (b == (T)0) return (T)0;
    if (LT_SIGNED & (b == (T)-1)) return (T)((U)0 - (U)a);
    const T q = (T)(a / b);
    return (T)(a % b) != (T)0 && LT_NEG(a) != LT_NEG(b) ? (T)(q - (T)1) : q;)

// Shifts by a count outside [0, bits of T): << gives 0, >> gives 0 or -1 (the sign), as if
// shifting one bit at a time. >> of a negative value is arithmetic.
LAZYTENSOR_SHARED_FUNCTION(lt_shl, (T a, T b),
    if (LT_NEG(b) || b >= (T)(8 * sizeof(T))) return (T)0;
    return (T)((U)a << b);)

LAZYTENSOR_SHARED_FUNCTION(lt_shr, (T a, T b),
    if (LT_NEG(b) || b >= (T)(8 * sizeof(T))) return LT_NEG(a) ? (T)-1 : (T)0;
    return LT_NEG(a) ? (T)~(~a >> b) : (T)(a >> b);)

/// Every shared function, for the renderer to find the ones a spelling calls.
inline constexpr const SharedFunction* all_shared_functions[] = {
    &lt_tanh_text, &lt_sigmoid_text, &lt_silu_text, &lt_gelu_text,  &lt_pow_text, &lt_mod_text,
    &lt_floordiv_text, &lt_ipow_text, &lt_ifmod_text, &lt_imod_text, &lt_ifloordiv_text, &lt_shl_text, &lt_shr_text,
};

#undef LAZYTENSOR_SHARED_FUNCTION
#undef LT_C
#undef LT_SIGNED
#undef LT_NEG
#undef LT_CALL

}  // namespace lazytensor::detail::shared
