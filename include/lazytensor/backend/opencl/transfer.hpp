// SPDX-License-Identifier: MIT
// Copies between two OpenCL devices: x.to(opencl:1) from opencl:0.
//
// Devices that share a context (the devices of one platform, device.hpp) copy with
// clEnqueueCopyBuffer on the destination's queue, asynchronously: the copy waits for what the
// source's queue has queued so far (a marker's event), and the source's queue waits for the
// copy before its next command, so the source buffer cannot be reused or rewritten under it.
//
// Devices in different contexts (different platforms, or LAZYTENSOR_OPENCL_SHARED_CONTEXT=off)
// copy through pinned host memory in chunks (two of 16 MiB per source device, kept), reading
// chunk i+1 on the source's queue while chunk i is written on the destination's; this path
// returns when the copy is done.
#pragma once

#include <algorithm>
#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "opencl_backend.hpp"
#include "pinned.hpp"

namespace lazytensor::detail::opencl {

inline constexpr std::size_t kStagingChunk = std::size_t(16) << 20;

/// Chunk `slot` (0 or 1) of `from`'s staging memory: made on its first staged copy and kept, as
/// the backends are (fresh host pages cost more to touch than the copy itself). Used under
/// from's device lock.
inline PinnedStaging& staging_chunk(OpenCLBackend& from, int slot) {
    static std::mutex mutex;
    static auto& chunks = *new std::map<const OpenCLBackend*, std::unique_ptr<PinnedStaging>[2]>();  // never destroyed
    std::lock_guard<std::mutex> lock(mutex);
    std::unique_ptr<PinnedStaging>& chunk = chunks[&from][slot];
    if (!chunk) chunk = std::make_unique<PinnedStaging>(from.context(), from.queue(), kStagingChunk, from.describe());
    return *chunk;
}

/// An event released when the scope ends.
struct EventOwner {
    cl_event event = nullptr;
    EventOwner() = default;
    EventOwner(const EventOwner&) = delete;
    EventOwner& operator=(const EventOwner&) = delete;
    ~EventOwner() { reset(); }
    void reset() {
        if (event) clReleaseEvent(event);
        event = nullptr;
    }
    void wait(const char* what, const OpenCLBackend& on) {
        if (!event) return;
        check(clWaitForEvents(1, &event), "clWaitForEvents", concat(what, " on ", on.describe()));
        reset();
    }
};

/// Whether `from` and `to` copy directly (one context).
inline bool copies_directly(const OpenCLBackend& from, const OpenCLBackend& to) { return from.context() == to.context(); }

/// Copies `bytes` bytes from byte `at` of `src` (a buffer of `from`) to the start of `dst` (a
/// buffer of `to`). The caller holds both devices' locks.
inline void copy_between(OpenCLBackend& from, const Buffer& src, std::size_t at, OpenCLBackend& to, Buffer& dst,
                         std::size_t bytes) {
    if (bytes == 0) return;
    cl_mem s = static_cast<cl_mem>(src.handle()), d = static_cast<cl_mem>(dst.handle());
    const std::string what = concat("copying ", bytes, " bytes from ", from.describe(), " to ", to.describe());
    if (copies_directly(from, to)) {
        EventOwner ready, done;
        check(clEnqueueMarkerWithWaitList(from.queue(), 0, nullptr, &ready.event), "clEnqueueMarkerWithWaitList", what);
        check(clEnqueueCopyBuffer(to.queue(), s, d, at, 0, bytes, 1, &ready.event, &done.event), "clEnqueueCopyBuffer", what);
        check(clEnqueueBarrierWithWaitList(from.queue(), 1, &done.event, nullptr), "clEnqueueBarrierWithWaitList", what);
        // Both queues start now: the copy must not wait for whatever flushes them next.
        clFlush(from.queue());
        clFlush(to.queue());
        to.track(std::exchange(done.event, nullptr), concat("(a copy from ", from.device().str(), ")"));
        return;
    }
    // Through host memory: two pinned chunks, one filled from `from` while the other drains to `to`.
    const std::size_t chunk = kStagingChunk;
    PinnedStaging* staging[2] = {&staging_chunk(from, 0), &staging_chunk(from, 1)};
    struct Drain {  // if a step fails, no queued read or write may still use the chunks when the next copy does
        cl_command_queue a, b;
        ~Drain() {
            clFinish(a);
            clFinish(b);
        }
    } drain{from.queue(), to.queue()};
    EventOwner read[2], write[2];
    const std::size_t chunks = (bytes + chunk - 1) / chunk;
    auto start_read = [&](std::size_t i) {
        const std::size_t slot = i % 2, offset = i * chunk, n = std::min(chunk, bytes - offset);
        write[slot].wait("waiting for a staged write", to);  // the chunk's memory is free again
        check(clEnqueueReadBuffer(from.queue(), s, CL_FALSE, at + offset, n, staging[slot]->data(), 0, nullptr,
                                  &read[slot].event),
              "clEnqueueReadBuffer", what);
        clFlush(from.queue());
    };
    start_read(0);
    for (std::size_t i = 0; i < chunks; ++i) {
        const std::size_t slot = i % 2, offset = i * chunk, n = std::min(chunk, bytes - offset);
        read[slot].wait("waiting for a staged read", from);
        check(clEnqueueWriteBuffer(to.queue(), d, CL_FALSE, offset, n, staging[slot]->data(), 0, nullptr, &write[slot].event),
              "clEnqueueWriteBuffer", what);
        clFlush(to.queue());
        if (i + 1 < chunks) start_read(i + 1);
    }
    write[0].wait("waiting for a staged write", to);
    write[1].wait("waiting for a staged write", to);
}

}  // namespace lazytensor::detail::opencl
