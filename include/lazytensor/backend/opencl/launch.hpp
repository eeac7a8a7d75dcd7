// SPDX-License-Identifier: MIT
// Launching kernels on a device's queue: KernelArgs, the one place where values become OpenCL
// kernel arguments (buffers, scalars of each dtype, __local arrays, the first matrix of a batch
// walked in chunks), and the Launcher, which enqueues every kernel of lazytensor's own (CLBlast
// enqueues its own), keeps each launch's event until a wait checks it (a kernel that fails
// while running is reported by the next wait) and times launches where times are recorded.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../core/device.hpp"
#include "../../core/dtype.hpp"
#include "../../core/env.hpp"
#include "../../core/error.hpp"
#include "../../ir/kernel.hpp"
#include "../backend.hpp"
#include "cl_api.hpp"
#include "device.hpp"

namespace lazytensor::detail::opencl {

/// The size of a __local array argument of a kernel.
struct LocalBytes {
    std::size_t bytes;
};

/// A scalar kernel argument: the value in the argument's OpenCL type (cl_scalar_arg_type).
struct ScalarArg {
    alignas(8) unsigned char bytes[8] = {};
    std::size_t size = 0;

    ScalarArg(const Scalar& value, DType t) {
        auto put = [&](auto v) {
            std::memcpy(bytes, &v, sizeof v);
            size = sizeof v;
        };
        switch (t) {
            case DType::Bool: put(static_cast<cl_uchar>(value.as<bool>() ? 1 : 0)); break;
            case DType::UInt8: put(static_cast<cl_uchar>(value.as<std::uint8_t>())); break;
            case DType::Int8: put(static_cast<cl_char>(value.as<std::int8_t>())); break;
            case DType::Int16: put(static_cast<cl_short>(value.as<std::int16_t>())); break;
            case DType::UInt16: put(static_cast<cl_ushort>(value.as<std::uint16_t>())); break;
            case DType::Int32: put(static_cast<cl_int>(value.as<std::int32_t>())); break;
            case DType::UInt32: put(static_cast<cl_uint>(value.as<std::uint32_t>())); break;
            case DType::Int64: put(static_cast<cl_long>(value.as<std::int64_t>())); break;
            case DType::UInt64: put(static_cast<cl_ulong>(value.as<std::uint64_t>())); break;
            case DType::Float16: put(static_cast<cl_float>(value.cast(DType::Float16).as<float>())); break;
            case DType::BFloat16: put(static_cast<cl_float>(value.cast(DType::BFloat16).as<float>())); break;
            case DType::Float32: put(static_cast<cl_float>(value.as<float>())); break;
            case DType::Float64: put(static_cast<cl_double>(value.as<double>())); break;
            case DType::Complex64:
            case DType::Complex128: complex_dtype_inside(t);
        }
    }
};

/// The arguments of fused kernels' parameters (after the fixed ones): buffers, then values.
struct FusedArgs {
    std::vector<const Buffer*> buffers;
    std::vector<ScalarArg> values;
};

/// The arguments of the kernels fused into a product (`operands` 2) or a scan (1), as
/// Backend::gemm_fused and scan_fused get them: the epilogue's buffers (the product's or
/// scan's own first: params[product_param], else the output), its scalars and whether the
/// product or scan is stored too, then the prologues' scalars.
inline FusedArgs fused_args(const FusedKernels& fusion, int operands, const std::vector<Buffer*>& params,
                            const std::vector<Scalar>& scalars) {
    FusedArgs args;
    std::size_t next_scalar = 0;
    std::vector<ScalarArg> prologue_values;
    auto take_scalars = [&](const ir::Kernel& k, std::vector<ScalarArg>& into) {
        for (DType t : k.scalars) into.emplace_back(scalars.at(next_scalar++), t);
    };
    for (int o = 0; o < operands; ++o)
        if (fusion.prologue[o]) take_scalars(*fusion.prologue[o], prologue_values);
    if (const ir::Kernel* k = fusion.epilogue) {
        const int pp = fusion.product_param;
        Buffer* product = params[static_cast<std::size_t>(pp)];
        args.buffers.push_back(product ? product : params.back());
        for (std::size_t p = 0; p + 1 < params.size(); ++p)
            if (static_cast<int>(p) != pp) args.buffers.push_back(params[p]);
        take_scalars(*k, args.values);
        args.values.emplace_back(Scalar::of<std::int32_t>(product ? 1 : 0), DType::Int32);
    }
    args.values.insert(args.values.end(), prologue_values.begin(), prologue_values.end());
    return args;
}

/// Where a kernel that walks a batch of matrices takes the index of the first matrix of a
/// launch (Launcher::run_per_matrix sets it for each chunk).
struct FirstMatrix {};

/// Sets a kernel's arguments in order: the one place where kernel arguments are set.
class KernelArgs {
public:
    template <class... Args>
    explicit KernelArgs(cl_kernel kernel, const Args&... args) : kernel_(kernel) {
        add(args...);
    }

