// SPDX-License-Identifier: MIT
// Gradient fuzzing: random differentiable float64 programs (fuzz::Program, so the printer,
// the reference evaluator and the minimizer of fuzz.hpp serve them too). For each program, the
// gradient of L = sum_i sum(output_i * c_i) (c_i random cotangents) with respect to every
// float64 leaf is computed on a device by reverse mode (the graph path: detail::vjp_nodes; the
// typed path: lt::vjp for even seeds, lt::value_and_grad of L written out for odd ones) and
// compared with central differences of L computed by the fuzzer's own double reference
// evaluator (fuzz::evaluate), never by the library's forward. Steps marked stop_grad pass
// through lt::stop_gradient on the device and are frozen at their values in the differences.
//
// Non-differentiable points. Three layers:
//   1. The generator evaluates the reference as it goes and rejects a step whose sampled values
//      lie within 1e-3 of a kink or jump (abs, relu, sign, floor..., maximum/minimum, a max/min
//      reduction's or a max_pool window's runner-up, a comparison feeding where, fmod/remainder's
//      a / b near a whole number, copysign's operands, atan2's branch cut) or within 0.05 of a
//      domain edge or pole (log, sqrt, rsqrt, reciprocal, div, pow's base, asin, atanh, acosh,
//      tan, hypot and atan2 at the origin); a domain op whose input fails is fed through
//      hypot(x, c) or tanh(x) * r first. Exactly equal operands of a maximum, minimum,
//      comparison, max/min reduction or max_pool window (gap 0) are allowed: they come from
//      structure (expand, a step meeting itself, pad values), and move together under any
//      perturbation; the rules' tie splitting (max_pool's: all to the first maximum in window
//      order) is tested so.
//   2. Every check recomputes the same gaps on the program it is given (the minimizer's
//      programs included) and skips the whole program if a gap is nonzero but below 1e-9 (the
//      library's rounding could take the other branch than the reference) or a domain edge is
//      nearer than 1e-2 (finite differences are unreliable there).
//   3. Per element: the reference records every branch decision of the program (the values of
//      bool and integer steps, the sign of each kink's gap, which elements of a max/min group
//      or a max_pool window reach the extremum). An element whose perturbations x + h or x - h
//      change a decision has a kink within h along that direction: it is not compared (counted
//      as skipped).
#pragma once

#include "fuzz.hpp"

