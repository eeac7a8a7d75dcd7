// SPDX-License-Identifier: MIT
// The static kernel of an expression template (see ir/static_kernel.hpp): the expression's
// tree, compiled into one loop over SIMD batches, for expressions whose values are all of one
// floating type T (comparisons and predicates may appear as where() conditions).
#pragma once

#include <cstring>
#include <type_traits>

#include "../simd/simd_ops.hpp"
#include "../ir/static_kernel.hpp"
#include "expr.hpp"

namespace lazytensor::detail {

/// Rounds a node's value the way the interpreter does: the compiler may not fuse it into the
/// next operation (a multiply and an add into an FMA, say), so both paths agree bit for bit.
template <class B>
inline B rounded(B value) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
    asm("" : "+v"(value.data));
#elif defined(__GNUC__) && defined(__aarch64__)
    asm("" : "+w"(value.data));
#endif
    return value;
}

/// What evaluating a static expression sees for one batch of lanes.
template <class T>
struct StaticLanes {
    using B = host::batch<T>;
    static constexpr std::int64_t W = B::size;
    const LeafView* leaves;
    const T* consts;
    std::int64_t t;      // first lane of the batch
    std::int64_t count;  // lanes in this batch (W except at the end)

    B load(int leaf) const {
        const LeafView& v = leaves[leaf];
        const T* p = static_cast<const T*>(v.ptr);
        if (count == W) {
            if (v.step == 1) return B::load_unaligned(p + t);
            if (v.step == 0) return B(p[0]);
        }
        alignas(64) T tmp[W] = {};
        for (std::int64_t k = 0; k < count; ++k) tmp[k] = p[(t + k) * v.step];
        return B::load_aligned(tmp);
    }
};

/// Matches a static expression against the IR of the kernel it became, from the store down.
struct StaticMatcher {
    const ir::Phase& phase;
    DType dtype;
    StaticBinding& binding;

    const ir::Instr* at(int i, ir::Op op, DType t) const {
        if (i < 0 || i >= static_cast<int>(phase.instrs.size())) return nullptr;
        const ir::Instr& in = phase.instrs[static_cast<std::size_t>(i)];
        if (in.op == ir::Op::Load && !in.plain_load()) return nullptr;  // gathers and gated loads: interpreted
        return in.op == op && in.dtype == t ? &in : nullptr;
    }
};

// StaticExpr<E, T>: `ok` when E can be compiled for T; then `eval` computes a batch (a mask
// when `boolean`, i.e. for comparisons) and `match` checks an IR instruction (and its
// operands) against E. Leaves and scalars are numbered in depth-first order, from L and C.
template <class E, class T>
struct StaticExpr {
    static constexpr bool ok = false, boolean = false;
    static constexpr int leaves = 0, consts = 0;
};

template <class T>
struct StaticExpr<Tensor<T>, T> {
    static constexpr bool ok = std::is_floating_point_v<T>, boolean = false;
    static constexpr int leaves = 1, consts = 0;
    template <int L, int C>
    static host::batch<T> eval(const StaticLanes<T>& lanes) { return lanes.load(L); }
    template <int L, int C>
    static bool match(StaticMatcher& m, int i) {
        if (!m.at(i, ir::Op::Load, m.dtype)) return false;
        m.binding.leaf_loads[L] = i;
        return true;
    }
};

template <class S, class T>
struct StaticExpr<ScalarLeaf<S>, T> {
    static constexpr bool ok = std::is_floating_point_v<T>, boolean = false;
    static constexpr int leaves = 0, consts = 1;
    template <int L, int C>
    static host::batch<T> eval(const StaticLanes<T>& lanes) { return host::batch<T>(lanes.consts[C]); }
    template <int L, int C>
    static bool match(StaticMatcher& m, int i) {
        const ir::Instr* in = m.at(i, ir::Op::Param, m.dtype);
        if (!in) in = m.at(i, ir::Op::Const, m.dtype);
        if (!in) return false;
        m.binding.scalar_params[C] = in->op == ir::Op::Param ? in->arg : -1;
        m.binding.consts[C] = in->value;
        return true;
    }
};

template <UnaryOp Op>
struct UnaryFunctor;
#define LAZYTENSOR_X(name, fn, rule) \
    template <>                      \
    struct UnaryFunctor<UnaryOp::name> { using type = host::name; };
LAZYTENSOR_UNARY_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X

template <BinaryOp Op>
struct BinaryFunctor;
#define LAZYTENSOR_X(name, fn, rule) \
    template <>                      \
    struct BinaryFunctor<BinaryOp::name> { using type = host::name; };
