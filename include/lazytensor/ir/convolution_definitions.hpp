// SPDX-License-Identifier: MIT
// The definitions of ir/convolution.hpp's builders (documented there), compiled where the
// engine is.
#pragma once

#include <limits>
#include <string>

#include "convolution.hpp"
#include "convolution_winograd.hpp"

#if !LAZYTENSOR_ENGINE_DEFINITIONS
#error "lazytensor: ir/convolution_definitions.hpp holds definitions of the runtime; a LAZYTENSOR_SEPARATE_RUNTIME unit must not include it"
#endif

namespace lazytensor::detail::graph {

namespace conv {

using namespace composite;

// Winograd F(4x4, 3x3), defined in convolution_winograd.hpp. Declared here too: that header
// includes convolution.hpp, which includes this one, so a unit that includes it first reaches
// convolution() below before its definitions.
inline bool winograd_applies(const NodePtr& x, const NodePtr& weight, const ConvSpec& spec);
inline NodePtr winograd(const NodePtr& x, const NodePtr& weight, const NodePtr& bias, const ConvSpec& spec, const Shape& out,
                        const char* op);

/// Output positions per sample from which one product per sample fills a GPU as well as one
/// product over the batch (H200, ResNet-18 layers at batch 32: per sample 0.34 ms against 0.43
/// at 56x56 (3,136 positions); 0.40 against 0.27 at 28x28).
inline constexpr std::int64_t kWideEnoughPerSample = 2048;

/// The most taps a fold sums in one expression (one kernel where the stride is 1); beyond,
/// it folds axis by axis through stored intermediates.
inline constexpr std::int64_t kMostFoldTerms = 64;

inline std::int64_t product(const Shape& s, std::size_t from = 0, std::size_t to = ~std::size_t{0}) {
    std::int64_t p = 1;
    for (std::size_t k = from; k < s.size() && k < to; ++k) p *= s[k];
    return p;
}

inline Shape spatial(const Shape& s) { return Shape(s.begin() + 2, s.end()); }

/// The checks every convolution and pool shares: the rank, and options of one entry per
/// spatial axis within their ranges.
inline void check_options(const NodePtr& x, const ConvSpec& spec, const char* op, const char* what) {
    const std::size_t dims = spec.stride.size();
    if (x->shape.size() != dims + 2)
        fail<ShapeError>(op, ": the ", what, " must have ", dims + 2, " axes ([batch, channels, ", dims, " spatial]) or ",
                         dims + 1, " without the batch, got shape ", x->shape);
    for (std::size_t i = 0; i < dims; ++i) {
        if (spec.stride[i] < 1) fail<ValueError>(op, ": the stride must be at least 1 along every axis, got ", spec.stride);
        if (spec.dilation[i] < 1)
            fail<ValueError>(op, ": the dilation must be at least 1 along every axis, got ", spec.dilation);
        if (spec.pad_before[i] < 0 || spec.pad_after[i] < 0)
            fail<ValueError>(op, ": the padding must not be negative, got ", spec.pad_before, " before and ", spec.pad_after,
                             " after");
    }
}

/// The kernel spans (dilation * (kernel - 1) + 1) fit the padded input.
inline void check_fits(const NodePtr& x, const Shape& kernel, const ConvSpec& spec, const char* op) {
    Shape span, padded;
    bool fits = true;
    for (std::size_t i = 0; i < kernel.size(); ++i) {
        span.push_back(spec.dilation[i] * (kernel[i] - 1) + 1);
        padded.push_back(x->shape[2 + i] + spec.pad_before[i] + spec.pad_after[i]);
        fits = fits && span[i] <= padded[i];
    }
    if (!fits)
        fail<ShapeError>(op, ": the kernel ", kernel, " spans ", span, " positions (with dilation ", spec.dilation,
                         "), more than the padded input's ", padded, " (input ", spatial(x->shape), ", padding ",
                         spec.pad_before, " before and ", spec.pad_after, " after)");
}

/// A pool's checks: a kernel of at least 1, the options, padding at most half the kernel's span
/// (PyTorch's rule: every window holds an element of the input), the span within the padded input.
inline void check_pool(const NodePtr& x, const Shape& kernel, const ConvSpec& spec, const char* op) {
    for (std::int64_t k : kernel)
        if (k < 1) fail<ValueError>(op, ": the kernel size must be at least 1 along every axis, got ", kernel);
    check_options(x, spec, op, "input");
    for (std::size_t i = 0; i < kernel.size(); ++i) {
        const std::int64_t half = (spec.dilation[i] * (kernel[i] - 1) + 1) / 2;
        if (spec.pad_before[i] > half || spec.pad_after[i] > half)
            fail<ValueError>(op, ": the padding (", spec.pad_before, " before, ", spec.pad_after,
                             " after) must be at most half the kernel's span along each axis (kernel ", kernel,
                             ", dilation ", spec.dilation, ")");
    }
    check_fits(x, kernel, spec, op);
}

/// With ceil_mode, the padding after each axis that PyTorch's rounding up adds: the extent of
/// one more window where it starts inside the input or the padding before it.
inline ConvSpec rounded_up(const NodePtr& x, const Shape& kernel, ConvSpec spec) {
    if (!spec.ceil_mode) return spec;
    for (std::size_t i = 0; i < kernel.size(); ++i) {
        const std::int64_t span = spec.dilation[i] * (kernel[i] - 1) + 1, stride = spec.stride[i],
                           extent = x->shape[2 + i] + spec.pad_before[i] + spec.pad_after[i];
        std::int64_t windows = (extent - span + stride - 1) / stride + 1;
        if ((windows - 1) * stride >= x->shape[2 + i] + spec.pad_before[i]) --windows;
        spec.pad_after[i] += std::max<std::int64_t>(0, (windows - 1) * stride + span - extent);
    }
    spec.ceil_mode = false;
    return spec;
}

inline bool padded(const ConvSpec& spec) {
    for (std::size_t i = 0; i < spec.pad_before.size(); ++i)
        if (spec.pad_before[i] || spec.pad_after[i]) return true;
    return false;
}

/// `widths` after `lead` zeros: a pad's widths for [N, C, spatial...].
inline Shape leading_zeros(const Shape& widths, std::size_t lead) {
    Shape out(lead, 0);
    for (std::int64_t w : widths) out.push_back(w);
    return out;
}

/// x padded for windows: a buffer of its own where the device prefers (DevicePolicy::windows_through_buffers).
inline NodePtr padded(const NodePtr& x, const ConvSpec& spec, Scalar fill) {
    NodePtr p = pad(x, leading_zeros(spec.pad_before, 2), leading_zeros(spec.pad_after, 2), fill);
    if (p != x && x->kind != NodeKind::Const && device_policy(x->device).windows_through_buffers()) p->own_buffer = true;
    return p;
}

/// Windows of x padded with `fill`: [N, C, out..., kernel...] (unfold views of a pad).
inline NodePtr windows(const NodePtr& x, const Shape& kernel, const ConvSpec& spec, Scalar fill, const char* op) {
    const std::size_t dims = kernel.size();
    SmallVector<std::int64_t, 12> params;
    for (std::size_t i = 0; i < dims; ++i)
        for (std::int64_t v : {static_cast<std::int64_t>(2 + i), kernel[i], spec.stride[i], spec.dilation[i]}) params.push_back(v);
    return unfold_axes(padded(x, spec, fill), params, op);
}

inline Axes window_axes(std::size_t dims) {
    Axes axes;
    for (std::size_t i = 0; i < dims; ++i) axes.push_back(static_cast<int>(2 + dims + i));
    return axes;
}

inline void check_operands(const NodePtr& x, const NodePtr& weight, const NodePtr& bias, std::int64_t out_channels,
                           const char* op) {
    if (weight->dtype != x->dtype)
        fail<DTypeError>(op, ": the input is ", x->dtype, " but the weight is ", weight->dtype, "; cast one of them");
    if (weight->device != x->device)
        fail<DeviceError>(op, ": the input is on ", x->device, " but the weight is on ", weight->device,
                          "; move one with .to(device)");
    if (!bias) return;
    if (bias->shape != Shape{out_channels})
        fail<ShapeError>(op, ": the bias must have shape [", out_channels, "] (one per output channel), got ", bias->shape);
    if (bias->dtype != x->dtype)
        fail<DTypeError>(op, ": the input is ", x->dtype, " but the bias is ", bias->dtype, "; cast one of them");
    if (bias->device != x->device)
        fail<DeviceError>(op, ": the input is on ", x->device, " but the bias is on ", bias->device,
                          "; move one with .to(device)");
}

inline NodePtr with_bias(NodePtr y, const NodePtr& bias) {
    if (!bias) return y;
    Shape shape(y->shape.size(), 1);
    shape[1] = bias->shape[0];
    return add(y, reshape(bias, shape));
}

inline Scalar lowest(DType t) {
    if (is_floating(t)) {
        Scalar s = Scalar::of<double>(-std::numeric_limits<double>::infinity());
        return s.cast(t);
    }
    return visit_dtype(t, [](auto tag) {
        using T = typename decltype(tag)::type;
        return Scalar::of<T>(std::numeric_limits<T>::lowest());
    });
}

}  // namespace conv

LAZYTENSOR_ENGINE_API NodePtr convolution(const NodePtr& x, const NodePtr& weight, const NodePtr& bias, const ConvSpec& spec,
                                          const char* op) {
    using namespace composite;
    conv::check_options(x, spec, op, "input");
    const std::size_t dims = spec.stride.size();
    if (weight->shape.size() != dims + 2)
        fail<ShapeError>(op, ": the weight must have ", dims + 2, " axes ([out channels, in channels / groups, ", dims,
                         " kernel]), got shape ", weight->shape);
    const std::int64_t groups = spec.groups, channels = x->shape[1], out_channels = weight->shape[0];
    if (groups < 1) fail<ValueError>(op, ": groups must be at least 1, got ", groups);
    if (channels % groups != 0)
        fail<ValueError>(op, ": groups = ", groups, " does not divide the input's ", channels, " channels (shape ",
                         x->shape, ")");
    if (out_channels % groups != 0)
        fail<ValueError>(op, ": groups = ", groups, " does not divide the weight's ", out_channels,
                         " output channels (shape ", weight->shape, ")");
    if (weight->shape[1] * groups != channels)
        fail<ShapeError>(op, ": the input has ", channels, " channels (shape ", x->shape, ") but the weight ",
                         weight->shape, " takes ", weight->shape[1], " per group x ", groups, " group(s) = ",
                         weight->shape[1] * groups);
    conv::check_operands(x, weight, bias, out_channels, op);
    const Shape kernel = conv::spatial(weight->shape);
    for (std::size_t i = 0; i < dims; ++i)
        if (kernel[i] < 1) fail<ShapeError>(op, ": the weight's kernel ", kernel, " is empty (shape ", weight->shape, ")");
    conv::check_fits(x, kernel, spec, op);

    const std::int64_t batch = x->shape[0], per_group = channels / groups, out_per_group = out_channels / groups;
    Shape out;
    for (std::size_t i = 0; i < dims; ++i)
        out.push_back((x->shape[2 + i] + spec.pad_before[i] + spec.pad_after[i] - spec.dilation[i] * (kernel[i] - 1) - 1) /
                          spec.stride[i] +
                      1);
    const std::int64_t taps = conv::product(kernel), spots = conv::product(out);
    Shape result{batch, out_channels};
    for (std::int64_t e : out) result.push_back(e);

    if (conv::winograd_applies(x, weight, spec)) return conv::winograd(x, weight, bias, spec, out, op);

    if (per_group == 1 && groups > 1 && taps <= 64) {
        // Depthwise: each output channel sums the taps of one input channel, too few for a
        // product (k = taps). One element-wise kernel over the output reads every tap in place:
        // sum over taps t of x_padded[..., o * stride + t * dilation] * weight[g, j, t]. Each tap
        // is one strided window of the padded input, so that its gradient is one placed window
        // too: the input's gradient is again one kernel. (One input channel without groups is a
        // product over the batch below: its weight's gradient is one product, not one
        // reduction per tap.)
        const DType compute = value_dtype(x->dtype);
        const NodePtr padded = conv::padded(x, spec, Scalar::of<std::int64_t>(0).cast(x->dtype));
        const NodePtr w = cast(reshape(weight, Shape{1, groups, out_per_group, taps}, op), compute);
        Shape tap_shape{batch, groups, 1}, term_shape{1, groups, out_per_group};
        for (std::int64_t e : out) tap_shape.push_back(e);
        for (std::size_t i = 0; i < dims; ++i) term_shape.push_back(1);
        NodePtr total;
        for (std::int64_t t = 0; t < taps; ++t) {
            SmallVector<std::int64_t, 12> starts_steps{0, 1, 0, 1};
            Shape at(dims, 0);
            for (std::size_t i = dims, rest = static_cast<std::size_t>(t); i-- > 0; rest /= static_cast<std::size_t>(kernel[i]))
                at[i] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(kernel[i]));
            for (std::size_t i = 0; i < dims; ++i) {
                starts_steps.push_back(at[i] * spec.dilation[i]);
                starts_steps.push_back(spec.stride[i]);
            }
            Shape window_shape{batch, channels};
            for (std::int64_t e : out) window_shape.push_back(e);
            const NodePtr tap = reshape(window(padded, starts_steps, window_shape), tap_shape, op);
            const NodePtr term = mul(cast(tap, compute), reshape(slice(w, 3, t, t + 1, 1), term_shape, op));
            total = total ? add(total, term) : term;
        }
        return conv::with_bias(reshape(cast(total, x->dtype), result, op), bias);
    }

