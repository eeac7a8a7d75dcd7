// SPDX-License-Identifier: MIT
// Reverse-mode differentiation over the lazy graph: the gradients are new lazy nodes, built
// from the same graph builders as any expression, so they schedule, fuse and realize like the
// forward pass (and can be differentiated again). Each node kind's rule is written once,
// below; the walk visits the nodes between the outputs and the inputs in reverse topological
// order and sums the contributions of every use.
//
// Where a function is not differentiable, the rules take PyTorch's choices: relu'(0) = 0,
// abs'(0) = sign(0) = 0, a max or min whose value several elements share splits the gradient
// evenly among them, maximum/minimum of two equal values give each half, floor, ceil, round,
// trunc, sign and floor_divide have zero gradient, and pow's exponent gradient is 0 where the
// base is 0 and the exponent >= 0. Composites (sigmoid, silu, gelu, remainder, softplus,
// ...: ir/graph.hpp, frontend/composites.hpp) have no rules of their own: their gradients come
// from the ops they are built of (sign and floor_divide pass none: they end in stop_gradient).
#pragma once

#include <algorithm>
#include <cmath>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "../core/error.hpp"
#include "../ir/convolution.hpp"
#include "../ir/fft.hpp"
#include "../ir/graph.hpp"
#include "../ir/linalg.hpp"
#include "linalg_rules.hpp"
#include "../core/engine_mode.hpp"