LAZYTENSOR_BINARY_OPS(LAZYTENSOR_X)
#undef LAZYTENSOR_X

// A predicate (isnan, !x) of T values is a mask, like a comparison.
template <UnaryOp Op, class A, class T>
struct StaticExpr<UnaryExpr<Op, A>, T> {
    using Sub = StaticExpr<A, T>;
    static constexpr bool predicate = returns_bool(type_rule(Op));
    static constexpr bool ok =
        Sub::ok && !Sub::boolean && std::is_same_v<typename A::value_type, T> && host::rule_allows<T>(type_rule(Op));
    static constexpr bool boolean = predicate;
    static constexpr int leaves = Sub::leaves, consts = Sub::consts;
    template <int L, int C>
    static auto eval(const StaticLanes<T>& lanes) {
        if constexpr (predicate) return UnaryFunctor<Op>::type::mask(Sub::template eval<L, C>(lanes));
        else return rounded(UnaryFunctor<Op>::type::simd(Sub::template eval<L, C>(lanes)));
    }
    template <int L, int C>
    static bool match(StaticMatcher& m, int i) {
        const ir::Instr* in = m.at(i, ir::Op::Unary, predicate ? DType::Bool : m.dtype);
        return in && in->unary == Op && Sub::template match<L, C>(m, in->a);
    }
};

template <BinaryOp Op, class L_, class R_, class T>
struct StaticExpr<BinaryExpr<Op, L_, R_>, T> {
    using Left = StaticExpr<L_, T>;
    using Right = StaticExpr<R_, T>;
    static constexpr bool compare = returns_bool(type_rule(Op));  // comparisons, logical and/or
    // Two masks (where((a < b) & (c < d), ...)) combine with and/or/xor into a mask.
    static constexpr bool masks = Left::boolean && Right::boolean;
    static constexpr bool mask_op = Op == BinaryOp::LogicalAnd || Op == BinaryOp::LogicalOr || Op == BinaryOp::BitAnd ||
                                    Op == BinaryOp::BitOr || Op == BinaryOp::BitXor;
    static constexpr bool ok = Left::ok && Right::ok &&
                               (masks ? mask_op : !Left::boolean && !Right::boolean && host::rule_allows<T>(type_rule(Op)));
    static constexpr bool boolean = compare || masks;
    static constexpr int leaves = Left::leaves + Right::leaves, consts = Left::consts + Right::consts;
    template <int L, int C>
    static auto eval(const StaticLanes<T>& lanes) {
        auto a = Left::template eval<L, C>(lanes);
        auto b = Right::template eval<L + Left::leaves, C + Left::consts>(lanes);
        if constexpr (masks) {
            if constexpr (Op == BinaryOp::LogicalAnd || Op == BinaryOp::BitAnd) return a & b;
            else if constexpr (Op == BinaryOp::LogicalOr || Op == BinaryOp::BitOr) return a | b;
            else return a ^ b;
        } else if constexpr (compare) {
            return compare_batch(a, b);
        } else {
            return rounded(BinaryFunctor<Op>::type::simd(a, b));
        }
    }
    template <int L, int C>
    static bool match(StaticMatcher& m, int i) {
        const ir::Instr* in = m.at(i, ir::Op::Binary, boolean ? DType::Bool : m.dtype);
        return in && in->binary == Op && Left::template match<L, C>(m, in->a) &&
               Right::template match<L + Left::leaves, C + Left::consts>(m, in->b);
    }
    // IEEE comparisons: every one is false for NaN except !=, which is true (so NaN is "true"
    // for logical and/or, as in the interpreter).
    static auto compare_batch(const host::batch<T>& a, const host::batch<T>& b) {
        using B = host::batch<T>;
        if constexpr (Op == BinaryOp::Lt) return a < b;
        else if constexpr (Op == BinaryOp::Le) return a <= b;
        else if constexpr (Op == BinaryOp::Gt) return a > b;
        else if constexpr (Op == BinaryOp::Ge) return a >= b;
        else if constexpr (Op == BinaryOp::Eq) return a == b;
        else if constexpr (Op == BinaryOp::Ne) return !(a == b);
        else if constexpr (Op == BinaryOp::LogicalAnd) return !(a == B(T(0))) & !(b == B(T(0)));
        else return !(a == B(T(0))) | !(b == B(T(0)));  // LogicalOr
    }
};

