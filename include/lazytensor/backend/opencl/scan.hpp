// SPDX-License-Identifier: MIT
// The OpenCL scan (cumsum, cumprod) of ir::Scan: float, double and long (which wraps).
//
// Along rows (inner == 1) the row is cut into tiles of G * kScanPerItem elements: a tile is
// read coalesced into local memory, each work-item scans its kScanPerItem consecutive elements,
// a Hillis-Steele scan joins the work-items' totals, and the tile is written back coalesced,
// offset by the total of the tiles before it. With rows enough to fill the device a work-group
// walks one row, tile after tile (lt_scan_rows). With fewer (one long row, say), the rows are
// cut into chunks: the chunks' totals first (lt_fold_rows), scanned themselves (the same
// procedure, in place), then every chunk scanned from the total before it. Or, where
// LAZYTENSOR_OPENCL_LOOKBACK=on asks for it (look_back.hpp: it measured slower), every tile has
// a work-group of its own, which learns the total before it by a decoupled look-back over its
// predecessors' published totals (lt_scan_lookback): a single pass, each element read once.
// Across rows (inner > 1) each work-item walks one column of a chunk: neighbouring work-items
// read neighbouring columns, and too few columns are chunked alike (lt_fold_columns).
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

// The scan's tuning knobs, in one place (the lead tunes them on the H200).
/// Elements each work-item of a row scan takes per tile.
inline constexpr int kScanPerItem = 8;
/// Work-items of a row scan's work-group (fewer where the device allows fewer, or lacks the
/// local memory for a tile).
inline constexpr int kScanGroup = 256;
/// Predecessor tiles a look-back reads at once (one per work-item of the first kLookBackWindow).
inline constexpr int kLookBackWindow = 32;
/// Row scans of fewer rows than this many per compute unit run a work-group per tile with
/// look-back (lt_scan_lookback) or in chunks, more a work-group per row (lt_scan_rows).
inline constexpr int kScanRowsPerUnit = 8;

/// The program of scans of `t` (float32, float64 or int64) by `op` (Sum or Prod): kernels
/// lt_scan_rows, lt_fold_rows, lt_scan_lookback, lt_scan_clear, lt_scan_columns and
/// lt_fold_columns. With a prologue, `in` holds
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
    s += "#define W " + std::to_string(kLookBackWindow) + "\n";
    // A value's bits as an unsigned integer (the look-back's status words carry them 16 at a time).
    s += dtype_size(t) == 4 ? "#define U uint\n#define AS_U(x) as_uint(x)\n#define AS_T(x) as_float(x)\n"
         : t == DType::Int64 ? "#define U ulong\n#define AS_U(x) as_ulong(x)\n#define AS_T(x) as_long(x)\n"
                             : "#define U ulong\n#define AS_U(x) as_ulong(x)\n#define AS_T(x) as_double(x)\n";
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
    s += "#define LOAD(at) " + load("(at)") + "\n";
    s += R"CL(// A tile index with one spare slot per 32: work-items reading V apart hit different banks.
#define PAD(x) ((x) + ((x) >> 5))

// A tile of G * V elements of a row, scanned in local memory: read coalesced (element `begin` of
// the row first, IDENTITY past `end`), each work-item's V consecutive elements scanned in
// registers (into `mine`), the work-items' totals by Hillis-Steele (into `sums`: sums[G - 1] is
// the tile's total). The caller adds what comes before and writes the tile back.
#define LT_SCAN_TILE(begin, end) \
    for (int k = 0; k < V; ++k) { \
        const long i = (begin) + k * G + lid; \
        tile[PAD(k * G + lid)] = i < (end) ? LOAD(i * stride) : IDENTITY; \
    } \
    barrier(CLK_LOCAL_MEM_FENCE); \
    T mine[V]; \
    { \
        T run = IDENTITY; \
        for (int k = 0; k < V; ++k) { \
            run = OP(run, tile[PAD(lid * V + k)]); \
            mine[k] = run; \
        } \
        sums[lid] = run; \
    } \
    barrier(CLK_LOCAL_MEM_FENCE); \
    for (int d = 1; d < G; d <<= 1) { \
        const T earlier = lid >= d ? sums[lid - d] : IDENTITY; \
        barrier(CLK_LOCAL_MEM_FENCE); \
        sums[lid] = OP(earlier, sums[lid]); \
        barrier(CLK_LOCAL_MEM_FENCE); \
    }

// The tile's results, each offset by `carry` (what comes before the tile), back into `tile`.
#define LT_OFFSET_TILE(carry) \
    { \
        const T before = lid > 0 ? OP((carry), sums[lid - 1]) : (carry); \
        for (int k = 0; k < V; ++k) tile[PAD(lid * V + k)] = OP(before, mine[k]); \
    } \
    barrier(CLK_LOCAL_MEM_FENCE);