    /// The next arguments: buffers (a Buffer, or each of a vector of them), values of the OpenCL
    /// types of their parameters (cl_int, cl_long, ScalarArg), __local arrays (LocalBytes), the
    /// fused kernels' (FusedArgs) and a batch's first matrix (FirstMatrix).
    template <class... Args>
    KernelArgs& add(const Args&... args) {
        (add_one(args), ...);
        return *this;
    }

    cl_kernel kernel() const { return kernel_; }
    void set_first_matrix(cl_long first) const {
        check(clSetKernelArg(kernel_, first_matrix_, sizeof first, &first), "clSetKernelArg");
    }

private:
    void add_one(const Buffer& buffer) {
        cl_mem m = static_cast<cl_mem>(buffer.handle());
        set(sizeof m, &m);
    }
    void add_one(const std::vector<Buffer*>& buffers) {
        for (const Buffer* b : buffers) add_one(*b);
    }
    void add_one(LocalBytes local) { set(local.bytes, nullptr); }
    void add_one(const ScalarArg& value) { set(value.size, value.bytes); }
    void add_one(const FusedArgs& fused) {
        for (const Buffer* b : fused.buffers) add_one(*b);
        for (const ScalarArg& v : fused.values) add_one(v);
    }
    void add_one(FirstMatrix) { first_matrix_ = next_++; }
    template <class T, std::enable_if_t<std::is_arithmetic_v<T> && !std::is_same_v<T, bool>, int> = 0>
    void add_one(T value) {
        set(sizeof value, &value);
    }

    void set(std::size_t size, const void* value) { check(clSetKernelArg(kernel_, next_++, size, value), "clSetKernelArg"); }

    cl_kernel kernel_;
    cl_uint next_ = 0;
    cl_uint first_matrix_ = 0;
};

/// Enqueues the kernels of one device, and tracks and times them.
class Launcher {
public:
    explicit Launcher(const OpenCLDevice& device)
        // An event per launch, for kernels that fail while running: cheap on CPU devices, about
        // 10 us a realize on an NVIDIA GPU, whose own waits report a kernel's fault (docs/errors.md).
        : device_(device), launch_events_(env_flag("LAZYTENSOR_OPENCL_LAUNCH_EVENTS", device.type() != DeviceType::Gpu)) {}
    Launcher(const Launcher&) = delete;
    Launcher& operator=(const Launcher&) = delete;
    ~Launcher() {
        clFinish(device_.queue());
        for (const Launched& l : launched_) clReleaseEvent(l.event);
    }

    /// Enqueues `kernel` (its arguments set) over a `dims`-dimensional NDRange. Returns its
    /// device time in ms where `timed` (waiting for it), else 0.
    double enqueue(cl_kernel kernel, std::string_view name, cl_uint dims, const std::size_t* global,
                   const std::size_t* local, bool timed) {
        timed = timed && device_.profiling();  // (an application's queue may not time commands)
        cl_event event = nullptr, wait = take_launch_dependency();
        const cl_int err = clEnqueueNDRangeKernel(device_.queue(), kernel, dims, nullptr, global, local, wait ? 1 : 0,
                                                  wait ? &wait : nullptr, timed || launch_events_ ? &event : nullptr);
        check(err, "clEnqueueNDRangeKernel", concat("launching ", name, " on ", device_.describe()));
        if (launch_events_) {
            if (timed) clRetainEvent(event);  // event_ms releases its reference; the list keeps its own
            remember(event, std::string(name));
        }
        return timed ? event_ms(event) : 0;
    }

    /// Runs `kernel` over `work` work-items in groups of `group` (0: the driver's choice) with
    /// these arguments (KernelArgs::add takes them). Not timed.
    template <class... Args>
    void run(const KernelOwner& kernel, const char* name, std::size_t work, std::size_t group, const Args&... args) {
        KernelArgs(kernel.kernel).add(args...);
        enqueue(kernel.kernel, name, 1, &work, group ? &group : nullptr, false);
    }

    /// Runs a kernel whose third NDRange dimension walks `count` matrices, in chunks of at most
    /// 65535 (NVIDIA's limit along the second and third dimensions): its FirstMatrix argument
    /// gets each chunk's first matrix; the first dimension spans `global0` work-items. Timed as
    /// one item where times are recorded.
    void run_per_matrix(const KernelArgs& args, const char* name, std::int64_t count, std::size_t global0,
                        const std::size_t (&local)[3]) {
        constexpr std::int64_t most_matrices = 65535;
        double ms = 0;
        for (std::int64_t first = 0; first < count; first += most_matrices) {
            args.set_first_matrix(first);
            const std::size_t global[3] = {global0, local[1], static_cast<std::size_t>(std::min(count - first, most_matrices))};
            ms += enqueue(args.kernel(), name, 3, global, local, record_times_);
        }
        if (record_times_) times_ms_.push_back(ms);
    }