namespace lazytensor::detail {

namespace autodiff {

namespace g = graph;

inline NodePtr mul(const g::Operand& a, const g::Operand& b) { return g::binary(BinaryOp::Mul, a, b); }
inline NodePtr div(const g::Operand& a, const g::Operand& b) { return g::binary(BinaryOp::Div, a, b); }
inline NodePtr add(const g::Operand& a, const g::Operand& b) { return g::binary(BinaryOp::Add, a, b); }
inline NodePtr sub(const g::Operand& a, const g::Operand& b) { return g::binary(BinaryOp::Sub, a, b); }
inline NodePtr un(UnaryOp op, const NodePtr& x) { return g::unary(op, x); }
inline Scalar num(double v) { return Scalar::of<double>(v); }
/// A gather's gradient sums over its positions per element (deterministic) up to this many
/// positions along the gathered axis, and scatters them (one pass; atomics on OpenCL) beyond.
constexpr std::int64_t kGatherGradientByReduction = 16;
inline NodePtr zeros_like(const NodePtr& x) { return g::constant(Scalar::of<std::int64_t>(0), x->dtype, x->shape, x->device); }
inline NodePtr keep_where(const NodePtr& cond, const NodePtr& v) { return g::where(cond, v, num(0.0)); }

/// The gradient of a unary op's input x from its output y's gradient gy (nullptr: zero).
inline NodePtr unary_rule(UnaryOp op, const NodePtr& x, const NodePtr& y, const NodePtr& gy) {
    constexpr double ln2 = 0.69314718055994530942, two_over_sqrt_pi = 1.12837916709551257390;
    switch (op) {
        case UnaryOp::Neg: return un(UnaryOp::Neg, gy);
        case UnaryOp::Abs: return mul(gy, g::sign(x));
        case UnaryOp::Relu: return keep_where(g::binary(BinaryOp::Gt, x, num(0.0)), gy);
        case UnaryOp::Exp: return mul(gy, y);
        case UnaryOp::Log: return div(gy, x);
        case UnaryOp::Sqrt: return div(gy, mul(y, num(2.0)));
        case UnaryOp::Sin: return mul(gy, un(UnaryOp::Cos, x));
        case UnaryOp::Cos: return mul(gy, un(UnaryOp::Neg, un(UnaryOp::Sin, x)));
        case UnaryOp::Tanh: return mul(gy, g::binary(BinaryOp::Sub, num(1.0), mul(y, y)));
        case UnaryOp::Exp2: return mul(gy, mul(y, num(ln2)));
        case UnaryOp::Log2: return div(gy, mul(x, num(ln2)));
        case UnaryOp::Reciprocal: return mul(un(UnaryOp::Neg, gy), mul(y, y));
        case UnaryOp::Rsqrt: return mul(mul(gy, num(-0.5)), mul(y, mul(y, y)));  // of y alone: x need not be kept
        case UnaryOp::Tan: return mul(gy, add(mul(y, y), num(1.0)));
        case UnaryOp::Log1p: return div(gy, add(x, num(1.0)));
        case UnaryOp::Expm1: return mul(gy, add(y, num(1.0)));
        case UnaryOp::Erf:
        case UnaryOp::Erfc: {
            const NodePtr d = mul(un(UnaryOp::Exp, un(UnaryOp::Neg, mul(x, x))), num(two_over_sqrt_pi));
            return mul(gy, op == UnaryOp::Erf ? d : un(UnaryOp::Neg, d));
        }
        case UnaryOp::Asin: return div(gy, un(UnaryOp::Sqrt, g::binary(BinaryOp::Sub, num(1.0), mul(x, x))));
        case UnaryOp::Acos: return div(un(UnaryOp::Neg, gy), un(UnaryOp::Sqrt, g::binary(BinaryOp::Sub, num(1.0), mul(x, x))));
        case UnaryOp::Atan: return div(gy, add(mul(x, x), num(1.0)));
        case UnaryOp::Sinh: return mul(gy, un(UnaryOp::Cosh, x));
        case UnaryOp::Cosh: return mul(gy, un(UnaryOp::Sinh, x));
        case UnaryOp::Asinh: return div(gy, un(UnaryOp::Sqrt, add(mul(x, x), num(1.0))));
        case UnaryOp::Acosh: return div(gy, un(UnaryOp::Sqrt, sub(mul(x, x), num(1.0))));
        case UnaryOp::Atanh: return div(gy, g::binary(BinaryOp::Sub, num(1.0), mul(x, x)));
        // Piecewise constant: zero almost everywhere (PyTorch's choice at the steps too).
        case UnaryOp::Floor:
        case UnaryOp::Ceil:
        case UnaryOp::Round:
        case UnaryOp::Trunc: return nullptr;
        // Integer and bool results: the walk never reaches them.
        case UnaryOp::BitwiseNot:
        case UnaryOp::LogicalNot:
        case UnaryOp::IsNan:
        case UnaryOp::IsInf: return nullptr;
    }
    return nullptr;
}

/// The gradients of a binary op's operands a and b (same shape and dtype as y) from gy.
inline std::pair<NodePtr, NodePtr> binary_rule(BinaryOp op, const NodePtr& a, const NodePtr& b, const NodePtr& y,
                                               const NodePtr& gy) {
    switch (op) {
        case BinaryOp::Add: return {gy, gy};
        case BinaryOp::Sub: return {gy, un(UnaryOp::Neg, gy)};
        case BinaryOp::Mul: return {mul(gy, b), mul(gy, a)};
        case BinaryOp::Div: return {div(gy, b), div(mul(un(UnaryOp::Neg, gy), a), mul(b, b))};
        case BinaryOp::Pow: {
            const NodePtr base = g::where(g::binary(BinaryOp::Eq, b, num(0.0)), num(0.0),
                                          mul(gy, mul(b, g::binary(BinaryOp::Pow, a, sub(b, num(1.0))))));
            const NodePtr flat = g::binary(BinaryOp::LogicalAnd, g::binary(BinaryOp::Eq, a, num(0.0)),
                                           g::binary(BinaryOp::Ge, b, num(0.0)));
            return {base, mul(gy, g::where(flat, num(0.0), mul(y, un(UnaryOp::Log, a))))};
        }
        case BinaryOp::Maximum:
        case BinaryOp::Minimum: {
            // The larger (smaller) operand takes gy; equal operands share it (PyTorch).
            const BinaryOp loses = op == BinaryOp::Maximum ? BinaryOp::Lt : BinaryOp::Gt;
            const NodePtr shared = g::where(g::binary(BinaryOp::Eq, a, b), mul(gy, num(0.5)), gy);
            return {g::where(g::binary(loses, a, b), num(0.0), shared), g::where(g::binary(loses, b, a), num(0.0), shared)};
        }
        case BinaryOp::Fmod:  // a - trunc(a / b) b
            return {gy, mul(un(UnaryOp::Neg, gy), un(UnaryOp::Trunc, div(a, b)))};
        case BinaryOp::Atan2: {
            const NodePtr r2 = add(mul(a, a), mul(b, b));
            return {div(mul(gy, b), r2), div(mul(un(UnaryOp::Neg, gy), a), r2)};
        }
        case BinaryOp::Hypot: return {mul(gy, div(a, y)), mul(gy, div(b, y))};
        case BinaryOp::Copysign:
            return {mul(gy, g::where(g::binary(BinaryOp::Eq, a, num(0.0)), num(0.0), div(y, a))), nullptr};
        default: return {nullptr, nullptr};  // integer and bool results: never reached
    }
}

/// The gradient of x (a reduction's input; y keeps the reduced axes as extent 1) from gy.
inline NodePtr reduce_rule(ReduceOp op, const NodePtr& x, const NodePtr& y, const Axes& axes, const NodePtr& gy) {
    const NodePtr spread = g::expand(gy, x->shape);
    switch (op) {
        case ReduceOp::Sum: return spread;
        case ReduceOp::Max:
        case ReduceOp::Min: {  // split evenly among the elements that equal the result
            const NodePtr hit = g::binary(BinaryOp::Eq, x, g::expand(y, x->shape));
            const NodePtr count = g::reduce(ReduceOp::Sum, g::cast(hit, x->dtype), axes, true, "grad");
            return keep_where(hit, g::expand(div(gy, count), x->shape));
        }
        case ReduceOp::Prod: {
            // The product of the other elements: y / x, or, at a zero of x, the product of the
            // nonzero others when it is the only zero (0 when there are more).
            const NodePtr zero = g::binary(BinaryOp::Eq, x, num(0.0));
            const NodePtr nonzero_product = g::reduce(ReduceOp::Prod, g::where(zero, num(1.0), x), axes, true, "grad");
            const NodePtr zeros = g::reduce(ReduceOp::Sum, g::cast(zero, x->dtype), axes, true, "grad");
            const NodePtr at_zero = keep_where(g::binary(BinaryOp::Eq, zeros, num(1.0)), nonzero_product);
            const NodePtr others = g::where(zero, g::expand(at_zero, x->shape), div(g::expand(y, x->shape), x));
            return mul(spread, others);
        }
    }
    return nullptr;
}

/// The sum of v[j] over j >= i along axis k: the gradient of a cumsum.
inline NodePtr reverse_cumsum(const NodePtr& v, int k) {
    return g::flip(g::scan(ReduceOp::Sum, g::flip(v, Axes{k}), k, "grad"), Axes{k});
}

/// The gradient of a scan (cumsum or cumprod) y of x along axis k.
inline NodePtr scan_rule(ReduceOp op, const NodePtr& x, const NodePtr& y, int k, const NodePtr& gy) {
    if (op == ReduceOp::Sum) return reverse_cumsum(gy, k);
    // dy[j]/dx[i] for j >= i is the product of x[0..j] without x[i]: y[j] / x[i] before the first
    // zero of x; at the first zero, the cumprod of x with that zero made 1; after it, 0.
    const NodePtr zero = g::binary(BinaryOp::Eq, x, num(0.0));
    const NodePtr zeros_so_far = g::scan(ReduceOp::Sum, g::cast(zero, x->dtype), k, "grad");
    const NodePtr none_yet = g::binary(BinaryOp::Eq, zeros_so_far, num(0.0));
    const NodePtr first_zero = g::binary(BinaryOp::BitAnd, zero, g::binary(BinaryOp::Eq, zeros_so_far, num(1.0)));
    const NodePtr before = div(reverse_cumsum(mul(gy, y), k), g::where(none_yet, x, num(1.0)));
    const NodePtr others = g::scan(ReduceOp::Prod, g::where(first_zero, num(1.0), x), k, "grad");
    const NodePtr at_zero = reverse_cumsum(mul(gy, others), k);
    return g::where(none_yet, before, g::where(first_zero, at_zero, num(0.0)));
}

/// The gradient of a pad's source x (the window of gy that x fills).
inline NodePtr pad_rule(const NodePtr& x, const NodePtr& y, const NodePtr& gy) {
    SmallVector<std::int64_t, 12> starts_steps;
    for (std::size_t k = 0; k < x->shape.size(); ++k) {
        starts_steps.push_back(y->params[k]);
        starts_steps.push_back(1);
    }
    return g::window(gy, starts_steps, x->shape);
}

/// The gradient of a broadcast's source x (same rank as y): gy summed over the expanded axes.
inline NodePtr expand_rule(const NodePtr& x, const NodePtr& y, const NodePtr& gy) {
    Axes spread;
    for (std::size_t k = 0; k < x->shape.size(); ++k)
        if (x->shape[k] != y->shape[k]) spread.push_back(static_cast<int>(k));
    return spread.empty() ? gy : g::reduce(ReduceOp::Sum, gy, spread, true, "grad");
}

/// The cotangent of an fft node's operand (as PyTorch's): a transform is linear, and its adjoint
/// as a map of real numbers is the complex adjoint, the unnormalized transform the other way
/// with the same scale. R2C's adds the real embedding's (the real part) and the half spectrum's
/// (zeros for the bins left out); C2R's counts twice the bins it mirrors.
inline NodePtr fft_adjoint(const Node& n, const NodePtr& gy) {
    const ir::Fft f = g::fft_call(n);
    const int last = f.axes.back();
    const std::int64_t len = f.shape[static_cast<std::size_t>(last)], bins = len / 2 + 1;
    switch (f.kind) {
        case FftKind::C2C: return g::fft(gy, FftKind::C2C, !f.inverse, f.axes, 0, f.scale);
        case FftKind::R2C: {
            Shape before(gy->shape.size(), 0), after(gy->shape.size(), 0);
            after[static_cast<std::size_t>(last)] = len - bins;
            const NodePtr full = g::pad(gy, before, after, num(0.0));
            const NodePtr spectrum = g::fft(full, FftKind::C2C, true, f.axes, 0, f.scale);
            return g::squeeze_axes(g::slice(spectrum, static_cast<int>(f.shape.size()), 0, 1, 1), {static_cast<int>(f.shape.size())});
        }
        case FftKind::C2R: {
            const NodePtr spectrum = g::fft(gy, FftKind::R2C, false, f.axes, 0, f.scale);
            const std::int64_t doubled = len - bins;  // bins 1..doubled stand for two
            if (doubled == 0) return spectrum;
            Shape weight_shape(spectrum->shape.size(), 1);
            weight_shape[static_cast<std::size_t>(last)] = doubled;
            Shape before(weight_shape.size(), 0), after(weight_shape.size(), 0);
            before[static_cast<std::size_t>(last)] = 1;
            after[static_cast<std::size_t>(last)] = bins - 1 - doubled;
            const NodePtr weight = g::pad(g::constant(num(2.0), spectrum->dtype, weight_shape, spectrum->device), before, after, num(1.0));
            return mul(spectrum, weight);
        }
    }
    return nullptr;
}

/// Calls emit(source index, gradient of that source) for each source of n that has one, given
/// gy, the gradient of n. `wanted(i)`: whether source i needs its gradient.
template <class Emit, class Wanted>
void node_rule(const NodePtr& n, const NodePtr& gy, Wanted wanted, Emit emit) {
    const NodePtr& x = n->src[0];
    switch (n->kind) {
        case NodeKind::Unary: emit(0, unary_rule(n->unary_op, x, n, gy)); break;
        case NodeKind::Binary: {
            auto [ga, gb] = binary_rule(n->binary_op, x, n->src[1], n, gy);
            if (wanted(0)) emit(0, ga);
            if (wanted(1)) emit(1, gb);
            break;
        }
        case NodeKind::Where:
            if (wanted(1)) emit(1, keep_where(n->src[0], gy));
            if (wanted(2)) emit(2, g::where(n->src[0], num(0.0), gy));
            break;
        case NodeKind::Cast: emit(0, g::cast(gy, x->dtype)); break;
        case NodeKind::Reduce: emit(0, reduce_rule(n->reduce_op, x, n, n->axes, gy)); break;
        case NodeKind::Scan: emit(0, scan_rule(n->reduce_op, x, n, n->axes[0], gy)); break;
        case NodeKind::Reshape: emit(0, g::reshape(gy, x->shape, "grad")); break;
        case NodeKind::Permute: {
            Axes inverse(n->axes.size(), 0);
            for (std::size_t i = 0; i < n->axes.size(); ++i) inverse[static_cast<std::size_t>(n->axes[i])] = static_cast<int>(i);
            emit(0, g::permute(gy, inverse, "grad"));
            break;
        }
        case NodeKind::Expand: emit(0, expand_rule(x, n, gy)); break;
        case NodeKind::Slice: emit(0, g::scatter_window(x->shape, n->params, gy)); break;
        case NodeKind::Unfold:  // fold: the windows' elements summed back where they were read
            emit(0, g::fold(gy, x->shape, n->params));
            break;
        case NodeKind::Pad: emit(0, pad_rule(x, n, gy)); break;
        case NodeKind::Gather: {
            const NodePtr& positions = n->src[1];
            const int axis = n->axes[0];
            const auto k = static_cast<std::size_t>(axis);
            // Few positions along the axis (a label's, top-k's): scatter_add, a reduction over them
            // per element, deterministic. Many (an index tensor's): one scatter-add pass over them.
            if (positions->shape[k] <= kGatherGradientByReduction || numel(x->shape) == 0) {
                emit(0, g::scatter_add(zeros_like(x), axis, positions, gy));
                break;
            }
            const Strides strides = contiguous_strides(x->shape);
            Strides coefs = strides;
            coefs[k] = 0;
            const std::int64_t m = numel(positions->shape);
            const NodePtr at = g::binary(BinaryOp::Add, g::index(positions->shape, coefs, x->device),
                                         g::binary(BinaryOp::Mul, positions, Scalar::of<std::int64_t>(strides[k])));
            emit(0, g::scatter(zeros_like(x), g::reshape(at, Shape{m}), g::reshape(gy, Shape{m}), true));
            break;
        }
        case NodeKind::Matmul: {  // [..., m, k] x [..., k, n], batch axes already broadcast
            if (wanted(0)) emit(0, g::matmul(gy, g::transpose(n->src[1], -2, -1)));
            if (wanted(1)) emit(1, g::matmul(g::transpose(x, -2, -1), gy));
            break;
        }
        case NodeKind::Assign:
            fail<ValueError>("grad: cannot differentiate through an in-place write (Tensor::assign) of a ", n->dtype, n->shape,
                             " tensor; differentiate the expression before assigning it");
        case NodeKind::Buffer:
        case NodeKind::Const:
        case NodeKind::Index: break;  // leaves
        case NodeKind::Scatter: {  // out = base with values written (added) at flat positions
            const NodePtr& positions = n->src[1];
            if (wanted(0)) emit(0, n->params[0] ? gy : g::scatter(gy, positions, zeros_like(n->src[2]), false));
            if (wanted(2) && numel(gy->shape) == 0) emit(2, zeros_like(n->src[2]));  // every position skipped
            else if (wanted(2)) {  // each value's cotangent is the output's at its position (0 where skipped)
                const NodePtr flat = g::reshape(gy, Shape{numel(gy->shape)});
                const NodePtr inside = g::binary(BinaryOp::BitAnd, g::binary(BinaryOp::Ge, positions, Scalar::of<std::int64_t>(0)),
                                                 g::binary(BinaryOp::Lt, positions, Scalar::of<std::int64_t>(numel(gy->shape))));
                emit(2, g::where(inside, g::gather(flat, 0, positions), num(0.0)));
            }
            break;
        }
        case NodeKind::Fft:
            if (wanted(0)) emit(0, fft_adjoint(*n, gy));
            break;
        case NodeKind::Sort: break;   // positions: integers, no gradient (the values' flows through their gather)
        case NodeKind::Linalg: linalg_rules::linalg_rule(n, gy, wanted, emit); break;
        case NodeKind::Collective:
            // Whether a rank's cotangent is its own or the group's sum depends on what the loss
            // means (MLX and torch.distributed.nn differ): take gradients per rank, then average.
            fail<ValueError>("grad: cannot differentiate through a collective (lt::dist) of a ", n->dtype, n->shape,
                             " tensor; take each rank's gradients, then average them (lt::dist::all_mean or "
                             "lt::dist::average_gradients)");
    }
}

/// Whether reverse mode looks at n's sources: floating lazy nodes that do not stop gradients.
inline bool passes_gradient(const Node& n) { return !n.realized() && !n.stops_gradient && is_floating(n.dtype); }

inline std::string describe(const Node& n) { return concat(n.dtype, n.shape, " on ", n.device); }

}  // namespace autodiff

LAZYTENSOR_ENGINE_API std::vector<NodePtr> vjp_nodes(const std::vector<NodePtr>& outputs, const std::vector<NodePtr>& cotangents,
                                                     const std::vector<NodePtr>& inputs, const char* op) {
    using namespace autodiff;
    GraphReadLock lock;  // the graph stays as it is while it is walked
    if (cotangents.size() != outputs.size())
        fail<ValueError>(op, ": ", outputs.size(), " output(s) but ", cotangents.size(), " cotangent(s); give one per output");
    for (std::size_t i = 0; i < outputs.size(); ++i) {
        const Node &y = *outputs[i], &c = *cotangents[i];
        if (!is_floating(y.dtype))
            fail<DTypeError>(op, ": output ", i, " is a ", y.dtype, " tensor; only floating outputs have gradients");
        if (c.shape != y.shape)
            fail<ShapeError>(op, ": cotangent ", i, " has shape ", c.shape, " but its output has shape ", y.shape);
        if (c.device != y.device)
            fail<DeviceError>(op, ": cotangent ", i, " is on ", c.device, " but its output is on ", y.device);
        if (!is_floating(c.dtype))
            fail<DTypeError>(op, ": cotangent ", i, " is a ", c.dtype, " tensor; it must be floating");
    }
    std::unordered_set<const Node*> wanted_inputs;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        if (!is_floating(inputs[i]->dtype))
            fail<DTypeError>(op, ": input ", i, " is a ", inputs[i]->dtype, " tensor; gradients exist for floating tensors only");
        wanted_inputs.insert(inputs[i].get());
    }

