// SPDX-License-Identifier: MIT
// Differential fuzzer: random expression graphs from a seed, evaluated by the library on each
// device and by a plain double-precision reference (no scheduler, no fusion, one loop per op),
// compared element by element within an error bound tracked per element.
//
// Sections: dtype rules (the fuzzer's own) | program | generator | reference | builder |
// compare | minimize | print. The fuzzer computes every step's dtype and shape itself and
// checks the library's nodes against them.
#pragma once

#include <lazytensor.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <iomanip>
#include <limits>
#include <optional>
#include <stdexcept>
#include <sstream>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

namespace fuzz {

namespace lt = lazytensor;
namespace graph = lazytensor::detail::graph;
using lt::Axes;
using lt::Device;
using lt::DType;
using lt::Scalar;
using lt::Shape;
using NodePtr = lazytensor::detail::NodePtr;
using i64 = std::int64_t;
using u64 = std::uint64_t;

// =========================================================================== the ops
// The element-wise functions the fuzzer draws: the library's ops (ir/ops.hpp) and the
// composites that were ops once (sigmoid, sign, rsqrt, gelu, silu, remainder, floor_divide:
// graph builders now, ir/graph.hpp), in the order the generator has always drawn them, so
// that a seed keeps generating the graph it did (the regression seeds below name graphs).

// X(enumerator, the library's name): an op of ir/ops.hpp of the same enumerator, or a composite.
#define FUZZ_UNARY_OPS(X, C)                                                                             \
    X(Neg, neg) X(Abs, abs) X(Relu, relu) X(Exp, exp) X(Log, log) X(Sqrt, sqrt) X(Sin, sin) X(Cos, cos)  \
    X(Tanh, tanh) C(Sigmoid, sigmoid) C(Sign, sign) X(Exp2, exp2) X(Log2, log2) C(Rsqrt, rsqrt)          \
    X(Reciprocal, reciprocal) X(Tan, tan) C(Gelu, gelu) C(Silu, silu) X(Floor, floor) X(Ceil, ceil)      \
    X(Round, round) X(Trunc, trunc) X(BitwiseNot, bitwise_not) X(LogicalNot, logical_not) X(IsNan, isnan) \
    X(IsInf, isinf) X(Log1p, log1p) X(Expm1, expm1) X(Erf, erf) X(Erfc, erfc) X(Asin, asin) X(Acos, acos) \
    X(Atan, atan) X(Sinh, sinh) X(Cosh, cosh) X(Asinh, asinh) X(Acosh, acosh) X(Atanh, atanh)
#define FUZZ_BINARY_OPS(X, C)                                                                            \
    X(Add, add) X(Sub, sub) X(Mul, mul) X(Div, div) X(Pow, pow) X(Maximum, maximum) X(Minimum, minimum)  \
    X(Lt, lt) X(Le, le) X(Gt, gt) X(Ge, ge) X(Eq, eq) X(Ne, ne) X(Fmod, fmod) C(Remainder, remainder)   \
    C(FloorDivide, floor_divide) X(BitAnd, bitwise_and) X(BitOr, bitwise_or) X(BitXor, bitwise_xor)     \
    X(Shl, left_shift) X(Shr, right_shift) X(LogicalAnd, logical_and) X(LogicalOr, logical_or)            \
    X(Atan2, atan2) X(Hypot, hypot) X(Copysign, copysign) X(Philox, philox)

#define FUZZ_ENUMERATOR(name, fn) name,
enum class UnaryOp { FUZZ_UNARY_OPS(FUZZ_ENUMERATOR, FUZZ_ENUMERATOR) };
enum class BinaryOp { FUZZ_BINARY_OPS(FUZZ_ENUMERATOR, FUZZ_ENUMERATOR) };
#undef FUZZ_ENUMERATOR

#define FUZZ_NAME(name, fn) \
    case name: return #fn;
inline const char* op_name(UnaryOp op) {
    using enum_ = UnaryOp;
    switch (op) {
#define FUZZ_CASE(name, fn) FUZZ_NAME(enum_::name, fn)
        FUZZ_UNARY_OPS(FUZZ_CASE, FUZZ_CASE)
    }
    return "?";
}
inline const char* op_name(BinaryOp op) {
    using enum_ = BinaryOp;
    switch (op) {
        FUZZ_BINARY_OPS(FUZZ_CASE, FUZZ_CASE)
#undef FUZZ_CASE
    }
    return "?";
}
#undef FUZZ_NAME

/// The library's op of a fuzzer op that is one (not a composite).
inline lt::UnaryOp library_op(UnaryOp op) {
    switch (op) {
#define FUZZ_OP(name, fn) \
    case UnaryOp::name: return lt::UnaryOp::name;
#define FUZZ_COMPOSITE(name, fn) \
    case UnaryOp::name: break;
        FUZZ_UNARY_OPS(FUZZ_OP, FUZZ_COMPOSITE)
#undef FUZZ_OP
#undef FUZZ_COMPOSITE
    }
    throw std::logic_error(std::string("fuzz: ") + op_name(op) + " is a composite, not an op");
}
inline lt::BinaryOp library_op(BinaryOp op) {
    switch (op) {
#define FUZZ_OP(name, fn) \
    case BinaryOp::name: return lt::BinaryOp::name;
#define FUZZ_COMPOSITE(name, fn) \
    case BinaryOp::name: break;
        FUZZ_BINARY_OPS(FUZZ_OP, FUZZ_COMPOSITE)
#undef FUZZ_OP
#undef FUZZ_COMPOSITE
    }
    throw std::logic_error(std::string("fuzz: ") + op_name(op) + " is a composite, not an op");
}

/// Builds a fuzzer op with the untyped graph builders: the op's, or the composite's.
inline NodePtr build_unary(UnaryOp op, const NodePtr& x) {
    switch (op) {
        case UnaryOp::Sigmoid: return graph::sigmoid(x);
        case UnaryOp::Sign: return graph::sign(x);
        case UnaryOp::Rsqrt: return graph::rsqrt(x);
        case UnaryOp::Gelu: return graph::gelu(x);
        case UnaryOp::Silu: return graph::silu(x);
        default: return graph::unary(library_op(op), x);
    }
}
inline NodePtr build_binary(BinaryOp op, const graph::Operand& a, const graph::Operand& b) {
    switch (op) {
        case BinaryOp::Remainder: return graph::remainder(a, b);
        case BinaryOp::FloorDivide: return graph::floor_divide(a, b);
        default: return graph::binary(library_op(op), a, b);
    }
}

// =========================================================================== dtype rules
// Written from the README and docs/dtypes.md (a higher category wins; two integers meet as in
// NumPy; op categories), not taken from ir/ops.hpp or core/dtype.hpp.

inline constexpr DType kDTypes[] = {DType::Bool,    DType::UInt8,   DType::Int32,  DType::Int64,
                                DType::Float16, DType::Float32, DType::Float64};
// Generator version 6 also draws these (uint64 is left out: the reference holds integers in
// int64 and double).
inline constexpr DType kNewInts[] = {DType::Int8, DType::Int16, DType::UInt16, DType::UInt32};
// Generator version 7 draws bfloat16 for some of its float16 draws.

inline constexpr bool is_float(DType t) {
    return t == DType::Float16 || t == DType::BFloat16 || t == DType::Float32 || t == DType::Float64;
}
/// float16 and bfloat16: storage, computed in float and rounded once where stored.
inline constexpr bool is_reduced(DType t) { return t == DType::Float16 || t == DType::BFloat16; }
/// The unit roundoff of a reduced dtype (float16 2^-11, bfloat16 2^-8).
inline constexpr double reduced_unit(DType t) { return t == DType::BFloat16 ? 0x1.0p-8 : 0x1.0p-11; }
inline constexpr bool is_int(DType t) {
    return t == DType::UInt8 || t == DType::Int32 || t == DType::Int64 || t == DType::Int8 || t == DType::Int16 ||
           t == DType::UInt16 || t == DType::UInt32;
}
inline constexpr bool is_unsigned(DType t) { return t == DType::UInt8 || t == DType::UInt16 || t == DType::UInt32; }
/// Bits of an integer dtype.
inline constexpr int int_bits(DType t) {
    return t == DType::UInt8 || t == DType::Int8 ? 8 : t == DType::Int16 || t == DType::UInt16 ? 16
                                                    : t == DType::Int32 || t == DType::UInt32 ? 32 : 64;
}
inline constexpr int category(DType t) { return t == DType::Bool ? 0 : is_float(t) ? 2 : 1; }
inline constexpr int rank_of(DType t) {
    if (t == DType::BFloat16) t = DType::Float16;  // the same rank (two of them meet in float32)
    for (int k = 0; k < 7; ++k)
        if (kDTypes[k] == t) return k;
    return 0;
}
inline constexpr DType promote_types(DType a, DType b) {
    if (category(a) != category(b)) return category(a) > category(b) ? a : b;
    if (category(a) == 1 && a != b) {
        // The smallest integer type that holds both (no uint64 here: no float64 case).
        if (is_unsigned(a) == is_unsigned(b)) return int_bits(a) >= int_bits(b) ? a : b;
        const DType u = is_unsigned(a) ? a : b, sgn = is_unsigned(a) ? b : a;
        if (int_bits(sgn) > int_bits(u)) return sgn;
        return int_bits(u) == 8 ? DType::Int16 : int_bits(u) == 16 ? DType::Int32 : DType::Int64;
    }
    if (a != b && is_reduced(a) && is_reduced(b)) return DType::Float32;  // float16 with bfloat16 (PyTorch's)
    return rank_of(a) >= rank_of(b) ? a : b;
}
/// The lowest and highest value of integer dtype t.
inline std::pair<i64, i64> int_range(DType t) {
    const int bits = int_bits(t);
    if (is_unsigned(t)) return {0, static_cast<i64>((std::uint64_t(1) << bits) - 1)};
    if (bits == 64) return {std::numeric_limits<i64>::min(), std::numeric_limits<i64>::max()};
    return {-(i64(1) << (bits - 1)), (i64(1) << (bits - 1)) - 1};
}
/// Tensor `t` meets a scalar of dtype `s`: the scalar only counts when of a higher category.
inline constexpr DType promote_scalar(DType t, DType s) {
    if (category(s) <= category(t)) return t;
    return category(s) == 2 ? DType::Float32 : DType::Int64;
}

enum class URule { Numeric, Floating, Bitwise, Predicate };
inline constexpr URule urule(UnaryOp op) {
    switch (op) {
        case UnaryOp::Neg: case UnaryOp::Abs: case UnaryOp::Relu: case UnaryOp::Sign:
        case UnaryOp::Floor: case UnaryOp::Ceil: case UnaryOp::Round: case UnaryOp::Trunc: return URule::Numeric;
        case UnaryOp::BitwiseNot: return URule::Bitwise;
        case UnaryOp::LogicalNot: case UnaryOp::IsNan: case UnaryOp::IsInf: return URule::Predicate;
        default: return URule::Floating;
    }
}
enum class BRule { Arith, TrueDiv, Floating, Ordered, Compare, Predicate, Bitwise, Shift };
inline constexpr BRule brule(BinaryOp op) {
    switch (op) {
        case BinaryOp::Div: return BRule::TrueDiv;
        case BinaryOp::Atan2: case BinaryOp::Hypot: case BinaryOp::Copysign: return BRule::Floating;
        case BinaryOp::Maximum: case BinaryOp::Minimum: return BRule::Ordered;
        case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt: case BinaryOp::Ge: case BinaryOp::Eq:
        case BinaryOp::Ne: return BRule::Compare;
        case BinaryOp::LogicalAnd: case BinaryOp::LogicalOr: return BRule::Predicate;
        case BinaryOp::BitAnd: case BinaryOp::BitOr: case BinaryOp::BitXor: return BRule::Bitwise;
        case BinaryOp::Shl: case BinaryOp::Shr: case BinaryOp::Philox: return BRule::Shift;
        default: return BRule::Arith;
    }
}
inline constexpr bool unary_ok(UnaryOp op, DType in) {
    switch (urule(op)) {
        case URule::Numeric: case URule::Floating: return in != DType::Bool;
        case URule::Bitwise: return !is_float(in);
        case URule::Predicate: return true;
    }
    return false;
}
/// The dtype a unary op computes in and the dtype it returns.
inline DType unary_compute(UnaryOp op, DType in) {
    return urule(op) == URule::Floating && !is_float(in) ? DType::Float32 : in;
}
inline DType unary_result(UnaryOp op, DType in) {
    return urule(op) == URule::Predicate ? DType::Bool : unary_compute(op, in);
}
inline constexpr bool binary_ok(BinaryOp op, DType p) {
    switch (brule(op)) {
        case BRule::Arith: case BRule::Floating: return p != DType::Bool;
        case BRule::Bitwise: return !is_float(p);
        case BRule::Shift: return is_int(p);
        default: return true;
    }
}
inline DType binary_compute(BinaryOp op, DType p) {
    return (brule(op) == BRule::TrueDiv || brule(op) == BRule::Floating) && !is_float(p) ? DType::Float32 : p;
}
inline DType binary_result(BinaryOp op, DType p) {
    const BRule r = brule(op);
    return r == BRule::Compare || r == BRule::Predicate ? DType::Bool : binary_compute(op, p);
}

inline i64 numel(const Shape& s) {
    i64 n = 1;
    for (auto e : s) n *= e;
    return n;
}
/// NumPy broadcasting; nullopt if the shapes do not broadcast.
inline std::optional<Shape> broadcast(const Shape& a, const Shape& b) {
    const std::size_t n = std::max(a.size(), b.size());
    Shape out(n, 1);
    for (std::size_t k = 0; k < n; ++k) {
        const i64 x = k + a.size() >= n ? a[k + a.size() - n] : 1;
        const i64 y = k + b.size() >= n ? b[k + b.size() - n] : 1;
        if (x != y && x != 1 && y != 1) return std::nullopt;
        out[k] = x == 1 ? y : x;
    }
    return out;
}
inline std::string shape_str(const Shape& s) {
    std::string out = "{";
    for (std::size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + std::to_string(s[k]);
    return out + "}";
}
inline std::string axes_str(const Axes& s) {
    std::string out = "{";
    for (std::size_t k = 0; k < s.size(); ++k) out += (k ? ", " : "") + std::to_string(s[k]);
    return out + "}";
}

// =============================================================================== program

enum class Kind {
    Leaf, Unary, Binary, Where, Cast, Reduce, Reshape, Permute, Expand, Slice, Pad, Flip, Matmul,
    // Composites and ops with inputs of their own kind (gather's index, concat's parts, ...).
    Gather, ScatterAdd, Scan, ArgExt, Concat, Assign, Random,
    // A multi-op element-wise expression of a fixed shape (pattern), its ops chosen from a
    // small set: the typed path keeps it one expression template, so the host's compiled loop
    // runs it whole (float, double; pattern 3 mixes float and double, and sigmoid is a
    // composite: no compiled loop).
    Fused,
    // conv1d/2d/3d and conv_transpose; max_pool (values or indices), avg_pool, adaptive_avg_pool.
    Conv, Pool
};
inline const char* kind_name(Kind k) {
    static const char* names[] = {"leaf", "unary", "binary", "where", "cast", "reduce", "reshape", "permute",
                                  "expand", "slice", "pad", "flip", "matmul", "gather", "scatter_add", "scan",
                                  "argmax/argmin", "concat", "assign", "random", "fused", "conv", "pool"};
    return names[static_cast<int>(k)];
}
inline constexpr int kKinds = static_cast<int>(Kind::Pool) + 1;
enum class Red { Sum, Max, Min, Prod, Mean, Any, All };
inline const char* red_name(Red r) {
    static const char* names[] = {"sum", "max", "min", "prod", "mean", "any", "all"};
    return names[static_cast<int>(r)];
}

/// One op of a program; inputs are earlier steps, by index. dtype and shape are the fuzzer's
/// own inference of the result.
struct Step {
    Kind kind = Kind::Leaf;
    DType dtype = DType::Float32;
    Shape shape;
    int a = -1, b = -1, c = -1;
    int scalar_side = 0;  // Binary: 1 if the first operand is `value`, 2 if the second is
    Scalar value;         // a scalar operand, or the pad value
    UnaryOp uop = UnaryOp::Neg;
    BinaryOp bop = BinaryOp::Add;
    Red red = Red::Sum;
    bool all_axes = false;  // Reduce over every axis (no axis list)
    Axes axes;              // Reduce axes, the Permute permutation, the Flip axes
    bool keepdim = false;
    Shape target;  // Reshape (may hold one -1), Expand (may hold -1)
    int axis = 0;  // Slice
    std::optional<i64> start, stop;
    i64 step = 1;
    Shape before, after;        // Pad
    std::vector<double> data;   // Leaf values (exactly representable in dtype); Random: read back
    bool output = false;
    // Scan: red is Sum (cumsum) or Prod (cumprod); ArgExt: Max (argmax) or Min (argmin); both
    // along `axis` (ArgExt with keepdim). Gather: a data, b index. ScatterAdd: a x, b index,
    // c src. Concat: parts a, b and c (c may be -1) along `axis`, each cast to dtype first.
    // Assign: a copy of a (lazy: a lazy expression of a) whose slice (axis, start, stop, step)
    // is assigned b. Random: rkind 0 rand, 1 randn, 2 randint [low, high); seed.
    int rkind = 0;
    u64 seed = 0;
    i64 low = 0, high = 1;
    bool lazy = false;
    int ctype = 0;  // the typed path's C++ type for a scalar: 0 the wide one (int64_t, double), 1 int / float
    // Fused: 0 u(a) op b; 1 u(a op b) op2 c; 2 where(a cmp b, u(a), c); 3 u(a) op b with a
    // float and b double. u in {neg, exp, sigmoid}, op in {+, *, /}, op2 in {+, maximum},
    // cmp in {<, >=}.
    int pattern = 0;
    BinaryOp bop2 = BinaryOp::Add;
    bool stop_grad = false;  // gradient fuzzing (grad.hpp): the step's value passes through lt::stop_gradient
    // Conv: a x, b weight, c bias (-1: none); Pool: a x. x is [N, C, spatial...] or, without
    // the batch axis, [C, spatial...]. Per spatial axis: stride, dilation, kernel (pools), the
    // padding in before and after (pools: symmetric), out_pad (conv_transpose's output padding).
    // pool: 0 max_pool, 1 its indices, 2 avg_pool (include_pad: count_include_pad), 3
    // adaptive_avg_pool to the extents in target. spell: how the typed path and the printer
    // write the options (see spatial_arg).
    Shape stride, dilation, kernel, out_pad;
    i64 groups = 1;
    bool transposed = false, include_pad = true;
    int pool = 0, spell = 0;
};

/// The spatial axes of a Conv or Pool step.
inline std::size_t spatial_dims(const Step& s) { return s.kind == Kind::Pool && s.pool == 3 ? s.target.size() : s.stride.size(); }

inline const UnaryOp kFusedUnary[] = {UnaryOp::Neg, UnaryOp::Exp, UnaryOp::Sigmoid};
inline const BinaryOp kFusedOp[] = {BinaryOp::Add, BinaryOp::Mul, BinaryOp::Div};
inline const BinaryOp kFusedOp2[] = {BinaryOp::Add, BinaryOp::Maximum};
inline const BinaryOp kFusedCmp[] = {BinaryOp::Lt, BinaryOp::Ge};

struct Program {
    u64 seed = 0;
    std::vector<Step> steps;
    bool together = true;  // realize all outputs with one lt::realize, else one by one
};

/// The result shape of a Conv or Pool step on an input of shape xs (a Conv's weight ws, its bias
/// bs or null), by PyTorch's formulas; nullopt where the library rejects the options (written
/// from conv.hpp's rules: the generator draws valid ones, the minimizer's shrunk leaves may not).
inline std::optional<Shape> conv_result(const Step& s, const Shape& xs, const Shape* ws = nullptr, const Shape* bs = nullptr) {
    const std::size_t dims = spatial_dims(s);
    if (dims == 0 || (xs.size() != dims + 1 && xs.size() != dims + 2)) return std::nullopt;
    const std::size_t c = xs.size() - dims - 1;  // the channel axis
    Shape out(xs.begin(), xs.begin() + static_cast<std::ptrdiff_t>(c) + 1);
    for (std::size_t i = 0; i < dims; ++i)
        if (xs[c + 1 + i] < 1) return std::nullopt;
    if (s.kind == Kind::Pool && s.pool == 3) {
        for (i64 e : s.target) {
            if (e < 1) return std::nullopt;
            out.push_back(e);
        }
        return out;
    }
    if (s.dilation.size() != dims || s.before.size() != dims || s.after.size() != dims) return std::nullopt;
    Shape kernel = s.kernel;
    if (s.kind == Kind::Conv) {
        if (!ws || ws->size() != dims + 2 || s.out_pad.size() != dims || xs[c] < 1 || s.groups < 1 || xs[c] % s.groups)
            return std::nullopt;
        kernel = Shape(ws->begin() + 2, ws->end());
        i64 channels;
        if (s.transposed) {
            if ((*ws)[0] != xs[c]) return std::nullopt;
            channels = (*ws)[1] * s.groups;
        } else {
            if ((*ws)[0] % s.groups || (*ws)[1] * s.groups != xs[c]) return std::nullopt;
            channels = (*ws)[0];
        }
        if (bs && !(*bs == Shape{channels})) return std::nullopt;
        out[c] = channels;
    }
    if (kernel.size() != dims) return std::nullopt;
    for (std::size_t i = 0; i < dims; ++i) {
        const i64 in = xs[c + 1 + i], k = kernel[i], st = s.stride[i], d = s.dilation[i], pb = s.before[i], pa = s.after[i];
        if (k < 1 || st < 1 || d < 1 || pb < 0 || pa < 0) return std::nullopt;
        const i64 span = d * (k - 1) + 1;
        if (s.transposed) {
            const i64 extra = s.out_pad[i];
            if (extra < 0 || (extra >= st && extra >= d)) return std::nullopt;
            const i64 o = (in - 1) * st + span + extra - pb - pa;
            if (o < 1) return std::nullopt;
            out.push_back(o);
            continue;
        }
        if (s.kind == Kind::Pool && (pb != pa || pb > span / 2)) return std::nullopt;
        if (span > in + pb + pa) return std::nullopt;
        out.push_back((in + pb + pa - span) / st + 1);
    }
    return out;
}

// ============================================================================= generator

/// SplitMix64: a small, portable generator (std distributions differ between libraries).
struct Rng {
    u64 s;
    explicit Rng(u64 seed) : s(seed * 0x9E3779B97F4A7C15ull + 0x1234567ull) {}
    u64 next() {
        u64 z = (s += 0x9E3779B97F4A7C15ull);
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
        return z ^ (z >> 31);
    }
    i64 below(i64 n) { return n <= 0 ? 0 : static_cast<i64>(next() % static_cast<u64>(n)); }
    i64 range(i64 lo, i64 hi) { return lo + below(hi - lo + 1); }  // inclusive
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
    bool chance(double p) { return uniform() < p; }
    template <class T>
    const T& pick(const std::vector<T>& v) { return v[static_cast<std::size_t>(below(static_cast<i64>(v.size())))]; }
    /// An axis k of a rank-r shape (*k), spelled negatively 30% of the time.
    int axis(std::size_t r, std::size_t* k) {
        *k = static_cast<std::size_t>(below(static_cast<i64>(r)));
        return chance(0.3) ? static_cast<int>(*k) - static_cast<int>(r) : static_cast<int>(*k);
    }
};

/// A reshape of a tensor of shape xs to up to 4 axes: {shape, target}, where the target may
/// spell one axis -1; nullopt where the draw gave none.
inline std::optional<std::pair<Shape, Shape>> random_reshape(Rng& rng, const Shape& xs) {
    const i64 n = numel(xs);
    const std::size_t nr = static_cast<std::size_t>(rng.range(0, 4));
    Shape t(nr, 1);
    if (n == 0) {
        if (nr == 0) return std::nullopt;
        for (auto& e : t) e = rng.range(0, 3);
        t[static_cast<std::size_t>(rng.below(static_cast<i64>(nr)))] = 0;
    } else {
        i64 m = n;
        for (i64 f = 2; m > 1;) {  // spread the prime factors over the axes
            if (m % f == 0) {
                if (nr == 0) return std::nullopt;
                t[static_cast<std::size_t>(rng.below(static_cast<i64>(nr)))] *= f;
                m /= f;
            } else {
                ++f;
                if (f * f > m) f = m;
            }
        }
    }
    Shape target = t;
    if (n > 0 && nr > 0 && rng.chance(0.25)) target[static_cast<std::size_t>(rng.below(static_cast<i64>(nr)))] = -1;
    return std::make_pair(t, target);
}

/// A permutation of the axes of xs (rank >= 2), each spelled negatively 20% of the time, and
/// the permuted shape.
inline std::pair<std::vector<int>, Shape> random_permutation(Rng& rng, const Shape& xs) {
    const std::size_t r = xs.size();
    std::vector<int> p(r), axes;
    Shape shape;
    for (std::size_t k = 0; k < r; ++k) p[k] = static_cast<int>(k);
    for (std::size_t k = r; k-- > 1;) std::swap(p[k], p[static_cast<std::size_t>(rng.below(static_cast<i64>(k) + 1))]);
    for (int v : p) {
        axes.push_back(rng.chance(0.2) ? v - static_cast<int>(r) : v);
        shape.push_back(xs[static_cast<std::size_t>(v)]);
    }
    return {axes, shape};
}

/// Axes of a rank-r shape (r >= 1) to flip: each with probability 1/2, at least one.
inline std::vector<int> random_flip_axes(Rng& rng, std::size_t r) {
    std::vector<int> axes;
    for (std::size_t k = 0; k < r; ++k)
        if (rng.chance(0.5)) axes.push_back(rng.chance(0.3) ? static_cast<int>(k) - static_cast<int>(r) : static_cast<int>(k));
    if (axes.empty()) axes.push_back(static_cast<int>(rng.below(static_cast<i64>(r))));
    return axes;
}

// Convolutions and pools: options drawn for an input of a given shape, valid by construction.

/// 1, 2 or 3 spatial axes (2 most often).
inline std::size_t conv_dims(Rng& rng) {
    const double u = rng.uniform();
    return u < 0.35 ? 1 : u < 0.87 ? 2 : 3;
}

/// A shape of `rank` axes holding n > 0 elements: n's prime factors spread over the axes.
inline Shape spread_factors(Rng& rng, i64 n, std::size_t rank) {
    Shape t(rank, 1);
    for (i64 f = 2, m = n; m > 1;) {
        if (m % f == 0) {
            t[static_cast<std::size_t>(rng.below(static_cast<i64>(rank)))] *= f;
            m /= f;
        } else {
            ++f;
            if (f * f > m) f = m;
        }
    }
    return t;
}

/// Per axis: a kernel of 1-3 (now and then 4-5), dilation 1 (now and then 2-3), stride 1 (or
/// 2-3); the kernel's span shrunk to fit the input plus the padding drawn here, padding before
/// and after (equal 60% of the time; a pool's always equal and at most half the span, a dilated
/// pool's padding, if any, that half, with a kernel of 2 over an extent of 1: a window of
/// padding alone).
inline void draw_windows(Rng& rng, Step& s, const Shape& in, bool pool, bool dilate) {
    for (i64 extent : in) {
        i64 k = rng.chance(0.1) ? rng.range(4, 5) : rng.range(1, 3);
        i64 d = dilate && rng.chance(0.25) ? rng.range(2, 3) : 1;
        i64 before = rng.chance(0.5) ? rng.range(0, 2) : 0;
        if (pool && d > 1 && before > 0) {
            if (extent == 1) k = 2;
            before = d * (k - 1);
        }
        i64 after = pool || rng.chance(0.6) ? before : rng.range(0, 2);
        for (;;) {
            const i64 span = d * (k - 1) + 1;
            if (pool) before = after = std::min(before, span / 2);
            if (span <= extent + before + after) break;
            if (d > 1) d = 1;
            else --k;
        }
        s.kernel.push_back(k);
        s.dilation.push_back(d);
        s.before.push_back(before);
        s.after.push_back(after);
        s.stride.push_back(pool && rng.chance(0.4) ? k : rng.chance(0.4) ? rng.range(2, 3) : 1);
    }
}

/// A conv's options for an input of shape xs (rank dims + 1 or dims + 2): groups (1, depthwise,
/// or another divisor of the channels), windows (now and then padded as Same pads them), and a
/// transposed convolution (with output padding now and then) a quarter of the time. Returns the
/// weight's shape.
inline Shape draw_conv(Rng& rng, Step& s, const Shape& xs, std::size_t dims) {
    const std::size_t c = xs.size() - dims - 1;
    const i64 channels = xs[c];
    std::vector<i64> divisors{1};  // (1 where the channels have no divisor but 1 and themselves)
    for (i64 g = 2; g < channels; ++g)
        if (channels % g == 0) divisors.push_back(g);
    if (divisors.size() > 1) divisors.erase(divisors.begin());
    const double u = rng.uniform();
    s.groups = u < 0.55 ? 1 : u < 0.8 ? channels : rng.pick(divisors);
    const i64 per_out_group = rng.range(1, s.groups > 4 ? 1 : s.groups > 1 ? 2 : 4);
    s.transposed = rng.chance(0.25);
    draw_windows(rng, s, Shape(xs.end() - static_cast<std::ptrdiff_t>(dims), xs.end()), false, true);
    if (!s.transposed && rng.chance(0.15))  // Same: stride 1, the span's extra positions split, the odd one after
        for (std::size_t i = 0; i < dims; ++i) {
            const i64 total = s.dilation[i] * (s.kernel[i] - 1);
            s.stride[i] = 1;
            s.before[i] = total / 2;
            s.after[i] = total - total / 2;
        }
    for (std::size_t i = 0; i < dims; ++i) {
        const i64 st = s.stride[i], d = s.dilation[i];
        s.out_pad.push_back(s.transposed && rng.chance(0.3) ? rng.below(std::max(st, d)) : 0);
        if (!s.transposed) continue;
        // At least one output position: less padding.
        const i64 full = (xs[c + 1 + i] - 1) * st + d * (s.kernel[i] - 1) + 1 + s.out_pad[i];
        while (full - s.before[i] - s.after[i] < 1) --(s.before[i] > 0 ? s.before[i] : s.after[i]);
    }
    Shape ws = s.transposed ? Shape{channels, per_out_group} : Shape{per_out_group * s.groups, channels / s.groups};
    for (i64 k : s.kernel) ws.push_back(k);
    s.kernel.clear();  // (a conv's kernel is its weight's)
    s.spell = static_cast<int>(rng.below(3));
    return ws;
}

/// A pool's options for an input of shape xs: max_pool (values 35%, indices 15%), avg_pool
/// (35%, count_include_pad or not), adaptive_avg_pool (15%, to extents up to the input's + 2).
inline void draw_pool(Rng& rng, Step& s, const Shape& xs, std::size_t dims) {
    const double u = rng.uniform();
    s.pool = u < 0.35 ? 0 : u < 0.5 ? 1 : u < 0.85 ? 2 : 3;
    const Shape in(xs.end() - static_cast<std::ptrdiff_t>(dims), xs.end());
    if (s.pool == 3) {
        for (i64 e : in) s.target.push_back(rng.chance(0.7) ? rng.range(1, e) : rng.range(1, e + 2));
    } else {
        draw_windows(rng, s, in, true, s.pool < 2);
        s.include_pad = rng.chance(0.5);
    }
    s.spell = static_cast<int>(rng.below(3));
}

/// Rounds v to what dtype t holds exactly.
inline double to_dtype(DType t, double v) {
    switch (t) {
        case DType::Float16: return static_cast<float>(lt::half(v));
        case DType::BFloat16: return static_cast<float>(lt::bfloat16(v));
        case DType::Float32: return static_cast<double>(static_cast<float>(v));
        case DType::Float64: return v;
        default: return v;
    }
}

struct GenOptions {
    bool specials = true;  // inf, nan, -0 in some float leaves
    int min_steps = 3, max_steps = 15;
    i64 max_numel = 4096;
    double big_chance = 0.08;  // a graph with one large leaf (OpenCL multi-group paths)
    i64 big_numel = 200000;
    // 1: the original op mix (the seeds of the regression list before the typed path);
    // 2: also gather, scatter_add, scans, argmax/argmin, concat, assign and random leaves;
    // 3: also fused expressions;
    // 4: also log1p ... atanh, atan2, hypot and copysign;
    // 5: also convolutions and pooling;
    // 6: also the dtypes int8, int16, uint16 and uint32.
    int version = 7;
};

class Generator {
public:
    Generator(u64 seed, GenOptions opt) : rng(seed), opt(opt) { prog.seed = seed; }

    Program run() {
        big = rng.chance(opt.big_chance);
        cap = big ? opt.big_numel : opt.max_numel;
        const int target = static_cast<int>(rng.range(opt.min_steps, opt.max_steps));
        // Each draw in a statement of its own: the order in which a call's arguments are evaluated
        // differs between compilers (GCC: right to left, Clang: left to right), and a seed must
        // give the same program with both. These keep the order GCC used.
        const Shape first = leaf_shape(big);
        add_leaf(random_dtype(), first);
        if (rng.chance(0.5)) {
            const Shape second = rng.chance(0.5) ? prog.steps[0].shape : leaf_shape(false);
            add_leaf(random_dtype(), second);
        }
        int guard = 0;
        while (static_cast<int>(prog.steps.size()) < target && guard++ < 400) try_step();
        prog.steps.back().output = true;
        for (std::size_t i = 0; i + 1 < prog.steps.size(); ++i)
            if (prog.steps[i].kind != Kind::Leaf && rng.chance(0.2)) prog.steps[i].output = true;
        prog.together = rng.chance(0.7);
        return prog;
    }

private:
    Rng rng;
    GenOptions opt;
    Program prog;
    bool big = false;
    i64 cap = 4096;

    int count() const { return static_cast<int>(prog.steps.size()); }
    const Step& at(int i) const { return prog.steps[static_cast<std::size_t>(i)]; }

    DType random_dtype() {
        // Float32 most often; every dtype now and then.
        static const std::vector<DType> pool = {DType::Float32, DType::Float32, DType::Float32, DType::Float64,
                                                DType::Float16, DType::Int32,   DType::Int64,   DType::UInt8,
                                                DType::Bool,    DType::Float32};
        const DType t = rng.pick(pool);
        // Version 6: a third of the int32 draws are one of the newer integer types (no more
        // draws otherwise, so that older versions' seeds give the graphs they gave).
        if (opt.version >= 6 && t == DType::Int32 && rng.chance(0.75)) return kNewInts[rng.below(4)];
        return maybe_bfloat16(t);
    }

    /// Version 7: bfloat16 for 40% of float16 draws (no draw otherwise, so that other dtypes'
    /// draws stay as they were).
    DType maybe_bfloat16(DType t) {
        return opt.version >= 7 && t == DType::Float16 && rng.chance(0.4) ? DType::BFloat16 : t;
    }
    i64 extent() {
        static const std::vector<i64> pool = {1, 1, 2, 2, 3, 3, 4, 4, 5, 7, 8, 16, 1, 2, 3, 9, 13, 32};
        return rng.chance(0.03) ? 0 : rng.pick(pool);
    }
    Shape leaf_shape(bool large) {
        if (large) {
            static const std::vector<Shape> pool = {{200003}, {65537}, {3, 50000}, {50000, 3},   {300, 301},
                                                    {7, 8, 1001}, {2, 65536}, {1, 131072}, {1024, 33}, {31000}};
            return rng.pick(pool);
        }
        static const std::vector<int> ranks = {0, 1, 1, 2, 2, 2, 3, 3, 4};
        for (;;) {
            Shape s(static_cast<std::size_t>(rng.pick(ranks)));
            for (auto& e : s) e = extent();
            if (numel(s) <= opt.max_numel) return s;
        }
    }
    int pick_input() {
        // Recent steps most often (depth); any earlier step otherwise (shared subexpressions).
        return rng.chance(0.45) ? count() - 1 : static_cast<int>(rng.below(count()));
    }

    int add_leaf(DType t, const Shape& shape) {
        Step s;
        s.kind = Kind::Leaf;
        s.dtype = t;
        s.shape = shape;
        const i64 n = numel(shape);
        s.data.resize(static_cast<std::size_t>(n));
        const bool specials = opt.specials && is_float(t) && rng.chance(0.15);
        const bool whole = is_float(t) && rng.chance(0.2);  // integers and halves: ties, exact sums
        for (auto& x : s.data) {
            if (t == DType::Bool) x = static_cast<double>(rng.below(2));
            else if (is_unsigned(t)) x = static_cast<double>(rng.range(0, 10));
            else if (is_int(t)) x = static_cast<double>(rng.range(-5, 5));
            else if (whole) x = static_cast<double>(rng.range(-8, 8)) * 0.5;
            else x = to_dtype(t, rng.uniform() * 4 - 2);
            if (specials && rng.chance(0.05)) {
                static const std::vector<double> sp = {INFINITY, -INFINITY, NAN, -0.0, 0.0, 1e4, -1e-3};
                x = to_dtype(t, rng.pick(sp));
            }
        }
        prog.steps.push_back(s);
        return count() - 1;
    }

    // A shape that broadcasts against `s` (a suffix with some extents set to 1, sometimes
    // with a new leading axis), within the size cap.
    Shape broadcastable(const Shape& s) {
        for (int tries = 0; tries < 10; ++tries) {
            const std::size_t drop = static_cast<std::size_t>(rng.below(static_cast<i64>(s.size()) + 1));
            Shape out(s.begin() + static_cast<std::ptrdiff_t>(rng.chance(0.6) ? 0 : drop), s.end());
            for (auto& e : out)
                if (rng.chance(0.3)) e = 1;
            if (rng.chance(0.15)) out.insert(0, rng.range(1, 3));
            auto b = broadcast(s, out);
            if (b && numel(*b) <= cap) return out;
        }
        return s;
    }
    /// An earlier step of shape broadcastable with `s` (result within the cap), or a new leaf.
    int partner(const Shape& s, std::optional<DType> dtype) {
        if (rng.chance(0.6)) {
            std::vector<int> ok;
            for (int i = 0; i < count(); ++i) {
                if (dtype && at(i).dtype != *dtype) continue;
                auto b = broadcast(s, at(i).shape);
                if (b && numel(*b) <= cap) ok.push_back(i);
            }
            if (!ok.empty()) return rng.pick(ok);
        }
        const Shape shape = broadcastable(s);  // (drawn before the dtype: see run())
        return add_leaf(dtype ? *dtype : random_dtype(), shape);
    }

    Scalar random_scalar(int cat) {
        if (cat == 0) return Scalar::of<bool>(rng.chance(0.5));
        if (cat == 1) return Scalar::of<i64>(rng.range(-3, 6));
        static const std::vector<double> pool = {0.5, -1.5, 2.0, 0.1, 3.0, -0.25, 1.0, 0.0, 1.75};
        return Scalar::of<double>(rng.pick(pool));
    }

    void push(Step s) { prog.steps.push_back(std::move(s)); }

    /// The typed path passes a scalar as int or int64_t, float or double (bool as bool): a float
    /// scalar is rounded to float here so that both paths use one value.
    void pick_ctype(Step& s) {
        s.ctype = static_cast<int>(rng.below(2));
        if (s.ctype == 1 && s.value.dtype == DType::Float64) s.value = Scalar::of<double>(static_cast<float>(s.value.f));
    }
    /// A leaf of integer positions in [0, bound).
    int add_index_leaf(const Shape& shape, i64 bound) {
        const DType t = bound <= 200 && rng.chance(0.2) ? DType::UInt8 : rng.chance(0.5) ? DType::Int64 : DType::Int32;
        const int i = add_leaf(t, shape);
        for (auto& v : prog.steps[static_cast<std::size_t>(i)].data) v = static_cast<double>(rng.below(bound));
        return i;
    }
    /// An input for a conv or pool of `dims` spatial axes (floating for a conv, not bool for a
    /// pool), [N, C, spatial...] or [C, spatial...] with every extent but N at least 1: step a
    /// where it fits, else a reshape of it, else a new leaf (sizes kept small: the reference
    /// loops over every window).
    int conv_input(int a, std::size_t dims, bool floating) {
        const Step x = at(a);  // (a copy: adding a step may move the steps)
        const bool dtype_ok = floating ? is_float(x.dtype) : x.dtype != DType::Bool;
        const std::size_t r = x.shape.size();
        const i64 n = numel(x.shape);
        if (dtype_ok && n <= 1024 && (r == dims + 1 || r == dims + 2)) {
            bool ok = true;
            for (std::size_t k = r - dims - 1; k < r; ++k) ok = ok && x.shape[k] >= 1;
            if (ok && rng.chance(0.8)) return a;
        }
        if (dtype_ok && n >= 1 && n <= 1024 && rng.chance(0.6)) {
            Step s;
            s.kind = Kind::Reshape;
            s.a = a;
            s.dtype = x.dtype;
            s.shape = spread_factors(rng, n, dims + (rng.chance(0.8) ? 2 : 1));
            // Many channels make a large weight: those go to the last axis.
            const std::size_t c = s.shape.size() - dims - 1;
            if (s.shape[c] > 8) std::swap(s.shape[c], s.shape.back());
            s.target = s.shape;
            if (rng.chance(0.2)) s.target[static_cast<std::size_t>(rng.below(static_cast<i64>(dims) + 1))] = -1;
            push(s);
            return count() - 1;
        }
        static const std::vector<DType> floats = {DType::Float32, DType::Float32, DType::Float64, DType::Float16};
        static const std::vector<DType> numeric = {DType::Float32, DType::Float32, DType::Float64, DType::Float16,
                                                   DType::Int32,   DType::Int64,   DType::UInt8};
        const DType t = dtype_ok && rng.chance(0.7) ? x.dtype : maybe_bfloat16(rng.pick(floating ? floats : numeric));
        Shape shape;
        if (rng.chance(0.8)) shape.push_back(rng.chance(0.04) ? 0 : rng.pick(std::vector<i64>{1, 1, 2, 3}));
        shape.push_back(rng.range(1, 4));
        for (std::size_t i = 0; i < dims; ++i) shape.push_back(rng.range(1, dims == 1 ? 12 : dims == 2 ? 7 : 4));
        return add_leaf(t, shape);
    }
    /// An earlier step of shape `shape` and dtype t (now and then), else a new leaf.
    int operand(const Shape& shape, DType t) {
        std::vector<int> same;
        for (int i = 0; i < count(); ++i)
            if (at(i).shape == shape && at(i).dtype == t) same.push_back(i);
        return !same.empty() && rng.chance(0.3) ? rng.pick(same) : add_leaf(t, shape);
    }

    void try_step() {
        static const std::vector<Kind> kinds = {
            Kind::Unary,   Kind::Unary,   Kind::Unary,  Kind::Binary, Kind::Binary, Kind::Binary, Kind::Binary,
            Kind::Where,   Kind::Cast,    Kind::Reduce, Kind::Reduce, Kind::Reduce, Kind::Reshape, Kind::Permute,
            Kind::Expand,  Kind::Slice,   Kind::Slice,  Kind::Pad,    Kind::Flip,   Kind::Matmul, Kind::Matmul,
            Kind::Leaf};
        static const std::vector<Kind> kinds2 = [] {
            std::vector<Kind> k = kinds;
            for (Kind n : {Kind::Gather, Kind::ScatterAdd, Kind::Scan, Kind::ArgExt, Kind::Concat, Kind::Assign,
                           Kind::Random, Kind::Concat, Kind::Assign, Kind::Gather})
                k.push_back(n);
            return k;
        }();
        static const std::vector<Kind> kinds3 = [] {
            std::vector<Kind> k = kinds2;
            for (int i = 0; i < 3; ++i) k.push_back(Kind::Fused);
            return k;
        }();
        static const std::vector<Kind> kinds5 = [] {
            std::vector<Kind> k = kinds3;
            for (Kind n : {Kind::Pool, Kind::Conv}) k.push_back(n);
            return k;
        }();
        const Kind kind = rng.pick(opt.version >= 5 ? kinds5 : opt.version >= 3 ? kinds3 : opt.version == 2 ? kinds2 : kinds);
        const int a = pick_input();
        Step x;  // a copy: adding a leaf below may move the steps
        x.dtype = at(a).dtype;
        x.shape = at(a).shape;
        Step s;
        s.kind = kind;
        s.a = a;
        const std::size_t r = x.shape.size();
        switch (kind) {
            case Kind::Leaf: {
                const Shape shape = leaf_shape(false);  // (drawn before the dtype: see run())
                add_leaf(random_dtype(), shape);
                return;
            }
            case Kind::Unary: {
                const UnaryOp last = opt.version >= 4 ? UnaryOp::Atanh : UnaryOp::IsInf;
                const UnaryOp op = static_cast<UnaryOp>(rng.below(static_cast<int>(last) + 1));
                if (!unary_ok(op, x.dtype)) return;
                s.uop = op;
                s.dtype = unary_result(op, x.dtype);
                s.shape = x.shape;
                break;
            }
            case Kind::Binary: {
                BinaryOp op;
                // Versions before 4 draw as when philox followed logical_or, and reject it.
                const int draws = opt.version >= 4 ? static_cast<int>(BinaryOp::Copysign) + 1 : static_cast<int>(BinaryOp::LogicalOr) + 2;
                do op = static_cast<BinaryOp>(rng.below(draws));
                while (static_cast<int>(op) == static_cast<int>(BinaryOp::LogicalOr) + 1 && opt.version < 4);
                s.bop = op;
                DType p;
                if (rng.chance(0.15)) {
                    s.scalar_side = rng.chance(0.7) ? 2 : 1;
                    s.value = random_scalar(static_cast<int>(rng.below(3)));
                    if (opt.version >= 2) pick_ctype(s);
                    p = promote_scalar(x.dtype, s.value.dtype);
                    // A scalar the operation's dtype cannot hold is a ValueError (never wrapped):
                    // uint8 meets non-negative integers only.
                    if (is_unsigned(p) && s.value.dtype == DType::Int64 && s.value.i < 0) s.value.i = -s.value.i;
                    s.shape = x.shape;
                    if (s.scalar_side == 1) std::swap(s.a, s.b), s.a = -1;
                } else {
                    s.b = partner(x.shape, rng.chance(0.5) ? std::optional<DType>(x.dtype) : std::nullopt);
                    p = promote_types(x.dtype, at(s.b).dtype);
                    s.shape = *broadcast(x.shape, at(s.b).shape);
                    if (rng.chance(0.3)) std::swap(s.a, s.b);
                }
                if (!binary_ok(op, p)) return;
                s.dtype = binary_result(op, p);
                break;
            }
            case Kind::Where: {
                s.c = partner(x.shape, DType::Bool);
                const Shape cs = *broadcast(x.shape, at(s.c).shape);
                s.b = partner(cs, rng.chance(0.5) ? std::optional<DType>(x.dtype) : std::nullopt);
                s.shape = *broadcast(cs, at(s.b).shape);
                s.dtype = promote_types(x.dtype, at(s.b).dtype);
                const int xi = s.a;  // a: condition, b: x, c: y (x and y in either order)
                s.a = s.c;
                s.c = s.b;
                s.b = xi;
                if (rng.chance(0.5)) std::swap(s.b, s.c);
                break;
            }
            case Kind::Cast: {
                s.dtype = random_dtype();
                if (s.dtype == x.dtype) return;
                s.shape = x.shape;
                break;
            }
            case Kind::Reduce: {
                static const std::vector<Red> reds = {Red::Sum, Red::Sum, Red::Max, Red::Min, Red::Prod,
                                                      Red::Mean, Red::Any, Red::All};
                s.red = rng.pick(reds);
                s.keepdim = rng.chance(0.4);
                s.all_axes = r == 0 || rng.chance(0.25);
                std::vector<bool> chosen(r, s.all_axes);
                if (!s.all_axes) {
                    for (std::size_t k = 0; k < r; ++k) chosen[k] = rng.chance(0.5);
                    chosen[static_cast<std::size_t>(rng.below(static_cast<i64>(r)))] = true;
                    for (std::size_t k = 0; k < r; ++k)
                        if (chosen[k]) s.axes.push_back(rng.chance(0.3) ? static_cast<int>(k) - static_cast<int>(r) : static_cast<int>(k));
                    if (rng.chance(0.3)) std::reverse(s.axes.begin(), s.axes.end());
                }
                i64 reduced = 1;
                for (std::size_t k = 0; k < r; ++k) {
                    if (!chosen[k]) continue;
                    reduced *= x.shape[k];
                    if (x.shape[k] == 0 && (s.red == Red::Max || s.red == Red::Min)) return;
                }
                if (s.red == Red::Prod && reduced > 64) s.red = Red::Sum;
                for (std::size_t k = 0; k < r; ++k)
                    if (!chosen[k]) s.shape.push_back(x.shape[k]);
                    else if (s.keepdim) s.shape.push_back(1);
                const DType t = x.dtype;
                switch (s.red) {
                    case Red::Sum: case Red::Prod: s.dtype = is_float(t) ? t : DType::Int64; break;
                    case Red::Max: case Red::Min: s.dtype = t; break;
                    case Red::Mean: s.dtype = is_float(t) ? t : DType::Float32; break;
                    case Red::Any: case Red::All: s.dtype = DType::Bool; break;
                }
                break;
            }
            case Kind::Reshape: {
                auto drawn = random_reshape(rng, x.shape);
                if (!drawn) return;
                std::tie(s.shape, s.target) = *drawn;
                s.dtype = x.dtype;
                break;
            }
            case Kind::Permute: {
                if (r < 2) return;
                std::tie(s.axes, s.shape) = random_permutation(rng, x.shape);
                s.dtype = x.dtype;
                break;
            }
            case Kind::Expand: {
                const std::size_t lead = static_cast<std::size_t>(rng.chance(0.4) ? rng.range(1, 2) : 0);
                if (r + lead > 5) return;
                for (std::size_t k = 0; k < lead; ++k) s.target.push_back(rng.range(1, 3));
                for (std::size_t k = 0; k < r; ++k) {
                    i64 e = x.shape[k];
                    if (e == 1 && rng.chance(0.6)) e = rng.chance(0.05) ? 0 : rng.range(2, 6);
                    s.target.push_back(e == x.shape[k] && rng.chance(0.2) ? -1 : e);
                    (void)e;
                }
                s.shape = s.target;
                for (std::size_t k = 0; k < r; ++k)
                    if (s.shape[lead + k] == -1) s.shape[lead + k] = x.shape[k];
                if (numel(s.shape) > cap) return;
                s.dtype = x.dtype;
                break;
            }
            case Kind::Slice: {
                if (r == 0) return;
                const std::size_t k = static_cast<std::size_t>(rng.below(static_cast<i64>(r)));
                s.axis = rng.chance(0.3) ? static_cast<int>(k) - static_cast<int>(r) : static_cast<int>(k);
                static const std::vector<i64> steps = {1, 1, 1, 2, 3, -1, -1, -2, -3};
                s.step = rng.pick(steps);
                const i64 n = x.shape[k];
                if (rng.chance(0.7)) s.start = rng.range(-n - 2, n + 2);
                if (rng.chance(0.7)) s.stop = rng.range(-n - 2, n + 2);
                s.shape = x.shape;
                s.shape[k] = slice_indices(n, s.start, s.stop, s.step)[2];
                s.dtype = x.dtype;
                break;
            }
            case Kind::Pad: {
                for (std::size_t k = 0; k < r; ++k) {
                    s.before.push_back(rng.chance(0.5) ? rng.range(0, 2) : 0);
                    s.after.push_back(rng.chance(0.5) ? rng.range(0, 2) : 0);
                    s.shape.push_back(x.shape[k] + s.before.back() + s.after.back());
                }
                if (numel(s.shape) > cap) return;
                s.value = random_scalar(category(x.dtype));
                s.dtype = x.dtype;
                break;
            }
            case Kind::Flip: {
                if (r == 0) return;
                s.axes = random_flip_axes(rng, r);
                s.shape = x.shape;
                s.dtype = x.dtype;
                break;
            }
            case Kind::Matmul: {
                if (r == 0) return;
                const i64 k = x.shape[r - 1];
                const i64 m = r >= 2 ? x.shape[r - 2] : 1;
                Shape xb(x.shape.begin(), x.shape.end() - static_cast<std::ptrdiff_t>(std::min<std::size_t>(r, 2)));
                Shape bs;
                const bool vec = rng.chance(0.2);
                i64 n = 1;
                if (vec) {
                    bs = {k};
                } else {
                    Shape bb = xb;  // batch axes of the second operand: broadcastable with x's
                    if (!bb.empty() && rng.chance(0.3)) bb.erase(0);
                    for (auto& e : bb)
                        if (rng.chance(0.2)) e = 1;
                    if (rng.chance(0.15)) bb.insert(0, 2);
                    if (bb.size() > 2) return;
                    n = rng.pick(std::vector<i64>{1, 2, 3, 4, 5, 8, 16, 17});
                    bs = bb;
                    bs.push_back(k);
                    bs.push_back(n);
                }
                // Output shape, NumPy's matmul rules.
                Shape yb(bs.begin(), bs.end() - static_cast<std::ptrdiff_t>(std::min<std::size_t>(bs.size(), 2)));
                auto batch = broadcast(xb, yb);
                if (!batch) return;
                Shape out = *batch;
                if (r >= 2) out.push_back(m);
                if (!vec) out.push_back(n);
                if (numel(out) * std::max<i64>(k, 1) > 400000 || numel(out) > cap) return;
                // An earlier step of that shape, or a new leaf.
                std::vector<int> same;
                for (int i = 0; i < count(); ++i)
                    if (at(i).shape == bs) same.push_back(i);
                s.b = !same.empty() && rng.chance(0.5) ? rng.pick(same)
                                                       : add_leaf(rng.chance(0.6) ? at(a).dtype : random_dtype(), bs);
                s.shape = out;
                s.dtype = promote_types(at(a).dtype, at(s.b).dtype);
                break;
            }
            case Kind::Gather: {
                if (r == 0) return;
                std::size_t k;
                s.axis = rng.axis(r, &k);
                if (x.shape[k] == 0) return;
                Shape is = x.shape;
                for (std::size_t d = 0; d < r; ++d)
                    if (d == k) is[d] = rng.range(0, 5);
                    else if (rng.chance(0.3)) is[d] = rng.range(0, x.shape[d]);
                if (numel(is) > cap) return;
                s.b = add_index_leaf(is, x.shape[k]);
                s.shape = is;
                s.dtype = x.dtype;
                break;
            }
            case Kind::ScatterAdd: {
                if (r == 0 || x.dtype == DType::Bool) return;
                std::size_t k;
                s.axis = rng.axis(r, &k);
                if (x.shape[k] == 0) return;
                Shape is = x.shape, ss;
                for (std::size_t d = 0; d < r; ++d)
                    if (d == k) is[d] = rng.range(0, 4);
                    else if (rng.chance(0.3)) is[d] = rng.range(0, x.shape[d]);
                ss = is;
                for (auto& e : ss)
                    if (rng.chance(0.2)) e += rng.range(1, 2);
                if (numel(ss) > cap || numel(x.shape) * std::max<i64>(is[k], 1) > 200000) return;
                s.b = add_index_leaf(is, x.shape[k]);
                s.c = add_leaf(rng.chance(0.5) ? x.dtype : random_dtype(), ss);
                s.shape = x.shape;
                s.dtype = x.dtype;
                break;
            }
            case Kind::Scan: {
                if (r == 0) return;
                std::size_t k;
                s.axis = rng.axis(r, &k);
                s.red = rng.chance(0.6) ? Red::Sum : Red::Prod;
                if (x.shape[k] > 300 || numel(x.shape) * x.shape[k] > 60000) return;
                s.shape = x.shape;
                s.dtype = is_float(x.dtype) ? x.dtype : DType::Int64;
                break;
            }
            case Kind::ArgExt: {
                if (r == 0) return;
                std::size_t k;
                s.axis = rng.axis(r, &k);
                if (x.shape[k] == 0) return;
                s.red = rng.chance(0.5) ? Red::Max : Red::Min;
                s.keepdim = rng.chance(0.4);
                for (std::size_t d = 0; d < r; ++d)
                    if (d != k) s.shape.push_back(x.shape[d]);
                    else if (s.keepdim) s.shape.push_back(1);
                s.dtype = DType::Int64;
                break;
            }
            case Kind::Concat: {
                if (r == 0) return;
                std::size_t k;
                s.axis = rng.axis(r, &k);
                const int parts = static_cast<int>(rng.range(1, 2));
                DType t = x.dtype;
                Shape out = x.shape;
                for (int j = 0; j < parts; ++j) {
                    std::vector<int> fit;  // earlier steps that differ from x at most along k
                    for (int i = 0; i < count(); ++i) {
                        const Shape& o = at(i).shape;
                        bool ok = o.size() == r;
                        for (std::size_t d = 0; ok && d < r; ++d) ok = d == k || o[d] == x.shape[d];
                        if (ok) fit.push_back(i);
                    }
                    int part;
                    if (!fit.empty() && rng.chance(0.5)) part = rng.pick(fit);
                    else {
                        Shape ps = x.shape;
                        ps[k] = rng.range(0, 4);
                        part = add_leaf(random_dtype(), ps);
                    }
                    (j == 0 ? s.b : s.c) = part;
                    t = promote_types(t, at(part).dtype);
                    out[k] += at(part).shape[k];
                }
                s.shape = out;
                s.dtype = t;
                break;
            }
            case Kind::Assign: {
                if (r == 0) return;
                std::size_t k;
                s.axis = rng.axis(r, &k);
                static const std::vector<i64> steps = {1, 1, 2, -1, -2};
                s.step = rng.pick(steps);
                const i64 n = x.shape[k];
                if (rng.chance(0.7)) s.start = rng.range(-n - 1, n + 1);
                if (rng.chance(0.7)) s.stop = rng.range(-n - 1, n + 1);
                Shape target = x.shape;
                target[k] = slice_indices(n, s.start, s.stop, s.step)[2];
                // The value broadcasts to the target: an earlier step that does, or a new leaf.
                std::vector<int> fit;
                for (int i = 0; i < count(); ++i) {
                    auto b = broadcast(at(i).shape, target);
                    if (b && *b == target) fit.push_back(i);
                }
                if (!fit.empty() && rng.chance(0.4)) s.b = rng.pick(fit);
                else {
                    Shape vs(target.begin() + static_cast<std::ptrdiff_t>(rng.below(static_cast<i64>(r) + 1)), target.end());
                    for (auto& e : vs)
                        if (rng.chance(0.3)) e = 1;
                    s.b = add_leaf(rng.chance(0.5) ? x.dtype : random_dtype(), vs);
                }
                s.lazy = rng.chance(0.5);
                s.shape = x.shape;
                s.dtype = x.dtype;
                break;
            }
            case Kind::Random: {
                s.a = -1;
                s.rkind = static_cast<int>(rng.below(3));
                static const std::vector<DType> floats = {DType::Float32, DType::Float32, DType::Float64, DType::Float16};
                static const std::vector<DType> ints = {DType::Int32, DType::Int64, DType::UInt8};
                s.dtype = s.rkind == 2 ? rng.pick(ints) : maybe_bfloat16(rng.pick(floats));
                s.shape = rng.chance(0.1) ? Shape{rng.range(1000, 40000)} : leaf_shape(false);
                s.seed = rng.next() % 1000000007ull;
                s.low = s.dtype == DType::UInt8 ? rng.range(0, 250) : rng.range(-1000, 5);
                s.high = s.low + rng.range(1, s.dtype == DType::UInt8 ? 255 - s.low + 1 : 2000);
                s.output = true;  // compared on every device and path against the host's values
                break;
            }
            case Kind::Fused: {
                if (x.dtype != DType::Float32 && x.dtype != DType::Float64) return;
                s.pattern = static_cast<int>(rng.below(4));
                if (s.pattern == 3 && x.dtype != DType::Float32) s.pattern = 0;
                s.uop = kFusedUnary[rng.below(3)];
                s.bop = s.pattern == 2 ? kFusedCmp[rng.below(2)] : kFusedOp[rng.below(3)];
                s.bop2 = kFusedOp2[rng.below(2)];
                s.b = partner(x.shape, s.pattern == 3 ? DType::Float64 : x.dtype);
                s.shape = *broadcast(x.shape, at(s.b).shape);
                if (s.pattern == 1 || s.pattern == 2) {
                    s.c = partner(s.shape, x.dtype);
                    s.shape = *broadcast(s.shape, at(s.c).shape);
                }
                s.dtype = s.pattern == 3 ? DType::Float64 : x.dtype;
                break;
            }
            case Kind::Conv: {
                const std::size_t dims = conv_dims(rng);
                s.a = conv_input(a, dims, true);
                const Shape xs = at(s.a).shape;
                s.dtype = at(s.a).dtype;
                const Shape ws = draw_conv(rng, s, xs, dims);
                const auto out = conv_result(s, xs, &ws);
                // The reference's multiply-adds (at most channels / groups x taps per output), and
                // the weight's size.
                if (!out || numel(*out) * (xs[xs.size() - dims - 1] / s.groups) * numel(ws) / (ws[0] * ws[1]) > 100000 ||
                    numel(ws) > 1024)
                    return;
                s.b = operand(ws, s.dtype);
                if (rng.chance(0.5)) s.c = operand(Shape{(*out)[xs.size() - dims - 1]}, s.dtype);
                s.shape = *out;
                break;
            }
            case Kind::Pool: {
                const std::size_t dims = conv_dims(rng);
                s.a = conv_input(a, dims, false);
                const Shape xs = at(s.a).shape;
                const DType t = at(s.a).dtype;
                draw_pool(rng, s, xs, dims);
                const auto out = conv_result(s, xs);
                if (!out) return;
                s.shape = *out;
                s.dtype = s.pool == 1 ? DType::Int64 : s.pool == 0 || is_float(t) ? t : DType::Float32;
                break;
            }
        }
        if (numel(s.shape) > cap) return;
        push(std::move(s));
    }

public:
    /// Python's slice.indices(n) for (start, stop, step): {first, step, length}.
    static std::vector<i64> slice_indices(i64 n, std::optional<i64> start, std::optional<i64> stop, i64 step) {
        i64 first, last;
        if (step > 0) {
            first = !start ? 0 : *start < 0 ? std::max<i64>(*start + n, 0) : std::min(*start, n);
            last = !stop ? n : *stop < 0 ? std::max<i64>(*stop + n, 0) : std::min(*stop, n);
        } else {
            first = !start ? n - 1 : *start < 0 ? std::max<i64>(*start + n, -1) : std::min(*start, n - 1);
            last = !stop ? -1 : *stop < 0 ? std::max<i64>(*stop + n, -1) : std::min(*stop, n - 1);
        }
        const i64 span = step > 0 ? last - first : first - last, pace = step > 0 ? step : -step;
        const i64 len = span > 0 ? (span + pace - 1) / pace : 0;
        return {first, step, len};
    }
};

inline Program generate(u64 seed, const GenOptions& opt = {}) { return Generator(seed, opt).run(); }

// ============================================================================= reference
// Every element carries its value and a bound on |library - reference| (e); `dc` marks an
// element whose value is not determined (an input within its bound of a discontinuity, an
// overflow, ...): it is not compared and taints what depends on it. Integers are exact (i).

struct Val {
    double v = 0;  // floating value (already rounded to the dtype); for integers: (double)i
    double e = 0;  // error bound (floats); 0 means the library must match exactly
    i64 i = 0;     // integer and bool values
    bool dc = false;
};

struct Arr {
    DType dtype = DType::Float32;
    Shape shape;
    std::vector<Val> x;
};

inline Val dont_care() {
    Val r;
    r.dc = true;
    return r;
}

/// Unit roundoff of the type a dtype computes in (float16 computes in float).
inline double unit(DType t) { return t == DType::Float64 ? 0x1.0p-53 : 0x1.0p-24; }
inline double max_finite(DType t) {
    return t == DType::Float16    ? 65504.0
           : t == DType::BFloat16 ? 3.3895313892515355e38
           : t == DType::Float32  ? 3.4028234663852886e38
                                  : 1.7976931348623157e308;
}
/// The spacing of dtype t's values near |v| (at least the smallest normal's).
inline double ulp(DType t, double v) {
    const int bits = t == DType::Float16 ? 10 : t == DType::BFloat16 ? 7 : t == DType::Float32 ? 23 : 52;
    const int emin = t == DType::Float16 ? -14 : t == DType::BFloat16 || t == DType::Float32 ? -126 : -1022;
    const int ex = v == 0 || !std::isfinite(v) ? emin : std::max(std::ilogb(v), emin);
    return std::ldexp(1.0, ex - bits);
}

/// Wraps an exact integer into dtype t (two's complement; bool: != 0).
inline i64 wrap(DType t, i64 i) {
    switch (t) {
        case DType::Bool: return i != 0;
        case DType::UInt8: return static_cast<i64>(static_cast<std::uint8_t>(static_cast<u64>(i)));
        case DType::Int8: return static_cast<i64>(static_cast<std::int8_t>(static_cast<std::uint8_t>(static_cast<u64>(i))));
        case DType::Int16: return static_cast<i64>(static_cast<std::int16_t>(static_cast<std::uint16_t>(static_cast<u64>(i))));
        case DType::UInt16: return static_cast<i64>(static_cast<std::uint16_t>(static_cast<u64>(i)));
        case DType::UInt32: return static_cast<i64>(static_cast<std::uint32_t>(static_cast<u64>(i)));
        case DType::Int32: return static_cast<i64>(static_cast<std::int32_t>(static_cast<std::uint32_t>(static_cast<u64>(i))));
        default: return i;
    }
}
inline Val ival(DType t, i64 i, bool dc = false) {
    Val r;
    r.i = wrap(t, i);
    r.v = static_cast<double>(r.i);
    r.dc = dc;
    return r;
}

/// The floating result of an op in dtype t: `v` is the op's value computed in double on the
/// reference inputs, `e` the bound propagated from the inputs plus the op's own error. `exact`:
/// the library computes the same correctly rounded result (exact inputs, a correctly rounded op).
inline Val fin(DType t, double v, double e, bool exact, bool rounds = false) {
    if (std::isnan(e) || std::isinf(e)) return dont_care();
    Val r;
    if (!std::isfinite(v)) {
        if (e > 0 || !exact) return dont_care();  // an inf or NaN reached only approximately
        r.v = v;
        return r;
    }
    if (std::fabs(v) + e > max_finite(t)) return dont_care();  // may overflow in some evaluation
    const double rounded = to_dtype(t, v);
    if (is_reduced(t) && !rounds) {
        // Kernels hold half (bfloat16) values as floats between ops: consumers may see v, not half(v).
        e += std::fabs(rounded - v);
        if (!exact || static_cast<double>(static_cast<float>(v)) != v) e += ulp(t, v);
    } else if (is_reduced(t)) {  // a cast to half (bfloat16): rounds in the kernel too
        if (!exact) e += std::fabs(rounded - v) + ulp(t, v);
    } else if (!exact) {
        e += std::fabs(rounded - v) + ulp(t, v);
    }
    if (e > 0) e += 4 * ulp(t, 0);  // subnormals may be flushed
    r.v = rounded;
    r.e = e;
    return r;
}

/// |a| * e, with 0 for an exact operand (so inf * 0 is no NaN).
inline double scaled(double a, double e) { return e == 0 ? 0 : std::fabs(a) * e; }
/// An op's own error of k units of the compute type (0 for a non-finite result).
inline double own(double k, DType t, double v) { return std::isfinite(v) ? k * unit(t) * std::fabs(v) : 0; }
/// Distance from x to the nearest of the points c + n (n integer).
inline double dist_to_grid(double x, double c) { return std::fabs(x - c - std::nearbyint(x - c)); }

/// Converts an element to dtype `to` (the library's cast: float to integer saturates, NaN
/// gives 0; integer to integer wraps).
inline Val cast_val(const Val& a, DType from, DType to) {
    if (a.dc) return a;
    if (from == to) return a;
    if (!is_float(from)) {  // from an exact integer or bool
        if (!is_float(to)) return ival(to, a.i);
        const double v = static_cast<double>(a.i);
        // Beyond 2^53 the double is itself rounded: the float rounding may then differ.
        const bool exact = std::fabs(v) < 0x1.0p53;
        return fin(to, v, exact ? 0 : ulp(to, v), exact);
    }
    const double v = a.v;
    if (is_float(to)) return fin(to, v, a.e, a.e == 0, true);
    if (to == DType::Bool) {
        if (a.e > 0 && std::fabs(v) <= a.e) return dont_care();
        return ival(to, v != 0);
    }
    if (std::isnan(v)) return ival(to, 0);
    if (a.e > 0 && dist_to_grid(v, 0) <= a.e) return dont_care();
    // Saturation thresholds as the source type holds them.
    const auto src_threshold = [&](double limit) { return from == DType::Float64 ? limit : static_cast<double>(static_cast<float>(limit)); };
    const double lo = static_cast<double>(int_range(to).first), hi = static_cast<double>(int_range(to).second);
    if (v <= src_threshold(lo)) return ival(to, to == DType::Int64 ? std::numeric_limits<i64>::min() : static_cast<i64>(lo));
    if (v >= src_threshold(hi)) return ival(to, to == DType::Int64 ? std::numeric_limits<i64>::max() : static_cast<i64>(hi));
    return ival(to, static_cast<i64>(std::trunc(v)));
}

/// max |f(y) - f(x)| over y in [x - e, x + e] for f monotone there (endpoints).
template <class F>
double mono(F f, double x, double e) {
    if (e == 0) return 0;
    const double fx = f(x);
    return std::max(std::fabs(f(x + e) - fx), std::fabs(f(x - e) - fx));
}

/// From exp(-|x|), which never overflows (below -709, 1 / (1 + exp(-x)) was 0 where the true
/// value is a subnormal double: campaign seed 20171568, sigmoid(-716.95) = 4.29e-312).
inline double sigmoid(double x) {
    const double z = std::exp(-std::fabs(x));
    return x >= 0 ? 1 / (1 + z) : z / (1 + z);
}
inline double gelu(double x) {
    if (x == -INFINITY) return -0.0;
    // erfc, not 1 + erf (which cancels below 0); in long double, as rounding x / sqrt(2) costs
    // about 2 z^2 ulp where erfc(z) is steep.
    const long double l = x;
    return static_cast<double>(0.5L * l * std::erfc(-l / std::sqrt(2.0L)));
}
inline double silu(double x) { return x == -INFINITY ? -0.0 : x * sigmoid(x); }

/// A unary op on an element already cast to the compute dtype t; result dtype rt.
inline Val unary_val(UnaryOp op, const Val& a, DType t, DType rt) {
    if (a.dc) return a;
    if (!is_float(t)) {  // integers and bool: exact
        const i64 x = a.i;
        switch (op) {
            case UnaryOp::Neg: return ival(t, static_cast<i64>(0ull - static_cast<u64>(x)));
            case UnaryOp::Abs: return ival(t, x < 0 ? static_cast<i64>(0ull - static_cast<u64>(x)) : x);
            case UnaryOp::Relu: return ival(t, x < 0 ? 0 : x);
            case UnaryOp::Sign: return ival(t, (x > 0) - (x < 0));
            case UnaryOp::Floor: case UnaryOp::Ceil: case UnaryOp::Round: case UnaryOp::Trunc: return ival(t, x);
            case UnaryOp::BitwiseNot: return ival(t, t == DType::Bool ? !x : ~x);
            case UnaryOp::LogicalNot: return ival(rt, x == 0);
            case UnaryOp::IsNan: case UnaryOp::IsInf: return ival(rt, 0);
            default: return dont_care();  // not reached: float ops compute in float
        }
    }
    const double x = a.v, e = a.e;
    const bool ex = e == 0;
    const double u = unit(t);
    auto smooth = [&](auto f, double k, bool monotone, double lipschitz, double abs_extra) {
        const double v = f(x);
        double prop = monotone ? mono(f, x, e) : lipschitz * e;
        if (!std::isfinite(v) && !ex) return dont_care();
        return fin(t, v, prop + own(k, t, v) + (std::isfinite(v) ? abs_extra : 0), false);
    };
    // Domain edges: an input whose interval reaches a pole or a branch cut is undetermined.
    auto reaches = [&](double c) { return !ex && std::fabs(x - c) <= e; };
    switch (op) {
        case UnaryOp::Neg: return fin(t, -x, e, ex);
        case UnaryOp::Abs: return fin(t, std::fabs(x), e, ex);
        case UnaryOp::Relu: return fin(t, x < 0 ? 0.0 : x, e, ex);  // NaN stays NaN
        case UnaryOp::Sign:
            if (reaches(0)) return dont_care();
            return fin(t, x > 0 ? 1.0 : x < 0 ? -1.0 : x == 0 ? 0.0 : x, 0, true);
        case UnaryOp::Floor: case UnaryOp::Ceil: case UnaryOp::Trunc: case UnaryOp::Round: {
            if (!ex && std::isfinite(x) && dist_to_grid(x, op == UnaryOp::Round ? 0.5 : 0.0) <= e * 1.0000001) return dont_care();
            const double v = op == UnaryOp::Floor ? std::floor(x) : op == UnaryOp::Ceil ? std::ceil(x)
                           : op == UnaryOp::Trunc ? std::trunc(x) : std::nearbyint(x);
            return fin(t, v, 0, true);
        }
        case UnaryOp::LogicalNot:
            if (reaches(0)) return dont_care();
            return ival(rt, x == 0);
        case UnaryOp::IsNan: return ival(rt, std::isnan(x));
        case UnaryOp::IsInf: return ival(rt, std::isinf(x));
        case UnaryOp::Exp: return smooth([](double y) { return std::exp(y); }, 4, true, 0, 0);
        case UnaryOp::Exp2: return smooth([](double y) { return std::exp2(y); }, 4, true, 0, 0);
        case UnaryOp::Log:
            if (reaches(0)) return dont_care();
            return smooth([](double y) { return std::log(y); }, 4, true, 0, 0);
        case UnaryOp::Log2:
            if (reaches(0)) return dont_care();
            return smooth([](double y) { return std::log2(y); }, 4, true, 0, 0);
        case UnaryOp::Sqrt:
            if (reaches(0)) return dont_care();
            return smooth([](double y) { return std::sqrt(y); }, 3, true, 0, 0);
        case UnaryOp::Rsqrt:
            if (reaches(0)) return dont_care();
            return smooth([](double y) { return 1 / std::sqrt(y); }, 3, true, 0, 0);
        case UnaryOp::Reciprocal:
            if (reaches(0)) return dont_care();
            return smooth([](double y) { return 1 / y; }, 3, true, 0, 0);
        case UnaryOp::Sin: return smooth([](double y) { return std::sin(y); }, 5, false, 1, 4 * u * (1 + std::fabs(x)));
        case UnaryOp::Cos: return smooth([](double y) { return std::cos(y); }, 5, false, 1, 4 * u * (1 + std::fabs(x)));
        case UnaryOp::Tan: {
            if (!std::isfinite(x)) return fin(t, std::tan(x), 0, false);
            // Undetermined near a pole: the interval must stay inside one branch.
            if (dist_to_grid(x / M_PI, 0.5) * M_PI <= e + 1e-3) return dont_care();
            const double v = std::tan(x);
            return smooth([](double y) { return std::tan(y); }, 6, true, 0, 4 * u * (1 + std::fabs(x)) * (1 + v * v));
        }
        case UnaryOp::Tanh: return smooth([](double y) { return std::tanh(y); }, 6, true, 0, 0);
        case UnaryOp::Sigmoid: return smooth(sigmoid, 10, true, 0, 0);
        // Above -1, the host's 1 + erf (erf allowed 16 ulp, as OpenCL's): an absolute error of
        // ~16u in 1 + erf, times x / 2. Below, 0.5 x erfc(-x / sqrt(2)) has no cancellation:
        // relative, OpenCL's 16 ulp for erfc and a few for the rest (gelu(-7.8f) must not be -0).
        // Double gelu above -1 takes xsimd's double erf: docs/numerics.md's table measures 27.6 ulp (seed
        // 20014174: 22 ulp at x = 3.1411).
        case UnaryOp::Gelu:
            return x < -1 ? smooth(gelu, 20, false, 1.13, 0)
                          : smooth(gelu, t == DType::Float64 ? 32 : 6, false, 1.13, 12 * u * std::fabs(x));
        case UnaryOp::Silu: return smooth(silu, 12, false, 1.1, 0);
        // OpenCL's bounds (log1p 2 ulp, expm1 3, erf and erfc 16, asin and acos 4, atan 5, the
        // hyperbolic functions 4 and atanh 5) and a little; undetermined where the interval
        // reaches a pole or an end of the domain.
        case UnaryOp::Log1p:
            if (reaches(-1)) return dont_care();
            return smooth([](double y) { return std::log1p(y); }, 3, true, 0, 0);
        case UnaryOp::Expm1: return smooth([](double y) { return std::expm1(y); }, 4, true, 0, 0);
        case UnaryOp::Erf: return smooth([](double y) { return std::erf(y); }, 17, true, 0, 0);
        case UnaryOp::Erfc: return smooth([](double y) { return std::erfc(y); }, 17, true, 0, 0);
        case UnaryOp::Asin:
            if (reaches(1) || reaches(-1)) return dont_care();
            return smooth([](double y) { return std::asin(y); }, 5, true, 0, 0);
        case UnaryOp::Acos:
            if (reaches(1) || reaches(-1)) return dont_care();
            return smooth([](double y) { return std::acos(y); }, 5, true, 0, 0);
        case UnaryOp::Atan: return smooth([](double y) { return std::atan(y); }, 6, true, 0, 0);
        case UnaryOp::Sinh: return smooth([](double y) { return std::sinh(y); }, 5, true, 0, 0);
        case UnaryOp::Cosh: return smooth([](double y) { return std::cosh(y); }, 5, false, std::sinh(std::fabs(x) + e), 0);
        case UnaryOp::Asinh: return smooth([](double y) { return std::asinh(y); }, 5, true, 0, 0);
        case UnaryOp::Acosh:
            if (reaches(1)) return dont_care();
            return smooth([](double y) { return std::acosh(y); }, 5, true, 0, 0);
        case UnaryOp::Atanh:
            if (reaches(1) || reaches(-1)) return dont_care();
            return smooth([](double y) { return std::atanh(y); }, 6, true, 0, 0);
        case UnaryOp::BitwiseNot: break;
    }
    return dont_care();
}

// Integer binary ops in the exact C++ type T (the library's documented semantics).
template <class T>
i64 int_binary(BinaryOp op, T a, T b) {
    using U = std::make_unsigned_t<decltype(T{} + T{})>;
    constexpr int bits = 8 * sizeof(T);
    switch (op) {
        case BinaryOp::Add: return static_cast<T>(static_cast<U>(a) + static_cast<U>(b));
        case BinaryOp::Sub: return static_cast<T>(static_cast<U>(a) - static_cast<U>(b));
        case BinaryOp::Mul: return static_cast<T>(static_cast<U>(a) * static_cast<U>(b));
        case BinaryOp::Pow: {
            if (std::is_signed_v<T> && b < 0) return a == 1 ? 1 : a == T(-1) ? ((b & 1) ? -1 : 1) : 0;
            U r = 1, base = static_cast<U>(a);
            for (i64 n = b; n > 0; n >>= 1) {
                if (n & 1) r = static_cast<U>(r * base);
                base = static_cast<U>(base * base);
            }
            return static_cast<T>(r);
        }
        case BinaryOp::Maximum: return a > b ? a : b;
        case BinaryOp::Minimum: return a < b ? a : b;
        case BinaryOp::Fmod:
            if (b == 0 || (std::is_signed_v<T> && b == T(-1))) return 0;
            return static_cast<T>(a % b);
        case BinaryOp::Remainder: {
            if (b == 0 || (std::is_signed_v<T> && b == T(-1))) return 0;
            const T r = static_cast<T>(a % b);
            return r != 0 && ((r < 0) != (b < 0)) ? static_cast<T>(r + b) : r;
        }
        case BinaryOp::FloorDivide: {
            if (b == 0) return 0;
            if (std::is_signed_v<T> && b == T(-1)) return static_cast<T>(U(0) - static_cast<U>(a));
            const T q = static_cast<T>(a / b);
            return (a % b != 0 && ((a < 0) != (b < 0))) ? static_cast<T>(q - 1) : q;
        }
        case BinaryOp::BitAnd: return static_cast<T>(a & b);
        case BinaryOp::BitOr: return static_cast<T>(a | b);
        case BinaryOp::BitXor: return static_cast<T>(a ^ b);
        case BinaryOp::Shl: {
            const i64 n = static_cast<i64>(b);
            if (n < 0 || n >= bits) return 0;
            return static_cast<T>(static_cast<U>(a) << n);
        }
        case BinaryOp::Shr: {
            const i64 n = static_cast<i64>(b);
            if (n < 0 || n >= bits) return std::is_signed_v<T> && a < 0 ? -1 : 0;
            if (std::is_signed_v<T> && a < 0) return static_cast<T>(~(~a >> n));
            return static_cast<T>(a >> n);
        }
        default: return 0;
    }
}

inline bool compare(BinaryOp op, double a, double b) {
    switch (op) {
        case BinaryOp::Lt: return a < b;
        case BinaryOp::Le: return a <= b;
        case BinaryOp::Gt: return a > b;
        case BinaryOp::Ge: return a >= b;
        case BinaryOp::Eq: return a == b;
        default: return a != b;
    }
}

/// NumPy's floor division of floats, computed in F (float for float32 and float16).
template <class F>
double float_floor_divide(F a, F b) {
    if (b == F(0)) return a / b;
    const F m = std::fmod(a, b);
    F d = (a - m) / b;
    if (m != F(0) && (b < F(0)) != (m < F(0))) d -= F(1);
    if (d == F(0)) return std::copysign(F(0), a / b);
    const F f = std::floor(d);
    return d - f > F(0.5) ? f + F(1) : f;
}

/// pow's own error in ulps: OpenCL allows 16; exp(b log a) in the compute type adds about
/// |b log a| (the host's double pow; its float pow computes in double, within 1 ulp).
inline double pow_ulps(double a, double b) {
    const double l = std::fabs(b * std::log(std::fabs(a)));
    return 16 + 2 * (std::isfinite(l) ? l : 0);
}

/// A binary op on elements already cast to the compute dtype t; result dtype rt.
inline Val binary_val(BinaryOp op, const Val& A, const Val& B, DType t, DType rt) {
    if (A.dc || B.dc) return dont_care();
    const BRule rule = brule(op);
    if (!is_float(t)) {
        if (rule == BRule::Compare) {
            const i64 a = A.i, b = B.i;
            bool r = false;
            switch (op) {
                case BinaryOp::Lt: r = a < b; break;
                case BinaryOp::Le: r = a <= b; break;
                case BinaryOp::Gt: r = a > b; break;
                case BinaryOp::Ge: r = a >= b; break;
                case BinaryOp::Eq: r = a == b; break;
                default: r = a != b;
            }
            return ival(rt, r);
        }
        if (rule == BRule::Predicate)
            return ival(rt, op == BinaryOp::LogicalAnd ? (A.i != 0 && B.i != 0) : (A.i != 0 || B.i != 0));
        if (t == DType::Bool) {  // bitwise and ordered ops on bool
            const bool a = A.i != 0, b = B.i != 0;
            switch (op) {
                case BinaryOp::BitAnd: case BinaryOp::Minimum: return ival(rt, a && b);
                case BinaryOp::BitOr: case BinaryOp::Maximum: return ival(rt, a || b);
                case BinaryOp::BitXor: return ival(rt, a != b);
                default: return dont_care();
            }
        }
        switch (t) {
            case DType::UInt8: return ival(rt, int_binary<std::uint8_t>(op, static_cast<std::uint8_t>(A.i), static_cast<std::uint8_t>(B.i)));
            case DType::Int8: return ival(rt, int_binary<std::int8_t>(op, static_cast<std::int8_t>(A.i), static_cast<std::int8_t>(B.i)));
            case DType::Int16: return ival(rt, int_binary<std::int16_t>(op, static_cast<std::int16_t>(A.i), static_cast<std::int16_t>(B.i)));
            case DType::UInt16: return ival(rt, int_binary<std::uint16_t>(op, static_cast<std::uint16_t>(A.i), static_cast<std::uint16_t>(B.i)));
            case DType::UInt32: return ival(rt, int_binary<std::uint32_t>(op, static_cast<std::uint32_t>(A.i), static_cast<std::uint32_t>(B.i)));
            case DType::Int32: return ival(rt, int_binary<std::int32_t>(op, static_cast<std::int32_t>(A.i), static_cast<std::int32_t>(B.i)));
            default: return ival(rt, int_binary<i64>(op, A.i, B.i));
        }
    }
    const double a = A.v, b = B.v, ea = A.e, eb = B.e;
    const bool ex = ea == 0 && eb == 0;
    auto near = [](double x, double e, double c) { return e > 0 && std::fabs(x - c) <= e; };
    switch (op) {
        case BinaryOp::Add: return fin(t, a + b, ea + eb, ex);
        case BinaryOp::Sub: return fin(t, a - b, ea + eb, ex);
        case BinaryOp::Mul: return fin(t, a * b, scaled(a, eb) + scaled(b, ea) + ea * eb, ex);
        case BinaryOp::Div: {
            if (near(b, eb, 0) || (b == 0 && near(a, ea, 0))) return dont_care();
            const double v = a / b;
            if (!std::isfinite(v)) return fin(t, v, ex ? 0 : 1, ex);
            const double prop = ex ? 0 : (scaled(a, eb) + std::fabs(b) * ea) / (std::fabs(b) * (std::fabs(b) - eb));
            return fin(t, v, prop + own(3, t, v), false);
        }
        case BinaryOp::Pow: {
            const double v = std::pow(a, b);
            if (ex) {
                // Exponents 0 and 1, base 1 and 0 and the special values are exact. Squares are not:
                // the host's float pow(x, 2) is x * x for x > 0 but powf for x < 0 (0.52 ulp off).
                const bool exact = b == 0 || b == 1 || a == 1 || !std::isfinite(v) || !std::isfinite(a) ||
                                   !std::isfinite(b) || a == 0;
                return fin(t, v, exact ? 0 : own(pow_ulps(a, b), t, v), exact);
            }
            if (!std::isfinite(a) || !std::isfinite(b)) return dont_care();
            double lo = v, hi = v;
            if (a - ea > 0) {  // monotone in each operand on the box: the corners bound it
                for (double x : {a - ea, a + ea})
                    for (double y : {b - eb, b + eb}) {
                        const double c = std::pow(x, y);
                        lo = std::min(lo, c), hi = std::max(hi, c);
                    }
            } else if (eb == 0 && b == std::nearbyint(b)) {  // whole exponent: endpoints, and 0 if inside
                const bool zero_inside = std::fabs(a) <= ea;
                if (zero_inside && b < 0) return dont_care();  // a pole
                for (double x : {a - ea, a + ea, zero_inside ? 0.0 : a}) {
                    const double c = std::pow(x, b);
                    lo = std::min(lo, c), hi = std::max(hi, c);
                }
            } else {
                return dont_care();
            }
            if (!std::isfinite(v)) return dont_care();
            return fin(t, v, std::max(hi - v, v - lo) + own(pow_ulps(a, b), t, v), false);
        }
        case BinaryOp::Maximum: case BinaryOp::Minimum: {
            const bool mx = op == BinaryOp::Maximum;
            const double v = std::isnan(a) ? a : std::isnan(b) ? b : mx ? std::max(a, b) : std::min(a, b);
            return fin(t, v, std::max(ea, eb), ex);
        }
        case BinaryOp::Lt: case BinaryOp::Le: case BinaryOp::Gt: case BinaryOp::Ge: case BinaryOp::Eq: case BinaryOp::Ne: {
            if (!ex && std::isfinite(a) && std::isfinite(b) && std::fabs(a - b) <= (ea + eb) * 1.0000001) return dont_care();
            return ival(rt, compare(op, a, b));
        }
        case BinaryOp::LogicalAnd: case BinaryOp::LogicalOr: {
            if (near(a, ea, 0) || near(b, eb, 0)) return dont_care();
            return ival(rt, op == BinaryOp::LogicalAnd ? (a != 0 && b != 0) : (a != 0 || b != 0));
        }
        case BinaryOp::Fmod: case BinaryOp::Remainder: case BinaryOp::FloorDivide: {
            if (near(b, eb, 0)) return dont_care();
            if (!ex) {
                if (!std::isfinite(a) || !std::isfinite(b)) return dont_care();
                // Discontinuous where a / b crosses a whole number.
                const double q = a / b;
                const double eq = (scaled(a, eb) + std::fabs(b) * ea) / (std::fabs(b) * (std::fabs(b) - eb)) + 1e-9 * std::fabs(q);
                if (dist_to_grid(q, 0) <= eq || std::fabs(q) > 1e6) return dont_care();
                const double n = std::trunc(q), f = std::floor(q);
                if (op == BinaryOp::FloorDivide) return fin(t, f, 0, true);
                const double r = std::fmod(a, b);
                double v = r;
                if (op == BinaryOp::Remainder && r != 0 && (r < 0) != (b < 0)) v = r + b;
                return fin(t, v, ea + (std::fabs(n) + 1) * eb, false);
            }
            if (op == BinaryOp::FloorDivide) {
                const double v = t == DType::Float64 ? float_floor_divide<double>(a, b)
                                                     : float_floor_divide<float>(static_cast<float>(a), static_cast<float>(b));
                return fin(t, v, 0, true);
            }
            const double r = std::fmod(a, b);
            if (op == BinaryOp::Fmod || b == 0) return fin(t, r, 0, true);
            if (r == 0) return fin(t, std::copysign(0.0, b), 0, true);
            const double v = (r < 0) != (b < 0) ? r + b : r;  // one rounding, as in the compute type
            return fin(t, v, 0, true);
        }
        case BinaryOp::Atan2: {  // OpenCL's 6 ulp; |grad| = 1 / hypot(a, b)
            const double v = std::atan2(a, b), spread = ea + eb;
            if (ex) return fin(t, v, own(7, t, v), false);
            const double r = std::hypot(a, b);
            // The branch cut (a = 0, b < 0) and the origin: undetermined.
            if (!std::isfinite(r) || r <= 2 * spread || (near(a, ea, 0) && b - eb < 0)) return dont_care();
            return fin(t, v, spread / (r - spread) + own(7, t, v), false);
        }
        case BinaryOp::Hypot: {  // OpenCL's 4 ulp; 1-Lipschitz in each operand
            const double v = std::hypot(a, b);
            return fin(t, v, ea + eb + own(5, t, v), false);
        }
        case BinaryOp::Copysign:  // exact, but a zero's or NaN's sign in b depends on how it was computed
            if (std::isnan(b) || near(b, eb, 0) || b == 0) return dont_care();
            return fin(t, std::copysign(a, b), ea, ex);
        default: return dont_care();
    }
}

/// Index of the input element an output element of `out` reads under NumPy broadcasting.
inline std::vector<i64> broadcast_map(const Shape& out, const Shape& in) {
    const i64 n = numel(out);
    std::vector<i64> map(static_cast<std::size_t>(n));
    const std::size_t lead = out.size() - in.size();
    std::vector<i64> idx(out.size(), 0);
    for (i64 lin = 0; lin < n; ++lin) {
        i64 src = 0;
        for (std::size_t k = 0; k < in.size(); ++k) src = src * in[k] + (in[k] == 1 ? 0 : idx[lead + k]);
        map[static_cast<std::size_t>(lin)] = src;
        for (std::size_t k = out.size(); k-- > 0;)
            if (++idx[k] < out[k]) break;
            else idx[k] = 0;
    }
    return map;
}

/// Gathers an output through an index function: out[i] = in[src(index of i)] or a fill value.
template <class F>
Arr view(const Arr& in, DType t, const Shape& shape, F src) {
    Arr out{t, shape, std::vector<Val>(static_cast<std::size_t>(numel(shape)))};
    std::vector<i64> idx(shape.size(), 0);
    for (auto& o : out.x) {
        o = src(idx);
        for (std::size_t k = shape.size(); k-- > 0;)
            if (++idx[k] < shape[k]) break;
            else idx[k] = 0;
    }
    (void)in;
    return out;
}

inline i64 linear(const std::vector<i64>& idx, const Shape& shape) {
    i64 l = 0;
    for (std::size_t k = 0; k < shape.size(); ++k) l = l * shape[k] + idx[k];
    return l;
}

inline int norm_axis(int a, std::size_t r) { return a < 0 ? a + static_cast<int>(r) : a; }

/// The value of a scalar operand as a Val of dtype t (the graph converts it to t).
inline Val scalar_val(const Scalar& s, DType t) {
    Val v;
    if (is_float(s.dtype)) {
        v.v = is_float(t) ? to_dtype(t, s.f) : s.f;  // a constant holds the rounded value exactly
        return is_float(t) ? v : cast_val(v, DType::Float64, t);
    }
    v.i = s.i;
    v.v = static_cast<double>(s.i);
    return cast_val(v, s.dtype == DType::Bool ? DType::Bool : DType::Int64, t);
}

inline Arr cast_arr(const Arr& a, DType t) {
    if (a.dtype == t) return a;
    Arr out{t, a.shape, a.x};
    for (auto& x : out.x) x = cast_val(x, a.dtype, t);
    return out;
}

/// Rounding bound of a sum or product of n terms, in units of the compute type: any order
/// (the classic gamma_n; a sqrt(n) estimate is too tight for sums of repeated values, whose
/// rounding errors are systematic), plus the reference's own rounding in double.
inline double order_factor(i64 n) { return 2 * static_cast<double>(std::max<i64>(n, 1)) + 4; }

/// A reduction of `vals` (already in dtype t) as reduce op `red` (Sum, Prod, Max, Min).
inline Val reduce_vals(Red red, const std::vector<const Val*>& vals, DType t) {
    for (const Val* v : vals)
        if (v->dc) return dont_care();
    const i64 n = static_cast<i64>(vals.size());
    if (!is_float(t)) {
        u64 acc = red == Red::Prod ? 1 : 0;
        i64 m = red == Red::Max ? std::numeric_limits<i64>::min() : std::numeric_limits<i64>::max();
        for (const Val* v : vals) {
            if (red == Red::Sum) acc += static_cast<u64>(v->i);
            else if (red == Red::Prod) acc *= static_cast<u64>(v->i);
            else m = red == Red::Max ? std::max(m, v->i) : std::min(m, v->i);
        }
        if (red == Red::Sum || red == Red::Prod) return ival(t, static_cast<i64>(acc));
        if (t == DType::Bool && n == 0) return ival(t, red == Red::Min);  // all/any identities
        return ival(t, m);
    }
    double acc = red == Red::Prod ? 1 : 0, e = 0, mag = 0, up = 1, down = 1;
    bool exact = true, whole = true;
    if (red == Red::Max || red == Red::Min) {
        acc = red == Red::Max ? -INFINITY : INFINITY;
        for (const Val* v : vals) {
            if (std::isnan(v->v)) return fin(t, v->v, 0, true);
            acc = red == Red::Max ? std::max(acc, v->v) : std::min(acc, v->v);
            e = std::max(e, v->e);
        }
        return fin(t, acc, e, e == 0);
    }
    for (const Val* v : vals) {
        exact = exact && v->e == 0;
        whole = whole && v->v == std::nearbyint(v->v);
        if (red == Red::Sum) {
            acc += v->v;
            e += v->e;
            mag += std::fabs(v->v);
        } else {
            acc *= v->v;
            up *= std::fabs(v->v) + v->e;
            down *= std::fabs(v->v);
        }
    }
    const double limit = t == DType::Float64 ? 0x1.0p53 : 0x1.0p24;
    if (red == Red::Sum) {
        if (!std::isfinite(acc)) return fin(t, acc, e, exact);
        if (exact && whole && mag < limit) return fin(t, acc, 0, true);  // every order is exact
        return fin(t, acc, e + order_factor(n) * unit(t) * mag, false);
    }
    // Products: partial products must stay within the normal range whatever the order.
    double big = 1, small = 1;
    bool zero = false;
    for (const Val* v : vals) {
        const double m = std::fabs(v->v) + v->e;
        zero = zero || v->v == 0;
        big *= std::max(m, 1.0);
        small *= std::min(std::fabs(v->v), 1.0);
    }
    if (!std::isfinite(acc)) return fin(t, acc, exact ? 0 : 1, exact);
    if (big > max_finite(t) / 4 || (!zero && small < 1e-30)) return dont_care();
    if (exact && whole && std::fabs(acc) < limit && big < limit) return fin(t, acc, 0, true);
    return fin(t, acc, (up - down) + order_factor(n) * unit(t) * up, false);
}

// Convolutions and pools, written out from their definitions (no windows as views, no product).

/// Steps a row-major multi-index through `shape`; false after the last.
inline bool advance(std::vector<i64>& idx, const Shape& shape) {
    for (std::size_t k = idx.size(); k-- > 0;)
        if (++idx[k] < shape[k]) return true;
        else idx[k] = 0;
    return false;
}

/// The windows of a conv or pool of spatial input `in`, output `out`, `kernel`: per output
/// position (flat), per kernel offset in window order (row-major), the flat input position
/// read, or -1 for padding.
inline std::vector<std::vector<i64>> windows_of(const Shape& in, const Shape& out, const Shape& kernel, const Step& s) {
    std::vector<std::vector<i64>> at(static_cast<std::size_t>(numel(out)));
    if (at.empty() || numel(kernel) == 0) return at;
    std::vector<i64> o(in.size(), 0), k(in.size(), 0);
    for (auto& window : at) {
        do {
            i64 flat = 0;
            bool inside = true;
            for (std::size_t i = 0; i < in.size(); ++i) {
                const i64 p = o[i] * s.stride[i] + k[i] * s.dilation[i] - s.before[i];
                inside = inside && p >= 0 && p < in[i];
                flat = flat * in[i] + p;
            }
            window.push_back(inside ? flat : -1);
        } while (advance(k, kernel));
        advance(o, out);
    }
    return at;
}

/// A sum of products, bounded as the matmul step's is: every order of summation, the terms'
/// own bounds; exact for whole values that no partial sum rounds.
struct Dot {
    double acc = 0, e = 0, mag = 0;
    bool exact = true, whole = true, dc = false;
    i64 n = 0;
    void add(const Val& x, const Val& y) {
        dc = dc || x.dc || y.dc;
        acc += x.v * y.v;
        e += scaled(x.v, y.e) + scaled(y.v, x.e) + x.e * y.e;
        mag += std::fabs(x.v * y.v);
        exact = exact && x.e == 0 && y.e == 0;
        whole = whole && x.v == std::nearbyint(x.v) && y.v == std::nearbyint(y.v);
        ++n;
    }
    /// The sum in dtype t (float16 accumulates in float and rounds once). `stages` > 0: float16
    /// partial sums are rounded to half on the way, up to stages + 1 times (conv_transpose's
    /// products per window offset, then their placed sums).
    Val value(DType t, i64 stages = 0) const {
        const DType ct = is_reduced(t) ? DType::Float32 : t;
        if (dc) return dont_care();
        Val v;
        const double limit = ct == DType::Float64 ? 0x1.0p53 : stages > 0 && is_reduced(t) ? 2 / reduced_unit(t) : 0x1.0p24;
        if (!std::isfinite(acc) || !std::isfinite(mag)) v = exact && n == 1 ? fin(ct, acc, 0, true) : dont_care();
        else if (exact && whole && mag < limit) v = fin(ct, acc, 0, true);
        else {
            double bound = e + order_factor(n) * unit(ct) * mag;
            if (stages > 0 && is_reduced(t)) bound += static_cast<double>(stages + 1) * reduced_unit(t) * mag;
            v = fin(ct, acc, bound, false);
        }
        return v.dc || ct == t ? v : cast_val(v, ct, t);
    }
};

/// conv (cross-correlation): out[n, oc, o] = bias[oc] + sum over ic < C/G and kernel offsets k
/// of x[n, g C/G + ic, o stride + k dilation - before] w[oc, ic, k], g = oc / (C_out/G), the
/// padding's zeros multiplied too (0 * inf is NaN there as well). conv_transpose: every
/// x[n, ic, p] w[ic, oc, k] added at out[n, g C_out/G + oc, p stride + k dilation - before].
inline Arr conv_ref(const Step& s, const Arr& x, const Arr& w, const Arr* bias) {
    const std::size_t dims = spatial_dims(s), c = x.shape.size() - dims - 1;
    const DType t = s.dtype;
    const Shape in(x.shape.begin() + static_cast<std::ptrdiff_t>(c) + 1, x.shape.end());
    const Shape out(s.shape.begin() + static_cast<std::ptrdiff_t>(c) + 1, s.shape.end());
    const Shape kernel(w.shape.begin() + 2, w.shape.end());
    const i64 batch = c ? x.shape[0] : 1, channels = x.shape[c], out_channels = s.shape[c];
    const i64 plane = numel(in), spots = numel(out), taps = numel(kernel);
    const i64 per_group = channels / s.groups, out_per_group = out_channels / s.groups;
    Arr r{t, s.shape, std::vector<Val>(static_cast<std::size_t>(numel(s.shape)))};
    auto xv = [&](i64 n, i64 ch, i64 p) -> const Val& { return x.x[static_cast<std::size_t>((n * channels + ch) * plane + p)]; };
    if (!s.transposed) {
        const auto win = windows_of(in, out, kernel, s);
        const Val zero;
        for (i64 n = 0; n < batch; ++n)
            for (i64 oc = 0; oc < out_channels; ++oc)
                for (i64 o = 0; o < spots; ++o) {
                    const i64 g = oc / out_per_group;
                    Dot d;
                    for (i64 ic = 0; ic < per_group; ++ic)
                        for (i64 k = 0; k < taps; ++k) {
                            const i64 p = win[static_cast<std::size_t>(o)][static_cast<std::size_t>(k)];
                            d.add(p < 0 ? zero : xv(n, g * per_group + ic, p), w.x[static_cast<std::size_t>((oc * per_group + ic) * taps + k)]);
                        }
                    r.x[static_cast<std::size_t>((n * out_channels + oc) * spots + o)] = d.value(t);
                }
    } else {
        // Which (input position, kernel offset) pairs land on each output position.
        std::vector<std::vector<std::pair<i64, i64>>> hits(static_cast<std::size_t>(spots));
        std::vector<i64> p(dims, 0), k(dims, 0);
        if (plane > 0 && taps > 0)
            do {
                do {
                    i64 q = 0;
                    bool inside = true;
                    for (std::size_t i = 0; i < dims; ++i) {
                        const i64 at = p[i] * s.stride[i] + k[i] * s.dilation[i] - s.before[i];
                        inside = inside && at >= 0 && at < out[i];
                        q = q * out[i] + at;
                    }
                    if (inside) hits[static_cast<std::size_t>(q)].emplace_back(linear(p, in), linear(k, kernel));
                } while (advance(k, kernel));
            } while (advance(p, in));
        for (i64 n = 0; n < batch; ++n)
            for (i64 oc = 0; oc < out_channels; ++oc)
                for (i64 q = 0; q < spots; ++q) {
                    const i64 g = oc / out_per_group, j = oc % out_per_group;
                    Dot d;
                    for (i64 ic = g * per_group; ic < (g + 1) * per_group; ++ic)
                        for (const auto& [at, tap] : hits[static_cast<std::size_t>(q)])
                            d.add(xv(n, ic, at), w.x[static_cast<std::size_t>((ic * out_per_group + j) * taps + tap)]);
                    r.x[static_cast<std::size_t>((n * out_channels + oc) * spots + q)] = d.value(t, taps);
                }
    }
    if (bias)
        for (std::size_t k = 0; k < r.x.size(); ++k)
            r.x[k] = binary_val(BinaryOp::Add, r.x[k], bias->x[static_cast<std::size_t>(static_cast<i64>(k) / spots % out_channels)], t, t);
    return r;
}

inline Arr pool_ref(const Step& s, const Arr& x0);

/// The lowest value of an integer dtype.
inline double scalar_lowest(DType t) { return is_int(t) ? static_cast<double>(int_range(t).first) : 0.0; }

/// adaptive_avg_pool: cell o of an axis of extent L averages [floor(o L / O), ceil((o + 1) L / O)).
/// An even split of every axis is avg_pool's; otherwise, axis after axis, a product with the
/// averaging matrix, its 1 / count entries rounded to the dtype, its zeros multiplied too.
inline Arr adaptive_ref(const Step& s, const Arr& x0) {
    const std::size_t dims = s.target.size(), c = x0.shape.size() - dims - 1;
    bool even = true;
    for (std::size_t i = 0; i < dims; ++i) even = even && x0.shape[c + 1 + i] % s.target[i] == 0;
    if (even) {
        Step q = s;
        q.pool = 2;
        q.include_pad = true;
        for (std::size_t i = 0; i < dims; ++i) {
            q.kernel.push_back(x0.shape[c + 1 + i] / s.target[i]);
            q.stride.push_back(q.kernel.back());
            q.dilation.push_back(1);
            q.before.push_back(0);
            q.after.push_back(0);
        }
        return pool_ref(q, x0);
    }
    const DType t = s.dtype;
    Arr y = cast_arr(x0, t);
    for (std::size_t i = 0; i < dims; ++i) {
        const std::size_t axis = c + 1 + i;
        const i64 len = y.shape[axis], cells = s.target[i];
        i64 outer = 1, inner = 1;
        for (std::size_t k = 0; k < axis; ++k) outer *= y.shape[k];
        for (std::size_t k = axis + 1; k < y.shape.size(); ++k) inner *= y.shape[k];
        Arr next{t, y.shape, {}};
        next.shape[axis] = cells;
        next.x.resize(static_cast<std::size_t>(outer * cells * inner));
        for (i64 cell = 0; cell < cells; ++cell) {
            const i64 begin = cell * len / cells, end = ((cell + 1) * len + cells - 1) / cells;
            Val weight, zero;
            weight.v = to_dtype(t, 1.0 / static_cast<double>(end - begin));
            for (i64 o = 0; o < outer; ++o)
                for (i64 q = 0; q < inner; ++q) {
                    Dot d;
                    for (i64 l = 0; l < len; ++l)
                        d.add(y.x[static_cast<std::size_t>((o * len + l) * inner + q)], l >= begin && l < end ? weight : zero);
                    next.x[static_cast<std::size_t>((o * cells + cell) * inner + q)] = d.value(t);
                }
        }
        y = std::move(next);
    }
    return y;
}

/// max_pool: each window's maximum over the input elements it holds (a NaN wins), or its
/// position (pool 1: the first maximum in window order, the flat index into the input's
/// plane; undetermined where another element is within the bounds of it); avg_pool: the
/// window's sum divided by the kernel's size, or (without count_include_pad) by the number
/// of input elements it holds; integers average in float32.
inline Arr pool_ref(const Step& s, const Arr& x0) {
    if (s.pool == 3) return adaptive_ref(s, x0);
    const std::size_t dims = spatial_dims(s), c = x0.shape.size() - dims - 1;
    const Arr x = s.pool == 2 ? cast_arr(x0, s.dtype) : x0;
    const Shape in(x.shape.begin() + static_cast<std::ptrdiff_t>(c) + 1, x.shape.end());
    const Shape out(s.shape.begin() + static_cast<std::ptrdiff_t>(c) + 1, s.shape.end());
    const i64 planes = numel(Shape(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(c) + 1));
    const i64 plane = numel(in), spots = numel(out);
    const auto win = windows_of(in, out, s.kernel, s);
    Arr r{s.dtype, s.shape, std::vector<Val>(static_cast<std::size_t>(planes * spots))};
    for (i64 pl = 0; pl < planes; ++pl)
        for (i64 o = 0; o < spots; ++o) {
            std::vector<const Val*> vals;
            std::vector<i64> at;
            for (i64 p : win[static_cast<std::size_t>(o)])
                if (p >= 0) {
                    vals.push_back(&x.x[static_cast<std::size_t>(pl * plane + p)]);
                    at.push_back(p);
                }
            Val& v = r.x[static_cast<std::size_t>(pl * spots + o)];
            if (vals.empty()) {  // a dilated window over padding alone: the lowest value at position -1
                v = s.pool == 1 ? ival(DType::Int64, -1) : is_float(x.dtype) ? fin(x.dtype, -INFINITY, 0, true)
                                                                             : ival(x.dtype, static_cast<i64>(scalar_lowest(x.dtype)));
            } else if (s.pool == 0) {
                v = reduce_vals(Red::Max, vals, x.dtype);
            } else if (s.pool == 2) {
                Val count;
                count.v = static_cast<double>(s.include_pad ? numel(s.kernel) : static_cast<i64>(vals.size()));
                v = binary_val(BinaryOp::Div, reduce_vals(Red::Sum, vals, s.dtype), count, s.dtype, s.dtype);
            } else {  // as argmax's reference (ArgExt), within the window
                const bool fl = is_float(x.dtype);
                auto key = [&](std::size_t j) { return fl ? vals[j]->v : static_cast<double>(vals[j]->i); };
                std::size_t best = 0;
                bool dc = false, nan = false;
                for (std::size_t j = 0; j < vals.size(); ++j) {
                    dc = dc || vals[j]->dc;
                    if (!nan && fl && std::isnan(vals[j]->v)) nan = true, best = j;
                }
                for (std::size_t j = 1; j < vals.size() && !nan; ++j)
                    if (key(j) > key(best)) best = j;
                bool unsure = false;
                for (std::size_t j = 0; j < vals.size() && !nan; ++j) {
                    const double slack = (vals[j]->e + vals[best]->e) * 1.0000001;
                    if (j != best && slack > 0 && key(best) - key(j) <= slack) unsure = true;
                }
                v = dc || unsure ? dont_care() : ival(DType::Int64, at[best]);
            }
        }
    return r;
}

/// The reference value of every step (in order), reading leaves from their data.
inline std::vector<Arr> evaluate(const Program& p) {
    std::vector<Arr> out;
    out.reserve(p.steps.size());
    for (const Step& s : p.steps) {
        auto in = [&](int k) -> const Arr& { return out[static_cast<std::size_t>(k)]; };
        Arr r{s.dtype, s.shape, {}};
        const i64 n = numel(s.shape);
        switch (s.kind) {
            case Kind::Leaf:
                r.x.resize(static_cast<std::size_t>(n));
                for (i64 k = 0; k < n; ++k) {
                    Val& v = r.x[static_cast<std::size_t>(k)];
                    v.v = s.data[static_cast<std::size_t>(k)];
                    v.i = is_float(s.dtype) ? 0 : static_cast<i64>(v.v);
                }
                break;
            case Kind::Unary: {
                const DType t = unary_compute(s.uop, in(s.a).dtype);
                const Arr x = cast_arr(in(s.a), t);
                r.x.resize(x.x.size());
                for (std::size_t k = 0; k < x.x.size(); ++k) r.x[k] = unary_val(s.uop, x.x[k], t, s.dtype);
                break;
            }
            case Kind::Binary: {
                const DType p0 = s.scalar_side == 1 ? promote_scalar(in(s.b).dtype, s.value.dtype)
                               : s.scalar_side == 2 ? promote_scalar(in(s.a).dtype, s.value.dtype)
                                                    : promote_types(in(s.a).dtype, in(s.b).dtype);
                const DType t = binary_compute(s.bop, p0);
                r.x.resize(static_cast<std::size_t>(n));
                auto operand = [&](int idx, bool scalar) {
                    if (scalar) {
                        Arr c{t, s.shape, std::vector<Val>(static_cast<std::size_t>(n), scalar_val(s.value, t))};
                        return c;
                    }
                    const Arr x = cast_arr(in(idx), t);
                    const auto map = broadcast_map(s.shape, x.shape);
                    Arr c{t, s.shape, std::vector<Val>(static_cast<std::size_t>(n))};
                    for (i64 k = 0; k < n; ++k) c.x[static_cast<std::size_t>(k)] = x.x[static_cast<std::size_t>(map[static_cast<std::size_t>(k)])];
                    return c;
                };
                const Arr A = operand(s.a, s.scalar_side == 1), B = operand(s.b, s.scalar_side == 2);
                for (std::size_t k = 0; k < r.x.size(); ++k) r.x[k] = binary_val(s.bop, A.x[k], B.x[k], t, s.dtype);
                break;
            }
            case Kind::Where: {
                const Arr c = cast_arr(in(s.a), DType::Bool), x = cast_arr(in(s.b), s.dtype), y = cast_arr(in(s.c), s.dtype);
                const auto mc = broadcast_map(s.shape, c.shape), mx = broadcast_map(s.shape, x.shape),
                           my = broadcast_map(s.shape, y.shape);
                r.x.resize(static_cast<std::size_t>(n));
                for (std::size_t k = 0; k < r.x.size(); ++k) {
                    const Val& cv = c.x[static_cast<std::size_t>(mc[k])];
                    r.x[k] = cv.dc ? dont_care() : cv.i ? x.x[static_cast<std::size_t>(mx[k])] : y.x[static_cast<std::size_t>(my[k])];
                }
                break;
            }
            case Kind::Cast: r = cast_arr(in(s.a), s.dtype); break;
            case Kind::Reduce: {
                const Arr& x0 = in(s.a);
                const std::size_t rank = x0.shape.size();
                std::vector<bool> red(rank, s.all_axes);
                for (int a : s.axes) red[static_cast<std::size_t>(norm_axis(a, rank))] = true;
                // The dtype values are folded in, as the library's graph casts them.
                DType t;
                Red op = s.red;
                switch (s.red) {
                    case Red::Sum: case Red::Prod: t = is_float(x0.dtype) ? x0.dtype : DType::Int64; break;
                    case Red::Mean: t = is_reduced(x0.dtype) ? DType::Float32 : is_float(x0.dtype) ? x0.dtype : DType::Int64; op = Red::Sum; break;
                    case Red::Any: t = DType::Bool; op = Red::Max; break;
                    case Red::All: t = DType::Bool; op = Red::Min; break;
                    default: t = x0.dtype;
                }
                const Arr x = cast_arr(x0, t);
                Shape kept;  // output shape with keepdim
                i64 count = 1;
                for (std::size_t k = 0; k < rank; ++k) {
                    kept.push_back(red[k] ? 1 : x.shape[k]);
                    if (red[k]) count *= x.shape[k];
                }
                const i64 m = numel(kept);
                std::vector<std::vector<const Val*>> groups(static_cast<std::size_t>(m));
                std::vector<i64> idx(rank, 0);
                for (std::size_t lin = 0; lin < x.x.size(); ++lin) {
                    i64 o = 0;
                    for (std::size_t k = 0; k < rank; ++k) o = o * kept[k] + (red[k] ? 0 : idx[k]);
                    groups[static_cast<std::size_t>(o)].push_back(&x.x[lin]);
                    for (std::size_t k = rank; k-- > 0;)
                        if (++idx[k] < x.shape[k]) break;
                        else idx[k] = 0;
                }
                r.x.resize(static_cast<std::size_t>(m));
                for (i64 o = 0; o < m; ++o) {
                    auto& g = groups[static_cast<std::size_t>(o)];
                    Val v;
                    if (t == DType::Bool && (s.red == Red::Any || s.red == Red::All)) {
                        // A decided true (any) or false (all) settles it even next to undetermined ones.
                        const bool want = s.red == Red::Any;
                        bool decided = false, undetermined = false;
                        for (const Val* e : g) {
                            if (e->dc) undetermined = true;
                            else if ((e->i != 0) == want) decided = true;
                        }
                        v = decided ? ival(t, want) : undetermined ? dont_care() : ival(t, !want);
                    } else {
                        v = reduce_vals(op, g, t);
                    }
                    if (s.red == Red::Mean && !v.dc) {
                        if (t == DType::Int64) {  // exact int64 sum, divided in double, stored as float32
                            v = fin(DType::Float32, static_cast<double>(v.i) / static_cast<double>(count),
                                    std::fabs(static_cast<double>(v.i)) < 0x1.0p53 ? 0 : 1, std::fabs(static_cast<double>(v.i)) < 0x1.0p53);
                        } else {
                            const double q = v.v / static_cast<double>(count);
                            if (count == 0) v = fin(s.dtype, q, v.e > 0 ? 1 : 0, v.e == 0);
                            else {
                                Val w = fin(t, q, v.e / static_cast<double>(count) + own(3, t, q), false);
                                v = w.dc ? w : cast_val(w, t, s.dtype);
                            }
                        }
                    }
                    r.x[static_cast<std::size_t>(o)] = v;
                }
                break;
            }
            case Kind::Reshape: case Kind::Expand: {
                const Arr& x = in(s.a);
                if (s.kind == Kind::Reshape) r.x = x.x;
                else {
                    const auto map = broadcast_map(s.shape, x.shape);
                    r.x.resize(static_cast<std::size_t>(n));
                    for (i64 k = 0; k < n; ++k) r.x[static_cast<std::size_t>(k)] = x.x[static_cast<std::size_t>(map[static_cast<std::size_t>(k)])];
                }
                break;
            }
            case Kind::Permute: {
                const Arr& x = in(s.a);
                const std::size_t rank = x.shape.size();
                r = view(x, s.dtype, s.shape, [&](const std::vector<i64>& idx) {
                    std::vector<i64> src(rank);
                    for (std::size_t k = 0; k < rank; ++k) src[static_cast<std::size_t>(norm_axis(s.axes[k], rank))] = idx[k];
                    return x.x[static_cast<std::size_t>(linear(src, x.shape))];
                });
                break;
            }
            case Kind::Slice: {
                const Arr& x = in(s.a);
                const std::size_t k = static_cast<std::size_t>(norm_axis(s.axis, x.shape.size()));
                const auto ind = Generator::slice_indices(x.shape[k], s.start, s.stop, s.step);
                r = view(x, s.dtype, s.shape, [&](std::vector<i64> idx) {
                    idx[k] = ind[0] + ind[1] * idx[k];
                    return x.x[static_cast<std::size_t>(linear(idx, x.shape))];
                });
                break;
            }
            case Kind::Flip: {
                const Arr& x = in(s.a);
                std::vector<bool> f(x.shape.size(), false);
                for (int a : s.axes) f[static_cast<std::size_t>(norm_axis(a, x.shape.size()))] = true;
                r = view(x, s.dtype, s.shape, [&](std::vector<i64> idx) {
                    for (std::size_t k = 0; k < idx.size(); ++k)
                        if (f[k]) idx[k] = x.shape[k] - 1 - idx[k];
                    return x.x[static_cast<std::size_t>(linear(idx, x.shape))];
                });
                break;
            }
            case Kind::Pad: {
                const Arr& x = in(s.a);
                const Val fill = scalar_val(s.value, s.dtype);
                r = view(x, s.dtype, s.shape, [&](std::vector<i64> idx) {
                    for (std::size_t k = 0; k < idx.size(); ++k) {
                        idx[k] -= s.before[k];
                        if (idx[k] < 0 || idx[k] >= x.shape[k]) return fill;
                    }
                    return x.x[static_cast<std::size_t>(linear(idx, x.shape))];
                });
                break;
            }
            case Kind::Matmul: {
                const DType p0 = s.dtype, t = is_reduced(p0) ? DType::Float32 : p0;
                const Arr A = cast_arr(in(s.a), t), B = cast_arr(in(s.b), t);
                // As matrices: [k] -> [1, k] (left), [k] -> [k, 1] (right).
                Shape as = A.shape, bs = B.shape;
                if (as.size() == 1) as.insert(0, 1);
                if (bs.size() == 1) bs.push_back(1);
                const i64 M = as[as.size() - 2], K = as.back(), N = bs.back();
                const Shape ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
                const Shape batch = *broadcast(ab, bb);
                const i64 nb = numel(batch);
                const auto ma = broadcast_map(batch, ab), mb = broadcast_map(batch, bb);
                r.x.resize(static_cast<std::size_t>(nb * M * N));
                std::vector<const Val*> ga, gb;
                for (i64 q = 0; q < nb; ++q)
                    for (i64 i = 0; i < M; ++i)
                        for (i64 j = 0; j < N; ++j) {
                            const i64 oa = ma[static_cast<std::size_t>(q)] * M * K, ob = mb[static_cast<std::size_t>(q)] * K * N;
                            Val v;
                            bool dc = false;
                            if (!is_float(t)) {
                                u64 acc = 0;
                                bool any = false;
                                for (i64 k = 0; k < K; ++k) {
                                    const Val& x = A.x[static_cast<std::size_t>(oa + i * K + k)];
                                    const Val& y = B.x[static_cast<std::size_t>(ob + k * N + j)];
                                    dc = dc || x.dc || y.dc;
                                    acc += static_cast<u64>(wrap(t, static_cast<i64>(static_cast<u64>(x.i) * static_cast<u64>(y.i))));
                                    any = any || (x.i && y.i);
                                }
                                v = t == DType::Bool ? ival(t, any) : ival(t, static_cast<i64>(acc));
                            } else {
                                double acc = 0, e = 0, mag = 0;
                                bool exact = true, whole = true;
                                for (i64 k = 0; k < K; ++k) {
                                    const Val& x = A.x[static_cast<std::size_t>(oa + i * K + k)];
                                    const Val& y = B.x[static_cast<std::size_t>(ob + k * N + j)];
                                    dc = dc || x.dc || y.dc;
                                    acc += x.v * y.v;
                                    e += scaled(x.v, y.e) + scaled(y.v, x.e) + x.e * y.e;
                                    mag += std::fabs(x.v * y.v);
                                    exact = exact && x.e == 0 && y.e == 0;
                                    whole = whole && x.v == std::nearbyint(x.v) && y.v == std::nearbyint(y.v);
                                }
                                const double limit = t == DType::Float64 ? 0x1.0p53 : 0x1.0p24;
                                if (!std::isfinite(acc) || !std::isfinite(mag)) v = exact && K == 1 ? fin(t, acc, 0, true) : dont_care();
                                else if (exact && whole && mag < limit) v = fin(t, acc, 0, true);
                                else v = fin(t, acc, e + order_factor(K) * unit(t) * mag, false);
                                if (!v.dc && p0 != t) v = cast_val(v, t, p0);
                            }
                            r.x[static_cast<std::size_t>((q * M + i) * N + j)] = dc ? dont_care() : v;
                        }
                break;
            }
            case Kind::Gather: {  // out[i] = x[i with i[axis] = index[i]]
                const Arr& x = in(s.a);
                const Arr& index = in(s.b);
                const std::size_t k = static_cast<std::size_t>(norm_axis(s.axis, x.shape.size()));
                r = view(x, s.dtype, s.shape, [&](std::vector<i64> idx) {
                    const Val& pos = index.x[static_cast<std::size_t>(linear(idx, index.shape))];
                    if (pos.dc || pos.i < 0 || pos.i >= x.shape[k]) return dont_care();  // (the generator avoids it)
                    idx[k] = pos.i;
                    return x.x[static_cast<std::size_t>(linear(idx, x.shape))];
                });
                break;
            }
            case Kind::ScatterAdd: {  // x[.., index[j], ..] += src[j] (src in x's dtype), summed first
                const Arr& x = in(s.a);
                const Arr& index = in(s.b);
                const Arr src = cast_arr(in(s.c), s.dtype);
                const std::size_t k = static_cast<std::size_t>(norm_axis(s.axis, x.shape.size()));
                std::vector<std::vector<const Val*>> hits(x.x.size());
                std::vector<i64> idx(index.shape.size(), 0);
                for (i64 lin = 0; lin < numel(index.shape); ++lin) {
                    const Val& pos = index.x[static_cast<std::size_t>(lin)];
                    std::vector<i64> to = idx;
                    to[k] = pos.i;
                    if (!pos.dc && pos.i >= 0 && pos.i < x.shape[k])
                        hits[static_cast<std::size_t>(linear(to, x.shape))].push_back(&src.x[static_cast<std::size_t>(linear(idx, src.shape))]);
                    for (std::size_t d = idx.size(); d-- > 0;)
                        if (++idx[d] < index.shape[d]) break;
                        else idx[d] = 0;
                }
                // The contributions are summed in the sum's dtype (int64 for integers, float for
                // half), converted to x's dtype, then added to x.
                const DType acc = is_float(s.dtype) ? (is_reduced(s.dtype) ? DType::Float32 : s.dtype) : DType::Int64;
                r.x.resize(x.x.size());
                for (std::size_t o = 0; o < x.x.size(); ++o) {
                    std::vector<Val> wide;
                    for (const Val* v : hits[o]) wide.push_back(cast_val(*v, s.dtype, acc));
                    std::vector<const Val*> ptrs;
                    for (const Val& v : wide) ptrs.push_back(&v);
                    Val sum = cast_val(reduce_vals(Red::Sum, ptrs, acc), acc, s.dtype);
                    // A fused kernel may add the float sum to x before rounding to half once.
                    if (is_reduced(s.dtype) && !ptrs.empty() && !sum.dc && std::isfinite(sum.v)) sum.e += ulp(s.dtype, sum.v);
                    r.x[o] = binary_val(BinaryOp::Add, x.x[o], sum, s.dtype, s.dtype);
                }
                break;
            }
            case Kind::Scan: {  // inclusive prefix sums or products along axis
                const Arr x = cast_arr(in(s.a), s.dtype);
                const std::size_t k = static_cast<std::size_t>(norm_axis(s.axis, x.shape.size()));
                r.x.resize(x.x.size());
                i64 inner = 1;
                for (std::size_t d = k + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
                i64 outer = 1;
                for (std::size_t d = 0; d < k; ++d) outer *= x.shape[d];
                const i64 len = x.shape[k];
                for (i64 o = 0; o < outer; ++o)
                    for (i64 q = 0; q < inner; ++q) {
                        std::vector<const Val*> prefix;
                        double mag = s.red == Red::Sum ? 0 : 1;
                        for (i64 j = 0; j < len; ++j) {
                            const std::size_t at = static_cast<std::size_t>((o * len + j) * inner + q);
                            prefix.push_back(&x.x[at]);
                            const Val& xv = x.x[at];
                            mag = s.red == Red::Sum ? mag + std::fabs(xv.v) + xv.e : mag * (std::fabs(xv.v) + xv.e);
                            Val v = reduce_vals(s.red, prefix, s.dtype);
                            // Half scans accumulate in float32 and round each element once;
                            // this slack (three half roundings of the magnitude) is what the
                            // block scans they replaced needed, kept as a loose bound.
                            if (is_reduced(s.dtype) && len > 32 && !v.dc && std::isfinite(v.v) && std::isfinite(mag))
                                v.e += 3 * reduced_unit(s.dtype) * mag + ulp(s.dtype, v.v);
                            r.x[at] = v;
                        }
                    }
                break;
            }
            case Kind::ArgExt: {  // the first position of the extreme (or the first NaN), int64
                const Arr& x = in(s.a);
                const std::size_t k = static_cast<std::size_t>(norm_axis(s.axis, x.shape.size()));
                i64 inner = 1;
                for (std::size_t d = k + 1; d < x.shape.size(); ++d) inner *= x.shape[d];
                i64 outer = 1;
                for (std::size_t d = 0; d < k; ++d) outer *= x.shape[d];
                const i64 len = x.shape[k];
                const bool mx = s.red == Red::Max;
                r.x.resize(static_cast<std::size_t>(outer * inner));
                for (i64 o = 0; o < outer; ++o)
                    for (i64 q = 0; q < inner; ++q) {
                        auto at = [&](i64 j) -> const Val& { return x.x[static_cast<std::size_t>((o * len + j) * inner + q)]; };
                        Val& out = r.x[static_cast<std::size_t>(o * inner + q)];
                        bool dc = false;
                        i64 nan = -1;
                        for (i64 j = 0; j < len; ++j) {
                            dc = dc || at(j).dc;
                            if (nan < 0 && is_float(x.dtype) && std::isnan(at(j).v)) nan = j;
                        }
                        if (dc) { out = dont_care(); continue; }
                        if (nan >= 0) { out = ival(DType::Int64, nan); continue; }
                        auto key = [&](i64 j) { return is_float(x.dtype) ? at(j).v : static_cast<double>(at(j).i); };
                        i64 best = 0;
                        for (i64 j = 1; j < len; ++j)
                            if (mx ? key(j) > key(best) : key(j) < key(best)) best = j;
                        // Undetermined if another position may hold the extreme within the bounds
                        // (the same value with no error is a tie: the first wins).
                        bool unsure = false;
                        for (i64 j = 0; j < len; ++j) {
                            if (j == best) continue;
                            const double gap = mx ? key(best) - key(j) : key(j) - key(best);
                            const double slack = (at(j).e + at(best).e) * 1.0000001;
                            if (slack > 0 && gap <= slack) unsure = true;
                        }
                        out = unsure ? dont_care() : ival(DType::Int64, best);
                    }
                break;
            }
            case Kind::Concat: {
                const Arr& x0 = in(s.a);
                const std::size_t k = static_cast<std::size_t>(norm_axis(s.axis, x0.shape.size()));
                std::vector<Arr> parts;
                for (int i : {s.a, s.b, s.c})
                    if (i >= 0) parts.push_back(cast_arr(in(i), s.dtype));
                r = view(x0, s.dtype, s.shape, [&](std::vector<i64> idx) {
                    for (const Arr& part : parts) {
                        if (idx[k] < part.shape[k]) return part.x[static_cast<std::size_t>(linear(idx, part.shape))];
                        idx[k] -= part.shape[k];
                    }
                    return dont_care();  // not reached
                });
                break;
            }
            case Kind::Assign: {  // a with its slice replaced by b (broadcast, cast to a's dtype)
                const Arr& x = in(s.a);
                const Arr v = cast_arr(in(s.b), s.dtype);
                const std::size_t k = static_cast<std::size_t>(norm_axis(s.axis, x.shape.size()));
                const auto ind = Generator::slice_indices(x.shape[k], s.start, s.stop, s.step);
                Shape target = x.shape;
                target[k] = ind[2];
                const auto map = broadcast_map(target, v.shape);
                r.x = x.x;
                std::vector<i64> idx(target.size(), 0);
                for (i64 lin = 0; lin < numel(target); ++lin) {
                    std::vector<i64> to = idx;
                    to[k] = ind[0] + ind[1] * idx[k];
                    r.x[static_cast<std::size_t>(linear(to, x.shape))] = v.x[static_cast<std::size_t>(map[static_cast<std::size_t>(lin)])];
                    for (std::size_t d = idx.size(); d-- > 0;)
                        if (++idx[d] < target[d]) break;
                        else idx[d] = 0;
                }
                break;
            }
            case Kind::Fused: {
                const DType t = s.dtype, ta = in(s.a).dtype;
                const Arr& A = in(s.a);
                const Arr& B = in(s.b);
                const Arr& C = s.c >= 0 ? in(s.c) : A;
                const auto ma = broadcast_map(s.shape, A.shape), mb = broadcast_map(s.shape, B.shape),
                           mc = broadcast_map(s.shape, C.shape);
                r.x.resize(static_cast<std::size_t>(n));
                for (std::size_t k = 0; k < r.x.size(); ++k) {
                    const Val& a = A.x[static_cast<std::size_t>(ma[k])];
                    const Val& b = B.x[static_cast<std::size_t>(mb[k])];
                    const Val& c = C.x[static_cast<std::size_t>(mc[k])];
                    Val v;
                    switch (s.pattern) {
                        case 0: v = binary_val(s.bop, unary_val(s.uop, a, t, t), b, t, t); break;
                        case 1: v = binary_val(s.bop2, unary_val(s.uop, binary_val(s.bop, a, b, t, t), t, t), c, t, t); break;
                        case 2: {
                            const Val cond = binary_val(s.bop, a, b, t, DType::Bool);
                            v = cond.dc ? dont_care() : cond.i ? unary_val(s.uop, a, t, t) : c;
                            break;
                        }
                        default: v = binary_val(s.bop, cast_val(unary_val(s.uop, a, ta, ta), ta, t), b, t, t);
                    }
                    r.x[k] = v;
                }
                break;
            }
            case Kind::Conv: r = conv_ref(s, in(s.a), in(s.b), s.c >= 0 ? &in(s.c) : nullptr); break;
            case Kind::Pool: r = pool_ref(s, in(s.a)); break;
            case Kind::Random: {
                // The values were read back from the host's realize (fill_random; they cannot be
                // predicted); randn's may differ between devices by the rounding of log and cos.
                r.x.resize(static_cast<std::size_t>(n));
                for (i64 k = 0; k < n && static_cast<std::size_t>(k) < s.data.size(); ++k) {
                    Val& v = r.x[static_cast<std::size_t>(k)];
                    v.v = s.data[static_cast<std::size_t>(k)];
                    v.i = is_float(s.dtype) ? 0 : static_cast<i64>(v.v);
                    if (s.rkind == 1)
                        v.e = 64 * ulp(s.dtype == DType::Float64 ? DType::Float64 : DType::Float32, v.v) +
                              (is_reduced(s.dtype) ? ulp(s.dtype, v.v) : 0);
                }
                break;
            }
        }
        out.push_back(std::move(r));
    }
    return out;
}

// =============================================================================== builder

template <class T>
lt::Tensor<T> leaf_tensor(const Step& s, Device d) {
    std::vector<T> data(s.data.size());
    for (std::size_t k = 0; k < data.size(); ++k) {
        if constexpr (std::is_same_v<T, bool>) data[k] = s.data[k] != 0;
        else data[k] = static_cast<T>(s.data[k]);
    }
    return lt::tensor<T>(data, s.shape, d);
}

/// A Conv or Pool step through the graph builders (ir/convolution.hpp), the batch axis added and
/// dropped as the front end does; adaptive_avg_pool, which has none, through the front end's.
inline NodePtr build_conv(const Step& s, const NodePtr& input, const NodePtr& weight, const NodePtr& bias) {
    const std::size_t dims = spatial_dims(s);
    if (s.kind == Kind::Pool && s.pool == 3)
        return lt::detail::visit_dtype(input->dtype, [&](auto tag) -> NodePtr {
            using T = typename decltype(tag)::type;
            return lt::detail::adaptive_avg_pool<T>(dims, "adaptive_avg_pool", input, std::vector<i64>(s.target.begin(), s.target.end()))
                .node_ptr();
        });
    const auto batched = lt::detail::batched(input, dims);
    graph::ConvSpec spec;
    spec.stride = s.stride;
    spec.dilation = s.dilation;
    spec.pad_before = s.before;
    spec.pad_after = s.after;
    spec.output_padding = s.kind == Kind::Conv ? s.out_pad : Shape(dims, 0);
    spec.groups = s.groups;
    const NodePtr& x = batched.first;
    NodePtr y;
    if (s.kind == Kind::Conv)
        y = s.transposed ? graph::conv_transpose(x, weight, bias, spec, "conv_transpose") : graph::convolution(x, weight, bias, spec, "conv");
    else if (s.pool == 2) y = graph::avg_pool(x, s.kernel, spec, s.include_pad, 0, "avg_pool");
    else y = graph::max_pool(x, s.kernel, spec, "max_pool")[s.pool == 1 ? 1 : 0];
    return lt::detail::unbatched(y, batched.second);
}

/// Builds step `s` on the device from the nodes of earlier steps.
inline NodePtr build_step(const Step& s, const std::vector<NodePtr>& nodes, Device d) {
    auto in = [&](int k) { return nodes[static_cast<std::size_t>(k)]; };
    switch (s.kind) {
        case Kind::Leaf:
            return lt::detail::visit_dtype(s.dtype, [&](auto tag) -> NodePtr {
                using T = typename decltype(tag)::type;
                return leaf_tensor<T>(s, d).node_ptr();
            });
        case Kind::Unary: return build_unary(s.uop, in(s.a));
        case Kind::Binary: {
            graph::Operand a = s.scalar_side == 1 ? graph::Operand(s.value) : graph::Operand(in(s.a));
            graph::Operand b = s.scalar_side == 2 ? graph::Operand(s.value) : graph::Operand(in(s.b));
            return build_binary(s.bop, a, b);
        }
        case Kind::Where: return graph::where(in(s.a), in(s.b), in(s.c));
        case Kind::Cast: return graph::cast(in(s.a), s.dtype);
        case Kind::Reduce: {
            const std::optional<Axes> axes = s.all_axes ? std::nullopt : std::optional<Axes>(s.axes);
            switch (s.red) {
                case Red::Sum: return graph::reduce(lt::ReduceOp::Sum, in(s.a), axes, s.keepdim, "sum");
                case Red::Prod: return graph::reduce(lt::ReduceOp::Prod, in(s.a), axes, s.keepdim, "prod");
                case Red::Max: return graph::reduce(lt::ReduceOp::Max, in(s.a), axes, s.keepdim, "max");
                case Red::Min: return graph::reduce(lt::ReduceOp::Min, in(s.a), axes, s.keepdim, "min");
                case Red::Mean: return graph::mean(in(s.a), axes, s.keepdim, lt::detail::supports_float64(d));
                case Red::Any: return graph::any_all(false, in(s.a), axes, s.keepdim);
                case Red::All: return graph::any_all(true, in(s.a), axes, s.keepdim);
            }
            return nullptr;
        }
        case Kind::Reshape: return graph::reshape(in(s.a), s.target);
        case Kind::Permute: return graph::permute(in(s.a), s.axes);
        case Kind::Expand: return graph::expand(in(s.a), s.target);
        case Kind::Slice: return graph::slice(in(s.a), s.axis, s.start, s.stop, s.step);
        case Kind::Pad: return graph::pad(in(s.a), s.before, s.after, s.value);
        case Kind::Flip: return graph::flip(in(s.a), s.axes);
        case Kind::Matmul: return graph::matmul(in(s.a), in(s.b));
        // Ops the graph has no single builder for: the engine's composite builders where they
        // exist (scans, argmax/argmin), else the public function on Tensor handles of the nodes.
        case Kind::Gather: return graph::gather(in(s.a), s.axis, in(s.b));
        case Kind::ScatterAdd:
            return lt::detail::visit_dtype(s.dtype, [&](auto tag) -> NodePtr {
                using T = typename decltype(tag)::type;
                if constexpr (std::is_same_v<T, bool>) throw std::logic_error("scatter_add of bool");
                else return lt::scatter_add(lt::Tensor<T>(in(s.a)), s.axis, lt::Tensor<std::int64_t>(graph::cast(in(s.b), DType::Int64)),
                                            lt::Tensor<T>(graph::cast(in(s.c), s.dtype))).node_ptr();
            });
        case Kind::Scan:
            return lt::detail::graph::scan(s.red == Red::Sum ? lt::ReduceOp::Sum : lt::ReduceOp::Prod, in(s.a), s.axis,
                                    s.red == Red::Sum ? "cumsum" : "cumprod");
        case Kind::ArgExt:
            return lt::detail::arg_extreme(s.red == Red::Max ? lt::ReduceOp::Max : lt::ReduceOp::Min, in(s.a), s.axis,
                                           s.keepdim, s.red == Red::Max ? "argmax" : "argmin");
        case Kind::Concat:
            return lt::detail::visit_dtype(s.dtype, [&](auto tag) -> NodePtr {
                using T = typename decltype(tag)::type;
                std::vector<lt::Tensor<T>> parts;
                for (int k : {s.a, s.b, s.c})
                    if (k >= 0) parts.emplace_back(graph::cast(in(k), s.dtype));
                return lt::concat<T>(parts, s.axis).node_ptr();
            });
        case Kind::Assign: {
            // Realized: a copy of a in new memory (uploaded zeros, assigned a whole). Lazy: an
            // expression of a (a * 1, or a | false for bool) that assign realizes first.
            NodePtr target;
            if (s.lazy) {
                target = s.dtype == DType::Bool ? graph::binary(lt::BinaryOp::BitOr, in(s.a), Scalar::of<bool>(false))
                                                : graph::binary(lt::BinaryOp::Mul, in(s.a), Scalar::of<std::int64_t>(1));
            } else {
                target = lt::detail::visit_dtype(s.dtype, [&](auto tag) -> NodePtr {
                    using T = typename decltype(tag)::type;
                    return lt::tensor<T>(std::vector<T>(static_cast<std::size_t>(numel(s.shape))), s.shape, d).node_ptr();
                });
                lt::detail::assign_into(target, graph::Operand(in(s.a)));
            }
            lt::detail::assign_into(graph::slice(target, s.axis, s.start, s.stop, s.step), graph::Operand(in(s.b)));
            return target;
        }
        case Kind::Fused:
            switch (s.pattern) {
                case 0: case 3: return build_binary(s.bop, build_unary(s.uop, in(s.a)), in(s.b));
                case 1: return build_binary(s.bop2, build_unary(s.uop, build_binary(s.bop, in(s.a), in(s.b))), in(s.c));
                default: return graph::where(build_binary(s.bop, in(s.a), in(s.b)), build_unary(s.uop, in(s.a)), in(s.c));
            }
        case Kind::Conv: return build_conv(s, in(s.a), in(s.b), s.c >= 0 ? in(s.c) : nullptr);
        case Kind::Pool: return build_conv(s, in(s.a), nullptr, nullptr);
        case Kind::Random:
            return lt::detail::visit_dtype(s.dtype, [&](auto tag) -> NodePtr {
                using T = typename decltype(tag)::type;
                if constexpr (lt::detail::is_floating_v<T>)
                    return (s.rkind == 1 ? lt::randn<T>(s.shape, s.seed, d) : lt::rand<T>(s.shape, s.seed, d)).node_ptr();
                else if constexpr (!std::is_same_v<T, bool>) return lt::randint<T>(s.low, s.high, s.shape, s.seed, d).node_ptr();
                else throw std::logic_error("random bool");
            });
    }
    return nullptr;
}

inline std::vector<double> read_doubles(const lazytensor::detail::Node& n) {
    return lt::detail::visit_dtype(n.dtype, [&](auto tag) {
        using T = typename decltype(tag)::type;
        const auto v = lt::detail::read_elements<T>(n);
        std::vector<double> out(v.size());
        for (std::size_t k = 0; k < v.size(); ++k) {
            if constexpr (std::is_same_v<T, bool>) out[k] = v[k] ? 1 : 0;
            else out[k] = static_cast<double>(v[k]);
        }
        return out;
    });
}

// =============================================================================== compare

struct Failure {
    bool failed = false;
    int output = -1;  // step index
    i64 element = -1;
    double got = 0, expected = 0, bound = 0;
    std::string what;  // a one-line description
};

struct Results {
    std::vector<std::vector<double>> values;  // per output step (in step order)
    Failure failure;                          // a library exception or a dtype/shape mismatch
};

}  // namespace fuzz
#include "typed.hpp"
namespace fuzz {

/// The two ways a program is built: graph builders (detail::graph), or the typed public API.
enum class Path { Graph, Typed };
inline const char* path_name(Path p) { return p == Path::Graph ? "graph" : "typed"; }

/// Whether program p has a step of version 6's or 7's dtypes, which the typed path does not hold
/// (typed.hpp, typed_holds): check() runs such a program through the graph path only.
inline bool graph_only(const Program& p) {
    for (const Step& s : p.steps)
        if (std::find(std::begin(kNewInts), std::end(kNewInts), s.dtype) != std::end(kNewInts) || s.dtype == DType::BFloat16)
            return true;
    return false;
}

/// Builds and realizes the program on device d; reads every output back.
inline Results run_on_device(const Program& p, Device d, Path path = Path::Graph) {
    Results res;
    try {
        std::vector<NodePtr> nodes;
        std::vector<Any> typed;
        for (std::size_t i = 0; i < p.steps.size(); ++i) {
            const Step& s = p.steps[i];
            NodePtr n;
            if (path == Path::Graph) n = build_step(s, nodes, d);
            else {
                try {
                    typed.push_back(build_typed(s, typed, d));
                } catch (const TypeMismatch& e) {
                    res.failure = {true, static_cast<int>(i), -1, 0, 0, 0, "step s" + std::to_string(i) + ": " + e.what()};
                    return res;
                }
                n = node_of(typed.back());
            }
            if (n->dtype != s.dtype || !(n->shape == s.shape)) {
                res.failure = {true, static_cast<int>(i), -1, 0, 0, 0,
                               "step s" + std::to_string(i) + ": the library made " + lt::dtype_name(n->dtype) +
                                   shape_str(n->shape) + ", the fuzzer expects " + lt::dtype_name(s.dtype) +
                                   shape_str(s.shape)};
                return res;
            }
            nodes.push_back(std::move(n));
        }
        std::vector<lazytensor::detail::Node*> outs;
        for (std::size_t i = 0; i < p.steps.size(); ++i)
            if (p.steps[i].output) outs.push_back(nodes[i].get());
        if (p.together) lazytensor::detail::realize_nodes(outs);
        for (auto* n : outs) {
            if (!p.together) lazytensor::detail::realize_nodes({n});
            res.values.push_back(read_doubles(*n));
        }
    } catch (const std::exception& e) {
        res.failure = {true, -1, -1, 0, 0, 0, std::string("exception: ") + e.what()};
    }
    return res;
}

/// Whether `got` agrees with the reference element `ref` of dtype t.
inline bool agrees(DType t, const Val& ref, double got) {
    if (ref.dc) return true;
    if (!is_float(t)) return got == static_cast<double>(ref.i);
    if (std::isnan(ref.v)) return std::isnan(got);
    if (std::isinf(ref.v)) return got == ref.v;
    if (!std::isfinite(got)) return false;
    if (ref.e == 0) return got == ref.v;  // (-0 equals 0)
    return std::fabs(got - ref.v) <= ref.e + ulp(t, ref.v);
}

/// Counts for the command line's summary.
struct Stats {
    i64 graphs = 0, steps = 0, outputs = 0, compared = 0, dont_care = 0;
    i64 kinds[kKinds] = {};  // steps per kind
};

inline Failure compare(const Program& p, const std::vector<Arr>& ref, const Results& res, Stats* stats = nullptr) {
    if (res.failure.failed) return res.failure;
    if (stats) {
        ++stats->graphs;
        stats->steps += static_cast<i64>(p.steps.size());
        for (const Step& s : p.steps) ++stats->kinds[static_cast<int>(s.kind)];
        for (std::size_t i = 0; i < p.steps.size(); ++i) {
            if (!p.steps[i].output) continue;
            ++stats->outputs;
            for (const Val& v : ref[i].x) ++(v.dc ? stats->dont_care : stats->compared);
        }
    }
    std::size_t o = 0;
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
        if (!p.steps[i].output) continue;
        const auto& got = res.values[o++];
        const Arr& r = ref[i];
        for (std::size_t k = 0; k < got.size(); ++k)
            if (!agrees(r.dtype, r.x[k], got[k])) {
                Failure f;
                f.failed = true;
                f.output = static_cast<int>(i);
                f.element = static_cast<i64>(k);
                f.got = got[k];
                f.expected = is_float(r.dtype) ? r.x[k].v : static_cast<double>(r.x[k].i);
                f.bound = r.x[k].e;
                std::ostringstream s;
                s << std::setprecision(17) << "output s" << i << " (" << lt::dtype_name(r.dtype) << shape_str(r.shape)
                  << ") element " << k << ": got " << f.got << ", expected " << f.expected << " +- " << f.bound;
                f.what = s.str();
                return f;
            }
    }
    return {};
}

/// Fills the values of random steps from a realize on the host and checks what can be checked
/// of them: dtype and shape (as every step), range, granularity, and the mean of large ones.
/// These values are then the reference's for the step (compared on every device and path,
/// and fed onward as leaves): the reference cannot compute Philox streams itself, and what is
/// compared is agreement between devices and paths (determinism), not values the check derives
/// from the output it judges.
inline Failure fill_random(Program& p) {
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
        Step& s = p.steps[i];
        if (s.kind != Kind::Random || s.data.size() == static_cast<std::size_t>(numel(s.shape))) continue;
        auto fail = [&](const std::string& what) {
            return Failure{true, static_cast<int>(i), -1, 0, 0, 0, "random step s" + std::to_string(i) + ": " + what};
        };
        try {
            const NodePtr n = build_step(s, {}, Device::host());
            if (n->dtype != s.dtype || !(n->shape == s.shape)) return fail("wrong dtype or shape");
            lazytensor::detail::realize_nodes({n.get()});
            s.data = read_doubles(*n);
        } catch (const std::exception& e) {
            return fail(std::string("exception: ") + e.what());
        }
        double sum = 0;
        const int width = s.dtype == DType::Float64 ? 53 : s.dtype == DType::Float32 ? 24 : 11;
        for (std::size_t k = 0; k < s.data.size(); ++k) {
            const double v = s.data[k];
            sum += v;
            const bool ok = s.rkind == 0 ? v >= 0 && v < 1 && std::ldexp(v, width) == std::nearbyint(std::ldexp(v, width))
                          : s.rkind == 1 ? std::isfinite(v) && std::fabs(v) <= 6.7
                                         : v >= static_cast<double>(s.low) && v < static_cast<double>(s.high) && v == std::nearbyint(v);
            if (!ok) {
                std::ostringstream o;
                o << std::setprecision(17) << "element " << k << " is " << v << ", out of the range of "
                  << (s.rkind == 0 ? "rand" : s.rkind == 1 ? "randn" : "randint");
                return fail(o.str());
            }
        }
        // The mean of many values, within 6 standard errors (a deterministic seed: no flakiness).
        const double n = static_cast<double>(s.data.size());
        if (n >= 1000) {
            const double w = static_cast<double>(s.high - s.low);
            const double mu = s.rkind == 0 ? 0.5 : s.rkind == 1 ? 0 : static_cast<double>(s.low) + (w - 1) / 2;
            const double sd = s.rkind == 0 ? std::sqrt(1.0 / 12) : s.rkind == 1 ? 1 : std::sqrt((w * w - 1) / 12);
            if (std::fabs(sum / n - mu) > 6 * sd / std::sqrt(n) + 1e-12)
                return fail("mean " + std::to_string(sum / n) + " is far from " + std::to_string(mu));
        }
    }
    return {};
}

/// Runs one program on one device, built one way, and compares with the reference.
inline Failure check(const Program& p0, Device d, Path path = Path::Graph, Stats* stats = nullptr) {
    if (path == Path::Typed && graph_only(p0)) return Failure{};
    Program p = p0;
    if (Failure f = fill_random(p); f.failed) return f;
    const auto ref = evaluate(p);
    Failure f = compare(p, ref, run_on_device(p, d, path), stats);
    if (f.failed) f.what = std::string(path_name(path)) + " path: " + f.what;
    return f;
}

// ================================================================================= print

inline const char* ctype(DType t) {
    switch (t) {
        case DType::Bool: return "bool";
        case DType::UInt8: return "std::uint8_t";
        case DType::Int8: return "std::int8_t";
        case DType::Int16: return "std::int16_t";
        case DType::UInt16: return "std::uint16_t";
        case DType::UInt32: return "std::uint32_t";
        case DType::Int32: return "std::int32_t";
        case DType::Int64: return "std::int64_t";
        case DType::Float16: return "lt::half";
        case DType::BFloat16: return "lt::bfloat16";
        case DType::Float32: return "float";
        default: return "double";
    }
}

inline std::string literal(DType t, double v) {
    std::ostringstream s;
    if (t == DType::Bool) return v != 0 ? "true" : "false";
    if (!is_float(t)) {
        s << static_cast<i64>(v);
        return s.str();
    }
    if (std::isnan(v)) s << "NAN";
    else if (std::isinf(v)) s << (v < 0 ? "-INFINITY" : "INFINITY");
    else s << std::setprecision(t == DType::Float64 ? 17 : 9) << v;
    std::string text = s.str();
    if (std::isfinite(v) && text.find_first_of(".e") == std::string::npos) text += ".0";
    if (t == DType::Float32 && std::isfinite(v)) text += "f";
    if (t == DType::Float16) text = "lt::half(" + text + ")";
    if (t == DType::BFloat16) text = "lt::bfloat16(" + text + ")";
    return text;
}

inline std::string scalar_literal(const Scalar& s) {
    if (s.dtype == DType::Bool) return s.i ? "true" : "false";
    if (is_float(s.dtype)) return literal(DType::Float64, s.f);
    return "std::int64_t(" + std::to_string(s.i) + ")";
}

/// A spatial option as typed.hpp's spatial_arg passes it.
inline std::string spatial_text(const Shape& v, int spell) {
    return spell >= 1 && uniform(v) ? std::to_string(v[0]) : shape_str(v);
}

/// A Conv or Pool step as the typed path calls it (conv_typed, pool_typed).
inline std::string conv_cpp(const Program& p, const Step& s, const std::string& x) {
    const std::string dims = std::to_string(spatial_dims(s));
    std::vector<std::string> args{x};
    if (s.kind == Kind::Pool && s.pool == 3) return "lt::adaptive_avg_pool" + dims + "d(" + x + ", " + spatial_text(s.target, s.spell) + ")";
    std::string name, tail;
    std::vector<std::string> options;
    if (s.kind == Kind::Conv) {
        const Shape& ws = p.steps[static_cast<std::size_t>(s.b)].shape;
        args.push_back("s" + std::to_string(s.b));
        std::string pad;
        switch (pad_spelling(s, Shape(ws.begin() + 2, ws.end()))) {
            case PadSpelling::Same: pad = "lt::Padding::Same"; break;
            case PadSpelling::Valid: pad = "lt::Padding::Valid"; break;
            case PadSpelling::Widths: pad = spatial_text(s.before, s.spell); break;
            case PadSpelling::Pairs:
                pad = "std::vector<std::pair<std::int64_t, std::int64_t>>{";
                for (std::size_t i = 0; i < s.before.size(); ++i)
                    pad += (i ? ", {" : "{") + std::to_string(s.before[i]) + ", " + std::to_string(s.after[i]) + "}";
                pad += "}";
                break;
        }
        name = (s.transposed ? "lt::conv_transpose" : "lt::conv") + dims + "d";
        options = {s.c >= 0 ? "s" + std::to_string(s.c) : "std::nullopt", spatial_text(s.stride, s.spell), pad};
        if (s.transposed) options.push_back(spatial_text(s.out_pad, s.spell));
        options.push_back(std::to_string(s.groups));
        if (s.transposed) options.push_back(spatial_text(s.dilation, s.spell));
        else options.insert(options.end() - 1, spatial_text(s.dilation, s.spell));
    } else {
        name = std::string(s.pool == 2 ? "lt::avg_pool" : "lt::max_pool") + dims + "d" + (s.pool == 1 ? "_with_indices" : "");
        args.push_back(spatial_text(s.kernel, s.spell));
        options = {default_stride(s) ? "{}" : spatial_text(s.stride, s.spell), spatial_text(s.before, s.spell),
                   s.pool == 2 ? (s.include_pad ? "true" : "false") : spatial_text(s.dilation, s.spell)};
        if (s.pool == 1) tail = ".second";
    }
    options.resize(static_cast<std::size_t>(passed_args(s)));
    std::string text = name + "(";
    for (const auto* list : {&args, &options})
        for (const std::string& a : *list) text += (text.back() == '(' ? "" : ", ") + a;
    return text + ")" + tail;
}

/// The program as C++ against the public API, ready to paste into a test.
inline std::string to_cpp(const Program& p) {
    std::ostringstream o;
    auto name = [](int k) { return "s" + std::to_string(k); };
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
        const Step& s = p.steps[i];
        const std::string a = name(s.a), b = name(s.b), c = name(s.c);
        o << "lt::Tensor<" << ctype(s.dtype) << "> " << name(static_cast<int>(i)) << " = ";
        switch (s.kind) {
            case Kind::Leaf: {
                o << "lt::tensor<" << ctype(s.dtype) << ">(std::vector<" << ctype(s.dtype) << ">{";
                for (std::size_t k = 0; k < s.data.size(); ++k) o << (k ? ", " : "") << literal(s.dtype, s.data[k]);
                o << "}, lt::Shape" << shape_str(s.shape) << ")";
                break;
            }
            case Kind::Unary: o << "lt::" << op_name(s.uop) << "(" << a << ")"; break;
            case Kind::Binary:
                o << "lt::" << op_name(s.bop) << "(" << (s.scalar_side == 1 ? scalar_literal(s.value) : a) << ", "
                  << (s.scalar_side == 2 ? scalar_literal(s.value) : b) << ")";
                break;
            case Kind::Where:  // a floating condition does not compile: converted as graph::where does
                o << "lt::where(" << (is_float(p.steps[static_cast<std::size_t>(s.a)].dtype) ? "lt::cast<bool>(" + a + ")" : a)
                  << ", " << b << ", " << c << ")";
                break;
            case Kind::Cast: o << "lt::cast<" << ctype(s.dtype) << ">(" << a << ")"; break;
            case Kind::Reduce:
                o << a << "." << red_name(s.red) << "(";
                if (!s.all_axes || (s.keepdim && !s.shape.empty())) {
                    Axes all;
                    for (std::size_t k = 0; k < s.shape.size(); ++k) all.push_back(static_cast<int>(k));
                    o << "lt::Axes" << axes_str(s.all_axes ? all : s.axes) << ", " << (s.keepdim ? "true" : "false");
                }
                o << ")";
                break;
            case Kind::Reshape: o << a << ".reshape(lt::Shape" << shape_str(s.target) << ")"; break;
            case Kind::Permute: o << a << ".permute(lt::Axes" << axes_str(s.axes) << ")"; break;
            case Kind::Expand: o << a << ".expand(lt::Shape" << shape_str(s.target) << ")"; break;
            case Kind::Slice:
                o << a << ".slice(" << s.axis << ", " << (s.start ? std::to_string(*s.start) : "{}") << ", "
                  << (s.stop ? std::to_string(*s.stop) : "{}") << ", " << s.step << ")";
                break;
            case Kind::Pad: {
                o << a << ".pad({";
                for (std::size_t k = 0; k < s.before.size(); ++k) o << (k ? ", " : "") << "{" << s.before[k] << ", " << s.after[k] << "}";
                const Scalar v = s.value.cast(s.dtype);
                o << "}, " << literal(s.dtype, is_float(s.dtype) ? v.f : static_cast<double>(v.i)) << ")";
                break;
            }
            case Kind::Flip: o << a << ".flip(lt::Axes" << axes_str(s.axes) << ")"; break;
            case Kind::Matmul: o << "lt::matmul(" << a << ", " << b << ")"; break;
            case Kind::Gather: o << "lt::gather(" << a << ", " << s.axis << ", " << b << ")"; break;
            case Kind::ScatterAdd: o << "lt::scatter_add(" << a << ", " << s.axis << ", " << b << ", " << c << ")"; break;
            case Kind::Scan: o << a << (s.red == Red::Sum ? ".cumsum(" : ".cumprod(") << s.axis << ")"; break;
            case Kind::ArgExt:
                o << a << (s.red == Red::Max ? ".argmax(" : ".argmin(") << s.axis << ", " << (s.keepdim ? "true" : "false") << ")";
                break;
            case Kind::Concat:
                o << "lt::concat<" << ctype(s.dtype) << ">({lt::cast<" << ctype(s.dtype) << ">(" << a << "), lt::cast<"
                  << ctype(s.dtype) << ">(" << b << ")";
                if (s.c >= 0) o << ", lt::cast<" << ctype(s.dtype) << ">(" << c << ")";
                o << "}, " << s.axis << ")";
                break;
            case Kind::Assign: {
                const std::string slice = ".slice(" + std::to_string(s.axis) + ", " + (s.start ? std::to_string(*s.start) : "{}") +
                                          ", " + (s.stop ? std::to_string(*s.stop) : "{}") + ", " + std::to_string(s.step) + ")";
                if (s.lazy) o << a << (s.dtype == DType::Bool ? " | false" : " * 1") << ";\n";
                else o << "lt::tensor<" << ctype(s.dtype) << ">(std::vector<" << ctype(s.dtype) << ">(" << numel(s.shape)
                       << "), lt::Shape" << shape_str(s.shape) << ");\n" << name(static_cast<int>(i)) << ".assign(" << a << ");\n";
                o << name(static_cast<int>(i)) << slice << ".assign(" << b << ")";
                break;
            }
            case Kind::Fused: {
                const std::string u = std::string("lt::") + op_name(s.uop);
                const std::string op = std::string("lt::") + op_name(s.bop), op2 = std::string("lt::") + op_name(s.bop2);
                if (s.pattern == 1) o << op2 << "(" << u << "(" << op << "(" << a << ", " << b << ")), " << c << ")";
                else if (s.pattern == 2) o << "lt::where(" << op << "(" << a << ", " << b << "), " << u << "(" << a << "), " << c << ")";
                else o << op << "(" << u << "(" << a << "), " << b << ")";
                break;
            }
            case Kind::Conv: case Kind::Pool: o << conv_cpp(p, s, a); break;
            case Kind::Random:
                if (s.rkind == 2) o << "lt::randint<" << ctype(s.dtype) << ">(" << s.low << ", " << s.high << ", ";
                else o << (s.rkind == 1 ? "lt::randn<" : "lt::rand<") << ctype(s.dtype) << ">(";
                o << "lt::Shape" << shape_str(s.shape) << ", " << s.seed << ")";
                break;
        }
        o << ";\n";
        if (s.stop_grad) o << name(static_cast<int>(i)) << " = lt::stop_gradient(" << name(static_cast<int>(i)) << ");\n";
    }
    std::vector<std::string> outs;
    for (std::size_t i = 0; i < p.steps.size(); ++i)
        if (p.steps[i].output) outs.push_back(name(static_cast<int>(i)));
    if (p.together && outs.size() > 1) {
        o << "lt::realize({";
        for (std::size_t k = 0; k < outs.size(); ++k) o << (k ? ", " : "") << outs[k];
        o << "});\n";
    }
    return o.str();
}

