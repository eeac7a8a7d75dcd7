// SPDX-License-Identifier: MIT
// Winograd F(4x4, 3x3) (Lavin and Gray, "Fast Algorithms for Convolutional Neural Networks",
// 2015; the points 0, +-1, +-2 and infinity, as cuDNN's): a 3x3 convolution of stride 1 as
// products of transformed 6x6 input tiles and transformed weights, 36 multiplications per 4x4
// outputs and input channel where the direct form needs 144. Written with the graph's own
// nodes (views, element-wise code, sums, one batched product), so every backend runs it, the
// scheduler fuses around it and the gradient follows from the nodes' rules:
//   U = G g G^T      [36, C_out, C_in]    one sum over the 9 taps
//   V = B^T d B      [36, C_in, tiles]     d: 6x6 tiles at stride 4 of the padded input (a view);
//                                          two sums of 6 terms (rows, stored; then columns)
//   M = U V          [36, C_out, tiles]    one batched product (the engine's GEMM item)
//   Y = A^T M A      [N, C_out, H, W]      two sums of 6 terms (the second adds the bias), both
//                                          stored; the 4x4 tiles laid side by side and cropped by views
// The matrices are small computed constants (one buffer of 78 values, one small kernel). So on
// OpenCL: 6 kernels and the product, and what reads Y (an activation, a residual add) is a
// kernel of its own. Each sum's summed axis leads, so that OpenCL runs it as a "column"
// reduction (a work-item per output, its terms in a loop), not a work-group of 64 lanes per
// output as for a summed last axis.
// Included by convolution_definitions.hpp (the engine's unit).
#pragma once

#include "convolution.hpp"

#if !LAZYTENSOR_ENGINE_DEFINITIONS
#error "lazytensor: ir/convolution_winograd.hpp holds definitions of the runtime; a LAZYTENSOR_SEPARATE_RUNTIME unit must not include it"
#endif

#include <array>

#include "../core/env.hpp"
#include "device_policy.hpp"

