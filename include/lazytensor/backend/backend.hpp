// SPDX-License-Identifier: MIT
// The backend interface (Rune's shape): a device, buffers on it, copies to and from the host,
// kernels compiled from the IR (cached by the IR's key) and launched on buffers, and matrix
// products (a GEMM of the backend's own).
#pragma once

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "../core/device.hpp"
#include "../core/env.hpp"
#include "../core/lru_cache.hpp"
#include "../ir/attention.hpp"
#include "../ir/device_policy.hpp"
#include "../ir/gemm.hpp"
#include "../ir/scan.hpp"
#include "../ir/kernel.hpp"
#include "../ir/linalg.hpp"
#include "../core/reports.hpp"
#include "../ir/fft.hpp"
#include "compile_log.hpp"
#include "host/fft_call.hpp"
#include "scatter_elements.hpp"

namespace lazytensor::detail {

/// LAZYTENSOR_KERNEL_CACHE: how many compiled kernels each device keeps in memory (and, on
/// OpenCL, how many built programs below them); 4096 by default.
inline std::size_t kernel_cache_capacity_from_env() {
    return static_cast<std::size_t>(env_int("LAZYTENSOR_KERNEL_CACHE", 4096, 1, std::int64_t(1) << 40, "a number of kernels"));
}

/// How one kernel came to be (LAZYTENSOR_DEBUG, compile statistics).
struct CompileOutcome {
    bool compiled = false;           // not found in memory: made now
    bool built_from_source = false;  // an OpenCL program was built by the compiler
    bool from_disk = false;          // an OpenCL program was loaded from the disk cache
    double ms = 0;                   // time spent making it (with the others of its batch)
    std::size_t batch = 0;           // kernels made together with it, itself included
};

/// A kernel ready to launch on one backend.
class CompiledKernel {
public:
    virtual ~CompiledKernel() = default;
};

/// Counts changes to how backends run matrix products that change what a plan may fuse into
/// them (LAZYTENSOR_OPENCL_GEMM set from a program, epilogue fusion on or off): part of every
/// plan's signature, so that plans made before are not reused.
inline std::atomic<std::uint32_t>& gemm_config_generation() {
    static std::atomic<std::uint32_t> generation{0};
    return generation;
}

/// Element-wise kernels fused into a matrix product or a scan: per operand (a scan has one), a
/// producer applied to each element as it is loaded (ir::fits_as_prologue); a consumer applied
/// to each result as it is stored (ir::fits_as_epilogue), reading the product or scan as
/// parameter product_param.
struct FusedKernels {
    const ir::Kernel* prologue[2] = {nullptr, nullptr};
    const ir::Kernel* epilogue = nullptr;
    int product_param = -1;
};

class Backend : public BufferAllocator {
public:
    virtual Device device() const = 0;
    /// A human-readable name of the device ("host (2 threads, avx512bw)", an OpenCL device name).
    virtual std::string name() const = 0;

    /// A new buffer of `numel` elements (contents undefined). BackendError when no buffer that
    /// large can exist on the device; OutOfMemoryError when memory runs out or the buffer would
    /// pass the memory limit (set_memory_limit).
    BufferPtr allocate(DType dtype, std::int64_t numel) {
        std::size_t bytes = 0;
        if (numel < 0 || __builtin_mul_overflow(static_cast<std::size_t>(numel), dtype_size(dtype), &bytes))
            fail<BackendError>(device(), ": cannot allocate ", numel, " elements of ", dtype,
                               ": the size in bytes does not fit in 64 bits");
        if (bytes > largest_buffer())
            fail<BackendError>(device(), ": cannot allocate ", numel, " elements of ", dtype, " (", bytes,
                               " bytes): the device's largest buffer is ", largest_buffer(), " bytes");
        {
            std::lock_guard<std::mutex> lock(memory_mutex_);
            if (memory_.limit_bytes && memory_.live_bytes + bytes > memory_.limit_bytes)
                fail<OutOfMemoryError>("out of memory on ", device(), ": allocating ", numel, " elements of ", dtype, " (",
                                       bytes, " bytes) would pass the limit of ", memory_.limit_bytes,
                                       " bytes set with lt::set_memory_limit (", memory_.live_bytes, " bytes in ",
                                       memory_.live_buffers, " buffers are in use)");
            account(bytes, +1);
        }
        void* handle = nullptr;
        try {
            handle = allocate_memory(bytes, numel, dtype);
            return std::make_shared<Buffer>(device(), dtype, numel, handle, this);
        } catch (...) {
            if (handle) free_memory(handle, bytes);
            std::lock_guard<std::mutex> lock(memory_mutex_);
            account(bytes, -1);
            throw;
        }
    }
    /// Memory lazytensor did not allocate, as a buffer of `numel` elements (the seam's
    /// wrap_memory): `release` runs when the last holder lets go, after the kernels that use the
    /// memory (host kernels have finished when they return). Not counted in memory_stats.
    virtual BufferPtr wrap(DType dtype, std::int64_t numel, void* handle, std::function<void()> release, bool writable) {
        return std::make_shared<Buffer>(device(), dtype, numel, handle, std::move(release), writable);
    }
    /// Called by a Buffer's destructor.
    void release(void* handle, std::size_t bytes) noexcept final {
        {
            std::lock_guard<std::mutex> lock(memory_mutex_);
            account(bytes, -1);
        }
        free_memory(handle, bytes);
    }