    // im2col: the windows copied once into the product's operand layout (the copy kernel the
    // scheduler makes for the reshape below), multiplied by the weight [G, C_out/G, C/G *
    // kernel]. A 1x1 kernel of stride 1 without padding needs no copy: x is the operand.
    const NodePtr w = reshape(weight, Shape{groups, out_per_group, per_group * taps}, op);
    bool pointwise = taps == 1;
    for (std::size_t i = 0; i < dims; ++i)
        pointwise = pointwise && spec.stride[i] == 1 && spec.pad_before[i] == 0 && spec.pad_after[i] == 0;
    if (pointwise) {
        const NodePtr columns = reshape(x, Shape{batch, groups, per_group, spots}, op);
        return conv::with_bias(reshape(matmul(w, columns), result, op), bias);
    }
    Shape grouped{batch, groups, per_group};  // the windows as [N, G, C/G, out..., kernel...]
    for (std::int64_t e : out) grouped.push_back(e);
    for (std::int64_t k : kernel) grouped.push_back(k);
    const NodePtr windows =
        reshape(conv::windows(x, kernel, spec, Scalar::of<std::int64_t>(0).cast(x->dtype), op), grouped, op);
    if (spots >= conv::kWideEnoughPerSample) {
        // Wide outputs: one product per sample, [N, G, C/G * kernel, out], its result already
        // [N, C_out, out...], so that a bias, activation or residual add fuses into its epilogue.
        Axes order{0, 1, 2};
        for (std::size_t i = 0; i < dims; ++i) order.push_back(static_cast<int>(3 + dims + i));
        for (std::size_t i = 0; i < dims; ++i) order.push_back(static_cast<int>(3 + i));
        const NodePtr columns = reshape(permute(windows, order, op), Shape{batch, groups, per_group * taps, spots}, op);
        return conv::with_bias(reshape(matmul(w, columns), result, op), bias);
    }
    // Narrow outputs (deep layers): one product per group over every sample, [G, C/G * kernel,
    // N * out], a GEMM wide enough to fill the device; its [G, C_out/G, N, out...] result is
    // read as [N, C_out, out...] through a permutation.
    Axes order{1, 2};  // [G, C/G, kernel..., N, out...]
    for (std::size_t i = 0; i < dims; ++i) order.push_back(static_cast<int>(3 + dims + i));
    order.push_back(0);
    for (std::size_t i = 0; i < dims; ++i) order.push_back(static_cast<int>(3 + i));
    const NodePtr columns = reshape(permute(windows, order, op), Shape{groups, per_group * taps, batch * spots}, op);
    Shape product_shape{groups, out_per_group, batch};
    for (std::int64_t e : out) product_shape.push_back(e);
    Axes back{2, 0, 1};
    for (std::size_t i = 0; i < dims; ++i) back.push_back(static_cast<int>(3 + i));
    const NodePtr y = permute(reshape(matmul(w, columns), product_shape, op), back, op);
    return conv::with_bias(reshape(y, result, op), bias);
}

