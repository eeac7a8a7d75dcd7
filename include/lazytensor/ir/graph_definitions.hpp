// SPDX-License-Identifier: MIT
// The graph builders' definitions (ir/graph.hpp declares them, with their documentation):
// compiled in header-only units and in the LAZYTENSOR_IMPLEMENTATION unit, as the engine is.
#pragma once

#include "graph.hpp"

#if !LAZYTENSOR_ENGINE_DEFINITIONS
#error "lazytensor: ir/graph_definitions.hpp holds definitions of the runtime; a LAZYTENSOR_SEPARATE_RUNTIME unit must not include it"
#endif

namespace lazytensor::detail::graph {

LAZYTENSOR_ENGINE_API NodePtr make(NodeKind kind, DType dtype, Device device, Shape shape) {
    auto n = std::make_shared<Node>();
    n->kind = kind;
    n->dtype = dtype;
    n->device = device;
    n->shape = std::move(shape);
    return n;
}

LAZYTENSOR_ENGINE_API NodePtr with_sources(NodePtr n, std::initializer_list<NodePtr> sources) {
    GraphReadLock lock;  // a source may be realized by another thread meanwhile
    for (auto& s : sources) {
        n->src[n->nsrc++] = s;
        // A read of a buffer, directly or through views, is recorded with it (see Buffer::add_reader).
        const Node* base = s.get();
        while (!base->realized() && is_view(base->kind)) base = base->src[0].get();
        if (base->realized()) base->buffer->add_reader(n);
    }
    return n;
}

LAZYTENSOR_ENGINE_API NodePtr buffer(BufferPtr buf, Shape shape, Strides strides, std::int64_t offset) {
    auto n = make(NodeKind::Buffer, buf->dtype(), buf->device(), std::move(shape));
    make_realized(*n, std::move(buf), offset, std::move(strides));
    return n;
}

LAZYTENSOR_ENGINE_API NodePtr constant(Scalar value, DType dtype, Shape shape, Device device) {
    auto n = make(NodeKind::Const, dtype, device, std::move(shape));
    n->value = value.cast(dtype);
    return n;
}

LAZYTENSOR_ENGINE_API NodePtr reshape(const NodePtr& x, Shape shape, const char* op) {
    GraphReadLock lock;  // x may be realized by another thread meanwhile
    {
        Shape known_part = shape;
        for (auto& e : known_part)
            if (e == -1) e = 1;
        check_extents(known_part, op);
    }
    std::int64_t known = 1;
    int infer = -1;
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == -1) {
            if (infer >= 0) fail<ShapeError>(op, ": only one extent may be -1 in ", shape);
            infer = static_cast<int>(i);
        } else if (shape[i] < 0) {
            fail<ShapeError>(op, ": invalid extent ", shape[i], " in ", shape);
        } else {
            known *= shape[i];
        }
    }
    const std::int64_t total = numel(x->shape);
    if (infer >= 0) {
        if (known == 0 || total % known != 0)
            fail<ShapeError>(op, ": cannot reshape tensor of shape ", x->shape, " (", total, " elements) into ", shape,
                             ": the -1 extent cannot be inferred");
        shape[static_cast<std::size_t>(infer)] = total / known;
    }
    if (numel(shape) != total)
        fail<ShapeError>(op, ": cannot reshape tensor of shape ", x->shape, " (", total, " elements) into shape ",
                         shape, " (", numel(shape), " elements)");
    if (shape == x->shape) return x;
    // A reshape of a reshape reads the same elements in the same order: keep one (but a
    // stop_gradient's, which says something about its source).
    const NodePtr& base = x->kind == NodeKind::Reshape && !x->stops_gradient ? x->src[0] : x;
    if (shape == base->shape) return base;
    return with_sources(make(NodeKind::Reshape, x->dtype, x->device, std::move(shape)), {base});
}

LAZYTENSOR_ENGINE_API NodePtr stop_gradient(const NodePtr& x) {
    auto node = with_sources(make(NodeKind::Reshape, x->dtype, x->device, x->shape), {x});
    node->stops_gradient = true;
    return node;
}

LAZYTENSOR_ENGINE_API NodePtr permute(const NodePtr& x, const Axes& perm, const char* op) {
    GraphReadLock lock;  // x may be realized by another thread meanwhile
    const std::size_t n = x->shape.size();
    if (perm.size() != n)
        fail<AxisError>(op, ": permutation ", perm, " has ", perm.size(), " axes but the tensor has ", n,
                        " (shape ", x->shape, ")");
    Axes norm;
    std::vector<bool> seen(n, false);
    bool identity = true;
    for (std::size_t i = 0; i < n; ++i) {
        int a = normalize_axis(perm[i], n, op, x->shape);
        if (seen[static_cast<std::size_t>(a)])
            fail<AxisError>(op, ": axis ", perm[i], " appears twice in permutation ", perm, " (shape ", x->shape, ")");
        seen[static_cast<std::size_t>(a)] = true;
        norm.push_back(a);
        identity = identity && a == static_cast<int>(i);
    }
    if (identity) return x;
    Shape shape;
    for (int a : norm) shape.push_back(x->shape[static_cast<std::size_t>(a)]);
    auto node = with_sources(make(NodeKind::Permute, x->dtype, x->device, std::move(shape)), {x});
    node->axes = std::move(norm);
    return node;
}

LAZYTENSOR_ENGINE_API NodePtr transpose(const NodePtr& x, int a, int b) {
    const std::size_t n = x->shape.size();
    a = normalize_axis(a, n, "lt::transpose", x->shape);
    b = normalize_axis(b, n, "lt::transpose", x->shape);
    Axes perm = all_axes(n);
    std::swap(perm[static_cast<std::size_t>(a)], perm[static_cast<std::size_t>(b)]);
    return permute(x, perm, "lt::transpose");
}

LAZYTENSOR_ENGINE_API NodePtr expand(const NodePtr& x, Shape shape, const char* op) {
    GraphReadLock lock;  // x may be realized by another thread meanwhile
    if (shape.size() < x->shape.size())
        fail<ShapeError>(op, ": cannot expand shape ", x->shape, " to ", shape, ", which has fewer dimensions");
    const std::size_t lead = shape.size() - x->shape.size();
    Shape padded(lead, 1);
    for (auto e : x->shape) padded.push_back(e);
    for (std::size_t i = 0; i < shape.size(); ++i) {
        if (shape[i] == -1) {
            if (i < lead) fail<ShapeError>(op, ": -1 is not allowed for the new leading dimension ", i, " in ", shape);
            shape[i] = padded[i];
        }
        if (shape[i] < 0) fail<ShapeError>(op, ": invalid extent ", shape[i], " in ", shape);
        if (padded[i] != shape[i] && padded[i] != 1)
            fail<ShapeError>(op, ": cannot expand shape ", x->shape, " to ", shape, " (dimension ", i, " is ",
                             padded[i], ", not 1)");
    }
    check_extents(shape, op);
    if (shape == x->shape) return x;
    NodePtr base = reshape(x, padded, op);
    return with_sources(make(NodeKind::Expand, x->dtype, x->device, std::move(shape)), {base});
}

