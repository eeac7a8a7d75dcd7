// SPDX-License-Identifier: MIT
// The seam between the typed front end and the engine: everything the front end (and the
// public API) needs from the scheduler, lowering and backends, as declared functions. The front
// end includes this and never the engine, so the engine can be compiled once:
//
//   header-only (default)            the engine's definitions are inline in every unit;
//   LAZYTENSOR_SEPARATE_RUNTIME      units see these declarations only (and compile in seconds);
//   LAZYTENSOR_IMPLEMENTATION        defined in exactly one unit, which holds the definitions
//                                    (runtime/engine.hpp) as ordinary external functions.
//
// Only lazytensor.hpp includes runtime/engine.hpp (in header-only mode, and in the
// implementation unit); a unit that uses a front-end header alone must be a separate-runtime one.
//
// (core/engine_mode.hpp defines the macros and the link checks.)
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "../core/config.hpp"
#include "../core/device.hpp"
#include "../core/dtype.hpp"
#include "../core/engine_mode.hpp"
#include "../core/reports.hpp"

namespace lazytensor {

/// Every device this build can run on; the host is always first, then every OpenCL device of
/// every platform (opencl:0, opencl:1, ...).
LAZYTENSOR_ENGINE_API std::vector<DeviceInfo> devices();
/// The device new tensors are created on: set_default_device's, else LAZYTENSOR_DEVICE (host,
/// opencl, opencl:N), else host. DeviceError if LAZYTENSOR_DEVICE is unknown or unavailable.
LAZYTENSOR_ENGINE_API Device default_device();
/// Makes `d` the device new tensors are created on; DeviceError (and no change) if `d` is
/// not available.
LAZYTENSOR_ENGINE_API void set_default_device(Device d);
/// Waits until every kernel launched on `d` has finished (realize() only enqueues on OpenCL
/// devices; reading a result waits by itself). DeviceError if `d` is not available.
LAZYTENSOR_ENGINE_API void synchronize(Device d);

/// How much memory the tensors on `d` hold (live, peak, cached by the allocator, the limit).
/// DeviceError if `d` is not available.
LAZYTENSOR_ENGINE_API MemoryStats memory_stats(Device d);
/// Starts a new peak: memory_stats(d).peak_bytes becomes the live bytes now.
LAZYTENSOR_ENGINE_API void reset_peak_memory(Device d);
/// Caps the bytes that live buffers on `d` may hold (0: no cap, the default). An allocation past
/// it throws OutOfMemoryError, as a full device does, and leaves every tensor usable. Tensors
/// that already exist are kept even when they hold more.
LAZYTENSOR_ENGINE_API void set_memory_limit(Device d, std::size_t bytes);
/// Runs host kernels on `threads` threads (the calling thread included) from now on: waits for
/// the host work running now. The default is LAZYTENSOR_THREADS, else the CPUs the process may
/// use (its affinity mask and its container's CPU quota). ValueError unless 1 <= threads <= 4096.
LAZYTENSOR_ENGINE_API void set_num_threads(int threads);
/// The threads host kernels run on.
LAZYTENSOR_ENGINE_API int num_threads();
/// How long idle host threads wait for the next kernel, spinning, before they sleep (default
/// 200 microseconds, LAZYTENSOR_SPIN_US): back-to-back kernels skip a wake-up, and a process
/// between realizes uses no CPU after it. 0: sleep at once. ValueError if negative.
LAZYTENSOR_ENGINE_API void set_thread_spin(std::chrono::microseconds spin);
/// Gives the free blocks that the caching allocator keeps for reuse on `d` back to the system
/// (the host) or the driver (OpenCL), as torch.cuda.empty_cache does.
LAZYTENSOR_ENGINE_API void empty_cache(Device d);

/// What `d` has compiled since the start (or reset_compile_stats): kernels compiled and found in
/// memory, OpenCL programs built from source or loaded from the disk cache, and the time spent.
/// A loop that changes only scalar values or random seeds compiles nothing after its first step.
LAZYTENSOR_ENGINE_API CompileStats compile_stats(Device d);
/// Sets compile_stats(d)'s counters to zero.
LAZYTENSOR_ENGINE_API void reset_compile_stats(Device d);

/// Sends every compile event (core/reports.hpp CompileEvent: a kernel or program built or
/// loaded from the disk cache, a library's first call or plan, a device's setup) to `handler`,
/// from now on, on the thread that builds; nullptr restores the default (no handler; with
/// LAZYTENSOR_DEBUG=1 or more, a line on stderr per finished or failed build, with or without a
/// handler). Kernels and programs found in memory send nothing. A handler that throws does not
/// break the build or realize that reported (its exception is dropped, said once on stderr).
/// Safe to call from any thread, also while other threads build. The handler runs while the
/// device that builds is locked: it may read the event and update a display, but should not wait
/// for another thread's work on that device.
LAZYTENSOR_ENGINE_API void set_log_handler(std::function<void(const CompileEvent&)> handler);

/// Whether check mode is on (LAZYTENSOR_CHECK=1 at start): see runtime/check.hpp.
LAZYTENSOR_ENGINE_API bool check_enabled();
/// Turns check mode on or off for the following realizes.
LAZYTENSOR_ENGINE_API void set_check_enabled(bool on);

namespace detail {

struct Node;
class Backend;
namespace graph {
struct Operand;
}

/// The backend that runs `d`'s kernels; DeviceError, naming the device, if it is unavailable
/// (so the front end calls it to check a device before any work).
LAZYTENSOR_ENGINE_API Backend& backend_for(Device d);
/// Whether a matrix product of `dtype` on `device` runs as the backend's GEMM (a schedule item
/// of its own) rather than as a reduction kernel: float and double products do on every
/// backend (OpenCL runs its own GEMM kernel where the build has no CLBlast).
LAZYTENSOR_ENGINE_API bool gemm_available(DType dtype, Device device);

/// Whether `device` computes float64 (the host always; OpenCL with cl_khr_fp64). Composites that
/// would compute in double for accuracy (an integer mean) choose another way where it does not.
LAZYTENSOR_ENGINE_API bool supports_float64(Device device);
/// Computes `nodes` together (runtime/realize.hpp): one schedule, shared parts computed once.
/// If anything fails, every node is left as it was.
LAZYTENSOR_ENGINE_API void realize_nodes(const std::vector<Node*>& nodes);
/// Builds every kernel and program realize_nodes(nodes) would build, running nothing and leaving
/// the nodes as they are (lt::warmup). A failed build throws what realize_nodes would.
LAZYTENSOR_ENGINE_API void warmup_nodes(const std::vector<Node*>& nodes);
/// The schedule realize_nodes would run, without running it.
LAZYTENSOR_ENGINE_API std::vector<ScheduleItem> schedule_items(const std::vector<Node*>& nodes);
/// Writes `value` into the memory of `target` (a tensor or a view of one), now: Tensor::assign.
LAZYTENSOR_ENGINE_API void assign_into(const std::shared_ptr<Node>& target, const graph::Operand& value);
/// Gives a write's target memory as assign_into does first (the tensor it views computed, then
/// the view, which must be that memory: ValueError naming `op` otherwise).
LAZYTENSOR_ENGINE_API void realize_for_write(const std::shared_ptr<Node>& target, const char* op);

/// Reverse mode (autodiff/reverse.hpp): the gradient of sum_i <outputs[i], cotangents[i]> with
/// respect to each of `inputs`, as lazy nodes of the inputs' shapes and dtypes (zeros where no
/// output depends on an input). `op` names the caller in errors.
LAZYTENSOR_ENGINE_API std::vector<std::shared_ptr<Node>> vjp_nodes(const std::vector<std::shared_ptr<Node>>& outputs,
                                                                   const std::vector<std::shared_ptr<Node>>& cotangents,
                                                                   const std::vector<std::shared_ptr<Node>>& inputs,
                                                                   const char* op);

/// An OpenCL device's handles (lt::opencl): its cl_context, cl_device_id and cl_command_queue.
struct OpenCLHandles {
    void* context = nullptr;
    void* device = nullptr;
    void* queue = nullptr;
};
/// Opens an application's OpenCL context, device and queue (null: a queue of lazytensor's in that
/// context) as a new device opencl:N, and returns it. DeviceError without OpenCL, or for an
/// out-of-order queue or one of another context.
LAZYTENSOR_ENGINE_API Device adopt_opencl_device(void* context, void* device, void* queue);
/// The handles of OpenCL device `d` (DeviceError for the host or an unavailable device).
LAZYTENSOR_ENGINE_API OpenCLHandles opencl_handles(Device d);

/// Memory lazytensor did not allocate, as a buffer of `numel` elements of `dtype` on `d` (the
/// host: a pointer; OpenCL: a cl_mem of d's context, checked (DeviceError) and retained):
/// `release` (may be empty) runs once, when the last holder lets go, after the kernels that use
/// the memory. Read-only unless `writable`. Not counted in memory_stats. If this throws,
/// `release` is not called.
LAZYTENSOR_ENGINE_API BufferPtr wrap_memory(Device d, DType dtype, std::int64_t numel, void* handle,
                                            std::function<void()> release, bool writable);
/// Records that `buffer`'s address was handed out (data(), to_dlpack), so that memory another
/// buffer may wrap is known to be shared (an assign then computes the readers of both first).
LAZYTENSOR_ENGINE_API void expose_memory(const BufferPtr& buffer);

/// A new buffer on `d` holding `bytes` bytes copied from host memory (`numel` elements of `dtype`).
LAZYTENSOR_ENGINE_API BufferPtr upload(Device d, DType dtype, std::int64_t numel, const void* data);
/// Copies `bytes` bytes at byte offset `at` of `src` to host memory (waits for the kernels
/// that write it).
LAZYTENSOR_ENGINE_API void download(const Buffer& src, std::size_t at, void* dst, std::size_t bytes);
/// An event after everything queued on `d` so far (lt::Event).
LAZYTENSOR_ENGINE_API std::shared_ptr<DeviceEvent> record_event(Device d);
/// Makes the work queued on `d` from now on wait for `event`.
LAZYTENSOR_ENGINE_API void wait_for_event(Device d, DeviceEvent& event);
/// Starts the kernels queued on `d` without waiting for them (so that several devices run at once).
LAZYTENSOR_ENGINE_API void flush(Device d);
/// A new buffer on `dst` holding `numel` elements of `dtype` copied from byte `at` of `src`
/// (x.to(device)). Between OpenCL devices of one context the copy is direct and asynchronous
/// (ordered by events); between others it goes through host memory.
LAZYTENSOR_ENGINE_API BufferPtr copy_to_device(const Buffer& src, std::size_t at, DType dtype, std::int64_t numel, Device dst);
/// A new buffer on `d` of `numel` elements of `dtype`, contents undefined, to be filled with
/// write_buffer before a tensor reads it (lt::load_npy fills one piece by piece, so that a large
/// file needs no whole copy in host memory).
LAZYTENSOR_ENGINE_API BufferPtr allocate_buffer(Device d, DType dtype, std::int64_t numel);
/// Copies `bytes` bytes from host memory into `dst` at byte offset `at`. BackendError if the
/// range passes the end of the buffer.
LAZYTENSOR_ENGINE_API void write_buffer(Buffer& dst, std::size_t at, const void* src, std::size_t bytes);

}  // namespace detail
}  // namespace lazytensor
