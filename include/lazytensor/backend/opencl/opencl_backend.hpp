// SPDX-License-Identifier: MIT
// The OpenCL backend: one context and one in-order queue per device (device.hpp); buffers from
// a caching allocator (allocator.hpp); kernels rendered from the IR (renderer.hpp), built once
// per source (in memory, and across processes through the disk cache: programs.hpp) and
// launched on the queue (launch.hpp, which every launch goes through).
//
// Each kind of work has its routines: the IR's kernels (kernel_routines.hpp), scans
// (scan_routines.hpp), sorts (sort_routines.hpp), FFTs through VkFFT (fft_routines.hpp), matrix
// products on lazytensor's own GEMM kernel or CLBlast (gemm_routines.hpp) and attention as one
// kernel (attention_routines.hpp).
// OpenCLBackend puts them together behind the Backend interface, with the switches tests and
// benchmarks turn.
//
// Caches, from the outside in: Backend::get_kernel keys compiled kernels (program + cl_kernel
// objects) by the normalized IR, so a hit costs neither a build nor clCreateKernel; below it,
// programs are keyed by their source, and then by source, options, device and driver on disk.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "../../core/error.hpp"
#include "../../core/env.hpp"
#include "../backend.hpp"
#include "allocator.hpp"
#include "attention_routines.hpp"
#include "cl_api.hpp"
#include "device.hpp"
#include "fft_routines.hpp"
#include "gemm_routines.hpp"
#include "kernel_routines.hpp"
#include "launch.hpp"
#include "linalg_routines.hpp"
#include "pinned.hpp"
#include "policy.hpp"
#include "programs.hpp"
#include "routine_context.hpp"
#include "scan_routines.hpp"
#include "scatter_routines.hpp"
#include "sort_routines.hpp"
#include "../host/lapack.hpp"

namespace lazytensor::detail::opencl {

class OpenCLBackend;

/// A marker on an OpenCL device's queue (lt::Event): done when the commands before it are.
/// `keep` is what the commands need until then (a staged read's snapshot).
class QueueEvent final : public DeviceEvent {
public:
    QueueEvent(OpenCLBackend& owner, cl_event event, BufferPtr keep = nullptr)
        : owner_(owner), event_(event), keep_(std::move(keep)) {}
    QueueEvent(const QueueEvent&) = delete;
    QueueEvent& operator=(const QueueEvent&) = delete;
    ~QueueEvent() override { clReleaseEvent(event_); }
    bool is_done() override;
    void wait() override;
    OpenCLBackend& owner() const { return owner_; }
    cl_event event() const { return event_; }

private:
    OpenCLBackend& owner_;
    cl_event event_;
    BufferPtr keep_;
};

class OpenCLBackend final : public Backend {
public:
    OpenCLBackend(int index, cl_platform_id platform, cl_device_id device)
        : device_(index, platform, device), memory_(device_),
          programs_(device_, [this](bool from_disk, double ms) { count_program(from_disk, ms); }), launcher_(device_) {
        count_failed_builds();
    }
    /// An application's context, device and queue (lt::opencl::adopt; the queue may be null).
    OpenCLBackend(int index, cl_context context, cl_device_id device, cl_command_queue queue)
        : device_(index, context, device, queue), memory_(device_),
          programs_(device_, [this](bool from_disk, double ms) { count_program(from_disk, ms); }), launcher_(device_) {
        count_failed_builds();
    }

    Device device() const override { return device_.device(); }
    std::string name() const override {
        return device_.name() + " (" + device_.platform_name() + ", " + device_.kind() + ")";
    }
    std::string describe() const { return device_.describe(); }
    /// "gpu", "cpu" or "accelerator".
    std::string kind() const { return device_.kind(); }
    const std::string& platform_name() const { return device_.platform_name(); }
    bool supports_float64() const override { return device_.fp64(); }
    cl_context context() const { return device_.context(); }
    cl_command_queue queue() const { return device_.queue(); }
    cl_device_id device_id() const { return device_.id(); }
    const DeviceTraits& traits() const { return device_.traits(); }

