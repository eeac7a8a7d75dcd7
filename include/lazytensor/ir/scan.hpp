// SPDX-License-Identifier: MIT
// A scan as a schedule item: out[o, i, j] = in[o, 0, j] (+ or *) ... (+ or *) in[o, i, j], an
// inclusive cumsum or cumprod along one axis, with every axis before it merged into o and every
// axis after it into j.
//
// The scheduler gives every scan node an item of its own (like a matmul): its operand is read
// in place through its view when the view walks the axes before and after the scanned one as
// single strided runs, else the item first copies it into a contiguous buffer (`copy`). The
// output is a fresh contiguous buffer. Backends run it as a real scan: the host along rows in
// SIMD registers, OpenCL with per-tile scans in local memory and a pass over tile totals.
// Where the backend can, the operand's element-wise producer runs in the scan's loads and its
// element-wise consumer in its stores (fits_as_prologue, fits_as_epilogue): exp(cumsum(x * x))
// is one item.
#pragma once

#include <cstdint>
#include <sstream>
#include <string>

#include "../core/dtype.hpp"
#include "../core/shape.hpp"
#include "fusion.hpp"
#include "kernel.hpp"
#include "ops.hpp"

namespace lazytensor::detail::ir {

struct Scan {
    DType dtype = DType::Float32;  // float32, float64 or int64: the operand's and the result's
    ReduceOp op = ReduceOp::Sum;   // Sum or Prod
    std::int64_t outer = 1, length = 0, inner = 1;
    // Element (o, i, j) of the operand is at offset + o * outer_stride + i * stride + j * inner_stride.
    std::int64_t offset = 0, outer_stride = 0, stride = 0, inner_stride = 0;

    std::int64_t numel() const { return outer * length * inner; }
};

/// The operand's layout as [outer, length, inner] strided runs, if it has one: `shape` and
/// `strides` are the operand's, `axis` the scanned axis. Extent-1 axes have any stride.
inline bool scan_layout(const Shape& shape, const Strides& strides, std::int64_t offset, std::size_t axis, Scan& s) {
    // Merges axes [from, to) into one run of (extent, stride); false if they are not one run.
    auto run = [&](std::size_t from, std::size_t to, std::int64_t& extent, std::int64_t& stride) {
        extent = 1;
        stride = 0;
        for (std::size_t t = to; t-- > from;) {
            if (shape[t] == 1) continue;
            if (extent == 1) {
                stride = strides[t];
            } else if (strides[t] != stride * extent) {
                return false;
            }
            extent *= shape[t];
        }
        return true;
    };
    std::int64_t outer_extent = 1, inner_extent = 1;
    if (!run(0, axis, outer_extent, s.outer_stride) || !run(axis + 1, shape.size(), inner_extent, s.inner_stride))
        return false;
    s.outer = outer_extent;
    s.inner = inner_extent;
    s.length = shape[axis];
    s.stride = strides[axis];
    s.offset = offset;
    return true;
}

/// Whether kernel `k` can run as the epilogue of scan `s` (ir::fits_as_epilogue), reading it as
/// parameter `scan_param`. A floating scan's consumer must store a floating dtype: a comparison
/// or an integer cast stays a kernel of its own, so that check mode compares it exactly with the
/// host's from the same scan (an int64 scan is exact everywhere, so anything goes).
inline bool fits_as_epilogue(const Scan& s, const Kernel& k, int scan_param) {
    return fits_as_epilogue(s.dtype, s.numel(), k, scan_param) &&
           (s.dtype == DType::Int64 || is_floating(k.params.back().dtype));
}

/// Whether kernel `k` can run as the prologue of scan `s` (ir::fits_as_prologue): a cast of any
/// dtype to the scan's, a scale, a square.
inline bool fits_as_prologue(const Scan& s, const Kernel& k) { return fits_as_prologue(s.dtype, k); }

/// A scan's shape and operand layout, as LAZYTENSOR_DEBUG=2 lists them.
inline std::string to_string(const Scan& s) {
    std::ostringstream out;
    out << "    scan " << (s.op == ReduceOp::Sum ? "sum" : "prod") << " " << s.dtype << ": outer " << s.outer
        << ", length " << s.length << ", inner " << s.inner << "\n    in: offset " << s.offset << ", outer stride "
        << s.outer_stride << ", stride " << s.stride << ", inner stride " << s.inner_stride << "\n";
    return out.str();
}

}  // namespace lazytensor::detail::ir
