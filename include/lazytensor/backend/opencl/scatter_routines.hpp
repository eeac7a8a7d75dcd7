// SPDX-License-Identifier: MIT
// Backend::scatter on an OpenCL device: the base copied into the result on the queue, then one
// work-item per position. An overwrite is a store of the element's bits (any dtype); an add is
// an atomic: atomic_add for int32, a compare-and-swap loop for float32, and for int64 and
// float64 where the device has cl_khr_int64_base_atomics. Other adds (uint8, bool, half, bfloat16, or
// 64-bit types without the extension) go through host memory (Backend::scatter).
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "../../core/error.hpp"
#include "cl_api.hpp"
#include "launch.hpp"
#include "programs.hpp"
#include "routine_context.hpp"

namespace lazytensor::detail::opencl {

class ScatterRoutines {
public:
    explicit ScatterRoutines(RoutineContext context) : c_(context) {}

    /// Whether the device runs this scatter itself (else the caller stages it through the host).
    bool runs(DType t, bool accumulate) const {
        if (!accumulate) return true;
        if (t == DType::Int32 || t == DType::Float32) return true;
        return (t == DType::Int64 || (t == DType::Float64 && c_.device.fp64())) && c_.device.int64_atomics();
    }

    /// Backend::scatter, where runs(): `out` gets base's first out.numel() elements, then the values.
    void run(const Buffer& base, Buffer& out, const Buffer& positions, const Buffer& values, std::int64_t count,
             bool accumulate) {
        const std::size_t bytes = static_cast<std::size_t>(out.numel()) * dtype_size(out.dtype());
        if (bytes && base.handle() != out.handle())
            check(clEnqueueCopyBuffer(c_.device.queue(), static_cast<cl_mem>(base.handle()), static_cast<cl_mem>(out.handle()), 0,
                                      0, bytes, 0, nullptr, nullptr),
                  "clEnqueueCopyBuffer", concat("copying a scatter's base on ", c_.device.describe()));
        if (count == 0) return;
        const std::shared_ptr<ProgramOwner> program = c_.programs.build(source(out.dtype(), accumulate));
        const KernelOwner kernel = c_.programs.make_kernel(*program, "lt_scatter");
        c_.launcher.run(kernel, "lt_scatter", static_cast<std::size_t>(count), 0, out, positions, values, cl_long(count),
                        cl_long(out.numel()));
    }

    /// The program of a scatter of dtype t (LAZYTENSOR_DEBUG=2 shows it).
    static std::string source(DType t, bool accumulate) {
        // An overwrite moves the element's bits; an add computes in the element's type.
        const std::size_t size = dtype_size(t);
        std::string T = size == 1 ? "uchar" : size == 2 ? "ushort" : size == 4 ? "uint" : "ulong", update;
        if (!accumulate) {
            update = "out[p] = values[j];";
        } else if (t == DType::Int32) {
            T = "int";
            update = "atomic_add(out + p, values[j]);";
        } else if (t == DType::Int64) {
            T = "long";
            update = "atom_add(out + p, values[j]);";
        } else {  // float32 (uint words) or float64 (ulong words): compare and swap
            const bool wide = t == DType::Float64;
            const std::string F = wide ? "double" : "float", W = wide ? "ulong" : "uint", as_f = wide ? "as_double" : "as_float",
                              as_w = wide ? "as_ulong" : "as_uint", cas = wide ? "atom_cmpxchg" : "atomic_cmpxchg";
            update = "const " + F + " v = " + as_f + "(values[j]);\n    " + W + " seen = out[p], was;\n    do {\n        was = seen;\n" +
                     "        seen = " + cas + "(out + p, was, " + as_w + "(" + as_f + "(was) + v));\n    } while (seen != was);";
        }
        std::string s;
        if (size == 8) s += "#pragma OPENCL EXTENSION cl_khr_int64_base_atomics : enable\n";
        if (t == DType::Float64) s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
        s += "__kernel void lt_scatter(__global " + std::string(accumulate ? "volatile " : "") + T + "* out, __global const long* positions, __global const " + T +
             "* values, long count, long numel) {\n"
             "    const long j = get_global_id(0);\n"
             "    if (j >= count) return;\n"
             "    const long p = positions[j];\n"
             "    if (p < 0 || p >= numel) return;\n    " +
             update + "\n}\n";
        return s;
    }

private:
    RoutineContext c_;
};

}  // namespace lazytensor::detail::opencl
