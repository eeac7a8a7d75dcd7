// SPDX-License-Identifier: MIT
// One OpenCL device as the backend uses it: which devices there are, the context (shared by the
// devices of a platform) and the in-order queue, and the properties the rest of the backend
// asks about (float64, the largest buffer, the vendor, what the renderer needs to know).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "../../core/device.hpp"
#include "../../core/env.hpp"
#include "../../core/error.hpp"
#include "../../ir/kernel.hpp"
#include "cl_api.hpp"
#include "renderer.hpp"

namespace lazytensor::detail::opencl {

/// The OpenCL devices of this machine, listed once.
/// Milliseconds the first opencl_device_ids() took (loading the drivers, listing the platforms
/// and devices), added once to the first device's setup (CompileStats::setup_ms); then 0.
inline std::atomic<std::int64_t>& device_discovery_us() {
    static std::atomic<std::int64_t> us{0};
    return us;
}

inline const std::vector<std::pair<cl_platform_id, cl_device_id>>& opencl_device_ids() {
    static const auto ids = [] {
        const auto start = std::chrono::steady_clock::now();
        auto listed = list_devices();
        device_discovery_us() += std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
        return listed;
    }();
    return ids;
}

/// A context for `device`, retained for the caller: one per platform, shared by every device
/// of it, so that buffers move between those devices with clEnqueueCopyBuffer (transfer.hpp).
/// A context of its own where LAZYTENSOR_OPENCL_SHARED_CONTEXT=off or the driver refuses a
/// shared one; copies between such devices go through host memory.
inline cl_context context_for(cl_platform_id platform, cl_device_id device) {
    if (env_flag("LAZYTENSOR_OPENCL_SHARED_CONTEXT", true)) {
        static std::mutex mutex;
        static auto& shared = *new std::map<cl_platform_id, cl_context>();  // never destroyed, like the backends
        std::lock_guard<std::mutex> lock(mutex);
        auto it = shared.find(platform);
        if (it == shared.end()) {
            std::vector<cl_device_id> all;
            for (const auto& [p, d] : opencl_device_ids())
                if (p == platform) all.push_back(d);
            cl_int err = CL_SUCCESS;
            cl_context c = clCreateContext(nullptr, static_cast<cl_uint>(all.size()), all.data(), nullptr, nullptr, &err);
            it = shared.emplace(platform, err == CL_SUCCESS ? c : nullptr).first;
        }
        if (it->second) {
            check(clRetainContext(it->second), "clRetainContext");
            return it->second;
        }
    }
    cl_int err = CL_SUCCESS;
    cl_context c = clCreateContext(nullptr, 1, &device, nullptr, nullptr, &err);
    check(err, "clCreateContext");
    return c;
}

/// What an OpenCL device is (CL_DEVICE_TYPE), and whose platform runs it: decided once, when
/// the device opens, and compared as values from then on.
enum class DeviceType { Gpu, Cpu, Accelerator };
enum class Vendor { Nvidia, Other };
inline const char* to_string(DeviceType t) {
    switch (t) {
        case DeviceType::Gpu: return "gpu";
        case DeviceType::Cpu: return "cpu";
        case DeviceType::Accelerator: return "accelerator";
    }
    return "?";
}

/// Device opencl:N opened: its context and queue (released with it) and its properties.
class OpenCLDevice {
public:
    OpenCLDevice(int index, cl_platform_id platform, cl_device_id device) : index_(index), platform_(platform), id_(device) {
        read_properties(platform, device);
        cl_int err = CL_SUCCESS;
        context_ = context_for(platform, device);
        queue_ = clCreateCommandQueue(context_, id_, CL_QUEUE_PROFILING_ENABLE, &err);
        if (err != CL_SUCCESS) {
            clReleaseContext(context_);
            check(err, "clCreateCommandQueue", "for", describe());
        }
    }
    /// An application's device, context and queue (lt::opencl::adopt), retained for as long as
    /// the device is open; a queue of lazytensor's own in that context where `queue` is null.
    /// DeviceError for an out-of-order queue or a queue of another context or device.
    OpenCLDevice(int index, cl_context context, cl_device_id device, cl_command_queue queue)
        : index_(index), platform_(device_value<cl_platform_id>(device, CL_DEVICE_PLATFORM)), id_(device) {
        read_properties(platform_, device);
        if (queue) {
            cl_context queue_context = nullptr;
            cl_device_id queue_device = nullptr;
            check(clGetCommandQueueInfo(queue, CL_QUEUE_CONTEXT, sizeof queue_context, &queue_context, nullptr), "clGetCommandQueueInfo");
            check(clGetCommandQueueInfo(queue, CL_QUEUE_DEVICE, sizeof queue_device, &queue_device, nullptr), "clGetCommandQueueInfo");
            if (queue_context != context || queue_device != device)
                fail<DeviceError>("lt::opencl::adopt: the command queue belongs to another ",
                                  queue_context != context ? "context" : "device", " than the one given");
            cl_command_queue_properties props = 0;
            check(clGetCommandQueueInfo(queue, CL_QUEUE_PROPERTIES, sizeof props, &props, nullptr), "clGetCommandQueueInfo");
            if (props & CL_QUEUE_OUT_OF_ORDER_EXEC_MODE_ENABLE)
                fail<DeviceError>("lt::opencl::adopt: the command queue runs out of order; lazytensor needs an in-order queue");
            profiling_ = (props & CL_QUEUE_PROFILING_ENABLE) != 0;
            check(clRetainCommandQueue(queue), "clRetainCommandQueue");
            check(clRetainContext(context), "clRetainContext");
            context_ = context;
            queue_ = queue;
            return;
        }
        check(clRetainContext(context), "clRetainContext");
        context_ = context;
        cl_int err = CL_SUCCESS;
        queue_ = clCreateCommandQueue(context_, id_, CL_QUEUE_PROFILING_ENABLE, &err);
        if (err != CL_SUCCESS) {
            clReleaseContext(context_);
            check(err, "clCreateCommandQueue", "for", describe());
        }
    }
    OpenCLDevice(const OpenCLDevice&) = delete;
    OpenCLDevice& operator=(const OpenCLDevice&) = delete;
    ~OpenCLDevice() {
        if (transfer_queue_) clReleaseCommandQueue(transfer_queue_);
        clReleaseCommandQueue(queue_);
        clReleaseContext(context_);
    }

