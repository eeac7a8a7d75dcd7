// SPDX-License-Identifier: MIT
// The OpenCL C API as lazytensor uses it: OpenCL 1.2 entry points only (every ICD loader and
// driver has them), every status checked and reported by name, and small RAII owners.
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#if defined(__APPLE__)
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif

#include <string>
#include <utility>
#include <vector>

#include "../../core/error.hpp"

namespace lazytensor::detail::opencl {

/// CL_OUT_OF_RESOURCES for -5, and so on for every status OpenCL 1.2 defines.
inline const char* status_name(cl_int status) {
    switch (status) {
#define LAZYTENSOR_CL_STATUS(name, value) \
    case value: return #name;
        LAZYTENSOR_CL_STATUS(CL_SUCCESS, 0)
        LAZYTENSOR_CL_STATUS(CL_DEVICE_NOT_FOUND, -1)
        LAZYTENSOR_CL_STATUS(CL_DEVICE_NOT_AVAILABLE, -2)
        LAZYTENSOR_CL_STATUS(CL_COMPILER_NOT_AVAILABLE, -3)
        LAZYTENSOR_CL_STATUS(CL_MEM_OBJECT_ALLOCATION_FAILURE, -4)
        LAZYTENSOR_CL_STATUS(CL_OUT_OF_RESOURCES, -5)
        LAZYTENSOR_CL_STATUS(CL_OUT_OF_HOST_MEMORY, -6)
        LAZYTENSOR_CL_STATUS(CL_PROFILING_INFO_NOT_AVAILABLE, -7)
        LAZYTENSOR_CL_STATUS(CL_MEM_COPY_OVERLAP, -8)
        LAZYTENSOR_CL_STATUS(CL_IMAGE_FORMAT_MISMATCH, -9)
        LAZYTENSOR_CL_STATUS(CL_IMAGE_FORMAT_NOT_SUPPORTED, -10)
        LAZYTENSOR_CL_STATUS(CL_BUILD_PROGRAM_FAILURE, -11)
        LAZYTENSOR_CL_STATUS(CL_MAP_FAILURE, -12)
        LAZYTENSOR_CL_STATUS(CL_MISALIGNED_SUB_BUFFER_OFFSET, -13)
        LAZYTENSOR_CL_STATUS(CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST, -14)
        LAZYTENSOR_CL_STATUS(CL_COMPILE_PROGRAM_FAILURE, -15)
        LAZYTENSOR_CL_STATUS(CL_LINKER_NOT_AVAILABLE, -16)
        LAZYTENSOR_CL_STATUS(CL_LINK_PROGRAM_FAILURE, -17)
        LAZYTENSOR_CL_STATUS(CL_DEVICE_PARTITION_FAILED, -18)
        LAZYTENSOR_CL_STATUS(CL_KERNEL_ARG_INFO_NOT_AVAILABLE, -19)
        LAZYTENSOR_CL_STATUS(CL_INVALID_VALUE, -30)
        LAZYTENSOR_CL_STATUS(CL_INVALID_DEVICE_TYPE, -31)
        LAZYTENSOR_CL_STATUS(CL_INVALID_PLATFORM, -32)
        LAZYTENSOR_CL_STATUS(CL_INVALID_DEVICE, -33)
        LAZYTENSOR_CL_STATUS(CL_INVALID_CONTEXT, -34)
        LAZYTENSOR_CL_STATUS(CL_INVALID_QUEUE_PROPERTIES, -35)
        LAZYTENSOR_CL_STATUS(CL_INVALID_COMMAND_QUEUE, -36)
        LAZYTENSOR_CL_STATUS(CL_INVALID_HOST_PTR, -37)
        LAZYTENSOR_CL_STATUS(CL_INVALID_MEM_OBJECT, -38)
        LAZYTENSOR_CL_STATUS(CL_INVALID_IMAGE_FORMAT_DESCRIPTOR, -39)
        LAZYTENSOR_CL_STATUS(CL_INVALID_IMAGE_SIZE, -40)
        LAZYTENSOR_CL_STATUS(CL_INVALID_SAMPLER, -41)
        LAZYTENSOR_CL_STATUS(CL_INVALID_BINARY, -42)
        LAZYTENSOR_CL_STATUS(CL_INVALID_BUILD_OPTIONS, -43)
        LAZYTENSOR_CL_STATUS(CL_INVALID_PROGRAM, -44)
        LAZYTENSOR_CL_STATUS(CL_INVALID_PROGRAM_EXECUTABLE, -45)
        LAZYTENSOR_CL_STATUS(CL_INVALID_KERNEL_NAME, -46)
        LAZYTENSOR_CL_STATUS(CL_INVALID_KERNEL_DEFINITION, -47)
        LAZYTENSOR_CL_STATUS(CL_INVALID_KERNEL, -48)
        LAZYTENSOR_CL_STATUS(CL_INVALID_ARG_INDEX, -49)
        LAZYTENSOR_CL_STATUS(CL_INVALID_ARG_VALUE, -50)
        LAZYTENSOR_CL_STATUS(CL_INVALID_ARG_SIZE, -51)
        LAZYTENSOR_CL_STATUS(CL_INVALID_KERNEL_ARGS, -52)
        LAZYTENSOR_CL_STATUS(CL_INVALID_WORK_DIMENSION, -53)
        LAZYTENSOR_CL_STATUS(CL_INVALID_WORK_GROUP_SIZE, -54)
        LAZYTENSOR_CL_STATUS(CL_INVALID_WORK_ITEM_SIZE, -55)
        LAZYTENSOR_CL_STATUS(CL_INVALID_GLOBAL_OFFSET, -56)
        LAZYTENSOR_CL_STATUS(CL_INVALID_EVENT_WAIT_LIST, -57)
        LAZYTENSOR_CL_STATUS(CL_INVALID_EVENT, -58)
        LAZYTENSOR_CL_STATUS(CL_INVALID_OPERATION, -59)
        LAZYTENSOR_CL_STATUS(CL_INVALID_GL_OBJECT, -60)
        LAZYTENSOR_CL_STATUS(CL_INVALID_BUFFER_SIZE, -61)
        LAZYTENSOR_CL_STATUS(CL_INVALID_MIP_LEVEL, -62)
        LAZYTENSOR_CL_STATUS(CL_INVALID_GLOBAL_WORK_SIZE, -63)
        LAZYTENSOR_CL_STATUS(CL_INVALID_PROPERTY, -64)
        LAZYTENSOR_CL_STATUS(CL_INVALID_IMAGE_DESCRIPTOR, -65)
        LAZYTENSOR_CL_STATUS(CL_INVALID_COMPILER_OPTIONS, -66)
        LAZYTENSOR_CL_STATUS(CL_INVALID_LINKER_OPTIONS, -67)
        LAZYTENSOR_CL_STATUS(CL_INVALID_DEVICE_PARTITION_COUNT, -68)
        LAZYTENSOR_CL_STATUS(CL_PLATFORM_NOT_FOUND_KHR, -1001)
#undef LAZYTENSOR_CL_STATUS
    }
    return "unknown OpenCL status";
}

/// What a status that means the device went away adds to an error message.
inline const char* lost_device_hint(cl_int status) {
    return status == CL_INVALID_COMMAND_QUEUE || status == CL_DEVICE_NOT_AVAILABLE
               ? "; the device's queue is gone: the device may have been lost or reset"
               : "";
}

/// Throws BackendError naming the call and the status ("clBuildProgram failed: CL_OUT_OF_RESOURCES (-5)").
/// A failed allocation (drivers allocate device memory lazily, so any call that first touches
/// a buffer may report it) is an OutOfMemoryError.
template <class... Context>
inline void check(cl_int status, const char* call, const Context&... context) {
    if (status == CL_MEM_OBJECT_ALLOCATION_FAILURE)
        fail<OutOfMemoryError>("OpenCL: out of memory on the device: ", call, " failed: ", status_name(status), " (", status,
                               ")", (sizeof...(context) ? " " : ""), context...,
                               "; free tensors that are no longer needed and try again");
    if (status != CL_SUCCESS)
        fail<BackendError>("OpenCL: ", call, " failed: ", status_name(status), " (", status, ")",
                           (sizeof...(context) ? " " : ""), context..., lost_device_hint(status));
}

// ------------------------------------------------------------------------------------ queries

template <class T>
T device_value(cl_device_id d, cl_device_info what) {
    T v{};
    check(clGetDeviceInfo(d, what, sizeof(T), &v, nullptr), "clGetDeviceInfo");
    return v;
}

/// A string property through a clGet*Info call: `get(size, buffer, &size_needed)`.
template <class Get>
std::string info_string(Get get, const char* call) {
    std::size_t n = 0;
    check(get(0, nullptr, &n), call);
    std::string s(n, '\0');
    check(get(n, s.data(), nullptr), call);
    while (!s.empty() && (s.back() == '\0' || s.back() == ' ')) s.pop_back();
    return s;
}

inline std::string device_string(cl_device_id d, cl_device_info what) {
    return info_string([&](std::size_t n, void* v, std::size_t* r) { return clGetDeviceInfo(d, what, n, v, r); },
                       "clGetDeviceInfo");
}

inline std::string platform_string(cl_platform_id p, cl_platform_info what) {
    return info_string([&](std::size_t n, void* v, std::size_t* r) { return clGetPlatformInfo(p, what, n, v, r); },
                       "clGetPlatformInfo");
}

/// Every OpenCL device of every platform, in platform order: the N of "opencl:N". An absent
/// ICD loader configuration (no platform) is an empty list, not an error.
inline std::vector<std::pair<cl_platform_id, cl_device_id>> list_devices() {
    std::vector<std::pair<cl_platform_id, cl_device_id>> out;
    cl_uint np = 0;
    if (clGetPlatformIDs(0, nullptr, &np) != CL_SUCCESS || np == 0) return out;
    std::vector<cl_platform_id> platforms(np);
    if (clGetPlatformIDs(np, platforms.data(), nullptr) != CL_SUCCESS) return out;
    for (cl_platform_id p : platforms) {
        cl_uint nd = 0;
        if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, 0, nullptr, &nd) != CL_SUCCESS || nd == 0) continue;
        std::vector<cl_device_id> ds(nd);
        if (clGetDeviceIDs(p, CL_DEVICE_TYPE_ALL, nd, ds.data(), nullptr) != CL_SUCCESS) continue;
        for (cl_device_id d : ds) out.emplace_back(p, d);
    }
    return out;
}

// --------------------------------------------------------------------------------- RAII owners

struct ProgramOwner {
    cl_program program = nullptr;
    explicit ProgramOwner(cl_program p = nullptr) : program(p) {}
    ProgramOwner(const ProgramOwner&) = delete;
    ProgramOwner& operator=(const ProgramOwner&) = delete;
    ~ProgramOwner() {
        if (program) clReleaseProgram(program);
    }
};

struct KernelOwner {
    cl_kernel kernel = nullptr;
    KernelOwner() = default;
    explicit KernelOwner(cl_kernel k) : kernel(k) {}
    KernelOwner(KernelOwner&& o) noexcept : kernel(std::exchange(o.kernel, nullptr)) {}
    KernelOwner(const KernelOwner&) = delete;
    KernelOwner& operator=(const KernelOwner&) = delete;
    ~KernelOwner() {
        if (kernel) clReleaseKernel(kernel);
    }
};

}  // namespace lazytensor::detail::opencl
