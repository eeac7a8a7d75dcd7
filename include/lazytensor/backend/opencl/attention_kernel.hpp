// SPDX-License-Identifier: MIT
// lazytensor's OpenCL attention kernel: out = softmax(f(q @ kt), -1) @ v in one launch
// (ir/attention.hpp), float32, the scores and the weights never in global memory.
//
// A work-group of TX x TY work-items (8 x 16, or 8 x 32) takes BM query rows of one matrix of
// the batch (row ty + TY i for i < BM / TY) and walks the keys in blocks of BN: the block's
// scores in registers (key tx + TX j for j < BN / TX), f applied to each, the rows' running
// maxima agreed, the weights exp(f - max) written to local memory, and the output rows
// rescaled and accumulated from the block of v (columns tx * 4 + 4 TX c, four at a time). This
// is the online softmax of FlashAttention: where a block raises a row's maximum, what the row
// has gathered so far is scaled by exp(old - new). At the end each row is divided by its total.
// q, kt and v are read in place through their strides (vector loads where the fast axis has
// stride 1); d and dv are padded to 4 and to 4 TX in local memory with zeros; keys past S
// score -inf, query rows past T are not stored.
//
// The maximum takes NaN as lazytensor's reductions do (NaN wins). A row whose scores are all
// -inf gets 0 / 0 = NaN, as the three items give (exp(-inf - -inf)).
//
// On NVIDIA devices of compute capability 8.0 and 9.x, d and dv up to 64 run in blocks of 256 x
// 64 keys with 8 x 32 work-items (157 KB of local memory: more than the 48 KB NVIDIA's OpenCL
// reports, less than the 163 and 227 KB that A100 and H100 allow a block, and its compiler
// accepts it), or of 128 x 64 with 8 x 16 where 256-row blocks would leave a quarter of the
// multiprocessors idle. On the H200 (2026-11-28, bench_gemm_kernel --attention-params) 32 x
// 1024 x 64 took 0.294-0.296 and 0.302-0.303 ms that way, 0.31 with 128 x 64 and 8 x 32, 0.34
// with 64 x 32 and 8 x 16.
// The experiment this kernel grew from (bench/README.md, "Toward fused attention") agreed on the
// rows' maxima and totals through warp shuffles (inline PTX); a NaN in one row then changed the
// totals of the other rows of its warp, so they are not used.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include "../../core/error.hpp"
#include "../../ir/attention.hpp"
#include "fused_code.hpp"
#include "renderer.hpp"