template <class C_, class X, class Y, class T>
struct StaticExpr<WhereExpr<C_, X, Y>, T> {
    using Cond = StaticExpr<C_, T>;
    using Then = StaticExpr<X, T>;
    using Else = StaticExpr<Y, T>;
    static constexpr bool ok = Cond::ok && Cond::boolean && Then::ok && !Then::boolean && Else::ok && !Else::boolean;
    static constexpr bool boolean = false;
    static constexpr int leaves = Cond::leaves + Then::leaves + Else::leaves;
    static constexpr int consts = Cond::consts + Then::consts + Else::consts;
    template <int L, int C>
    static host::batch<T> eval(const StaticLanes<T>& lanes) {
        auto c = Cond::template eval<L, C>(lanes);
        auto x = Then::template eval<L + Cond::leaves, C + Cond::consts>(lanes);
        auto y = Else::template eval<L + Cond::leaves + Then::leaves, C + Cond::consts + Then::consts>(lanes);
        return xsimd::select(c, x, y);
    }
    template <int L, int C>
    static bool match(StaticMatcher& m, int i) {
        const ir::Instr* in = m.at(i, ir::Op::Where, m.dtype);
        return in && Cond::template match<L, C>(m, in->a) &&
               Then::template match<L + Cond::leaves, C + Cond::consts>(m, in->b) &&
               Else::template match<L + Cond::leaves + Then::leaves, C + Cond::consts + Then::consts>(m, in->c);
    }
};

/// The compiled loop of expression type E with element type T.
template <class E, class T>
class StaticKernelOf final : public StaticKernel {
    using SE = StaticExpr<E, T>;

public:
    bool match(const ir::Kernel& k, StaticBinding& binding) const override {
        if (k.phases.size() != 1 || k.has_reduction() || k.phases[0].stores.size() != 1) return false;
        const ir::Phase& phase = k.phases[0];
        binding.leaf_loads.assign(SE::leaves, -1);
        binding.scalar_params.assign(SE::consts, -1);
        binding.consts.assign(SE::consts, Scalar{});
        StaticMatcher m{phase, dtype_of<T>(), binding};
        return SE::template match<0, 0>(m, phase.stores[0].value);
    }

    LAZYTENSOR_HOT_LOOP void run(const StaticBinding& binding, const Scalar* scalars, const LeafView* leaves, void* out,
                                 std::int64_t out_step, std::int64_t n, bool stream) const override {
        using B = host::batch<T>;
        constexpr std::int64_t W = B::size;
        T consts[SE::consts > 0 ? SE::consts : 1];
        for (std::size_t c = 0; c < static_cast<std::size_t>(SE::consts); ++c) {
            const int param = binding.scalar_params[c];
            consts[c] = (param >= 0 ? scalars[param] : binding.consts[c]).template as<T>();
        }
        T* dst = static_cast<T*>(out);
        if (out_step == 1 && stream) {
            // Stage a run in cache, then write it out with non-temporal stores.
            alignas(64) T staged[kStage];
            for (std::int64_t t0 = 0; t0 < n; t0 += kStage) {
                const std::int64_t len = std::min<std::int64_t>(kStage, n - t0);
                for (std::int64_t t = 0; t < len; t += W) {
                    const StaticLanes<T> lanes{leaves, consts, t0 + t, std::min(W, len - t)};
                    SE::template eval<0, 0>(lanes).store_aligned(staged + t);
                }
                host::stream_copy(reinterpret_cast<char*>(dst + t0), reinterpret_cast<const char*>(staged),
                                  static_cast<std::size_t>(len) * sizeof(T));
            }
            return;
        }
        for (std::int64_t t = 0; t < n; t += W) {
            const StaticLanes<T> lanes{leaves, consts, t, std::min(W, n - t)};
            const B value = SE::template eval<0, 0>(lanes);
            if (lanes.count == W && out_step == 1) {
                value.store_unaligned(dst + t);
            } else {
                alignas(64) T staged[W];
                value.store_aligned(staged);
                for (std::int64_t k = 0; k < lanes.count; ++k) dst[(t + k) * out_step] = staged[k];
            }
        }
    }

private:
    static constexpr std::int64_t kStage = 1024;
};

/// The static kernel of expression type E, or null when E cannot be compiled.
template <class E>
const StaticKernel* static_kernel_of() {
    using T = typename E::value_type;
    if constexpr (StaticExpr<E, T>::ok && !StaticExpr<E, T>::boolean) {
        static const StaticKernelOf<E, T> kernel;
        return &kernel;
    } else {
        return nullptr;
    }
}

}  // namespace lazytensor::detail
