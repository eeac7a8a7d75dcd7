// SPDX-License-Identifier: MIT
// Helpers of the bench tools that drive OpenCL directly (gemm_kernel_binary).
#pragma once

#include <CL/cl.h>

#include <string>
#include <vector>

/// The device such a tool runs on: the first GPU, else the first OpenCL device; null if none.
inline cl_device_id first_gpu_or_device() {
    cl_platform_id platforms[8];
    cl_uint count = 0;
    if (clGetPlatformIDs(8, platforms, &count) != CL_SUCCESS) return nullptr;
    cl_device_id device = nullptr;
    for (cl_device_type type : {cl_device_type(CL_DEVICE_TYPE_GPU), cl_device_type(CL_DEVICE_TYPE_ALL)})
        for (cl_uint i = 0; i < count && !device; ++i)
            if (clGetDeviceIDs(platforms[i], type, 1, &device, nullptr) != CL_SUCCESS) device = nullptr;
    return device;
}

/// A program's binary for its one device (on NVIDIA, PTX text).
inline std::vector<unsigned char> binary_of(cl_program program) {
    std::size_t size = 0;
    clGetProgramInfo(program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr);
    std::vector<unsigned char> binary(size);
    unsigned char* at = binary.data();
    clGetProgramInfo(program, CL_PROGRAM_BINARIES, sizeof at, &at, nullptr);
    return binary;
}