    // ------------------------------------------------------------------------------- memory

    void release_cached() noexcept override { memory_.release_cached(); }
    /// A cl_mem made elsewhere (DLPack) as a buffer: BlockAllocator::wrap.
    BufferPtr wrap(DType dtype, std::int64_t numel, void* handle, std::function<void()> release, bool writable) override {
        return memory_.wrap(dtype, numel, handle, std::move(release), writable);
    }

    void write(Buffer& dst, std::size_t at, const void* src, std::size_t bytes) override {
        if (!bytes) return;
        check(clEnqueueWriteBuffer(queue(), static_cast<cl_mem>(dst.handle()), CL_TRUE, at, bytes, src, 0, nullptr, nullptr),
              "clEnqueueWriteBuffer", concat("copying ", bytes, " bytes to ", describe()));
    }
    void read(const Buffer& src, std::size_t at, void* dst, std::size_t bytes) override {
        if (!bytes) return;
        const cl_int err =
            clEnqueueReadBuffer(queue(), static_cast<cl_mem>(src.handle()), CL_TRUE, at, bytes, dst, 0, nullptr, nullptr);
        launcher_.check_launched(true);  // first: a failed kernel is named, and reported once (NVIDIA's wait reports it too)
        check(err, "clEnqueueReadBuffer", concat("copying ", bytes, " bytes from ", describe()));
    }

    /// A snapshot of the bytes on the compute queue (a device copy, at device bandwidth), read on
    /// the transfer queue: the kernels queued later run while it crosses to host memory, and
    /// none of them can change what it reads.
    std::shared_ptr<DeviceEvent> read_async(const Buffer& src, std::size_t at, void* dst, std::size_t bytes) override {
        if (!bytes) return record_event();
        const std::string what = concat("copying ", bytes, " bytes from ", describe());
        BufferPtr snapshot = allocate(DType::UInt8, static_cast<std::int64_t>(bytes));
        cl_mem copy = static_cast<cl_mem>(snapshot->handle());
        cl_event copied = nullptr, done = nullptr;
        check(clEnqueueCopyBuffer(queue(), static_cast<cl_mem>(src.handle()), copy, at, 0, bytes, 0, nullptr, &copied),
              "clEnqueueCopyBuffer", what);
        flush();
        cl_command_queue transfer = device_.transfer_queue();
        const cl_int err = clEnqueueReadBuffer(transfer, copy, CL_FALSE, 0, bytes, dst, 1, &copied, &done);
        clReleaseEvent(copied);
        check(err, "clEnqueueReadBuffer", what);
        check(clFlush(transfer), "clFlush", what);
        return std::make_shared<QueueEvent>(*this, done, std::move(snapshot));
    }
    /// Pinned blocks from a pool (pinned.hpp), mapped through the transfer queue.
    std::shared_ptr<void> host_staging(std::size_t bytes) override {
        std::call_once(pinned_made_, [&] {
            pinned_ = std::make_unique<PinnedPool>(context(), device_.transfer_queue(), describe());
        });
        return pinned_->acquire(bytes);
    }

    // ------------------------------------------------------------------------------ running

    void launch(CompiledKernel& kernel, const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars) override {
        kernels_.launch(kernel, params, scalars);
    }
    std::string kernel_source(const CompiledKernel& compiled) const override {
        return static_cast<const OpenCLKernel&>(compiled).rendered.source;
    }

    void flush() override { check(clFlush(queue()), "clFlush", concat("on ", describe())); }
    void synchronize() override {
        if (cl_command_queue transfer = device_.transfer_queue_if_made()) clFinish(transfer);  // (errors: reported by the events)
        const cl_int err = clFinish(queue());
        launcher_.check_launched(true);  // first: a failed kernel is named, and reported once (NVIDIA's wait reports it too)
        check(err, "clFinish", concat("on ", describe()));
    }