namespace fuzz {
namespace grad {

struct Options {
    int min_ops = 2, max_ops = 9;  // non-leaf steps
    i64 max_leaf = 24;             // elements of a leaf
    i64 cap = 96;                  // elements of any step
    double magnitude = 100;        // |value| of every step's elements
    double margin = 1e-3;          // distance of the sampled values from a kink
    double edge = 0.05;            // distance from a domain edge or pole
    // Now and then a first leaf with an axis past 32 (scans go blocked there), and a cap to fit.
    double long_chance = 0.05;
    i64 long_cap = 160;
};

// ================================================================================== kinks

/// x's elements as read by an output of shape `out` (NumPy broadcasting).
inline std::vector<double> spread(const Arr& x, const Shape& out) {
    const auto map = broadcast_map(out, x.shape);
    std::vector<double> v(map.size());
    for (std::size_t k = 0; k < map.size(); ++k) v[k] = x.x[static_cast<std::size_t>(map[k])].v;
    return v;
}

inline i64 sign_of(double x) { return (x > 0) - (x < 0); }

/// Groups of a reduction over the flagged axes: the input's linear indices, per output element.
inline std::vector<std::vector<i64>> reduce_groups(const Shape& shape, const std::vector<bool>& red) {
    Shape kept;
    for (std::size_t k = 0; k < shape.size(); ++k) kept.push_back(red[k] ? 1 : shape[k]);
    std::vector<std::vector<i64>> groups(static_cast<std::size_t>(numel(kept)));
    std::vector<i64> idx(shape.size(), 0);
    for (i64 lin = 0; lin < numel(shape); ++lin) {
        i64 o = 0;
        for (std::size_t k = 0; k < shape.size(); ++k) o = o * kept[k] + (red[k] ? 0 : idx[k]);
        groups[static_cast<std::size_t>(o)].push_back(lin);
        for (std::size_t k = shape.size(); k-- > 0;)
            if (++idx[k] < shape[k]) break;
            else idx[k] = 0;
    }
    return groups;
}

/// Calls kink(decision, gap, tie) for every branch point of step s (gap: the distance of the
/// sampled values from the point where the decision changes; tie: whether a gap of exactly 0
/// may be a tie of values that move together, as the operands of a maximum or the elements of a
/// max reduction can be) and edge(distance) for every element near a domain edge or pole, from
/// the reference values `v` of all steps.
template <class Kink, class Edge>
void step_kinks(const Step& s, const std::vector<Arr>& v, Kink kink, Edge edge) {
    auto in = [&](int k) -> const Arr& { return v[static_cast<std::size_t>(k)]; };
    const double pi = 3.14159265358979323846;
    switch (s.kind) {
        case Kind::Unary: {
            if (!is_float(in(s.a).dtype)) return;
            for (const Val& e : in(s.a).x) {
                const double x = e.v;
                switch (s.uop) {
                    case UnaryOp::Abs: case UnaryOp::Relu: case UnaryOp::Sign: kink(sign_of(x), std::fabs(x), false); break;
                    case UnaryOp::Floor: case UnaryOp::Ceil: case UnaryOp::Trunc:
                        kink(static_cast<i64>(std::floor(x)), dist_to_grid(x, 0), false);
                        break;
                    case UnaryOp::Round: kink(static_cast<i64>(std::floor(x + 0.5)), dist_to_grid(x, 0.5), false); break;
                    case UnaryOp::Log: case UnaryOp::Log2: case UnaryOp::Sqrt: case UnaryOp::Rsqrt: edge(x); break;
                    case UnaryOp::Reciprocal: edge(std::fabs(x)); break;
                    case UnaryOp::Log1p: edge(x + 1); break;
                    case UnaryOp::Asin: case UnaryOp::Acos: case UnaryOp::Atanh: edge(1 - std::fabs(x)); break;
                    case UnaryOp::Acosh: edge(x - 1); break;
                    case UnaryOp::Tan: edge(dist_to_grid(x / pi, 0.5) * pi); break;
                    default: break;
                }
            }
            return;
        }
        case Kind::Binary: {
            const Val sc = scalar_val(s.value, DType::Float64);
            const std::vector<double> A = s.scalar_side == 1 ? std::vector<double>(static_cast<std::size_t>(numel(s.shape)), sc.v)
                                                             : spread(in(s.a), s.shape);
            const std::vector<double> B = s.scalar_side == 2 ? std::vector<double>(static_cast<std::size_t>(numel(s.shape)), sc.v)
                                                             : spread(in(s.b), s.shape);
            for (std::size_t k = 0; k < A.size(); ++k) {
                const double a = A[k], b = B[k];
                switch (s.bop) {
                    case BinaryOp::Div: edge(std::fabs(b)); break;
                    case BinaryOp::Pow:
                        // A whole scalar exponent: a polynomial (a pole at 0 if negative); else a > 0.
                        if (s.scalar_side == 2 && b == std::nearbyint(b)) {
                            if (b < 0) edge(std::fabs(a));
                        } else {
                            edge(a);
                        }
                        break;
                    case BinaryOp::Maximum: case BinaryOp::Minimum: case BinaryOp::Lt: case BinaryOp::Le:
                    case BinaryOp::Gt: case BinaryOp::Ge: case BinaryOp::Eq: case BinaryOp::Ne:
                        kink(sign_of(a - b), std::fabs(a - b), true);
                        break;
                    case BinaryOp::Fmod: case BinaryOp::Remainder: case BinaryOp::FloorDivide:
                        edge(std::fabs(b));
                        if (b != 0) kink(static_cast<i64>(std::floor(a / b)), dist_to_grid(a / b, 0) * std::fabs(b), false);
                        break;
                    case BinaryOp::Copysign:
                        kink(sign_of(a), std::fabs(a), false);
                        kink(sign_of(b), std::fabs(b), false);
                        break;
                    case BinaryOp::Atan2:  // the branch cut (a = 0, b < 0) and the origin
                        edge(std::hypot(a, b));
                        kink(b < 0 ? sign_of(a) : 2, b < 0 ? std::fabs(a) : INFINITY, false);
                        break;
                    case BinaryOp::Hypot: edge(std::hypot(a, b)); break;
                    default: break;
                }
            }
            return;
        }
        case Kind::Reduce: case Kind::ArgExt: {
            const bool arg = s.kind == Kind::ArgExt;
            if (!arg && s.red != Red::Max && s.red != Red::Min) return;
            const Arr& x = in(s.a);
            if (!is_float(x.dtype)) return;
            const std::size_t r = x.shape.size();
            std::vector<bool> red(r, arg ? false : s.all_axes);
            if (arg) red[static_cast<std::size_t>(norm_axis(s.axis, r))] = true;
            else
                for (int a : s.axes) red[static_cast<std::size_t>(norm_axis(a, r))] = true;
            for (const auto& g : reduce_groups(x.shape, red)) {
                double ext = s.red == Red::Max ? -INFINITY : INFINITY;
                for (i64 i : g) {
                    const double e = x.x[static_cast<std::size_t>(i)].v;
                    ext = s.red == Red::Max ? std::max(ext, e) : std::min(ext, e);
                }
                // Which elements reach the extremum, and how far the others are from it.
                for (i64 i : g) {
                    const double e = x.x[static_cast<std::size_t>(i)].v;
                    kink(e == ext, std::fabs(e - ext), true);
                }
            }
            return;
        }
        case Kind::Pool: {  // max_pool (values and indices): the elements of a window at its maximum
            if (s.pool > 1) return;
            const Arr& x = in(s.a);
            const std::size_t dims = spatial_dims(s), c = x.shape.size() - dims - 1;
            const Shape plane_in(x.shape.begin() + static_cast<std::ptrdiff_t>(c) + 1, x.shape.end());
            const Shape plane_out(s.shape.begin() + static_cast<std::ptrdiff_t>(c) + 1, s.shape.end());
            const auto win = windows_of(plane_in, plane_out, s.kernel, s);
            const i64 planes = numel(Shape(x.shape.begin(), x.shape.begin() + static_cast<std::ptrdiff_t>(c) + 1));
            for (i64 pl = 0; pl < planes; ++pl)
                for (const auto& window : win) {
                    double ext = -INFINITY;
                    for (i64 p : window)
                        if (p >= 0) ext = std::max(ext, x.x[static_cast<std::size_t>(pl * numel(plane_in) + p)].v);
                    for (i64 p : window)
                        if (p >= 0) {
                            const double e = x.x[static_cast<std::size_t>(pl * numel(plane_in) + p)].v;
                            kink(e == ext, std::fabs(e - ext), true);
                        }
                }
            return;
        }
        case Kind::Fused: {
            // u(a / b) op2 c computes a / b at a and b's own broadcast shape, even where an empty
            // c makes the result empty: its zero cotangent then meets 1 / b in reverse mode, NaN at
            // b = 0 (0 * inf, as in PyTorch), where the differences see no dependence at all.
            if (s.pattern == 1 && s.bop == BinaryOp::Div && numel(s.shape) == 0)
                if (const auto inner = broadcast(in(s.a).shape, in(s.b).shape))
                    for (double b : spread(in(s.b), *inner)) edge(std::fabs(b));
            const std::vector<double> A = spread(in(s.a), s.shape), B = spread(in(s.b), s.shape);
            const std::vector<double> C = s.c >= 0 ? spread(in(s.c), s.shape) : std::vector<double>();
            for (std::size_t k = 0; k < A.size(); ++k) {
                if (s.pattern == 2) {
                    kink(sign_of(A[k] - B[k]), std::fabs(A[k] - B[k]), true);
                    continue;
                }
                if (s.bop == BinaryOp::Div) edge(std::fabs(B[k]));
                if (s.pattern == 1 && s.bop2 == BinaryOp::Maximum) {
                    Val a, b;
                    a.v = A[k], b.v = B[k];
                    const double t = unary_val(s.uop, binary_val(s.bop, a, b, DType::Float64, DType::Float64), DType::Float64,
                                               DType::Float64).v;
                    kink(sign_of(t - C[k]), std::fabs(t - C[k]), true);
                }
            }
            return;
        }
        default: return;
    }
}

/// The smallest kink gap and the smallest edge distance of steps [from, to). A gap of exactly
/// 0 counts only where it cannot be a tie and `strict` (the generator's choice: the checks
/// leave such an element to the decisions, which skip it).
struct Gaps {
    double kink = INFINITY, edge = INFINITY;
};
inline Gaps gaps_of(const Program& p, const std::vector<Arr>& v, std::size_t from, std::size_t to, bool strict = false) {
    Gaps g;
    for (std::size_t i = from; i < to; ++i)
        step_kinks(
            p.steps[i], v,
            [&](i64, double gap, bool tie) {
                if (std::isnan(gap)) gap = 0;
                else if (gap == 0 && (tie || !strict)) return;
                g.kink = std::min(g.kink, gap);
            },
            [&](double d) { g.edge = std::min(g.edge, std::isnan(d) ? -INFINITY : d); });
    return g;
}

/// Every branch decision of the program at the reference values v.
inline std::vector<i64> decisions(const Program& p, const std::vector<Arr>& v) {
    std::vector<i64> out;
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
        if (!is_float(p.steps[i].dtype)) {
            for (const Val& e : v[i].x) out.push_back(e.dc ? std::numeric_limits<i64>::min() : e.i);
            continue;
        }
        step_kinks(p.steps[i], v, [&](i64 d, double, bool) { out.push_back(d); }, [](double) {});
    }
    return out;
}

// ============================================================================== generator

class Generator {
public:
    Generator(u64 seed, Options opt) : rng(seed ^ 0x9AD0F0CC5EEDull), opt(opt) { prog.seed = seed; }

