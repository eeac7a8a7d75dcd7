// SPDX-License-Identifier: MIT
// Element types: the runtime tag (DType), the C++ type behind it, and the promotion rules.
// Promotion (docs/dtypes.md has the whole table): a tensor of a higher category (bool <
// integer < floating) wins; two integers meet in the smallest integer type that holds every
// value of both, as NumPy's rule (int8 + uint8 -> int16, uint32 + int32 -> int64), and uint64
// with a signed type meets in float64 as in NumPy; two floating types meet in the wider. A
// scalar never widens a tensor of its own category (int32 tensor + int64 scalar -> int32;
// int32 tensor + 2.5 -> float32). float16 (lazytensor::half) and bfloat16 (lazytensor::bfloat16)
// are floating types for promotion (the two together meet in float32, as PyTorch's); kernels
// compute them in float32.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <ostream>
#include <string>
#include <type_traits>

#include "error.hpp"
#include "bfloat16.hpp"
#include "half.hpp"

namespace lazytensor {

// The dtype list, defined once: X(enumerator, C++ type, name). Order is promotion order.
#define LAZYTENSOR_DTYPES(X)           \
    X(Bool, bool, "bool")              \
    X(UInt8, std::uint8_t, "uint8")    \
    X(Int8, std::int8_t, "int8")       \
    X(Int16, std::int16_t, "int16")    \
    X(UInt16, std::uint16_t, "uint16") \
    X(Int32, std::int32_t, "int32")    \
    X(UInt32, std::uint32_t, "uint32") \
    X(Int64, std::int64_t, "int64")    \
    X(UInt64, std::uint64_t, "uint64") \
    X(Float16, half, "float16")        \
    X(BFloat16, bfloat16, "bfloat16")  \
    X(Float32, float, "float32")       \
    X(Float64, double, "float64")

/// The runtime tag of an element type: Bool, UInt8, Int8, Int16, UInt16, Int32, UInt32, Int64,
/// UInt64, Float16, BFloat16, Float32, Float64 (bool, then integers and floating types by width),
/// and the
/// complex types Complex64 and Complex128 (std::complex<float> and std::complex<double>). Kernels compute in
/// the real types only: a complex tensor (lt::Tensor<std::complex<float>>) is two real planes.
enum class DType : std::uint8_t {
#define LAZYTENSOR_X(name, type, text) name,
    LAZYTENSOR_DTYPES(LAZYTENSOR_X)
#undef LAZYTENSOR_X
    Complex64,
    Complex128,
};

///@{
/// Number of real dtypes (those kernels compute in: Bool to Float64).
inline constexpr int dtype_count = 0
#define LAZYTENSOR_X(name, type, text) +1
    LAZYTENSOR_DTYPES(LAZYTENSOR_X)
#undef LAZYTENSOR_X
    ;
///@}

/// The dtype's name: "bool", "uint8", "int8", "int16", "uint16", "int32", "uint32", "int64",
/// "uint64", "float16", "bfloat16", "float32", "float64", "complex64" or "complex128".
inline const char* dtype_name(DType t) {
    switch (t) {
#define LAZYTENSOR_X(name, type, text) \
    case DType::name: return text;
        LAZYTENSOR_DTYPES(LAZYTENSOR_X)
#undef LAZYTENSOR_X
        case DType::Complex64: return "complex64";
        case DType::Complex128: return "complex128";
    }
    return "?";
}

/// Writes dtype_name(t).
inline std::ostream& operator<<(std::ostream& out, DType t) { return out << dtype_name(t); }

/// Bytes per element (bool: 1, float16 and bfloat16: 2, complex64: 8).
inline std::size_t dtype_size(DType t) {
    switch (t) {
#define LAZYTENSOR_X(name, type, text) \
    case DType::name: return sizeof(type);
        LAZYTENSOR_DTYPES(LAZYTENSOR_X)
#undef LAZYTENSOR_X
        case DType::Complex64: return 8;
        case DType::Complex128: return 16;
    }
    return 0;
}

/// Whether t is float16, bfloat16, float32 or float64.
constexpr bool is_floating(DType t) {
    return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
/// Whether t is float16 or bfloat16: storage types that kernels widen to float32 as they load
/// and round once (to nearest even) as they store.
constexpr bool is_reduced_float(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
/// Whether t is complex64 or complex128.
constexpr bool is_complex(DType t) { return t == DType::Complex64 || t == DType::Complex128; }
/// Whether t is an integer type: int8 to int64 or uint8 to uint64 (bool is not).
constexpr bool is_integral(DType t) { return t != DType::Bool && !is_floating(t) && !is_complex(t); }

/// Whether t is uint8, uint16, uint32 or uint64 (bool is not).
constexpr bool is_unsigned_integral(DType t) {
    return t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32 || t == DType::UInt64;
}

/// Bits per value: 1 for bool, else 8 * the element size.
constexpr int dtype_bits(DType t) {
    switch (t) {
        case DType::Bool: return 1;
        case DType::UInt8:
        case DType::Int8: return 8;
        case DType::Int16:
        case DType::UInt16:
        case DType::Float16:
        case DType::BFloat16: return 16;
        case DType::Int32:
        case DType::UInt32:
        case DType::Float32: return 32;
        case DType::Int64:
        case DType::UInt64:
        case DType::Float64:
        case DType::Complex64: return 64;
        case DType::Complex128: return 128;
    }
    return 0;
}

/// Category used by promotion: 0 bool, 1 integer, 2 floating, 3 complex.
constexpr int dtype_category(DType t) { return t == DType::Bool ? 0 : is_complex(t) ? 3 : is_floating(t) ? 2 : 1; }

/// The dtype a kernel holds and computes values of `t` in: float16 and bfloat16 are storage only
/// (float32).
constexpr DType value_dtype(DType t) { return is_reduced_float(t) ? DType::Float32 : t; }

namespace detail {

template <class T>
struct dtype_traits {
    static constexpr bool supported = false;
};
#define LAZYTENSOR_X(name, type, text)                  \
    template <>                                         \
    struct dtype_traits<type> {                         \
        static constexpr bool supported = true;         \
        static constexpr DType value = DType::name;     \
    };
LAZYTENSOR_DTYPES(LAZYTENSOR_X)
#undef LAZYTENSOR_X

template <DType D>
struct dtype_type;
#define LAZYTENSOR_X(name, type_, text) \
    template <>                         \
    struct dtype_type<DType::name> {    \
        using type = type_;             \
    };
LAZYTENSOR_DTYPES(LAZYTENSOR_X)
#undef LAZYTENSOR_X

template <class T>
struct type_tag {
    using type = T;
};

/// float16 and bfloat16 (lazytensor::half, lazytensor::bfloat16): storage computed in float.
template <class T>
inline constexpr bool is_reduced_float_v = std::is_same_v<T, half> || std::is_same_v<T, bfloat16>;

/// Floating element types: float, double, half and bfloat16 (std::is_floating_point_v is false
/// for the last two).
template <class T>
inline constexpr bool is_floating_v = std::is_floating_point_v<T> || is_reduced_float_v<T>;

/// Complex dtypes never reach what visits dtypes (kernels, buffers): their planes do.
[[noreturn]] inline void complex_dtype_inside(DType t) {
    fail<DTypeError>("lazytensor internal error: a ", dtype_name(t), " value reached the engine, which computes its real and "
                     "imaginary planes");
}

/// Calls f(type_tag<T>{}) with the C++ type of a runtime real dtype.
template <class F>
decltype(auto) visit_dtype(DType t, F&& f) {
    switch (t) {
#define LAZYTENSOR_X(name, type, text) \
    case DType::name: return f(type_tag<type>{});
        LAZYTENSOR_DTYPES(LAZYTENSOR_X)
#undef LAZYTENSOR_X
        case DType::Complex64:
        case DType::Complex128: complex_dtype_inside(t);
    }
    return f(type_tag<float>{});
}

/// The C++ type kernels hold values of element type T in (half, bfloat16: float).
template <class T>
using value_type_t = std::conditional_t<is_reduced_float_v<T>, float, T>;

/// visit_dtype over value_dtype(t): float16 and bfloat16 visit float (f is never instantiated
/// for half or bfloat16).
template <class F>
decltype(auto) visit_value_dtype(DType t, F&& f) {
    switch (t) {
#define LAZYTENSOR_X(name, type, text) \
    case DType::name: return f(type_tag<value_type_t<type>>{});
        LAZYTENSOR_DTYPES(LAZYTENSOR_X)
#undef LAZYTENSOR_X
        case DType::Complex64:
        case DType::Complex128: complex_dtype_inside(t);
    }
    return f(type_tag<float>{});
}

/// Converts one element type to another. Floating to integer saturates and maps NaN to 0
/// (like OpenCL's convert_*_sat), so that no conversion is undefined behaviour.
template <class To, class From>
inline To convert(From x) {
    if constexpr (is_reduced_float_v<From> && !std::is_same_v<To, From>) {
        return convert<To>(static_cast<float>(x));
    } else if constexpr (std::is_same_v<To, bool>) {
        return x != From(0);
    } else if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
        if (std::isnan(x)) return To(0);
        if (x <= static_cast<From>(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
        if (x >= static_cast<From>(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
        return static_cast<To>(x);
    } else {
        return static_cast<To>(x);
    }
}

}  // namespace detail

/// The runtime dtype of a C++ element type.
template <class T>
constexpr DType dtype_of() {
    static_assert(detail::dtype_traits<T>::supported,
                  "lazytensor: unsupported element type; use bool, int8_t, int16_t, int32_t, int64_t, uint8_t, uint16_t, "
                  "uint32_t, uint64_t, lazytensor::half, lazytensor::bfloat16, float or double");
    return detail::dtype_traits<T>::value;
}

/// Promotion of two tensor dtypes. Across categories the higher wins (bool < integer <
/// floating: int32 + float16 -> float16, as PyTorch; NumPy would widen the float, see
/// docs/dtypes.md). Two integers meet in the smallest integer type that holds every value of
/// both (NumPy's rule): the wider of one signedness; a signed type wider than the unsigned one
/// as it is (int16 + uint8 -> int16); else the signed type of twice the unsigned one's width
/// (int8 + uint8 -> int16, int32 + uint32 -> int64), and float64 for uint64 with any signed
/// type (none holds both). Two floating types meet in the wider; float16 with bfloat16 (neither
/// holds the other's values) in float32, as PyTorch's.
constexpr DType promote(DType a, DType b) {
    const int ca = dtype_category(a), cb = dtype_category(b);
    if (ca != cb) return ca > cb ? a : b;
    if (a != b && is_reduced_float(a) && is_reduced_float(b)) return DType::Float32;
    if (a == b || ca != 1) return static_cast<int>(a) >= static_cast<int>(b) ? a : b;
    const bool ua = is_unsigned_integral(a), ub = is_unsigned_integral(b);
    if (ua == ub) return dtype_bits(a) >= dtype_bits(b) ? a : b;
    const DType u = ua ? a : b, s = ua ? b : a;
    if (dtype_bits(s) > dtype_bits(u)) return s;
    switch (dtype_bits(u)) {
        case 8: return DType::Int16;
        case 16: return DType::Int32;
        case 32: return DType::Int64;
        default: return DType::Float64;
    }
}

/// Promotion over the operands of one op: tensors promote among themselves; scalars only
/// change the result when they are of a higher category (then: float32 or int64).
struct Promotion {
    bool has_tensor = false;     ///< whether a tensor operand was added
    DType tensor = DType::Bool;  ///< the tensors' promoted dtype (when has_tensor)
    int scalar_category = -1;    ///< the highest category of a scalar operand (0 bool, 1 integer, 2 floating), -1 for none

    /// Adds a tensor operand of dtype t.
    constexpr Promotion with_tensor(DType t) const {
        Promotion p = *this;
        p.tensor = has_tensor ? promote(tensor, t) : t;
        p.has_tensor = true;
        return p;
    }
    /// Adds a scalar operand of dtype t (only its category counts).
    constexpr Promotion with_scalar(DType t) const {
        Promotion p = *this;
        if (dtype_category(t) > p.scalar_category) p.scalar_category = dtype_category(t);
        return p;
    }
    /// The dtype the operands meet in.
    constexpr DType result() const {
        if (has_tensor && scalar_category <= dtype_category(tensor)) return tensor;
        return scalar_category == 2 ? DType::Float32 : scalar_category == 1 ? DType::Int64 : DType::Bool;
    }
};

/// The C++ element type of a dtype (DType::Float32: float, DType::Float16: lazytensor::half,
/// DType::BFloat16: lazytensor::bfloat16).
template <DType D>
using dtype_type_t = typename detail::dtype_type<D>::type;

/// Promotion of two tensor element types (promote()).
template <class A, class B>
using promote_t = dtype_type_t<promote(dtype_of<A>(), dtype_of<B>())>;

/// Result element type of `tensor<T> op scalar<S>`: a scalar does not widen a tensor's type.
template <class T, class S>
using scalar_promote_t = dtype_type_t<Promotion{}.with_tensor(dtype_of<T>()).with_scalar(dtype_of<S>()).result()>;

/// A constant of any dtype, as it appears in the graph and the kernel IR.
struct Scalar {
    DType dtype = DType::Float32;  ///< the dtype the value is of
    double f = 0;        ///< the value, for floating dtypes
    std::int64_t i = 0;  ///< the value, for integer and bool dtypes

    /// A scalar of T's dtype holding `value` (a uint64 value is kept as its bits in `i`).
    template <class T>
    static Scalar of(T value) {
        Scalar s;
        s.dtype = dtype_of<T>();
        if constexpr (detail::is_floating_v<T>)
            s.f = static_cast<double>(value);
        else
            s.i = static_cast<std::int64_t>(value);
        return s;
    }

    /// The value converted to T (float to integer saturates, NaN gives 0; to bool: != 0;
    /// integer to integer wraps).
    template <class T>
    T as() const {
        if (is_floating(dtype)) return detail::convert<T>(f);
        if (dtype == DType::UInt64) return detail::convert<T>(static_cast<std::uint64_t>(i));
        return detail::convert<T>(i);
    }

    /// Whether the value is below 0 (a uint64 scalar never is).
    bool negative() const { return is_floating(dtype) ? f < 0 : dtype != DType::UInt64 && i < 0; }

    /// The same value converted to another dtype (as as<T>() converts).
    Scalar cast(DType to) const {
        return detail::visit_dtype(to, [&](auto tag) {
            using T = typename decltype(tag)::type;
            return Scalar::of<T>(as<T>());
        });
    }

    /// Same dtype and value; floating values compare by their bits (so NaN equals NaN).
    friend bool operator==(const Scalar& a, const Scalar& b) {
        if (a.dtype != b.dtype) return false;
        // Compare the bits of floating values so that NaN constants share a cache entry.
        if (is_floating(a.dtype)) return std::memcmp(&a.f, &b.f, sizeof(double)) == 0;
        return a.i == b.i;
    }
};

/// Writes the value (bool as true or false).
inline std::ostream& operator<<(std::ostream& out, const Scalar& s) {
    if (s.dtype == DType::Bool) return out << (s.i ? "true" : "false");
    if (is_floating(s.dtype)) return out << s.f;
    if (s.dtype == DType::UInt64) return out << static_cast<std::uint64_t>(s.i);
    return out << s.i;
}

}  // namespace lazytensor