    /// A marker after everything queued so far (lt::Event).
    std::shared_ptr<DeviceEvent> record_event() override {
        cl_event marker = nullptr;
        check(clEnqueueMarkerWithWaitList(queue(), 0, nullptr, &marker), "clEnqueueMarkerWithWaitList",
              concat("recording an event on ", describe()));
        return std::make_shared<QueueEvent>(*this, marker);
    }
    /// Another device's marker in this context is waited for by this queue (a barrier); any other
    /// event, here.
    void wait_for(DeviceEvent& event) override {
        auto* marker = dynamic_cast<QueueEvent*>(&event);
        if (!marker || marker->owner().context() != context()) {
            event.wait();
            return;
        }
        cl_event e = marker->event();
        check(clEnqueueBarrierWithWaitList(queue(), 1, &e, nullptr), "clEnqueueBarrierWithWaitList",
              concat("waiting for an event of ", marker->owner().describe(), " on ", describe()));
    }

    /// Keeps `event` (a command queued on this device's queue; the reference passes to the backend)
    /// until a wait checks it, as for a kernel: a copy that fails is reported by the next wait.
    void track(cl_event event, const std::string& name) { launcher_.remember(event, name); }
    /// Whether every launch keeps its event until a wait checks it (LAZYTENSOR_OPENCL_LAUNCH_EVENTS).
    bool launch_events() const { return launcher_.launch_events(); }
    /// Tests only: turns launch events on or off (after a wait: the list must be empty).
    void set_launch_events(bool on) {
        synchronize();
        launcher_.set_launch_events(on);
    }
    /// Tests only: the next kernel launched on this device waits for this event (a user event the
    /// test sets to an error status stands in for a kernel that fails while the device runs it).
    /// One per device: another device's launches neither wait for it nor take it.
    std::atomic<cl_event>& detail_launch_dependency() { return launcher_.launch_dependency(); }

    /// Makes launch() time every kernel with profiling events (waits for each kernel).
    void set_record_times(bool on) override { launcher_.set_record_times(on); }
    bool record_times() const override { return launcher_.record_times(); }
    std::vector<double> take_device_times_ms() override { return launcher_.take_times_ms(); }

    // ---------------------------------------------------------------------- scans and sorts

    void scan(const ir::Scan& s, const Buffer& in, Buffer& out) override { scans_.run(s, in, out); }
    bool fuses_scan_prologue(const ir::Scan& s, const ir::Kernel& prologue) const override {
        return fuse_epilogues_ && scans_.can_fuse(s, prologue);
    }
    bool fuses_scan_epilogue(const ir::Scan& s, const ir::Kernel& epilogue, int) const override {
        return fuse_epilogues_ && scans_.can_fuse(s, epilogue);
    }
    void scan_fused(const ir::Scan& s, const FusedKernels& fusion, const Buffer& in, const std::vector<Buffer*>& params,
                    const std::vector<Scalar>& scalars) override {
        scans_.run_fused(s, fusion, in, params, scalars);
    }
    std::string scan_fused_source(const ir::Scan& s, const FusedKernels& fusion) override {
        return scans_.fused_source(s, fusion);
    }

    void scatter(const Buffer& base, Buffer& out, const Buffer& positions, const Buffer& values, std::int64_t count,
                 bool accumulate) override {
        if (scatters_.runs(out.dtype(), accumulate)) scatters_.run(base, out, positions, values, count, accumulate);
        else Backend::scatter(base, out, positions, values, count, accumulate);
    }
    /// VkFFT where the build has it and its configuration expresses the call, else host staging
    /// (fft_routines.hpp).
    void fft(const ir::Fft& call, const Buffer& in, Buffer& out) override { ffts_.run(call, in, out); }
    std::string fft_routine(const ir::Fft& call) const override { return ffts_.routine(call); }
    /// Tests: whether fft() runs `call` through VkFFT (else through host memory).
    bool fft_uses_vkfft(const ir::Fft& call) const { return ffts_.uses_vkfft(call); }
    /// VkFFT plans held in memory (bounded like the kernel cache).
    std::size_t cached_fft_plans() const { return ffts_.cached_plans(); }
    /// Whether the engine was built with VkFFT (LAZYTENSOR_VKFFT).
    static bool fft_has_vkfft() { return FftRoutines::built_with_vkfft(); }
    /// Which FFT runs transforms (LAZYTENSOR_OPENCL_FFT; Auto: VkFFT except on CPU devices).
    FftChoice fft_choice() const { return ffts_.choice(); }
    /// Tests and benchmarks: chooses the FFT for the transforms run from now on (VkFFT in a
    /// build without it is a DeviceError).
    void set_fft_choice(FftChoice choice) { ffts_.set_choice(choice); }
    void sort_rows(const Buffer& in, std::int64_t rows, std::int64_t n, std::int64_t k, bool descending, Buffer& values,
                   Buffer& indices) override {
        sorts_.run(in, rows, n, k, descending, values, indices);
    }

