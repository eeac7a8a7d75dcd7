// The backend interface (Rune's shape): a device, buffers on it, copies to and from the host,
// kernels compiled from the IR (cached by the IR's key) and launched on buffers, and matrix
// products (a GEMM of the backend's own).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "../core/device.hpp"
#include "../core/lru_cache.hpp"
#include "../ir/gemm.hpp"
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
    /// Runs a matrix product into `c` (contiguous [batch..., m, n]), reading `a` and `b` as the
    /// layouts of `gemm` say. Its dtype is float32 or float64.
    virtual void gemm(const ir::Gemm& gemm, const Buffer& a, const Buffer& b, Buffer& c) = 0;
    /// How this backend runs `gemm` (LAZYTENSOR_DEBUG), e.g. "CLBlast GemmStridedBatched".
    virtual std::string gemm_routine(const ir::Gemm&) const { return "GEMM"; }
    /// Waits until every launched kernel has finished.
    virtual void synchronize() = 0;

    /// Device-side timing (LAZYTENSOR_DEBUG=3, benchmarks): while on, launch() records each
    /// kernel's device time; backends without device timers record nothing.
    virtual void set_record_times(bool) {}
    virtual bool record_times() const { return false; }
    /// The device times (ms) recorded since the last call, one per launch.
    virtual std::vector<double> take_device_times_ms() { return {}; }
    /// The generated source of a compiled kernel (LAZYTENSOR_DEBUG=2), if the backend has one.
    virtual std::string kernel_source(const CompiledKernel&) const { return {}; }

    /// The compiled form of `kernel`, from the cache when a kernel of the same structure was
    /// compiled before. `compiled` tells whether this call compiled it. The cache keeps the
    /// most recently used kernels (cache_capacity()); workloads whose shapes keep changing do
    /// not grow it without bound.
    std::shared_ptr<CompiledKernel> get_kernel(const ir::Kernel& kernel, bool* compiled = nullptr) {
        std::string k = ir::key(kernel);
        if (auto hit = cache_.find(k)) {
            if (compiled) *compiled = false;
            return hit;
        }
        auto [value, inserted] = cache_.insert(std::move(k), compile(kernel));
        if (compiled) *compiled = inserted;
        return value;
    }

    std::size_t cached_kernels() const { return cache_.size(); }
    std::size_t cache_capacity() const { return cache_.capacity(); }
    void set_cache_capacity(std::size_t kernels) { cache_.set_capacity(kernels); }
    /// Forgets every compiled kernel (they are compiled again on next use).
    virtual void clear_kernel_cache() { cache_.clear(); }

protected:
    virtual std::shared_ptr<CompiledKernel> compile(const ir::Kernel& kernel) = 0;

private:
    LruCache<CompiledKernel> cache_{4096};
};

}  // namespace lazytensor::detail
