// SPDX-License-Identifier: MIT
// The decisions about a device that the graph builders and the scheduler make before anything
// runs: which products are too thin for a GEMM, how a long contraction is split, whether a
// float function is computed through double, how many buffers and arguments a kernel takes.
// Each backend answers for its devices (Backend::policy); the graph layer sees no backend, so
// the engine installs the lookup (device_policy_lookup) when it starts, and a graph built
// without it gets the plain answers below.
#pragma once

#include <algorithm>
#include <cstdint>

#include "../core/device.hpp"
#include "../core/dtype.hpp"

namespace lazytensor::detail {

class DevicePolicy {
public:
    virtual ~DevicePolicy() = default;
    /// Whether a float32 or float64 product of `batch` products of [m, k] x [k, n] runs better
    /// as a reduction kernel (the sum of element-wise products, fused with what reads and feeds
    /// it) than as the backend's GEMM.
    virtual bool product_as_reduction(DType, std::int64_t /*batch*/, std::int64_t /*m*/, std::int64_t /*n*/,
                                      std::int64_t /*k*/) const {
        return false;
    }
    /// How many parts to split the contracted axis of a GEMM into (1: none); the parts are one
    /// batched GEMM of the same work, and their sum one reduction kernel.
    virtual std::int64_t split_k_parts(std::int64_t /*batch*/, std::int64_t /*m*/, std::int64_t /*n*/,
                                       std::int64_t /*k*/) const {
        return 1;
    }
    /// Whether gelu of float32 is computed in float64 (where double's erfc is exact and cheap).
    virtual bool gelu_through_float64() const { return false; }
    /// Whether convolutions and pools go through buffers of their own, one pass more each: the
    /// padded input their windows read (rather than testing every read against the padding),
    /// and a strided fold's residue classes and their interleave (rather than one kernel that
    /// walks runs of the stride's length).
    virtual bool windows_through_buffers() const { return false; }
    /// The fewest input and output channels from which a 2-D 3x3 convolution of stride 1 and
    /// dilation 1 without groups, of float32 or float64, runs as Winograd F(4x4, 3x3): 4x
    /// fewer multiplications in its product, for three transform kernels more (0: never).
    /// LAZYTENSOR_CONV_WINOGRAD=on or off overrides it.
    virtual std::int64_t winograd_min_channels() const { return 0; }
    /// The most buffers one fused kernel reads, and the most arguments it takes (buffers and
    /// scalar values): a kernel that would take more is cut in two.
    virtual int max_fused_inputs() const { return 64; }
    virtual int max_kernel_arguments() const { return 125; }
};

/// BLAS kernels spread a product's output tiles over the compute units; a product whose output
/// is a few tiles but whose k is long (a weight gradient, x^T dy, sums over the batch) leaves
/// most of a GPU idle: split k until there are enough tiles. Tiles of 128 x 128, as BLAS
/// libraries tune them for large GPUs.
inline std::int64_t split_k_for_many_units(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k) {
    if (k < 2048) return 1;  // short sums keep one GEMM (and its schedule)
    const std::int64_t tiles = batch * ((m + 127) / 128) * ((n + 127) / 128);
    std::int64_t parts = 1;
    while (k % (2 * parts) == 0 && k / (2 * parts) >= 256 && tiles * 2 * parts <= 128) parts *= 2;
    return parts;
}

using DevicePolicyLookup = const DevicePolicy& (*)(Device);
/// Set by the engine when it starts: the policy of a device's backend.
inline DevicePolicyLookup& device_policy_lookup() {
    static DevicePolicyLookup lookup = nullptr;
    return lookup;
}
/// The policy of device `d` (the plain one where no engine is installed).
inline const DevicePolicy& device_policy(Device d) {
    static const DevicePolicy plain;
    const DevicePolicyLookup lookup = device_policy_lookup();
    return lookup ? lookup(d) : plain;
}

}  // namespace lazytensor::detail
