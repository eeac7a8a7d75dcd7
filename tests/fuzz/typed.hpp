// SPDX-License-Identifier: MIT
// The typed build path: every step of a program written with the public API a user writes
// (lt::Tensor<T>, C++ operators, free functions, members, C++ scalars of their own types), the
// runtime dtypes dispatched to template code. Each step's C++ result type, which the front end
// computes at compile time, is checked against the fuzzer's own inference (TypeMismatch).
//
// Instantiations are bounded (test_fuzz's compile time; see binary_tensors, binary_scalar_typed
// and the where case for what meets directly and what is cast first); invalid combinations are compiled out with
// `if constexpr` on the fuzzer's own rules (a static_assert of the library would stop the build,
// which is itself a check that both agree on what is valid).
#pragma once

#include <stdexcept>
#include <variant>

namespace fuzz {

/// A typed tensor of any dtype; the alternatives in kDTypes order.
using Any = std::variant<lt::Tensor<bool>, lt::Tensor<std::uint8_t>, lt::Tensor<std::int32_t>, lt::Tensor<std::int64_t>,
                         lt::Tensor<lt::half>, lt::Tensor<float>, lt::Tensor<double>>;

struct TypeMismatch : std::runtime_error {
    using std::runtime_error::runtime_error;
};

/// Whether Any holds tensors of T: not the dtypes of generator versions 6 and 7 (int8, int16,
/// uint16, uint32; bfloat16), whose programs check() runs through the graph path only (another
/// 5 alternatives would more than double the pairs every binary visit compiles).
template <class T>
inline constexpr bool typed_holds = !(std::is_same_v<T, std::int8_t> || std::is_same_v<T, std::int16_t> ||
                                      std::is_same_v<T, std::uint16_t> || std::is_same_v<T, std::uint32_t> ||
                                      std::is_same_v<T, std::uint64_t> || std::is_same_v<T, lt::bfloat16>);

inline Any any_of(const NodePtr& n) {
    return lt::detail::visit_dtype(n->dtype, [&](auto tag) -> Any {
        using T = typename decltype(tag)::type;
        if constexpr (typed_holds<T>) return lt::Tensor<T>(n);
        else throw TypeMismatch(std::string("the typed path holds no ") + lt::dtype_name(n->dtype) + " tensors");
    });
}
inline NodePtr node_of(const Any& a) {
    return std::visit([](const auto& t) { return t.node_ptr(); }, a);
}

/// The expression as a Tensor of its static type, after checking that type.
template <class E>
Any finish(const E& e, DType want) {
    using R = typename std::decay_t<E>::value_type;
    if (lt::dtype_of<R>() != want)
        throw TypeMismatch(std::string("the C++ result type is ") + lt::dtype_name(lt::dtype_of<R>()) +
                           ", the fuzzer expects " + lt::dtype_name(want));
#ifdef FUZZ_NO_STATIC  // (a compile-time experiment)
    if constexpr (lt::detail::has_build_node<E>::value) return Any(lt::Tensor<R>(e.build_node()));
    else
#endif
    return Any(lt::Tensor<R>(e));
}

template <class X>
constexpr DType dtype_of_operand() {
    if constexpr (lt::detail::is_tensor_like_v<X>) return lt::dtype_of<typename X::value_type>();
    else if constexpr (std::is_same_v<X, bool>) return DType::Bool;
    else if constexpr (std::is_floating_point_v<X>) return DType::Float64;
    else return DType::Int64;
}

/// The dtype a binary op computes in, by the fuzzer's rules, for operands of C++ types L, R.
template <class L, class R>
constexpr DType promoted_operands() {
    constexpr DType l = dtype_of_operand<L>(), r = dtype_of_operand<R>();
    if constexpr (!lt::detail::is_tensor_like_v<L>) return promote_scalar(r, l);
    else if constexpr (!lt::detail::is_tensor_like_v<R>) return promote_scalar(l, r);
    else return promote_types(l, r);
}

template <class T>
Any unary_typed(UnaryOp op, const lt::Tensor<T>& x, DType want) {
    constexpr DType t = lt::dtype_of<T>();
    switch (op) {
#define FUZZ_U(NAME, EXPR)                                                   \
    case UnaryOp::NAME:                                                      \
        if constexpr (unary_ok(UnaryOp::NAME, t)) return finish(EXPR, want); \
        break;
        FUZZ_U(Neg, -x) FUZZ_U(Abs, lt::abs(x)) FUZZ_U(Relu, lt::relu(x)) FUZZ_U(Exp, lt::exp(x)) FUZZ_U(Log, lt::log(x))
        FUZZ_U(Sqrt, lt::sqrt(x)) FUZZ_U(Sin, lt::sin(x)) FUZZ_U(Cos, lt::cos(x)) FUZZ_U(Tanh, lt::tanh(x))
        FUZZ_U(Sigmoid, lt::sigmoid(x)) FUZZ_U(Sign, lt::sign(x)) FUZZ_U(Exp2, lt::exp2(x)) FUZZ_U(Log2, lt::log2(x))
        FUZZ_U(Rsqrt, lt::rsqrt(x)) FUZZ_U(Reciprocal, lt::reciprocal(x)) FUZZ_U(Tan, lt::tan(x)) FUZZ_U(Gelu, lt::gelu(x))
        FUZZ_U(Silu, lt::silu(x)) FUZZ_U(Floor, lt::floor(x)) FUZZ_U(Ceil, lt::ceil(x)) FUZZ_U(Round, lt::round(x))
        FUZZ_U(Trunc, lt::trunc(x)) FUZZ_U(BitwiseNot, ~x) FUZZ_U(LogicalNot, !x) FUZZ_U(IsNan, lt::isnan(x))
        FUZZ_U(IsInf, lt::isinf(x)) FUZZ_U(Log1p, lt::log1p(x)) FUZZ_U(Expm1, lt::expm1(x)) FUZZ_U(Erf, lt::erf(x))
        FUZZ_U(Erfc, lt::erfc(x)) FUZZ_U(Asin, lt::asin(x)) FUZZ_U(Acos, lt::acos(x)) FUZZ_U(Atan, lt::atan(x))
        FUZZ_U(Sinh, lt::sinh(x)) FUZZ_U(Cosh, lt::cosh(x)) FUZZ_U(Asinh, lt::asinh(x)) FUZZ_U(Acosh, lt::acosh(x))
        FUZZ_U(Atanh, lt::atanh(x))
#undef FUZZ_U
    }
    throw std::logic_error(std::string("typed path: unary ") + op_name(op) + " of " + lt::dtype_name(t));
}

/// a op b for tensors and C++ scalars (operators where C++ has them).
template <class L, class R>
Any binary_typed(BinaryOp op, const L& a, const R& b, DType want) {
    constexpr DType p = promoted_operands<L, R>();
    switch (op) {
#define FUZZ_B(NAME, EXPR)                                                    \
    case BinaryOp::NAME:                                                      \
        if constexpr (binary_ok(BinaryOp::NAME, p)) return finish(EXPR, want); \
        break;
        FUZZ_B(Add, a + b) FUZZ_B(Sub, a - b) FUZZ_B(Mul, a * b) FUZZ_B(Div, a / b) FUZZ_B(Pow, lt::pow(a, b))
        FUZZ_B(Maximum, lt::maximum(a, b)) FUZZ_B(Minimum, lt::minimum(a, b)) FUZZ_B(Lt, a < b) FUZZ_B(Le, a <= b)
        FUZZ_B(Gt, a > b) FUZZ_B(Ge, a >= b) FUZZ_B(Eq, a == b) FUZZ_B(Ne, a != b) FUZZ_B(Fmod, lt::fmod(a, b))
        FUZZ_B(Remainder, a % b) FUZZ_B(FloorDivide, lt::floor_divide(a, b)) FUZZ_B(BitAnd, a & b)
        FUZZ_B(BitOr, a | b) FUZZ_B(BitXor, a ^ b) FUZZ_B(Shl, a << b) FUZZ_B(Shr, a >> b)
        FUZZ_B(LogicalAnd, a && b) FUZZ_B(LogicalOr, a || b) FUZZ_B(Atan2, lt::atan2(a, b)) FUZZ_B(Hypot, lt::hypot(a, b))
        FUZZ_B(Copysign, lt::copysign(a, b))
#undef FUZZ_B
        case BinaryOp::Philox: break;
    }
    throw std::logic_error(std::string("typed path: binary ") + op_name(op) + " in " + lt::dtype_name(p));
}

/// One op per promotion rule (arith, compare, bitwise, shift; ordered and predicate ops and
/// true division promote as arithmetic does): these meet operands of two dtypes directly. Other ops on two dtypes get operands
/// cast to the statically promoted type first (the same values: promotion is that cast), which
/// keeps the instantiations at 7 x 23 instead of 49 x 23.

template <class A, class B>
Any binary_tensors(BinaryOp op, const lt::Tensor<A>& a, const lt::Tensor<B>& b, DType want) {
    if constexpr (std::is_same_v<A, B>) {
        return binary_typed(op, a, b, want);
    } else {
        constexpr DType p = promote_types(lt::dtype_of<A>(), lt::dtype_of<B>());
        switch (op) {
#define FUZZ_B(NAME, EXPR)                                                    \
    case BinaryOp::NAME:                                                      \
        if constexpr (binary_ok(BinaryOp::NAME, p)) return finish(EXPR, want); \
        break;
            FUZZ_B(Add, a + b) FUZZ_B(Lt, a < b) FUZZ_B(BitXor, a ^ b) FUZZ_B(Shl, a << b)
#undef FUZZ_B
            default: {
                using P = lt::promote_t<A, B>;
                static_assert(lt::dtype_of<P>() == p, "the fuzzer's promotion differs from the library's");
                return binary_typed(op, lt::Tensor<P>(lt::cast<P>(a)), lt::Tensor<P>(lt::cast<P>(b)), want);
            }
        }
        throw std::logic_error(std::string("typed path: binary ") + op_name(op) + " in " + lt::dtype_name(p));
    }
}

/// tensor op scalar (or scalar op tensor) with the scalar as a C++ value. Its C++ type matters
/// to promotion only when its category is above the tensor's: a floating tensor gets a double
/// (or a float), an integer one an int64_t (or an int) or a double,
/// a bool one a bool, an int64_t or a double (the value is the same in each). The narrow
/// types (int, float) are used for + only.
/// c op x, scalar first: written so for the ops that are not symmetric; the others are
/// x op' c (commutative ops, comparisons mirrored), which the front end builds alike.
template <class C, class T>
Any binary_left(BinaryOp op, const C& a, const lt::Tensor<T>& b, DType want) {
    constexpr DType p = promoted_operands<C, lt::Tensor<T>>();
    switch (op) {
#define FUZZ_B(NAME, EXPR)                                                    \
    case BinaryOp::NAME:                                                      \
        if constexpr (binary_ok(BinaryOp::NAME, p)) return finish(EXPR, want); \
        break;
        FUZZ_B(Sub, a - b) FUZZ_B(Div, a / b) FUZZ_B(Pow, lt::pow(a, b)) FUZZ_B(Fmod, lt::fmod(a, b))
        FUZZ_B(Remainder, a % b) FUZZ_B(FloorDivide, lt::floor_divide(a, b)) FUZZ_B(Shl, a << b) FUZZ_B(Shr, a >> b)
        FUZZ_B(Atan2, lt::atan2(a, b)) FUZZ_B(Copysign, lt::copysign(a, b))
#undef FUZZ_B
        case BinaryOp::Lt: return binary_typed(BinaryOp::Gt, b, a, want);
        case BinaryOp::Le: return binary_typed(BinaryOp::Ge, b, a, want);
        case BinaryOp::Gt: return binary_typed(BinaryOp::Lt, b, a, want);
        case BinaryOp::Ge: return binary_typed(BinaryOp::Le, b, a, want);
        default: return binary_typed(op, b, a, want);
    }
    throw std::logic_error(std::string("typed path: binary ") + op_name(op) + " in " + lt::dtype_name(p));
}

template <class T>
Any binary_scalar_typed(const Step& s, const lt::Tensor<T>& x) {
    const Scalar& v = s.value;
    const bool narrow = s.ctype == 1 && s.scalar_side == 2 && s.bop == BinaryOp::Add;
    auto run = [&](auto c) { return s.scalar_side == 1 ? binary_left(s.bop, c, x, s.dtype) : binary_typed(s.bop, x, c, s.dtype); };
    constexpr int cat = category(lt::dtype_of<T>());
    if (v.dtype == DType::Bool && cat == 0) return run(v.i != 0);
    if (v.dtype != DType::Float64 && cat <= 1) {
        if (narrow) return binary_typed(s.bop, x, static_cast<int>(v.i), s.dtype);
        return run(static_cast<std::int64_t>(v.i));
    }
    const double c = v.dtype == DType::Float64 ? v.f : static_cast<double>(v.i);
    if (narrow && cat == 2) return binary_typed(s.bop, x, static_cast<float>(c), s.dtype);
    return run(c);
}

template <class T>
Any reduce_typed(const Step& s, const lt::Tensor<T>& x) {
    const bool whole = s.all_axes && !s.keepdim;  // the no-argument members
    Axes axes = s.axes;
    if (s.all_axes)
        for (std::size_t k = 0; k < x.ndim(); ++k) axes.push_back(static_cast<int>(k));
    const bool kd = s.keepdim;
    switch (s.red) {
        case Red::Sum: return whole ? finish(x.sum(), s.dtype) : finish(x.sum(axes, kd), s.dtype);
        case Red::Prod: return whole ? finish(x.prod(), s.dtype) : finish(x.prod(axes, kd), s.dtype);
        case Red::Max: return whole ? finish(x.max(), s.dtype) : finish(x.max(axes, kd), s.dtype);
        case Red::Min: return whole ? finish(lt::min(x), s.dtype) : finish(lt::min(x, axes, kd), s.dtype);
        case Red::Mean: return whole ? finish(x.mean(), s.dtype) : finish(lt::mean(x, axes, kd), s.dtype);
        case Red::Any: return whole ? finish(x.any(), s.dtype) : finish(x.any(axes, kd), s.dtype);
        case Red::All: return whole ? finish(lt::all(x), s.dtype) : finish(x.all(axes, kd), s.dtype);
    }
    throw std::logic_error("typed path: reduction");
}

/// A scalar as the C++ value of type T (pad's value: the member takes a T).
template <class T>
T scalar_as(const Scalar& v0, DType t) {
    const Scalar v = v0.cast(t);
    if constexpr (std::is_same_v<T, bool>) return v.i != 0;
    else if constexpr (lt::detail::is_floating_v<T>) return T(v.f);
    else return static_cast<T>(v.i);
}

/// where under a condition of any dtype, as graph::where converts it to bool; a floating one
/// is converted explicitly (lt::where does not compile with it).
template <class P>
Any where_cast(const Any& cond, const lt::Tensor<P>& x, const lt::Tensor<P>& y, DType want) {
    return std::visit(
        [&](const auto& c) {
            if constexpr (lt::detail::is_floating_v<typename std::decay_t<decltype(c)>::value_type>)
                return finish(lt::where(lt::cast<bool>(c), x, y), want);
            else return finish(lt::where(c, x, y), want);
        },
        cond);
}

template <class Q>
lt::Tensor<Q> cast_any(const Any& a) {
    return std::visit([](const auto& v) { return lt::Tensor<Q>(lt::cast<Q>(v)); }, a);
}

/// Three parts: the type promoted from the first two (R) and the third's, computed statically;
/// each part is cast from its own type (through R, a half, 3613 would become 3612: seed 20039830).
template <class R>
Any concat3(const Any& x, const Any& y, const Any& third, int axis, DType want) {
    return std::visit(
        [&](const auto& z) {
            using Q = lt::promote_t<R, typename std::decay_t<decltype(z)>::value_type>;
            return finish(lt::concat<Q>({cast_any<Q>(x), cast_any<Q>(y), lt::cast<Q>(z)}, axis), want);
        },
        third);
}

// Fused expressions: the ops of a fixed expression shape picked by switches over generic
// lambdas, so the whole expression stays one expression template (its compiled loop).
template <class F>
Any with_unary(UnaryOp u, F f) {
    switch (u) {
        case UnaryOp::Neg: return f([](const auto& x) { return -x; });
        case UnaryOp::Exp: return f([](const auto& x) { return lt::exp(x); });
        default: return f([](const auto& x) { return lt::sigmoid(x); });
    }
}
template <class F>
Any with_op(BinaryOp op, F f) {
    switch (op) {
        case BinaryOp::Add: return f([](const auto& x, const auto& y) { return x + y; });
        case BinaryOp::Mul: return f([](const auto& x, const auto& y) { return x * y; });
        case BinaryOp::Div: return f([](const auto& x, const auto& y) { return x / y; });
        default: throw std::logic_error("typed path: fused op");
    }
}

template <class T, class B>
Any fused_typed(const Step& s, const lt::Tensor<T>& a, const lt::Tensor<B>& b, const lt::Tensor<B>& c) {
    return with_unary(s.uop, [&](auto u) {
        if constexpr (!std::is_same_v<T, B>) {  // pattern 3: u(float) op double
            return with_op(s.bop, [&](auto op) { return finish(op(u(a), b), s.dtype); });
        } else if (s.pattern == 2) {
            if (s.bop == BinaryOp::Lt) return finish(lt::where(a < b, u(a), c), s.dtype);
            return finish(lt::where(a >= b, u(a), c), s.dtype);
        } else {
            return with_op(s.bop, [&](auto op) {
                if (s.pattern == 0) return finish(op(u(a), b), s.dtype);
                if (s.bop2 == BinaryOp::Add) return finish(u(op(a, b)) + c, s.dtype);
                return finish(lt::maximum(u(op(a, b)), c), s.dtype);
            });
        }
    });
}

// Convolutions and pools, their options spelled as a user writes them (Step::spell): 0 one
// value per axis, padding as (before, after) pairs; 1 one value for all axes where they agree,
// padding by name (Same, Valid) or as widths where that says it, a pool's stride left to its
// default (the kernel) where it is the kernel; 2 as 1, the trailing default arguments left out.

inline bool all_are(const Shape& v, i64 x) {
    for (i64 e : v)
        if (e != x) return false;
    return true;
}
inline bool uniform(const Shape& v) { return !v.empty() && all_are(v, v[0]); }

enum class PadSpelling { Pairs, Widths, Same, Valid };
/// A conv's padding (its kernel from the weight's shape).
inline PadSpelling pad_spelling(const Step& s, const Shape& kernel) {
    if (s.spell == 0) return PadSpelling::Pairs;
    const bool zero = all_are(s.before, 0) && all_are(s.after, 0);
    bool same = !zero && !s.transposed && all_are(s.stride, 1) && kernel.size() == s.before.size();
    for (std::size_t i = 0; same && i < kernel.size(); ++i) {
        const i64 total = s.dilation[i] * (kernel[i] - 1);
        same = s.before[i] == total / 2 && s.after[i] == total - total / 2;
    }
    if (same) return PadSpelling::Same;
    if (zero && s.spell == 1) return PadSpelling::Valid;
    return s.before == s.after ? PadSpelling::Widths : PadSpelling::Pairs;
}
/// Whether a pool's stride is left to its default.
inline bool default_stride(const Step& s) { return s.spell >= 1 && s.stride == s.kernel; }

/// How many of the optional arguments (after x, or x and the weight) the typed path passes and
/// the printer writes.
inline int passed_args(const Step& s) {
    std::vector<bool> given;  // per optional argument: whether it differs from its default
    const bool padded = !all_are(s.before, 0) || !all_are(s.after, 0);
    if (s.kind == Kind::Conv && !s.transposed)
        given = {s.c >= 0, !all_are(s.stride, 1), padded, !all_are(s.dilation, 1), s.groups != 1};
    else if (s.kind == Kind::Conv)
        given = {s.c >= 0, !all_are(s.stride, 1), padded, !all_are(s.out_pad, 0), s.groups != 1, !all_are(s.dilation, 1)};
    else if (s.pool == 3) given = {true};
    else
        given = {!default_stride(s), padded, s.pool == 2 ? !s.include_pad : !all_are(s.dilation, 1)};
    int n = static_cast<int>(given.size());
    if (s.spell == 2)
        while (n > 0 && !given[static_cast<std::size_t>(n) - 1]) --n;
    return n;
}

inline lt::Spatial spatial_arg(const Shape& v, int spell) {
    if (spell >= 1 && uniform(v)) return lt::Spatial(v[0]);
    return lt::Spatial(std::vector<i64>(v.begin(), v.end()));
}
inline lt::ConvPadding padding_arg(const Step& s, const Shape& kernel) {
    switch (pad_spelling(s, kernel)) {
        case PadSpelling::Same: return lt::Padding::Same;
        case PadSpelling::Valid: return lt::Padding::Valid;
        case PadSpelling::Widths:
            if (uniform(s.before)) return lt::ConvPadding(s.before[0]);
            return lt::ConvPadding(std::vector<i64>(s.before.begin(), s.before.end()));
        default: {
            std::vector<std::pair<i64, i64>> sides;
            for (std::size_t i = 0; i < s.before.size(); ++i) sides.emplace_back(s.before[i], s.after[i]);
            return lt::ConvPadding(sides);
        }
    }
}

template <class T>
Any conv_typed(const Step& s, const lt::Tensor<T>& x, const lt::Tensor<T>& w, const std::optional<lt::Tensor<T>>& b) {
    if constexpr (!lt::detail::is_floating_v<T>) {
        throw std::logic_error("typed path: a conv of a non-floating dtype");
    } else {
        const Shape kernel(w.shape().begin() + 2, w.shape().end());
        const lt::Spatial st = spatial_arg(s.stride, s.spell), dl = spatial_arg(s.dilation, s.spell),
                          op = spatial_arg(s.out_pad, s.spell);
        const lt::ConvPadding pad = padding_arg(s, kernel);
        const int n = passed_args(s);
        auto conv = [&](auto f) -> Any {
            switch (n) {
                case 0: return finish(f(x, w), s.dtype);
                case 1: return finish(f(x, w, b), s.dtype);
                case 2: return finish(f(x, w, b, st), s.dtype);
                case 3: return finish(f(x, w, b, st, pad), s.dtype);
                case 4: return finish(f(x, w, b, st, pad, dl), s.dtype);
                default: return finish(f(x, w, b, st, pad, dl, s.groups), s.dtype);
            }
        };
        auto transposed = [&](auto f) -> Any {
            switch (n) {
                case 0: return finish(f(x, w), s.dtype);
                case 1: return finish(f(x, w, b), s.dtype);
                case 2: return finish(f(x, w, b, st), s.dtype);
                case 3: return finish(f(x, w, b, st, pad), s.dtype);
                case 4: return finish(f(x, w, b, st, pad, op), s.dtype);
                case 5: return finish(f(x, w, b, st, pad, op, s.groups), s.dtype);
                default: return finish(f(x, w, b, st, pad, op, s.groups, dl), s.dtype);
            }
        };
        switch (spatial_dims(s) * 2 + s.transposed) {
            case 2: return conv([](const auto&... a) { return lt::conv1d(a...); });
            case 3: return transposed([](const auto&... a) { return lt::conv_transpose1d(a...); });
            case 4: return conv([](const auto&... a) { return lt::conv2d(a...); });
            case 5: return transposed([](const auto&... a) { return lt::conv_transpose2d(a...); });
            case 6: return conv([](const auto&... a) { return lt::conv3d(a...); });
            default: return transposed([](const auto&... a) { return lt::conv_transpose3d(a...); });
        }
    }
}

template <class T>
Any pool_typed(const Step& s, const lt::Tensor<T>& x) {
    if constexpr (std::is_same_v<T, bool>) {
        throw std::logic_error("typed path: a pool of bool");
    } else {
        const std::size_t dims = spatial_dims(s);
        if (s.pool == 3) {
            const lt::Spatial size = spatial_arg(s.target, s.spell);
            if (dims == 1) return finish(lt::adaptive_avg_pool1d(x, size), s.dtype);
            if (dims == 2) return finish(lt::adaptive_avg_pool2d(x, size), s.dtype);
            return finish(lt::adaptive_avg_pool3d(x, size), s.dtype);
        }
        const lt::Spatial k = spatial_arg(s.kernel, s.spell), st = default_stride(s) ? lt::Spatial() : spatial_arg(s.stride, s.spell),
                          pad = spatial_arg(s.before, s.spell), dl = spatial_arg(s.dilation, s.spell);
        const int n = passed_args(s);
        auto max = [&](auto f) -> Any {
            switch (n) {
                case 0: return finish(f(x, k), s.dtype);
                case 1: return finish(f(x, k, st), s.dtype);
                case 2: return finish(f(x, k, st, pad), s.dtype);
                default: return finish(f(x, k, st, pad, dl), s.dtype);
            }
        };
        auto avg = [&](auto f) -> Any {
            switch (n) {
                case 0: return finish(f(x, k), s.dtype);
                case 1: return finish(f(x, k, st), s.dtype);
                case 2: return finish(f(x, k, st, pad), s.dtype);
                default: return finish(f(x, k, st, pad, s.include_pad), s.dtype);
            }
        };
        switch (dims * 3 + static_cast<std::size_t>(s.pool)) {
            case 3: return max([](const auto&... a) { return lt::max_pool1d(a...); });
            case 4: return max([](const auto&... a) { return lt::max_pool1d_with_indices(a...).second; });
            case 5: return avg([](const auto&... a) { return lt::avg_pool1d(a...); });
            case 6: return max([](const auto&... a) { return lt::max_pool2d(a...); });
            case 7: return max([](const auto&... a) { return lt::max_pool2d_with_indices(a...).second; });
            case 8: return avg([](const auto&... a) { return lt::avg_pool2d(a...); });
            case 9: return max([](const auto&... a) { return lt::max_pool3d(a...); });
            case 10: return max([](const auto&... a) { return lt::max_pool3d_with_indices(a...).second; });
            default: return avg([](const auto&... a) { return lt::avg_pool3d(a...); });
        }
    }
}

/// Builds step s through the public API from the typed values of earlier steps.
inline Any build_typed(const Step& s, const std::vector<Any>& vals, Device d) {
    auto in = [&](int k) -> const Any& { return vals[static_cast<std::size_t>(k)]; };
    auto pads = [&] {
        std::vector<std::pair<i64, i64>> w;
        for (std::size_t k = 0; k < s.before.size(); ++k) w.emplace_back(s.before[k], s.after[k]);
        return w;
    };
    switch (s.kind) {
        case Kind::Leaf:
            return lt::detail::visit_dtype(s.dtype, [&](auto tag) -> Any {
                using T = typename decltype(tag)::type;
                if constexpr (typed_holds<T>) return leaf_tensor<T>(s, d);
                else throw TypeMismatch(std::string("the typed path holds no ") + lt::dtype_name(s.dtype) + " tensors");
            });
        case Kind::Unary: return std::visit([&](const auto& x) { return unary_typed(s.uop, x, s.dtype); }, in(s.a));
        case Kind::Binary:
            if (s.scalar_side == 1) return std::visit([&](const auto& x) { return binary_scalar_typed(s, x); }, in(s.b));
            if (s.scalar_side == 2) return std::visit([&](const auto& x) { return binary_scalar_typed(s, x); }, in(s.a));
            return std::visit([&](const auto& x, const auto& y) { return binary_tensors(s.bop, x, y, s.dtype); }, in(s.a), in(s.b));
        case Kind::Where:
            // x and y of two dtypes meet directly under a bool condition; under a condition of
            // another dtype they are cast to their (static) promoted type first.
            return std::visit(
                [&](const auto& x, const auto& y) -> Any {
                    using X = typename std::decay_t<decltype(x)>::value_type;
                    using Y = typename std::decay_t<decltype(y)>::value_type;
                    using P = lt::promote_t<X, Y>;
                    if (const auto* c = std::get_if<lt::Tensor<bool>>(&in(s.a))) return finish(lt::where(*c, x, y), s.dtype);
                    return where_cast<P>(in(s.a), lt::cast<P>(x), lt::cast<P>(y), s.dtype);
                },
                in(s.b), in(s.c));
        case Kind::Cast:
            return std::visit(
                [&](const auto& x) {
                    return lt::detail::visit_dtype(s.dtype, [&](auto tag) -> Any {
                        using U = typename decltype(tag)::type;
                        if constexpr (typed_holds<U>) return finish(lt::cast<U>(x), s.dtype);
                        else throw TypeMismatch(std::string("the typed path holds no ") + lt::dtype_name(s.dtype) + " tensors");
                    });
                },
                in(s.a));
        case Kind::Reduce: return std::visit([&](const auto& x) { return reduce_typed(s, x); }, in(s.a));
        case Kind::Reshape: return std::visit([&](const auto& x) { return finish(x.reshape(s.target), s.dtype); }, in(s.a));
        case Kind::Permute: return std::visit([&](const auto& x) { return finish(x.permute(s.axes), s.dtype); }, in(s.a));
        case Kind::Expand: return std::visit([&](const auto& x) { return finish(x.expand(s.target), s.dtype); }, in(s.a));
        case Kind::Slice:
            return std::visit([&](const auto& x) { return finish(x.slice(s.axis, s.start, s.stop, s.step), s.dtype); }, in(s.a));
        case Kind::Pad:
            return std::visit(
                [&](const auto& x) {
                    using T = typename std::decay_t<decltype(x)>::value_type;
                    return finish(x.pad(pads(), scalar_as<T>(s.value, s.dtype)), s.dtype);
                },
                in(s.a));
        case Kind::Flip:
            return std::visit([&](const auto& x) { return finish(s.axes.size() == 1 ? x.flip(s.axes[0]) : x.flip(s.axes), s.dtype); },
                              in(s.a));
        case Kind::Matmul:
            return std::visit([&](const auto& x, const auto& y) { return finish(x.matmul(y), s.dtype); }, in(s.a), in(s.b));
        case Kind::Gather:
            return std::visit(
                [&](const auto& x, const auto& index) -> Any {
                    using I = typename std::decay_t<decltype(index)>::value_type;
                    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>) return finish(lt::gather(x, s.axis, index), s.dtype);
                    else throw std::logic_error("typed path: gather with a non-integer index");
                },
                in(s.a), in(s.b));
        case Kind::ScatterAdd:
            // (src as a Tensor of x's type: scatter_add converts it so itself.)
            return std::visit(
                [&](const auto& x, const auto& index) -> Any {
                    using T = typename std::decay_t<decltype(x)>::value_type;
                    using I = typename std::decay_t<decltype(index)>::value_type;
                    if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool> && !std::is_same_v<T, bool>) {
                        const lt::Tensor<T> src = std::visit([](const auto& v) { return lt::Tensor<T>(lt::cast<T>(v)); }, in(s.c));
                        return finish(lt::scatter_add(x, s.axis, index, src), s.dtype);
                    } else {
                        throw std::logic_error("typed path: scatter_add of bool or with a non-integer index");
                    }
                },
                in(s.a), in(s.b));
        case Kind::Scan:
            return std::visit(
                [&](const auto& x) { return s.red == Red::Sum ? finish(x.cumsum(s.axis), s.dtype) : finish(lt::cumprod(x, s.axis), s.dtype); },
                in(s.a));
        case Kind::ArgExt:
            return std::visit(
                [&](const auto& x) {
                    return s.red == Red::Max ? finish(x.argmax(s.axis, s.keepdim), s.dtype) : finish(lt::argmin(x, s.axis, s.keepdim), s.dtype);
                },
                in(s.a));
        case Kind::Concat:
            // The result type is the parts' promoted type, computed at compile time.
            return std::visit(
                [&](const auto& x, const auto& y) -> Any {
                    using R2 = lt::promote_t<typename std::decay_t<decltype(x)>::value_type, typename std::decay_t<decltype(y)>::value_type>;
                    if (s.c < 0) return finish(lt::concat<R2>({lt::cast<R2>(x), lt::cast<R2>(y)}, s.axis), s.dtype);
                    return concat3<R2>(in(s.a), in(s.b), in(s.c), s.axis, s.dtype);
                },
                in(s.a), in(s.b));
        case Kind::Assign:
            return std::visit(
                [&](const auto& x, const auto& value) -> Any {
                    using T = typename std::decay_t<decltype(x)>::value_type;
                    lt::Tensor<T> t;
                    if (s.lazy) {  // a lazy tensor: assign realizes it first
                        if constexpr (std::is_same_v<T, bool>) t = x | false;
                        else t = x * 1;
                    } else {  // a realized copy in its own memory
                        t = lt::tensor<T>(std::vector<T>(static_cast<std::size_t>(numel(s.shape))), s.shape, d);
                        t.assign(x);
                    }
                    t.slice(s.axis, s.start, s.stop, s.step).assign(value);
                    return t;
                },
                in(s.a), in(s.b));
        case Kind::Fused: {
            const Any& c = s.c >= 0 ? in(s.c) : in(s.b);
            if (s.pattern == 3)
                return fused_typed(s, std::get<lt::Tensor<float>>(in(s.a)), std::get<lt::Tensor<double>>(in(s.b)),
                                   std::get<lt::Tensor<double>>(c));
            if (s.dtype == DType::Float32)
                return fused_typed(s, std::get<lt::Tensor<float>>(in(s.a)), std::get<lt::Tensor<float>>(in(s.b)),
                                   std::get<lt::Tensor<float>>(c));
            return fused_typed(s, std::get<lt::Tensor<double>>(in(s.a)), std::get<lt::Tensor<double>>(in(s.b)),
                               std::get<lt::Tensor<double>>(c));
        }
        case Kind::Conv:
            // (x, the weight and the bias have one dtype: the generator's rule and conv's.)
            return std::visit(
                [&](const auto& x) -> Any {
                    using T = typename std::decay_t<decltype(x)>::value_type;
                    const auto& w = std::get<lt::Tensor<T>>(in(s.b));
                    std::optional<lt::Tensor<T>> b;
                    if (s.c >= 0) b = std::get<lt::Tensor<T>>(in(s.c));
                    return conv_typed(s, x, w, b);
                },
                in(s.a));
        case Kind::Pool: return std::visit([&](const auto& x) { return pool_typed(s, x); }, in(s.a));
        case Kind::Random:
            return lt::detail::visit_dtype(s.dtype, [&](auto tag) -> Any {
                using T = typename decltype(tag)::type;
                if constexpr (lt::detail::is_floating_v<T> && typed_holds<T>)
                    return s.rkind == 1 ? lt::randn<T>(s.shape, s.seed, d) : lt::rand<T>(s.shape, s.seed, d);
                else if constexpr (!std::is_same_v<T, bool> && typed_holds<T>) return lt::randint<T>(s.low, s.high, s.shape, s.seed, d);
                else throw std::logic_error(std::string("random ") + lt::dtype_name(s.dtype));
            });
    }
    throw std::logic_error("typed path: unknown step kind");
}

}  // namespace fuzz
