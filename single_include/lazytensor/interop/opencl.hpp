// SPDX-License-Identifier: MIT
// OpenCL interop, as ArrayFire's afcl: lazytensor on an application's own context and queue
// (lt::opencl::adopt), the handles of lazytensor's devices, and cl_mem buffers both ways without
// copies (lt::opencl::wrap, lt::opencl::memory). Optional: lazytensor.hpp does not include it;
// include this where you use OpenCL directly (it includes the OpenCL headers and
// <lazytensor.hpp>).
#pragma once

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 120
#endif
#if defined(__APPLE__)
#include <OpenCL/opencl.h>
#else
#include <CL/cl.h>
#endif
#include <lazytensor.hpp>

#include <cstddef>
#include <functional>

namespace lazytensor::opencl {

/// Runs lazytensor on an application's OpenCL device, in its context, on its queue (null: a queue
/// of lazytensor's own in that context): returns the new device, opencl:N after the platforms'
/// devices, usable like any other (tensors, realize, lt::devices()). Work lazytensor enqueues on
/// an application's queue is ordered with the application's own commands on it. The context and
/// queue are retained for the life of the process. Kernel timing (LAZYTENSOR_DEBUG=3) needs a
/// queue made with CL_QUEUE_PROFILING_ENABLE. DeviceError for an out-of-order queue, a queue of
/// another context or device, or a build without OpenCL.
inline Device adopt(cl_context context, cl_device_id device, cl_command_queue queue = nullptr) {
    return detail::adopt_opencl_device(context, device, queue);
}

/// The context of OpenCL device `d` (to create buffers lazytensor can wrap, or to share with
/// other libraries). DeviceError for the host or an unavailable device.
inline cl_context context(Device d) { return static_cast<cl_context>(detail::opencl_handles(d).context); }
/// The cl_device_id of OpenCL device `d`.
inline cl_device_id device_id(Device d) { return static_cast<cl_device_id>(detail::opencl_handles(d).device); }
/// The in-order queue lazytensor enqueues on for `d`: commands an application enqueues on it run
/// after lazytensor's work enqueued before them.
inline cl_command_queue queue(Device d) { return static_cast<cl_command_queue>(detail::opencl_handles(d).queue); }

/// Where a tensor's elements are in device memory (lt::opencl::memory).
struct Memory {
    cl_mem mem = nullptr;           ///< the buffer (owned by lazytensor; valid while the tensor lives)
    std::size_t byte_offset = 0;    ///< of element [0, ..., 0]
    Strides strides;                ///< per axis, in elements
};

/// The cl_mem holding x (realized first) on its OpenCL device, without a copy, once the kernels
/// that write it have finished. Valid while a tensor holding the memory lives; an application
/// writing it must do so before lazytensor reads it again (as with lt::from_blob memory).
/// DeviceError unless x is on an OpenCL device.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
Memory memory(const E& x) {
    using T = typename E::value_type;
    const Tensor<T> t = Tensor<T>(x).realize();
    const detail::Node& n = *t.node_ptr();
    if (n.device.kind != Device::Kind::OpenCL)
        detail::fail<DeviceError>("lt::opencl::memory: the tensor is on ", n.device, ", not an OpenCL device");
    synchronize(n.device);
    detail::expose_memory(n.buffer);
    return Memory{static_cast<cl_mem>(n.buffer->handle()), static_cast<std::size_t>(n.offset) * sizeof(T), n.strides};
}

/// An application's cl_mem as a tensor of `shape` (row-major from the buffer's start) on OpenCL
/// device `d`, without a copy: kernels read what is in the buffer when they run, and assign()
/// writes into it. The buffer must be of d's context (DeviceError) and hold the elements
/// (ValueError); a CL_MEM_READ_ONLY buffer gives a read-only tensor. It is retained while lazytensor uses it, and `release` (may be empty)
/// runs once when the last tensor using it lets go. Read-only unless `writable`.
template <class T>
Tensor<T> wrap(cl_mem mem, const Shape& shape, Device d, std::function<void()> release = {}, bool writable = true) {
    if (d.kind != Device::Kind::OpenCL) detail::fail<DeviceError>("lt::opencl::wrap: ", d, " is not an OpenCL device");
    detail::check_extents(shape, "lt::opencl::wrap");
    BufferPtr buf = detail::wrap_memory(d, dtype_of<T>(), numel(shape), mem, std::move(release), writable);
    return Tensor<T>(detail::graph::buffer(std::move(buf), shape, contiguous_strides(shape), 0));
}

}  // namespace lazytensor::opencl