    // ------------------------------------------------------------------- linear algebra

    /// Cholesky and solve in kernels of our own (linalg_routines.hpp: batched small matrices, and
    /// recursive on the GEMM kernel for larger ones, linalg_blocked.hpp) where they apply; otherwise LAPACK on the host: the operands are read into host memory,
    /// the routines run there, and the results are written back to the device.
    void linalg(const ir::Linalg& call, const std::vector<const Buffer*>& operands, Buffer& out) override {
        if (linalgs_.runs(call)) {
            linalgs_.run(call, operands, out);
            return;
        }
        host::run_linalg_staged(
            call, operands, out, [&](const Buffer& b, std::size_t at, void* dst, std::size_t bytes) { read(b, at, dst, bytes); },
            [&](Buffer& b, const void* src, std::size_t bytes) { write(b, 0, src, bytes); });
    }
    std::string linalg_routine(const ir::Linalg& call) const override {
        if (linalgs_.runs(call)) return linalgs_.routine(call);
        return concat("LAPACK ", call.dtype == DType::Float64 ? "d" : "s", linalg_info(call.op).routines,
                      " on the host (operands copied from the device, results copied back)");
    }
    /// Tests and benchmarks: where lt::linalg's batched small Cholesky and solve run
    /// (LAZYTENSOR_OPENCL_LINALG: auto, device or host).
    void set_linalg_choice(LinalgChoice choice) { linalgs_.set_choice(choice); }
    LinalgChoice linalg_choice() const { return linalgs_.choice(); }
    /// Tests: the order of the recursive routines' leaves (0: the device's default, else 2 to 64),
    /// and the largest order the batched small kernels take (0: 64; the recursive routines above).
    void set_linalg_block(int block) { linalgs_.set_block(block); }
    int linalg_block() const { return linalgs_.block(); }
    /// Tests: whether the recursive LU's row swaps may run in local memory (BlockedLinalg).
    void set_linalg_local_swaps(bool on) { linalgs_.set_local_swaps(on); }
    void set_linalg_small_order(std::int64_t order) { linalgs_.set_small_order(order); }
    std::int64_t linalg_small_order() const { return linalgs_.small_order(); }

    // ------------------------------------------------------------------- matrix products

    void gemm(const ir::Gemm& g, const Buffer& a, const Buffer& b, Buffer& c) override { gemm_.run(g, a, b, c); }
    bool fuses_epilogue(const ir::Gemm& g, const ir::Kernel& epilogue, int) const override {
        return fuse_epilogues_ && gemm_.can_fuse(g, epilogue);
    }
    bool fuses_prologue(const ir::Gemm& g, const ir::Kernel& prologue) const override {
        return fuse_epilogues_ && gemm_.can_fuse_prologue(g, prologue);
    }
    void gemm_fused(const ir::Gemm& g, const FusedKernels& fusion, const Buffer& a, const Buffer& b,
                    const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars) override {
        gemm_.run_fused(g, fusion, a, b, params, scalars);
    }
    std::string gemm_fused_source(const ir::Gemm& g, const FusedKernels& fusion) override {
        return gemm_.fused_source(g, fusion);
    }
    std::string gemm_routine(const ir::Gemm& g) const override { return gemm_.routine(g); }
    void prepare_gemm(const ir::Gemm& g, const FusedKernels& fusion) override { gemm_.prepare(g, fusion); }
    void prepare_attention(const ir::Attention& a) override {
        if (fuses_attention(a)) attention_.prepare(a);
    }
    const DevicePolicy& policy() const override { return policy_; }

