// SPDX-License-Identifier: MIT
// How the OpenCL renderer spells each element-wise op: one table row per op (tinygrad's
// code_for_op), with the semantics of simd/simd_ops.hpp. An op that is not one
// expression calls a shared function (ir/shared_functions.hpp), whose text the program gets
// from the same definition the host runs.
#pragma once

#include <cstring>
#include <string>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/philox.hpp"
#include "../../ir/ops.hpp"
#include "../../ir/shared_functions.hpp"

namespace lazytensor::detail::opencl {

/// The OpenCL C type of a value of `t` (private variables).
inline const char* cl_value_type(DType t) {
    switch (t) {
        case DType::Bool: return "bool";
        case DType::UInt8: return "uchar";
        case DType::Int8: return "char";
        case DType::Int16: return "short";
        case DType::UInt16: return "ushort";
        case DType::Int32: return "int";
        case DType::UInt32: return "uint";
        case DType::Int64: return "long";
        case DType::UInt64: return "ulong";
        case DType::Float16: return "float";  // computed in float; only buffers hold half
        case DType::BFloat16: return "float";  // computed in float; buffers hold its bits (ushort)
        case DType::Float32: return "float";
        case DType::Float64: return "double";
        case DType::Complex64:
        case DType::Complex128: complex_dtype_inside(t);
    }
    return "?";
}

/// The OpenCL C type of an element of a buffer of `t` (bool is a byte, as in C++; bfloat16 its
/// 16 bits, read and written with cl_bfloat16_functions).
inline const char* cl_storage_type(DType t) {
    return t == DType::Bool ? "uchar" : t == DType::Float16 ? "half" : t == DType::BFloat16 ? "ushort" : cl_value_type(t);
}

/// bfloat16 in OpenCL C (no extension needed), bit for bit as on the host (core/bfloat16.hpp):
/// lt_bf16_load widens the bits of an element to its float exactly; lt_bf16_store rounds a float
/// to the nearest bfloat16 (ties to even; NaN kept, made quiet) and gives its bits;
/// lt_round_bf16 rounds a float value to bfloat16 precision, lt_round_bf16_l and _ul a long or
/// ulong once (through the float rounded to odd: toward zero, the last bit set where inexact),
/// and, with `from_double`, lt_round_bf16_d a double once (the same way), all as the host's.
inline void cl_bfloat16_functions(bool from_double, std::vector<std::string>& defs) {
    defs.push_back("inline float lt_bf16_load(ushort b) { return as_float((uint)b << 16); }\n"
                   "inline ushort lt_bf16_store(float x) {\n"
                   "    uint u = as_uint(x);\n"
                   "    if ((u & 0x7fffffffu) > 0x7f800000u) return (ushort)((u >> 16) | 0x40u);\n"
                   "    u += 0x7fffu + ((u >> 16) & 1u);\n"
                   "    return (ushort)(u >> 16);\n}\n"
                   "inline float lt_round_bf16(float x) { return lt_bf16_load(lt_bf16_store(x)); }\n"
                   "inline float lt_round_bf16_l(long x) {\n"
                   "    float f = convert_float_rtz(x);\n"
                   "    if (convert_long(f) != x) f = as_float(as_uint(f) | 1u);\n"
                   "    return lt_round_bf16(f);\n}\n"
                   "inline float lt_round_bf16_ul(ulong x) {\n"
                   "    float f = convert_float_rtz(x);\n"
                   "    if (convert_ulong(f) != x) f = as_float(as_uint(f) | 1u);\n"
                   "    return lt_round_bf16(f);\n}\n");
    if (from_double)
        defs.push_back("inline float lt_round_bf16_d(double d) {\n"
                       "    float f;\n"
                       "    if (fabs(d) > (double)FLT_MAX && !isinf(d)) {\n"
                       "        f = d < 0 ? -FLT_MAX : FLT_MAX;\n"
                       "    } else {\n"
                       "        f = (float)d;\n"
                       "        if (!isnan(d) && !isinf(d) && (double)f != d) {\n"
                       "            uint u = as_uint(f);\n"
                       "            if (fabs((double)f) > fabs(d)) u -= 1u;\n"
                       "            f = as_float(u | 1u);\n"
                       "        }\n"
                       "    }\n"
                       "    return lt_round_bf16(f);\n}\n");
}

/// The unsigned type integer arithmetic wraps in: uint for types of up to 32 bits (8- and
/// 16-bit operands would promote to int, whose overflow is undefined; the result is truncated
/// on assignment), ulong for 64-bit ones.
inline const char* cl_wrap_type(DType t) { return dtype_bits(t) == 64 ? "ulong" : "uint"; }

/// An op's spelling for floating, integer and bool operand types: $a and $b are the operands,
/// $T the value type, $U the unsigned type integers wrap in. nullptr where the op does not take
/// that kind of type (the front end never asks).
struct ClSpelling {
    const char* floating;
    const char* integer;
    const char* boolean;
};

constexpr ClSpelling cl_spelling(UnaryOp op) {
    switch (op) {
        case UnaryOp::Neg: return {"(-$a)", "(($T)(0u - ($U)$a))", nullptr};
        case UnaryOp::Abs: return {"fabs($a)", "(($T)abs($a))", nullptr};
        case UnaryOp::Relu: return {"($a < ($T)0 ? ($T)0 : $a)", "($a < ($T)0 ? ($T)0 : $a)", nullptr};
        case UnaryOp::Exp: return {"exp($a)", nullptr, nullptr};
        case UnaryOp::Log: return {"log($a)", nullptr, nullptr};
        case UnaryOp::Sqrt: return {"sqrt($a)", nullptr, nullptr};
        case UnaryOp::Sin: return {"sin($a)", nullptr, nullptr};
        case UnaryOp::Cos: return {"cos($a)", nullptr, nullptr};
        case UnaryOp::Tanh: return {"lt_tanh_$T($a)", nullptr, nullptr};
        case UnaryOp::Exp2: return {"exp2($a)", nullptr, nullptr};
        case UnaryOp::Log2: return {"log2($a)", nullptr, nullptr};
        case UnaryOp::Reciprocal: return {"(($T)1 / $a)", nullptr, nullptr};
        case UnaryOp::Tan: return {"tan($a)", nullptr, nullptr};
        case UnaryOp::Floor: return {"floor($a)", "$a", nullptr};
        case UnaryOp::Ceil: return {"ceil($a)", "$a", nullptr};
        case UnaryOp::Round: return {"rint($a)", "$a", nullptr};  // rint: ties to even (round() ties away)
        case UnaryOp::Trunc: return {"trunc($a)", "$a", nullptr};
        case UnaryOp::BitwiseNot: return {nullptr, "(($T)~$a)", "(!$a)"};
        case UnaryOp::LogicalNot: return {"($a == ($T)0)", "($a == ($T)0)", "(!$a)"};
        case UnaryOp::IsNan: return {"isnan($a)", "false", "false"};
        case UnaryOp::IsInf: return {"isinf($a)", "false", "false"};
        case UnaryOp::Log1p: return {"log1p($a)", nullptr, nullptr};
        case UnaryOp::Expm1: return {"expm1($a)", nullptr, nullptr};
        case UnaryOp::Erf: return {"erf($a)", nullptr, nullptr};
        case UnaryOp::Erfc: return {"erfc($a)", nullptr, nullptr};
        case UnaryOp::Asin: return {"asin($a)", nullptr, nullptr};
        case UnaryOp::Acos: return {"acos($a)", nullptr, nullptr};
        case UnaryOp::Atan: return {"atan($a)", nullptr, nullptr};
        case UnaryOp::Sinh: return {"sinh($a)", nullptr, nullptr};
        case UnaryOp::Cosh: return {"cosh($a)", nullptr, nullptr};
        case UnaryOp::Asinh: return {"asinh($a)", nullptr, nullptr};
        case UnaryOp::Acosh: return {"acosh($a)", nullptr, nullptr};
        case UnaryOp::Atanh: return {"atanh($a)", nullptr, nullptr};
        case UnaryOp::Rsqrt: return {"(($T)1 / sqrt($a))", nullptr, nullptr};  // rounded twice, as on the host (OpenCL's rsqrt is not exact)
    }
    return {nullptr, nullptr, nullptr};
}

// Integer + - * wrap: done in the unsigned type. On bool (0 or 1), & and | are the logical ops,
// and so are bool's maximum, minimum and orderings: a comparison of a bool with a constant that
// the compiler folded (a pad's bounds, which lowering joins with minimum) makes clang warn that
// it is always false, and PoCL prints "1 warning generated." for the user's program.
constexpr ClSpelling cl_spelling(BinaryOp op) {
    switch (op) {
        case BinaryOp::Add: return {"($a + $b)", "(($T)(($U)$a + ($U)$b))", nullptr};
        case BinaryOp::Sub: return {"($a - $b)", "(($T)(($U)$a - ($U)$b))", nullptr};
        case BinaryOp::Mul: return {"($a * $b)", "(($T)(($U)$a * ($U)$b))", nullptr};
        case BinaryOp::Div: return {"($a / $b)", nullptr, nullptr};
        case BinaryOp::Pow: return {"lt_pow_$T($a, $b)", "lt_ipow_$T($a, $b)", nullptr};
        // b where it wins or is NaN, else a (NaN in a, and the first operand on ties such as -0
        // and +0, as NumPy and PyTorch give).
        case BinaryOp::Maximum: return {"(($b > $a || isnan($b)) ? $b : $a)", "($b > $a ? $b : $a)", "($a | $b)"};
        case BinaryOp::Minimum: return {"(($b < $a || isnan($b)) ? $b : $a)", "($b < $a ? $b : $a)", "($a & $b)"};
        case BinaryOp::Lt: return {"($a < $b)", "($a < $b)", "(!($a) & $b)"};
        case BinaryOp::Le: return {"($a <= $b)", "($a <= $b)", "(!($a) | $b)"};
        case BinaryOp::Gt: return {"($a > $b)", "($a > $b)", "($a & !($b))"};
        case BinaryOp::Ge: return {"($a >= $b)", "($a >= $b)", "($a | !($b))"};
        case BinaryOp::Eq: return {"($a == $b)", "($a == $b)", "($a == $b)"};
        case BinaryOp::Ne: return {"($a != $b)", "($a != $b)", "($a != $b)"};
        case BinaryOp::Fmod: return {"fmod($a, $b)", "lt_ifmod_$T($a, $b)", nullptr};  // fmod is exact, as C's
        case BinaryOp::BitAnd: return {nullptr, "(($T)($a & $b))", "($a & $b)"};
        case BinaryOp::BitOr: return {nullptr, "(($T)($a | $b))", "($a | $b)"};
        case BinaryOp::BitXor: return {nullptr, "(($T)($a ^ $b))", "($a != $b)"};
        case BinaryOp::Shl: return {nullptr, "lt_shl_$T($a, $b)", nullptr};
        case BinaryOp::Shr: return {nullptr, "lt_shr_$T($a, $b)", nullptr};
        case BinaryOp::LogicalAnd: return {"(($a != ($T)0) & ($b != ($T)0))", "(($a != ($T)0) & ($b != ($T)0))", "($a & $b)"};
        case BinaryOp::LogicalOr: return {"(($a != ($T)0) | ($b != ($T)0))", "(($a != ($T)0) | ($b != ($T)0))", "($a | $b)"};
        case BinaryOp::Atan2: return {"atan2($a, $b)", nullptr, nullptr};
        case BinaryOp::Hypot: return {"hypot($a, $b)", nullptr, nullptr};
        case BinaryOp::Copysign: return {"copysign($a, $b)", nullptr, nullptr};
        case BinaryOp::Philox: return {nullptr, "(($T)lt_philox((ulong)$a, (ulong)$b))", nullptr};
        case BinaryOp::TruncDiv: return {nullptr, "lt_idiv_$T($a, $b)", nullptr};
    }
    return {nullptr, nullptr, nullptr};
}

/// The pattern of `s` for operands of type t.
inline const char* cl_pattern(const ClSpelling& s, DType t) {
    return is_floating(t) ? s.floating : t == DType::Bool ? s.boolean : s.integer;
}

/// `pattern` with its operands and types filled in.
inline std::string cl_fill(const char* pattern, DType t, const std::string& a, const std::string& b) {
    std::string out;
    for (const char* p = pattern; *p; ++p) {
        if (*p != '$' || !p[1]) {
            out += *p;
            continue;
        }
        switch (*++p) {
            case 'a': out += a; break;
            case 'b': out += b; break;
            case 'T': out += cl_value_type(t); break;
            case 'U': out += cl_wrap_type(t); break;
            default: out += '$', out += *p;
        }
    }
    return out;
}

/// `op` of x, whose dtype is t (a predicate's result is bool, every other op's is t).
inline std::string cl_unary(UnaryOp op, DType t, const std::string& x) {
    return cl_fill(cl_pattern(cl_spelling(op), t), t, x, "");
}

inline std::string cl_binary(BinaryOp op, DType t, const std::string& a, const std::string& b) {
    return cl_fill(cl_pattern(cl_spelling(op), t), t, a, b);
}

/// The OpenCL C definition of shared function `f` at type t: its text between the macros that
/// ir/shared_functions.hpp promises a body.
inline std::string cl_shared_function(const shared::SharedFunction& f, DType t) {
    const std::string T = cl_value_type(t);
    const bool f64 = t == DType::Float64, sign = !is_unsigned_integral(t) && t != DType::Bool;
    return "#define T " + T + "\n#define U " + (is_floating(t) ? T : std::string(cl_wrap_type(t))) +
           "\n#define LT_C(f, d) " + (f64 ? "d" : "f") + "\n#define LT_SIGNED " + (sign ? "1" : "0") +
           "\n#define LT_NEG(v) ((v) < (T)0)\n" +
           "#define LT_CALL(fn) fn##_" + T + "\ninline T " + f.name + "_" + T + f.params + " {\n    " + f.body +
           "\n}\n#undef T\n#undef U\n#undef LT_C\n#undef LT_SIGNED\n#undef LT_NEG\n#undef LT_CALL\n";
}

/// Appends to `defs` the definitions that `text` (a spelling or a shared function's body) calls
/// at type t, callees first.
inline void cl_functions_called(const std::string& text, DType t, std::vector<std::string>& defs) {
    if (text.find("lt_philox(") != std::string::npos) defs.push_back(philox_opencl_source());
    for (const shared::SharedFunction* f : shared::all_shared_functions) {
        const std::string name = f->name;
        // Spellings call lt_pow_float(...), bodies LT_CALL(lt_pow)(...).
        if (text.find(name + "_" + cl_value_type(t) + "(") == std::string::npos &&
            text.find("LT_CALL(" + name + ")") == std::string::npos)
            continue;
        cl_functions_called(f->body, t, defs);
        defs.push_back(cl_shared_function(*f, t));
    }
}

/// The helper functions that a unary or binary op at operand type t calls.
template <class Op>
void cl_op_functions(Op op, DType t, std::vector<std::string>& defs) {
    if (const char* pattern = cl_pattern(cl_spelling(op), t)) cl_functions_called(cl_fill(pattern, t, "a", "b"), t, defs);
}

}  // namespace lazytensor::detail::opencl
