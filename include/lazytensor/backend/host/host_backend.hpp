// SPDX-License-Identifier: MIT
// The host backend: buffers in host memory, kernels run by the interpreter and matrix products
// by the packed GEMM (gemm.hpp), on a thread pool of LAZYTENSOR_THREADS threads (default: all
// cores).
//
// Large buffers come from a cache of freed blocks (like PyTorch's caching allocator): a fresh
// 64 MB buffer costs 16k page faults on first touch, more than the kernel that fills it. Blocks
// of 2 MB and more are 2 MB aligned and advised as huge pages where Linux allows it.
#pragma once

#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <xsimd/xsimd.hpp>

#ifdef __linux__
#include <sys/mman.h>
#include <sys/sysinfo.h>
#endif

#include "../../core/config.hpp"
#include "../backend.hpp"
#include "fft.hpp"  // (the FFT engine: lt::fft will run through it, issue 48)
#include "gemm.hpp"
#include "interpreter.hpp"
#include "lapack.hpp"
#include "scan.hpp"
#include "sort.hpp"

namespace lazytensor::detail::host {

/// The host's decisions that graph builders and the scheduler make: no split-k (the host GEMM
/// threads over k's blocks itself); gelu of float through double, whose exp and erfc are exact
/// where float's are a few ulp off.
class HostPolicy final : public DevicePolicy {
public:
    bool gelu_through_float64() const override { return true; }
    // The interpreter pays for every gated read: a padded copy made the forward of a 3x3
    // convolution 1.5x and a depthwise one 3.1x faster (2 threads, batch 4).
    bool windows_through_buffers() const override { return true; }
};

class HostBackend final : public Backend {
public:
    HostBackend(int threads, std::size_t cache_bytes, std::int64_t spin_us = 200)
        : pool_(threads, spin_us), cache_limit_(cache_bytes) {}
    ~HostBackend() override { release_cached(); }

    /// The threads kernels run on (the caller included), and changing them (lt::set_num_threads):
    /// kernels planned for the old count are planned again.
    int threads() const { return pool_.size(); }
    void set_threads(int threads) {
        pool_.resize(threads);
        clear_kernel_cache();
    }
    ThreadPool& pool() { return pool_; }

    Device device() const override { return Device::host(); }
    const DevicePolicy& policy() const override { return policy_; }
    std::string name() const override {
        return concat("host (", pool_.size(), " thread", pool_.size() == 1 ? "" : "s", ", ",
                      simd_arch::name(), ")");
    }

    /// Returns every cached free block to the system.
    void release_cached() noexcept override {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        for (auto& [size, p] : cached_) std::free(p);
        cached_.clear();
        cached_bytes_ = 0;
    }

    void write(Buffer& dst, std::size_t at, const void* src, std::size_t bytes) override {
        if (bytes) std::memcpy(static_cast<char*>(dst.handle()) + at, src, bytes);
    }
    void read(const Buffer& src, std::size_t at, void* dst, std::size_t bytes) override {
        if (bytes) std::memcpy(dst, static_cast<const char*>(src.handle()) + at, bytes);
    }

    void launch(CompiledKernel& kernel, const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars) override {
        static_cast<HostKernel&>(kernel).run(params, scalars, pool_);
    }
    void synchronize() override {}

    void gemm(const ir::Gemm& g, const Buffer& a, const Buffer& b, Buffer& c) override {
        if (g.dtype == DType::Float64)
            host::gemm(g, static_cast<const double*>(a.handle()), static_cast<const double*>(b.handle()),
                       static_cast<double*>(c.handle()), pool_);
        else
            host::gemm(g, static_cast<const float*>(a.handle()), static_cast<const float*>(b.handle()),
                       static_cast<float*>(c.handle()), pool_);
    }
    std::string gemm_routine(const ir::Gemm&) const override { return "packed SIMD GEMM"; }

    void scan(const ir::Scan& s, const Buffer& in, Buffer& out) override { host::scan(s, in.handle(), out.handle(), pool_); }