    /// c = a x b on the own GEMM kernel: one launch, operands read in place; `epilogue` is
    /// applied to each result before its store, with `epilogue_buffers` as its parameters.
    void own_gemm(const ir::Gemm& g, const Buffer& a, const Buffer& b, Buffer& c, const FusedEpilogue& epilogue = {},
                  const std::vector<const Buffer*>& epilogue_buffers = {}, const std::vector<ScalarArg>& epilogue_values = {},
                  const FusedPrologue& prologue_a = {}, const FusedPrologue& prologue_b = {}) {
        gemm_.own(g, a, b, c, epilogue, FusedArgs{epilogue_buffers, epilogue_values}, prologue_a, prologue_b);
    }
    /// Whether `g` runs on the own GEMM kernel (else CLBlast).
    bool uses_own_gemm(const ir::Gemm& g) const { return gemm_.uses_own(g); }
    /// The parameters the own GEMM kernel runs `g` with on this device.
    GemmKernelParams own_gemm_params(const ir::Gemm& g) const { return gemm_.params(g); }
    /// The layout class the own GEMM kernel runs `g` with (parameter set `p`).
    GemmLayoutClass own_gemm_layout(const ir::Gemm& g, const GemmKernelParams& p) const { return gemm_.layout(g, p); }

    /// Which GEMM runs matrix products (LAZYTENSOR_OPENCL_GEMM; Auto: per shape and device).
    GemmChoice gemm_choice() const { return gemm_.choice(); }
    /// Tests and benchmarks: chooses the GEMM for the products run from now on (CLBlast in a
    /// build without it is a DeviceError).
    void set_gemm_choice(GemmChoice choice) { gemm_.set_choice(choice); }
    /// Benchmarks: the parameters of the own GEMM kernel from now on (nullopt: the device's set).
    void set_gemm_params(std::optional<GemmKernelParams> params) { gemm_.set_params(params); }
    /// Tests only: the own GEMM kernel computes element offsets in 64 bits whatever the sizes
    /// (as it does for matrices of 2^31 elements or more).
    void set_gemm_wide_index(bool on) { gemm_.set_wide_index(on); }
    /// Tests and benchmarks: whether products (and scans) fuse their element-wise consumers and
    /// producers from now on (LAZYTENSOR_GEMM_EPILOGUE=0 turns it off from the start).
    void set_fuse_epilogues(bool on) {
        fuse_epilogues_ = on;
        ++gemm_config_generation();
    }
    bool fuse_epilogues() const { return fuse_epilogues_; }
    /// Tests: whether a cast from float16 runs in the product's loads (null: the default, not on
    /// GPUs, where the H100 ran relu(x16.float() @ w1 + b1) at 8192x784x512 slower fused, 0.242
    /// ms, than as a cast kernel and a product, 0.231 ms).
    void set_fuse_half_loads(std::optional<bool> on) { gemm_.set_fuse_half_loads(on); }

    // ------------------------------------------------------------------------- attention

    bool fuses_attention(const ir::Attention& a) const override { return attention_.fuses(a); }
    std::string attention_routine(const ir::Attention& a) const override { return attention_.routine(a); }
    std::string attention_source(const ir::Attention& a) override { return attention_.source(a); }
    void attention(const ir::Attention& a, const Buffer& q, const Buffer& kt, const Buffer& v, Buffer& out,
                   const std::vector<Scalar>& scalars) override {
        attention_.run(a, q, kt, v, out, scalars);
    }
    /// Tests and benchmarks: whether attention runs as one kernel from now on
    /// (LAZYTENSOR_FUSE_ATTENTION=0 turns it off from the start).
    void set_fuse_attention(bool on) { attention_.set_fuse(on); }
    /// Benchmarks: the attention kernel's block and work-group shape from now on (nullopt: the
    /// device's choice); where it cannot run a product's depths, attention is not fused.
    void set_attention_params(std::optional<AttentionParams> params) { attention_.set_params(params); }