    Program run() {
        if (rng.chance(opt.long_chance)) {
            static const std::vector<Shape> pool = {{33}, {40}, {65}, {2, 33}, {37, 2}, {1, 48}};
            opt.cap = opt.long_cap;
            add_leaf(rng.pick(pool));
        } else {
            add_leaf(leaf_shape());
        }
        if (rng.chance(0.5)) add_leaf(rng.chance(0.5) ? prog.steps[0].shape : leaf_shape());
        const int target = static_cast<int>(rng.range(opt.min_ops, opt.max_ops));
        for (int guard = 0; ops < target && guard < 300; ++guard) try_step();
        // Outputs: every float step that no later step reads (so that every step counts),
        // and others now and then; a few of the rest pass through stop_gradient.
        std::vector<bool> read(prog.steps.size(), false);
        for (const Step& s : prog.steps)
            for (int k : {s.a, s.b, s.c})
                if (k >= 0) read[static_cast<std::size_t>(k)] = true;
        bool any = false;
        for (std::size_t i = 0; i < prog.steps.size(); ++i) {
            Step& s = prog.steps[i];
            if (s.kind == Kind::Leaf || s.dtype != DType::Float64) continue;
            s.output = !read[i] || rng.chance(0.15);
            s.stop_grad = !s.output && rng.chance(0.08);
            any = any || s.output;
        }
        if (!any) {  // (every attempt was rejected: rare) a sum of the first leaf
            Step s;
            s.kind = Kind::Reduce, s.red = Red::Sum, s.all_axes = true, s.a = 0, s.dtype = DType::Float64;
            s.output = true;
            push(s);
        }
        prog.together = rng.chance(0.7);
        return prog;
    }

private:
    Rng rng;
    Options opt;
    Program prog;
    int ops = 0;

    int count() const { return static_cast<int>(prog.steps.size()); }
    const Step& at(int i) const { return prog.steps[static_cast<std::size_t>(i)]; }

    Shape leaf_shape() {
        static const std::vector<int> ranks = {0, 1, 1, 2, 2, 2, 3, 3};
        static const std::vector<i64> extents = {1, 2, 2, 3, 3, 4, 5};
        for (;;) {
            Shape s(static_cast<std::size_t>(rng.pick(ranks)));
            for (auto& e : s) e = rng.chance(0.02) ? 0 : rng.pick(extents);
            if (numel(s) <= opt.max_leaf) return s;
        }
    }

    void push(Step s) {
        if (s.kind != Kind::Leaf) ++ops;
        prog.steps.push_back(std::move(s));
    }

    int add_leaf(const Shape& shape, DType t = DType::Float64) {
        Step s;
        s.kind = Kind::Leaf;
        s.dtype = t;
        s.shape = shape;
        // Exact zeros now and then: a product's gradient at a zero factor takes another rule.
        const bool zeros = t == DType::Float64 && rng.chance(0.15);
        for (i64 k = 0; k < numel(shape); ++k)
            s.data.push_back(t == DType::Bool ? static_cast<double>(rng.below(2)) : zeros && rng.chance(0.3) ? 0.0 : rng.uniform() * 4 - 2);
        push(s);
        return count() - 1;
    }
    int add_index_leaf(const Shape& shape, i64 bound) {
        const DType t = rng.chance(0.5) ? DType::Int64 : DType::Int32;
        Step s;
        s.kind = Kind::Leaf;
        s.dtype = t;
        s.shape = shape;
        for (i64 k = 0; k < numel(shape); ++k) s.data.push_back(static_cast<double>(rng.below(bound)));
        push(s);
        return count() - 1;
    }

    /// Adds s if its reference values are finite, moderate, and away from kinks and domain
    /// edges; returns its index, or -1 (nothing added).
    int accept(Step s) {
        if (numel(s.shape) > opt.cap) return -1;
        Program q = prog;
        q.steps.push_back(s);
        std::vector<Arr> v = evaluate(q);
        for (const Val& e : v.back().x)
            if (e.dc || (is_float(s.dtype) && !(std::fabs(e.v) <= opt.magnitude))) return -1;
        const Gaps g = gaps_of(q, v, q.steps.size() - 1, q.steps.size(), true);
        if (g.kink < opt.margin || g.edge < opt.edge) return -1;
        prog = std::move(q);
        if (s.kind != Kind::Leaf) ++ops;
        return count() - 1;
    }

    /// A float64 input for a conv or pool of `dims` spatial axes ([N, C, spatial...] or
    /// [C, spatial...], extents but N at least 1): step a where it fits, else a reshape of it,
    /// else a new leaf of at most half max_leaf elements (each leaf element costs the differences
    /// four evaluations of the program); -1 if the reshape was rejected.
    int conv_input(int a, std::size_t dims) {
        const Shape xs = at(a).shape;
        const std::size_t r = xs.size();
        const i64 n = numel(xs);
        if (at(a).dtype == DType::Float64 && (r == dims + 1 || r == dims + 2)) {
            bool ok = true;
            for (std::size_t k = r - dims - 1; k < r; ++k) ok = ok && xs[k] >= 1;
            if (ok && rng.chance(0.8)) return a;
        }
        if (at(a).dtype == DType::Float64 && n >= 1 && rng.chance(0.6)) {
            Step s;
            s.kind = Kind::Reshape, s.a = a, s.dtype = DType::Float64;
            s.shape = s.target = spread_factors(rng, n, dims + (rng.chance(0.8) ? 2 : 1));
            return accept(s);
        }
        for (;;) {
            Shape shape;
            if (rng.chance(0.8)) shape.push_back(rng.range(1, 2));
            shape.push_back(rng.range(1, 3));
            for (std::size_t i = 0; i < dims; ++i) shape.push_back(rng.range(1, dims == 1 ? 8 : dims == 2 ? 5 : 2));
            if (numel(shape) <= opt.max_leaf / 2) return add_leaf(shape);
        }
    }

    int pick_input() {
        // Recent steps most often; float64 ones only.
        for (int tries = 0; tries < 20; ++tries) {
            const int i = rng.chance(0.45) ? count() - 1 : static_cast<int>(rng.below(count()));
            if (at(i).dtype == DType::Float64) return i;
        }
        return 0;
    }
    Shape broadcastable(const Shape& s) {
        for (int tries = 0; tries < 10; ++tries) {
            const std::size_t drop = static_cast<std::size_t>(rng.below(static_cast<i64>(s.size()) + 1));
            Shape out(s.begin() + static_cast<std::ptrdiff_t>(rng.chance(0.6) ? 0 : drop), s.end());
            for (auto& e : out)
                if (rng.chance(0.3)) e = 1;
            if (rng.chance(0.15)) out.insert(0, rng.range(1, 3));
            auto b = broadcast(s, out);
            if (b && numel(*b) <= opt.cap && numel(out) <= opt.max_leaf) return out;
        }
        return s.size() > 0 && numel(s) <= opt.max_leaf ? s : Shape{};
    }
    /// An earlier step of dtype t whose shape broadcasts with s, or a new leaf.
    int partner(const Shape& s, DType t = DType::Float64) {
        if (rng.chance(0.6)) {
            std::vector<int> ok;
            for (int i = 0; i < count(); ++i) {
                if (at(i).dtype != t) continue;
                auto b = broadcast(s, at(i).shape);
                if (b && numel(*b) <= opt.cap) ok.push_back(i);
            }
            if (!ok.empty()) return rng.pick(ok);
        }
        return add_leaf(broadcastable(s), t);
    }
    Scalar random_scalar() {
        static const std::vector<double> pool = {0.5, -1.5, 2.0, 0.1, 3.0, -0.25, 1.0, 0.0, 1.75, -2.0};
        return Scalar::of<double>(rng.pick(pool));
    }