LAZYTENSOR_ENGINE_API NodePtr conv_transpose(const NodePtr& x, const NodePtr& weight, const NodePtr& bias,
                                             const ConvSpec& spec, const char* op) {
    using namespace composite;
    conv::check_options(x, spec, op, "input");
    const std::size_t dims = spec.stride.size();
    if (weight->shape.size() != dims + 2)
        fail<ShapeError>(op, ": the weight must have ", dims + 2, " axes ([in channels, out channels / groups, ", dims,
                         " kernel]), got shape ", weight->shape);
    const std::int64_t groups = spec.groups, channels = x->shape[1];
    if (groups < 1) fail<ValueError>(op, ": groups must be at least 1, got ", groups);
    if (weight->shape[0] != channels)
        fail<ShapeError>(op, ": the input has ", channels, " channels (shape ", x->shape, ") but the weight ",
                         weight->shape, " takes ", weight->shape[0], " (its first axis)");
    if (channels % groups != 0)
        fail<ValueError>(op, ": groups = ", groups, " does not divide the input's ", channels, " channels (shape ",
                         x->shape, ")");
    const std::int64_t per_group = channels / groups, out_per_group = weight->shape[1],
                       out_channels = out_per_group * groups;
    conv::check_operands(x, weight, bias, out_channels, op);
    const Shape kernel = conv::spatial(weight->shape), in = conv::spatial(x->shape);
    Shape full, out;  // full: the positions the windows cover; out: after cropping the padding
    for (std::size_t i = 0; i < dims; ++i) {
        if (kernel[i] < 1) fail<ShapeError>(op, ": the weight's kernel ", kernel, " is empty (shape ", weight->shape, ")");
        const std::int64_t extra = spec.output_padding[i];
        if (extra < 0 || (extra >= spec.stride[i] && extra >= spec.dilation[i]))
            fail<ValueError>(op, ": the output padding ", spec.output_padding,
                             " must be at least 0 and smaller than the stride ", spec.stride, " or the dilation ",
                             spec.dilation, " along each axis");
        full.push_back(in[i] == 0 ? 0 : (in[i] - 1) * spec.stride[i] + spec.dilation[i] * (kernel[i] - 1) + 1);
        out.push_back(full[i] + extra - spec.pad_before[i] - spec.pad_after[i]);
        if (in[i] == 0 || out[i] < 1)
            fail<ShapeError>(op, ": the output would have spatial extent ", out[i], " along axis ", 2 + i, " for input ", in, ", kernel ", kernel,
                             ", stride ", spec.stride, ", padding ", spec.pad_before, " before and ", spec.pad_after,
                             " after; every extent must be at least 1");
    }
    const std::int64_t batch = x->shape[0];
    // cols[n, g] = weight[g]^T x[n, g]: [N, G, C_out/G * kernel, in] -> [N, C_out, in..., kernel...],
    // the shape unfold gives a [N, C_out, full...] tensor; fold sums each window element back.
    const NodePtr xs = reshape(x, Shape{batch, groups, per_group, conv::product(in)}, op);
    const NodePtr w = transpose(reshape(weight, Shape{groups, per_group, out_per_group * conv::product(kernel)}, op), -2, -1);
    Shape split{batch, out_channels};
    for (std::int64_t k : kernel) split.push_back(k);
    for (std::int64_t e : in) split.push_back(e);
    Axes order{0, 1};
    for (std::size_t i = 0; i < dims; ++i) order.push_back(static_cast<int>(2 + dims + i));
    for (std::size_t i = 0; i < dims; ++i) order.push_back(static_cast<int>(2 + i));
    NodePtr y = permute(reshape(matmul(w, xs), split, op), order, op);
    Shape source{batch, out_channels};
    SmallVector<std::int64_t, 12> windows;
    for (std::size_t i = 0; i < dims; ++i) {
        source.push_back(full[i]);
        for (std::int64_t v : {static_cast<std::int64_t>(2 + i), kernel[i], spec.stride[i], spec.dilation[i]}) windows.push_back(v);
    }
    y = fold(y, source, windows);
    // Output padding adds zeros after the last window; padding crops.
    Shape before(2 + dims, 0), after(2 + dims, 0);
    for (std::size_t i = 0; i < dims; ++i) after[2 + i] = spec.output_padding[i];
    y = pad(y, before, after, Scalar::of<std::int64_t>(0).cast(y->dtype));
    for (std::size_t i = 0; i < dims; ++i)
        y = slice(y, static_cast<int>(2 + i), spec.pad_before[i], spec.pad_before[i] + out[i], 1);
    return conv::with_bias(y, bias);
}