LAZYTENSOR_ENGINE_API NodePtr window(const NodePtr& x, SmallVector<std::int64_t, 12> starts_steps, Shape shape) {
    GraphReadLock lock;  // x may be realized by another thread meanwhile
    bool identity = shape == x->shape;
    for (std::size_t k = 0; k < shape.size(); ++k)
        identity = identity && starts_steps[2 * k] == 0 && starts_steps[2 * k + 1] == 1;
    if (identity) return x;
    NodePtr base = x;
    if (x->kind == NodeKind::Slice && !x->realized()) {
        for (std::size_t k = 0; k < shape.size(); ++k) {
            const std::int64_t start = x->params[2 * k], step = x->params[2 * k + 1];
            starts_steps[2 * k] = start + step * starts_steps[2 * k];
            starts_steps[2 * k + 1] *= step;
        }
        base = x->src[0];
    }
    auto node = with_sources(make(NodeKind::Slice, x->dtype, x->device, std::move(shape)), {base});
    node->params = std::move(starts_steps);
    return node;
}

LAZYTENSOR_ENGINE_API NodePtr slice(const NodePtr& x, int axis, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                     std::int64_t step) {
    const char* op = "slice";
    const auto k = static_cast<std::size_t>(normalize_axis(axis, x->shape.size(), op, x->shape));
    if (step == 0) fail<ValueError>(op, ": step must not be 0 (axis ", axis, ", shape ", x->shape, ")");
    const std::int64_t n = x->shape[k];
    const std::int64_t lower = step > 0 ? 0 : -1, upper = step > 0 ? n : n - 1;
    auto bound = [&](std::optional<std::int64_t> v, std::int64_t fallback) {
        if (!v) return fallback;
        std::int64_t b = *v < 0 ? *v + n : *v;
        return *v < 0 ? std::max(b, lower) : std::min(b, upper);
    };
    const std::int64_t from = bound(start, step > 0 ? lower : upper), to = bound(stop, step > 0 ? upper : lower);
    // (In unsigned arithmetic: a step near INT64_MIN or INT64_MAX must not overflow.)
    const std::int64_t span = step > 0 ? to - from : from - to;
    const std::uint64_t pace = step > 0 ? static_cast<std::uint64_t>(step) : 0 - static_cast<std::uint64_t>(step);
    const std::int64_t length = span > 0 ? static_cast<std::int64_t>(1 + static_cast<std::uint64_t>(span - 1) / pace) : 0;
    SmallVector<std::int64_t, 12> ss;
    for (std::size_t j = 0; j < x->shape.size(); ++j) {
        ss.push_back(j == k ? (length ? from : 0) : 0);
        ss.push_back(j == k && length > 1 ? step : 1);  // (one element: the step is never used)
    }
    Shape shape = x->shape;
    shape[k] = length;
    return window(x, std::move(ss), std::move(shape));
}

LAZYTENSOR_ENGINE_API NodePtr flip(const NodePtr& x, const Axes& axes) {
    const Axes norm = normalize_axes(axes, x->shape.size(), "flip", x->shape);
    SmallVector<std::int64_t, 12> ss;
    for (std::size_t j = 0; j < x->shape.size(); ++j) {
        const bool flipped = std::find(norm.begin(), norm.end(), static_cast<int>(j)) != norm.end();
        ss.push_back(flipped && x->shape[j] > 0 ? x->shape[j] - 1 : 0);
        ss.push_back(flipped ? -1 : 1);
    }
    return window(x, std::move(ss), x->shape);
}

LAZYTENSOR_ENGINE_API NodePtr unfold(const NodePtr& x, int axis, std::int64_t size, std::int64_t step,
                                     std::int64_t dilation, const char* op) {
    const auto k = normalize_axis(axis, x->shape.size(), op, x->shape);
    return unfold_axes(x, SmallVector<std::int64_t, 12>{k, size, step, dilation}, op);
}

LAZYTENSOR_ENGINE_API NodePtr unfold_axes(const NodePtr& x, const SmallVector<std::int64_t, 12>& windows, const char* op) {
    Shape shape = x->shape;
    std::vector<char> seen(x->shape.size(), 0);
    for (std::size_t g = 0; g + 3 < windows.size(); g += 4) {
        const std::int64_t axis = windows[g], size = windows[g + 1], step = windows[g + 2], dilation = windows[g + 3];
        const auto k = static_cast<std::size_t>(axis);
        if (axis < 0 || k >= x->shape.size() || seen[k])
            fail<AxisError>(op, ": axis ", axis, " is not a distinct axis of shape ", x->shape);
        seen[k] = 1;
        if (size < 1) fail<ValueError>(op, ": the window size must be at least 1, not ", size);
        if (step < 1) fail<ValueError>(op, ": the step must be at least 1, not ", step);
        if (dilation < 1) fail<ValueError>(op, ": the dilation must be at least 1, not ", dilation);
        const std::int64_t span = dilation * (size - 1) + 1;
        if (span > x->shape[k])
            fail<ShapeError>(op, ": a window of ", size,
                             dilation > 1 ? concat(" elements dilated by ", dilation, " spans ", span) : "",
                             " elements is longer than axis ", axis, " of shape ", x->shape, " (extent ", x->shape[k], ")");
        shape[k] = (x->shape[k] - span) / step + 1;
        shape.push_back(size);
    }
    check_extents(shape, op);
    auto node = with_sources(make(NodeKind::Unfold, x->dtype, x->device, std::move(shape)), {x});
    node->params = windows;
    return node;
}