    Device device() const { return Device::opencl(index_); }
    /// "opencl:0 (the device's name)", as messages name it.
    std::string describe() const { return concat(device().str(), " (", name_, ")"); }
    const std::string& name() const { return name_; }
    const std::string& platform_name() const { return platform_name_; }
    DeviceType type() const { return type_; }
    /// "gpu", "cpu" or "accelerator" (lt::devices() reports it).
    std::string kind() const { return to_string(type_); }
    /// The driver's, platform's and device's versions (part of the disk cache's key).
    const std::string& driver() const { return driver_; }
    bool nvidia() const { return vendor_ == Vendor::Nvidia; }
    /// NVIDIA's compute capability (major * 10 + minor), 0 elsewhere.
    int nvidia_cc() const { return nvidia_cc_; }
    const DeviceTraits& traits() const { return traits_; }
    std::size_t largest_buffer() const { return static_cast<std::size_t>(max_alloc_); }
    cl_ulong global_memory() const { return global_memory_; }
    /// The options programs are built with on this device (ProgramCache may replace them).
    const std::string& build_options() const { return build_options_; }

    bool fp64() const { return fp64_; }
    /// Whether atom_add and atom_cmpxchg take 64-bit words (cl_khr_int64_base_atomics).
    bool int64_atomics() const { return int64_atomics_; }
    /// Whether the device computes in `t` (float64 only with cl_khr_fp64).
    bool computes(DType t) const { return t != DType::Float64 || fp64_; }
    /// Whether the device computes what kernel `k` (a fused one: one phase) does.
    bool computes(const ir::Kernel& k) const {
        if (fp64_) return true;
        for (const ir::Param& p : k.params)
            if (p.dtype == DType::Float64) return false;
        for (const ir::Instr& in : k.phases[0].instrs)
            if (in.dtype == DType::Float64) return false;
        return std::find(k.scalars.begin(), k.scalars.end(), DType::Float64) == k.scalars.end();
    }

