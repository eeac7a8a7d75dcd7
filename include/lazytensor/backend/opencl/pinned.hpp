// SPDX-License-Identifier: MIT
// Host memory an OpenCL driver has pinned (CL_MEM_ALLOC_HOST_PTR, mapped), so that copies to and
// from the device are DMA transfers rather than copies through the driver's own bounce buffer:
// the staging of copies between devices of different contexts (transfer.hpp) and of collectives
// (a pool of blocks by size, handed out through Backend::host_staging).
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../../core/error.hpp"
#include "cl_api.hpp"

namespace lazytensor::detail::opencl {

/// `bytes` of pinned host memory of `context`, mapped through `queue` for as long as it lives.
class PinnedStaging {
public:
    PinnedStaging(cl_context context, cl_command_queue queue, std::size_t bytes, const std::string& device)
        : queue_(queue), bytes_(bytes) {
        cl_int err = CL_SUCCESS;
        mem_ = clCreateBuffer(context, CL_MEM_READ_WRITE | CL_MEM_ALLOC_HOST_PTR, bytes, nullptr, &err);
        check(err, "clCreateBuffer", concat("allocating ", bytes, " bytes of pinned host memory for ", device));
        host_ = clEnqueueMapBuffer(queue, mem_, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, bytes, 0, nullptr, nullptr, &err);
        if (err != CL_SUCCESS) {
            clReleaseMemObject(mem_);
            check(err, "clEnqueueMapBuffer", concat("mapping pinned host memory on ", device));
        }
    }
    PinnedStaging(const PinnedStaging&) = delete;
    PinnedStaging& operator=(const PinnedStaging&) = delete;
    ~PinnedStaging() {
        clEnqueueUnmapMemObject(queue_, mem_, host_, 0, nullptr, nullptr);
        clFinish(queue_);
        clReleaseMemObject(mem_);
    }
    void* data() const { return host_; }
    std::size_t bytes() const { return bytes_; }

private:
    cl_command_queue queue_;
    cl_mem mem_ = nullptr;
    void* host_ = nullptr;
    std::size_t bytes_ = 0;
};

/// Blocks of pinned memory by size class (powers of two from 64 KiB), kept for reuse: pinning
/// costs more than the copy of a few MiB, and a training loop stages the same sizes every step.
/// At most `kept_bytes` wait in the pool; a block returned beyond that is freed.
class PinnedPool {
public:
    static constexpr std::size_t kept_bytes = std::size_t(512) << 20;

    PinnedPool(cl_context context, cl_command_queue queue, std::string device)
        : context_(context), queue_(queue), device_(std::move(device)) {}

    /// A block of at least `bytes`, returned to the pool when the last owner lets go (the pool
    /// lives as long as the device's backend, which is never destroyed).
    std::shared_ptr<void> acquire(std::size_t bytes) {
        std::size_t size = std::size_t(64) << 10;
        while (size < bytes) size *= 2;
        std::unique_ptr<PinnedStaging> block;
        {
            std::lock_guard<std::mutex> lock(mutex_);
            std::vector<std::unique_ptr<PinnedStaging>>& free = free_[size];
            if (!free.empty()) {
                block = std::move(free.back());
                free.pop_back();
                kept_ -= size;
            }
        }
        if (!block) block = std::make_unique<PinnedStaging>(context_, queue_, size, device_);
        void* data = block->data();
        PinnedStaging* raw = block.release();
        return std::shared_ptr<void>(data, [this, raw](void*) { give_back(std::unique_ptr<PinnedStaging>(raw)); });
    }

private:
    void give_back(std::unique_ptr<PinnedStaging> block) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (kept_ + block->bytes() > kept_bytes) return;  // (freed)
        kept_ += block->bytes();
        free_[block->bytes()].push_back(std::move(block));
    }

    cl_context context_;
    cl_command_queue queue_;
    std::string device_;
    std::mutex mutex_;
    std::map<std::size_t, std::vector<std::unique_ptr<PinnedStaging>>> free_;
    std::size_t kept_ = 0;
};

}  // namespace lazytensor::detail::opencl