LAZYTENSOR_ENGINE_API NodePtr pad(const NodePtr& x, const Shape& before, const Shape& after, Scalar value) {
    const char* op = "pad";
    if (before.size() != x->shape.size() || after.size() != x->shape.size())
        fail<ShapeError>(op, ": needs one (before, after) width per axis: the tensor has shape ", x->shape, " (",
                         x->shape.size(), " axes), got widths ", before, " and ", after);
    Shape shape = x->shape;
    bool any = false;
    for (std::size_t k = 0; k < shape.size(); ++k) {
        if (before[k] < 0 || after[k] < 0)
            fail<ValueError>(op, ": widths must be >= 0, got ", before[k], " before and ", after[k], " after axis ", k,
                             " (shape ", x->shape, "); use slice to crop");
        shape[k] += before[k] + after[k];
        any = any || before[k] || after[k];
    }
    check_extents(shape, op);
    if (!any) return x;
    auto node = with_sources(make(NodeKind::Pad, x->dtype, x->device, std::move(shape)), {x});
    node->params = SmallVector<std::int64_t, 12>(before.begin(), before.end());
    node->value = value.cast(x->dtype);
    return node;
}

LAZYTENSOR_ENGINE_API NodePtr index(const Shape& shape, const Strides& coefs, Device device) {
    check_extents(shape, "index");
    auto node = make(NodeKind::Index, DType::Int64, device, shape);
    node->params = SmallVector<std::int64_t, 12>(coefs.begin(), coefs.end());
    return node;
}

LAZYTENSOR_ENGINE_API NodePtr iota(const Shape& shape, int axis, Device device) {
    Strides coefs(shape.size(), 0);
    coefs[static_cast<std::size_t>(normalize_axis(axis, shape.size(), "iota", shape))] = 1;
    return index(shape, coefs, device);
}

LAZYTENSOR_ENGINE_API NodePtr cast(const NodePtr& x, DType to) {
    GraphReadLock lock;  // x may be realized by another thread meanwhile
    if (x->dtype == to) return x;
    if (x->kind == NodeKind::Const) return constant(x->value, to, x->shape, x->device);
    return with_sources(make(NodeKind::Cast, to, x->device, x->shape), {x});
}

LAZYTENSOR_ENGINE_API DType promote_operands(std::initializer_list<const Operand*> operands) {
    Promotion p;
    for (const Operand* o : operands) p = o->is_scalar() ? p.with_scalar(o->scalar.dtype) : p.with_tensor(o->node->dtype);
    return p.result();
}

LAZYTENSOR_ENGINE_API Device common_device(std::initializer_list<const Operand*> operands, const char* op) {
    std::optional<Device> device;
    for (const Operand* o : operands) {
        if (o->is_scalar()) continue;
        if (device && *device != o->node->device)
            fail<DeviceError>(op, ": operands are on different devices (", *device, " and ", o->node->device,
                              "); move one with .to(device)");
        device = o->node->device;
    }
    if (!device) fail<ValueError>(op, ": at least one operand must be a tensor");
    return *device;
}

LAZYTENSOR_ENGINE_API Shape common_shape(std::initializer_list<const Operand*> operands, const char* op) {
    std::optional<Shape> shape;
    for (const Operand* o : operands)
        if (!o->is_scalar()) shape = shape ? broadcast_shapes(*shape, o->node->shape, op) : o->node->shape;
    return *shape;
}

LAZYTENSOR_ENGINE_API void check_scalar_fits(const Scalar& s, DType to, const char* op) {
    if (!is_integral(to)) return;
    const bool fits = visit_dtype(to, [&](auto tag) {
        using T = typename decltype(tag)::type;
        using L = std::numeric_limits<T>;
        if (is_floating(s.dtype)) {  // truncated (long double holds every int64 exactly)
            const long double t = std::trunc(static_cast<long double>(s.f));
            return std::isfinite(s.f) && t >= static_cast<long double>(L::min()) && t <= static_cast<long double>(L::max());
        }
        if (s.negative()) return s.i >= static_cast<std::int64_t>(L::min());
        return static_cast<std::uint64_t>(s.i) <= static_cast<std::uint64_t>(L::max());  // a uint64 scalar's bits
    });
    if (!fits) {
        const auto [lo, hi] = visit_dtype(to, [](auto tag) {
            using T = typename decltype(tag)::type;
            // unary + prints int8's and uint8's limits as numbers, not characters
            return std::make_pair(std::to_string(+std::numeric_limits<T>::min()), std::to_string(+std::numeric_limits<T>::max()));
        });
        fail<ValueError>(op, ": the scalar ", s, " does not fit ", to, " (", lo, " to ", hi, "), the dtype the operation ",
                         "computes in; cast the tensor first, e.g. lt::cast<int64_t>(x) or lt::cast<float>(x)");
    }
}

LAZYTENSOR_ENGINE_API NodePtr conform(const Operand& o, DType dtype, const Shape& shape, Device device, const char* op) {
    if (o.is_scalar()) {
        check_scalar_fits(o.scalar, dtype, op);
        return constant(o.scalar, dtype, shape, device);
    }
    return expand(cast(o.node, dtype), shape, op);
}

LAZYTENSOR_ENGINE_API const char* rule_needs(TypeRule rule) {
    switch (rule) {
        case TypeRule::Bitwise: return "integer or bool operands; cast first, e.g. lt::cast<int32_t>(x)";
        case TypeRule::Shift: return "integer operands; cast first, e.g. lt::cast<int32_t>(x)";
        default: return "a numeric type; cast first, e.g. lt::cast<float>(x)";
    }
}

LAZYTENSOR_ENGINE_API void check_unary_rule(TypeRule rule, DType x, const char* op) {
    if (!rule_accepts(rule, x)) fail<ValueError>(op, ": not defined for ", x, " tensors; it needs ", rule_needs(rule));
}

LAZYTENSOR_ENGINE_API NodePtr unary(UnaryOp uop, const NodePtr& x) {
    const TypeRule rule = type_rule(uop);
    check_unary_rule(rule, x->dtype, op_name(uop));
    const DType t = compute_dtype(rule, x->dtype);
    auto node = with_sources(make(NodeKind::Unary, result_dtype(rule, t), x->device, x->shape), {cast(x, t)});
    node->unary_op = uop;
    return node;
}

LAZYTENSOR_ENGINE_API std::array<NodePtr, 2> binary_operands(TypeRule rule, const Operand& a, const Operand& b, const char* op) {
    const Device device = common_device({&a, &b}, op);
    const Shape shape = common_shape({&a, &b}, op);
    const DType promoted = promote_operands({&a, &b});
    if (rule == TypeRule::Arith && promoted == DType::Bool)
        fail<ValueError>(op, ": not defined for two bool operands; cast one to a numeric type first");
    if (!rule_accepts(rule, promoted))
        fail<ValueError>(op, ": not defined for ", a.dtype(), a.is_scalar() ? " scalar" : "", " and ", b.dtype(),
                         b.is_scalar() ? " scalar" : "", " operands (they meet in ", promoted, "); it needs ",
                         rule_needs(rule));
    const DType t = compute_dtype(rule, promoted);
    return {conform(a, t, shape, device, op), conform(b, t, shape, device, op)};
}