    // --------------------------------------------------------------------------- programs

    using ProgramSource = opencl::ProgramSource;
    /// A built program for `source` (ProgramCache::build).
    std::shared_ptr<ProgramOwner> build_program(const std::string& source, ProgramSource* from = nullptr,
                                                int max_registers = 0) {
        return programs_.build(source, from, max_registers);
    }
    /// Built programs held in memory (bounded like the kernel cache).
    std::size_t cached_programs() const { return programs_.size(); }
    ProgramDiskCache& disk_cache() { return programs_.disk(); }
    const std::string& build_options() const { return programs_.options(); }

    /// The kernel cache and the program cache below it keep `kernels` entries each.
    void set_cache_capacity(std::size_t kernels) override {
        Backend::set_cache_capacity(kernels);
        programs_.set_capacity(kernels);
    }
    /// Forgets compiled kernels and built programs held in memory (the disk cache stays).
    void clear_kernel_cache() override {
        Backend::clear_kernel_cache();
        programs_.clear();
        gemm_.clear_cache();
        attention_.clear_cache();
        ffts_.clear_cache();
        fused_code_.clear();
    }

    /// Tests only: replaces the command queue and returns the old one. A null queue stands in
    /// for a device that was lost mid-run (every call then fails with CL_INVALID_COMMAND_QUEUE).
    cl_command_queue exchange_queue(cl_command_queue queue) { return device_.exchange_queue(queue); }
    /// Tests only: replaces the program build options and returns the old ones (bad options
    /// stand in for a driver whose compiler fails).
    std::string exchange_build_options(std::string options) { return programs_.exchange_options(std::move(options)); }

protected:
    std::shared_ptr<CompiledKernel> compile(const ir::Kernel& kernel, CompileOutcome& outcome) override {
        return kernels_.compile(kernel, outcome);
    }
    std::vector<std::shared_ptr<CompiledKernel>> compile_batch(const std::vector<const ir::Kernel*>& kernels,
                                                               std::vector<CompileOutcome>& outcomes) override {
        return kernels_.compile_batch(kernels, outcomes);
    }

    std::size_t largest_buffer() const override { return device_.largest_buffer(); }
    void* allocate_memory(std::size_t bytes, std::int64_t numel, DType dtype) override {
        return memory_.allocate(bytes, numel, dtype);
    }
    void free_memory(void* handle, std::size_t bytes) noexcept override { memory_.free(handle, bytes); }
    std::size_t cached_bytes() const override { return memory_.cached_bytes(); }

private:
    void count_failed_builds() {
        programs_.on_failed_build([this](double ms) { add_build_time(CompileEvent::Kind::Program, ms); });
    }

