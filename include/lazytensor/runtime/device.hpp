// SPDX-License-Identifier: MIT
// Devices at run time: the backend behind each device, the default device's state, and the
// host backend's environment variables (LAZYTENSOR_THREADS, LAZYTENSOR_HOST_CACHE_MB). The public
// device functions (lt::devices, lt::default_device, ...) are defined in runtime/engine.hpp.
#pragma once

#include <algorithm>
#include <cmath>
#include <fstream>
#include <atomic>
#include <cstdlib>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>
#if defined(__linux__)
#include <sched.h>
#endif

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

/// The CPUs this process may use: the online cores, fewer where its affinity mask or its
/// container's CPU quota (cgroup v2 cpu.max, v1 cpu.cfs_quota_us) allows fewer; at least 1.
inline int available_cpus() {
    const unsigned hw = std::thread::hardware_concurrency();
    int n = hw ? static_cast<int>(hw) : 1;
#if defined(__linux__)
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) n = std::min(n, CPU_COUNT(&set));
    auto read_words = [](const std::string& path) {
        std::vector<std::string> words;
        std::ifstream in(path);
        for (std::string w; in >> w;) words.push_back(w);
        return words;
    };
    auto limit = [&](double quota, double period) {
        if (quota > 0 && period > 0) n = std::min(n, std::max(1, static_cast<int>(std::ceil(quota / period))));
    };
    // cgroup v2: the process's group (the line "0::/path" of /proc/self/cgroup), its cpu.max.
    std::string group;
    {
        std::ifstream in("/proc/self/cgroup");
        for (std::string line; std::getline(in, line);)
            if (line.rfind("0::", 0) == 0) group = line.substr(3);
    }
    for (const std::string& dir : {"/sys/fs/cgroup" + group, std::string("/sys/fs/cgroup")}) {
        const std::vector<std::string> max = read_words(dir + "/cpu.max");  // "quota period" or "max period"
        if (max.size() == 2 && max[0] != "max") {
            limit(std::atof(max[0].c_str()), std::atof(max[1].c_str()));
            break;
        }
    }
    const std::vector<std::string> quota = read_words("/sys/fs/cgroup/cpu/cpu.cfs_quota_us"),
                                   period = read_words("/sys/fs/cgroup/cpu/cpu.cfs_period_us");
    if (quota.size() == 1 && period.size() == 1) limit(std::atof(quota[0].c_str()), std::atof(period[0].c_str()));
#endif
    return std::max(1, n);
}

/// LAZYTENSOR_THREADS, default: available_cpus().
inline int host_threads() { return static_cast<int>(env_int("LAZYTENSOR_THREADS", available_cpus(), 1, 4096, "a thread count")); }

/// LAZYTENSOR_SPIN_US: how long idle host threads wait for more work before sleeping (default 200).
inline std::int64_t host_spin_us() { return env_int("LAZYTENSOR_SPIN_US", 200, 0, 1000000, "a time in microseconds"); }

/// LAZYTENSOR_HOST_CACHE_MB: how much freed host memory is kept for reuse (default 1024).
inline std::size_t host_cache_bytes() {
    return static_cast<std::size_t>(env_int("LAZYTENSOR_HOST_CACHE_MB", 1024, 0, (1ll << 43) - 1, "a size in MiB")) << 20;
}

inline host::HostBackend& host_backend() {
    // Never destroyed: buffers held by static tensors may outlive any destruction order.
    static host::HostBackend* backend = new host::HostBackend(host_threads(), host_cache_bytes(), host_spin_us());
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
