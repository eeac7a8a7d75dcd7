// SPDX-License-Identifier: MIT
// DLPack interop, without copies: a tensor as a DLManagedTensor (lt::to_dlpack) or DLPack
// 1.x's DLManagedTensorVersioned (lt::to_dlpack_versioned, which can say "read-only"), and
// either as a tensor (lt::from_dlpack), on the host (kDLCPU) and on OpenCL devices (kDLOpenCL:
// the data pointer is a cl_mem). Optional: lazytensor.hpp does not include it; include this
// where you use DLPack (it includes <dlpack/dlpack.h>, 0.6 or later, and <lazytensor.hpp>).
//
// With a dlpack.h older than 1.0 (Debian 12 ships 0.6) the versioned structs are declared here,
// with DLPack 1.0's layout, as lt::dlpack::ManagedTensorVersioned; with a 1.x header that name
// is the header's DLManagedTensorVersioned.
#pragma once

#include <dlpack/dlpack.h>
#include <lazytensor.hpp>

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

// DLPack 0.8 added a bool type (kDLBool); 1.0 replaced DLPACK_VERSION with major/minor versions.
#if defined(DLPACK_MAJOR_VERSION) || (defined(DLPACK_VERSION) && DLPACK_VERSION >= 80)
#define LAZYTENSOR_DLPACK_HAS_BOOL 1
#else
#define LAZYTENSOR_DLPACK_HAS_BOOL 0
#endif

namespace lazytensor::dlpack {
#if defined(DLPACK_MAJOR_VERSION)
using Version = ::DLPackVersion;
using ManagedTensorVersioned = ::DLManagedTensorVersioned;
inline constexpr std::uint32_t kMajorVersion = DLPACK_MAJOR_VERSION, kMinorVersion = DLPACK_MINOR_VERSION;
inline constexpr std::uint64_t kFlagReadOnly = DLPACK_FLAG_BITMASK_READ_ONLY, kFlagIsCopied = DLPACK_FLAG_BITMASK_IS_COPIED;
#else
/// DLPack 1.0's DLPackVersion.
struct Version {
    std::uint32_t major;  ///< 1
    std::uint32_t minor;  ///< 0
};
/// DLPack 1.0's DLManagedTensorVersioned, for headers older than 1.0 (same layout).
struct ManagedTensorVersioned {
    Version version;                                ///< the DLPack version the producer wrote
    void* manager_ctx;                              ///< the producer's
    void (*deleter)(ManagedTensorVersioned* self);  ///< called once by the consumer when done
    std::uint64_t flags;                            ///< kFlagReadOnly, kFlagIsCopied
    DLTensor dl_tensor;                             ///< the memory and its layout
};
inline constexpr std::uint32_t kMajorVersion = 1, kMinorVersion = 0;
inline constexpr std::uint64_t kFlagReadOnly = 1ull << 0, kFlagIsCopied = 1ull << 1;
#endif
/// DLPack 1.0's type code of bool (kDLBool, which DLPack 0.6 lacks).
inline constexpr std::uint8_t kBoolCode = 6;
}  // namespace lazytensor::dlpack

