// Devices at run time: the backend behind each device, the default device's state, and the
// host backend's environment variables (LAZYTENSOR_THREADS, LAZYTENSOR_HOST_CACHE_MB). The public
// device functions (lt::devices, lt::default_device, ...) are defined in runtime/engine.hpp.
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
#include "seam.hpp"
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

/// The backend behind `d` (the seam's backend_for); DeviceError if `d` is unavailable.
inline Backend& device_backend(Device d) {
    if (d.kind == Device::Kind::Host) return host_backend();
#if LAZYTENSOR_OPENCL
    return opencl::opencl_backend(d.index);
#else
    fail<DeviceError>("device ", d, " is not available: this build of lazytensor has the host backend only "
                      "(build with LAZYTENSOR_OPENCL=1 and link OpenCL for OpenCL devices)");
#endif
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
}  // namespace lazytensor
