// SPDX-License-Identifier: MIT
// The engine's side of the seam (runtime/seam.hpp): the definitions of what the seam declares
// lazytensor.hpp includes this in header-only units (the definitions are inline) and in the one
// LAZYTENSOR_IMPLEMENTATION unit (ordinary external definitions); separate-runtime units never
// see it.
#pragma once

#include <memory>
#include <mutex>
#include <unordered_set>
#include <vector>

#include "../autodiff/reverse.hpp"
#include "check.hpp"
#include "device.hpp"
#include "exposed.hpp"
#include "realize.hpp"
#include "seam.hpp"
#include "warmup.hpp"

#if !LAZYTENSOR_ENGINE_DEFINITIONS
#error "lazytensor: runtime/engine.hpp holds the engine's definitions; a LAZYTENSOR_SEPARATE_RUNTIME unit must not include it (define LAZYTENSOR_IMPLEMENTATION in the one unit that should)"
#endif

#if defined(LAZYTENSOR_IMPLEMENTATION) && defined(__GNUC__) && defined(__ELF__)
// The symbols that separate-runtime units refer to, and that header-only units clash with
// (runtime/seam.hpp). A second implementation unit clashes with this one.
extern "C" {
extern const char lazytensor_ERROR_LAZYTENSOR_SEPARATE_RUNTIME_needs_one_unit_with_LAZYTENSOR_IMPLEMENTATION;
extern const char lazytensor_ERROR_a_unit_is_header_only_while_another_uses_LAZYTENSOR_SEPARATE_RUNTIME;
extern const char lazytensor_ERROR_LAZYTENSOR_IMPLEMENTATION_is_defined_in_more_than_one_unit;
const char lazytensor_ERROR_LAZYTENSOR_SEPARATE_RUNTIME_needs_one_unit_with_LAZYTENSOR_IMPLEMENTATION = 0;
const char lazytensor_ERROR_a_unit_is_header_only_while_another_uses_LAZYTENSOR_SEPARATE_RUNTIME = 0;
const char lazytensor_ERROR_LAZYTENSOR_IMPLEMENTATION_is_defined_in_more_than_one_unit = 0;
}
#endif

