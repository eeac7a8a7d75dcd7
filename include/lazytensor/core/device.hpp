// SPDX-License-Identifier: MIT
// Devices and buffers as plain data: which device a tensor lives on, and an owned allocation on
// it. The backends that allocate and run on devices live in backend/ and runtime/.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <ostream>
#include <string>
#include <vector>

#include "dtype.hpp"

namespace lazytensor {

/// A device tensors can live on: the host (SIMD interpreter on all cores) or an OpenCL device.
struct Device {
    /// Which backend runs the device.
    enum class Kind : std::uint8_t { Host, OpenCL };
    Kind kind = Kind::Host;  ///< the backend
    /// The OpenCL device's number, counting every device of every platform (0 for the host).
    int index = 0;

    /// The host (always available).
    static Device host() { return Device{Kind::Host, 0}; }
    /// OpenCL device `index` (counted over all platforms). Not checked here: using a device that
    /// does not exist or is not built in throws DeviceError.
    static Device opencl(int index = 0) { return Device{Kind::OpenCL, index}; }

    /// "host" or "opencl:N", the spelling LAZYTENSOR_DEVICE accepts.
    std::string str() const { return kind == Kind::Host ? "host" : "opencl:" + std::to_string(index); }

    /// Same kind and index.
    friend bool operator==(const Device& a, const Device& b) { return a.kind == b.kind && a.index == b.index; }
    friend bool operator!=(const Device& a, const Device& b) { return !(a == b); }
};

/// Writes d.str(): "host" or "opencl:N".
inline std::ostream& operator<<(std::ostream& out, const Device& d) { return out << d.str(); }

namespace detail {

/// A device from its spelling ("host", "opencl", "opencl:N"), as LAZYTENSOR_DEVICE takes it;
/// DeviceError for anything else. Whether the device exists is not checked here.
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

}  // namespace detail

namespace detail {

struct Node;

/// A point in a device's queue of work (lt::Event): done when everything queued on the device
/// before it is done.
class DeviceEvent {
public:
    virtual ~DeviceEvent() = default;
    /// Whether the work before it has finished (without waiting). BackendError where it failed.
    virtual bool is_done() = 0;
    /// Returns once the work before it has finished. BackendError where it failed.
    virtual void wait() = 0;
};

/// Frees what an allocator handed out; implemented by each backend.
class BufferAllocator {
public:
    virtual ~BufferAllocator() = default;
    virtual void release(void* handle, std::size_t bytes) noexcept = 0;
};

}  // namespace detail

/// An allocation of `numel` elements of `dtype` on a device: one a backend made (freed when the
/// last tensor or schedule holding it lets go), or memory lazytensor did not allocate, wrapped
/// (lt::from_blob, DLPack), whose release function runs then instead.
class Buffer {
public:
    /// Takes ownership of `handle` (allocated by a backend); `owner` releases it on destruction.
    Buffer(Device device, DType dtype, std::int64_t numel, void* handle, detail::BufferAllocator* owner)
        : device_(device), dtype_(dtype), numel_(numel), handle_(handle), owner_(owner) {}
    /// Wraps memory lazytensor did not allocate: `release` (may be empty) runs when the last
    /// holder lets go. Memory that is not `writable` is never written (an assign into it is a
    /// ValueError). (The runtime marks it exposed when it records it.)
    Buffer(Device device, DType dtype, std::int64_t numel, void* handle, std::function<void()> release, bool writable)
        : device_(device), dtype_(dtype), numel_(numel), handle_(handle), owner_(nullptr), release_(std::move(release)),
          wrapped_(true), writable_(writable) {}
    Buffer(const Buffer&) = delete;
    Buffer& operator=(const Buffer&) = delete;
    ~Buffer() {
        if (owner_) owner_->release(handle_, bytes());
        if (release_) {
            try {
                release_();
            } catch (...) {
                // A destructor cannot pass it on; docs/interop.md asks deleters not to throw.
            }
        }
    }