/// The reference values of a step, printed (dc elements as "?").
inline std::string ref_str(const Arr& r, std::size_t limit = 64) {
    std::ostringstream o;
    o << std::setprecision(9) << "{";
    for (std::size_t k = 0; k < r.x.size() && k < limit; ++k) {
        const Val& v = r.x[k];
        o << (k ? ", " : "");
        if (v.dc) o << "?";
        else if (is_float(r.dtype)) o << v.v << (v.e > 0 ? "~" : "");
        else o << v.i;
    }
    if (r.x.size() > limit) o << ", ...";
    return o.str() + "}";
}

// ============================================================================== minimize

/// Drops the steps nothing needs (keeps outputs and their ancestors); renumbers.
inline Program prune(const Program& p) {
    std::vector<bool> keep(p.steps.size(), false);
    for (std::size_t i = p.steps.size(); i-- > 0;) {
        const Step& s = p.steps[i];
        if (s.output) keep[i] = true;
        if (!keep[i]) continue;
        for (int k : {s.a, s.b, s.c})
            if (k >= 0) keep[static_cast<std::size_t>(k)] = true;
    }
    std::vector<int> renum(p.steps.size(), -1);
    Program out = p;
    out.steps.clear();
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
        if (!keep[i]) continue;
        Step s = p.steps[i];
        for (int* k : {&s.a, &s.b, &s.c})
            if (*k >= 0) *k = renum[static_cast<std::size_t>(*k)];
        renum[i] = static_cast<int>(out.steps.size());
        out.steps.push_back(std::move(s));
    }
    return out;
}