namespace lazytensor {

namespace detail {

/// The DLPack type of T. bool is kDLBool where DLPack has it, else uint8 (DLPack 0.6 has no bool);
/// bfloat16 is kDLBfloat, 16 bits.
template <class T>
DLDataType dlpack_dtype() {
    auto make = [](DLDataTypeCode code, int bits) {
        return DLDataType{static_cast<std::uint8_t>(code), static_cast<std::uint8_t>(bits), 1};
    };
    if constexpr (std::is_same_v<T, bool>) {
#if LAZYTENSOR_DLPACK_HAS_BOOL
        return make(kDLBool, 8);
#else
        return make(kDLUInt, 8);
#endif
    } else if constexpr (std::is_same_v<T, bfloat16>) {
        return make(kDLBfloat, 16);  // code 4, as PyTorch's torch.bfloat16
    } else if constexpr (std::is_same_v<T, half> || std::is_floating_point_v<T>) {
        return make(kDLFloat, 8 * sizeof(T));
    } else {
        static_assert(std::is_integral_v<T>, "lazytensor: no DLPack type for this element type");
        return make(std::is_signed_v<T> ? kDLInt : kDLUInt, 8 * sizeof(T));
    }
}

/// A DLPack type as text: "float32", "int8", "bfloat16", "complex64", "float32x4" (4 lanes).
inline std::string dlpack_dtype_name(DLDataType t) {
    const char* names[] = {"int", "uint", "float", "opaque handle ", "bfloat", "complex", "bool"};
    std::string name = t.code < 7 ? names[t.code] : concat("type code ", int(t.code), " of ");
    name += std::to_string(int(t.bits));
    if (t.lanes != 1) name += concat("x", t.lanes);
    return name;
}

/// A DLPack device type as its enum's name.
inline std::string dlpack_device_name(int type) {
    switch (type) {
        case 1: return "kDLCPU";
        case 2: return "kDLCUDA";
        case 3: return "kDLCUDAHost";
        case 4: return "kDLOpenCL";
        case 7: return "kDLVulkan";
        case 8: return "kDLMetal";
        case 9: return "kDLVPI";
        case 10: return "kDLROCM";
        case 11: return "kDLROCMHost";
        case 12: return "kDLExtDev";
        case 13: return "kDLCUDAManaged";
        case 14: return "kDLOneAPI";
        case 15: return "kDLWebGPU";
        case 16: return "kDLHexagon";
        default: return concat("device type ", type);
    }
}

/// What a DLManagedTensor made by to_dlpack owns: its buffer (alive until the consumer calls the
/// deleter) and the shape and strides arrays it points to.
struct DLPackExport {
    DLManagedTensor managed{};                   // the legacy form's, or
    dlpack::ManagedTensorVersioned versioned{};  // the versioned form's
    BufferPtr buffer;
    std::vector<std::int64_t> shape, strides;
};

inline void delete_dlpack_export(DLManagedTensor* self) { delete static_cast<DLPackExport*>(self->manager_ctx); }
inline void delete_dlpack_versioned_export(dlpack::ManagedTensorVersioned* self) {
    delete static_cast<DLPackExport*>(self->manager_ctx);
}

/// x realized, its memory described in `out`'s `dl` (dtype `dtype`); `out` keeps it alive.
/// ValueError for negative strides, and for read-only memory unless `read_only_ok`.
template <class T>
void export_dlpack(const Tensor<T>& x, DLPackExport& out, DLTensor& dl, DLDataType dtype, bool read_only_ok, const char* op) {
    const Tensor<T> t = x.realize();
    const Node& n = *t.node_ptr();
    for (std::size_t k = 0; k < n.strides.size(); ++k)
        if (n.strides[k] < 0)
            fail<ValueError>(op, ": the tensor (shape ", n.shape, ") has negative stride ", n.strides[k], " on axis ", k,
                             " (a flipped view), which DLPack consumers do not expect; export lt::contiguous(x)");
    if (!n.buffer->writable() && !read_only_ok)
        fail<ValueError>(op, ": the tensor (shape ", n.shape, ") is read-only memory, and DLPack 0.6 "
                         "cannot mark a tensor read-only; export lt::clone(x), or use lt::to_dlpack_versioned");
    out.buffer = n.buffer;
    out.shape.assign(n.shape.begin(), n.shape.end());
    out.strides.assign(n.strides.begin(), n.strides.end());
    const auto offset_bytes = static_cast<std::uint64_t>(n.offset) * sizeof(T);
    if (n.device.kind == Device::Kind::Host) {
        dl.data = static_cast<char*>(n.buffer->handle()) + offset_bytes;
        dl.byte_offset = 0;
        dl.device = DLDevice{kDLCPU, 0};
    } else {
        synchronize(n.device);  // the consumer reads it on queues of its own
        dl.data = n.buffer->handle();
        dl.byte_offset = offset_bytes;
        dl.device = DLDevice{kDLOpenCL, n.device.index};
    }
    dl.ndim = static_cast<int>(n.shape.size());
    dl.dtype = dtype;
    dl.shape = out.shape.data();
    dl.strides = out.strides.data();
    expose_memory(n.buffer);
}

/// The tensor over a DLPack tensor's memory (from_dlpack's work for both forms): `release`
/// gives the memory back; `bool_code`: the type code a bool tensor has here.
template <class T>
Tensor<T> import_dlpack(const DLTensor& dl, std::function<void()> release, bool writable, DLDataType want, const char* op) {
    if (dl.dtype.code != want.code || dl.dtype.bits != want.bits || dl.dtype.lanes != want.lanes)
        fail<DTypeError>(op, ": the DLPack tensor holds ", dlpack_dtype_name(dl.dtype), " elements, not ", dtype_of<T>(),
                         " (the tensor's element type); take it as a tensor of its own type");
    if (dl.ndim < 0 || (dl.ndim > 0 && !dl.shape))
        fail<ValueError>(op, ": the DLPack tensor has ", dl.ndim, " dimensions and ", dl.shape ? "a shape" : "no shape array");
    Shape shape(dl.shape, dl.shape + dl.ndim);
    check_extents(shape, op);
    Strides strides = dl.strides ? Strides(dl.strides, dl.strides + dl.ndim) : contiguous_strides(shape);
    const std::int64_t span = wrapped_span(shape, strides, sizeof(T), op);
    if (dl.device.device_type == kDLCPU) {
        char* first = static_cast<char*>(dl.data) + dl.byte_offset;
        if (!dl.data && span > 0) fail<ValueError>(op, ": null data for a tensor of shape ", shape);
        if (reinterpret_cast<std::uintptr_t>(first) % alignof(T) != 0)
            fail<ValueError>(op, ": data + byte_offset (", static_cast<const void*>(first), ") is not aligned for ",
                             dtype_of<T>(), " (to ", alignof(T), " bytes)");
        BufferPtr buf = wrap_memory(Device::host(), dtype_of<T>(), span, first, std::move(release), writable);
        return Tensor<T>(graph::buffer(std::move(buf), std::move(shape), std::move(strides), 0));
    }
    if (dl.device.device_type == kDLOpenCL) {
        const Device device = Device::opencl(dl.device.device_id);
        backend_for(device);  // DeviceError, naming it, if it is unavailable
        if (dl.byte_offset % sizeof(T) != 0)
            fail<ValueError>(op, ": byte_offset ", dl.byte_offset, " is not a whole number of ", dtype_of<T>(), " elements (",
                             sizeof(T), " bytes)");
        if (dl.byte_offset / sizeof(T) > static_cast<std::uint64_t>(INT64_MAX - span))
            fail<ValueError>(op, ": byte_offset ", dl.byte_offset, " is past any buffer");
        const auto offset = static_cast<std::int64_t>(dl.byte_offset / sizeof(T));
        if (span == 0) {  // no memory to share (a zero-size tensor may come without a cl_mem)
            release();
            return lazytensor::full<T>(shape, T(0), device).realize();
        }
        BufferPtr buf = wrap_memory(device, dtype_of<T>(), offset + span, dl.data, std::move(release), writable);
        return Tensor<T>(graph::buffer(std::move(buf), std::move(shape), std::move(strides), offset));
    }
    fail<DeviceError>(op, ": the DLPack tensor is on ", dlpack_device_name(dl.device.device_type), " device ",
                      dl.device.device_id, "; lazytensor takes kDLCPU (host) and kDLOpenCL memory");
}

}  // namespace detail

/// The tensor (or expression) `x`, realized, as a DLManagedTensor sharing its memory: on the
/// host, kDLCPU with `data` pointing at element [0, ..., 0]; on an OpenCL device, kDLOpenCL
/// with `data` the cl_mem, `byte_offset` the view's offset in it and `device_id` lazytensor's
/// OpenCL index (the kernels that write it have finished). Strides are always given, in
/// elements. The memory stays alive, with the shape and strides arrays, until the consumer
/// calls the managed tensor's deleter (exactly once). bool is exported as uint8 where DLPack
/// has no bool (0.6). ValueError for a view with negative strides (a flip: export
/// lt::contiguous(x)) and for read-only memory (DLPack 0.6 cannot say a tensor is read-only:
/// export lt::clone(x)).
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
DLManagedTensor* to_dlpack(const E& x) {
    using T = typename E::value_type;
    auto out = std::make_unique<detail::DLPackExport>();
    detail::export_dlpack(Tensor<T>(x), *out, out->managed.dl_tensor, detail::dlpack_dtype<T>(), false, "lt::to_dlpack");
    out->managed.manager_ctx = out.get();
    out->managed.deleter = detail::delete_dlpack_export;
    return &out.release()->managed;
}

/// to_dlpack in DLPack 1.x's versioned form (DLManagedTensorVersioned, version 1.0 or the
/// header's): the same memory and layout, read-only memory marked with the read-only flag
/// instead of refused, and bool as kDLBool (code 6) whatever the header. The consumer calls the
/// deleter exactly once.
template <class E, class = std::enable_if_t<detail::is_tensor_like_v<E>>>
dlpack::ManagedTensorVersioned* to_dlpack_versioned(const E& x) {
    using T = typename E::value_type;
    auto out = std::make_unique<detail::DLPackExport>();
    DLDataType dtype = detail::dlpack_dtype<T>();
    if constexpr (std::is_same_v<T, bool>) dtype.code = dlpack::kBoolCode;
    detail::export_dlpack(Tensor<T>(x), *out, out->versioned.dl_tensor, dtype, true, "lt::to_dlpack_versioned");
    out->versioned.version = {dlpack::kMajorVersion, dlpack::kMinorVersion};
    out->versioned.flags = out->buffer->writable() ? 0 : dlpack::kFlagReadOnly;
    out->versioned.manager_ctx = out.get();
    out->versioned.deleter = detail::delete_dlpack_versioned_export;
    return &out.release()->versioned;
}

/// A tensor whose memory is the DLPack tensor's, without a copy, taking ownership of `managed`:
/// its deleter is called once, when the last tensor, view or schedule using the memory lets go
/// (if from_dlpack throws, `managed` stays the caller's). Takes kDLCPU memory, and kDLOpenCL
/// memory (a cl_mem of lazytensor's context for OpenCL device `device_id`; the producer's
/// kernels that write it must have finished). Null strides mean row-major; byte_offset is
/// honoured. DTypeError unless the DLPack type is T's (one lane); DeviceError for other device
/// types, an unavailable device or a cl_mem of another context; ValueError for negative strides
/// or a pointer not aligned for T; ShapeError for a bad shape.
template <class T>
Tensor<T> from_dlpack(DLManagedTensor* managed) {
    const char* op = "lt::from_dlpack";
    if (!managed) detail::fail<ValueError>(op, ": the DLManagedTensor is a null pointer");
    if constexpr (std::is_same_v<T, bool> && !LAZYTENSOR_DLPACK_HAS_BOOL)  // (uint8 may hold other values than 0, 1)
        detail::fail<DTypeError>(op, ": DLPack 0.6 has no bool type, so no DLPack tensor is a bool tensor (lazytensor "
                                 "exports bool as uint8); take it as lt::Tensor<uint8_t> and use lt::cast<bool>");
    std::function<void()> release = [managed] {
        if (managed->deleter) managed->deleter(managed);
    };
    return detail::import_dlpack<T>(managed->dl_tensor, std::move(release), true, detail::dlpack_dtype<T>(), op);
}

/// from_dlpack of DLPack 1.x's versioned form: the same, and a tensor the producer marked
/// read-only (its flags' read-only bit) is read-only here (assign into it is a ValueError;
/// const_data() reads it). ValueError for a major version other than 1 (whose layout this
/// library cannot know).
template <class T>
Tensor<T> from_dlpack(dlpack::ManagedTensorVersioned* managed) {
    const char* op = "lt::from_dlpack";
    if (!managed) detail::fail<ValueError>(op, ": the DLManagedTensorVersioned is a null pointer");
    if (managed->version.major != 1)
        detail::fail<ValueError>(op, ": the DLPack tensor has version ", managed->version.major, ".", managed->version.minor,
                                 "; lazytensor reads DLPack 1.x");
    DLDataType want = detail::dlpack_dtype<T>();
    if constexpr (std::is_same_v<T, bool>) want.code = dlpack::kBoolCode;
    std::function<void()> release = [managed] {
        if (managed->deleter) managed->deleter(managed);
    };
    const bool writable = (managed->flags & dlpack::kFlagReadOnly) == 0;
    return detail::import_dlpack<T>(managed->dl_tensor, std::move(release), writable, want, op);
}

}  // namespace lazytensor