    void scatter(const Buffer& base, Buffer& out, const Buffer& positions, const Buffer& values, std::int64_t count,
                 bool accumulate) override {
        if (base.handle() != out.handle())
            std::memcpy(out.handle(), base.handle(), static_cast<std::size_t>(out.numel()) * dtype_size(out.dtype()));
        scatter_elements(out.dtype(), out.handle(), out.numel(), static_cast<const std::int64_t*>(positions.handle()),
                         values.handle(), count, accumulate);
    }
    void fft(const ir::Fft& call, const Buffer& in, Buffer& out) override {
        host::run_fft(call, in.handle(), out.handle(), &pool_);
    }
    std::string fft_routine(const ir::Fft&) const override { return "the host FFT engine (Stockham, four-step, Bluestein)"; }
    void sort_rows(const Buffer& in, std::int64_t rows, std::int64_t n, std::int64_t k, bool descending, Buffer& values,
                   Buffer& indices) override {
        visit_dtype(in.dtype(), [&](auto tag) {
            using S = typename decltype(tag)::type;
            host::sort_rows(static_cast<const S*>(in.handle()), static_cast<S*>(values.handle()),
                            static_cast<std::int64_t*>(indices.handle()), rows, n, k, descending, pool_);
        });
    }

    void linalg(const ir::Linalg& call, const std::vector<const Buffer*>& operands, Buffer& out) override {
        host::run_linalg(call, operands, out, pool_);
    }
    std::string linalg_routine(const ir::Linalg& call) const override {
        return concat("LAPACK ", call.dtype == DType::Float64 ? "d" : "s", linalg_info(call.op).routines,
                      call.batch_count() > 1 ? ", the batch's matrices in parallel" : "");
    }

protected:
    std::shared_ptr<CompiledKernel> compile(const ir::Kernel& kernel, CompileOutcome&) override {
        return std::make_shared<HostKernel>(kernel, pool_.size());
    }

    std::size_t largest_buffer() const override { return std::size_t(1) << 62; }

    void* allocate_memory(std::size_t bytes, std::int64_t numel, DType dtype) override {
        // Where the kernel overcommits memory, malloc of more than the machine has succeeds and
        // the process is killed once the pages are touched: refuse such a buffer here instead.
        if (const std::size_t total = memory_bytes(); total && bytes > total)
            fail<OutOfMemoryError>("out of memory on host: allocating ", numel, " elements of ", dtype, " (", bytes,
                                   " bytes), more than this machine's ", total, " bytes of memory and swap");
        void* p = take_block(block_size(bytes));
        if (!p)
            fail<OutOfMemoryError>("out of memory on host: allocating ", numel, " elements of ", dtype, " (", bytes,
                                   " bytes) failed; free tensors that are no longer needed and try again");
        return p;
    }

    void free_memory(void* handle, std::size_t bytes) noexcept override {
        const std::size_t size = block_size(bytes);
        if (size >= kCachedMin) {
            std::lock_guard<std::mutex> lock(cache_mutex_);
            if (cached_bytes_ + size <= cache_limit_) {
                cached_.emplace(size, handle);
                cached_bytes_ += size;
                return;
            }
        }
        std::free(handle);
    }

    std::size_t cached_bytes() const override {
        std::lock_guard<std::mutex> lock(cache_mutex_);
        return cached_bytes_;
    }

private:
    static constexpr std::size_t kHuge = std::size_t(2) << 20;
    static constexpr std::size_t kCachedMin = std::size_t(1) << 20;

    static std::size_t block_size(std::size_t bytes) {
        const std::size_t align = bytes >= kHuge ? kHuge : 64;
        return std::max<std::size_t>(64, (bytes + align - 1) / align * align);
    }

    // Physical memory plus swap (0 where unknown).
    static std::size_t memory_bytes() {
#ifdef __linux__
        static const std::size_t total = [] {
            struct sysinfo info {};
            return sysinfo(&info) == 0 ? (std::size_t(info.totalram) + info.totalswap) * info.mem_unit : 0;
        }();
        return total;
#else
        return 0;
#endif
    }

    void* take_block(std::size_t size) {
        if (size >= kCachedMin) {
            std::lock_guard<std::mutex> lock(cache_mutex_);
            auto it = cached_.find(size);
            if (it != cached_.end()) {
                void* p = it->second;
                cached_bytes_ -= size;
                cached_.erase(it);
                return p;
            }
        }
        void* p = std::aligned_alloc(size >= kHuge ? kHuge : 64, size);
        if (!p && size >= kCachedMin) {  // retry once the cache has given its memory back
            release_cached();
            p = std::aligned_alloc(size >= kHuge ? kHuge : 64, size);
        }
#ifdef __linux__
        if (p && size >= kHuge) madvise(p, size, MADV_HUGEPAGE);
#endif
        return p;
    }

    ThreadPool pool_;
    HostPolicy policy_;
    mutable std::mutex cache_mutex_;
    std::multimap<std::size_t, void*> cached_;
    std::size_t cached_bytes_ = 0;
    std::size_t cache_limit_;
};

}  // namespace lazytensor::detail::host