/// Recomputes step s's dtype and shape from its inputs and parameters (the rules the generator
/// follows); false if the step is no longer valid (the minimizer changed a shape under it).
inline bool infer_step(Step& s, const std::vector<Step>& steps) {
    auto in = [&](int k) -> const Step& { return steps[static_cast<std::size_t>(k)]; };
    auto axis_ok = [](int a, std::size_t r) { return r > 0 && a >= -static_cast<int>(r) && a < static_cast<int>(r); };
    const Step* x = s.a >= 0 ? &in(s.a) : nullptr;
    const std::size_t r = x ? x->shape.size() : 0;
    switch (s.kind) {
        case Kind::Leaf: return static_cast<i64>(s.data.size()) == numel(s.shape);
        case Kind::Random: return true;
        case Kind::Unary:
            if (!unary_ok(s.uop, x->dtype)) return false;
            s.dtype = unary_result(s.uop, x->dtype), s.shape = x->shape;
            return true;
        case Kind::Binary: {
            DType p;
            if (s.scalar_side == 1) p = promote_scalar(in(s.b).dtype, s.value.dtype), s.shape = in(s.b).shape;
            else if (s.scalar_side == 2) p = promote_scalar(x->dtype, s.value.dtype), s.shape = x->shape;
            else {
                auto b = broadcast(x->shape, in(s.b).shape);
                if (!b) return false;
                p = promote_types(x->dtype, in(s.b).dtype), s.shape = *b;
            }
            if (!binary_ok(s.bop, p)) return false;
            s.dtype = binary_result(s.bop, p);
            return true;
        }
        case Kind::Where: {
            auto b1 = broadcast(x->shape, in(s.b).shape);
            auto b2 = b1 ? broadcast(*b1, in(s.c).shape) : std::nullopt;
            if (!b2) return false;
            s.shape = *b2, s.dtype = promote_types(in(s.b).dtype, in(s.c).dtype);
            return true;
        }
        case Kind::Cast: s.shape = x->shape; return true;
        case Kind::Reduce: {
            std::vector<bool> chosen(r, s.all_axes);
            for (int a : s.axes) {
                if (!axis_ok(a, r) || chosen[static_cast<std::size_t>(norm_axis(a, r))]) return false;
                chosen[static_cast<std::size_t>(norm_axis(a, r))] = true;
            }
            s.shape.clear();
            for (std::size_t k = 0; k < r; ++k) {
                if (chosen[k] && x->shape[k] == 0 && (s.red == Red::Max || s.red == Red::Min)) return false;
                if (!chosen[k]) s.shape.push_back(x->shape[k]);
                else if (s.keepdim) s.shape.push_back(1);
            }
            const DType t = x->dtype;
            s.dtype = s.red == Red::Sum || s.red == Red::Prod ? (is_float(t) ? t : DType::Int64)
                    : s.red == Red::Mean ? (is_float(t) ? t : DType::Float32)
                    : s.red == Red::Any || s.red == Red::All ? DType::Bool : t;
            return true;
        }
        case Kind::Reshape: {
            Shape t = s.target;
            i64 known = 1;
            int free = -1;
            for (std::size_t k = 0; k < t.size(); ++k)
                if (t[k] == -1) free = static_cast<int>(k);
                else known *= t[k];
            if (free >= 0) {
                if (known == 0 || numel(x->shape) % known) return false;
                t[static_cast<std::size_t>(free)] = numel(x->shape) / known;
            }
            if (numel(t) != numel(x->shape)) return false;
            s.shape = t, s.dtype = x->dtype;
            return true;
        }
        case Kind::Permute:
            if (s.axes.size() != r) return false;
            s.shape.clear();
            for (int a : s.axes) s.shape.push_back(x->shape[static_cast<std::size_t>(norm_axis(a, r))]);
            s.dtype = x->dtype;
            return true;
        case Kind::Expand: {
            if (s.target.size() < r) return false;
            const std::size_t lead = s.target.size() - r;
            s.shape = s.target;
            for (std::size_t k = 0; k < r; ++k) {
                i64& e = s.shape[lead + k];
                if (e == -1) e = x->shape[k];
                else if (x->shape[k] != 1 && x->shape[k] != e) return false;
            }
            s.dtype = x->dtype;
            return true;
        }
        case Kind::Slice: case Kind::Assign: {
            if (!axis_ok(s.axis, r)) return false;
            const std::size_t k = static_cast<std::size_t>(norm_axis(s.axis, r));
            Shape t = x->shape;
            t[k] = Generator::slice_indices(t[k], s.start, s.stop, s.step)[2];
            if (s.kind == Kind::Slice) s.shape = t;
            else {
                auto b = broadcast(in(s.b).shape, t);
                if (!b || *b != t) return false;
                s.shape = x->shape;
            }
            s.dtype = x->dtype;
            return true;
        }
        case Kind::Pad:
            if (s.before.size() != r) return false;
            s.shape = x->shape;
            for (std::size_t k = 0; k < r; ++k) s.shape[k] += s.before[k] + s.after[k];
            s.dtype = x->dtype;
            return true;
        case Kind::Flip:
            for (int a : s.axes)
                if (!axis_ok(a, r)) return false;
            s.shape = x->shape, s.dtype = x->dtype;
            return true;
        case Kind::Matmul: {
            Shape as = x->shape, bs = in(s.b).shape;
            if (as.empty() || bs.empty()) return false;
            const bool av = as.size() == 1, bv = bs.size() == 1;
            if (av) as.insert(0, 1);
            if (bv) bs.push_back(1);
            if (as.back() != bs[bs.size() - 2]) return false;
            auto batch = broadcast(Shape(as.begin(), as.end() - 2), Shape(bs.begin(), bs.end() - 2));
            if (!batch) return false;
            s.shape = *batch;
            if (!av) s.shape.push_back(as[as.size() - 2]);
            if (!bv) s.shape.push_back(bs.back());
            s.dtype = promote_types(x->dtype, in(s.b).dtype);
            return true;
        }
        case Kind::Gather: case Kind::ScatterAdd: {
            const Step& index = in(s.b);
            if (!axis_ok(s.axis, r) || index.shape.size() != r || index.kind != Kind::Leaf || !is_int(index.dtype)) return false;
            const std::size_t k = static_cast<std::size_t>(norm_axis(s.axis, r));
            for (std::size_t d = 0; d < r; ++d)
                if (d != k && index.shape[d] > x->shape[d]) return false;
            for (double v : index.data)
                if (v < 0 || v >= static_cast<double>(x->shape[k])) return false;
            if (s.kind == Kind::ScatterAdd) {
                const Step& src = in(s.c);
                if (x->dtype == DType::Bool || src.shape.size() != r) return false;
                for (std::size_t d = 0; d < r; ++d)
                    if (index.shape[d] > src.shape[d]) return false;
                s.shape = x->shape;
            } else {
                s.shape = index.shape;
            }
            s.dtype = x->dtype;
            return true;
        }
        case Kind::Scan:
            if (!axis_ok(s.axis, r)) return false;
            s.shape = x->shape, s.dtype = is_float(x->dtype) ? x->dtype : DType::Int64;
            return true;
        case Kind::ArgExt: {
            if (!axis_ok(s.axis, r)) return false;
            const std::size_t k = static_cast<std::size_t>(norm_axis(s.axis, r));
            if (x->shape[k] == 0) return false;
            s.shape.clear();
            for (std::size_t d = 0; d < r; ++d)
                if (d != k) s.shape.push_back(x->shape[d]);
                else if (s.keepdim) s.shape.push_back(1);
            s.dtype = DType::Int64;
            return true;
        }
        case Kind::Fused: {
            const DType want = s.pattern == 3 ? DType::Float32 : s.dtype;
            if (x->dtype != want || in(s.b).dtype != s.dtype || (s.c >= 0 && in(s.c).dtype != s.dtype)) return false;
            auto b = broadcast(x->shape, in(s.b).shape);
            if (b && s.c >= 0) b = broadcast(*b, in(s.c).shape);
            if (!b) return false;
            s.shape = *b;
            return true;
        }
        case Kind::Conv: {
            const Step& w = in(s.b);
            if (!is_float(x->dtype) || w.dtype != x->dtype || (s.c >= 0 && in(s.c).dtype != x->dtype)) return false;
            const auto out = conv_result(s, x->shape, &w.shape, s.c >= 0 ? &in(s.c).shape : nullptr);
            if (!out) return false;
            s.shape = *out, s.dtype = x->dtype;
            return true;
        }
        case Kind::Pool: {
            const auto out = conv_result(s, x->shape);
            if (!out || x->dtype == DType::Bool) return false;
            s.shape = *out;
            s.dtype = s.pool == 1 ? DType::Int64 : s.pool == 0 || is_float(x->dtype) ? x->dtype : DType::Float32;
            return true;
        }
        case Kind::Concat: {
            if (!axis_ok(s.axis, r)) return false;
            const std::size_t k = static_cast<std::size_t>(norm_axis(s.axis, r));
            s.shape = x->shape, s.dtype = x->dtype;
            for (int i : {s.b, s.c}) {
                if (i < 0) continue;
                const Shape& o = in(i).shape;
                if (o.size() != r) return false;
                for (std::size_t d = 0; d < r; ++d)
                    if (d != k && o[d] != x->shape[d]) return false;
                s.shape[k] += o[k];
                s.dtype = promote_types(s.dtype, in(i).dtype);
            }
            return true;
        }
    }
    return false;
}

