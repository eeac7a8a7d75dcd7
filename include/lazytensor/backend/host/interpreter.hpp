// SPDX-License-Identifier: MIT
// The host interpreter: runs kernel IR on blocks of elements with xsimd (the reference
// semantics for every other backend). A kernel is planned once when it is compiled
// (kernel_plan.hpp: which space the lanes walk, what is hoisted, cached or fused, where every
// register lies) and each launch runs that plan over the thread pool (kernel_exec.hpp).
#pragma once

#include <vector>

#include "../../core/dtype.hpp"
#include "../../ir/kernel.hpp"
#include "../backend.hpp"
#include "kernel_exec.hpp"
#include "kernel_plan.hpp"
#include "thread_pool.hpp"

namespace lazytensor::detail::host {

class HostKernel final : public CompiledKernel {
public:
    HostKernel(const ir::Kernel& k, int threads) : runner_(plan_kernel(k, threads)) {}

    void run(const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars, ThreadPool& pool) const {
        runner_.run(params, scalars, pool);
    }

private:
    KernelRunner runner_;  // holds the plan
};

}  // namespace lazytensor::detail::host