LAZYTENSOR_ENGINE_API NodePtr binary(BinaryOp bop, const Operand& a, const Operand& b) {
    const TypeRule rule = type_rule(bop);
    auto [x, y] = binary_operands(rule, a, b, op_name(bop));
    auto node = make(NodeKind::Binary, result_dtype(rule, x->dtype), x->device, x->shape);
    node->binary_op = bop;
    return with_sources(node, {std::move(x), std::move(y)});
}

LAZYTENSOR_ENGINE_API NodePtr where(const Operand& cond, const Operand& x, const Operand& y) {
    const char* op = "where";
    const Device device = common_device({&cond, &x, &y}, op);
    const Shape shape = common_shape({&cond, &x, &y}, op);
    const DType t = promote_operands({&x, &y});
    auto node = make(NodeKind::Where, t, device, shape);
    return with_sources(node, {conform(cond, DType::Bool, shape, device, op), conform(x, t, shape, device, op),
                               conform(y, t, shape, device, op)});
}

namespace composite {

LAZYTENSOR_ENGINE_API Scalar num(double v) { return Scalar::of<double>(v); }

LAZYTENSOR_ENGINE_API Scalar whole(std::int64_t v) { return Scalar::of<std::int64_t>(v); }

LAZYTENSOR_ENGINE_API NodePtr add(const Operand& a, const Operand& b) { return binary(BinaryOp::Add, a, b); }

LAZYTENSOR_ENGINE_API NodePtr sub(const Operand& a, const Operand& b) { return binary(BinaryOp::Sub, a, b); }

LAZYTENSOR_ENGINE_API NodePtr mul(const Operand& a, const Operand& b) { return binary(BinaryOp::Mul, a, b); }

LAZYTENSOR_ENGINE_API NodePtr div(const Operand& a, const Operand& b) { return binary(BinaryOp::Div, a, b); }

LAZYTENSOR_ENGINE_API NodePtr less(const Operand& a, const Operand& b) { return binary(BinaryOp::Lt, a, b); }

LAZYTENSOR_ENGINE_API NodePtr equal(const Operand& a, const Operand& b) { return binary(BinaryOp::Eq, a, b); }

LAZYTENSOR_ENGINE_API NodePtr differ(const Operand& a, const Operand& b) { return binary(BinaryOp::Ne, a, b); }

LAZYTENSOR_ENGINE_API NodePtr both(const NodePtr& a, const NodePtr& b) { return binary(BinaryOp::BitAnd, a, b); }

LAZYTENSOR_ENGINE_API NodePtr neg(const NodePtr& x) { return unary(UnaryOp::Neg, x); }

LAZYTENSOR_ENGINE_API NodePtr clamp(const NodePtr& x, double lo, double hi) {
    return binary(BinaryOp::Minimum, binary(BinaryOp::Maximum, x, num(lo)), num(hi));
}

LAZYTENSOR_ENGINE_API TinyExp tiny_exp(DType t) {
    if (t == DType::Float64) return {-700, 512, 0x1.44109edb20931p-739};
    return {-80, 64, 0x1.969d48p-93};
}

LAZYTENSOR_ENGINE_API double splitter(DType t) { return t == DType::Float64 ? 134217729.0 : 4097.0; }  // 2^27 + 1, 2^12 + 1
inline Halves split(const NodePtr& v) {
    const NodePtr p = mul(v, num(splitter(v->dtype)));
    const NodePtr hi = sub(p, sub(p, v));
    return {hi, sub(v, hi)};
}

LAZYTENSOR_ENGINE_API NodePtr product_error(const NodePtr& a, double c, const NodePtr& p) {
    const auto [ch, cl] = a->dtype == DType::Float64
                              ? split_value<double>(c, splitter(DType::Float64))
                              : split_value<float>(static_cast<float>(c), static_cast<float>(splitter(DType::Float32)));
    const Halves h = split(a);
    return add(add(add(sub(mul(h.hi, num(ch)), p), mul(h.hi, num(cl))), mul(h.lo, num(ch))), mul(h.lo, num(cl)));
}

LAZYTENSOR_ENGINE_API NodePtr square_error(const NodePtr& a, const NodePtr& p) {
    const Halves h = split(a);
    const NodePtr cross = mul(h.hi, h.lo);
    return add(add(add(sub(mul(h.hi, h.hi), p), cross), cross), mul(h.lo, h.lo));
}

LAZYTENSOR_ENGINE_API NodePtr floating_operand(const NodePtr& x, const char* op) {
    check_unary_rule(TypeRule::Floating, x->dtype, op);
    return cast(x, compute_dtype(TypeRule::Floating, x->dtype));
}

LAZYTENSOR_ENGINE_API SigmoidParts sigmoid_parts(const NodePtr& x) {
    const NodePtr up = binary(BinaryOp::Ge, x, whole(0));
    // -|x| as a where, not -abs(x): its derivative at 0 is -1, not abs's 0, so that the
    // gradient of sigmoid at 0 is 1/4.
    const NodePtr a = where(up, neg(x), x);
    NodePtr e0 = unary(UnaryOp::Exp, a), e = e0;
    if (x->dtype != DType::Float16) {
        const TinyExp k = tiny_exp(x->dtype);
        const NodePtr tiny = less(a, num(k.below));
        e0 = unary(UnaryOp::Exp, where(tiny, add(a, num(k.shift)), a));
        e = where(tiny, mul(e0, num(k.scale)), e0);
    }
    return {div(where(up, whole(1), e), add(e, whole(1))), e0};
}

}  // namespace composite

LAZYTENSOR_ENGINE_API NodePtr sign(const NodePtr& x) {
    using namespace composite;
    check_unary_rule(TypeRule::Numeric, x->dtype, "sign");
    const NodePtr rest = sub(x, x);
    const NodePtr below = is_unsigned_integral(x->dtype) ? rest : where(less(x, whole(0)), whole(-1), rest);
    return stop_gradient(where(binary(BinaryOp::Gt, x, whole(0)), whole(1), below));
}

LAZYTENSOR_ENGINE_API NodePtr rsqrt(const NodePtr& x) {
    return unary(UnaryOp::Rsqrt, x);
}

