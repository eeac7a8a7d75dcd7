// SPDX-License-Identifier: MIT
// Devices at run time: the backend behind each device, the default device's state, and the
// host backend's environment variables (LAZYTENSOR_THREADS, LAZYTENSOR_HOST_CACHE_MB). The public
// device functions (lt::devices, lt::default_device, ...) are defined in runtime/engine.hpp.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "../backend/host/host_backend.hpp"
#include "../core/config.hpp"
#include "../core/device.hpp"
#include "../core/error.hpp"
#include "../core/small_vector.hpp"
#include "seam.hpp"
#if LAZYTENSOR_OPENCL
#include "../backend/opencl/opencl_backend.hpp"
#include "../backend/opencl/transfer.hpp"
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

/// Each device's lock. What runs on one device (realizes, assigns, reads, writes, sorts,
/// synchronize) is ordered by it; different devices run at once.
inline std::recursive_mutex& device_mutex(Device d) {
    if (d.kind == Device::Kind::Host) {  // every realize on the host takes it: no table lookup
        static auto& host = *new std::recursive_mutex();  // never destroyed
        return host;
    }
    static std::mutex table_mutex;
    static auto& table = *new std::map<std::pair<int, int>, std::unique_ptr<std::recursive_mutex>>();  // never destroyed
    std::lock_guard<std::mutex> lock(table_mutex);
    auto& m = table[{static_cast<int>(d.kind), d.index}];
    if (!m) m = std::make_unique<std::recursive_mutex>();
    return *m;
}

/// Holds the locks of some devices for a scope. They are taken in one global order (the host,
/// then OpenCL devices by number), so two threads that need overlapping sets cannot deadlock.
/// A thread may take a device it holds again (nested scopes) but must not add a device that
/// sorts before one it holds: every scope names all the devices it needs up front.
/// A few devices (those of one realize, a copy's source and destination).
using DeviceList = SmallVector<Device, 4>;

class DeviceLock {
public:
    explicit DeviceLock(Device d) : DeviceLock(DeviceList{d}) {}
    explicit DeviceLock(DeviceList devices) {
        auto key = [](const Device& d) { return std::make_pair(static_cast<int>(d.kind), d.index); };
        std::sort(devices.begin(), devices.end(), [&](const Device& a, const Device& b) { return key(a) < key(b); });
        devices.resize(static_cast<std::size_t>(std::unique(devices.begin(), devices.end()) - devices.begin()));
        for (const Device& d : devices) {
            std::recursive_mutex& m = device_mutex(d);
            m.lock();
            held_.push_back(&m);
        }
    }
    DeviceLock(const DeviceLock&) = delete;
    DeviceLock& operator=(const DeviceLock&) = delete;
    ~DeviceLock() {
        for (std::size_t i = held_.size(); i-- > 0;) held_[i]->unlock();
    }

private:
    SmallVector<std::recursive_mutex*, 4> held_;
};

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