    MemoryStats memory_stats() const {
        std::lock_guard<std::mutex> lock(memory_mutex_);
        MemoryStats s = memory_;
        s.cached_bytes = cached_bytes();
        return s;
    }
    void reset_peak_memory() {
        std::lock_guard<std::mutex> lock(memory_mutex_);
        memory_.peak_bytes = memory_.live_bytes;
    }
    /// Caps the bytes live buffers may hold (0: no cap). Buffers already live stay.
    void set_memory_limit(std::size_t bytes) {
        std::lock_guard<std::mutex> lock(memory_mutex_);
        memory_.limit_bytes = bytes;
    }
    /// Gives the caching allocator's free blocks back to the system or driver.
    virtual void release_cached() noexcept {}
    /// Copies `bytes` from host memory into the buffer at byte offset `at`.
    virtual void write(Buffer& dst, std::size_t at, const void* src, std::size_t bytes) = 0;
    /// Copies `bytes` from the buffer at byte offset `at` into host memory.
    virtual void read(const Buffer& src, std::size_t at, void* dst, std::size_t bytes) = 0;
    /// read() that may return before the copy is done: `dst` must stay valid until the event
    /// says so. It reads the buffer as it is after what is queued before it; what is queued
    /// later may run meanwhile but does not change what it reads.
    virtual std::shared_ptr<DeviceEvent> read_async(const Buffer& src, std::size_t at, void* dst, std::size_t bytes) {
        read(src, at, dst, bytes);
        return record_event();
    }
    /// `bytes` of host memory for staged copies to and from this device (read_async's
    /// destination, write's source), pinned where the device copies it by DMA; freed (or kept
    /// for reuse) when the last owner lets go.
    virtual std::shared_ptr<void> host_staging(std::size_t bytes) {
        return std::shared_ptr<char>(new char[bytes > 0 ? bytes : 1], std::default_delete<char[]>());
    }

