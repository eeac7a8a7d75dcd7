// The OpenCL row sort (lt::sort, argsort, topk): a bitonic sort of (key, position) pairs, one
// sort per row of P = n rounded up to a power of two, padded with pairs that sort last.
//
// Keys are 64-bit unsigned integers that order as the values do: floats with their sign bit
// flipped (the others too for negative values), -0 made +0 and every NaN the one above +inf;
// integers with the sign bit flipped; descending order inverts them. Ties go by position, so the
// result is that of a stable sort. Stages of the sort that stay within a block of B pairs run
// in local memory, one launch for all of them; wider ones are a launch each over global memory.
// topk of up to 16 reads each row once instead (topk_program), and one long row (a 1-D sort)
// takes a radix sort (radix_program).
#pragma once

#include <string>

#include "../../core/dtype.hpp"
#include "op_spellings.hpp"

namespace lazytensor::detail::opencl {

/// The element type of buffers of `t` as the sort reads them, and as it copies them.
inline std::string sort_storage_type(DType t) { return t == DType::Float16 ? "half" : t == DType::Bool ? "uchar" : cl_value_type(t); }
inline std::string sort_copy_type(DType t) { return t == DType::Float16 ? "ushort" : sort_storage_type(t); }

/// lt_key(in, i), the key of in[i], and lt_after, the order of (key, position) pairs.
inline std::string sort_key_functions(DType t) {
    std::string key;
    switch (t) {
        case DType::Float16:
        case DType::Float32:
            key = std::string(t == DType::Float16 ? "    float v = vload_half(i, in);\n" : "    float v = in[i];\n") +
                  "    if (isnan(v)) v = NAN;\n    if (v == 0.0f) v = 0.0f;\n"
                  "    const uint u = as_uint(v);\n    return (ulong)((u >> 31) ? ~u : (u | 0x80000000u));\n";
            break;
        case DType::Float64:
            key = "    double v = in[i];\n    if (isnan(v)) v = (double)NAN;\n    if (v == 0.0) v = 0.0;\n"
                  "    const ulong u = as_ulong(v);\n    return (u >> 63) ? ~u : (u | 0x8000000000000000UL);\n";
            break;
        case DType::Int32: key = "    return (ulong)((uint)in[i] ^ 0x80000000u);\n"; break;
        case DType::Int64: key = "    return (ulong)in[i] ^ 0x8000000000000000UL;\n"; break;
        case DType::Bool:
        case DType::UInt8: key = "    return (ulong)in[i];\n"; break;
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

/// The program of the radix sort of one long row of dtype `t` (sort_radix in the backend): a
/// least-significant-digit sort of the keys, 8 bits a pass, each pass stable, so that ties keep
/// the order of positions. A pass: lt_radix_count makes each tile's histogram of the digit,
/// lt_radix_scan turns the histograms (digit-major) into each (digit, tile)'s first output slot,
/// and lt_radix_scatter moves each tile's pairs there, a chunk of the work-group's size at a time,
/// ranking equal digits within the chunk by position.
inline std::string radix_program(DType t) {
    const std::string S = sort_storage_type(t), copy = sort_copy_type(t);
    std::string s = sort_key_functions(t);
    s += R"CL(
__kernel void lt_radix_keys(__global const )CL" + S + R"CL(* in, __global ulong* key, __global uint* pos, long n, int descending,
                            ulong mask) {
    const long i = get_global_id(0);
    if (i >= n) return;
    const ulong k = lt_key(in, i);
    key[i] = (descending ? ~k : k) & mask;
    pos[i] = (uint)i;
}

inline uint lt_digit(ulong key, int shift) { return (uint)(key >> shift) & 255u; }

// counts[d * tiles + tile]: how many keys of the tile have digit d. One work-group per tile.
__kernel void lt_radix_count(__global const ulong* key, long n, long tile, int shift, __global uint* counts) {
    __local uint hist[256];
    const int t = get_local_id(0), L = get_local_size(0);
    const long g = get_group_id(0), tiles = get_num_groups(0);
    for (int d = t; d < 256; d += L) hist[d] = 0;
    barrier(CLK_LOCAL_MEM_FENCE);
    const long end = min(n, (g + 1) * tile);
    for (long i = g * tile + t; i < end; i += L) atomic_inc(&hist[lt_digit(key[i], shift)]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int d = t; d < 256; d += L) counts[d * tiles + g] = hist[d];
}

// Exclusive prefix sums of counts[0 .. m), in place: one work-group, each work-item a run.
__kernel void lt_radix_scan(__global uint* counts, long m, __local uint* sums) {
    const int t = get_local_id(0), L = get_local_size(0);
    const long run = (m + L - 1) / L, lo = min(m, t * run), hi = min(m, lo + run);
    uint total = 0;
    for (long i = lo; i < hi; ++i) total += counts[i];
    sums[t] = total;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int step = 1; step < L; step <<= 1) {  // inclusive scan of the runs' totals
        const uint v = t >= step ? sums[t - step] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        sums[t] += v;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint at = sums[t] - total;
    for (long i = lo; i < hi; ++i) {
        const uint c = counts[i];
        counts[i] = at;
        at += c;
    }
}

// Each tile's pairs to their slots for this digit, stably. One work-group per tile.
__kernel void lt_radix_scatter(__global const ulong* key, __global const uint* pos, __global ulong* key_out,
                               __global uint* pos_out, long n, long tile, int shift, __global const uint* offsets,
                               __local uint* digits) {
    __local uint base[256];
    const int t = get_local_id(0), L = get_local_size(0);
    const long g = get_group_id(0), tiles = get_num_groups(0);
    for (int d = t; d < 256; d += L) base[d] = offsets[d * tiles + g];
    barrier(CLK_LOCAL_MEM_FENCE);
    const long end = min(n, (g + 1) * tile);
    for (long start = g * tile; start < end; start += L) {
        const long i = start + t;
        const bool live = i < end;
        const ulong k = live ? key[i] : 0;
        const uint d = live ? lt_digit(k, shift) : 256u;
        digits[t] = d;
        barrier(CLK_LOCAL_MEM_FENCE);
        uint rank = 0, last = 1;  // equal digits before this one in the chunk; whether none follows
        for (int j = 0; j < L; ++j) {
            const uint e = digits[j];
            rank += j < t && e == d;
            last &= !(j > t && e == d);
        }
        if (live) {
            const uint at = base[d] + rank;
            key_out[at] = k;
            pos_out[at] = pos[i];
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (live && last) base[d] += rank + 1;  // the chunk's count of this digit
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}

// The first k: values and positions.
__kernel void lt_radix_gather(__global const )CL" + copy + R"CL(* in, __global const uint* pos, __global )CL" + copy +
         R"CL(* values, __global long* indices, long k) {
    const long i = get_global_id(0);
    if (i >= k) return;
    const uint p = pos[i];
    values[i] = in[p];
    indices[i] = (long)p;
}
)CL";
    return s;
}

}  // namespace lazytensor::detail::opencl
