// Devices at run time: the backend behind each device, the default device, and the
// environment variables (LAZYTENSOR_DEVICE, LAZYTENSOR_THREADS, LAZYTENSOR_DEBUG).
#pragma once

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../backend/host/host_backend.hpp"
#include "../core/config.hpp"
#include "../core/device.hpp"
#include "../core/error.hpp"
#if LAZYTENSOR_OPENCL
#include "../backend/opencl/opencl_backend.hpp"
#endif

namespace lazytensor {

namespace detail {

/// LAZYTENSOR_THREADS, default: all cores.
inline int host_threads() {
    const unsigned hw = std::thread::hardware_concurrency();
    return static_cast<int>(env_int("LAZYTENSOR_THREADS", hw ? hw : 1, 1, 4096, "a thread count"));
}

/// LAZYTENSOR_HOST_CACHE_MB: how much freed host memory is kept for reuse (default 1024).
inline std::size_t host_cache_bytes() {
    return static_cast<std::size_t>(env_int("LAZYTENSOR_HOST_CACHE_MB", 1024, 0, (1ll << 43) - 1, "a size in MiB")) << 20;
}

inline host::HostBackend& host_backend() {
    // Never destroyed: buffers held by static tensors may outlive any destruction order.
    static host::HostBackend* backend = new host::HostBackend(host_threads(), host_cache_bytes());
    return *backend;
}

inline Backend& backend_for(Device d) {
    if (d.kind == Device::Kind::Host) return host_backend();
#if LAZYTENSOR_OPENCL
    return opencl::opencl_backend(d.index);
#else
    fail<DeviceError>("device ", d, " is not available: this build of lazytensor has the host backend only "
                      "(build with LAZYTENSOR_OPENCL=1 and link OpenCL for OpenCL devices)");
#endif
}

inline Device parse_device(const std::string& text) {
    if (text == "host") return Device::host();
    if (text == "opencl") return Device::opencl(0);
    if (text.rfind("opencl:", 0) == 0) {
        const std::string n = text.substr(7);
        if (!n.empty() && n.size() <= 9 && n.find_first_not_of("0123456789") == std::string::npos)
            return Device::opencl(std::stoi(n));
    }
    fail<DeviceError>("unknown device \"", text, "\"; expected host, opencl or opencl:N");
}

struct DefaultDevice {
    std::mutex mutex;
    bool set = false;
    Device device;
};

inline DefaultDevice& default_device_state() {
    static DefaultDevice state;
    return state;
}

}  // namespace detail

/// A device and what it is, as listed by lt::devices().
struct DeviceInfo {
    Device device;
    std::string name;  // "host (16 threads, avx512bw)", "NVIDIA H100 80GB HBM3 (NVIDIA CUDA, gpu)"
    std::string kind;  // "host", or the OpenCL device type: "gpu", "cpu" or "accelerator"
};

/// Every device this build can run on; the host is always first, then every OpenCL device of
/// every platform (opencl:0, opencl:1, ...).
inline std::vector<DeviceInfo> devices() {
    std::vector<DeviceInfo> out{DeviceInfo{Device::host(), detail::host_backend().name(), "host"}};
#if LAZYTENSOR_OPENCL
    for (std::size_t i = 0; i < detail::opencl::opencl_device_ids().size(); ++i) {
        try {
            auto& b = detail::opencl::opencl_backend(static_cast<int>(i));
            out.push_back(DeviceInfo{b.device(), b.name(), b.kind()});
        } catch (const Error&) {
            // A device whose driver cannot give it a context is not usable: leave it out.
        }
    }
#endif
    return out;
}

/// How much memory the tensors on `d` hold (live, peak, cached by the allocator, the limit).
/// DeviceError if `d` is not available.
inline MemoryStats memory_stats(Device d) { return detail::backend_for(d).memory_stats(); }

/// Starts a new peak: memory_stats(d).peak_bytes becomes the live bytes now.
inline void reset_peak_memory(Device d) { detail::backend_for(d).reset_peak_memory(); }

/// Caps the bytes that live buffers on `d` may hold (0: no cap, the default). An allocation past
/// it throws OutOfMemoryError, as a full device does, and leaves every tensor usable. Tensors
/// that already exist are kept even when they hold more.
inline void set_memory_limit(Device d, std::size_t bytes) { detail::backend_for(d).set_memory_limit(bytes); }

/// Gives the free blocks that the caching allocator keeps for reuse on `d` back to the system
/// (the host) or the driver (OpenCL), as torch.cuda.empty_cache does.
inline void empty_cache(Device d) { detail::backend_for(d).release_cached(); }

/// What `d` has compiled since the start (or reset_compile_stats): kernels compiled and found in
/// memory, OpenCL programs built from source or loaded from the disk cache, and the time spent.
/// A loop that changes only scalar values or random seeds compiles nothing after its first step.
inline CompileStats compile_stats(Device d) { return detail::backend_for(d).compile_stats(); }

/// Sets compile_stats(d)'s counters to zero.
inline void reset_compile_stats(Device d) { detail::backend_for(d).reset_compile_stats(); }

/// Waits until every kernel launched on `d` has finished (realize() only enqueues on OpenCL
/// devices; reading a result waits by itself). DeviceError if `d` is not available.
inline void synchronize(Device d) { detail::backend_for(d).synchronize(); }

/// The device new tensors are created on: set_default_device's, else LAZYTENSOR_DEVICE (host,
/// opencl, opencl:N), else host. DeviceError if LAZYTENSOR_DEVICE is unknown or unavailable.
inline Device default_device() {
    auto& s = detail::default_device_state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.set) {
        s.device = detail::env("LAZYTENSOR_DEVICE") ? detail::parse_device(detail::env("LAZYTENSOR_DEVICE")) : Device::host();
        detail::backend_for(s.device);  // fails now, naming the device, if it is unavailable
        s.set = true;
    }
    return s.device;
}

/// Makes `d` the device new tensors are created on; DeviceError (and no change) if `d` is
/// not available.
inline void set_default_device(Device d) {
    detail::backend_for(d);
    auto& s = detail::default_device_state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.device = d;
    s.set = true;
}

}  // namespace lazytensor
