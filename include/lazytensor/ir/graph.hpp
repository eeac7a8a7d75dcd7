// SPDX-License-Identifier: MIT
// Building graph nodes, with every check a user can trip over: broadcasting, axes, reshape
// sizes, devices and dtypes. The typed front end calls these; so does any untyped caller.
// Binary ops and `where` make broadcasting and type promotion explicit here (expand and cast
// nodes), so that every later stage sees operands of one shape and one dtype.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/error.hpp"
#include "../core/engine_mode.hpp"
#include "device_policy.hpp"
#include "node.hpp"

namespace lazytensor::detail::graph {

/// An operand of an element-wise op: a node, or a C++ scalar (which does not widen a tensor).
struct Operand {
    NodePtr node;
    Scalar scalar;

    Operand(NodePtr n) : node(std::move(n)) {}
    Operand(Scalar s) : scalar(s) {}
    bool is_scalar() const { return !node; }
    DType dtype() const { return node ? node->dtype : scalar.dtype; }
};

LAZYTENSOR_ENGINE_API NodePtr make(NodeKind kind, DType dtype, Device device, Shape shape);

LAZYTENSOR_ENGINE_API NodePtr with_sources(NodePtr n, std::initializer_list<NodePtr> sources);

LAZYTENSOR_ENGINE_API NodePtr buffer(BufferPtr buf, Shape shape, Strides strides, std::int64_t offset);

LAZYTENSOR_ENGINE_API NodePtr constant(Scalar value, DType dtype, Shape shape, Device device);

// ---------------------------------------------------------------------------------------- views

LAZYTENSOR_ENGINE_API NodePtr reshape(const NodePtr& x, Shape shape, const char* op = "lt::reshape");

/// x's value, through which reverse mode passes no gradient: a view of x in its own shape.
LAZYTENSOR_ENGINE_API NodePtr stop_gradient(const NodePtr& x);

LAZYTENSOR_ENGINE_API NodePtr permute(const NodePtr& x, const Axes& perm, const char* op = "lt::permute");

LAZYTENSOR_ENGINE_API NodePtr transpose(const NodePtr& x, int a, int b);

/// Broadcasts x to `shape` (NumPy rules; -1 keeps an extent). Adds leading axes as a reshape.
LAZYTENSOR_ENGINE_API NodePtr expand(const NodePtr& x, Shape shape, const char* op = "lt::expand");

/// A window of x: per axis, result index i reads x at starts_steps[2k] + starts_steps[2k+1] * i.
/// A window of a window is one window.
LAZYTENSOR_ENGINE_API NodePtr window(const NodePtr& x, SmallVector<std::int64_t, 12> starts_steps, Shape shape);

/// x[start:stop:step] along `axis`, with Python's rules: negative start/stop count from the
/// end, out-of-range bounds are clipped, a negative step walks backwards (defaults then run
/// from the end to the beginning). step 0 is an error.
LAZYTENSOR_ENGINE_API NodePtr slice(const NodePtr& x, int axis, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                     std::int64_t step);

/// x with the order of elements reversed along each of `axes`.
LAZYTENSOR_ENGINE_API NodePtr flip(const NodePtr& x, const Axes& axes);

/// Sliding windows along one axis (PyTorch's Tensor.unfold, with a dilation), a view: the axis
/// becomes the count of windows, (extent - dilation * (size - 1) - 1) / step + 1, and a new last
/// axis of `size` walks each window: out[..., o, ..., k] = x[..., o * step + k * dilation, ...].
/// Windows may overlap (step < size * dilation): such a view is read-only. ShapeError when the
/// window is longer than the axis.
LAZYTENSOR_ENGINE_API NodePtr unfold(const NodePtr& x, int axis, std::int64_t size, std::int64_t step,
                                     std::int64_t dilation = 1, const char* op = "unfold");

/// Sliding windows along several axes at once, one view: `windows` holds (axis, size, step,
/// dilation) per unfolded axis, distinct axes of x; their window axes are appended in that
/// order ([N, C, out..., kernel...] for a convolution's input). Its gradient is one fold over
/// every axis, rather than one per axis through a stored intermediate.
LAZYTENSOR_ENGINE_API NodePtr unfold_axes(const NodePtr& x, const SmallVector<std::int64_t, 12>& windows,
                                          const char* op = "unfold");

/// x surrounded by `value`: before[k] elements before and after[k] after it along axis k.
LAZYTENSOR_ENGINE_API NodePtr pad(const NodePtr& x, const Shape& before, const Shape& after, Scalar value);

/// The int64 tensor whose value at index i is sum_k coefs[k] * i[k]: iota along an axis (one
/// coefficient 1), or the row-major linear index (the contiguous strides).
LAZYTENSOR_ENGINE_API NodePtr index(const Shape& shape, const Strides& coefs, Device device);

/// 0, 1, ..., shape[axis] - 1 along `axis`, broadcast over the others (int64).
LAZYTENSOR_ENGINE_API NodePtr iota(const Shape& shape, int axis, Device device);

// ---------------------------------------------------------------------------------- element-wise

LAZYTENSOR_ENGINE_API NodePtr cast(const NodePtr& x, DType to);

/// The dtype operands meet in, by PyTorch's rule: scalars do not widen tensors of their category.
LAZYTENSOR_ENGINE_API DType promote_operands(std::initializer_list<const Operand*> operands);

/// The common device of the node operands, or an error naming both devices.
LAZYTENSOR_ENGINE_API Device common_device(std::initializer_list<const Operand*> operands, const char* op);

LAZYTENSOR_ENGINE_API Shape common_shape(std::initializer_list<const Operand*> operands, const char* op);

/// ValueError unless the scalar `s` has a value of dtype `to` (an integer scalar within its
/// range; a floating one, when `to` is an integer, finite and within range, truncated). A
/// scalar never wraps: `u8 < 256` and `clamp(u8, 0, 300)` are errors, not comparisons with 0
/// and 44. Into a floating dtype every value goes (rounded; past float16's range: inf); into
/// bool, nonzero is true.
LAZYTENSOR_ENGINE_API void check_scalar_fits(const Scalar& s, DType to, const char* op);

/// The operand as a node of the given dtype and shape (cast, reshape and expand as needed).
LAZYTENSOR_ENGINE_API NodePtr conform(const Operand& o, DType dtype, const Shape& shape, Device device, const char* op);

/// What a rule that rejected some dtypes needs, for its error message.
LAZYTENSOR_ENGINE_API const char* rule_needs(TypeRule rule);

/// ValueError unless a unary function of `rule` is defined for x's dtype.
LAZYTENSOR_ENGINE_API void check_unary_rule(TypeRule rule, DType x, const char* op);

LAZYTENSOR_ENGINE_API NodePtr unary(UnaryOp uop, const NodePtr& x);

/// The operands of a binary function of `rule`, checked (devices, shapes, dtypes) and made
/// nodes of the dtype it computes in and of their broadcast shape.
LAZYTENSOR_ENGINE_API std::array<NodePtr, 2> binary_operands(TypeRule rule, const Operand& a, const Operand& b, const char* op);

LAZYTENSOR_ENGINE_API NodePtr binary(BinaryOp bop, const Operand& a, const Operand& b);

LAZYTENSOR_ENGINE_API NodePtr where(const Operand& cond, const Operand& x, const Operand& y);

// ----------------------------------------------------------------------------------- composites
// The element-wise functions that are not ops of their own: rewrites into the ops above
// (tinygrad's decompositions), written once, here, for the front end (frontend/composites.hpp),
// reverse mode and the builders below alike. Every backend runs them as it runs the ops, fused
// into the kernel that reads them, and reverse mode differentiates them through their ops. Each
// keeps the semantics it had as an op of its own, exact at the extremes. (Composites only the
// front end needs, softplus, clamp, nan_to_num, ..., are written there, typed.)

namespace composite {

LAZYTENSOR_ENGINE_API Scalar num(double v);
/// A whole constant, which leaves any operand's dtype as it is (a double scalar would make an
/// integer tensor float32).
LAZYTENSOR_ENGINE_API Scalar whole(std::int64_t v);
LAZYTENSOR_ENGINE_API NodePtr add(const Operand& a, const Operand& b);
LAZYTENSOR_ENGINE_API NodePtr sub(const Operand& a, const Operand& b);
LAZYTENSOR_ENGINE_API NodePtr mul(const Operand& a, const Operand& b);
LAZYTENSOR_ENGINE_API NodePtr div(const Operand& a, const Operand& b);
LAZYTENSOR_ENGINE_API NodePtr less(const Operand& a, const Operand& b);
LAZYTENSOR_ENGINE_API NodePtr equal(const Operand& a, const Operand& b);
LAZYTENSOR_ENGINE_API NodePtr differ(const Operand& a, const Operand& b);
LAZYTENSOR_ENGINE_API NodePtr both(const NodePtr& a, const NodePtr& b);
LAZYTENSOR_ENGINE_API NodePtr neg(const NodePtr& x);
/// x limited to [lo, hi]: for a branch of a where that only uses x in that range, so that the
/// lanes it does not use compute something finite (and their zero gradient stays zero, not
/// 0 * inf).
LAZYTENSOR_ENGINE_API NodePtr clamp(const NodePtr& x, double lo, double hi);

/// exp(a) for a <= 0 is computed as exp(a + shift) * scale (scale = exp(-shift)) below `below`,
/// where it would be subnormal: the shift is exact and the product rounds once, so that a
/// product with exp(a) keeps its precision (silu(-105.f) is -2.66e-44, not -0).
struct TinyExp {
    double below, shift, scale;
};
LAZYTENSOR_ENGINE_API TinyExp tiny_exp(DType t);

/// Veltkamp's split: v = hi + lo exactly, each with half of the significand, so that products of
/// halves are exact (Dekker's products below, which need no FMA; the renderer keeps OpenCL from
/// contracting them, and the host rounds every op).
struct Halves {
    NodePtr hi, lo;
};
LAZYTENSOR_ENGINE_API double splitter(DType t);
/// The same split of a constant, in T. (Through volatile: a compiler allowed to contract
/// c * s - c into an FMA, as GCC is by default with FMA hardware, would compute another hi.)
template <class T>
std::array<double, 2> split_value(T c, T s) {
    volatile T p = c * s;
    volatile T d = p - c;
    const T hi = p - d;
    return {static_cast<double>(hi), static_cast<double>(c - hi)};
}
/// a * c - p exactly, for p = a * c rounded and a constant c of a's dtype (Dekker).
LAZYTENSOR_ENGINE_API NodePtr product_error(const NodePtr& a, double c, const NodePtr& p);
/// a * a - p exactly, for p = a * a rounded (Dekker).
LAZYTENSOR_ENGINE_API NodePtr square_error(const NodePtr& a, const NodePtr& p);

/// x as the dtype a floating composite computes in: integers in float32 (as for the floating
/// ops), the floating dtypes as they are. A bool x is a ValueError, as for the floating ops.
LAZYTENSOR_ENGINE_API NodePtr floating_operand(const NodePtr& x, const char* op);

/// sigmoid(x) of floating x: 1 / (1 + e) for x >= 0 and e / (1 + e) below, where e = exp(-|x|)
/// never overflows and is computed as TinyExp says where it would be subnormal; also e0, the
/// exp that gives e (exp(x + shift) below TinyExp's `below`), for silu. A float16 x computes in
/// float (its registers) without TinyExp, whose values are far below half's range (and whose
/// scale a float16 constant cannot hold); sigmoid and silu compute a bfloat16 x (float's range)
/// in float32 and round once.
struct SigmoidParts {
    NodePtr sigmoid, e0;
};
LAZYTENSOR_ENGINE_API SigmoidParts sigmoid_parts(const NodePtr& x);

}  // namespace composite

/// sign(x): 1, -1 or 0 in x's dtype (not bool); NaN stays NaN and -0 gives +0 (x - x is +0 for
/// both zeros and NaN for NaN). It passes no gradient (PyTorch's: zero).
LAZYTENSOR_ENGINE_API NodePtr sign(const NodePtr& x);

/// 1 / sqrt(x) (UnaryOp::Rsqrt), both steps correctly rounded (where the device's are):
/// integers give float32.
LAZYTENSOR_ENGINE_API NodePtr rsqrt(const NodePtr& x);

/// 1 / (1 + exp(-x)) (composite::sigmoid_parts), exact down to the smallest subnormal;
/// integers give float32, bfloat16 computes in float32 (rounded once).
LAZYTENSOR_ENGINE_API NodePtr sigmoid(const NodePtr& x);

/// x sigmoid(x), with its limit -0 at -inf. Below TinyExp's `below` it is (x exp(x + shift))
/// exp(-shift): x e is rounded once, so that subnormal results keep their precision
/// (silu(-105.f) is -2.66e-44). Integers give float32.
LAZYTENSOR_ENGINE_API NodePtr silu(const NodePtr& x);

/// gelu(x) = x Phi(x), PyTorch's exact form 0.5 x (1 + erf(x / sqrt(2))), computed as
/// 0.5 x erfc(z), z = -x / sqrt(2): no cancellation below 0 (1 + erf gave -0 from x = -5.9 on in
/// float, where gelu(-7.8f) is -2.8e-14). Below 0, where erfc is steep, the rounding of z is put
/// back to first order (erfc(z + dz) = erfc(z) - dz 2/sqrt(pi) exp(-z^2), dz exact by Dekker's
/// product); below -10 (float) or -37 (double), where erfc nears the subnormals, gelu(x) =
/// -phi(x) S(1 / x^2), phi the normal density and S erfc's asymptotic series (7 terms: within
/// 0.2 ulp there), x^2 split exactly, exp scaled as TinyExp says and the product rounded once
/// (gelu(-14.f) is -1.1e-43). gelu rounds to -0 well before -20 (-50): -0 from there on, and at
/// -inf. Where the device's policy says so (DevicePolicy::gelu_through_float64: the host, whose
/// float exp and erfc are a few ulp off), float computes in double and rounds once (within 0.5 ulp and a hair): there 0.5 x erfc(z) needs no correction (rounding z
/// costs 2 z^2 2^-53 relative, and erfc stays normal over float's range). Integers give
/// float32; float16 and bfloat16 compute in float32 (the constants need float's precision) or,
/// there, in double, and round the result to their dtype.
LAZYTENSOR_ENGINE_API NodePtr gelu(const NodePtr& x);

/// NumPy's remainder (Python's %): the result has the divisor's sign. As NumPy's divmod: fmod
/// (exact), plus b where the signs differ (one rounding; for integers |r| < |b|, so it cannot
/// overflow); a zero result takes b's sign. Integer remainders by 0 give 0 (fmod's), float ones
/// NaN. Operands promote as for +; two bools are a ValueError.
LAZYTENSOR_ENGINE_API NodePtr remainder(const Operand& a, const Operand& b);

/// NumPy's floor_divide (Python's //): the floor of the exact quotient. Integers: C's truncated
/// quotient, less 1 where the remainder is nonzero and the signs differ (by 0: 0; the most
/// negative value by -1 wraps). Floats, as NumPy's divmod: (a - fmod(a, b)) / b is a whole number
/// up to rounding, so 1 // 0.1 is 9 where floor(1 / 0.1) would be 10; a zero quotient keeps
/// the sign of a / b, and by 0 it is a / b. It passes no gradient (PyTorch's: zero).
LAZYTENSOR_ENGINE_API NodePtr floor_divide(const Operand& a, const Operand& b);

// ------------------------------------------------------------------------------------- indexing

/// out[i] = x[i with i[axis] replaced by index[i]] (PyTorch's gather): index has x's rank and,
/// on every other axis, at most x's extent. Positions are clamped into range here; the front
/// end checks them first and reports any out of range.
LAZYTENSOR_ENGINE_API NodePtr gather(const NodePtr& x, int axis, const NodePtr& idx);

// ------------------------------------------------------------------------------------- assign

/// A copy of x that is its own node (an identity cast): lowering reads x into new memory.
LAZYTENSOR_ENGINE_API NodePtr copy(const NodePtr& x);

/// Whether a layout may give two elements one memory location. Exact for every layout views of
/// lazytensor's own memory have (each axis, in order of its stride, steps past the span of the
/// smaller ones); other layouts of wrapped memory (lt::from_blob) may be reported although their
/// elements are distinct (extents [3, 2], strides [2, 3]).
LAZYTENSOR_ENGINE_API bool may_overlap(const Shape& shape, const Strides& strides);

/// Writes `value` (broadcast to the target's shape, cast to its dtype) into the memory of
/// `target`, a realized tensor whose elements are distinct memory locations.
LAZYTENSOR_ENGINE_API NodePtr assign(const NodePtr& target, const Operand& value);

// ------------------------------------------------------------------------------------ reductions

/// Drops the reduced axes of a keepdim-shaped result.
LAZYTENSOR_ENGINE_API NodePtr squeeze_axes(const NodePtr& x, const Axes& axes);

/// The dtype a reduction accumulates and returns: integer and bool sums and products give
/// int64 (PyTorch).
LAZYTENSOR_ENGINE_API DType reduce_dtype(ReduceOp rop, DType in);

/// The axes a reduction of x over `user_axes` reduces: all of them when none are given or the
/// list is empty (one meaning for every reduction: sum, max, mean, var, logsumexp, layer_norm).
LAZYTENSOR_ENGINE_API Axes reduced_axes(const NodePtr& x, const std::optional<Axes>& user_axes, const char* op);

/// reduce(x) over `axes` (none or empty: all axes). `logical`: a max (any) or min (all) of
/// bools, which, unlike max and min of numbers, has an identity for an empty axis (false, true).
LAZYTENSOR_ENGINE_API NodePtr reduce(ReduceOp rop, const NodePtr& x, const std::optional<Axes>& user_axes, bool keepdim,
                      const char* op, bool logical = false);

/// any (`all` false) or all of x != 0, over `axes` (none or empty: all axes); bool. NaN counts as true.
LAZYTENSOR_ENGINE_API NodePtr any_all(bool all, const NodePtr& x, const std::optional<Axes>& axes, bool keepdim);

/// Arithmetic mean. Integers are summed exactly (int64), divided in float64 and rounded once to
/// float32; on a device without float64 (the caller asks the device: the graph knows none), in
/// int64 and float32 (below: within 1 ulp).
LAZYTENSOR_ENGINE_API NodePtr mean(const NodePtr& x, const std::optional<Axes>& user_axes, bool keepdim, bool device_has_float64);
/// The mean from `total`, the sum of `count` elements of dtype `input` (as mean sums them: half and
/// bfloat16 in float32, integers and bool in int64): mean's one division, shared with sharded tensors' mean.
LAZYTENSOR_ENGINE_API NodePtr mean_of_sum(const NodePtr& total, DType input, std::int64_t count, bool device_has_float64);

/// base with `values` added at the positions `positions` names along `axis` (PyTorch's
/// scatter_add; the front end checks ranks, extents and positions first). Computed as a
/// reduction over positions' extent along `axis` for every element of base: deterministic, in
/// index order, at numel(base) * positions.shape[axis] operations.
LAZYTENSOR_ENGINE_API NodePtr scatter_add(const NodePtr& base, int axis, const NodePtr& positions, const NodePtr& values);
/// x, or a copy of it where it is realized memory the backend's routines cannot read as it is
/// (not row-major from its offset): the operands of items that read buffers directly
/// (scatters, collectives). Lowering asks for lazy operands in memory of their own; a realized
/// node has no producer to compute it again, so its copy is made here.
inline NodePtr row_major_operand(const NodePtr& x) {
    if (!x->realized() || is_contiguous_layout(x->shape, x->strides, x->offset)) return x;
    return with_sources(make(NodeKind::Cast, x->dtype, x->device, x->shape), {x});
}
/// A copy of base with values[j] written (with `accumulate`: added; bool: or-ed) at flat position
/// positions[j] of base's contiguous order, for every j: a scatter node, an item of its own run
/// by the backend's scatter at one pass over the positions. positions: an integer [m]; values:
/// [m], converted to base's dtype. Positions outside [0, numel(base)) are skipped (callers use
/// -1 for "nowhere"; the front end checks users' positions first). Where positions repeat, an
/// overwrite keeps one of their values (the host's: the last) and an add sums them all (on the
/// host in order; on OpenCL with atomics, in no fixed order).
LAZYTENSOR_ENGINE_API NodePtr scatter(const NodePtr& base, const NodePtr& positions, const NodePtr& values, bool accumulate);

/// Inclusive cumsum (Sum) or cumprod (Prod) of x along `axis`: a scan node, which the
/// scheduler makes an item of its own. Integers and bool accumulate in int64 (PyTorch); half and
/// bfloat16 in float32, each element rounded to its dtype once.
LAZYTENSOR_ENGINE_API NodePtr scan(ReduceOp rop, const NodePtr& x, int axis, const char* op);

/// The positions (int64) of the first k elements of each row of x along its last axis, in
/// sorted order, stably (a Sort node: NaN after every number, before them when descending).
/// ValueError, naming `op`, unless 0 <= k <= the last axis' extent.
LAZYTENSOR_ENGINE_API NodePtr sort_positions(const NodePtr& x, std::int64_t k, bool descending, const char* op);

// ---------------------------------------------------------------------------- matrix products

/// Whether a product of `dtype` on `device` runs as a GEMM schedule item. Other products are
/// sums of element-wise products, which the scheduler fuses into one reduction kernel.
LAZYTENSOR_ENGINE_API bool runs_as_gemm(DType dtype, Device device);
/// Whether this product runs as a GEMM item: runs_as_gemm(dtype, device), unless the device's
/// policy runs one this thin faster as a reduction kernel (DevicePolicy::product_as_reduction).
/// graph::matmul decides here, and only here.
inline bool runs_as_gemm(DType dtype, Device device, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k) {
    return runs_as_gemm(dtype, device) && !device_policy(device).product_as_reduction(dtype, batch, m, n, k);
}

/// NumPy's matmul: 1-D x 1-D is a dot product; a 1-D operand is a row (left) or a column
/// (right) vector whose unit axis is dropped from the result; batch axes broadcast.
LAZYTENSOR_ENGINE_API NodePtr matmul(const NodePtr& a, const NodePtr& b);

}  // namespace lazytensor::detail::graph

// The builders' definitions: inline in header-only units, once in the implementation unit,
// never in a separate-runtime unit (each of those would compile them again: about 1 s a unit).
#if LAZYTENSOR_ENGINE_DEFINITIONS
#include "graph_definitions.hpp"
#endif
