// SPDX-License-Identifier: MIT
// The scalar semantics of the ops that are not one expression (tanh's ends, pow's common
// exponents, integer pow, C's integer division and remainder, shifts), each written once, in
// the subset of C that is both C++ and OpenCL C. The host backend calls them as C++ templates
// (simd/simd_ops.hpp: the scalar forms, which the SIMD forms must agree with), and the
// OpenCL renderer pastes their text into its programs (backend/opencl/op_spellings.hpp). A
// body may use:
//   T              the value type (float, double, int, long, uchar; half computes as float)
//   U              the unsigned type integers wrap in (the value type for floating T)
//   LT_C(f, d)     a constant: f for float, d for double
//   LT_SIGNED      whether T is a signed type (floating included), 1 or 0: combine it with
//                  & and |, not && and || (Clang warns of a constant operand of those)
//   LT_NEG(v)      v < 0, written so that no compiler warns of it for unsigned T
//   LT_CALL(fn)    another shared function at the same T
// and the math functions of both languages (exp, fabs, copysign, isfinite, ...). Functions that
// are rewrites into ops (sigmoid, gelu, NumPy's remainder and floor division, ...) are graph
// builders instead (ir/graph.hpp), which every backend runs as it runs the ops.
#pragma once

#include <cmath>
#include <type_traits>

namespace lazytensor::detail::shared {

using std::copysign;
using std::fabs;
using std::isfinite;
using std::isnan;
using std::pow;
using std::sqrt;
using std::tanh;

/// A shared function as text, for the OpenCL renderer.
struct SharedFunction {
    const char* name;    // lt_pow: OpenCL C names it lt_pow_float, lt_pow_double, ...
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

// The common exponents exactly (squares, reciprocals, square roots), whatever the base's sign:
// pow need not round them correctly (glibc's powf(-1.33506155f, 2) is 1 ulp off a * a, NVIDIA's
// pow(0.1f, 1) is 0.100000009).
LAZYTENSOR_SHARED_FUNCTION(lt_pow, (T a, T b),
    if (b == (T)2) return a * a;
    if (b == (T)1) return a;
    if (b == (T)-1) return (T)1 / a;
    if (b == (T)0.5 && a > (T)0 && isfinite(a)) return sqrt(a);
    return pow(a, b);)

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

// C's /: the quotient truncated (floor_divide is built on it, ir/graph.hpp).
LAZYTENSOR_SHARED_FUNCTION(lt_idiv, (T a, T b),
    if (b == (T)0) return (T)0;
    if (LT_SIGNED & (b == (T)-1)) return (T)((U)0 - (U)a);
    return (T)(a / b);)

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
    &lt_tanh_text, &lt_pow_text, &lt_ipow_text, &lt_ifmod_text, &lt_idiv_text, &lt_shl_text, &lt_shr_text,
};

#undef LAZYTENSOR_SHARED_FUNCTION
#undef LT_C
#undef LT_SIGNED
#undef LT_NEG
#undef LT_CALL

}  // namespace lazytensor::detail::shared