/// Re-infers every step; with `drop`, steps that became invalid (and those that read them)
/// are removed, and it fails only if no output is left; without, any invalid step fails it.
inline bool reinfer(Program& p, bool drop) {
    std::vector<bool> gone(p.steps.size(), false);
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
        Step& s = p.steps[i];
        for (int k : {s.a, s.b, s.c})
            if (k >= 0 && gone[static_cast<std::size_t>(k)]) gone[i] = true;
        if (!gone[i] && !infer_step(s, p.steps)) gone[i] = true;
        if (gone[i] && !drop) return false;
    }
    Program out = p;
    out.steps.clear();
    std::vector<int> renum(p.steps.size(), -1);
    bool any_output = false;
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
        if (gone[i]) continue;
        Step s = p.steps[i];
        for (int* k : {&s.a, &s.b, &s.c})
            if (*k >= 0) *k = renum[static_cast<std::size_t>(*k)];
        any_output = any_output || s.output;
        renum[i] = static_cast<int>(out.steps.size());
        out.steps.push_back(std::move(s));
    }
    p = out;
    return any_output;
}

/// The leaf cut to its first `to` elements along axis k.
inline Step shrink_leaf(const Step& leaf, std::size_t k, i64 to) {
    Step small = leaf;
    small.shape[k] = to;
    small.data.clear();
    std::vector<i64> idx(leaf.shape.size(), 0);
    for (std::size_t lin = 0; lin < leaf.data.size(); ++lin) {
        if (idx[k] < to) small.data.push_back(leaf.data[lin]);
        for (std::size_t d = idx.size(); d-- > 0;)
            if (++idx[d] < leaf.shape[d]) break;
            else idx[d] = 0;
    }
    return small;
}

