// SPDX-License-Identifier: MIT
// The op list, defined once. The front end (free functions, operators, result types), the graph,
// the kernel IR and every backend are generated from these tables or switch over them: adding
// an element-wise op means one line here and one functor per backend.
#pragma once

#include <cstdint>

#include "../core/dtype.hpp"

namespace lazytensor {

/// How an op's result dtype follows from its (promoted) input dtype.
enum class TypeRule : std::uint8_t {
    Numeric,   // same type; bool inputs are rejected at compile time
    Floating,  // integer inputs compute in float32; bool inputs (two, for a binary op) are rejected at compile time
    Arith,     // promoted type; two bool inputs are rejected at compile time
    TrueDiv,   // promoted type, integers divide into float32 (NumPy/PyTorch true division)
    Ordered,   // promoted type, bool allowed (maximum, minimum)
    Compare,   // computed in the promoted type, result bool
    Predicate, // any dtype, computed in the promoted type, result bool (isnan, logical_and)
    Bitwise,   // promoted type, integers or bool (on bool: logical and/or/xor/not)
    Shift,     // promoted type, integers only
};

// X(enumerator, function name in namespace lazytensor, TypeRule)
#define LAZYTENSOR_UNARY_OPS(X)             \
    X(Neg, neg, Numeric)                    \
    X(Abs, abs, Numeric)                    \
    X(Relu, relu, Numeric)                  \
    X(Exp, exp, Floating)                   \
    X(Log, log, Floating)                   \
    X(Sqrt, sqrt, Floating)                 \
    X(Sin, sin, Floating)                   \
    X(Cos, cos, Floating)                   \
    X(Tanh, tanh, Floating)                 \
    X(Exp2, exp2, Floating)                 \
    X(Log2, log2, Floating)                 \
    X(Reciprocal, reciprocal, Floating)     \
    X(Tan, tan, Floating)                   \
    X(Floor, floor, Numeric)                \
    X(Ceil, ceil, Numeric)                  \
    X(Round, round, Numeric)                \
    X(Trunc, trunc, Numeric)                \
    X(BitwiseNot, bitwise_not, Bitwise)     \
    X(LogicalNot, logical_not, Predicate)   \
    X(IsNan, isnan, Predicate)              \
    X(IsInf, isinf, Predicate)              \
    X(Log1p, log1p, Floating)               \
    X(Expm1, expm1, Floating)               \
    X(Erf, erf, Floating)                   \
    X(Erfc, erfc, Floating)                 \
    X(Asin, asin, Floating)                 \
    X(Acos, acos, Floating)                 \
    X(Atan, atan, Floating)                 \
    X(Sinh, sinh, Floating)                 \
    X(Cosh, cosh, Floating)                 \
    X(Asinh, asinh, Floating)               \
    X(Acosh, acosh, Floating)               \
    X(Atanh, atanh, Floating)               \
    X(Rsqrt, rsqrt, Floating)

// X(enumerator, function name, TypeRule). Operators (+ - * / < <= > >= == != & | ^ << >> && ||)
// map onto the same enumerators in frontend/functions.hpp, which makes a public function
// lt::<name> of each op but the internal ones (LAZYTENSOR_INTERNAL_BINARY_OPS); % is
// remainder, a composite (frontend/composites.hpp).
#define LAZYTENSOR_BINARY_OPS(X) LAZYTENSOR_PUBLIC_BINARY_OPS(X) LAZYTENSOR_INTERNAL_BINARY_OPS(X)
#define LAZYTENSOR_PUBLIC_BINARY_OPS(X)     \
    X(Add, add, Arith)                      \
    X(Sub, sub, Arith)                      \
    X(Mul, mul, Arith)                      \
    X(Div, div, TrueDiv)                    \
    X(Pow, pow, Arith)                      \
    X(Maximum, maximum, Ordered)            \
    X(Minimum, minimum, Ordered)            \
    X(Lt, lt, Compare)                      \
    X(Le, le, Compare)                      \
    X(Gt, gt, Compare)                      \
    X(Ge, ge, Compare)                      \
    X(Eq, eq, Compare)                      \
    X(Ne, ne, Compare)                      \
    X(Fmod, fmod, Arith)                    \
    X(BitAnd, bitwise_and, Bitwise)         \
    X(BitOr, bitwise_or, Bitwise)           \
    X(BitXor, bitwise_xor, Bitwise)         \
    X(Shl, left_shift, Shift)               \
    X(Shr, right_shift, Shift)              \
    X(LogicalAnd, logical_and, Predicate)   \
    X(LogicalOr, logical_or, Predicate)     \
    X(Atan2, atan2, Floating)               \
    X(Hypot, hypot, Floating)               \
    X(Copysign, copysign, Floating)

// The operators and the binary ops they stand for.
#define LAZYTENSOR_OPERATORS(X) \
    X(+, Add)                   \
    X(-, Sub)                   \
    X(*, Mul)                   \
    X(/, Div)                   \
    X(<, Lt)                    \
    X(<=, Le)                   \
    X(>, Gt)                    \
    X(>=, Ge)                   \
    X(==, Eq)                   \
    X(!=, Ne)                   \
    X(&, BitAnd)                \
    X(|, BitOr)                 \
    X(^, BitXor)                \
    X(<<, Shl)                  \
    X(>>, Shr)                  \
    X(&&, LogicalAnd)           \
    X(||, LogicalOr)

#define LAZYTENSOR_INTERNAL_BINARY_OPS(X) \
    X(Philox, philox, Shift)              \
    X(TruncDiv, trunc_divide, Shift)

// philox(counter, key): 64 random bits (Philox 4x32-10, core/philox.hpp) for int64 operands;
// lt::rand, randn and randint are built on it. trunc_divide(a, b): C's integer division (the
// quotient truncated; by 0 it gives 0 and the most negative value by -1 wraps), for integers
// only, as shifts are: floor_divide is built on it (ir/graph.hpp).
//
// Functions that are not primitives (sigmoid, silu, gelu, sign, remainder and
// floor_divide, softplus, clamp, ...) are rewrites into these ops: ir/graph.hpp and
// frontend/composites.hpp.

// X(enumerator, function name); each backend gives every reduction an identity and a fold.
#define LAZYTENSOR_REDUCE_OPS(X)            \
    X(Sum, sum)                             \
    X(Max, max)                             \
    X(Min, min)                             \
    X(Prod, prod)

enum class UnaryOp : std::uint8_t {
#define LAZYTENSOR_X(name, text, rule) name,
    LAZYTENSOR_UNARY_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
};

enum class BinaryOp : std::uint8_t {
#define LAZYTENSOR_X(name, text, rule) name,
    LAZYTENSOR_BINARY_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
};

enum class ReduceOp : std::uint8_t {
#define LAZYTENSOR_X(name, text) name,
    LAZYTENSOR_REDUCE_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
};

constexpr const char* op_name(UnaryOp op) {
    switch (op) {
#define LAZYTENSOR_X(name, fn, rule) \
    case UnaryOp::name: return #fn;
        LAZYTENSOR_UNARY_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
    }
    return "?";
}

constexpr const char* op_name(BinaryOp op) {
    switch (op) {
#define LAZYTENSOR_X(name, fn, rule) \
    case BinaryOp::name: return #fn;
        LAZYTENSOR_BINARY_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
    }
    return "?";
}

constexpr const char* op_name(ReduceOp op) {
    switch (op) {
#define LAZYTENSOR_X(name, fn) \
    case ReduceOp::name: return #fn;
        LAZYTENSOR_REDUCE_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
    }
    return "?";
}

constexpr TypeRule type_rule(UnaryOp op) {
    switch (op) {
#define LAZYTENSOR_X(name, text, rule) \
    case UnaryOp::name: return TypeRule::rule;
        LAZYTENSOR_UNARY_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
    }
    return TypeRule::Numeric;
}

constexpr TypeRule type_rule(BinaryOp op) {
    switch (op) {
#define LAZYTENSOR_X(name, text, rule) \
    case BinaryOp::name: return TypeRule::rule;
        LAZYTENSOR_BINARY_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X
    }
    return TypeRule::Arith;
}

/// The dtype an op computes in, given its promoted input dtype (runtime form of the rules).
constexpr DType compute_dtype(TypeRule rule, DType in) {
    if ((rule == TypeRule::Floating || rule == TypeRule::TrueDiv) && !is_floating(in)) return DType::Float32;
    return in;
}

/// Whether an op of this rule produces bool whatever it computes in.
constexpr bool returns_bool(TypeRule rule) { return rule == TypeRule::Compare || rule == TypeRule::Predicate; }

/// The dtype an op produces, given the dtype it computes in.
constexpr DType result_dtype(TypeRule rule, DType computed) { return returns_bool(rule) ? DType::Bool : computed; }

/// Whether an op of this rule is defined for operands whose promoted dtype is `in` (for a
/// unary op: its input dtype). Arith rejects bool only when both operands are bool, which is
/// when they promote to bool.
constexpr bool rule_accepts(TypeRule rule, DType in) {
    switch (rule) {
        case TypeRule::Numeric:
        case TypeRule::Floating:
        case TypeRule::Arith: return in != DType::Bool;
        case TypeRule::Bitwise: return !is_floating(in);
        case TypeRule::Shift: return is_integral(in);
        case TypeRule::TrueDiv:
        case TypeRule::Ordered:
        case TypeRule::Compare:
        case TypeRule::Predicate: return true;
    }
    return false;
}

}  // namespace lazytensor
