// SPDX-License-Identifier: MIT
// Convolutions and pooling as graphs of the existing kinds of work, no path of their own: the
// windows of a padded input are unfold views (index math, no memory), a convolution copies them
// once into the GEMM's operand layout (im2col: the copy kernel the scheduler makes for a reshape
// the index math cannot follow) and multiplies by the weight in one batched product, whose
// epilogue takes the bias and whatever element-wise code reads the result. Gradients follow
// from the nodes' rules: unfold's is fold (col2im), a sum of placed windows in one kernel.
// Pooling reduces over the window axes of the same views, in one kernel.
#pragma once

#include <array>
#include <cstdint>

#include "graph.hpp"

namespace lazytensor::detail::graph {

/// A convolution's or pool's options, one entry per spatial axis: the padding before and after
/// each axis, stride, dilation, and (transposed convolutions only) output padding; and the
/// number of groups the channels are split into. The front end fills every entry.
struct ConvSpec {
    Shape stride, dilation, pad_before, pad_after, output_padding;
    std::int64_t groups = 1;
    bool ceil_mode = false;  // pools: a last window may start inside and run past the padding
};

/// PyTorch's conv1d/2d/3d (cross-correlation): x [N, C_in, spatial...], weight [C_out,
/// C_in / groups, kernel...], bias [C_out] or null; the result is [N, C_out, out...] with
/// out = (in + before + after - dilation * (kernel - 1) - 1) / stride + 1. ShapeError or
/// ValueError, naming `op` and the numbers, for mismatched channels, groups that do not divide
/// them, a kernel larger than the padded input, a stride or dilation below 1, a negative padding,
/// a wrong rank, dtype or device.
LAZYTENSOR_ENGINE_API NodePtr convolution(const NodePtr& x, const NodePtr& weight, const NodePtr& bias, const ConvSpec& spec,
                                          const char* op);

/// PyTorch's conv_transpose1d/2d/3d, the gradient of a convolution with respect to its input:
/// x [N, C_in, in...], weight [C_in, C_out / groups, kernel...], bias [C_out] or null; the
/// result is [N, C_out, out...] with out = (in - 1) * stride - before - after + dilation *
/// (kernel - 1) + output_padding + 1. A batched product, then fold (no multiplications by the
/// zeros a stride would insert). output_padding must be below the stride or the dilation.
LAZYTENSOR_ENGINE_API NodePtr conv_transpose(const NodePtr& x, const NodePtr& weight, const NodePtr& bias,
                                             const ConvSpec& spec, const char* op);

/// The values of a window's source (of shape `source`) from the window's values (a Slice's
/// starts and steps, per axis): each put back at the position it was read from, zeros
/// elsewhere, summed along axes of step 0. A view's gradient, and fold's pieces.
LAZYTENSOR_ENGINE_API NodePtr scatter_window(const Shape& source, const SmallVector<std::int64_t, 12>& starts_steps,
                                             const NodePtr& values);

/// PyTorch's fold (col2im): `windows` has the shape that unfold_axes(x, params) has for an x of
/// shape `source`; the result, of that shape, sums each window element at the position it was
/// read from: one sum of placed windows over every tap (axis by axis where the taps are many).
LAZYTENSOR_ENGINE_API NodePtr fold(const NodePtr& windows, const Shape& source, const SmallVector<std::int64_t, 12>& params);

/// Max pooling: x [N, C, spatial...] padded with the lowest value, windows of `kernel` (spec's
/// stride, dilation and padding; padding at most half the kernel; with ceil_mode, PyTorch's
/// rounding up: one more window where it starts inside the input or the padding before it, its
/// part past the padding ignored). Returns the maxima and their
/// positions (int64, as PyTorch's return_indices: the flat index into each input plane), the
/// first in window order on ties; a NaN wins. The gradient reaches that one position. A dilated
/// window that holds no input element gives the lowest value (-inf) at position -1.
LAZYTENSOR_ENGINE_API std::array<NodePtr, 2> max_pool(const NodePtr& x, const Shape& kernel, const ConvSpec& spec,
                                                      const char* op);

/// Average pooling: x [N, C, spatial...] padded with zeros; each window's sum divided by
/// `divisor` where it is above 0, else by the number of its elements inside the padded input
/// (count_include_pad: the kernel's size, less what a ceil_mode window has past the padding) or
/// inside the input, as PyTorch's.
LAZYTENSOR_ENGINE_API NodePtr avg_pool(const NodePtr& x, const Shape& kernel, const ConvSpec& spec, bool count_include_pad,
                                       std::int64_t divisor, const char* op);

}  // namespace lazytensor::detail::graph

#if LAZYTENSOR_ENGINE_DEFINITIONS
#include "convolution_definitions.hpp"
#endif