/// Shrinks a failing program while `fails` holds: keeps one output, replaces steps by their
/// inputs or by leaves holding their reference values, shrinks leaf shapes, and drops what is
/// left unused.
inline Program minimize(Program p, const std::function<bool(const Program&)>& fails, int output,
                        double budget_seconds = 120) {
    const auto start = std::chrono::steady_clock::now();
    auto time_left = [&] {
        return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < budget_seconds;
    };
    auto attempt = [&](const Program& q) {
        Program r = prune(q);
        // (A program that became invalid, say a gather position past a shrunk axis, would fail
        // for the wrong reason.)
        if (r.steps.size() > p.steps.size() || !reinfer(r, false) || !fails(r)) return false;
        p = r;
        return true;
    };
    if (output >= 0) {
        Program q = p;
        for (auto& s : q.steps) s.output = false;
        q.steps[static_cast<std::size_t>(output)].output = true;
        attempt(q);
    }
    if (p.together) {
        Program q = p;
        q.together = false;
        attempt(q);
    }
    for (bool changed = true; changed && time_left();) {
        changed = false;
        for (std::size_t i = p.steps.size(); i-- > 0 && time_left();) {
            if (i >= p.steps.size()) continue;
            const Step s = p.steps[i];
            if (s.kind == Kind::Leaf) continue;
            // 1) Bypass the step: its users read one of its inputs instead.
            bool done = false;
            for (int k : {s.a, s.b, s.c}) {
                if (done || k < 0) continue;
                const Step& src = p.steps[static_cast<std::size_t>(k)];
                if (src.dtype != s.dtype || !(src.shape == s.shape)) continue;
                Program q = p;
                for (auto& t : q.steps)
                    for (int* x : {&t.a, &t.b, &t.c})
                        if (*x == static_cast<int>(i)) *x = k;
                if (s.output) q.steps[static_cast<std::size_t>(k)].output = true;
                q.steps[i].output = false;
                if (attempt(q)) done = changed = true;
            }
            if (done) break;
            // (A conv without its bias: its weight's output channels can then shrink.)
            if (s.kind == Kind::Conv && s.c >= 0) {
                Program q = p;
                q.steps[i].c = -1;
                if (attempt(q)) {
                    changed = true;
                    break;
                }
            }
            // 2) Replace a non-output step by a leaf holding its reference values.
            if (!s.output) {
                const auto ref = evaluate(p);
                const Arr& r = ref[i];
                Step leaf;
                leaf.kind = Kind::Leaf;
                leaf.dtype = s.dtype;
                leaf.shape = s.shape;
                for (const Val& v : r.x) leaf.data.push_back(v.dc ? 0 : is_float(s.dtype) ? v.v : static_cast<double>(v.i));
                Program q = p;
                q.steps[i] = leaf;
                if (attempt(q)) {
                    changed = true;
                    break;
                }
            }
        }
    }
    // 3) Shrink leaf shapes: one axis of one leaf at a time to extent 1, else to half (its
    // first elements along that axis), the program re-inferred and the steps that became
    // invalid dropped (with what reads them), while the failure stays.
    for (bool changed = true; changed && time_left();) {
        changed = false;
        for (std::size_t i = 0; i < p.steps.size() && !changed && time_left(); ++i) {
            const Step leaf = p.steps[i];
            if (leaf.kind != Kind::Leaf) continue;
            for (std::size_t k = 0; k < leaf.shape.size() && !changed; ++k) {
                const i64 e = leaf.shape[k];
                // The leaf's axis alone, or with the same axis (counted from the right, as
                // broadcasting aligns them) of every other leaf of that extent.
                const std::size_t from_end = leaf.shape.size() - k;
                for (bool together : {true, false})
                    for (i64 to : {i64(1), e / 2}) {
                        if (to >= e || to < 1 || changed) continue;
                        Program q = p;
                        for (std::size_t j = 0; j < q.steps.size(); ++j) {
                            const Step& l = p.steps[j];
                            if (l.kind != Kind::Leaf || (j != i && !together)) continue;
                            if (l.shape.size() < from_end || l.shape[l.shape.size() - from_end] != e) continue;
                            q.steps[j] = shrink_leaf(l, l.shape.size() - from_end, to);
                        }
                        if (reinfer(q, true) && attempt(q)) changed = true;
                    }
            }
        }
    }
    // 4) Simplify leaf values: zero, then one, where the failure stays.
    for (std::size_t i = 0; i < p.steps.size() && time_left(); ++i) {
        if (p.steps[i].kind != Kind::Leaf || p.steps[i].data.size() > 64) continue;
        for (std::size_t k = 0; k < p.steps[i].data.size() && time_left(); ++k) {
            for (double v : {0.0, 1.0}) {
                if (p.steps[i].data[k] == v) break;
                Program q = p;
                q.steps[i].data[k] = v;
                if (attempt(q)) break;
            }
        }
    }
    return p;
}

/// Everything a report needs for a failing program on a device.
inline std::string report(const Program& p0, Device d, const Failure& f, Path path = Path::Graph) {
    Program p = p0;
    fill_random(p);
    std::ostringstream o;
    o << "seed " << p.seed << ", device " << d.str() << ": " << f.what << "\n";
    o << "// realize mode: " << (p.together ? "together" : "one by one") << "\n" << to_cpp(p);
    const auto ref = evaluate(p);
    for (std::size_t i = 0; i < p.steps.size(); ++i)
        if (p.steps[i].output) o << "// reference s" << i << " = " << ref_str(ref[i]) << "\n";
    const Results res = run_on_device(p, d, path);
    std::size_t k = 0;
    for (std::size_t i = 0; i < p.steps.size() && !res.failure.failed; ++i)
        if (p.steps[i].output) {
            Arr got{p.steps[i].dtype, p.steps[i].shape, {}};
            for (double v : res.values[k]) {
                Val x;
                x.v = v;
                x.i = static_cast<i64>(std::isfinite(v) ? v : 0);
                got.x.push_back(x);
            }
            ++k;
            o << "// " << d.str() << " s" << i << " = " << ref_str(got) << "\n";
        }
    return o.str();
}

}  // namespace fuzz