namespace lazytensor::detail::graph::conv {

/// LAZYTENSOR_CONV_WINOGRAD: 0 auto (the device policy decides), 1 on, 2 off.
inline int winograd_mode() {
    return env_choice("LAZYTENSOR_CONV_WINOGRAD", {"auto", "on", "off"}, 0,
                      "auto (the device decides), on (every 2-D 3x3 convolution of stride 1, dilation 1, one group, "
                      "float32 or float64) or off");
}

/// Whether the convolution of x [N, C_in, H, W] by weight [C_out, C_in, 3, 3] with `spec`
/// runs as Winograd F(4x4, 3x3): it must be one (2-D, 3x3, stride 1, dilation 1, one group,
/// float32 or float64, not empty), and LAZYTENSOR_CONV_WINOGRAD=on, or unset (auto) with at
/// least the device policy's winograd_min_channels channels in and out.
inline bool winograd_applies(const NodePtr& x, const NodePtr& weight, const ConvSpec& spec) {
    const int mode = winograd_mode();  // (read for every convolution: a bad value is an error at once)
    if (mode == 2 || spec.stride.size() != 2 || spec.groups != 1) return false;
    if (x->dtype != DType::Float32 && x->dtype != DType::Float64) return false;
    if (weight->shape[2] != 3 || weight->shape[3] != 3) return false;
    for (std::size_t i = 0; i < 2; ++i)
        if (spec.stride[i] != 1 || spec.dilation[i] != 1) return false;
    if (numel(x->shape) == 0 || weight->shape[0] == 0) return false;
    if (mode == 1) return true;
    const std::int64_t least = device_policy(x->device).winograd_min_channels();
    return least > 0 && x->shape[1] >= least && weight->shape[0] >= least;
}

/// The transforms' matrices G [6, 3], B^T [6, 6] and A^T [4, 6] of dtype t, computed once per
/// realize into one buffer of 78 values (element-wise selects over the position) and read from
/// it as views, so that the transforms load them rather than recompute them per element.
inline std::array<NodePtr, 3> winograd_matrices(DType t, Device d) {
    using namespace composite;
    static constexpr double values[] = {
        1.0 / 4,  0,         0,         // G: 6 x 3
        -1.0 / 6, -1.0 / 6,  -1.0 / 6,  //
        -1.0 / 6, 1.0 / 6,   -1.0 / 6,  //
        1.0 / 24, 1.0 / 12,  1.0 / 6,   //
        1.0 / 24, -1.0 / 12, 1.0 / 6,   //
        0,        0,         1,         //
        4, 0, -5, 0, 1, 0,              // B^T: 6 x 6
        0, -4, -4, 1, 1, 0,             //
        0, 4, -4, -1, 1, 0,             //
        0, -2, -1, 2, 1, 0,             //
        0, 2, -1, -2, 1, 0,             //
        0, 4, 0, -5, 0, 1,              //
        1, 1, 1, 1, 1, 0,               // A^T: 4 x 6
        0, 1, -1, 2, -2, 0,             //
        0, 1, 1, 4, 4, 0,               //
        0, 1, -1, 8, -8, 1,
    };
    constexpr std::int64_t count = static_cast<std::int64_t>(sizeof(values) / sizeof(values[0]));
    static_assert(count == 18 + 36 + 24, "G, B^T and A^T");
    const NodePtr at = iota(Shape{count}, 0, d);
    NodePtr all = constant(Scalar::of<double>(0.0).cast(t), t, Shape{count}, d);
    for (std::int64_t k = 0; k < count; ++k)
        if (values[k] != 0.0) all = where(equal(at, whole(k)), Scalar::of<double>(values[k]).cast(t), all);
    all->own_buffer = true;
    return {reshape(slice(all, 0, 0, 18, 1), Shape{6, 3}), reshape(slice(all, 0, 18, 54, 1), Shape{6, 6}),
            reshape(slice(all, 0, 54, 78, 1), Shape{4, 6})};
}

/// The F(4x4, 3x3) convolution (see the top of this file), with the bias if not null; `out`
/// is the output's spatial extent. The padded input is cut into tiles of 6 at stride 4, with
/// zeros after it up to the last tile's end (what lies beyond `out` is computed and cropped).
inline NodePtr winograd(const NodePtr& x, const NodePtr& weight, const NodePtr& bias, const ConvSpec& spec,
                        const Shape& out, const char* op) {
    using namespace composite;
    const DType t = x->dtype;
    const Device d = x->device;
    const std::int64_t batch = x->shape[0], channels = x->shape[1], out_channels = weight->shape[0];
    const std::int64_t rows = (out[0] + 3) / 4, cols = (out[1] + 3) / 4, tiles = batch * rows * cols;
    const auto [g, bt, at] = winograd_matrices(t, d);
    // The matrices read transposed ([k, a]): the summed axis leads.
    const NodePtr gt = permute(g, Axes{1, 0}, op), btt = permute(bt, Axes{1, 0}, op), att = permute(at, Axes{1, 0}, op);
    // U[a, b, o, c] = sum over k, l of G[a, k] G[b, l] w[o, c, k, l].
    const NodePtr gg = mul(reshape(gt, Shape{3, 1, 6, 1, 1, 1}, op), reshape(gt, Shape{1, 3, 1, 6, 1, 1}, op));
    const NodePtr taps = reshape(permute(weight, Axes{2, 3, 0, 1}, op), Shape{3, 3, 1, 1, out_channels, channels}, op);
    const NodePtr u = reduce(ReduceOp::Sum, mul(gg, taps), Axes{0, 1}, false, op);
    // V[a, b, c, n, r, s] = sum over i, j of B^T[a, i] B^T[b, j] d[n, c, r, s, i, j], d the
    // tiles of the input padded to 4 * tiles + 2 along each axis.
    Shape before{0, 0}, after{0, 0};
    for (std::size_t i = 0; i < 2; ++i) {
        before.push_back(spec.pad_before[i]);
        after.push_back(4 * ((out[i] + 3) / 4) + 2 - x->shape[2 + i] - spec.pad_before[i]);
    }
    NodePtr padded = pad(x, before, after, Scalar::of<double>(0.0).cast(t));
    if (padded != x && device_policy(d).windows_through_buffers()) padded->own_buffer = true;
    const NodePtr windows = unfold_axes(padded, SmallVector<std::int64_t, 12>{2, 6, 4, 1, 3, 6, 4, 1}, op);
    // Two sums of 6 terms (along the tile's rows, then its columns; the first stored) rather
    // than one of 36: on PoCL the 128-channel layer's transform (batch 4) took 14.7 ms so
    // against 105.
    const NodePtr d_rows =
        reshape(permute(windows, Axes{4, 5, 1, 0, 2, 3}, op), Shape{6, 1, 6, channels, batch, rows, cols}, op);
    // (Sums that keep their summed axis: the node flagged is the sum itself, not a reshape of
    // it that a later reshape would skip.)
    const NodePtr v_rows = reduce(ReduceOp::Sum, mul(reshape(btt, Shape{6, 6, 1, 1, 1, 1, 1}, op), d_rows), Axes{0}, true, op);
    v_rows->own_buffer = true;  // [1, a, j, c, n, r, s]
    const NodePtr v_cols =
        reshape(permute(v_rows, Axes{0, 2, 1, 3, 4, 5, 6}, op), Shape{6, 6, 1, channels, batch, rows, cols}, op);
    const NodePtr v = reduce(ReduceOp::Sum, mul(reshape(btt, Shape{6, 1, 6, 1, 1, 1, 1}, op), v_cols), Axes{0}, false, op);
    // M[ab] = U[ab] V[ab]: one batched product of 36.
    const NodePtr m = matmul(reshape(u, Shape{36, out_channels, channels}, op), reshape(v, Shape{36, channels, tiles}, op));
    // Y[n, o, r, p, s, q] = sum over a, b of A^T[p, a] A^T[q, b] M[a, b, o, n, r, s], in two sums
    // of 6 terms as V, the first stored as [b, n, o, r, p, s]. Stored in the order [n, o, r, p,
    // s, q], Y is [N, C_out, 4 * rows, 4 * cols], cropped by a view; the bias is added in the
    // second sum's kernel, and what reads Y (an activation, a residual add) is a kernel of its own.
    const NodePtr m_rows = reshape(permute(reshape(m, Shape{6, 6, out_channels, batch, rows, cols}, op),
                                           Axes{0, 1, 3, 2, 4, 5}, op),
                                   Shape{6, 6, batch, out_channels, rows, 1, cols}, op);
    const NodePtr y_rows =
        reduce(ReduceOp::Sum, mul(reshape(att, Shape{6, 1, 1, 1, 1, 4, 1}, op), m_rows), Axes{0}, true, op);
    y_rows->own_buffer = true;
    const NodePtr y_cols = reshape(y_rows, Shape{6, batch, out_channels, rows, 4, cols, 1}, op);
    NodePtr y = reduce(ReduceOp::Sum, mul(reshape(att, Shape{6, 1, 1, 1, 1, 1, 4}, op), y_cols), Axes{0}, true, op);
    if (bias) y = add(y, reshape(bias, Shape{1, 1, out_channels, 1, 1, 1, 1}, op));
    // Its own buffer, so that the merge of (r, p) and (s, q) below is a view of it (fused with
    // what reads it, the sum's operand would be stored first: six times the output).
    y->own_buffer = true;
    y = reshape(y, Shape{batch, out_channels, 4 * rows, 4 * cols}, op);
    for (std::size_t i = 0; i < 2; ++i)
        if (y->shape[2 + i] != out[i]) y = slice(y, static_cast<int>(2 + i), 0, out[i], 1);
    return y;
}

}  // namespace lazytensor::detail::graph::conv
