// SPDX-License-Identifier: MIT
// The OpenCL backend's decisions that graph builders and the scheduler make (ir/device_policy.hpp).
#pragma once

#include <algorithm>
#include <cstdint>

#include "../../ir/device_policy.hpp"

namespace lazytensor::detail::opencl {

class OpenCLPolicy final : public DevicePolicy {
public:
    explicit OpenCLPolicy(bool gpu) : gpu_(gpu) {}

    /// On a CPU device (PoCL), a product with at most kThinProduct rows or columns (matrix x
    /// vector, vector x matrix, a few columns; batched too) or with k = 1 runs as a reduction
    /// kernel once it moves kThinElements elements or more (its largest operand or its result):
    /// CLBlast's GEMM pads such a product to its tiles and ran [100000, 64] x [64] at 0.3-0.75
    /// GFLOP/s, the reduction 3-5x faster, and up to 8 columns 4-9x faster (16 columns 2x too,
    /// but attention's second product, weights x v, has that many and fuses only as products;
    /// bench/bench_thin_matmul.cpp, bench/README.md). Smaller products cost a launch either way
    /// and keep the GEMM; GPUs keep their GEMM (not measured there).
    static constexpr std::int64_t kThinProduct = 8;
    static constexpr std::int64_t kThinElements = std::int64_t(1) << 16;
    bool product_as_reduction(DType, std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k) const override {
        if (gpu_ || (std::min(m, n) > kThinProduct && k != 1)) return false;
        return batch * std::max({m * k, k * n, m * n}) >= kThinElements;
    }
    // Winograd F(4x4, 3x3) is not chosen by default on any OpenCL device: built from the graph's
    // sums it measured slower than im2col and the GEMM on the H200 (batch 32, 128 channels at 28x28:
    // forward 0.629 ms against 0.272, cuDNN 0.148; the training step of the small CNN 2.34 ms
    // against 0.73), so DevicePolicy's default (never) stands; LAZYTENSOR_CONV_WINOGRAD=on asks for it.
    std::int64_t split_k_parts(std::int64_t batch, std::int64_t m, std::int64_t n, std::int64_t k) const override {
        return split_k_for_many_units(batch, m, n, k);
    }
    // Kernel arguments: 8 bytes each at most; with the output, a scratch buffer and the count
    // of work-items, 128. OpenCL promises only 1024 bytes of them, so a sum of 200 tensors
    // becomes several kernels (the plain policy's 64 buffers and 125 arguments).

private:
    bool gpu_;  // the device is a GPU (CL_DEVICE_TYPE_GPU)
};

}  // namespace lazytensor::detail::opencl