namespace lazytensor {

LAZYTENSOR_ENGINE_API std::vector<DeviceInfo> devices() {
    std::vector<DeviceInfo> out{
        DeviceInfo{Device::host(), detail::host_backend().name(), "host", true, detail::host_backend().max_buffer_bytes()}};
#if LAZYTENSOR_OPENCL
    for (std::size_t i = 0; i < detail::opencl::opencl_device_count(); ++i) {
        try {
            auto& b = detail::opencl::opencl_backend(static_cast<int>(i));
            out.push_back(DeviceInfo{b.device(), b.name(), b.kind(), b.supports_float64(), b.max_buffer_bytes()});
        } catch (const Error&) {
            // A device whose driver cannot give it a context is not usable: leave it out.
        }
    }
#endif
    return out;
}

namespace detail {

// The backends' policies reach the graph builders and the scheduler, installed when the engine starts.
inline const DevicePolicy& policy_of(Device device) { return device_backend(device).policy(); }
[[maybe_unused]] inline const bool device_policies_installed = (device_policy_lookup() = &policy_of, true);

}  // namespace detail

LAZYTENSOR_ENGINE_API Device default_device() {
    auto& s = detail::default_device_state();
    std::lock_guard<std::mutex> lock(s.mutex);
    if (!s.set) {
        s.device = detail::env("LAZYTENSOR_DEVICE") ? detail::parse_device(detail::env("LAZYTENSOR_DEVICE")) : Device::host();
        detail::device_backend(s.device);  // fails now, naming the device, if it is unavailable
        s.set = true;
    }
    return s.device;
}

LAZYTENSOR_ENGINE_API void set_default_device(Device d) {
    detail::device_backend(d);
    auto& s = detail::default_device_state();
    std::lock_guard<std::mutex> lock(s.mutex);
    s.device = d;
    s.set = true;
}

LAZYTENSOR_ENGINE_API void synchronize(Device d) {
    detail::Backend& backend = detail::device_backend(d);
    const detail::DeviceLock lock(d);
    backend.synchronize();
}
namespace detail {
LAZYTENSOR_ENGINE_API std::shared_ptr<DeviceEvent> record_event(Device d) {
    Backend& backend = device_backend(d);
    const DeviceLock lock(d);
    std::shared_ptr<DeviceEvent> event = backend.record_event();
    backend.flush();
    return event;
}
LAZYTENSOR_ENGINE_API void wait_for_event(Device d, DeviceEvent& event) {
    Backend& backend = device_backend(d);
    const DeviceLock lock(d);
    backend.wait_for(event);
}
}  // namespace detail
LAZYTENSOR_ENGINE_API MemoryStats memory_stats(Device d) { return detail::device_backend(d).memory_stats(); }
LAZYTENSOR_ENGINE_API void reset_peak_memory(Device d) { detail::device_backend(d).reset_peak_memory(); }
LAZYTENSOR_ENGINE_API void set_memory_limit(Device d, std::size_t bytes) { detail::device_backend(d).set_memory_limit(bytes); }
LAZYTENSOR_ENGINE_API void empty_cache(Device d) { detail::device_backend(d).release_cached(); }
LAZYTENSOR_ENGINE_API void set_num_threads(int threads) {
    if (threads < 1 || threads > 4096)
        detail::fail<ValueError>("set_num_threads: ", threads, " is not a thread count (a whole number from 1 to 4096)");
    const detail::DeviceLock lock(Device::host());
    detail::host_backend().set_threads(threads);
}
LAZYTENSOR_ENGINE_API int num_threads() { return detail::host_backend().threads(); }
LAZYTENSOR_ENGINE_API void set_thread_spin(std::chrono::microseconds spin) {
    if (spin.count() < 0) detail::fail<ValueError>("set_thread_spin: a negative time (", spin.count(), " us)");
    detail::host_backend().pool().set_spin_us(spin.count());
}

LAZYTENSOR_ENGINE_API CompileStats compile_stats(Device d) { return detail::device_backend(d).compile_stats(); }
LAZYTENSOR_ENGINE_API void reset_compile_stats(Device d) { detail::device_backend(d).reset_compile_stats(); }
LAZYTENSOR_ENGINE_API void set_log_handler(std::function<void(const CompileEvent&)> handler) {
    detail::set_compile_handler(std::move(handler));
}
LAZYTENSOR_ENGINE_API bool check_enabled() { return detail::check_flag().load(); }
LAZYTENSOR_ENGINE_API void set_check_enabled(bool on) { detail::check_flag().store(on); }

namespace detail {

LAZYTENSOR_ENGINE_API Backend& backend_for(Device d) { return device_backend(d); }

LAZYTENSOR_ENGINE_API bool supports_float64(Device d) { return device_backend(d).supports_float64(); }

LAZYTENSOR_ENGINE_API bool gemm_available(DType dtype, Device device) { return graph::runs_as_gemm(dtype, device); }

LAZYTENSOR_ENGINE_API void realize_nodes(const std::vector<Node*>& nodes) { realize_graph(nodes); }

LAZYTENSOR_ENGINE_API void warmup_nodes(const std::vector<Node*>& nodes) { warmup_graph(nodes); }

LAZYTENSOR_ENGINE_API std::vector<ScheduleItem> schedule_items(const std::vector<Node*>& nodes) {
    return describe_schedule(nodes);
}

/// Gives an assign's target memory: the tensor it is a view of is computed first (so that the
/// write reaches it), then the view, which must be that memory. The caller holds the device lock.
inline void realize_target(const NodePtr& target_handle, const char* op) {
    Node* target = target_handle.get();
    if (target->realized()) return;
    // (Held: realizing the view drops its sources, and the user may hold only the view.)
    NodePtr base = target_handle;
    while (!base->realized() && is_view(base->kind)) base = base->src[0];
    if (!base->realized()) realize_graph({base.get()});
    realize_graph({target});
    if (target->buffer != base->buffer)
        fail<ValueError>(op, ": the target (shape ", target->shape, ") is a reshape that the memory of its tensor "
                         "cannot express without a copy, so a write to it would not reach that tensor; write "
                         "through slices, flips and permutations instead");
}

LAZYTENSOR_ENGINE_API void realize_for_write(const NodePtr& target, const char* op) {
    const DeviceLock lock(target->device);
    realize_target(target, op);
}

LAZYTENSOR_ENGINE_API void assign_into(const NodePtr& target_handle, const graph::Operand& value) {
    const DeviceLock lock(target_handle->device);
    Node* target = target_handle.get();
    realize_target(target_handle, "assign");
    graph::Operand operand = value;
    if (!operand.is_scalar() && operand.node->realized() && shares_memory(*operand.node->buffer, *target->buffer))
        operand = graph::Operand(graph::copy(operand.node));  // never read what is being written
    const NodePtr write = graph::assign(target_handle, operand);  // checks shapes, dtypes and devices first
    // Lazy readers of this memory (through its own buffer, or another wrapping the same memory)
    // that the value does not use are computed before it changes.
    std::unordered_set<const Node*> in_value{write.get()};
    if (!operand.is_scalar())
        for (Node* n : order_graph({operand.node.get()}).nodes) in_value.insert(n);
    std::vector<BufferPtr> memory{target->buffer};
    if (target->buffer->exposed())
        for (BufferPtr& b : exposed_buffers().sharing(*target->buffer)) memory.push_back(std::move(b));
    std::vector<NodePtr> readers;
    for (const BufferPtr& b : memory)
        for (NodePtr& r : b->live_readers())
            if (!r->realized() && r.get() != target && !in_value.count(r.get())) readers.push_back(std::move(r));
    if (!readers.empty()) {
        std::vector<Node*> nodes;
        for (const NodePtr& r : readers) nodes.push_back(r.get());
        realize_graph(nodes);
    }
    realize_graph({write.get()});
}

LAZYTENSOR_ENGINE_API BufferPtr wrap_memory(Device d, DType dtype, std::int64_t numel, void* handle,
                                            std::function<void()> release, bool writable) {
    BufferPtr buf = device_backend(d).wrap(dtype, numel, handle, std::move(release), writable);
    exposed_buffers().add(buf);
    return buf;
}

LAZYTENSOR_ENGINE_API Device adopt_opencl_device(void* context, void* device, void* queue) {
#if LAZYTENSOR_OPENCL
    if (!context || !device) fail<ValueError>("lt::opencl::adopt: a null context or device");
    return Device::opencl(opencl::adopt_opencl(static_cast<cl_context>(context), static_cast<cl_device_id>(device),
                                               static_cast<cl_command_queue>(queue)));
#else
    (void)context, (void)device, (void)queue;
    fail<DeviceError>("lt::opencl::adopt: this build of lazytensor has the host backend only (build with LAZYTENSOR_OPENCL=1)");
#endif
}

LAZYTENSOR_ENGINE_API OpenCLHandles opencl_handles(Device d) {
    if (d.kind != Device::Kind::OpenCL) fail<DeviceError>("lt::opencl: ", d, " is not an OpenCL device");
#if LAZYTENSOR_OPENCL
    opencl::OpenCLBackend& b = opencl::opencl_backend(d.index);
    return OpenCLHandles{b.context(), b.device_id(), b.queue()};
#else
    fail<DeviceError>("device ", d, " is not available: this build of lazytensor has the host backend only");
#endif
}

LAZYTENSOR_ENGINE_API void expose_memory(const BufferPtr& buffer) {
    if (!buffer->exposed()) exposed_buffers().add(buffer);
}

LAZYTENSOR_ENGINE_API BufferPtr upload(Device d, DType dtype, std::int64_t numel, const void* data) {
    Backend& backend = device_backend(d);
    const DeviceLock lock(d);
    BufferPtr buf = backend.allocate(dtype, numel);
    backend.write(*buf, 0, data, static_cast<std::size_t>(numel) * dtype_size(dtype));
    return buf;
}

LAZYTENSOR_ENGINE_API void download(const Buffer& src, std::size_t at, void* dst, std::size_t bytes) {
    Backend& backend = device_backend(src.device());
    const DeviceLock lock(src.device());
    backend.read(src, at, dst, bytes);
}

LAZYTENSOR_ENGINE_API void flush(Device d) {
    Backend& backend = device_backend(d);
    const DeviceLock lock(d);
    backend.flush();
}

LAZYTENSOR_ENGINE_API BufferPtr copy_to_device(const Buffer& src, std::size_t at, DType dtype, std::int64_t numel, Device dst) {
    Backend& from = device_backend(src.device());
    Backend& to = device_backend(dst);
    const DeviceLock lock({src.device(), dst});
    const std::size_t bytes = static_cast<std::size_t>(numel) * dtype_size(dtype);
    if (at > src.bytes() || bytes > src.bytes() - at)
        fail<BackendError>(src.device(), ": copying ", bytes, " bytes at byte ", at, " passes the end of a buffer of ",
                           src.bytes(), " bytes");
    BufferPtr out = to.allocate(dtype, numel);
    if (src.device().kind == Device::Kind::Host) {
        to.write(*out, 0, static_cast<const unsigned char*>(src.handle()) + at, bytes);
    } else if (dst.kind == Device::Kind::Host) {
        from.read(src, at, out->handle(), bytes);
    } else {
#if LAZYTENSOR_OPENCL
        opencl::copy_between(static_cast<opencl::OpenCLBackend&>(from), src, at, static_cast<opencl::OpenCLBackend&>(to),
                             *out, bytes);
#endif
    }
    return out;
}

LAZYTENSOR_ENGINE_API BufferPtr allocate_buffer(Device d, DType dtype, std::int64_t numel) {
    return device_backend(d).allocate(dtype, numel);
}

LAZYTENSOR_ENGINE_API void write_buffer(Buffer& dst, std::size_t at, const void* src, std::size_t bytes) {
    if (at > dst.bytes() || bytes > dst.bytes() - at)
        fail<BackendError>(dst.device(), ": writing ", bytes, " bytes at byte ", at, " passes the end of a buffer of ",
                           dst.bytes(), " bytes");
    Backend& backend = device_backend(dst.device());
    const DeviceLock lock(dst.device());
    backend.write(dst, at, src, bytes);
}

}  // namespace detail
}  // namespace lazytensor