LAZYTENSOR_ENGINE_API NodePtr sigmoid(const NodePtr& x) {
    using namespace composite;
    const NodePtr v = floating_operand(x, "sigmoid");
    // bfloat16 has float's range (TinyExp's constants are no bfloat16): in float32, rounded once.
    if (v->dtype == DType::BFloat16) return cast(sigmoid_parts(cast(v, DType::Float32)).sigmoid, DType::BFloat16);
    return sigmoid_parts(v).sigmoid;
}

LAZYTENSOR_ENGINE_API NodePtr silu(const NodePtr& x) {
    using namespace composite;
    const NodePtr v = floating_operand(x, "silu");
    if (v->dtype == DType::BFloat16) return cast(silu(cast(v, DType::Float32)), DType::BFloat16);  // as sigmoid
    const SigmoidParts s = sigmoid_parts(v);
    NodePtr r = mul(v, s.sigmoid);
    if (v->dtype != DType::Float16) {
        const TinyExp k = tiny_exp(v->dtype);
        r = where(less(v, num(k.below)), mul(mul(v, s.e0), num(k.scale)), r);
    }
    return where(equal(v, num(-INFINITY)), num(-0.0), r);
}

LAZYTENSOR_ENGINE_API NodePtr gelu(const NodePtr& x) {
    using namespace composite;
    const NodePtr operand = floating_operand(x, "gelu");
    const DType result = operand->dtype;
    if (result != DType::Float64 && device_policy(x->device).gelu_through_float64()) {
        const NodePtr d = cast(operand, DType::Float64);
        const NodePtr g = mul(mul(d, num(0.5)), unary(UnaryOp::Erfc, mul(neg(d), num(0.70710678118654752440))));
        return cast(where(equal(d, num(-INFINITY)), num(-0.0), g), result);
    }
    const NodePtr v = cast(operand, result == DType::Float64 ? DType::Float64 : DType::Float32);
    const bool f64 = v->dtype == DType::Float64;
    const TinyExp k = tiny_exp(v->dtype);
    const double zero_below = f64 ? -50 : -20, series_below = f64 ? -37 : -10;
    // 1 / sqrt(2) rounded to the dtype, and the rest of it
    const double c = f64 ? 0.70710678118654752440 : static_cast<double>(0.70710678118654752440f);
    const double c_rest = f64 ? -4.833646656726457e-17 : 1.210161710447897e-08;
    const NodePtr z = mul(neg(v), num(c)), erfc_z = unary(UnaryOp::Erfc, z), half_x = mul(v, num(0.5));
    // [series_below, 0): erfc(z) less the rounding of z, on x clamped there (the other lanes use
    // another branch)
    const NodePtr xm = clamp(v, series_below, 0), zm = mul(neg(xm), num(c));
    const NodePtr dz = sub(product_error(neg(xm), c, zm), mul(xm, num(c_rest)));
    const NodePtr slope = mul(mul(dz, num(1.1283791670955126)), unary(UnaryOp::Exp, neg(mul(zm, zm))));
    const NodePtr steep = mul(half_x, sub(erfc_z, slope));
    // [zero_below, series_below): the series, on x clamped there
    const NodePtr xs = clamp(v, zero_below, series_below), hi = mul(xs, xs), lo = square_error(xs, hi);
    const NodePtr t = div(whole(1), hi);
    NodePtr s = mul(t, num(10395));
    for (double coefficient : {-945.0, 105.0, -15.0, 3.0, -1.0}) s = mul(t, add(s, num(coefficient)));
    s = add(s, whole(1));
    const NodePtr e = mul(unary(UnaryOp::Exp, add(mul(hi, num(-0.5)), num(k.shift))), sub(whole(1), mul(lo, num(0.5))));
    const NodePtr far = mul(neg(mul(mul(s, num(0.3989422804014327)), e)), num(k.scale));
    const NodePtr r = where(less(v, num(zero_below)), num(-0.0),
                            where(less(v, num(series_below)), far, where(less(v, whole(0)), steep, mul(half_x, erfc_z))));
    return cast(r, result);
}

LAZYTENSOR_ENGINE_API NodePtr remainder(const Operand& a, const Operand& b) {
    using namespace composite;
    const auto [x, y] = binary_operands(TypeRule::Arith, a, b, "remainder");
    const NodePtr r = binary(BinaryOp::Fmod, x, y);
    const NodePtr other_sign = differ(less(r, whole(0)), less(y, whole(0)));
    if (!is_floating(x->dtype)) return where(both(differ(r, whole(0)), other_sign), add(r, y), r);
    return where(equal(y, whole(0)), r,
                 where(equal(r, whole(0)), binary(BinaryOp::Copysign, whole(0), y), where(other_sign, add(r, y), r)));
}

LAZYTENSOR_ENGINE_API NodePtr floor_divide(const Operand& a, const Operand& b) {
    using namespace composite;
    const auto [x, y] = binary_operands(TypeRule::Arith, a, b, "floor_divide");
    if (!is_floating(x->dtype)) {
        // The remainder from the quotient, a - q b (wrapping; a itself where b is 0, hence the
        // b != 0): one integer division, not two.
        const NodePtr q = binary(BinaryOp::TruncDiv, x, y), inexact = differ(sub(x, mul(q, y)), whole(0));
        const NodePtr below = both(both(inexact, differ(y, whole(0))), differ(less(x, whole(0)), less(y, whole(0))));
        return where(below, sub(q, whole(1)), q);
    }
    const NodePtr m = binary(BinaryOp::Fmod, x, y), q = div(x, y), d0 = div(sub(x, m), y);
    const NodePtr d = where(both(differ(m, whole(0)), differ(less(y, whole(0)), less(m, whole(0)))), sub(d0, whole(1)), d0);
    const NodePtr f = unary(UnaryOp::Floor, d);
    const NodePtr nearest = where(binary(BinaryOp::Gt, sub(d, f), num(0.5)), add(f, whole(1)), f);
    return stop_gradient(
        where(equal(y, whole(0)), q, where(equal(d, whole(0)), binary(BinaryOp::Copysign, whole(0), q), nearest)));
}