LAZYTENSOR_ENGINE_API NodePtr scatter_window(const Shape& source, const SmallVector<std::int64_t, 12>& starts_steps,
                                             const NodePtr& values) {
    using namespace composite;
    NodePtr out = values;
    for (std::size_t k = 0; k < source.size(); ++k) {
        std::int64_t start = starts_steps[2 * k], step = starts_steps[2 * k + 1];
        const std::int64_t n = values->shape[k], m = source[k];
        if (n == 0) return nullptr;  // nothing was read
        if (n == 1) step = 1;
        if (step == 0) {
            out = reduce(ReduceOp::Sum, out, Axes{static_cast<int>(k)}, true, "grad");
            step = 1;
        } else if (step < 0) {  // read backwards from start: the same positions, forwards
            out = flip(out, Axes{static_cast<int>(k)});
            start += step * (n - 1);
            step = -step;
        }
        std::int64_t covered = out->shape[k];
        if (step > 1) {  // interleave step - 1 zeros after each element
            Shape lifted = out->shape, spaced = out->shape;
            lifted.insert(k + 1, 1);
            spaced[k] = covered * step;
            Shape before(lifted.size(), 0), after(lifted.size(), 0);
            after[k + 1] = step - 1;
            out = reshape(pad(reshape(out, lifted), before, after, num(0.0)), spaced);
            covered *= step;
        }
        const std::int64_t tail = m - start - covered;  // < 0: the last step's spacing runs past the end
        if (tail < 0) out = slice(out, static_cast<int>(k), 0, covered + tail, 1);
        Shape before(source.size(), 0), after(source.size(), 0);
        before[k] = start;
        after[k] = std::max<std::int64_t>(tail, 0);
        out = pad(out, before, after, num(0.0));
    }
    return out;
}