namespace lazytensor::detail::opencl {

struct AttentionParams {
    int bm = 64, bn = 32;  // query rows and keys of a block
    int tx = 8, ty = 16;   // work-items along keys (and output columns) and along query rows
    int threads() const { return tx * ty; }
};

/// A ValueError unless `p` is a shape the kernel supports with at most `max_threads` work-items.
inline void check_attention_params(const AttentionParams& p, std::size_t max_threads) {
    const bool ok = p.bm > 0 && p.bn > 0 && p.tx > 0 && p.ty > 0 && p.bm % p.ty == 0 && p.bn % p.tx == 0 && p.bn % 4 == 0 &&
                    p.bn + 4 >= p.tx && std::size_t(p.threads()) <= max_threads;
    if (!ok)
        fail<ValueError>("attention kernel parameters bm ", p.bm, ", bn ", p.bn, ", tx ", p.tx, ", ty ", p.ty,
                         ": bm must be a multiple of ty, bn of tx and of 4, and tx * ty at most ", max_threads);
}

inline std::int64_t round_up(std::int64_t x, std::int64_t to) { return (x + to - 1) / to * to; }

/// The local memory a work-group of `p` uses, in bytes, for depths d and dv.
inline std::size_t attention_local_bytes(const AttentionParams& p, std::int64_t d, std::int64_t dv) {
    const std::int64_t ldq = round_up(d, 4) + 4, ldv = round_up(dv, 4 * p.tx) + 4, ldp = p.bn + 4;
    const std::int64_t kv = p.bn * std::max(ldq, ldv);
    return static_cast<std::size_t>(4 * (p.bm * ldq + kv + p.bm * ldp));
}

/// The parameters attention of depths d and dv over `blocks_of_256` work-groups of 256 query rows
/// (batch * ceil(T / 256)) runs with on a device, if it can run there. `nvidia_cc`: NVIDIA's
/// compute capability (major * 10 + minor), 0 elsewhere.
inline std::optional<AttentionParams> attention_params_for(std::int64_t d, std::int64_t dv, std::int64_t blocks_of_256,
                                                           const DeviceTraits& device, int nvidia_cc) {
    // Registers: each work-item holds BM / TY rows of dv / TX outputs and of BN / TX scores.
    if (d < 1 || dv < 1 || d > 256 || dv > 256) return std::nullopt;
    // The measured fast cases (see the top), 8 rows a work-item: 256 x 64 blocks where they keep
    // at least 3/4 of the multiprocessors busy (128 blocks on 132 were faster than 256 of 128
    // rows), else 128 x 64.
    if (d <= 64 && dv <= 64 && (nvidia_cc == 80 || nvidia_cc >= 90) && device.max_work_group >= 256)
        return 4 * blocks_of_256 >= 3 * device.compute_units ? AttentionParams{256, 64, 8, 32} : AttentionParams{128, 64, 8, 16};
    for (const auto& [bm, bn] : {std::pair{64, 32}, std::pair{32, 32}, std::pair{16, 32}, std::pair{16, 16}}) {
        const AttentionParams p{bm, bn, 8, 16};
        if (std::size_t(p.threads()) <= device.max_work_group && attention_local_bytes(p, d, dv) <= device.local_memory) return p;
    }
    return std::nullopt;
}

/// How the kernel reads one operand: vector loads where its fast axis has stride 1 and its
/// length is a multiple of 4.
struct AttentionLayout {
    bool q_vec = false, k_vec = false, v_vec = false;
};

inline AttentionLayout attention_layout(const ir::Attention& a) {
    const std::int64_t d = a.depth(), dv = a.value_depth();
    return AttentionLayout{a.scores.a.col_stride == 1 && d % 4 == 0, a.scores.b.row_stride == 1 && d % 4 == 0,
                           a.values.b.col_stride == 1 && dv % 4 == 0};
}

inline const char* attention_kernel_name() { return "lt_attention"; }

/// The program of the attention kernel. `f` is the score function as a prologue function
/// (prologue_code of ir::Attention::score_function), taking the score and f's scalars.
inline std::string attention_kernel_source(std::int64_t d, std::int64_t dv, const AttentionParams& p,
                                           const AttentionLayout& layout, const FusedPrologue& f) {
    auto n = [](auto x) { return std::to_string(x); };
    std::string s;
    if (f.fp64) s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    for (const std::string& h : f.helpers) s += h;
    s += f.function;
    s += "// lazytensor attention: d " + n(d) + ", dv " + n(dv) + ", block " + n(p.bm) + " x " + n(p.bn) + ", work-items " +
         n(p.tx) + " x " + n(p.ty) + "\n";
    s += "#define D " + n(d) + "\n#define DP " + n(round_up(d, 4)) + "\n#define DV " + n(dv) + "\n#define DVP " +
         n(round_up(dv, 4 * p.tx)) + "\n#define BM " + n(p.bm) + "\n#define BN " + n(p.bn) + "\n#define TX " + n(p.tx) +
 "\n#define TY " + n(p.ty) + "\n#define Q_VEC " + n(int(layout.q_vec)) +
         "\n#define K_VEC " + n(int(layout.k_vec)) + "\n#define V_VEC " + n(int(layout.v_vec)) + "\n";
    s += R"CL(#define RM (BM / TY)
#define RN (BN / TX)
#define CN (DVP / TX)
#define LDQ (DP + 4)
#define LDV (DVP + 4)
#define LDP (BN + 4)
#define NT (TX * TY)
#define LT_MAX(a, b) (((b) > (a) || isnan(b)) ? (b) : (a))

// Rows [first, first + ROWS) of a matrix whose element (row, c) is at X + row * RS + c * CS
// (c < W; zeros past W and past `limit` rows), to local memory at dst with leading dimension LD
// and WP columns.
#define LOAD_ROWS(VEC, dst, LD, ROWS, WP, W, X, RS, CS, first, limit)                                   \
    if (VEC) {                                                                                          \
        for (int e = lid; e < ROWS * (WP / 4); e += NT) {                                               \
            const int r = e / (WP / 4), c = e % (WP / 4) * 4;                                           \
            *(__local float4*)(dst + r * LD + c) = (first) + r < (limit) && c < W                       \
                ? vload4(0, X + (long)((first) + r) * (RS) + c) : (float4)(0.0f);                       \
        }                                                                                               \
    } else {                                                                                            \
        for (int e = lid; e < ROWS * WP; e += NT) {                                                     \
            const int r = e / WP, c = e % WP;                                                           \
            dst[r * LD + c] = (first) + r < (limit) && c < W ? X[(long)((first) + r) * (RS) + (long)c * (CS)] : 0.0f; \
        }                                                                                               \
    }

__kernel __attribute__((reqd_work_group_size(TX, TY, 1)))
void lt_attention(__global float* restrict O, __global const float* Q, __global const float* K,
                  __global const float* V, const int T, const int S, const long first_batch,
                  const long q_off, const long q_bs, const long q_rs, const long q_cs,
                  const long k_off, const long k_bs, const long k_rs, const long k_cs,
                  const long v_off, const long v_bs, const long v_rs, const long v_cs)CL";
    s += f.parameters;
    s += R"CL() {
    __local float Qs[BM * LDQ] __attribute__((aligned(16)));
    __local float KV[BN * (LDQ > LDV ? LDQ : LDV)] __attribute__((aligned(16)));  // the block of K, then of V
    #define Ks KV
    #define Vs KV
    __local float Ps[BM * LDP] __attribute__((aligned(16)));  // the rows' partial maxima, then the weights
    const int tx = get_local_id(0), ty = get_local_id(1), lid = ty * TX + tx;
    const int row0 = get_group_id(0) * BM;
    const long b = first_batch + get_group_id(2);
    Q += q_off + b * q_bs;
    K += k_off + b * k_bs;
    V += v_off + b * v_bs;
    O += b * (long)T * DV;
    // K's row j is key j: element (key, c) of kt is at k_rs * c + k_cs * key.
    LOAD_ROWS(Q_VEC, Qs, LDQ, BM, DP, D, Q, q_rs, q_cs, row0, T)
    float o[RM][CN], m[RM], l[RM];
    #pragma unroll
    for (int i = 0; i < RM; ++i) {
        m[i] = -INFINITY;
        l[i] = 0.0f;
        #pragma unroll
        for (int c = 0; c < CN; ++c) o[i][c] = 0.0f;
    }
    for (int j0 = 0; j0 < S; j0 += BN) {
        barrier(CLK_LOCAL_MEM_FENCE);  // every work-item has read the previous K and V (and Q is stored)
        LOAD_ROWS(K_VEC, Ks, LDQ, BN, DP, D, K, k_cs, k_rs, j0, S)
        barrier(CLK_LOCAL_MEM_FENCE);
        float sc[RM][RN];
        #pragma unroll
        for (int i = 0; i < RM; ++i)
            #pragma unroll
            for (int j = 0; j < RN; ++j) sc[i][j] = 0.0f;
        for (int c = 0; c < DP; c += 4) {
            float4 qv[RM], kv[RN];
            #pragma unroll
            for (int i = 0; i < RM; ++i) qv[i] = *(__local const float4*)(Qs + (ty + TY * i) * LDQ + c);
            #pragma unroll
            for (int j = 0; j < RN; ++j) kv[j] = *(__local const float4*)(Ks + (tx + TX * j) * LDQ + c);
            #pragma unroll
            for (int i = 0; i < RM; ++i)
                #pragma unroll
                for (int j = 0; j < RN; ++j)
                    sc[i][j] = fma(qv[i].w, kv[j].w, fma(qv[i].z, kv[j].z, fma(qv[i].y, kv[j].y, fma(qv[i].x, kv[j].x, sc[i][j]))));
        }
        // f, the keys past S masked, and each row's maximum agreed.
        float next[RM];
        #pragma unroll
        for (int i = 0; i < RM; ++i) {
            float part = m[i];
            #pragma unroll
            for (int j = 0; j < RN; ++j) {
                sc[i][j] = j0 + tx + TX * j < S ? )CL";
    s += f.name + "(sc[i][j]" + f.arguments + ")";
    s += R"CL( : -INFINITY;
                part = LT_MAX(part, sc[i][j]);
            }
            Ps[(ty + TY * i) * TX + tx] = part;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        #pragma unroll
        for (int i = 0; i < RM; ++i) {
            float mx = m[i];
            #pragma unroll
            for (int t = 0; t < TX; ++t) mx = LT_MAX(mx, Ps[(ty + TY * i) * TX + t]);
            next[i] = mx;
        }
        barrier(CLK_LOCAL_MEM_FENCE);  // the maxima and K are read: the weights and V overwrite them
        #pragma unroll
        for (int i = 0; i < RM; ++i) {
            // A row whose scores so far are all -inf keeps weights 0 (exp(-inf - 0)) until a finite one comes.
            const float shift = next[i] == -INFINITY ? 0.0f : next[i];
            const float alpha = exp(m[i] - shift);
            m[i] = next[i];
            l[i] *= alpha;
            #pragma unroll
            for (int c = 0; c < CN; ++c) o[i][c] *= alpha;
            #pragma unroll
            for (int j = 0; j < RN; ++j) {
                const float w = exp(sc[i][j] - shift);
                l[i] += w;
                Ps[(ty + TY * i) * LDP + tx + TX * j] = w;
            }
        }
        LOAD_ROWS(V_VEC, Vs, LDV, BN, DVP, DV, V, v_rs, v_cs, j0, S)
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int j = 0; j < BN; j += 4) {
            float4 pv[RM], vv[4][CN / 4];
            #pragma unroll
            for (int i = 0; i < RM; ++i) pv[i] = *(__local const float4*)(Ps + (ty + TY * i) * LDP + j);
            #pragma unroll
            for (int t = 0; t < 4; ++t)
                #pragma unroll
                for (int c = 0; c < CN / 4; ++c) vv[t][c] = *(__local const float4*)(Vs + (j + t) * LDV + c * 4 * TX + tx * 4);
            #pragma unroll
            for (int i = 0; i < RM; ++i)
                #pragma unroll
                for (int c = 0; c < CN / 4; ++c) {
                    float4 acc = (float4)(o[i][4 * c], o[i][4 * c + 1], o[i][4 * c + 2], o[i][4 * c + 3]);
                    acc = fma((float4)(pv[i].x), vv[0][c], acc);
                    acc = fma((float4)(pv[i].y), vv[1][c], acc);
                    acc = fma((float4)(pv[i].z), vv[2][c], acc);
                    acc = fma((float4)(pv[i].w), vv[3][c], acc);
                    o[i][4 * c] = acc.x, o[i][4 * c + 1] = acc.y, o[i][4 * c + 2] = acc.z, o[i][4 * c + 3] = acc.w;
                }
        }
    }
    // Each work-item summed the weights of its own keys: the rows' totals.
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (int i = 0; i < RM; ++i) Ps[(ty + TY * i) * TX + tx] = l[i];
    barrier(CLK_LOCAL_MEM_FENCE);
    #pragma unroll
    for (int i = 0; i < RM; ++i) {
        float total = 0.0f;
        #pragma unroll
        for (int t = 0; t < TX; ++t) total += Ps[(ty + TY * i) * TX + t];
        const int row = row0 + ty + TY * i;
        if (row >= T) continue;
        __global float* out = O + (long)row * DV;
        #pragma unroll
        for (int c = 0; c < CN / 4; ++c) {
            const int col = c * 4 * TX + tx * 4;
            const float4 r = (float4)(o[i][4 * c], o[i][4 * c + 1], o[i][4 * c + 2], o[i][4 * c + 3]) / total;
#if DV % 4 == 0
            if (col < DV) vstore4(r, 0, out + col);
#else
            if (col < DV) out[col] = r.x;
            if (col + 1 < DV) out[col + 1] = r.y;
            if (col + 2 < DV) out[col + 2] = r.z;
            if (col + 3 < DV) out[col + 3] = r.w;
#endif
        }
    }
}
)CL";
    return s;
}

}  // namespace lazytensor::detail::opencl