LAZYTENSOR_ENGINE_API NodePtr gather(const NodePtr& x, int axis, const NodePtr& idx) {
    const char* op = "gather";
    const int k = normalize_axis(axis, x->shape.size(), op, x->shape);
    if (!is_integral(idx->dtype))
        fail<ValueError>(op, ": the index must be an integer tensor, got ", idx->dtype);
    if (idx->device != x->device)
        fail<DeviceError>(op, ": the tensor is on ", x->device, " and the index on ", idx->device);
    if (idx->shape.size() != x->shape.size())
        fail<ShapeError>(op, ": the index (shape ", idx->shape, ") must have as many dimensions as the tensor (shape ",
                         x->shape, ")");
    for (std::size_t d = 0; d < x->shape.size(); ++d)
        if (static_cast<int>(d) != k && idx->shape[d] > x->shape[d])
            fail<ShapeError>(op, ": index shape ", idx->shape, " exceeds tensor shape ", x->shape, " in dimension ", d,
                             " (only dimension ", k, ", the gathered axis, may differ)");
    if (x->shape[static_cast<std::size_t>(k)] == 0 && numel(idx->shape) > 0)
        fail<IndexError>(op, ": cannot gather from an empty axis ", k, " (shape ", x->shape, ")");
    auto node = with_sources(make(NodeKind::Gather, x->dtype, x->device, idx->shape), {x, cast(idx, DType::Int64)});
    node->axes = Axes{k};
    return node;
}

LAZYTENSOR_ENGINE_API NodePtr copy(const NodePtr& x) {
    return with_sources(make(NodeKind::Cast, x->dtype, x->device, x->shape), {x});
}

LAZYTENSOR_ENGINE_API bool may_overlap(const Shape& shape, const Strides& strides) {
    SmallVector<std::array<std::int64_t, 2>, 6> axes;  // (|stride|, extent) of the axes of extent > 1
    for (std::size_t k = 0; k < shape.size(); ++k) {
        if (shape[k] == 0) return false;
        if (shape[k] > 1) axes.push_back({strides[k] < 0 ? -strides[k] : strides[k], shape[k]});
    }
    std::sort(axes.begin(), axes.end());
    std::int64_t span = 0;  // the largest distance between two elements over the axes so far
    for (const auto& [stride, extent] : axes) {
        if (stride <= span) return true;
        span += stride * (extent - 1);
    }
    return false;
}

LAZYTENSOR_ENGINE_API NodePtr assign(const NodePtr& target, const Operand& value) {
    const char* op = "assign";
    if (!target->realized()) fail<Error>("lazytensor internal error: assign to an unrealized tensor");
    if (!target->buffer->writable())
        fail<ValueError>(op, ": the target (shape ", target->shape, ") is read-only memory (lt::from_blob of a const "
                         "pointer, or a read-only cl_mem); wrap a non-const pointer to write into it, or assign into "
                         "lt::clone(x)");
    // (An empty view has no element to write twice, whatever its strides: empty views get 0.)
    for (std::size_t k = 0; k < target->shape.size() && numel(target->shape) > 0; ++k)
        if (target->strides[k] == 0 && target->shape[k] > 1)
            fail<ValueError>(op, ": the target (shape ", target->shape, ") is a broadcast view: several of its elements "
                             "are one memory location (axis ", k, "); assign into the tensor it was expanded from");
    if (may_overlap(target->shape, target->strides))
        fail<ValueError>(op, ": the target's strides ", target->strides, " (shape ", target->shape, ") may make several "
                         "of its elements one memory location; assign into a view whose elements are distinct");
    if (!value.is_scalar() && value.node->device != target->device)
        fail<DeviceError>(op, ": the value is on ", value.node->device, " but the target is on ", target->device,
                          "; move it with .to(device)");
    if (!value.is_scalar() && value.node->shape != target->shape) {
        try {
            if (broadcast_shapes(value.node->shape, target->shape, op) != target->shape) throw ShapeError("");
        } catch (const ShapeError&) {
            fail<ShapeError>(op, ": a value of shape ", value.node->shape, " cannot be written into a target of shape ",
                             target->shape);
        }
    }
    NodePtr v = conform(value, target->dtype, target->shape, target->device, op);
    auto node = with_sources(make(NodeKind::Assign, target->dtype, target->device, target->shape), {target, v});
    node->params.push_back(target->offset);
    for (auto s : target->strides) node->params.push_back(s);
    return node;
}

LAZYTENSOR_ENGINE_API NodePtr squeeze_axes(const NodePtr& x, const Axes& axes) {
    Shape shape;
    for (std::size_t i = 0, k = 0; i < x->shape.size(); ++i) {
        if (k < axes.size() && axes[k] == static_cast<int>(i)) {
            ++k;
            continue;
        }
        shape.push_back(x->shape[i]);
    }
    return reshape(x, shape);
}

LAZYTENSOR_ENGINE_API DType reduce_dtype(ReduceOp rop, DType in) {
    // NumPy sums every signed integer in int64 and every unsigned one in uint64; uint8's sum
    // was int64 before the other unsigned types came, so all but uint64 sum in int64 here.
    return (rop == ReduceOp::Sum || rop == ReduceOp::Prod) && !is_floating(in) && in != DType::UInt64 ? DType::Int64 : in;
}

LAZYTENSOR_ENGINE_API Axes reduced_axes(const NodePtr& x, const std::optional<Axes>& user_axes, const char* op) {
    if (!user_axes || user_axes->empty()) return all_axes(x->shape.size());
    return normalize_axes(*user_axes, x->shape.size(), op, x->shape);
}

LAZYTENSOR_ENGINE_API NodePtr reduce(ReduceOp rop, const NodePtr& x, const std::optional<Axes>& user_axes, bool keepdim,
                      const char* op, bool logical) {
    const Axes axes = reduced_axes(x, user_axes, op);
    // Nothing to reduce (a 0-d tensor): the value itself.
    if (axes.empty()) return cast(x, reduce_dtype(rop, x->dtype));
    Shape out = x->shape;
    for (int a : axes) {
        if (x->shape[static_cast<std::size_t>(a)] == 0 && rop != ReduceOp::Sum && rop != ReduceOp::Prod && !logical)
            fail<ValueError>(op, ": cannot reduce over axis ", a, " of extent 0 (shape ", x->shape,
                             "): the reduction has no identity");
        out[static_cast<std::size_t>(a)] = 1;
    }
    const DType t = reduce_dtype(rop, x->dtype);
    auto node = with_sources(make(NodeKind::Reduce, t, x->device, std::move(out)), {cast(x, t)});
    node->reduce_op = rop;
    node->axes = axes;
    return keepdim ? node : squeeze_axes(node, axes);
}