    cl_platform_id platform() const { return platform_; }
    cl_device_id id() const { return id_; }
    cl_context context() const { return context_; }
    cl_command_queue queue() const { return queue_; }
    /// A second in-order queue of the device, made on first use, for copies to and from host
    /// memory that run beside the kernels of queue() (staging of collectives).
    cl_command_queue transfer_queue() {
        std::lock_guard<std::mutex> lock(transfer_mutex_);
        if (!transfer_queue_) {
            cl_int err = CL_SUCCESS;
            transfer_queue_ = clCreateCommandQueue(context_, id_, 0, &err);
            check(err, "clCreateCommandQueue", concat("for the transfer queue of ", describe()));
        }
        return transfer_queue_;
    }
    /// The transfer queue if it was made, else null.
    cl_command_queue transfer_queue_if_made() {
        std::lock_guard<std::mutex> lock(transfer_mutex_);
        return transfer_queue_;
    }
    /// Tests only: replaces the command queue and returns the old one (see OpenCLBackend).
    cl_command_queue exchange_queue(cl_command_queue queue) { return std::exchange(queue_, queue); }

    /// Whether the queue times its commands (an adopted queue may not: then nothing is timed).
    bool profiling() const { return profiling_; }

private:
    void read_properties(cl_platform_id platform, cl_device_id device) {
        name_ = device_string(device, CL_DEVICE_NAME);
        const auto type = device_value<cl_device_type>(device, CL_DEVICE_TYPE);
        type_ = (type & CL_DEVICE_TYPE_GPU) ? DeviceType::Gpu : (type & CL_DEVICE_TYPE_CPU) ? DeviceType::Cpu : DeviceType::Accelerator;
        platform_name_ = platform_string(platform, CL_PLATFORM_NAME);
        vendor_ = platform_name_.find("NVIDIA") != std::string::npos ? Vendor::Nvidia : Vendor::Other;
        driver_ = device_string(device, CL_DRIVER_VERSION) + " / " + platform_string(platform, CL_PLATFORM_VERSION) +
                  " / " + device_string(device, CL_DEVICE_VERSION);
        const std::string ext = device_string(device, CL_DEVICE_EXTENSIONS);
        // LAZYTENSOR_OPENCL_FP64=off: behave as a device without double would (to check that a
        // program runs on one).
        fp64_ = ext.find("cl_khr_fp64") != std::string::npos && env_flag("LAZYTENSOR_OPENCL_FP64", true);
        int64_atomics_ = ext.find("cl_khr_int64_base_atomics") != std::string::npos;
        traits_.max_work_group = device_value<std::size_t>(device, CL_DEVICE_MAX_WORK_GROUP_SIZE);
        traits_.compute_units = device_value<cl_uint>(device, CL_DEVICE_MAX_COMPUTE_UNITS);
        traits_.local_memory = device_value<cl_ulong>(device, CL_DEVICE_LOCAL_MEM_SIZE);
        traits_.gpu = type_ == DeviceType::Gpu;
        if (nvidia()) {  // CL_DEVICE_COMPUTE_CAPABILITY_{MAJOR,MINOR}_NV
            cl_uint major = 0, minor = 0;
            if (clGetDeviceInfo(device, 0x4000, sizeof major, &major, nullptr) == CL_SUCCESS &&
                clGetDeviceInfo(device, 0x4001, sizeof minor, &minor, nullptr) == CL_SUCCESS)
                nvidia_cc_ = static_cast<int>(major * 10 + minor);
        }
        max_alloc_ = device_value<cl_ulong>(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE);
        global_memory_ = device_value<cl_ulong>(device, CL_DEVICE_GLOBAL_MEM_SIZE);
        build_options_ = "-cl-std=CL1.2";
        if (device_value<cl_device_fp_config>(device, CL_DEVICE_SINGLE_FP_CONFIG) & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT)
            build_options_ += " -cl-fp32-correctly-rounded-divide-sqrt";  // the same quotients as the host

    }

    int index_;
    cl_platform_id platform_;
    cl_device_id id_;
    cl_context context_ = nullptr;
    cl_command_queue queue_ = nullptr;
    std::mutex transfer_mutex_;
    cl_command_queue transfer_queue_ = nullptr;
    std::string name_, platform_name_, driver_, build_options_;
    DeviceType type_ = DeviceType::Gpu;
    Vendor vendor_ = Vendor::Other;
    bool fp64_ = false;
    bool int64_atomics_ = false;
    bool profiling_ = true;
    DeviceTraits traits_;
    int nvidia_cc_ = 0;
    cl_ulong max_alloc_ = 0, global_memory_ = 0;
};

}  // namespace lazytensor::detail::opencl
