// SPDX-License-Identifier: MIT
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
//
// Kernels fused into the scan (FusedKernels) change only its loads and stores: the operand's
// producer is a function applied to each element read from its input (of the input's dtype),
// and the consumer's code runs on each result before its store, with the result's coordinates
// in scope. Their parameters follow the fixed ones in every kernel of such a program; the
// totals' own scan runs on the plain program.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../ir/ops.hpp"
#include "fused_code.hpp"
#include "op_spellings.hpp"

namespace lazytensor::detail::opencl {

/// Elements each work-item of a row scan takes per tile.
inline constexpr int kScanPerItem = 8;

/// The program of scans of `t` (float32, float64 or int64) by `op` (Sum or Prod): kernels
/// lt_scan_rows, lt_fold_rows, lt_scan_columns and lt_fold_columns. With a prologue, `in` holds
/// the prologue's input (its storage dtype) and every element read goes through it; with an
/// epilogue, each result goes through its code (which sees `v`, the scan's value, and the
/// long coordinates lt_o, lt_i, lt_j and lt_at, its flat index) and `out` is of the epilogue's
/// output dtype. The epilogue's parameters, then the prologue's, follow the fixed ones.
inline std::string scan_program(DType t, ReduceOp op, const FusedPrologue& prologue = {}, const FusedEpilogue& epilogue = {}) {
    const bool product = op == ReduceOp::Prod;
    const bool fused = !prologue.name.empty() || !epilogue.code.empty();
    const DType in = prologue.name.empty() ? t : prologue.storage;
    std::string s;
    if (fused) s += "#pragma OPENCL FP_CONTRACT OFF\n";  // fused code rounds each operation on its own, as elsewhere
    if (t == DType::Float64 || in == DType::Float64 || prologue.fp64 || epilogue.fp64)
        s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    std::vector<std::string> once;
    // A bfloat16 operand or output is read and written with cl_bfloat16_functions (which the fused
    // kernels' helpers may hold too: each once).
    if (in == DType::BFloat16 || epilogue.output == DType::BFloat16) cl_bfloat16_functions(false, once);
    for (const std::string& h : once) s += h;
    for (const std::vector<std::string>* list : {&epilogue.helpers, &prologue.helpers})
        for (const std::string& h : *list)
            if (std::find(once.begin(), once.end(), h) == once.end()) once.push_back(h), s += h;
    s += prologue.function;
    s += std::string("#define T ") + cl_value_type(t) + "\n";
    s += std::string("#define S ") + cl_storage_type(in) + "\n";  // an element of `in`
    s += std::string("#define O ") + (epilogue.output ? cl_storage_type(*epilogue.output) : "T") + "\n";  // of `out`
    if (t == DType::Int64)  // wrapping, as unsigned arithmetic does
        s += product ? "#define OP(a, b) ((long)((ulong)(a) * (ulong)(b)))\n" : "#define OP(a, b) ((long)((ulong)(a) + (ulong)(b)))\n";
    else
        s += product ? "#define OP(a, b) ((a) * (b))\n" : "#define OP(a, b) ((a) + (b))\n";
    s += std::string("#define IDENTITY ((T)") + (product ? "1" : "0") + ")\n";
    s += "#define V " + std::to_string(kScanPerItem) + "\n";
    const std::string extra = epilogue.parameters + prologue.parameters;
    // An element of the operand, at element `at` of `in`.
    auto load = [&](const std::string& at) {
        const std::string read = in == DType::Float16    ? "vload_half(" + at + ", src)"
                                 : in == DType::BFloat16 ? "lt_bf16_load(src[" + at + "])"
                                                         : "src[" + at + "]";
        return prologue.name.empty() ? read : prologue.name + "(" + read + prologue.arguments + ")";
    };
    // The store of `value` at flat index `at`, coordinates (o, i, j) of [outer, length, inner].
    auto store = [&](const std::string& o, const std::string& i, const std::string& j, const std::string& at,
                     const std::string& value, const std::string& ind) {
        if (epilogue.code.empty()) return ind + "out[" + at + "] = " + value + ";\n";
        std::string r = ind + "{\n" + ind + "    const long lt_o = " + o + ", lt_i = " + i + ", lt_j = " + j + ", lt_at = " + at +
                        ";\n" + ind + "    T v = " + value + ";\n";
        if (epilogue.output) r += ind + "    " + cl_value_type(*epilogue.output) + " lt_r;\n";
        r += ind + "    {\n" + epilogue.code + ind + "    }\n";
        const std::string result = epilogue.output ? "lt_r" : "v";
        r += epilogue.output == DType::Float16    ? ind + "    vstore_half_rte(" + result + ", lt_at, out);\n"
             : epilogue.output == DType::BFloat16 ? ind + "    out[lt_at] = lt_bf16_store(" + result + ");\n"
                                                  : ind + "    out[lt_at] = " + result + ";\n";
        return r + ind + "}\n";
    };
    s += R"CL(// A tile index with one spare slot per 32: work-items reading V apart hit different banks.
#define PAD(x) ((x) + ((x) >> 5))

// Work-group per (line, chunk) of a row scan; chunk c > 0 starts from carries[line * chunks + c - 1].
__kernel void lt_scan_rows(__global const S* in, __global O* out, __global const T* carries, int has_carries,
                           long offset, long outer_stride, long stride, long length, long chunks, long chunk_length,
                           __local T* tile, __local T* sums)CL" + extra + R"CL() {
    const long group = get_group_id(0), line = group / chunks, c = group - line * chunks;
    const int lid = (int)get_local_id(0), G = (int)get_local_size(0);
    const long begin = c * chunk_length, end = min(length, begin + chunk_length);
    __global const S* src = in + offset + line * outer_stride;
    T carry = has_carries && c > 0 ? carries[line * chunks + c - 1] : IDENTITY;
    for (long t0 = begin; t0 < end; t0 += (long)G * V) {
        for (int k = 0; k < V; ++k) {
            const long i = t0 + k * G + lid;
            tile[PAD(k * G + lid)] = i < end ? )CL" + load("i * stride") + R"CL( : IDENTITY;
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
            if (i < end)
)CL" + store("line", "i", "0", "line * length + i", "tile[PAD(k * G + lid)]", "                ") + R"CL(        }
        barrier(CLK_LOCAL_MEM_FENCE);  // the tile is read before the next one is loaded
    }
}

// Work-group per (line, chunk): the chunk's total into totals[line * chunks + c].
__kernel void lt_fold_rows(__global const S* in, __global T* totals, long offset, long outer_stride, long stride,
                           long length, long chunks, long chunk_length, __local T* sums)CL" + extra + R"CL() {
    const long group = get_group_id(0), line = group / chunks, c = group - line * chunks;
    const int lid = (int)get_local_id(0), G = (int)get_local_size(0);
    const long begin = c * chunk_length, end = min(length, begin + chunk_length);
    __global const S* src = in + offset + line * outer_stride;
    T acc = IDENTITY;
    for (long i = begin + lid; i < end; i += G) acc = OP(acc, )CL" + load("i * stride") + R"CL();
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
__kernel void lt_scan_columns(__global const S* in, __global O* out, __global const T* carries, int has_carries,
                              long offset, long outer_stride, long stride, long inner_stride, long outer, long length,
                              long inner, long chunks, long chunk_length)CL" + extra + R"CL() {
    const long g = get_global_id(0);
    if (g >= outer * chunks * inner) return;
    const long j = g % inner, rest = g / inner, c = rest % chunks, o = rest / chunks;
    const long begin = c * chunk_length, end = min(length, begin + chunk_length);
    __global const S* src = in + offset + o * outer_stride + j * inner_stride;
    T acc = has_carries && c > 0 ? carries[(o * chunks + c - 1) * inner + j] : IDENTITY;
    for (long i = begin; i < end; ++i) {
        acc = OP(acc, )CL" + load("i * stride") + R"CL();
)CL" + store("o", "i", "j", "(o * length + i) * inner + j", "acc", "        ") + R"CL(    }
}

// Work-item per (outer index, chunk, column): the chunk's total into totals[(o * chunks + c) * inner + j].
__kernel void lt_fold_columns(__global const S* in, __global T* totals, long offset, long outer_stride, long stride,
                              long inner_stride, long outer, long length, long inner, long chunks, long chunk_length)CL" +
         extra + R"CL() {
    const long g = get_global_id(0);
    if (g >= outer * chunks * inner) return;
    const long j = g % inner, rest = g / inner, c = rest % chunks, o = rest / chunks;
    const long begin = c * chunk_length, end = min(length, begin + chunk_length);
    __global const S* src = in + offset + o * outer_stride + j * inner_stride;
    T acc = IDENTITY;
    for (long i = begin; i < end; ++i) acc = OP(acc, )CL" + load("i * stride") + R"CL();
    totals[g] = acc;
}
)CL";
    return s;
}

}  // namespace lazytensor::detail::opencl