LAZYTENSOR_ENGINE_API NodePtr any_all(bool all, const NodePtr& x, const std::optional<Axes>& axes, bool keepdim) {
    return reduce(all ? ReduceOp::Min : ReduceOp::Max, cast(x, DType::Bool), axes, keepdim, all ? "all" : "any", true);
}

LAZYTENSOR_ENGINE_API NodePtr mean(const NodePtr& x, const std::optional<Axes>& user_axes, bool keepdim, bool device_has_float64) {
    const char* op = "mean";
    const Axes axes = reduced_axes(x, user_axes, op);
    std::int64_t count = 1;
    for (int a : axes) count *= x->shape[static_cast<std::size_t>(a)];
    // half and bfloat16 sum in float32 (a count past 65504 is no half, past 256 no longer exact
    // in bfloat16); integers and bool in int64.
    const NodePtr total = reduce(ReduceOp::Sum, is_reduced_float(x->dtype) ? cast(x, DType::Float32) : x, axes, keepdim, op);
    return mean_of_sum(total, x->dtype, count, device_has_float64);
}

LAZYTENSOR_ENGINE_API NodePtr mean_of_sum(const NodePtr& total, DType input, std::int64_t count, bool device_has_float64) {
    if (is_reduced_float(input))  // rounded to half or bfloat16 once
        return cast(binary(BinaryOp::Div, total, Scalar::of(static_cast<double>(count))), input);
    if (is_floating(input)) return binary(BinaryOp::Div, total, Scalar::of(static_cast<double>(count)));
    if (device_has_float64) {
        NodePtr quotient = binary(BinaryOp::Div, cast(total, DType::Float64), Scalar::of(static_cast<double>(count)));
        return cast(quotient, DType::Float32);
    }
    if (count == 0) return binary(BinaryOp::Div, cast(total, DType::Float32), Scalar::of(0.0));  // 0 / 0: NaN
    const NodePtr exact = cast(total, DType::Int64);
    // The nearest quotient q and its remainder r, |r| <= count / 2: q is exact in float32 up to
    // 2^24, and r / count rounds once; their sum rounds once more, to within 1 ulp.
    const NodePtr floor_q = floor_divide(exact, Scalar::of(count));
    const NodePtr floor_r = remainder(exact, Scalar::of(count));  // 0 <= r < count
    const NodePtr up = binary(BinaryOp::Gt, floor_r, Scalar::of(count / 2));
    const NodePtr q = where(up, binary(BinaryOp::Add, floor_q, Scalar::of(std::int64_t(1))), floor_q);
    const NodePtr r = where(up, binary(BinaryOp::Sub, floor_r, Scalar::of(count)), floor_r);
    const NodePtr fraction = binary(BinaryOp::Div, cast(r, DType::Float32), Scalar::of(static_cast<double>(count)));
    return binary(BinaryOp::Add, cast(q, DType::Float32), fraction);
}

LAZYTENSOR_ENGINE_API NodePtr scatter(const NodePtr& base, const NodePtr& positions, const NodePtr& values, bool accumulate) {
    const char* op = accumulate ? "scatter (accumulating)" : "scatter";
    if (!is_integral(positions->dtype))
        fail<DTypeError>(op, ": positions must be an integer tensor, got ", positions->dtype);
    if (positions->shape.size() != 1 || values->shape != positions->shape)
        fail<ShapeError>(op, ": positions (shape ", positions->shape, ") and values (shape ", values->shape,
                         ") must be 1-dimensional and of one length");
    if (positions->device != base->device || values->device != base->device)
        fail<DeviceError>(op, ": the tensor is on ", base->device, ", the positions on ", positions->device,
                          " and the values on ", values->device);
    NodePtr node = with_sources(make(NodeKind::Scatter, base->dtype, base->device, base->shape),
                                {row_major_operand(base), row_major_operand(cast(positions, DType::Int64)),
                                 row_major_operand(cast(values, base->dtype))});
    node->params = {accumulate ? 1 : 0};
    return node;
}

LAZYTENSOR_ENGINE_API NodePtr scatter_add(const NodePtr& base, int axis, const NodePtr& positions, const NodePtr& values) {
    const char* op = "scatter_add";
    const Shape& s = base->shape;
    const std::size_t r = s.size(), k = static_cast<std::size_t>(axis);
    const std::int64_t count = positions->shape[k];
    const Shape window(positions->shape);
    Shape domain = s;
    domain.push_back(count);
    // Over [base's shape..., positions' extent along axis]: positions and values read at (i with
    // i[axis] = j), padded with -1 (never a position) and 0 outside positions' other extents.
    auto spread = [&](const NodePtr& t, Scalar fill) {
        SmallVector<std::int64_t, 12> whole;  // t cut to positions' shape (values may be larger)
        Axes last;                            // `axis` moved last
        Shape before(r, 0), after(r, 0), lifted;
        for (std::size_t d = 0; d < r; ++d) {
            whole.push_back(0);
            whole.push_back(1);
            if (d != k) {
                after[last.size()] = s[d] - window[d];
                last.push_back(static_cast<int>(d));
                lifted.push_back(s[d]);
            }
        }
        last.push_back(static_cast<int>(k));
        lifted.insert(k, 1);
        lifted.push_back(count);
        NodePtr part = permute(graph::window(t, whole, window), last);
        part = reshape(pad(part, before, after, fill), lifted);
        return expand(part, domain);
    };
    const Scalar zero = Scalar::of<std::int64_t>(0).cast(base->dtype);
    const NodePtr at = spread(cast(positions, DType::Int64), Scalar::of<std::int64_t>(-1));
    const NodePtr from = spread(cast(values, base->dtype), zero);
    const NodePtr hit = binary(BinaryOp::Eq, at, iota(domain, axis, base->device));
    const NodePtr picked = where(hit, from, zero);
    const NodePtr added = cast(reduce(ReduceOp::Sum, picked, Axes{static_cast<int>(r)}, false, op), base->dtype);
    return binary(BinaryOp::Add, base, added);
}

LAZYTENSOR_ENGINE_API NodePtr scan(ReduceOp rop, const NodePtr& x, int axis, const char* op) {
    if (x->shape.empty()) fail<AxisError>(op, ": needs at least one dimension, the tensor is 0-d");
    const int k = normalize_axis(axis, x->shape.size(), op, x->shape);
    if (is_reduced_float(x->dtype)) return cast(scan(rop, cast(x, DType::Float32), k, op), x->dtype);
    // uint64 wraps as int64 does (the same bits): the backends' scans are int64's
    if (x->dtype == DType::UInt64) return cast(scan(rop, cast(x, DType::Int64), k, op), DType::UInt64);
    const DType t = reduce_dtype(rop, x->dtype);
    if (numel(x->shape) == 0) return cast(x, t);
    auto node = with_sources(make(NodeKind::Scan, t, x->device, x->shape), {cast(x, t)});
    node->reduce_op = rop;
    node->axes = Axes{k};
    return node;
}