    // Domain transforms (always valid): hypot(x, c) >= c; tanh(x) * r in (-r, r).
    int positive(int a, double c) {
        Step s;
        s.kind = Kind::Binary, s.bop = BinaryOp::Hypot, s.a = a, s.scalar_side = 2, s.value = Scalar::of<double>(c);
        s.dtype = DType::Float64, s.shape = at(a).shape;
        return accept(s);
    }
    int bounded(int a, double r) {
        Step t;
        t.kind = Kind::Unary, t.uop = UnaryOp::Tanh, t.a = a, t.dtype = DType::Float64, t.shape = at(a).shape;
        const int i = accept(t);
        if (i < 0) return -1;
        Step m;
        m.kind = Kind::Binary, m.bop = BinaryOp::Mul, m.a = i, m.scalar_side = 2, m.value = Scalar::of<double>(r);
        m.dtype = DType::Float64, m.shape = t.shape;
        return accept(m);
    }

    void unary(int a) {
        static const std::vector<UnaryOp> smooth = {
            UnaryOp::Neg,  UnaryOp::Exp,   UnaryOp::Sin,  UnaryOp::Cos,   UnaryOp::Tanh,  UnaryOp::Sigmoid,
            UnaryOp::Exp2, UnaryOp::Gelu,  UnaryOp::Silu, UnaryOp::Expm1, UnaryOp::Erf,   UnaryOp::Erfc,
            UnaryOp::Atan, UnaryOp::Sinh,  UnaryOp::Cosh, UnaryOp::Asinh, UnaryOp::Log,   UnaryOp::Log2,
            UnaryOp::Sqrt, UnaryOp::Rsqrt, UnaryOp::Reciprocal, UnaryOp::Log1p, UnaryOp::Asin, UnaryOp::Acos,
            UnaryOp::Atanh, UnaryOp::Acosh, UnaryOp::Tan, UnaryOp::Abs, UnaryOp::Relu, UnaryOp::Abs, UnaryOp::Relu,
            UnaryOp::Sign, UnaryOp::Floor, UnaryOp::Ceil, UnaryOp::Round, UnaryOp::Trunc};
        Step s;
        s.kind = Kind::Unary, s.uop = rng.pick(smooth), s.a = a, s.dtype = DType::Float64, s.shape = at(a).shape;
        if (accept(s) >= 0) return;
        // Out of the domain: through a transform into it, then the op.
        int t = -1;
        switch (s.uop) {
            case UnaryOp::Log: case UnaryOp::Log2: case UnaryOp::Sqrt: case UnaryOp::Rsqrt: case UnaryOp::Reciprocal:
            case UnaryOp::Log1p: t = positive(a, 0.5); break;
            case UnaryOp::Acosh: t = positive(a, 1.25); break;
            case UnaryOp::Asin: case UnaryOp::Acos: case UnaryOp::Atanh: t = bounded(a, 0.9); break;
            case UnaryOp::Tan: t = bounded(a, 1.3); break;
            default: return;
        }
        if (t < 0) return;
        s.a = t;
        accept(s);
    }

    void binary(int a) {
        static const std::vector<BinaryOp> pool = {
            BinaryOp::Add, BinaryOp::Add, BinaryOp::Sub, BinaryOp::Mul, BinaryOp::Mul, BinaryOp::Div, BinaryOp::Div,
            BinaryOp::Pow, BinaryOp::Pow, BinaryOp::Maximum, BinaryOp::Minimum, BinaryOp::Atan2, BinaryOp::Hypot,
            BinaryOp::Copysign, BinaryOp::Fmod, BinaryOp::Remainder, BinaryOp::FloorDivide};
        Step s;
        s.kind = Kind::Binary, s.bop = rng.pick(pool), s.a = a, s.dtype = DType::Float64;
        if (rng.chance(0.2)) {
            s.scalar_side = rng.chance(0.7) ? 2 : 1;
            s.value = random_scalar();
            pick_ctype(s);
            s.shape = at(a).shape;
            if (s.scalar_side == 1) s.b = a, s.a = -1;
        } else {
            s.b = partner(at(a).shape);
            s.shape = *broadcast(at(a).shape, at(s.b).shape);
            if (rng.chance(0.3)) std::swap(s.a, s.b);
        }
        if (accept(s) >= 0) return;
        // A divisor or a base out of the domain: through hypot(x, 0.5) (positive).
        int& fix = s.bop == BinaryOp::Div ? s.b : s.bop == BinaryOp::Pow ? s.a : s.b;
        if ((s.bop != BinaryOp::Div && s.bop != BinaryOp::Pow) || fix < 0) return;
        const int t = positive(fix, 0.5);
        if (t < 0) return;
        fix = t;
        accept(s);
    }
    void pick_ctype(Step& s) {
        s.ctype = static_cast<int>(rng.below(2));
        if (s.ctype == 1) s.value = Scalar::of<double>(static_cast<float>(s.value.f));
    }

    /// A bool step broadcastable with shape: a mask leaf, or a comparison of float steps.
    int condition(const Shape& shape) {
        if (rng.chance(0.4)) return add_leaf(broadcastable(shape), DType::Bool);
        static const std::vector<BinaryOp> cmp = {BinaryOp::Lt, BinaryOp::Le, BinaryOp::Gt, BinaryOp::Ge};
        Step s;
        s.kind = Kind::Binary, s.bop = rng.pick(cmp), s.a = pick_input(), s.dtype = DType::Bool;
        if (!broadcast(at(s.a).shape, shape)) s.a = partner(shape);
        if (rng.chance(0.3)) {
            s.scalar_side = 2, s.value = random_scalar(), s.shape = at(s.a).shape;
            pick_ctype(s);
        } else {
            s.b = partner(at(s.a).shape);
            s.shape = *broadcast(at(s.a).shape, at(s.b).shape);
        }
        if (!broadcast(s.shape, shape)) return -1;
        return accept(s);
    }

