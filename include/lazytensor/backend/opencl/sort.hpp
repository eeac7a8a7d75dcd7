// SPDX-License-Identifier: MIT
// The OpenCL row sort (lt::sort, argsort, topk): a bitonic sort of (key, position) pairs, one
// sort per row of P = n rounded up to a power of two, padded with pairs that sort last.
//
// Keys are 64-bit unsigned integers that order as the values do: floats with their sign bit
// flipped (the others too for negative values), -0 made +0 and every NaN the one above +inf;
// integers with the sign bit flipped; descending order inverts them. Ties go by position, so the
// result is that of a stable sort. Stages of the sort that stay within a block of B pairs run
// in local memory, one launch for all of them; wider ones are a launch each over global memory.
// topk of up to 16 reads each row once instead (topk_program), and one long row (a 1-D sort)
// takes a radix sort of keys of the value's width (radix_program).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "../../core/dtype.hpp"
#include "op_spellings.hpp"

namespace lazytensor::detail::opencl {

/// The element type of buffers of `t` as the sort reads them, and as it copies them (bfloat16:
/// its bits, ushort).
inline std::string sort_storage_type(DType t) {
    return t == DType::Float16 ? "half" : t == DType::Bool ? "uchar" : t == DType::BFloat16 ? "ushort" : cl_value_type(t);
}
inline std::string sort_copy_type(DType t) { return t == DType::Float16 ? "ushort" : sort_storage_type(t); }

/// lt_key(in, i), the key of in[i], and lt_after, the order of (key, position) pairs.
inline std::string sort_key_functions(DType t) {
    std::string key;
    switch (t) {
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float32:
            key = std::string(t == DType::Float16    ? "    float v = vload_half(i, in);\n"
                              : t == DType::BFloat16 ? "    float v = as_float((uint)in[i] << 16);\n"
                                                     : "    float v = in[i];\n") +
                  "    if (isnan(v)) v = NAN;\n    if (v == 0.0f) v = 0.0f;\n"
                  "    const uint u = as_uint(v);\n    return (ulong)((u >> 31) ? ~u : (u | 0x80000000u));\n";
            break;
        case DType::Float64:
            key = "    double v = in[i];\n    if (isnan(v)) v = (double)NAN;\n    if (v == 0.0) v = 0.0;\n"
                  "    const ulong u = as_ulong(v);\n    return (u >> 63) ? ~u : (u | 0x8000000000000000UL);\n";
            break;
        // Signed integers: the sign bit flipped, in 8 bits for int8 (a 1-byte type's key has 8
        // significant bits), 32 for int16 and int32, 64 for int64.
        case DType::Int8: key = "    return (ulong)((uchar)in[i] ^ (uchar)0x80);\n"; break;
        case DType::Int16:
        case DType::Int32: key = "    return (ulong)((uint)(int)in[i] ^ 0x80000000u);\n"; break;
        case DType::Int64: key = "    return (ulong)in[i] ^ 0x8000000000000000UL;\n"; break;
        case DType::Bool:
        case DType::UInt8:
        case DType::UInt16:
        case DType::UInt32:
        case DType::UInt64: key = "    return (ulong)in[i];\n"; break;
        case DType::Complex64:
        case DType::Complex128: complex_dtype_inside(t);
    }
    std::string s = t == DType::Float64 ? "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" : "";
    s += "inline ulong lt_key(__global const " + sort_storage_type(t) + "* in, long i) {\n" + key + "}\n";
    s += "// a after b: the later of two (key, position) pairs.\n"
         "inline bool lt_after(ulong ka, uint ia, ulong kb, uint ib) { return ka > kb || (ka == kb && ia > ib); }\n";
    return s;
}

/// The program that sorts rows of dtype `t`: kernels lt_sort_keys, lt_sort_local,
/// lt_sort_global and lt_sort_gather.
inline std::string sort_program(DType t) {
    const std::string S = sort_storage_type(t), copy = sort_copy_type(t);
    std::string s = sort_key_functions(t);
    s += R"CL(

// One pair per element of each padded row: rows * P work-items.
__kernel void lt_sort_keys(__global const )CL" + S + R"CL(* in, __global ulong* key, __global uint* pos, long n, long P, int descending) {
    const long g = get_global_id(0), r = g / P, i = g - r * P;
    if (i < n) {
        const ulong k = lt_key(in, r * n + i);
        key[g] = descending ? ~k : k;
    } else {
        key[g] = ~(ulong)0;  // and a position past every element's: after everything
    }
    pos[g] = (uint)i;
}

// The compare-exchange of pair i with pair i + j of a row, ordered up where (i & k) == 0.
inline void lt_order(ulong* ka, uint* ia, ulong* kb, uint* ib, bool up) {
    if (lt_after(*ka, *ia, *kb, *ib) == up) {
        const ulong k = *ka; *ka = *kb; *kb = k;
        const uint p = *ia; *ia = *ib; *ib = p;
    }
}

// Stages k = k_first .. k_last (powers of two) of the sort, each from j = k / 2 (the first from
// j_first) down to 1, within blocks of B = 2 * local size pairs in local memory.
__kernel void lt_sort_local(__global ulong* key, __global uint* pos, long P, long k_first, long k_last, long j_first,
                            __local ulong* lk, __local uint* lp) {
    const long L = get_local_size(0), B = 2 * L, t = get_local_id(0);
    const long base = get_group_id(0) * B, in_row = base % P;  // the block's first pair; rows are whole blocks
    lk[t] = key[base + t]; lp[t] = pos[base + t];
    lk[t + L] = key[base + t + L]; lp[t + L] = pos[base + t + L];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (long k = k_first; k <= k_last; k <<= 1) {
        for (long j = k == k_first ? j_first : k >> 1; j > 0; j >>= 1) {
            const long i = 2 * j * (t / j) + t % j;
            ulong ka = lk[i], kb = lk[i + j];
            uint ia = lp[i], ib = lp[i + j];
            lt_order(&ka, &ia, &kb, &ib, ((in_row + i) & k) == 0);
            lk[i] = ka; lp[i] = ia; lk[i + j] = kb; lp[i + j] = ib;
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    key[base + t] = lk[t]; pos[base + t] = lp[t];
    key[base + t + L] = lk[t + L]; pos[base + t + L] = lp[t + L];
}

// One step (k, j) with j at least a block: rows * P / 2 work-items, one per pair.
__kernel void lt_sort_global(__global ulong* key, __global uint* pos, long P, long k, long j) {
    const long g = get_global_id(0), half_row = P / 2, r = g / half_row, t = g - r * half_row;
    const long i = 2 * j * (t / j) + t % j, a = r * P + i, b = a + j;
    ulong ka = key[a], kb = key[b];
    uint ia = pos[a], ib = pos[b];
    lt_order(&ka, &ia, &kb, &ib, (i & k) == 0);
    key[a] = ka; pos[a] = ia; key[b] = kb; pos[b] = ib;
}

// The first k of each row: rows * k work-items.
__kernel void lt_sort_gather(__global const )CL" + copy + R"CL(* in, __global const uint* pos, __global )CL" + copy +
         R"CL(* values, __global long* indices, long n, long P, long k) {
    const long g = get_global_id(0), r = g / k, i = g - r * k;
    const uint p = pos[r * P + i];
    values[g] = in[r * n + p];
    indices[g] = (long)p;
}
)CL";
    return s;
}

/// The program of topk for k <= 16 of dtype `t`, one work-group per row: each work-item keeps
/// the best k of its strided share in registers (k is a constant of the program), then k rounds
/// pick the best head among the work-items (a reduction in local memory) and pop it. The row is
/// read once.
inline std::string topk_program(DType t, std::int64_t k) {
    const std::string S = sort_storage_type(t), copy = sort_copy_type(t);
    std::string s = sort_key_functions(t) + "#define LT_K " + std::to_string(k) + "\n";
    s += R"CL(
__kernel void lt_topk_rows(__global const )CL" + S + R"CL(* in, __global )CL" + copy + R"CL(* values, __global long* indices, long n,
                           int descending, __local ulong* lk, __local uint* lp, __local uint* lw) {
    const int L = get_local_size(0), t = get_local_id(0);
    const long r = get_group_id(0);
    __global const )CL" + copy + R"CL(* raw = (__global const )CL" + copy + R"CL(*)in;
    ulong key[LT_K];
    uint pos[LT_K];
    #pragma unroll
    for (int j = 0; j < LT_K; ++j) key[j] = ~(ulong)0, pos[j] = 0xffffffffu;  // after every element
    for (long i = t; i < n; i += L) {
        const ulong ki = descending ? ~lt_key(in, r * n + i) : lt_key(in, r * n + i);
        if (!lt_after(key[LT_K - 1], pos[LT_K - 1], ki, (uint)i)) continue;
        key[LT_K - 1] = ki;
        pos[LT_K - 1] = (uint)i;
        #pragma unroll
        for (int j = LT_K - 1; j > 0; --j)
            if (lt_after(key[j - 1], pos[j - 1], key[j], pos[j])) {
                const ulong kk = key[j]; key[j] = key[j - 1]; key[j - 1] = kk;
                const uint pp = pos[j]; pos[j] = pos[j - 1]; pos[j - 1] = pp;
            }
    }
    for (int out = 0; out < LT_K; ++out) {
        lk[t] = key[0];
        lp[t] = pos[0];
        lw[t] = (uint)t;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int s = L / 2; s > 0; s >>= 1) {
            if (t < s && lt_after(lk[t], lp[t], lk[t + s], lp[t + s])) {
                lk[t] = lk[t + s];
                lp[t] = lp[t + s];
                lw[t] = lw[t + s];
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
        if (lw[0] == (uint)t) {  // pop the head
            #pragma unroll
            for (int j = 0; j + 1 < LT_K; ++j) key[j] = key[j + 1], pos[j] = pos[j + 1];
            key[LT_K - 1] = ~(ulong)0;
            pos[LT_K - 1] = 0xffffffffu;
        }
        if (t == 0) {
            values[r * LT_K + out] = raw[r * n + lp[0]];
            indices[r * LT_K + out] = (long)lp[0];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
)CL";
    return s;
}

/// The radix sort's shape: work-groups of `group` work-items, each ranking a run of `run` keys
/// of the group's tile; the longest run whose local arrays fit the device's local memory.
struct RadixShape {
    std::int64_t group, run;
    std::int64_t tile() const { return group * run; }
};
inline std::size_t radix_local_bytes(DType t, const RadixShape& s) {
    const auto padded = [](std::int64_t j) { return std::size_t(j + j / 32); };
    const std::size_t key = dtype_size(t) == 8 ? 8 : 4;
    return 2 * padded(s.tile()) * (key + 4) + padded(16 * s.group) * 4 + std::size_t(s.group) * 4 + 2 * 256 * 4;
}
inline RadixShape radix_shape(DType t, std::size_t max_work_group, std::size_t local_memory) {
    RadixShape s{128, 16};
    while (s.group > 1 && std::size_t(s.group) > max_work_group) s.group >>= 1;
    while (s.run > 1 && radix_local_bytes(t, s) > local_memory) s.run >>= 1;
    return s;
}

/// The value of dtype `t` that a radix key stands for, stored as values[at]: `descending` keys
/// are inverted, and the values a key does not tell apart (-0 from +0, NaN payloads) are read
/// from in[p].
inline std::string radix_store_function(DType t) {
    const std::string S = sort_storage_type(t), copy = sort_copy_type(t);
    std::string body;
    switch (t) {
        case DType::Float16:
        case DType::BFloat16:
        case DType::Float32:
            body = "    const uint u = (uint)k;\n    const float v = as_float((u >> 31) ? (u & 0x7fffffffu) : ~u);\n";
            if (t == DType::Float32)
                body += "    values[at] = v == 0.0f || isnan(v) ? in[p] : v;\n";
            else if (t == DType::BFloat16)  // v is a bfloat16's float: its top half is the element
                body += "    values[at] = v == 0.0f || isnan(v) ? in[p] : (ushort)(as_uint(v) >> 16);\n";
            else
                body += "    if (v == 0.0f || isnan(v)) values[at] = ((__global const ushort*)in)[p];\n"
                        "    else vstore_half(v, at, (__global half*)values);\n";
            break;
        case DType::Float64:
            body = "    const double v = as_double((k >> 63) ? (k & 0x7fffffffffffffffUL) : ~k);\n"
                   "    values[at] = v == 0.0 || isnan(v) ? in[p] : v;\n";
            break;
        case DType::Int8: body = "    values[at] = (char)((uchar)k ^ (uchar)0x80);\n"; break;
        case DType::Int16: body = "    values[at] = (short)(int)((uint)k ^ 0x80000000u);\n"; break;
        case DType::Int32: body = "    values[at] = (int)((uint)k ^ 0x80000000u);\n"; break;
        case DType::Int64: body = "    values[at] = (long)(k ^ 0x8000000000000000UL);\n"; break;
        case DType::Bool:
        case DType::UInt8:
        case DType::UInt16:
        case DType::UInt32:
        case DType::UInt64: body = std::string("    values[at] = (") + S + ")k;\n"; break;
        case DType::Complex64:
        case DType::Complex128: complex_dtype_inside(t);
    }
    return "inline void lt_store_value(__global const " + S + "* in, __global " + copy +
           "* values, uint at, lt_rkey key, int descending, uint p) {\n    const lt_rkey k = descending ? ~key : key;\n" + body + "}\n";
}

/// The program of the radix sort of one long row of dtype `t` (sort_radix in the backend): a
/// least-significant-digit sort of the keys, 8 bits a pass, each pass stable, so that ties keep
/// the order of positions. A pass (Satish, Harris and Garland's GPU radix sort):
/// - lt_radix_count makes each tile's histogram of the digit;
/// - lt_radix_scan turns each digit's counts over the tiles into prefix sums and its total,
///   lt_radix_digits the totals into each digit's first slot;
/// - lt_radix_scatter sorts its tile by the digit in local memory, by two stable counting sorts
///   of 4 bits each (each work-item counts, then places, a run of consecutive keys), and writes
///   the sorted tile out, each digit's keys consecutive in the output.
/// The first pass makes the keys from the input as it reads them, and the last writes the first
/// k sorted values and their positions instead of keys. Several rows (below 2^30 keys in all),
/// and one row below 2^30 where look-backs run (sort_routines.hpp), sort onesweep instead
/// (Adinets and Merrill): lt_radix_histogram counts every pass's digits in one read of the
/// input, lt_radix_digits turns them into first slots, and each pass is one lt_radix_onesweep,
/// lt_radix_scatter with its tiles' digit offsets from a decoupled look-back instead of
/// lt_radix_count and lt_radix_scan.
inline std::string radix_program(DType t, const RadixShape& shape) {
    const std::string S = sort_storage_type(t), copy = sort_copy_type(t);
    std::string s = sort_key_functions(t);
    s += "#define LT_L " + std::to_string(shape.group) + "\n#define LT_R " + std::to_string(shape.run) +
         "\n#define LT_TILE (LT_L * LT_R)\ntypedef " + (dtype_size(t) == 8 ? "ulong" : "uint") + " lt_rkey;\n";
    s += radix_store_function(t);
    s += R"CL(
// Local arrays take a spare word every 32, so that the runs of consecutive work-items, and one
// digit's counters, fall in different banks.
#define LT_PAD(j) ((j) + ((j) >> 5))
// A onesweep status word: a flag and a count of keys (below 2^30: radix_onesweep).
#define LT_AGGREGATE 0x40000000u
#define LT_INCLUSIVE 0x80000000u
#define LT_COUNT 0x3fffffffu

inline uint lt_digit(lt_rkey key, int shift) { return (uint)(key >> shift) & 255u; }

// Key i of the pass: from the input in the first pass, else from the previous pass's keys.
inline lt_rkey lt_radix_key(__global const )CL" + S + R"CL(* in, __global const lt_rkey* key, long i, int first, int descending) {
    if (!first) return key[i];
    const lt_rkey k = (lt_rkey)lt_key(in, i);
    return descending ? ~k : k;
}

// The sum of v over the work-items before this one; every work-item of the group calls it.
inline uint lt_exclusive_sum(uint v, __local uint* sums) {
    const int t = get_local_id(0);
    sums[t] = v;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = 1; step < LT_L; step <<= 1) {
        const uint u = t >= step ? sums[t - step] : 0u;
        barrier(CLK_LOCAL_MEM_FENCE);
        sums[t] += u;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    return sums[t] - v;
}

// counts[d * tiles + g]: how many keys of tile g have digit d. One work-group per tile; each
// work-item counts a run of keys and adds runs of one digit at once (sorted or skewed digits
// would otherwise queue on one counter).
__kernel __attribute__((reqd_work_group_size(LT_L, 1, 1)))
void lt_radix_count(__global const )CL" + S + R"CL(* in, __global const lt_rkey* key, long n, int shift, int first, int descending,
                    __global uint* counts) {
    __local uint hist[256];
    const int t = get_local_id(0);
    const long g = get_group_id(0), tiles = get_num_groups(0);
    for (int d = t; d < 256; d += LT_L) hist[d] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const long lo = g * LT_TILE + (long)t * LT_R, hi = min(n, lo + LT_R);
    uint digit = 256, run = 0;
    for (long i = lo; i < hi; ++i) {
        const uint d = lt_digit(lt_radix_key(in, key, i, first, descending), shift);
        if (d != digit) {
            if (run) atomic_add(&hist[digit], run);
            digit = d;
            run = 0;
        }
        ++run;
    }
    if (run) atomic_add(&hist[digit], run);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = t; d < 256; d += LT_L) counts[d * tiles + g] = hist[d];
}

// One work-group per digit d: counts[d * tiles + g] becomes the count of digit d in the tiles
// before g, and totals[d] the digit's count.
__kernel __attribute__((reqd_work_group_size(LT_L, 1, 1)))
void lt_radix_scan(__global uint* counts, long tiles, __global uint* totals) {
    __local uint sums[LT_L];
    const int t = get_local_id(0);
    __global uint* row = counts + get_group_id(0) * tiles;
    const long run = (tiles + LT_L - 1) / LT_L, lo = min(tiles, t * run), hi = min(tiles, lo + run);
    uint total = 0;
    for (long i = lo; i < hi; ++i) total += row[i];
    uint at = lt_exclusive_sum(total, sums);
    for (long i = lo; i < hi; ++i) {
        const uint c = row[i];
        row[i] = at;
        at += c;
    }
    if (t == LT_L - 1) totals[get_group_id(0)] = at;
}

// totals[d] becomes the count of the digits below d: the first slot of digit d. One work-group
// per 256 counters (per pass, after lt_radix_histogram).
__kernel __attribute__((reqd_work_group_size(LT_L, 1, 1)))
void lt_radix_digits(__global uint* totals) {
    __local uint sums[LT_L];
    totals += get_group_id(0) * 256;
    const int t = get_local_id(0), per = (256 + LT_L - 1) / LT_L, lo = min(256, t * per), hi = min(256, lo + per);
    uint total = 0;
    for (int d = lo; d < hi; ++d) total += totals[d];
    uint at = lt_exclusive_sum(total, sums);
    for (int d = lo; d < hi; ++d) {
        const uint c = totals[d];
        totals[d] = at;
        at += c;
    }
}

// Tile g's keys and positions to their slots for this digit, stably (the last pass: the values
// and positions). One work-group per tile.
// With `status` (the onesweep pass, lt_radix_onesweep), the tile comes from a ticket and its
// digits' slots from a look-back over the tiles before it; without, from `offsets`.
inline void lt_radix_scatter_tile(__global const )CL" + S + R"CL(* in, __global const lt_rkey* key, __global const uint* pos,
                      __global lt_rkey* key_out, __global uint* pos_out, __global )CL" + copy + R"CL(* values,
                      __global long* indices, long n, long k, int shift, int first, int last, int descending,
                      __global const uint* offsets, __global const uint* digit_starts, long starts_stride,
                      long tiles_per_row, __global uint* status, __local lt_rkey (*lk)[LT_PAD(LT_TILE)], __local uint (*lp)[LT_PAD(LT_TILE)], __local uint* counters,
                      __local uint* sums, __local uint* to, __local uint* from_j) {
    const int t = get_local_id(0);
    const long tiles = get_num_groups(0);
    if (status) {
        if (t == 0) sums[0] = atomic_inc(status);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    // Tile g is tile c of row `row` (rows of n keys sort each on its own: keys and positions
    // stay in their row, positions count from the row's start).
    const long g = status ? (long)sums[0] : (long)get_group_id(0), row = g / tiles_per_row, c = g - row * tiles_per_row;
    const long start = c * LT_TILE, base = row * n;
    barrier(CLK_LOCAL_MEM_FENCE);  // sums[0] is read before the sums below write it
    const int live = (int)min((long)LT_TILE, n - start);
    in += base;
    key += base;
    pos += base;
    key_out += base;
    pos_out += base;
    values += row * k;
    indices += row * k;
    digit_starts += row * starts_stride;
    for (int j = t; j < LT_TILE; j += LT_L) {  // past the end: keys after every key, which stay at the end
        lk[0][LT_PAD(j)] = j < live ? lt_radix_key(in, key, start + j, first, descending) : ~(lt_rkey)0;
        lp[0][LT_PAD(j)] = j >= live ? 0u : first ? (uint)(start + j) : pos[start + j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int from = 0; from < 2; ++from) {  // by the digit's low 4 bits, then its high 4
        const int at_shift = shift + 4 * from;
        for (int d = 0; d < 16; ++d) counters[LT_PAD(d * LT_L + t)] = 0;
        for (int r = 0; r < LT_R; ++r) ++counters[LT_PAD((((uint)(lk[from][LT_PAD(t * LT_R + r)] >> at_shift) & 15u) * LT_L + t))];
        barrier(CLK_LOCAL_MEM_FENCE);
        // Exclusive prefix sums in (digit, work-item) order: each key's place in the sorted tile.
        uint total = 0;
        for (int q = 16 * t; q < 16 * t + 16; ++q) total += counters[LT_PAD(q)];
        uint at = lt_exclusive_sum(total, sums);
        for (int q = 16 * t; q < 16 * t + 16; ++q) {
            const uint c = counters[LT_PAD(q)];
            counters[LT_PAD(q)] = at;
            at += c;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int r = 0; r < LT_R; ++r) {
            const int j = LT_PAD(t * LT_R + r);
            const lt_rkey k = lk[from][j];
            const int c = LT_PAD((((uint)(k >> at_shift) & 15u) * LT_L + t));
            const uint place = counters[c]++;
            lk[from ^ 1][LT_PAD(place)] = k;
            lp[from ^ 1][LT_PAD(place)] = lp[from][j];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    // Sorted, in lk[0]: digit d's keys go to digit_starts[d] + (digit d's keys in the tiles
    // before) on, in order.
    if (!status) {
        for (int j = t; j < live; j += LT_L) {
            const uint d = lt_digit(lk[0][LT_PAD(j)], shift);
            if (j == 0 || lt_digit(lk[0][LT_PAD(j - 1)], shift) != d) to[d] = digit_starts[d] + offsets[d * tiles + g] - (uint)j;
        }
    } else {
        // The tile's keys of digit d are its places from_j[d] to to[d] (here an end, not a slot).
        for (int d = t; d < 256; d += LT_L) from_j[d] = to[d] = 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = t; j < live; j += LT_L) {
            const uint d = lt_digit(lk[0][LT_PAD(j)], shift);
            if (j == 0 || lt_digit(lk[0][LT_PAD(j - 1)], shift) != d) from_j[d] = (uint)j;
            if (j == live - 1 || lt_digit(lk[0][LT_PAD(j + 1)], shift) != d) to[d] = (uint)j + 1;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        // Status word of (tile, digit): LT_AGGREGATE or LT_INCLUSIVE with the count of digit d's
        // keys in the tile, or in it and every tile before it; zero until published. Each
        // work-item publishes, then looks back for, its digits one at a time: a tile's
        // aggregates are all published before any of its look-backs waits, and the tiles it
        // waits on took their tickets before it, so are running.
        __global uint* words = status + 1;
        for (int d = t; d < 256; d += LT_L) {
            const uint count = to[d] - from_j[d];
            atomic_xchg(&words[g * 256 + d], (c == 0 ? LT_INCLUSIVE : LT_AGGREGATE) | count);
        }
        barrier(CLK_LOCAL_MEM_FENCE);  // (not needed for progress: all aggregates out before any wait, for speed)
        for (int d = t; d < 256; d += LT_L) {
            const uint count = to[d] - from_j[d];
            uint before = 0;
            for (long p = g - 1; p >= g - c;) {  // back to the row's first tile
                const uint w = atomic_or(&words[p * 256 + d], 0u);  // an atomic read: never a stale copy
                if (w & LT_INCLUSIVE) {
                    before += w & LT_COUNT;
                    break;
                }
                if (w & LT_AGGREGATE) {
                    before += w & LT_COUNT;
                    --p;
                }  // else not published yet: read again
            }
            if (c > 0) atomic_xchg(&words[g * 256 + d], LT_INCLUSIVE | (before + count));
            to[d] = digit_starts[d] + before - from_j[d];
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int j = t; j < live; j += LT_L) {
        const lt_rkey kj = lk[0][LT_PAD(j)];
        const uint at = to[lt_digit(kj, shift)] + (uint)j, p = lp[0][LT_PAD(j)];  // wraps back: at is below n
        if (!last) {
            key_out[at] = kj;
            pos_out[at] = p;
        } else if (at < k) {  // the first k
            lt_store_value(in, values, at, kj, descending, p);
            indices[at] = (long)p;
        }
    }
}

// Tile g's keys and positions to their slots for this digit, stably (the last pass: the values
// and positions). One work-group per tile.
__kernel __attribute__((reqd_work_group_size(LT_L, 1, 1)))
void lt_radix_scatter(__global const )CL" + S + R"CL(* in, __global const lt_rkey* key, __global const uint* pos,
                      __global lt_rkey* key_out, __global uint* pos_out, __global )CL" + copy + R"CL(* values,
                      __global long* indices, long n, long k, int shift, int first, int last, int descending,
                      __global const uint* offsets, __global const uint* digit_starts) {
    __local lt_rkey lk[2][LT_PAD(LT_TILE)];
    __local uint lp[2][LT_PAD(LT_TILE)];
    __local uint counters[LT_PAD(16 * LT_L)];  // [d * LT_L + t]: work-item t's keys with 4-bit digit d
    __local uint sums[LT_L];
    __local uint to[256];  // the slot of the tile's keys of digit d, less their first place in the sorted tile
    lt_radix_scatter_tile(in, key, pos, key_out, pos_out, values, indices, n, k, shift, first, last, descending, offsets,
                          digit_starts, 0, get_num_groups(0), 0, lk, lp, counters, sums, to, 0);
}

// The onesweep pass (Adinets and Merrill): lt_radix_scatter's work, with its tile from a ticket
// (status[0]) and its digits' slots from a decoupled look-back over the tiles before it
// (status[1 + tile * 256 + digit], zeroed first), so that a pass reads the keys once.
// digit_starts: the pass's 256 first slots (lt_radix_histogram, then lt_radix_digits).
__kernel __attribute__((reqd_work_group_size(LT_L, 1, 1)))
void lt_radix_onesweep(__global const )CL" + S + R"CL(* in, __global const lt_rkey* key, __global const uint* pos,
                       __global lt_rkey* key_out, __global uint* pos_out, __global )CL" + copy + R"CL(* values,
                       __global long* indices, long n, long k, int shift, int first, int last, int descending,
                       __global uint* counts, long starts_at, long starts_stride, long tiles_per_row, long status_at) {
    __local lt_rkey lk[2][LT_PAD(LT_TILE)];
    __local uint lp[2][LT_PAD(LT_TILE)];
    __local uint counters[LT_PAD(16 * LT_L)];
    __local uint sums[LT_L];
    __local uint to[256];
    __local uint from_j[256];
    lt_radix_scatter_tile(in, key, pos, key_out, pos_out, values, indices, n, k, shift, first, last, descending, 0,
                          counts + starts_at, starts_stride, tiles_per_row, counts + status_at, lk, lp, counters, sums, to,
                          from_j);
}

// counts[(row * passes + p) * 256 + d]: how many keys of row `row` (of n) have digit d in pass
// p (bits 8p to 8p + 7), for every pass at once, from the input's keys. groups_per_row
// work-groups per row walk its tiles (more than one: adding to counts zeroed first); each
// work-item counts runs of LT_R keys and adds runs of one digit at once.
__kernel __attribute__((reqd_work_group_size(LT_L, 1, 1)))
void lt_radix_histogram(__global const )CL" + S + R"CL(* in, long n, long groups_per_row, int passes, int descending,
                        __global uint* counts) {
    __local uint hist[256 * (int)sizeof(lt_rkey)];
    const int t = get_local_id(0);
    const long row = get_group_id(0) / groups_per_row, q = get_group_id(0) - row * groups_per_row;
    in += row * n;
    counts += row * passes * 256;
    for (int d = t; d < passes * 256; d += LT_L) hist[d] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (long lo = (q * LT_L + t) * LT_R; lo < n; lo += groups_per_row * LT_TILE) {
        const long hi = min(n, lo + LT_R);
        for (int p = 0; p < passes; ++p) {
            uint digit = 256, run = 0;
            for (long i = lo; i < hi; ++i) {
                const uint d = lt_digit(lt_radix_key(in, 0, i, 1, descending), 8 * p);
                if (d != digit) {
                    if (run) atomic_add(&hist[p * 256 + digit], run);
                    digit = d;
                    run = 0;
                }
                ++run;
            }
            if (run) atomic_add(&hist[p * 256 + digit], run);
        }
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = t; d < passes * 256; d += LT_L) {
        if (groups_per_row == 1)
            counts[d] = hist[d];
        else if (hist[d])
            atomic_add(&counts[d], hist[d]);
    }
}

__kernel void lt_radix_clear(__global uint* words, long count) {
    const long g = get_global_id(0);
    if (g < count) words[g] = 0;
}
)CL";
    return s;
}

}  // namespace lazytensor::detail::opencl
