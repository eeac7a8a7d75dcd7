// SPDX-License-Identifier: MIT
// What the OpenCL backend's routines (kernel_routines.hpp, scan_routines.hpp, sort_routines.hpp,
// gemm_routines.hpp, attention_routines.hpp) run with: the parts of the backend they share.
#pragma once

#include "../backend.hpp"
#include "device.hpp"
#include "launch.hpp"
#include "programs.hpp"

namespace lazytensor::detail::opencl {

struct RoutineContext {
    const OpenCLDevice& device;
    ProgramCache& programs;
    FusedCodeCache& fused_code;  // of the kernels fused into products and scans
    Launcher& launcher;
    // The backend itself, through its interface: temporary buffers come from Backend::allocate
    // (which counts them), and the per-kind caches are as large as its kernel cache.
    Backend& backend;
};

}  // namespace lazytensor::detail::opencl