LAZYTENSOR_ENGINE_API NodePtr sort_positions(const NodePtr& x, std::int64_t k, bool descending, const char* op) {
    if (x->shape.empty()) fail<AxisError>(op, ": needs at least one dimension, the tensor is 0-d");
    const std::int64_t n = x->shape.back();
    if (k < 0 || k > n) fail<ValueError>(op, ": k = ", k, " is outside [0, ", n, "], the extent of the last axis of shape ", x->shape);
    Shape out = x->shape;
    out.back() = k;
    if (numel(out) == 0) return constant(Scalar::of<std::int64_t>(0), DType::Int64, out, x->device);
    NodePtr node = with_sources(make(NodeKind::Sort, DType::Int64, x->device, out), {x});
    node->params = {k, descending ? 1 : 0};
    return node;
}

LAZYTENSOR_ENGINE_API bool runs_as_gemm(DType dtype, Device device) {
    (void)device;  // float and double products run as a GEMM on every backend (OpenCL has its own kernel where the build has no CLBlast)
    return dtype == DType::Float32 || dtype == DType::Float64;
}

LAZYTENSOR_ENGINE_API NodePtr matmul(const NodePtr& a, const NodePtr& b) {
    const char* op = "matmul";
    const Operand first(a), second(b);
    const Device device = common_device({&first, &second}, op);
    if (a->shape.empty() || b->shape.empty())
        fail<ShapeError>(op, ": both operands need at least one dimension, got shapes ", a->shape, " and ", b->shape,
                         "; multiply by a scalar with * instead");
    Promotion promotion;
    const DType promoted = promotion.with_tensor(a->dtype).with_tensor(b->dtype).result();
    // half and bfloat16 are storage only: the product runs in float32 (a GEMM) and is rounded
    // to the storage type once.
    const DType t = value_dtype(promoted);
    // Promote 1-D operands to matrices: [k] -> [1, k] on the left, [k] -> [k, 1] on the right.
    const bool row_vector = a->shape.size() == 1, column_vector = b->shape.size() == 1;
    NodePtr x = row_vector ? reshape(a, Shape{1, a->shape[0]}, op) : a;
    NodePtr y = column_vector ? reshape(b, Shape{b->shape[0], 1}, op) : b;
    const std::size_t xr = x->shape.size(), yr = y->shape.size();
    const std::int64_t m = x->shape[xr - 2], k = x->shape[xr - 1], n = y->shape[yr - 1];
    if (y->shape[yr - 2] != k)
        fail<ShapeError>(op, ": shapes ", a->shape, " and ", b->shape, " cannot be multiplied: the contracted dimensions differ (",
                         k, " columns in the first operand (its last dimension) vs ", y->shape[yr - 2],
                         " rows in the second (", column_vector ? "its only" : "its second-to-last", " dimension))");
    const Shape x_batch(x->shape.begin(), x->shape.end() - 2), y_batch(y->shape.begin(), y->shape.end() - 2);
    Shape batch;
    try {
        batch = broadcast_shapes(x_batch, y_batch, op);
    } catch (const ShapeError&) {
        fail<ShapeError>(op, ": the batch dimensions of shapes ", a->shape, " and ", b->shape, " (", x_batch, " and ",
                         y_batch, ") cannot be broadcast together");
    }
    auto with = [&](Shape s, std::int64_t r, std::int64_t c) {
        s.push_back(r);
        s.push_back(c);
        return s;
    };
    x = expand(cast(x, t), with(batch, m, k), op);
    y = expand(cast(y, t), with(batch, k, n), op);
    Shape out = with(batch, m, n);
    check_extents(out, op);

    NodePtr product;
    if (numel(out) == 0 || k == 0) {
        product = constant(Scalar::of<std::int64_t>(0), t, out, device);  // an empty sum is 0
    } else if (runs_as_gemm(t, device, numel(batch), m, n, k)) {
        const std::int64_t parts = device_policy(device).split_k_parts(numel(batch), m, n, k);
        if (parts == 1) {
            product = with_sources(make(NodeKind::Matmul, t, device, out), {x, y});
        } else {  // [..., parts, m, k / parts] x [..., parts, k / parts, n], summed over parts
            const int at = static_cast<int>(batch.size());
            Shape xs = with(batch, m, parts), ys = with(batch, parts, k / parts), partial = with(batch, parts, m);
            xs.push_back(k / parts);
            ys.push_back(n);
            partial.push_back(n);
            Axes parts_first = all_axes(xs.size());
            std::swap(parts_first[static_cast<std::size_t>(at)], parts_first[static_cast<std::size_t>(at) + 1]);
            const NodePtr xp = permute(reshape(x, xs, op), parts_first, op), yp = reshape(y, ys, op);
            product = reduce(ReduceOp::Sum, with_sources(make(NodeKind::Matmul, t, device, partial), {xp, yp}), Axes{at},
                             false, op);
        }
    } else {
        // out[..., i, j] = sum_k x[..., i, k] * y[..., k, j] over a [..., m, k, n] domain; bools
        // give any(x && y), integers wrap in their own type like NumPy's.
        Shape domain = with(batch, m, k);
        domain.push_back(n);
        Shape xs = with(batch, m, k), ys = with(batch, 1, k);
        xs.push_back(1);
        ys.push_back(n);
        const NodePtr xe = expand(reshape(x, xs, op), domain, op);
        const NodePtr ye = expand(reshape(y, ys, op), domain, op);
        const Axes contracted{static_cast<int>(domain.size()) - 2};
        if (t == DType::Bool)
            product = reduce(ReduceOp::Max, binary(BinaryOp::Minimum, xe, ye), contracted, false, op);
        else
            product = cast(reduce(ReduceOp::Sum, binary(BinaryOp::Mul, xe, ye), contracted, false, op), t);
    }
    product = cast(product, promoted);
    // Drop the axes that the promotion of 1-D operands added.
    if (row_vector || column_vector) {
        Shape shape = batch;
        if (!row_vector) shape.push_back(m);
        if (!column_vector) shape.push_back(n);
        product = reshape(product, shape, op);
    }
    return product;
}

}  // namespace lazytensor::detail::graph