    /// Runs a compiled kernel: `params` are its buffers in parameter order, `scalars` the values
    /// of its scalar parameters (ir::Kernel::scalars), each of that parameter's dtype.
    virtual void launch(CompiledKernel& kernel, const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars) = 0;
    /// Runs a matrix product into `c` (contiguous [batch..., m, n]), reading `a` and `b` as the
    /// layouts of `gemm` say. Its dtype is float32 or float64.
    virtual void gemm(const ir::Gemm& gemm, const Buffer& a, const Buffer& b, Buffer& c) = 0;
    /// The decisions about this device that graph builders and the scheduler make (products too
    /// thin for a GEMM, split-k, argument limits: ir/device_policy.hpp).
    virtual const DevicePolicy& policy() const = 0;
    /// Whether gemm_fused can run `epilogue` (an ir::fits_as_epilogue kernel reading the product
    /// as parameter `product_param`) in the stores of `gemm`. A change of the answer for the same
    /// arguments must bump gemm_config_generation() (plans keep it), as for fuses_prologue.
    virtual bool fuses_epilogue(const ir::Gemm&, const ir::Kernel&, int) const { return false; }
    /// Whether gemm_fused can run `prologue` (an ir::fits_as_prologue kernel) in the loads of an
    /// operand of `gemm`.
    virtual bool fuses_prologue(const ir::Gemm&, const ir::Kernel&) const { return false; }
    /// Runs `gemm` with kernels fused into it (FusedKernels). `a` and `b` are its operands' buffers
    /// (a prologue's input where it has one); `params` are the epilogue's buffers in parameter
    /// order (the last its output, where the results go; params[product_param] a buffer that
    /// also gets the product itself, or null), or just the result's buffer without an epilogue;
    /// `scalars` are the prologues' scalars (A's, B's), then the epilogue's.
    virtual void gemm_fused(const ir::Gemm& gemm, const FusedKernels& fusion, const Buffer& a, const Buffer& b,
                            const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars) {
        (void)gemm, (void)fusion, (void)a, (void)b, (void)params, (void)scalars;
        fail<Error>("lazytensor internal error: ", device(), " cannot fuse kernels into a matrix product");
    }
    /// Runs an inclusive scan into `out` (contiguous [outer, length, inner]), reading `in` as
    /// `scan` says. Its dtype is float32, float64 or int64 (which wraps).
    virtual void scan(const ir::Scan& scan, const Buffer& in, Buffer& out) = 0;
    /// Whether scan_fused can run `prologue` (an ir::fits_as_prologue kernel) in the loads of
    /// `scan`'s operand. A change of the answer for the same arguments must bump
    /// gemm_config_generation() (plans keep it), as for fuses_prologue.
    virtual bool fuses_scan_prologue(const ir::Scan&, const ir::Kernel&) const { return false; }
    /// Whether scan_fused can run `epilogue` (an ir::fits_as_epilogue kernel reading the scan as
    /// parameter `scan_param`) in the stores of `scan`.
    virtual bool fuses_scan_epilogue(const ir::Scan&, const ir::Kernel&, int) const { return false; }
    /// Runs `scan` with kernels fused into it (FusedKernels: prologue[0] and the epilogue).
    /// `in` is the operand's buffer (the prologue's input where it has one); `params` are the
    /// epilogue's buffers as gemm_fused takes them (params[product_param]: a buffer that also
    /// gets the scan itself, or null), or just the result's buffer; `scalars` are the
    /// prologue's, then the epilogue's.
    virtual void scan_fused(const ir::Scan& scan, const FusedKernels& fusion, const Buffer& in,
                            const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars) {
        (void)scan, (void)fusion, (void)in, (void)params, (void)scalars;
        fail<Error>("lazytensor internal error: ", device(), " cannot fuse kernels into a scan");
    }
    /// The first k elements of each row of `in` (contiguous [rows, n]) in sorted order, stably,
    /// NaN after every number (before them when descending): values into `values` and positions
    /// into `indices` (int64), both contiguous [rows, k].
    virtual void sort_rows(const Buffer& in, std::int64_t rows, std::int64_t n, std::int64_t k, bool descending,
                           Buffer& values, Buffer& indices) = 0;
    /// `out` = the first out.numel() elements of `base`, then out[positions[j]] = values[j] for
    /// j < count (accumulate: added, bool or-ed), skipping positions outside [0, out.numel());
    /// positions int64, values of out's dtype, all contiguous. Repeated positions: an overwrite
    /// keeps one of the values, an add sums them all. This one goes through host memory (read,
    /// scatter there, write back); backends override it.
    virtual void scatter(const Buffer& base, Buffer& out, const Buffer& positions, const Buffer& values, std::int64_t count,
                         bool accumulate) {
        const std::size_t size = dtype_size(out.dtype());
        std::vector<unsigned char> o(static_cast<std::size_t>(out.numel()) * size), v(static_cast<std::size_t>(count) * size);
        std::vector<std::int64_t> p(static_cast<std::size_t>(count));
        read(base, 0, o.data(), o.size());
        read(positions, 0, p.data(), p.size() * sizeof(std::int64_t));
        read(values, 0, v.data(), v.size());
        scatter_elements(out.dtype(), o.data(), out.numel(), p.data(), v.data(), count, accumulate);
        write(out, 0, o.data(), o.size());
    }
    /// Runs a transform (ir/fft.hpp) from `in` into `out`, both contiguous. This one goes
    /// through host memory (read, the host engine on the staging threads, write back); backends
    /// override it.
    virtual void fft(const ir::Fft& call, const Buffer& in, Buffer& out) {
        const std::size_t size = dtype_size(call.dtype);
        std::vector<unsigned char> i(static_cast<std::size_t>(call.input_count()) * size),
            o(static_cast<std::size_t>(call.output_count()) * size);
        read(in, 0, i.data(), i.size());
        host::run_fft(call, i.data(), o.data(), &host::staging_pool());
        write(out, 0, o.data(), o.size());
    }
    /// How fft() runs `call` (LAZYTENSOR_DEBUG=1).
    virtual std::string fft_routine(const ir::Fft&) const {
        return concat("the host FFT engine through host copies (", device(), ")");
    }
    /// Runs a linear-algebra routine (ir/linalg.hpp) over every matrix of its batch: `operands`
    /// are A's (and B's) buffers, read at the layouts `call` gives; `out` gets the packed results
    /// (contiguous [batch..., total]). LinAlgError for a matrix the routine cannot handle
    /// (singular, not positive definite, no convergence), naming the batch element.
    virtual void linalg(const ir::Linalg& call, const std::vector<const Buffer*>& operands, Buffer& out) = 0;
    /// How this backend runs `call` (LAZYTENSOR_DEBUG, lt::schedule).
    virtual std::string linalg_routine(const ir::Linalg& call) const = 0;
    /// How this backend runs `gemm` (LAZYTENSOR_DEBUG), e.g. "CLBlast GemmStridedBatched".
    /// Whether attention `a` (ir/attention.hpp) runs as one kernel here (then `attention`
    /// runs it; the scheduler otherwise leaves its three items as they are).
    virtual bool fuses_attention(const ir::Attention&) const { return false; }
    /// out = softmax(f(q @ kt), -1) @ v in one kernel; `scalars` are f's (the softmax kernel's).
    virtual void attention(const ir::Attention&, const Buffer&, const Buffer&, const Buffer&, Buffer&,
                           const std::vector<Scalar>&) {
        fail<BackendError>("lazytensor internal error: ", name(), " was given an attention item it does not fuse");
    }
    virtual std::string attention_source(const ir::Attention&) { return {}; }
    virtual std::string attention_routine(const ir::Attention&) const { return "attention kernel"; }
    virtual std::string gemm_routine(const ir::Gemm&) const { return "GEMM"; }
    /// Waits until every launched kernel has finished.
    virtual void synchronize() = 0;
    /// An event after everything queued so far (lt::Event). A backend whose work is done when
    /// its calls return (the host) gives one that is done.
    virtual std::shared_ptr<DeviceEvent> record_event() {
        struct Done final : DeviceEvent {
            bool is_done() override { return true; }
            void wait() override {}
        };
        return std::make_shared<Done>();
    }
    /// Makes what is queued from now on wait for `event` (recorded on any device): on the device
    /// where it can, else by waiting here.
    virtual void wait_for(DeviceEvent& event) { event.wait(); }
    /// Starts what is queued without waiting for it (OpenCL: clFlush), so that several devices
    /// run at once; nothing where work runs when launched (the host).
    virtual void flush() {}
    /// Whether kernels may compute in float64.
    virtual bool supports_float64() const { return true; }