    /// Whether launches are timed with profiling events (each waits for its kernel).
    bool record_times() const { return record_times_; }
    void set_record_times(bool on) { record_times_ = on; }
    /// Records the time of one item (a launch, a CLBlast product) run while times are recorded.
    void record_time(double ms) { times_ms_.push_back(ms); }
    std::vector<double> take_times_ms() { return std::exchange(times_ms_, {}); }

    /// Whether every launch keeps its event until a wait checks it (LAZYTENSOR_OPENCL_LAUNCH_EVENTS).
    bool launch_events() const { return launch_events_; }
    /// After a wait only (the list must be empty).
    void set_launch_events(bool on) { launch_events_ = on; }

    /// Tests only: the event the next launch waits for (OpenCLBackend::detail_launch_dependency).
    std::atomic<cl_event>& launch_dependency() { return launch_dependency_; }

    /// Keeps `event` (a command queued on this device's queue; the reference passes here) until
    /// a wait checks it.
    void remember(cl_event event, std::string name) {
        std::lock_guard<std::mutex> lock(launched_mutex_);
        launched_.push_back(Launched{event, std::move(name)});
        // Keep the list short between waits, at O(1) a launch: when the device is far behind,
        // most events are still pending after a scan, and the next scan waits for 512 more.
        if (launched_.size() >= next_scan_) {
            check_launched(false);
            next_scan_ = launched_.size() + 512;
        }
    }

    /// Releases the events of kernels that completed; throws for one that failed. `all`: after a
    /// wait (every event is final); otherwise only those already final are looked at.
    void check_launched(bool all) {
        std::unique_lock<std::mutex> lock(launched_mutex_, std::defer_lock);
        if (all) lock.lock();  // (called with the lock held otherwise)
        std::string failed;
        cl_int failed_status = 0;
        std::size_t kept = 0;
        for (Launched& l : launched_) {
            cl_int status = CL_COMPLETE;
            const cl_int err = clGetEventInfo(l.event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, nullptr);
            if (err == CL_SUCCESS && status > CL_COMPLETE && !all) {
                if (&launched_[kept] != &l) launched_[kept] = std::move(l);  // still running (not a self-move)
                ++kept;
                continue;
            }
            if (failed.empty() && (err != CL_SUCCESS || status < 0)) {
                failed = l.name;
                failed_status = err != CL_SUCCESS ? err : status;
            }
            clReleaseEvent(l.event);
        }
        launched_.resize(kept);
        if (all) next_scan_ = 512;
        if (!failed.empty())
            fail<BackendError>("OpenCL: kernel ", failed, " failed while ", device_.describe(), " ran it: execution status ",
                               status_name(failed_status), " (", failed_status, "). The realize that launched it had ",
                               "returned (OpenCL runs kernels after realize returns): the tensors it computed have ",
                               "undefined contents; tensors it did not compute are intact",
                               lost_device_hint(failed_status));
    }

private:
    /// The event the next launch waits for (see launch_dependency), taken: null almost always.
    cl_event take_launch_dependency() {
        return launch_dependency_.load(std::memory_order_relaxed) ? launch_dependency_.exchange(nullptr) : nullptr;
    }

    double event_ms(cl_event event) {
        cl_ulong start = 0, end = 0;
        cl_int err = clWaitForEvents(1, &event);
        if (err == CL_SUCCESS) err = clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_START, sizeof start, &start, nullptr);
        if (err == CL_SUCCESS) err = clGetEventProfilingInfo(event, CL_PROFILING_COMMAND_END, sizeof end, &end, nullptr);
        clReleaseEvent(event);
        check(err, "clGetEventProfilingInfo", concat("on ", device_.describe()));
        return static_cast<double>(end - start) * 1e-6;
    }

    const OpenCLDevice& device_;
    bool record_times_ = false;
    std::vector<double> times_ms_;

    // Kernels launched since the last wait, with their events: drivers report a kernel that
    // failed while running only in its event's status (PoCL's clFinish and blocking reads
    // return CL_SUCCESS), so every wait looks at them.
    struct Launched {
        cl_event event;
        std::string name;
    };
    std::mutex launched_mutex_;
    std::vector<Launched> launched_;
    bool launch_events_ = true;
    std::size_t next_scan_ = 512;
    std::atomic<cl_event> launch_dependency_{nullptr};
};

}  // namespace lazytensor::detail::opencl
