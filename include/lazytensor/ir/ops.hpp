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
    Floating,  // integer inputs compute in float32; bool inputs are rejected at compile time
    Arith,     // promoted type; two bool inputs are rejected at compile time
    TrueDiv,   // promoted type, integers divide into float32 (NumPy/PyTorch true division)
    Ordered,   // promoted type, bool allowed (maximum, minimum)
    Compare,   // computed in the promoted type, result bool
};

// X(enumerator, function name in namespace lazytensor, TypeRule)
#define LAZYTENSOR_UNARY_OPS(X)  \
    X(Neg, neg, Numeric)         \
    X(Abs, abs, Numeric)         \
    X(Relu, relu, Numeric)       \
    X(Exp, exp, Floating)        \
    X(Log, log, Floating)        \
    X(Sqrt, sqrt, Floating)      \
    X(Sin, sin, Floating)        \
    X(Cos, cos, Floating)        \
    X(Tanh, tanh, Floating)      \
    X(Sigmoid, sigmoid, Floating)

// X(enumerator, function name, TypeRule). Operators (+ - * / < <= > >= == !=) map onto the
// same enumerators in frontend/functions.hpp.
#define LAZYTENSOR_BINARY_OPS(X) \
    X(Add, add, Arith)           \
    X(Sub, sub, Arith)           \
    X(Mul, mul, Arith)           \
    X(Div, div, TrueDiv)         \
    X(Pow, pow, Arith)           \
    X(Maximum, maximum, Ordered) \
    X(Minimum, minimum, Ordered) \
    X(Lt, lt, Compare)           \
    X(Le, le, Compare)           \
    X(Gt, gt, Compare)           \
    X(Ge, ge, Compare)           \
    X(Eq, eq, Compare)           \
    X(Ne, ne, Compare)

// X(enumerator, function name); each backend gives every reduction an identity and a fold.
#define LAZYTENSOR_REDUCE_OPS(X) \
    X(Sum, sum)                  \
    X(Max, max)                  \
    X(Min, min)

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

/// The dtype an op produces, given the dtype it computes in.
constexpr DType result_dtype(TypeRule rule, DType computed) { return rule == TypeRule::Compare ? DType::Bool : computed; }

}  // namespace lazytensor