    /// Device-side timing (LAZYTENSOR_DEBUG=3, benchmarks): while on, launch() records each
    /// kernel's device time; backends without device timers record nothing.
    virtual void set_record_times(bool) {}
    virtual bool record_times() const { return false; }
    /// The device times (ms) recorded since the last call, one per launch.
    virtual std::vector<double> take_device_times_ms() { return {}; }
    /// The generated source of a compiled kernel (LAZYTENSOR_DEBUG=2), if the backend has one.
    virtual std::string kernel_source(const CompiledKernel&) const { return {}; }
    /// The generated source that gemm_fused and scan_fused run for these kernels, where the
    /// backend generates one (LAZYTENSOR_DEBUG=2, check mode's messages); else empty.
    virtual std::string gemm_fused_source(const ir::Gemm&, const FusedKernels&) { return {}; }
    virtual std::string scan_fused_source(const ir::Scan&, const FusedKernels&) { return {}; }

    /// The compiled form of `kernel`, from the cache when a kernel of the same structure was
    /// compiled before; `outcome` says which, and how long compiling took. The cache keeps the
    /// most recently used kernels (cache_capacity()); workloads whose shapes keep changing do
    /// not grow it without bound.
    std::shared_ptr<CompiledKernel> get_kernel(const ir::Kernel& kernel, CompileOutcome* outcome = nullptr) {
        std::vector<CompileOutcome> outcomes;
        std::shared_ptr<CompiledKernel> k = std::move(get_kernels({&kernel}, outcomes)[0]);
        if (outcome) *outcome = outcomes[0];
        return k;
    }