LAZYTENSOR_ENGINE_API NodePtr fold(const NodePtr& windows, const Shape& source, const SmallVector<std::int64_t, 12>& params) {
    using namespace composite;
    const std::size_t groups = params.size() / 4, rank = source.size();
    std::int64_t taps = 1;
    bool tiles = true;  // windows side by side, without gaps or overlaps (pools whose stride is their size)
    for (std::size_t g = 0; g < groups; ++g) {
        taps *= params[4 * g + 1];
        tiles = tiles && params[4 * g + 2] == params[4 * g + 1] && params[4 * g + 3] == 1;
    }
    if (tiles) {  // each window axis beside its axis, merged, and zeros after the last window
        Axes order;
        Shape merged, after(rank, 0);
        for (std::size_t a = 0; a < rank; ++a) {
            order.push_back(static_cast<int>(a));
            merged.push_back(windows->shape[a]);
            for (std::size_t g = 0; g < groups; ++g) {
                if (params[4 * g] != static_cast<std::int64_t>(a)) continue;
                order.push_back(static_cast<int>(rank + g));
                merged.back() *= params[4 * g + 1];
                after[a] = source[a] - merged.back();
            }
        }
        return pad(reshape(permute(windows, order), merged), Shape(rank, 0), after,
                   Scalar::of<std::int64_t>(0).cast(windows->dtype));
    }
    if (groups > 1 && taps > conv::kMostFoldTerms) {
        // Axis by axis, the last window axis first: into the windows of the other axes.
        const SmallVector<std::int64_t, 12> last(params.end() - 4, params.end()), rest(params.begin(), params.end() - 4);
        Shape partial = windows->shape;
        partial.pop_back();
        partial[static_cast<std::size_t>(last[0])] = source[static_cast<std::size_t>(last[0])];
        return fold(fold(windows, partial, last), source, rest);
    }
    // Window element j of window o lands at p = o * step + j * dilation along each folded axis.
    // Split p by its residue, p = q * step + r: within one residue class every tap lands on
    // consecutive q (q = o + (j * dilation - r) / step), so a class is a sum of windows placed
    // with step 1 (one kernel); the classes then interleave once, along a new axis of extent
    // step beside each folded axis, merged into it. (One class, and no interleave, where every
    // step is 1.)
    const NodePtr zeros = constant(Scalar::of<std::int64_t>(0).cast(windows->dtype), windows->dtype, source, windows->device);
    if (numel(windows->shape) == 0) return zeros;
    const Shape placed(windows->shape.begin(), windows->shape.begin() + static_cast<std::ptrdiff_t>(rank));
    Shape class_shape = source;  // q along each folded axis
    std::int64_t classes = 1;
    std::vector<std::int64_t> step_of(rank, 1);
    for (std::size_t g = 0; g < groups; ++g) {
        const auto axis = static_cast<std::size_t>(params[4 * g]);
        step_of[axis] = params[4 * g + 2];
        class_shape[axis] = (source[axis] + step_of[axis] - 1) / step_of[axis];
        classes *= step_of[axis];
    }
    // Devices that test every read against the padding (the host) compute each class into a
    // buffer of its own, and the interleave into another, rather than all in one kernel.
    const bool through_buffers = classes > 1 && device_policy(windows->device).windows_through_buffers();
    const Scalar zero = Scalar::of<std::int64_t>(0).cast(windows->dtype);
    NodePtr total;
    for (std::int64_t c = 0; c < classes; ++c) {
        std::vector<std::int64_t> residue(rank, 0);
        for (std::size_t a = rank, rest = static_cast<std::size_t>(c); a-- > 0;) {
            residue[a] = static_cast<std::int64_t>(rest % static_cast<std::size_t>(step_of[a]));
            rest /= static_cast<std::size_t>(step_of[a]);
        }
        NodePtr sum;
        for (std::int64_t t = 0; t < taps; ++t) {
            SmallVector<std::int64_t, 12> starts_steps;
            for (std::size_t a = 0; a < rank; ++a) {
                starts_steps.push_back(0);
                starts_steps.push_back(1);
            }
            NodePtr values = windows;
            bool in_class = true;
            for (std::size_t g = groups, rest = static_cast<std::size_t>(t); g-- > 0;) {  // the last window axis fastest
                const std::int64_t size = params[4 * g + 1], j = static_cast<std::int64_t>(rest % static_cast<std::size_t>(size));
                rest /= static_cast<std::size_t>(size);
                const auto axis = static_cast<std::size_t>(params[4 * g]);
                const std::int64_t at = j * params[4 * g + 3];
                in_class = in_class && at % step_of[axis] == residue[axis];
                starts_steps[2 * axis] = at / step_of[axis];
                values = slice(values, static_cast<int>(rank + g), j, j + 1, 1);
            }
            if (!in_class) continue;
            const NodePtr term = scatter_window(class_shape, starts_steps, reshape(values, placed));
            sum = sum ? add(sum, term) : term;
        }
        if (!sum) continue;  // no tap lands in this class (a dilation that is a multiple of the step)
        if (classes > 1) {  // at its residue along new axes beside the folded ones
            if (through_buffers) sum->own_buffer = true;
            Shape lifted, before, after;
            for (std::size_t a = 0; a < rank; ++a) {
                lifted.push_back(class_shape[a]);
                before.push_back(0);
                after.push_back(0);
                if (step_of[a] == 1) continue;
                lifted.push_back(1);
                before.push_back(residue[a]);
                after.push_back(step_of[a] - 1 - residue[a]);
            }
            sum = pad(reshape(sum, lifted), before, after, zero);
        }
        total = total ? add(total, sum) : sum;
    }
    if (classes == 1) return total;
    if (through_buffers) total->own_buffer = true;
    Shape merged;
    for (std::size_t a = 0; a < rank; ++a) merged.push_back(class_shape[a] * step_of[a]);
    NodePtr out = reshape(total, merged);
    for (std::size_t a = 0; a < rank; ++a)
        if (merged[a] != source[a]) out = slice(out, static_cast<int>(a), 0, source[a], 1);
    return out;
}