    // The nodes below the outputs, sources before consumers (an explicit stack: lazy chains can
    // be millions of nodes deep), and which of them lie on a path to an input.
    std::vector<NodePtr> order;
    std::unordered_map<const Node*, bool> reaches;  // visited; true if an input is at or below
    std::uint64_t latest_cut = 0;                   // the latest realize of a computed tensor met (a cut)
    std::vector<std::pair<NodePtr, bool>> stack;
    for (const NodePtr& y : outputs) stack.emplace_back(y, false);
    while (!stack.empty()) {
        auto [n, expanded] = stack.back();
        stack.pop_back();
        if (expanded) {
            bool r = wanted_inputs.count(n.get()) > 0;
            if (passes_gradient(*n))
                for (std::size_t i = 0; i < n->nsrc; ++i) r = r || reaches[n->src[i].get()];
            reaches[n.get()] = r;
            order.push_back(n);
            continue;
        }
        if (reaches.count(n.get())) continue;
        reaches[n.get()] = false;  // visiting
        if (n->realized() && n->computed && is_floating(n->dtype) && !wanted_inputs.count(n.get()))
            latest_cut = std::max(latest_cut, n->realized_at);
        stack.emplace_back(n, true);
        if (passes_gradient(*n))
            for (std::size_t i = 0; i < n->nsrc; ++i)
                if (!reaches.count(n->src[i].get())) stack.emplace_back(n->src[i], false);
    }