    // Destroyed in reverse: the routines' kernels, then the launcher (which waits for the
    // queue and releases the launches' events), the programs, the cached blocks, and last the
    // queue and context.
    OpenCLDevice device_;
    BlockAllocator memory_;
    ProgramCache programs_;
    FusedCodeCache fused_code_;
    Launcher launcher_;
    RoutineContext routine_context_{device_, programs_, fused_code_, launcher_, *this};
    KernelRoutines kernels_{routine_context_};
    ScanRoutines scans_{routine_context_};
    SortRoutines sorts_{routine_context_};
    ScatterRoutines scatters_{routine_context_};
    FftRoutines ffts_{routine_context_};
    GemmRoutines gemm_{routine_context_};
    LinalgRoutines linalgs_{routine_context_, gemm_};  // (its large matrices run on gemm_)
    AttentionRoutines attention_{routine_context_};
    bool fuse_epilogues_ = env_flag("LAZYTENSOR_GEMM_EPILOGUE", true);
    std::once_flag pinned_made_;
    std::unique_ptr<PinnedPool> pinned_;  // host_staging's blocks
    OpenCLPolicy policy_{device_.traits().gpu};
};

// ------------------------------------------------------------------------------------ registry

inline bool QueueEvent::is_done() {
    cl_int status = CL_QUEUED;
    check(clGetEventInfo(event_, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr), "clGetEventInfo",
          concat("an event of ", owner_.describe()));
    if (status < 0) owner_.synchronize();  // names the command that failed
    if (status < 0) fail<BackendError>("work queued on ", owner_.describe(), " before an event failed (status ", status, ")");
    return status == CL_COMPLETE;
}

inline void QueueEvent::wait() {
    const cl_int err = clWaitForEvents(1, &event_);
    if (err != CL_SUCCESS) owner_.synchronize();  // names the command that failed
    check(err, "clWaitForEvents", concat("an event of ", owner_.describe()));
}

/// The backend of opencl:N, created on first use and kept for the process's lifetime (buffers
/// of static tensors may outlive any destruction order).
/// The opened OpenCL backends: opencl:0 to opencl:K-1 are the platforms' devices (opened on first
/// use), later indices the devices applications handed over (adopt_opencl). Never destroyed, like
/// the backends they point to: a static vector would be freed at exit, leaving the backends
/// unreachable (LeakSanitizer reported their kernel caches).
struct OpenCLRegistry {
    std::mutex mutex;
    std::vector<OpenCLBackend*> backends;
};
inline OpenCLRegistry& opencl_registry() {
    static OpenCLRegistry& r = *new OpenCLRegistry();
    return r;
}

/// The backend `make` returns, its making reported as the device's setup (a compile event, and
/// CompileStats::setup_ms).
template <class Make>
OpenCLBackend* made_with_setup_report(Device device, Make make) {
    // The first device made also pays for finding the drivers and devices (once per process).
    const std::int64_t discovery_us = device_discovery_us().exchange(0);
    BuildReport report(device, CompileEvent::Kind::Setup,
                       discovery_us ? "device setup (drivers and devices listed, context and queue)" : "device setup (context and queue)");
    report.started_earlier(static_cast<double>(discovery_us) / 1000);
    OpenCLBackend* b = nullptr;
    try {
        b = make();
    } catch (const std::exception& e) {
        report.failed(e.what());
        throw;
    }
    b->add_build_time(CompileEvent::Kind::Setup, report.finished(CompileEvent::Source::None));
    return b;
}

inline OpenCLBackend& opencl_backend(int index) {
    OpenCLRegistry& r = opencl_registry();
    const auto& ids = opencl_device_ids();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.backends.size() < ids.size()) r.backends.resize(ids.size(), nullptr);
    if (r.backends.empty())
        fail<DeviceError>("device opencl:", index, " is not available: no OpenCL device was found (no OpenCL platform "
                          "is installed; on Debian, `apt-get install pocl-opencl-icd` gives one on the CPU)");
    if (index < 0 || static_cast<std::size_t>(index) >= r.backends.size())
        fail<DeviceError>("device opencl:", index, " does not exist: this machine has ", r.backends.size(), " OpenCL device",
                          r.backends.size() == 1 ? "" : "s", " (opencl:0 to opencl:", r.backends.size() - 1, ")");
    auto& b = r.backends[static_cast<std::size_t>(index)];
    if (!b) b = made_with_setup_report(Device::opencl(index), [&] {
            return new OpenCLBackend(index, ids[static_cast<std::size_t>(index)].first, ids[static_cast<std::size_t>(index)].second);
        });
    return *b;
}

/// Opens an application's context, device and queue (null: a queue of lazytensor's in that
/// context) as the next device index, and returns it.
inline int adopt_opencl(cl_context context, cl_device_id device, cl_command_queue queue) {
    OpenCLRegistry& r = opencl_registry();
    const auto& ids = opencl_device_ids();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (r.backends.size() < ids.size()) r.backends.resize(ids.size(), nullptr);
    const int index = static_cast<int>(r.backends.size());
    r.backends.push_back(made_with_setup_report(Device::opencl(index), [&] { return new OpenCLBackend(index, context, device, queue); }));
    return index;
}

/// How many OpenCL devices there are: the platforms' and the adopted ones.
inline std::size_t opencl_device_count() {
    OpenCLRegistry& r = opencl_registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    return std::max(r.backends.size(), opencl_device_ids().size());
}

}  // namespace lazytensor::detail::opencl
