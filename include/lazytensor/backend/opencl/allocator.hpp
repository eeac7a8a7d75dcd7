// SPDX-License-Identifier: MIT
// The OpenCL backend's caching allocator: cl_mem blocks of a few sizes (powers of two below
// 1 MiB, then whole MiB), kept when freed (up to a quarter of the device's memory, at most
// 4 GiB) and handed out again. Also wraps cl_mem made elsewhere (DLPack) as buffers.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <utility>

#include "../../core/device.hpp"
#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "cl_api.hpp"
#include "device.hpp"

namespace lazytensor::detail::opencl {

class BlockAllocator {
public:
    explicit BlockAllocator(const OpenCLDevice& device)
        : device_(device),
          cache_limit_(static_cast<std::size_t>(std::min<cl_ulong>(device.global_memory() / 4, cl_ulong(4) << 30))) {}
    BlockAllocator(const BlockAllocator&) = delete;
    BlockAllocator& operator=(const BlockAllocator&) = delete;
    ~BlockAllocator() { release_cached(); }

    /// A block for `bytes` (of `numel` elements of `dtype`, for messages): a cached one, or new.
    cl_mem allocate(std::size_t bytes, std::int64_t numel, DType dtype) {
        const std::size_t size = block_size(bytes);
        if (cl_mem m = take_cached(size)) return m;
        cl_int err = CL_SUCCESS;
        cl_mem m = clCreateBuffer(device_.context(), CL_MEM_READ_WRITE, size, nullptr, &err);
        if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY) {
            release_cached();  // give the cached blocks back, then try once more
            m = clCreateBuffer(device_.context(), CL_MEM_READ_WRITE, size, nullptr, &err);
        }
        if (err == CL_MEM_OBJECT_ALLOCATION_FAILURE || err == CL_OUT_OF_RESOURCES || err == CL_OUT_OF_HOST_MEMORY)
            fail<OutOfMemoryError>("out of memory on ", device_.describe(), ": allocating ", numel, " elements of ", dtype,
                                   " (", bytes, " bytes) failed: clCreateBuffer: ", status_name(err),
                                   "; free tensors that are no longer needed and try again");
        check(err, "clCreateBuffer",
              concat("allocating ", numel, " elements of ", dtype, " (", bytes, " bytes) on ", device_.describe()));
        return m;
    }

    /// Takes back what allocate returned: cached while the cache has room, else released.
    void free(void* handle, std::size_t bytes) noexcept {
        const std::size_t size = block_size(bytes);
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (cached_bytes_ + size <= cache_limit_) {
                cached_.emplace(size, static_cast<cl_mem>(handle));
                cached_bytes_ += size;
                return;
            }
        }
        clReleaseMemObject(static_cast<cl_mem>(handle));
    }

    std::size_t cached_bytes() const {
        std::lock_guard<std::mutex> lock(mutex_);
        return cached_bytes_;
    }

    /// Returns every cached free block to the driver.
    void release_cached() noexcept {
        std::lock_guard<std::mutex> lock(mutex_);
        for (auto& [size, m] : cached_) clReleaseMemObject(m);
        cached_.clear();
        cached_bytes_ = 0;
    }

    /// A cl_mem made elsewhere (DLPack): it must be a buffer of this device's context, at least
    /// numel elements large; it is retained, and released (then `release` runs) after every
    /// kernel queued so far has finished. Read-only memory (CL_MEM_READ_ONLY) gives a read-only
    /// buffer.
    BufferPtr wrap(DType dtype, std::int64_t numel, void* handle, std::function<void()> release, bool writable) {
        cl_mem m = static_cast<cl_mem>(handle);
        cl_context context = nullptr;
        cl_mem_object_type type = 0;
        std::size_t size = 0;
        cl_mem_flags flags = 0;
        cl_int err = clGetMemObjectInfo(m, CL_MEM_CONTEXT, sizeof context, &context, nullptr);
        if (err == CL_SUCCESS) err = clGetMemObjectInfo(m, CL_MEM_TYPE, sizeof type, &type, nullptr);
        if (err == CL_SUCCESS) err = clGetMemObjectInfo(m, CL_MEM_SIZE, sizeof size, &size, nullptr);
        if (err == CL_SUCCESS) err = clGetMemObjectInfo(m, CL_MEM_FLAGS, sizeof flags, &flags, nullptr);
        if (err != CL_SUCCESS)
            fail<DeviceError>("the memory handed to ", device_.describe(), " is not an OpenCL memory object (clGetMemObjectInfo: ",
                              status_name(err), ")");
        if (context != device_.context())
            fail<DeviceError>("the cl_mem belongs to another OpenCL context than the one lazytensor uses for ", device_.describe(),
                              ": lazytensor can use memory of its own context only; copy the values through the host "
                              "(lt::tensor(values, shape, device))");
        if (type != CL_MEM_OBJECT_BUFFER)
            fail<DeviceError>("the cl_mem handed to ", device_.describe(), " is an image or pipe, not a buffer");
        const std::size_t bytes = static_cast<std::size_t>(numel) * dtype_size(dtype);
        if (bytes > size)
            fail<ValueError>("the tensor reaches ", bytes, " bytes into its cl_mem, which holds ", size, " bytes");
        if (flags & CL_MEM_WRITE_ONLY)
            fail<ValueError>("the cl_mem handed to ", device_.describe(), " is write-only (CL_MEM_WRITE_ONLY): kernels could not "
                             "read it");
        if (flags & CL_MEM_READ_ONLY) writable = false;
        check(clRetainMemObject(m), "clRetainMemObject");
        try {
            return std::make_shared<Buffer>(device_.device(), dtype, numel, handle, [this, m, release = std::move(release)] {
                clFinish(device_.queue());  // kernels queued on it must not outlive the memory
                clReleaseMemObject(m);
                if (release) release();
            }, writable);
        } catch (...) {
            clReleaseMemObject(m);
            throw;
        }
    }

private:
    static std::size_t block_size(std::size_t bytes) {
        if (bytes <= 256) return 256;
        if (bytes < (std::size_t(1) << 20)) {  // powers of two below 1 MiB, then whole MiB
            std::size_t p = 256;
            while (p < bytes) p *= 2;
            return p;
        }
        const std::size_t mb = std::size_t(1) << 20;
        return (bytes + mb - 1) / mb * mb;
    }

    cl_mem take_cached(std::size_t size) {
        std::lock_guard<std::mutex> lock(mutex_);
        auto it = cached_.find(size);
        if (it == cached_.end()) return nullptr;
        cl_mem m = it->second;
        cached_bytes_ -= size;
        cached_.erase(it);
        return m;
    }

    const OpenCLDevice& device_;
    mutable std::mutex mutex_;
    std::multimap<std::size_t, cl_mem> cached_;
    std::size_t cached_bytes_ = 0;
    const std::size_t cache_limit_;
};

}  // namespace lazytensor::detail::opencl