LAZYTENSOR_ENGINE_API std::array<NodePtr, 2> max_pool(const NodePtr& x, const Shape& kernel, const ConvSpec& given,
                                                      const char* op) {
    using namespace composite;
    conv::check_pool(x, kernel, given, op);
    const ConvSpec spec = conv::rounded_up(x, kernel, given);
    const std::size_t dims = kernel.size();
    const NodePtr win = conv::windows(x, kernel, spec, conv::lowest(x->dtype), op);
    const Axes axes = conv::window_axes(dims);
    const NodePtr best = reduce(ReduceOp::Max, win, axes, true, op);
    NodePtr hit = binary(BinaryOp::Eq, win, best);
    if (is_floating(x->dtype)) {  // a NaN is the maximum (max propagates it) and equals nothing
        const NodePtr nan_window = binary(BinaryOp::Ne, best, best);
        const NodePtr in_nan_window = where(nan_window, win, Scalar::of<std::int64_t>(0).cast(x->dtype));
        hit = binary(BinaryOp::Maximum, hit, binary(BinaryOp::Ne, in_nan_window, in_nan_window));
    }
    if (conv::padded(spec))  // padding never wins a tie
        hit = both(hit, conv::windows(constant(Scalar::of<bool>(true), DType::Bool, x->shape, x->device), kernel, spec,
                                      Scalar::of<bool>(false), op));
    // Each window element's position in the padded plane: increasing in window order, so the
    // least position that holds the maximum is the first.
    Shape plane;  // padded extents
    for (std::size_t i = 0; i < dims; ++i) plane.push_back(x->shape[2 + i] + spec.pad_before[i] + spec.pad_after[i]);
    Strides coefs(win->shape.size(), 0);
    for (std::size_t i = 0; i < dims; ++i) {
        const std::int64_t row = conv::product(plane, i + 1);
        coefs[2 + i] = spec.stride[i] * row;
        coefs[2 + dims + i] = spec.dilation[i] * row;
    }
    const NodePtr position = index(win->shape, coefs, x->device);
    const NodePtr first_kept = reduce(ReduceOp::Min, where(hit, position, whole(conv::product(plane))), axes, true, op);
    const NodePtr first = reshape(first_kept, Shape(first_kept->shape.begin(), first_kept->shape.end() - static_cast<std::ptrdiff_t>(dims)), op);
    // The padded-plane position -> the flat index into the input's plane.
    NodePtr rest = first, flat;
    for (std::size_t i = 0; i < dims; ++i) {
        const std::int64_t row = conv::product(plane, i + 1);
        NodePtr at = sub(floor_divide(rest, whole(row)), whole(spec.pad_before[i]));
        if (i + 1 < dims) rest = remainder(rest, whole(row));
        flat = flat ? add(mul(flat, whole(x->shape[2 + i])), at) : at;
    }
    // The value at the first maximum, selected within its window rather than gathered from the
    // input: a gather's gradient compares every input position with every output one, this
    // one's is a fold, taps x the output. The max of the window with the others at the lowest
    // value is exact (-0 included), but its gradient splits among ties, and a window's -inf ties
    // with that lowest value; the sum with the others at 0 hands all of the gradient to the one
    // element, but turns -0 into +0. So: the sum, and the max where the sum is 0. (Integers: the
    // max, as a sum would widen them.)
    // (The comparison is built once per reduction: one node read by both would be stored.)
    auto at_first = [&] { return binary(BinaryOp::Eq, position, first_kept); };
    NodePtr values = reduce(ReduceOp::Max, where(at_first(), win, conv::lowest(x->dtype)), axes, false, op);
    if (is_floating(x->dtype)) {
        const NodePtr sum = reduce(ReduceOp::Sum, where(at_first(), win, num(0.0)), axes, false, op);
        values = where(binary(BinaryOp::Eq, sum, num(0.0)), values, sum);
    }
    // A dilated window can miss the input altogether: its maximum is the lowest value (PyTorch's
    // -inf) and its position -1.
    const NodePtr empty = binary(BinaryOp::Eq, first, whole(conv::product(plane)));
    return {where(empty, conv::lowest(x->dtype), values), where(empty, whole(-1), flat)};
}

