// SPDX-License-Identifier: MIT
// The plain types the engine reports through the public API: memory and compile statistics,
// the devices, and the items of a schedule (lt::memory_stats, lt::compile_stats, lt::devices,
// lt::schedule).
#pragma once

#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "device.hpp"

namespace lazytensor {

/// The memory of one device's tensors, as lt::memory_stats reports it.
struct MemoryStats {
    std::size_t live_bytes = 0;    ///< in buffers that tensors (or a running schedule) hold now
    std::size_t live_buffers = 0;  ///< how many such buffers
    std::size_t peak_bytes = 0;    ///< the most live_bytes since the last lt::reset_peak_memory
    std::size_t cached_bytes = 0;  ///< freed blocks the caching allocator keeps for reuse
    std::size_t limit_bytes = 0;   ///< lt::set_memory_limit's limit on live_bytes; 0 for none
};

/// What one device compiled and what its caches answered, as lt::compile_stats reports it. A
/// loop whose scalars or seeds change compiles nothing after its first step. The three times
/// are apart, so that a first step's time can be accounted for: compile_ms + setup_ms +
/// library_ms is what building and setting up cost the device.
struct CompileStats {
    std::size_t kernels_compiled = 0;  ///< kernels made because no kernel of that structure was in memory
    std::size_t memory_hits = 0;       ///< kernels found in memory (a new plan whose kernels were known)
    std::size_t programs_built = 0;    ///< OpenCL programs built from source: the device's compiler ran
    std::size_t disk_hits = 0;         ///< OpenCL programs loaded from the disk cache instead
    /// Milliseconds spent making lazytensor's own kernels and programs: the fused kernels of a
    /// realize (rendering, building or loading from the disk cache, creating the kernels; on the
    /// host, planning the interpreter's kernel) and every other program lazytensor generates on
    /// OpenCL (its GEMM and attention kernels, scans, sorts, scatters, FFT scaling).
    double compile_ms = 0;
    /// Milliseconds spent setting the device up: on OpenCL, making its backend (context and
    /// command queue, or adopting the application's, and reading the device's properties), and
    /// for the first OpenCL device made, listing the drivers' platforms and devices. Once per
    /// process and device; 0 on the host.
    double setup_ms = 0;
    /// Milliseconds spent in libraries' first calls, which build the libraries' own programs out
    /// of lazytensor's sight: CLBlast's first call per routine and precision (enqueueing it,
    /// CLBlast's program builds included) and the creation of each VkFFT plan.
    double library_ms = 0;
};

/// One build (or load) of something a device runs, as lt::set_log_handler's handler hears it: a
/// `Started` event when it begins, then `Finished` or `Failed`. Only builds are reported: a
/// kernel or program found in memory sends nothing.
struct CompileEvent {
    /// Where the event is in the build.
    enum class Phase { Started, Finished, Failed };
    /// What was built; says which time of CompileStats it counts in.
    enum class Kind {
        Program,  ///< lazytensor's own kernel or program (compile_ms)
        Library,  ///< a library's first call or plan: CLBlast, VkFFT (library_ms)
        Setup,    ///< a device's setup: context and queue (setup_ms)
    };
    /// Where the result came from (known when finished).
    enum class Source {
        None,      ///< not known yet (Started, Failed) or not a program (device setup)
        Memory,    ///< a program held in memory (a kernel new to the kernel cache whose program was built before)
        Disk,      ///< the disk cache (LAZYTENSOR_CACHE_DIR)
        Compiler,  ///< built now: the device's compiler, a library's build, or the host's kernel planning
    };
    Device device;                  ///< the device it was built for
    Phase phase = Phase::Started;   ///< started, finished or failed
    Kind kind = Kind::Program;      ///< what it is
    std::string what;               ///< in user terms: "fused kernel: add, exp, sum -> float32[4096]", "4 kernels
                                    ///< as one program", "GEMM kernel 64x64 tile, float32", "CLBlast sgemm",
                                    ///< "VkFFT plan", "device setup"
    Source source = Source::None;   ///< where it came from (Finished)
    double ms = 0;                  ///< how long it took (Finished, Failed)
    std::string error;              ///< the error's text, with the build log and source (Failed)
};

///@{
/// "started", "finished", "failed"; "program", "library", "setup"; "none", "memory", "disk", "compiler".
inline const char* to_string(CompileEvent::Phase phase) {
    switch (phase) {
        case CompileEvent::Phase::Started: return "started";
        case CompileEvent::Phase::Finished: return "finished";
        case CompileEvent::Phase::Failed: return "failed";
    }
    return "?";
}
inline const char* to_string(CompileEvent::Kind kind) {
    switch (kind) {
        case CompileEvent::Kind::Program: return "program";
        case CompileEvent::Kind::Library: return "library";
        case CompileEvent::Kind::Setup: return "setup";
    }
    return "?";
}
inline const char* to_string(CompileEvent::Source source) {
    switch (source) {
        case CompileEvent::Source::None: return "none";
        case CompileEvent::Source::Memory: return "memory";
        case CompileEvent::Source::Disk: return "disk";
        case CompileEvent::Source::Compiler: return "compiler";
    }
    return "?";
}
///@}

/// A device and what it is, as listed by lt::devices().
struct DeviceInfo {
    Device device;  ///< the device, to pass to tensors and .to()
    std::string name;  ///< "host (16 threads, avx512bw)", "NVIDIA H100 80GB HBM3 (NVIDIA CUDA, gpu)"
    std::string kind;  ///< "host", or the OpenCL device type: "gpu", "cpu" or "accelerator"
    bool float64 = true;  ///< computes double (OpenCL: cl_khr_fp64, unless LAZYTENSOR_OPENCL_FP64=off)
    std::size_t largest_buffer = 0;  ///< bytes one tensor's buffer may hold (OpenCL: CL_DEVICE_MAX_MEM_ALLOC_SIZE)
};

/// One item of a schedule, as lt::schedule() reports it.
struct ScheduleItem {
    /// What runs the item.
    enum class Kind {
        Kernel,  // a generated kernel (or the expression's compiled loop on the host)
        Matmul,  // the backend's GEMM
        Scan,    // the backend's scan (cumsum, cumprod)
        View,    // zero-copy: a view of another buffer
        Attention,  // softmax(f(q @ kt), -1) @ v as one kernel: the scores and weights never stored
        Sort,    // the backend's row sort: the positions of the first k along the last axis, in order
        Linalg,  // a LAPACK routine over a batch of matrices (lt::linalg; on the host for every device)
        Collective,  // data combined over the processes of a group (lt::dist: MPI)
        Scatter,  // the backend's scatter: a copy of a tensor with values written or added at flat positions
        Fft,      // the backend's fast Fourier transform along up to three axes
    };
    Kind kind = Kind::Kernel;  ///< what runs it
    std::string reason;               ///< why its output is materialized
    std::vector<std::string> ops;     ///< the ops fused into it, in evaluation order
    std::vector<std::string> inputs;  ///< per input buffer, the shape it is read in: "float32[2, 3]" (a
                                      ///< view's shape, not its buffer's; "float32[4, 16] and [16, 4]":
                                      ///< one buffer read through two views)
    int scalars = 0;                  ///< scalar values passed to it at launch (operands, seeds, ...)
    std::string output;               ///< the result, e.g. "float32[4, 8]"
    int phases = 0;                   ///< reduce and store phases of the kernel
    bool compiled_loop = false;       ///< runs as the expression's compiled loop, not interpreted
    std::int64_t work = 0;            ///< a kernel's instructions times the elements each phase runs over
                                      ///< (values computed, loads and stores included; 0 for other kinds)
    std::string ir;                   ///< the kernel IR listing, or the GEMM's shape and layouts
};

///@{
/// "kernel", "matmul", "scan", "view", "attention", "sort", "linalg", "collective", "scatter" or "fft".
inline const char* to_string(ScheduleItem::Kind kind) {
    switch (kind) {
        case ScheduleItem::Kind::Kernel: return "kernel";
        case ScheduleItem::Kind::Matmul: return "matmul";
        case ScheduleItem::Kind::Scan: return "scan";
        case ScheduleItem::Kind::View: return "view";
        case ScheduleItem::Kind::Attention: return "attention";
        case ScheduleItem::Kind::Sort: return "sort";
        case ScheduleItem::Kind::Linalg: return "linalg";
        case ScheduleItem::Kind::Collective: return "collective";
        case ScheduleItem::Kind::Scatter: return "scatter";
        case ScheduleItem::Kind::Fft: return "fft";
    }
    return "?";
}
inline std::ostream& operator<<(std::ostream& out, ScheduleItem::Kind kind) { return out << to_string(kind); }
///@}

}  // namespace lazytensor