    /// The device the memory is on.
    Device device() const { return device_; }
    /// The element type.
    DType dtype() const { return dtype_; }
    /// Number of elements.
    std::int64_t numel() const { return numel_; }
    /// Size in bytes: numel() * dtype_size(dtype()).
    std::size_t bytes() const { return static_cast<std::size_t>(numel_) * dtype_size(dtype_); }
    /// Host pointer for host buffers; the backend's handle (e.g. cl_mem) otherwise.
    void* handle() const { return handle_; }
    /// Memory lazytensor did not allocate (lt::from_blob, DLPack).
    bool wrapped() const { return wrapped_; }
    /// Whether letting go of the buffer frees its memory (or gives it back to an allocator or a
    /// deleter); false for wrapped memory without a release function.
    bool frees_memory() const { return owner_ != nullptr || static_cast<bool>(release_); }
    /// False for read-only wrapped memory (lt::from_blob of a const pointer).
    bool writable() const { return writable_; }
    /// Whether the memory's address is known outside lazytensor (wrapped memory, or handed out
    /// by data() or to_dlpack), so that another buffer may wrap the same memory.
    bool exposed() const { return exposed_.load(std::memory_order_acquire); }
    /// Marks the memory exposed (runtime/exposed.hpp's registry does, as it records the buffer).
    void mark_exposed() { exposed_.store(true, std::memory_order_release); }

    /// Records a lazy node that reads this buffer (directly or through views). An in-place
    /// write (assign) first computes the readers that are still lazy, so that they see the
    /// values they were built on.
    void add_reader(const std::shared_ptr<detail::Node>& node) {
        std::lock_guard<std::mutex> lock(readers_mutex_);
        if (readers_.size() >= 2 * pruned_size_ + 16) {  // drop the dead ones now and then: amortized O(1)
            readers_.erase(std::remove_if(readers_.begin(), readers_.end(), [](const auto& w) { return w.expired(); }),
                           readers_.end());
            pruned_size_ = readers_.size();
        }
        readers_.push_back(node);
    }
    /// The recorded readers still alive (some may have been realized since). The record stays:
    /// an assign that fails before it has computed them must still find them next time.
    std::vector<std::shared_ptr<detail::Node>> live_readers() {
        std::lock_guard<std::mutex> lock(readers_mutex_);
        std::vector<std::shared_ptr<detail::Node>> out;
        for (const auto& w : readers_)
            if (auto n = w.lock()) out.push_back(std::move(n));
        readers_.erase(std::remove_if(readers_.begin(), readers_.end(), [](const auto& w) { return w.expired(); }),
                       readers_.end());
        pruned_size_ = readers_.size();
        return out;
    }

private:
    std::mutex readers_mutex_;
    std::vector<std::weak_ptr<detail::Node>> readers_;
    std::size_t pruned_size_ = 0;
    Device device_;
    DType dtype_;
    std::int64_t numel_;
    void* handle_;
    detail::BufferAllocator* owner_;
    std::function<void()> release_;
    bool wrapped_ = false;
    bool writable_ = true;
    std::atomic<bool> exposed_{false};
};

/// Shared ownership of a Buffer (tensors, views and schedules hold these).
using BufferPtr = std::shared_ptr<Buffer>;

namespace detail {

/// Whether two buffers may hold some of the same memory: one buffer, or two exposed ones
/// (wrapped memory, or memory whose address was handed out) that overlap: on the host, address
/// ranges that intersect; elsewhere, the same handle (one cl_mem).
inline bool shares_memory(const Buffer& a, const Buffer& b) {
    if (&a == &b) return true;
    if (!a.exposed() || !b.exposed() || a.device() != b.device()) return false;
    if (a.device().kind != Device::Kind::Host) return a.handle() == b.handle();
    if (a.bytes() == 0 || b.bytes() == 0) return false;
    const auto a0 = reinterpret_cast<std::uintptr_t>(a.handle()), b0 = reinterpret_cast<std::uintptr_t>(b.handle());
    return a0 < b0 + b.bytes() && b0 < a0 + a.bytes();
}

}  // namespace detail

}  // namespace lazytensor