// Work-group per (line, chunk) of a row scan, a tile at a time; chunk c > 0 starts from
// carries[line * chunks + c - 1].
__kernel void lt_scan_rows(__global const S* in, __global O* out, __global const T* carries, int has_carries,
                           long offset, long outer_stride, long stride, long length, long chunks, long chunk_length,
                           __local T* tile, __local T* sums)CL" + extra + R"CL() {
    const long group = get_group_id(0), line = group / chunks, c = group - line * chunks;
    const int lid = (int)get_local_id(0), G = (int)get_local_size(0);
    const long begin = c * chunk_length, end = min(length, begin + chunk_length);
    __global const S* src = in + offset + line * outer_stride;
    T carry = has_carries && c > 0 ? carries[line * chunks + c - 1] : IDENTITY;
    for (long t0 = begin; t0 < end; t0 += (long)G * V) {
        LT_SCAN_TILE(t0, end)
        LT_OFFSET_TILE(carry)
        carry = OP(carry, sums[G - 1]);
        for (int k = 0; k < V; ++k) {
            const long i = t0 + k * G + lid;
            if (i < end)
)CL" + store("line", "i", "0", "line * length + i", "tile[PAD(k * G + lid)]", "                ") + R"CL(        }
        barrier(CLK_LOCAL_MEM_FENCE);  // the tile and sums are read before the next tile's
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
    for (long i = begin + lid; i < end; i += G) acc = OP(acc, LOAD(i * stride));
    sums[lid] = acc;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int width = G / 2; width > 0; width >>= 1) {
        if (lid < width) sums[lid] = OP(sums[lid], sums[lid + width]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) totals[group] = sums[0];
}

// The single-pass scan of rows too few to fill the device (one long row, say): a work-group per
// tile of G * V elements, each element read once and written once. A work-group takes its tile
// from a ticket (status[0]), not from its group id: every tile before it then belongs to a
// work-group already running, so waiting on them cannot deadlock, whatever order the device
// starts work-groups in (PoCL's pthread devices too). It publishes its tile's total (its
// aggregate), then looks back over the tiles before it in its row, W at a time, folding their
// aggregates until it meets one that has published its inclusive prefix; then it publishes its
// own inclusive prefix and writes its tile.
//
// A tile's status: two slots (aggregate, inclusive) of sizeof(T) / 2 words each, every word a
// flag (bit 16) with 16 bits of the value, written once by an atomic. A word is read whole and a
// slot only once all its words carry their flag, so no ordering between words (or with the data)
// is needed, and OpenCL 1.2's 32-bit atomics suffice. lt_scan_clear zeroes the words first.
#define PIECES ((int)sizeof(U) / 2)

void lt_publish(__global uint* status, long tile, int slot, T value) {
    const U bits = AS_U(value);
    __global uint* w = status + 1 + (tile * 2 + slot) * PIECES;
    for (int k = 0; k < PIECES; ++k) atomic_xchg(w + k, 0x10000u | (uint)((bits >> (16 * k)) & 0xffff));
}

// What tile `tile` has published: 2 (its inclusive prefix), 1 (its aggregate) or 0 (nothing
// yet); the value into *value. Its words are all read before any is looked at, so that the
// reads are in flight together.
int lt_status(__global uint* status, long tile, T* value) {
    __global uint* w = status + 1 + tile * 2 * PIECES;
    uint words[2 * PIECES];
    for (int k = 0; k < 2 * PIECES; ++k) words[k] = atomic_or(w + k, 0u);  // atomic reads: never a stale copy
    for (int slot = 1; slot >= 0; --slot) {
        U bits = 0;
        int all = 1;
        for (int k = 0; k < PIECES; ++k) {
            const uint word = words[slot * PIECES + k];
            all &= (word >> 16) & 1;
            bits |= (U)(word & 0xffffu) << (16 * k);
        }
        if (all) {
            *value = AS_T(bits);
            return slot + 1;
        }
    }
    return 0;
}

__kernel void lt_scan_clear(__global uint* status, long words) {
    const long g = get_global_id(0);
    if (g < words) status[g] = 0;
}

// Tiles of tiles_per_line per line; status holds the ticket and 2 * PIECES words per tile, zeroed.
__kernel void lt_scan_lookback(__global const S* in, __global O* out, __global uint* status, long offset,
                               long outer_stride, long stride, long length, long tiles_per_line, __local T* tile,
                               __local T* sums)CL" + extra + R"CL() {
    __local uint ticket_of_group;
    __local T window[W];
    __local int state[W];  // 0: nothing published yet, 1: an aggregate, 2: an inclusive prefix
    const int lid = (int)get_local_id(0), G = (int)get_local_size(0);
    if (lid == 0) ticket_of_group = atomic_inc(status);
    barrier(CLK_LOCAL_MEM_FENCE);
    const long ticket = ticket_of_group, line = ticket / tiles_per_line, c = ticket - line * tiles_per_line;
    const long begin = c * G * V, end = min(length, begin + (long)G * V);
    __global const S* src = in + offset + line * outer_stride;
    LT_SCAN_TILE(begin, end)
    if (lid == 0) lt_publish(status, ticket, c == 0 ? 1 : 0, sums[G - 1]);
    T carry = IDENTITY;
    if (c > 0) {  // the same for the whole work-group, as is every exit of the loop below
        long back = 0;  // predecessors folded into carry so far
        for (;;) {
            for (int q = lid; q < W; q += G) {
                const long p = ticket - 1 - back - q;
                T v = IDENTITY;
                int st = 2;  // before the line's first tile: nothing more to fold
                if (p >= ticket - c) st = lt_status(status, p, &v);
                window[q] = v;
                state[q] = st;
            }
            barrier(CLK_LOCAL_MEM_FENCE);
            // Every work-item walks the window alike, so all leave the loop together.
            int k = 0, done = 0;
            for (; k < W; ++k) {
                const int st = state[k];
                if (st == 0) break;  // not published yet: read again from here
                carry = OP(window[k], carry);
                if (st == 2) {
                    done = 1;
                    break;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);  // the window is read before it is read into again
            if (done) break;
            back += k;
        }
        if (lid == 0) lt_publish(status, ticket, 1, OP(carry, sums[G - 1]));
    }
    LT_OFFSET_TILE(carry)
    for (int k = 0; k < V; ++k) {
        const long i = begin + k * G + lid;
        if (i < end)
)CL" + store("line", "i", "0", "line * length + i", "tile[PAD(k * G + lid)]", "            ") + R"CL(    }
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