    // Cotangents, consumers first; every use's contribution is added.
    std::unordered_map<const Node*, NodePtr> grads;
    auto accumulate = [&](const NodePtr& n, NodePtr gn) {
        if (!gn) return;
        if (gn->dtype != n->dtype) gn = g::cast(gn, n->dtype);  // a cotangent of another floating dtype
        NodePtr& slot = grads[n.get()];
        slot = slot ? add(slot, gn) : gn;
    };
    for (std::size_t i = 0; i < outputs.size(); ++i)
        if (reaches[outputs[i].get()]) accumulate(outputs[i], cotangents[i]);
    for (std::size_t j = order.size(); j-- > 0;) {
        const NodePtr& n = order[j];
        if (!reaches[n.get()] || !passes_gradient(*n)) continue;
        auto found = grads.find(n.get());
        if (found == grads.end()) continue;
        const NodePtr gy = found->second;
        auto wanted = [&](int i) { return reaches[n->src[static_cast<std::size_t>(i)].get()]; };
        node_rule(n, gy, wanted, [&](int i, NodePtr gx) {
            if (wanted(i)) accumulate(n->src[static_cast<std::size_t>(i)], std::move(gx));
        });
        if (!wanted_inputs.count(n.get())) grads.erase(found);  // only inputs' are kept
    }

    std::vector<NodePtr> out;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        const NodePtr& x = inputs[i];
        auto found = grads.find(x.get());
        if (found != grads.end()) {
            out.push_back(found->second);
            continue;
        }
        // A tensor realized after x was made may have been computed from x: realize cut that path.
        if (!reaches[x.get()] && latest_cut > x->created)
            fail<ValueError>(op, ": input ", i, " (", describe(*x),
                             ") does not reach the output through lazy operations, and the output's graph passes a "
                             "tensor realized after that input was made (realize cuts the graph: a realized tensor "
                             "is a constant). Take the gradient before realizing, and realize the output and the "
                             "gradients together");
        out.push_back(zeros_like(x));  // the output does not depend on it
    }
    return out;
}

}  // namespace lazytensor::detail
