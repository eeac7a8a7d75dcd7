// The backend interface (Rune's shape): a device, buffers on it, copies to and from the host,
// kernels compiled from the IR (cached by the IR's key) and launched on buffers.
#pragma once

#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "../core/device.hpp"
#include "../ir/kernel.hpp"

namespace lazytensor::detail {

/// A kernel ready to launch on one backend.
class CompiledKernel {
public:
    virtual ~CompiledKernel() = default;
};

class Backend : public BufferAllocator {
public:
    virtual Device device() const = 0;
    /// A human-readable name of the device ("host (2 threads, avx512bw)", an OpenCL device name).
    virtual std::string name() const = 0;

    virtual BufferPtr allocate(DType dtype, std::int64_t numel) = 0;
    /// Copies `bytes` from host memory into the buffer at byte offset `at`.
    virtual void write(Buffer& dst, std::size_t at, const void* src, std::size_t bytes) = 0;
    /// Copies `bytes` from the buffer at byte offset `at` into host memory.
    virtual void read(const Buffer& src, std::size_t at, void* dst, std::size_t bytes) = 0;

    /// Runs a compiled kernel; `params` follow the kernel's parameter order.
    virtual void launch(CompiledKernel& kernel, const std::vector<Buffer*>& params) = 0;
    /// Waits until every launched kernel has finished.
    virtual void synchronize() = 0;

    /// The compiled form of `kernel`, from the cache when a kernel of the same structure was
    /// compiled before. `compiled` tells whether this call compiled it. The cache keeps the
    /// most recently used kernels (cache_capacity()); workloads whose shapes keep changing do
    /// not grow it without bound.
    std::shared_ptr<CompiledKernel> get_kernel(const ir::Kernel& kernel, bool* compiled = nullptr) {
        std::string k = ir::key(kernel);
        {
            std::lock_guard<std::mutex> lock(cache_mutex_);
            auto it = cache_.find(k);
            if (it != cache_.end()) {
                order_.splice(order_.begin(), order_, it->second.age);
                if (compiled) *compiled = false;
                return it->second.kernel;
            }
        }
        std::shared_ptr<CompiledKernel> fresh = compile(kernel);
        std::lock_guard<std::mutex> lock(cache_mutex_);
        auto [it, inserted] = cache_.emplace(std::move(k), Entry{std::move(fresh), {}});
        if (compiled) *compiled = inserted;
        if (inserted) {
            order_.push_front(&it->first);
            it->second.age = order_.begin();
            while (cache_.size() > capacity_) {
                cache_.erase(*order_.back());
                order_.pop_back();
            }
            return it->second.kernel;
        }
        return it->second.kernel;
    }

    std::size_t cached_kernels() const {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        return cache_.size();
    }
    std::size_t cache_capacity() const { return capacity_; }
    void set_cache_capacity(std::size_t kernels) {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        capacity_ = kernels < 1 ? 1 : kernels;
        while (cache_.size() > capacity_) {
            cache_.erase(*order_.back());
            order_.pop_back();
        }
    }

    void clear_cache() {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        cache_.clear();
        order_.clear();
    }

protected:
    virtual std::shared_ptr<CompiledKernel> compile(const ir::Kernel& kernel) = 0;

private:
    struct Entry {
        std::shared_ptr<CompiledKernel> kernel;
        std::list<const std::string*>::iterator age;
    };
    mutable std::mutex cache_mutex_;
    std::unordered_map<std::string, Entry> cache_;
    std::list<const std::string*> order_;  // keys, most recently used first
    std::size_t capacity_ = 4096;
};

}  // namespace lazytensor::detail
