// The OpenCL scan (cumsum, cumprod) of ir::Scan: float, double and long (which wraps).
//
// Along rows (inner == 1) a work-group scans one chunk of a row, a tile of G * kScanPerItem
// elements at a time: the tile is read coalesced into local memory, each work-item scans its
// kScanPerItem consecutive elements, a Hillis-Steele scan joins the work-items' totals, and the
// tile is written back coalesced, offset by the total of the tiles before it. Across rows
// (inner > 1) each work-item walks one column of a chunk: neighbouring work-items read
// neighbouring columns. A scan with too few rows or columns for the device is cut into chunks
// along the scanned axis: the chunks' totals first (lt_fold_*), scanned themselves (the same
// procedure, in place), then every chunk scanned from the total before it.
#pragma once

#include <cstdint>
#include <string>

#include "../../core/dtype.hpp"
#include "../../ir/ops.hpp"
#include "op_spellings.hpp"

namespace lazytensor::detail::opencl {

/// Elements each work-item of a row scan takes per tile.
inline constexpr int kScanPerItem = 8;

/// The program of scans of `t` (float32, float64 or int64) by `op` (Sum or Prod): kernels
/// lt_scan_rows, lt_fold_rows, lt_scan_columns and lt_fold_columns.
inline std::string scan_program(DType t, ReduceOp op) {
    const bool product = op == ReduceOp::Prod;
    std::string s;
    if (t == DType::Float64) s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    s += std::string("#define T ") + cl_value_type(t) + "\n";
    if (t == DType::Int64)  // wrapping, as unsigned arithmetic does
        s += product ? "#define OP(a, b) ((long)((ulong)(a) * (ulong)(b)))\n" : "#define OP(a, b) ((long)((ulong)(a) + (ulong)(b)))\n";
    else
        s += product ? "#define OP(a, b) ((a) * (b))\n" : "#define OP(a, b) ((a) + (b))\n";
    s += std::string("#define IDENTITY ((T)") + (product ? "1" : "0") + ")\n";
    s += "#define V " + std::to_string(kScanPerItem) + "\n";
    s += R"CL(// A tile index with one spare slot per 32: work-items reading V apart hit different banks.
#define PAD(x) ((x) + ((x) >> 5))

// Work-group per (line, chunk) of a row scan; chunk c > 0 starts from carries[line * chunks + c - 1].
__kernel void lt_scan_rows(__global const T* in, __global T* out, __global const T* carries, int has_carries,
                           long offset, long outer_stride, long stride, long length, long chunks, long chunk_length,
                           __local T* tile, __local T* sums) {
    const long group = get_group_id(0), line = group / chunks, c = group - line * chunks;
    const int lid = (int)get_local_id(0), G = (int)get_local_size(0);
    const long begin = c * chunk_length, end = min(length, begin + chunk_length);
    __global const T* src = in + offset + line * outer_stride;
    __global T* dst = out + line * length;
    T carry = has_carries && c > 0 ? carries[line * chunks + c - 1] : IDENTITY;
    for (long t0 = begin; t0 < end; t0 += (long)G * V) {
        for (int k = 0; k < V; ++k) {
            const long i = t0 + k * G + lid;
            tile[PAD(k * G + lid)] = i < end ? src[i * stride] : IDENTITY;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        T mine[V];
        T run = IDENTITY;
        for (int k = 0; k < V; ++k) {
            run = OP(run, tile[PAD(lid * V + k)]);
            mine[k] = run;
        }
        sums[lid] = run;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int d = 1; d < G; d <<= 1) {
            const T earlier = lid >= d ? sums[lid - d] : IDENTITY;
            barrier(CLK_LOCAL_MEM_FENCE);
            sums[lid] = OP(earlier, sums[lid]);
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        const T before = lid > 0 ? OP(carry, sums[lid - 1]) : carry;
        for (int k = 0; k < V; ++k) tile[PAD(lid * V + k)] = OP(before, mine[k]);
        carry = OP(carry, sums[G - 1]);
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int k = 0; k < V; ++k) {
            const long i = t0 + k * G + lid;
            if (i < end) dst[i] = tile[PAD(k * G + lid)];
        }
        barrier(CLK_LOCAL_MEM_FENCE);  // the tile is read before the next one is loaded
    }
}

// Work-group per (line, chunk): the chunk's total into totals[line * chunks + c].
__kernel void lt_fold_rows(__global const T* in, __global T* totals, long offset, long outer_stride, long stride,
                           long length, long chunks, long chunk_length, __local T* sums) {
    const long group = get_group_id(0), line = group / chunks, c = group - line * chunks;
    const int lid = (int)get_local_id(0), G = (int)get_local_size(0);
    const long begin = c * chunk_length, end = min(length, begin + chunk_length);
    __global const T* src = in + offset + line * outer_stride;
    T acc = IDENTITY;
    for (long i = begin + lid; i < end; i += G) acc = OP(acc, src[i * stride]);
    sums[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = G / 2; width > 0; width >>= 1) {
        if (lid < width) sums[lid] = OP(sums[lid], sums[lid + width]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) totals[group] = sums[0];
}

// Work-item per (outer index, chunk, column) of a scan across rows; chunk c > 0 starts from
// carries[(o * chunks + c - 1) * inner + j].
__kernel void lt_scan_columns(__global const T* in, __global T* out, __global const T* carries, int has_carries,
                              long offset, long outer_stride, long stride, long inner_stride, long outer, long length,
                              long inner, long chunks, long chunk_length) {
    const long g = get_global_id(0);
    if (g >= outer * chunks * inner) return;
    const long j = g % inner, rest = g / inner, c = rest % chunks, o = rest / chunks;
    const long begin = c * chunk_length, end = min(length, begin + chunk_length);
    __global const T* src = in + offset + o * outer_stride + j * inner_stride;
    __global T* dst = out + o * length * inner + j;
    T acc = has_carries && c > 0 ? carries[(o * chunks + c - 1) * inner + j] : IDENTITY;
    for (long i = begin; i < end; ++i) {
        acc = OP(acc, src[i * stride]);
        dst[i * inner] = acc;
    }
}

// Work-item per (outer index, chunk, column): the chunk's total into totals[(o * chunks + c) * inner + j].
__kernel void lt_fold_columns(__global const T* in, __global T* totals, long offset, long outer_stride, long stride,
                              long inner_stride, long outer, long length, long inner, long chunks, long chunk_length) {
    const long g = get_global_id(0);
    if (g >= outer * chunks * inner) return;
    const long j = g % inner, rest = g / inner, c = rest % chunks, o = rest / chunks;
    const long begin = c * chunk_length, end = min(length, begin + chunk_length);
    __global const T* src = in + offset + o * outer_stride + j * inner_stride;
    T acc = IDENTITY;
    for (long i = begin; i < end; ++i) acc = OP(acc, src[i * stride]);
    totals[g] = acc;
}
)CL";
    return s;
}

}  // namespace lazytensor::detail::opencl
