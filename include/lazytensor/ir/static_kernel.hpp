// SPDX-License-Identifier: MIT
// Static kernels: compiled-in implementations of element-wise kernels, offered by expression
// templates. An interpreter evaluates one op at a time over a block; a compiled loop keeps
// every intermediate in registers and overlaps memory with arithmetic, which is what a chain
// like exp(a) * b + c * 0.5f - tanh(a) needs to run at the speed of hand-written code.
//
// The expression's C++ type is its tree (VexCL's insight), so the compiler can generate that
// loop. The graph node an expression becomes carries a pointer to it; when the kernel the
// scheduler makes from that node has exactly the expression's structure (checked op by op
// against the IR), the host backend runs the compiled loop instead of interpreting the IR.
// Both use the same SIMD functors, so they give the same results.
#pragma once

#include <cstdint>
#include <vector>

#include "kernel.hpp"

namespace lazytensor::detail {

/// Which IR instruction each leaf of a static kernel reads.
struct StaticBinding {
    std::vector<int> leaf_loads;  // per tensor leaf: index of its Load instruction
    // Per scalar leaf: the kernel's scalar parameter it reads (passed at launch), or -1 for a
    // literal whose value is in `consts`.
    std::vector<int> scalar_params;
    std::vector<Scalar> consts;
};

/// One tensor leaf as seen by a run of lanes: lane t reads ptr[t * step].
struct LeafView {
    const void* ptr = nullptr;
    std::int64_t step = 1;
};

class StaticKernel {
public:
    virtual ~StaticKernel() = default;
    /// Whether `k` computes exactly this expression; on success fills `binding`.
    virtual bool match(const ir::Kernel& k, StaticBinding& binding) const = 0;
    /// Computes `n` lanes: leaves read through `leaves`, scalar parameters are `scalars` (the
    /// launch's), results go to out[t * out_step].
    virtual void run(const StaticBinding& binding, const Scalar* scalars, const LeafView* leaves, void* out,
                     std::int64_t out_step, std::int64_t n, bool stream) const = 0;
};

}  // namespace lazytensor::detail