    /// The compiled forms of several kernels (those one realize needs): each from the cache, or
    /// compiled now. A backend with a slow compiler builds the missing ones together
    /// (compile_batch), so a first realize of N new kernels costs less than N builds.
    /// outcomes[i] says how kernels[i] came to be.
    std::vector<std::shared_ptr<CompiledKernel>> get_kernels(const std::vector<const ir::Kernel*>& kernels,
                                                             std::vector<CompileOutcome>& outcomes) {
        std::vector<std::shared_ptr<CompiledKernel>> out(kernels.size());
        outcomes.assign(kernels.size(), CompileOutcome{});
        std::vector<std::string> keys(kernels.size());
        std::vector<const ir::Kernel*> missing;
        std::vector<std::size_t> missing_at;  // per missing kernel: its first position in `kernels`
        for (std::size_t i = 0; i < kernels.size(); ++i) {
            keys[i] = ir::key(*kernels[i]);
            if ((out[i] = cache_.find(keys[i]))) {
                ++memory_hits_;
                continue;
            }
            bool repeated = false;  // the same structure twice in one batch is compiled once
            for (std::size_t m : missing_at) repeated = repeated || keys[m] == keys[i];
            if (repeated) continue;
            missing.push_back(kernels[i]);
            missing_at.push_back(i);
        }
        if (missing.empty()) return out;
        const bool opencl = device().kind != Device::Kind::Host;
        BuildReport report(device(), CompileEvent::Kind::Program, [&] {
            return missing.size() == 1 ? kernel_summary(*missing[0])
                                       : concat(missing.size(), opencl ? " kernels as one program" : " kernels");
        });
        std::vector<CompileOutcome> made(missing.size());
        std::vector<std::shared_ptr<CompiledKernel>> fresh;
        try {
            fresh = compile_batch(missing, made);
        } catch (const std::exception& e) {
            add_build_time(CompileEvent::Kind::Program, report.failed(e.what()));
            throw;
        }
        // Where the batch came from: the compiler if it ran for any of them, else the disk cache.
        CompileEvent::Source source = opencl ? CompileEvent::Source::Memory : CompileEvent::Source::Compiler;
        for (const CompileOutcome& o : made)
            if (o.built_from_source) source = CompileEvent::Source::Compiler;
            else if (o.from_disk && source == CompileEvent::Source::Memory) source = CompileEvent::Source::Disk;
        const double ms = report.finished(source);
        kernels_compiled_ += missing.size();
        add_build_time(CompileEvent::Kind::Program, ms);
        for (std::size_t m = 0; m < missing.size(); ++m) {
            made[m].compiled = true;
            made[m].ms = ms;
            made[m].batch = missing.size();
            const std::size_t i = missing_at[m];
            outcomes[i] = made[m];
            out[i] = cache_.insert(keys[i], std::move(fresh[m])).first;
        }
        for (std::size_t i = 0; i < kernels.size(); ++i)
            if (!out[i])
                for (std::size_t m : missing_at)
                    if (keys[m] == keys[i]) out[i] = out[m];
        return out;
    }