LAZYTENSOR_ENGINE_API NodePtr avg_pool(const NodePtr& x, const Shape& kernel, const ConvSpec& given, bool count_include_pad,
                                       std::int64_t divisor, const char* op) {
    using namespace composite;
    conv::check_pool(x, kernel, given, op);
    const ConvSpec spec = conv::rounded_up(x, kernel, given);
    const std::size_t dims = kernel.size();
    const NodePtr v = floating_operand(x, op);
    const Axes axes = conv::window_axes(dims);
    const NodePtr total = reduce(ReduceOp::Sum, conv::windows(v, kernel, spec, num(0.0), op), axes, false, op);
    if (divisor > 0) return div(total, num(static_cast<double>(divisor)));
    bool rounded = false;  // ceil_mode added windows that run past the padding
    for (std::size_t i = 0; i < dims; ++i) rounded = rounded || spec.pad_after[i] != given.pad_after[i];
    if ((count_include_pad && !rounded) || !conv::padded(spec))
        return div(total, num(static_cast<double>(conv::product(kernel))));
    // The count of each window's elements inside the input, or inside the padded input: ones
    // (padded with ones where the padding counts), windows of them with zeros past that.
    NodePtr inside = constant(Scalar::of<std::int64_t>(1).cast(v->dtype), v->dtype, v->shape, v->device);
    ConvSpec beyond = spec;
    if (count_include_pad) {
        inside = pad(inside, conv::leading_zeros(given.pad_before, 2), conv::leading_zeros(given.pad_after, 2), num(1.0));
        for (std::size_t i = 0; i < dims; ++i) {
            beyond.pad_before[i] = 0;
            beyond.pad_after[i] = spec.pad_after[i] - given.pad_after[i];
        }
    }
    return div(total, reduce(ReduceOp::Sum, conv::windows(inside, kernel, beyond, num(0.0), op), axes, false, op));
}

}  // namespace lazytensor::detail::graph