    void try_step() {
        static const std::vector<Kind> kinds = {
            Kind::Unary, Kind::Unary, Kind::Unary, Kind::Unary, Kind::Binary, Kind::Binary, Kind::Binary, Kind::Binary,
            Kind::Where, Kind::Where, Kind::Cast, Kind::Reduce, Kind::Reduce, Kind::Reduce, Kind::Reshape, Kind::Permute,
            Kind::Expand, Kind::Slice, Kind::Slice, Kind::Pad, Kind::Flip, Kind::Matmul, Kind::Matmul, Kind::Gather,
            Kind::ScatterAdd, Kind::Scan, Kind::Concat, Kind::Fused, Kind::ArgExt, Kind::Leaf, Kind::Pool, Kind::Conv};
        const Kind kind = rng.pick(kinds);
        const int a = pick_input();
        const Shape xs = at(a).shape;  // a copy: adding a leaf moves the steps
        const std::size_t r = xs.size();
        Step s;
        s.kind = kind;
        s.a = a;
        s.dtype = DType::Float64;
        switch (kind) {
            case Kind::Leaf: add_leaf(leaf_shape()); return;
            case Kind::Unary: unary(a); return;
            case Kind::Binary: binary(a); return;
            case Kind::Where: {
                const int c = condition(xs);
                if (c < 0) return;
                const Shape cs = *broadcast(xs, at(c).shape);
                const int y = partner(cs);
                s.a = c, s.b = a, s.c = y;
                if (rng.chance(0.5)) std::swap(s.b, s.c);
                s.shape = *broadcast(cs, at(y).shape);
                break;
            }
            case Kind::Cast: {  // an integer or bool step as float64: a constant to reverse mode
                std::vector<int> discrete;
                for (int i = 0; i < count(); ++i)
                    if (at(i).dtype != DType::Float64) discrete.push_back(i);
                s.a = !discrete.empty() && rng.chance(0.7) ? rng.pick(discrete) : add_leaf(leaf_shape(), DType::Bool);
                s.shape = at(s.a).shape;
                break;
            }
            case Kind::ArgExt: {  // argmax/argmin, then as float64 (piecewise constant)
                if (r == 0 || numel(xs) == 0) return;
                const std::size_t k = static_cast<std::size_t>(rng.below(static_cast<i64>(r)));
                s.axis = static_cast<int>(k);
                s.red = rng.chance(0.5) ? Red::Max : Red::Min;
                s.keepdim = rng.chance(0.4);
                for (std::size_t d = 0; d < r; ++d)
                    if (d != k) s.shape.push_back(xs[d]);
                    else if (s.keepdim) s.shape.push_back(1);
                s.dtype = DType::Int64;
                const int i = accept(s);
                if (i < 0) return;
                Step c;
                c.kind = Kind::Cast, c.a = i, c.dtype = DType::Float64, c.shape = s.shape;
                accept(c);
                return;
            }
            case Kind::Reduce: {
                static const std::vector<Red> reds = {Red::Sum, Red::Sum, Red::Mean, Red::Max, Red::Min, Red::Prod};
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
                for (std::size_t k = 0; k < r; ++k)
                    if (chosen[k]) reduced *= xs[k];
                if (reduced == 0 && (s.red == Red::Max || s.red == Red::Min)) return;
                if (s.red == Red::Prod && reduced > 8) s.red = Red::Sum;
                for (std::size_t k = 0; k < r; ++k)
                    if (!chosen[k]) s.shape.push_back(xs[k]);
                    else if (s.keepdim) s.shape.push_back(1);
                break;
            }
            case Kind::Reshape: {
                auto drawn = random_reshape(rng, xs);
                if (!drawn) return;
                std::tie(s.shape, s.target) = *drawn;
                break;
            }
            case Kind::Permute: {
                if (r < 2) return;
                std::tie(s.axes, s.shape) = random_permutation(rng, xs);
                break;
            }
            case Kind::Expand: {
                const std::size_t lead = static_cast<std::size_t>(rng.chance(0.4) ? rng.range(1, 2) : 0);
                if (r + lead > 4) return;
                for (std::size_t k = 0; k < lead; ++k) s.target.push_back(rng.range(1, 3));
                for (std::size_t k = 0; k < r; ++k) {
                    i64 e = xs[k];
                    if (e == 1 && rng.chance(0.7)) e = rng.range(2, 4);
                    s.target.push_back(e == xs[k] && rng.chance(0.2) ? -1 : e);
                }
                s.shape = s.target;
                for (std::size_t k = 0; k < r; ++k)
                    if (s.shape[lead + k] == -1) s.shape[lead + k] = xs[k];
                break;
            }
            case Kind::Slice: {
                if (r == 0) return;
                std::size_t k;
                s.axis = rng.axis(r, &k);
                static const std::vector<i64> steps = {1, 1, 2, 3, -1, -1, -2, -3};
                s.step = rng.pick(steps);
                const i64 n = xs[k];
                if (rng.chance(0.7)) s.start = rng.range(-n - 2, n + 2);
                if (rng.chance(0.7)) s.stop = rng.range(-n - 2, n + 2);
                s.shape = xs;
                s.shape[k] = fuzz::Generator::slice_indices(n, s.start, s.stop, s.step)[2];
                break;
            }
            case Kind::Pad: {
                for (std::size_t k = 0; k < r; ++k) {
                    s.before.push_back(rng.chance(0.5) ? rng.range(0, 2) : 0);
                    s.after.push_back(rng.chance(0.5) ? rng.range(0, 2) : 0);
                    s.shape.push_back(xs[k] + s.before.back() + s.after.back());
                }
                s.value = random_scalar();
                break;
            }
            case Kind::Flip: {
                if (r == 0) return;
                s.axes = random_flip_axes(rng, r);
                s.shape = xs;
                break;
            }
            case Kind::Matmul: {
                if (r == 0) return;
                const i64 k = xs[r - 1];
                const i64 m = r >= 2 ? xs[r - 2] : 1;
                Shape xb(xs.begin(), xs.end() - static_cast<std::ptrdiff_t>(std::min<std::size_t>(r, 2)));
                Shape bs;
                const bool vec = rng.chance(0.2);
                i64 n = 1;
                if (vec) {
                    bs = {k};
                } else {
                    Shape bb = xb;
                    if (!bb.empty() && rng.chance(0.3)) bb.erase(0);
                    for (auto& e : bb)
                        if (rng.chance(0.2)) e = 1;
                    if (rng.chance(0.15)) bb.insert(0, 2);
                    if (bb.size() > 2) return;
                    n = rng.range(1, 4);
                    bs = bb;
                    bs.push_back(k);
                    bs.push_back(n);
                }
                Shape yb(bs.begin(), bs.end() - static_cast<std::ptrdiff_t>(std::min<std::size_t>(bs.size(), 2)));
                auto batch = broadcast(xb, yb);
                if (!batch) return;
                Shape out = *batch;
                if (r >= 2) out.push_back(m);
                if (!vec) out.push_back(n);
                if (numel(out) > opt.cap || numel(bs) > opt.cap) return;
                std::vector<int> same;
                for (int i = 0; i < count(); ++i)
                    if (at(i).shape == bs && at(i).dtype == DType::Float64) same.push_back(i);
                if (!same.empty() && rng.chance(0.5)) s.b = rng.pick(same);
                else if (numel(bs) <= opt.max_leaf) s.b = add_leaf(bs);
                else return;
                s.shape = out;
                break;
            }
            case Kind::Gather: {
                if (r == 0) return;
                std::size_t k;
                s.axis = rng.axis(r, &k);
                if (xs[k] == 0) return;
                Shape is = xs;
                for (std::size_t d = 0; d < r; ++d)
                    if (d == k) is[d] = rng.range(0, 5);
                    else if (rng.chance(0.3)) is[d] = rng.range(0, xs[d]);
                if (numel(is) > opt.cap) return;
                s.b = add_index_leaf(is, xs[k]);
                s.shape = is;
                break;
            }
            case Kind::ScatterAdd: {
                if (r == 0) return;
                std::size_t k;
                s.axis = rng.axis(r, &k);
                if (xs[k] == 0) return;
                Shape is = xs;
                for (std::size_t d = 0; d < r; ++d)
                    if (d == k) is[d] = rng.range(0, 4);
                    else if (rng.chance(0.3)) is[d] = rng.range(0, xs[d]);
                Shape ss = is;
                for (auto& e : ss)
                    if (rng.chance(0.2)) e += 1;
                if (numel(ss) > opt.max_leaf) return;
                s.b = add_index_leaf(is, xs[k]);
                s.c = add_leaf(ss);
                s.shape = xs;
                break;
            }
            case Kind::Scan: {
                if (r == 0) return;
                std::size_t k;
                s.axis = rng.axis(r, &k);
                s.red = rng.chance(0.6) ? Red::Sum : Red::Prod;
                s.shape = xs;
                break;
            }
            case Kind::Concat: {
                if (r == 0) return;
                std::size_t k;
                s.axis = rng.axis(r, &k);
                const int parts = static_cast<int>(rng.range(1, 2));
                Shape out = xs;
                for (int j = 0; j < parts; ++j) {
                    std::vector<int> fit;
                    for (int i = 0; i < count(); ++i) {
                        const Shape& o = at(i).shape;
                        bool ok = o.size() == r && at(i).dtype == DType::Float64;
                        for (std::size_t d = 0; ok && d < r; ++d) ok = d == k || o[d] == xs[d];
                        if (ok) fit.push_back(i);
                    }
                    int part;
                    if (!fit.empty() && rng.chance(0.5)) part = rng.pick(fit);
                    else {
                        Shape ps = xs;
                        ps[k] = rng.range(0, 3);
                        if (numel(ps) > opt.max_leaf) return;
                        part = add_leaf(ps);
                    }
                    (j == 0 ? s.b : s.c) = part;
                    out[k] += at(part).shape[k];
                }
                s.shape = out;
                break;
            }
            case Kind::Conv: case Kind::Pool: {
                const std::size_t dims = conv_dims(rng);
                s.a = conv_input(a, dims);
                if (s.a < 0) return;
                const Shape in = at(s.a).shape;
                if (kind == Kind::Pool) {
                    draw_pool(rng, s, in, dims);
                    const auto out = conv_result(s, in);
                    if (!out) return;
                    s.shape = *out;
                    if (s.pool != 1) break;
                    // Indices, then as float64 (piecewise constant), as argmax's.
                    s.dtype = DType::Int64;
                    const int i = accept(s);
                    if (i < 0) return;
                    Step c;
                    c.kind = Kind::Cast, c.a = i, c.dtype = DType::Float64, c.shape = s.shape;
                    accept(c);
                    return;
                }
                const Shape ws = draw_conv(rng, s, in, dims);
                const auto out = conv_result(s, in, &ws);
                if (!out || numel(ws) > opt.max_leaf / 2) return;
                std::vector<int> same;
                for (int i = 0; i < count(); ++i)
                    if (at(i).shape == ws && at(i).dtype == DType::Float64) same.push_back(i);
                s.b = !same.empty() && rng.chance(0.3) ? rng.pick(same) : add_leaf(ws);
                if (rng.chance(0.5)) s.c = add_leaf({(*out)[in.size() - dims - 1]});
                s.shape = *out;
                break;
            }
            case Kind::Fused: {  // patterns 0-2 (3 mixes float and double)
                s.pattern = static_cast<int>(rng.below(3));
                s.uop = kFusedUnary[rng.below(3)];
                s.bop = s.pattern == 2 ? kFusedCmp[rng.below(2)] : kFusedOp[rng.below(3)];
                s.bop2 = kFusedOp2[rng.below(2)];
                s.b = partner(xs);
                s.shape = *broadcast(xs, at(s.b).shape);
                if (s.pattern == 1 || s.pattern == 2) {
                    s.c = partner(s.shape);
                    s.shape = *broadcast(s.shape, at(s.c).shape);
                }
                break;
            }
            default: return;
        }
        accept(s);
    }
};

inline Program generate(u64 seed, const Options& opt = {}) { return Generator(seed, opt).run(); }

// ================================================================================== check

/// The differentiable inputs: float64 leaves.
inline std::vector<int> inputs_of(const Program& p) {
    std::vector<int> in;
    for (std::size_t i = 0; i < p.steps.size(); ++i)
        if (p.steps[i].kind == Kind::Leaf && p.steps[i].dtype == DType::Float64) in.push_back(static_cast<int>(i));
    return in;
}

/// The cotangent of output step i: values in +-[0.5, 1.5], from the seed and the step's index.
inline std::vector<double> cotangent(const Program& p, std::size_t i) {
    Rng rng(p.seed * 1000003 + i);
    std::vector<double> c(static_cast<std::size_t>(numel(p.steps[i].shape)));
    for (auto& x : c) x = (rng.chance(0.5) ? 1 : -1) * (0.5 + rng.uniform());
    return c;
}

/// L = sum_i sum(output_i * c_i) at the reference values v, and a bound on its rounding error
/// (from the reference's own per-element bounds); nullopt if an output is undetermined or not
/// finite.
struct Objective {
    double value = 0, error = 0;
};
inline std::optional<Objective> objective(const Program& p, const std::vector<Arr>& v) {
    Objective o;
    for (std::size_t i = 0; i < p.steps.size(); ++i) {
        if (!p.steps[i].output) continue;
        const auto c = cotangent(p, i);
        for (std::size_t k = 0; k < c.size(); ++k) {
            const Val& e = v[i].x[k];
            if (e.dc || !std::isfinite(e.v)) return std::nullopt;
            o.value += e.v * c[k];
            o.error += std::fabs(c[k]) * (e.e + 1e-16 * std::fabs(e.v));
        }
    }
    return o;
}

/// Central differences of L in every element of every input, from the reference evaluator:
/// D(h) and D(h / 2) combined by Richardson's extrapolation, (4 D(h / 2) - D(h)) / 3, whose
/// truncation error is O(h^4) (D(h) alone was 17 off in 235290 near a pole of tan: seed 277641).
struct Differences {
    std::string skip;                           // why the whole program is not compared
    std::vector<std::vector<double>> fd;        // per input, per element
    std::vector<std::vector<double>> error;     // fd's own error: 4x its rounding bound + |D(h) - D(h / 2)|
    std::vector<std::vector<bool>> usable;      // false: a kink within h, or a non-finite value
};

inline constexpr double kStep = 1e-6;

inline Differences differences(const Program& p) {
    Differences d;
    const std::vector<Arr> base = evaluate(p);
    const auto f0 = objective(p, base);
    if (!f0) return d.skip = "an output is not finite or undetermined", d;
    for (std::size_t i = 0; i < p.steps.size(); ++i)
        if (is_float(p.steps[i].dtype))
            for (const Val& e : base[i].x)
                if (e.dc || !std::isfinite(e.v) || std::fabs(e.v) > 1e6) return d.skip = "a step is not finite or very large", d;
    const Gaps g = gaps_of(p, base, 0, p.steps.size());
    if (g.kink < 1e-9) return d.skip = "a kink within 1e-9 of the sampled values", d;
    if (g.edge < 1e-2) return d.skip = "a domain edge within 1e-2 of the sampled values", d;
    // A step behind stop_gradient is a constant to reverse mode: frozen at its value here.
    Program q = p;
    for (std::size_t i = 0; i < q.steps.size(); ++i) {
        Step& s = q.steps[i];
        if (!s.stop_grad || s.kind == Kind::Leaf) continue;
        Step leaf;
        leaf.kind = Kind::Leaf, leaf.dtype = s.dtype, leaf.shape = s.shape, leaf.output = s.output;
        for (const Val& e : base[i].x) leaf.data.push_back(is_float(s.dtype) ? e.v : static_cast<double>(e.i));
        s = leaf;
    }
    const std::vector<i64> sig = decisions(q, evaluate(q));
    for (int in : inputs_of(p)) {
        std::vector<double>& data = q.steps[static_cast<std::size_t>(in)].data;
        std::vector<double> fd(data.size()), error(data.size());
        std::vector<bool> ok(data.size(), true);
        for (std::size_t k = 0; k < data.size() && !p.steps[static_cast<std::size_t>(in)].stop_grad; ++k) {
            const double x = data[k], h = kStep * std::max(1.0, std::fabs(x));
            const double at[4] = {x + h, x - h, x + h / 2, x - h / 2};
            Objective f[4];
            for (int j = 0; j < 4 && ok[k]; ++j) {
                data[k] = at[j];
                const auto v = evaluate(q);
                const auto o = objective(q, v);
                if (!o || decisions(q, v) != sig) ok[k] = false;
                else f[j] = *o;
            }
            data[k] = x;
            if (!ok[k]) continue;
            // (The divisors are the differences of the rounded points.)
            const double d1 = (f[0].value - f[1].value) / (at[0] - at[1]), d2 = (f[2].value - f[3].value) / (at[2] - at[3]);
            const double r1 = (f[0].error + f[1].error) / (at[0] - at[1]), r2 = (f[2].error + f[3].error) / (at[2] - at[3]);
            fd[k] = d2 + (d2 - d1) / 3;
            error[k] = 4 * (4 * r2 + r1) / 3 + std::fabs(d2 - d1);
        }
        d.fd.push_back(std::move(fd));
        d.error.push_back(std::move(error));
        d.usable.push_back(std::move(ok));
    }
    return d;
}

/// Gradients of L with respect to every input, computed on device d by reverse mode.
struct Gradients {
    std::vector<std::vector<double>> g;  // per input
    Failure failure;                     // a library exception or a wrong dtype or shape
};

inline Gradients device_gradients(const Program& p, Device d, Path path) {
    Gradients res;
    const std::vector<int> ins = inputs_of(p);
    try {
        // Each step's node before stop_gradient (a leaf's: the input) and after (what later
        // steps read).
        std::vector<NodePtr> raw, nodes;
        std::vector<Any> typed_raw, typed;
        for (std::size_t i = 0; i < p.steps.size(); ++i) {
            const Step& s = p.steps[i];
            NodePtr n;
            if (path == Path::Graph) {
                n = build_step(s, nodes, d);
                raw.push_back(n);
                nodes.push_back(s.stop_grad ? graph::stop_gradient(n) : n);
            } else {
                typed_raw.push_back(build_typed(s, typed, d));
                n = node_of(typed_raw.back());
                typed.push_back(s.stop_grad ? std::visit([](const auto& t) -> Any { return lt::stop_gradient(t); }, typed_raw.back())
                                       : typed_raw.back());
            }
            if (n->dtype != s.dtype || !(n->shape == s.shape)) {
                res.failure = {true, static_cast<int>(i), -1, 0, 0, 0, "step s" + std::to_string(i) + ": the library made " +
                                                                           lt::dtype_name(n->dtype) + shape_str(n->shape)};
                return res;
            }
        }
        std::vector<int> outs;
        std::vector<NodePtr> cots, grads, extra;  // extra: what else to realize with the gradients
        for (std::size_t i = 0; i < p.steps.size(); ++i)
            if (p.steps[i].output) {
                outs.push_back(static_cast<int>(i));
                cots.push_back(lt::tensor<double>(cotangent(p, i), p.steps[i].shape, d).node_ptr());
            }
        if (path == Path::Graph) {  // detail::vjp_nodes
            std::vector<NodePtr> ys, in;
            for (int k : outs) ys.push_back(nodes[static_cast<std::size_t>(k)]);
            for (int k : ins) in.push_back(raw[static_cast<std::size_t>(k)]);
            grads = lt::detail::vjp_nodes(ys, cots, in, "vjp");
            if (p.together) extra = ys;
        } else {
            std::vector<lt::Tensor<double>> ys, cs, xs;
            for (int k : outs) ys.push_back(std::get<lt::Tensor<double>>(typed[static_cast<std::size_t>(k)]));
            for (const NodePtr& n : cots) cs.emplace_back(n);
            for (int k : ins) xs.push_back(std::get<lt::Tensor<double>>(typed_raw[static_cast<std::size_t>(k)]));
            if (p.seed % 2 == 0) {  // lt::vjp
                const std::vector<lt::TensorRef> yr(ys.begin(), ys.end()), cr(cs.begin(), cs.end());
                for (const auto& t : lt::vjp(yr, xs, cr)) grads.push_back(t.node_ptr());
                if (p.together)
                    for (const auto& y : ys) extra.push_back(y.node_ptr());
            } else {  // lt::value_and_grad of the loss sum_i sum(y_i * c_i), written out
                auto vg = lt::value_and_grad(
                    [&] {
                        lt::Tensor<double> loss = lt::sum(ys[0] * cs[0]);
                        for (std::size_t k = 1; k < ys.size(); ++k) loss = loss + lt::sum(ys[k] * cs[k]);
                        return loss;
                    },
                    xs);
                for (const auto& t : vg.grads) grads.push_back(t.node_ptr());
                if (p.together) extra.push_back(vg.value.node_ptr());
            }
        }
        // Realized with the outputs (one schedule for the forward and backward passes) or alone.
        std::vector<lazytensor::detail::Node*> all;
        for (const NodePtr& n : extra) all.push_back(n.get());
        for (const NodePtr& n : grads) all.push_back(n.get());
        lazytensor::detail::realize_nodes(all);
        for (std::size_t k = 0; k < grads.size(); ++k) {
            const Step& x = p.steps[static_cast<std::size_t>(ins[k])];
            if (grads[k]->dtype != DType::Float64 || !(grads[k]->shape == x.shape)) {
                res.failure = {true, ins[k], -1, 0, 0, 0, "the gradient of s" + std::to_string(ins[k]) + " is " +
                                                              lt::dtype_name(grads[k]->dtype) + shape_str(grads[k]->shape)};
                return res;
            }
            res.g.push_back(read_doubles(*grads[k]));
        }
    } catch (const std::exception& e) {
        res.failure = {true, -1, -1, 0, 0, 0, std::string("exception: ") + e.what()};
    }
    return res;
}

/// The tolerance for a gradient element: 1e-5 relative to |fd|, with a floor of 1e-6 times the
/// input's gradient scale (the largest |fd| over its elements) and 1e-8 absolute, plus the
/// error of the differences themselves.
inline constexpr double kRelTol = 1e-5;
inline double tolerance(double fd, double scale, double error) { return kRelTol * (std::fabs(fd) + 0.1 * scale + 1e-3) + error; }

struct Stats {
    i64 graphs = 0, skipped = 0, inputs = 0, compared = 0, kinked = 0;
    double worst = 0;  // the largest |g - fd| / tolerance seen
    i64 kinds[kKinds] = {};
};

struct Mismatch {
    bool failed = false, skipped = false;
    int input = -1;  // step index
    i64 element = -1;
    double got = 0, fd = 0, tol = 0;
    std::string what;
};

/// Compares device gradients with the differences (both precomputed: the tests also compare
/// doctored gradients, to see that the comparison catches them).
inline Mismatch compare_gradients(const Program& p, const Differences& d, const Gradients& g, Stats* stats = nullptr) {
    Mismatch m;
    if (g.failure.failed) {
        m.failed = true;
        m.input = g.failure.output;
        m.what = g.failure.what;
        return m;
    }
    if (!d.skip.empty()) {
        m.skipped = true;
        m.what = d.skip;
        if (stats) ++stats->skipped;
        return m;
    }
    const std::vector<int> ins = inputs_of(p);
    if (stats) {
        ++stats->graphs;
        stats->inputs += static_cast<i64>(ins.size());
        for (const Step& s : p.steps) ++stats->kinds[static_cast<int>(s.kind)];
    }
    for (std::size_t i = 0; i < ins.size(); ++i) {
        double scale = 0;
        for (std::size_t k = 0; k < d.fd[i].size(); ++k)
            if (d.usable[i][k]) scale = std::max(scale, std::fabs(d.fd[i][k]));
        for (std::size_t k = 0; k < d.fd[i].size(); ++k) {
            if (!d.usable[i][k]) {
                if (stats) ++stats->kinked;
                continue;
            }
            const double got = g.g[i][k], fd = d.fd[i][k], tol = tolerance(fd, scale, d.error[i][k]);
            if (stats) {
                ++stats->compared;
                if (std::isfinite(got)) stats->worst = std::max(stats->worst, std::fabs(got - fd) / tol);
            }
            if (!(std::fabs(got - fd) <= tol) && !m.failed) {
                m.failed = true;
                m.input = ins[i];
                m.element = static_cast<i64>(k);
                m.got = got, m.fd = fd, m.tol = tol;
                std::ostringstream o;
                o << std::setprecision(17) << "the gradient of s" << ins[i] << " (" << shape_str(p.steps[static_cast<std::size_t>(ins[i])].shape)
                  << ") element " << k << ": reverse mode " << got << ", central difference " << fd << " +- " << tol;
                m.what = o.str();
            }
        }
    }
    return m;
}

inline Mismatch check_grad(const Program& p, Device d, Path path, Stats* stats = nullptr) {
    const Differences diff = differences(p);
    if (!diff.skip.empty()) return compare_gradients(p, diff, Gradients{}, stats);
    Mismatch m = compare_gradients(p, diff, device_gradients(p, d, path), stats);
    if (m.failed) m.what = std::string(path_name(path)) + " path: " + m.what;
    return m;
}

/// Everything a report needs: the program as C++, the cotangents, the reference outputs, and
/// each input's gradients from the device and from the differences ("~" not compared: a kink).
inline std::string grad_report(const Program& p, Device d, Path path, const Mismatch& m) {
    std::ostringstream o;
    o << "seed " << p.seed << ", device " << d.str() << ": " << m.what << "\n";
    o << "// realize mode: " << (p.together ? "together" : "one by one") << "\n" << to_cpp(p);
    const auto ref = evaluate(p);
    o << std::setprecision(10);
    for (std::size_t i = 0; i < p.steps.size(); ++i)
        if (p.steps[i].output) {
            o << "// reference s" << i << " = " << ref_str(ref[i]) << "\n// cotangent of s" << i << " = {";
            const auto c = cotangent(p, i);
            for (std::size_t k = 0; k < c.size(); ++k) o << (k ? ", " : "") << c[k];
            o << "}\n";
        }
    const Differences diff = differences(p);
    const Gradients g = device_gradients(p, d, path);
    const std::vector<int> ins = inputs_of(p);
    for (std::size_t i = 0; i < ins.size() && diff.skip.empty() && !g.failure.failed; ++i) {
        o << "// d/ds" << ins[i] << ": reverse mode {";
        for (std::size_t k = 0; k < g.g[i].size(); ++k) o << (k ? ", " : "") << g.g[i][k];
        o << "}\n//   central differences {";
        for (std::size_t k = 0; k < diff.fd[i].size(); ++k) o << (k ? ", " : "") << diff.fd[i][k] << (diff.usable[i][k] ? "" : "~");
        o << "}\n";
    }
    return o.str();
}

/// Runs a seed on the devices through both paths; on a mismatch, the report of the (optionally
/// minimized) program.
inline std::optional<std::string> run_seed(u64 seed, const std::vector<Device>& devices, bool minimize, Stats* stats = nullptr,
                                           std::vector<Path> paths = {Path::Graph, Path::Typed}) {
    const Program p = generate(seed);
    for (Device d : devices)
        for (Path path : paths) {
            const Mismatch m = check_grad(p, d, path, stats);
            if (!m.failed) continue;
            std::string text = "GRADIENT MISMATCH " + grad_report(p, d, path, m);
            if (minimize) {
                auto fails = [&](const Program& q) { return check_grad(q, d, path).failed; };
                Program small = prune(p);
                // One output if one suffices, then fuzz.hpp's minimizer.
                for (std::size_t i = 0; i < small.steps.size(); ++i) {
                    if (!small.steps[i].output) continue;
                    Program q = small;
                    for (auto& s : q.steps) s.output = false;
                    q.steps[i].output = true;
                    q = prune(q);
                    if (fails(q)) {
                        small = q;
                        break;
                    }
                }
                small = fuzz::minimize(small, fails, -1, 60);
                text += "\nminimized:\n" + grad_report(small, d, path, check_grad(small, d, path));
            }
            return text;
        }
    return std::nullopt;
}

}  // namespace grad
}  // namespace fuzz