    CompileStats compile_stats() const {
        CompileStats s;
        s.kernels_compiled = kernels_compiled_;
        s.memory_hits = memory_hits_;
        s.programs_built = programs_built_;
        s.disk_hits = disk_hits_;
        s.compile_ms = static_cast<double>(compile_us_.load()) / 1000;
        s.setup_ms = static_cast<double>(setup_us_.load()) / 1000;
        s.library_ms = static_cast<double>(library_us_.load()) / 1000;
        return s;
    }
    void reset_compile_stats() {
        kernels_compiled_ = memory_hits_ = programs_built_ = disk_hits_ = 0;
        compile_us_ = setup_us_ = library_us_ = 0;
    }
    /// Adds `ms` to the time of its kind in compile_stats (CompileStats says what each holds).
    void add_build_time(CompileEvent::Kind kind, double ms) {
        const auto us = static_cast<std::int64_t>(ms * 1000);
        (kind == CompileEvent::Kind::Setup ? setup_us_ : kind == CompileEvent::Kind::Library ? library_us_ : compile_us_) += us;
    }
    /// Builds ahead what running `gemm` (with these kernels fused into it) needs, without running
    /// it (lt::warmup): a backend that builds a kernel per product builds it now.
    virtual void prepare_gemm(const ir::Gemm& gemm, const FusedKernels& fusion) { (void)gemm, (void)fusion; }
    /// The same for attention run as one kernel (`attention`).
    virtual void prepare_attention(const ir::Attention& attention) { (void)attention; }

    std::size_t cached_kernels() const { return cache_.size(); }
    std::size_t cache_capacity() const { return cache_.capacity(); }
    virtual void set_cache_capacity(std::size_t kernels) { cache_.set_capacity(kernels); }
    /// Forgets every compiled kernel (they are compiled again on next use).
    virtual void clear_kernel_cache() { cache_.clear(); }
    /// The largest buffer the device can hold, in bytes (lt::devices() reports it).
    std::size_t max_buffer_bytes() const { return largest_buffer(); }

protected:
    /// Makes the kernel; sets `outcome`'s built_from_source or from_disk where they apply.
    virtual std::shared_ptr<CompiledKernel> compile(const ir::Kernel& kernel, CompileOutcome& outcome) = 0;
    /// Makes several kernels; by default one after another. A backend whose compiler has a
    /// large cost per build overrides it to build them together.
    virtual std::vector<std::shared_ptr<CompiledKernel>> compile_batch(const std::vector<const ir::Kernel*>& kernels,
                                                                       std::vector<CompileOutcome>& outcomes) {
        std::vector<std::shared_ptr<CompiledKernel>> out;
        for (std::size_t i = 0; i < kernels.size(); ++i) out.push_back(compile(*kernels[i], outcomes[i]));
        return out;
    }
    /// Counts a program the compiler built (from source) or loaded from the disk cache, and the
    /// `ms` it took where no batch of kernels (get_kernels) counts them already.
    void count_program(bool from_disk, double ms = 0) {
        ++(from_disk ? disk_hits_ : programs_built_);
        if (ms > 0) add_build_time(CompileEvent::Kind::Program, ms);
    }

    /// The largest buffer the device can hold, in bytes.
    virtual std::size_t largest_buffer() const = 0;
    /// `bytes` of device memory (from the backend's cache, or new); OutOfMemoryError or
    /// BackendError on failure.
    virtual void* allocate_memory(std::size_t bytes, std::int64_t numel, DType dtype) = 0;
    /// Frees (or caches) what allocate_memory returned.
    virtual void free_memory(void* handle, std::size_t bytes) noexcept = 0;
    /// Bytes held by the caching allocator.
    virtual std::size_t cached_bytes() const { return 0; }

private:
    void account(std::size_t bytes, int sign) {
        if (sign > 0) {
            memory_.live_bytes += bytes;
            ++memory_.live_buffers;
            memory_.peak_bytes = std::max(memory_.peak_bytes, memory_.live_bytes);
        } else {
            memory_.live_bytes -= bytes;
            --memory_.live_buffers;
        }
    }

    LruCache<CompiledKernel> cache_{kernel_cache_capacity_from_env()};
    std::atomic<std::size_t> kernels_compiled_{0}, memory_hits_{0}, programs_built_{0}, disk_hits_{0};
    std::atomic<std::int64_t> compile_us_{0}, setup_us_{0}, library_us_{0};
    mutable std::mutex memory_mutex_;
    MemoryStats memory_;  // cached_bytes is filled in on request
};

}  // namespace lazytensor::detail
