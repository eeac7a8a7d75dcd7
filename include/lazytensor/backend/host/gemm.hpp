// SPDX-License-Identifier: MIT
// The host backend's matrix product: a packed GEMM in the BLIS style.
//
// C (row-major, ldc = n) is computed in mr x nr register tiles by a micro-kernel that, for each
// k, loads one row of nr B values (nv SIMD vectors), broadcasts mr A values and does mr * nv
// FMAs. Its operands come from packed copies, micro-panels of mr rows of A and of nr columns of
// B, each stored k-major ([k][mr], [k][nr]) so that the kernel reads two contiguous streams.
// Packing is where the operands' strides are handled, whatever they are (a copy where the
// micro-panel's lines are contiguous, a transpose where its k elements are, element by element
// otherwise), and where the edges are padded with zeros, so that the kernel only ever sees full
// tiles; it writes back only the part of a tile that lies inside C.
//
// Cache blocking, from the outside in:
//   rows of A in panels of up to ma rows (4 MiB packed: L3), and k in slices of kc;
//   columns of B in blocks (kc x nc, 1 MiB packed: L2, reread once per A micro-panel);
//   an A micro-panel (mr x kc, 18 KiB) stays in L1 while it meets every B micro-panel of the block.
// Threads: C is cut into blocks of whole micro-panels (or many small products into groups of
// batches), one task each; a task packs its own operands, so one parallel_for does it all, with
// no barrier between k slices.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "../../core/config.hpp"
#include "../../simd/simd_arch.hpp"
LAZYTENSOR_XSIMD_WARNINGS_OFF
#include <xsimd/xsimd.hpp>
#if XSIMD_WITH_AVX512F
#include <immintrin.h>
#endif

#include "../../ir/gemm.hpp"
#include "thread_pool.hpp"

namespace lazytensor::detail::host {

namespace gemm_detail {

// Whether xsimd's batches are AVX-512 ones: then a few AVX-512 intrinsics stand in where xsimd 8
// has nothing (transposes; the fused multiply-add is simd_arch.hpp's multiply_add).
inline constexpr bool avx512 = simd_is_avx512;

// 32 vector registers (AVX-512, AArch64) hold a 12 x 2-vector tile of accumulators plus the B
// vectors; 16 (SSE, AVX2) hold 6 x 2.
inline constexpr bool wide_register_file = avx512 || XSIMD_WITH_NEON64;

template <class T>
struct Tiling {
    using Vec = xsimd::batch<T, simd_arch>;
    static constexpr int w = static_cast<int>(Vec::size);
    static constexpr int nv = 2;  // vectors per tile row
    static constexpr int nr = nv * w;
    static constexpr int mr = wide_register_file ? 12 : 6;
    static constexpr int mr_step = mr / 3;  // edge tiles run a kernel with rows rounded up to this
    // An A micro-panel (mr x kc) takes about 18 KiB: it stays in L1 next to the B micro-panel
    // streaming through.
    static constexpr std::int64_t kc = (18 * 1024) / (mr * static_cast<int>(sizeof(T)));
    // A B block (kc x nc) takes up to 1 MiB of L2.
    static constexpr std::int64_t b_block_bytes = std::int64_t(1) << 20;
    // An A panel (ma x kc) takes up to 4 MiB of L3.
    static constexpr std::int64_t a_panel_bytes = std::int64_t(4) << 20;
};

/// A growable 64-byte aligned buffer, kept between calls.
class AlignedBuffer {
public:
    template <class T>
    T* get(std::int64_t count) {
        const std::size_t bytes = static_cast<std::size_t>(count) * sizeof(T);
        if (bytes > size_) {
            data_.reset(static_cast<std::byte*>(::operator new(bytes, std::align_val_t(64))));
            size_ = bytes;
        }
        return reinterpret_cast<T*>(data_.get());
    }

private:
    struct Free {
        void operator()(std::byte* p) const { ::operator delete(p, std::align_val_t(64)); }
    };
    std::unique_ptr<std::byte, Free> data_;
    std::size_t size_ = 0;
};

/// Each thread's packing buffers (for whichever task it runs): an A panel and a B block.
struct Scratch {
    AlignedBuffer a, b;
};
inline Scratch& thread_scratch() {
    static thread_local Scratch scratch;
    return scratch;
}

/// One operand of one batch: element (i, j) at p[i * rs + j * cs].
template <class T>
struct Matrix {
    const T* p;
    std::int64_t rs, cs;
    const T* at(std::int64_t i, std::int64_t j) const { return p + i * rs + j * cs; }
};

#if XSIMD_WITH_AVX512F
/// dst[c * ld_dst + r] = src[r * ld_src + c] for c < 16 and r < lanes, from the first `rows`
/// rows of a 16 x 16 block (the others read as zeros): four rounds of shuffles (pairs of rows,
/// pairs of pairs, then 128-bit lanes twice) in place of 256 scalar stores.
inline void transpose_block(const float* src, std::int64_t ld_src, int rows, float* dst, std::int64_t ld_dst, int lanes) {
    __m512 r[16], t[16];
    for (int i = 0; i < 16; ++i) r[i] = i < rows ? _mm512_loadu_ps(src + i * ld_src) : _mm512_setzero_ps();
    for (int i = 0; i < 16; i += 2) {
        t[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
    }
    // r[4g + e], 128-bit lane l: column 4l + e of rows 4g..4g+3.
    for (int i = 0; i < 16; i += 4)
        for (int e = 0; e < 2; ++e) {
            const __m512d x = _mm512_castps_pd(t[i + e]), y = _mm512_castps_pd(t[i + e + 2]);
            r[i + 2 * e] = _mm512_castpd_ps(_mm512_unpacklo_pd(x, y));
            r[i + 2 * e + 1] = _mm512_castpd_ps(_mm512_unpackhi_pd(x, y));
        }
    const __mmask16 keep = static_cast<__mmask16>((1u << lanes) - 1);
    for (int e = 0; e < 4; ++e) {
        const __m512 u0 = _mm512_shuffle_f32x4(r[e], r[4 + e], 0x88), u1 = _mm512_shuffle_f32x4(r[e], r[4 + e], 0xdd);
        const __m512 u2 = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0x88), u3 = _mm512_shuffle_f32x4(r[8 + e], r[12 + e], 0xdd);
        _mm512_mask_storeu_ps(dst + e * ld_dst, keep, _mm512_shuffle_f32x4(u0, u2, 0x88));
        _mm512_mask_storeu_ps(dst + (4 + e) * ld_dst, keep, _mm512_shuffle_f32x4(u1, u3, 0x88));
        _mm512_mask_storeu_ps(dst + (8 + e) * ld_dst, keep, _mm512_shuffle_f32x4(u0, u2, 0xdd));
        _mm512_mask_storeu_ps(dst + (12 + e) * ld_dst, keep, _mm512_shuffle_f32x4(u1, u3, 0xdd));
    }
}

/// The same for an 8 x 8 block of doubles.
inline void transpose_block(const double* src, std::int64_t ld_src, int rows, double* dst, std::int64_t ld_dst, int lanes) {
    __m512d r[8], t[8];
    for (int i = 0; i < 8; ++i) r[i] = i < rows ? _mm512_loadu_pd(src + i * ld_src) : _mm512_setzero_pd();
    // t[2j + e], 128-bit lane l: column 2l + e of rows 2j, 2j+1.
    for (int i = 0; i < 8; i += 2) {
        t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]);
        t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]);
    }
    const __mmask8 keep = static_cast<__mmask8>((1u << lanes) - 1);
    for (int e = 0; e < 2; ++e) {
        const __m512d u0 = _mm512_shuffle_f64x2(t[e], t[2 + e], 0x88), u1 = _mm512_shuffle_f64x2(t[e], t[2 + e], 0xdd);
        const __m512d u2 = _mm512_shuffle_f64x2(t[4 + e], t[6 + e], 0x88), u3 = _mm512_shuffle_f64x2(t[4 + e], t[6 + e], 0xdd);
        _mm512_mask_storeu_pd(dst + e * ld_dst, keep, _mm512_shuffle_f64x2(u0, u2, 0x88));
        _mm512_mask_storeu_pd(dst + (2 + e) * ld_dst, keep, _mm512_shuffle_f64x2(u1, u3, 0x88));
        _mm512_mask_storeu_pd(dst + (4 + e) * ld_dst, keep, _mm512_shuffle_f64x2(u0, u2, 0xdd));
        _mm512_mask_storeu_pd(dst + (6 + e) * ld_dst, keep, _mm512_shuffle_f64x2(u1, u3, 0xdd));
    }
}
#endif

/// Packs `count` (<= P) lines of `len` elements, line i at src + i * s_i with element stride s_t,
/// into dst[t * P + i], with zeros for lines count..P-1: the layout of a packed micro-panel.
/// Lines that are contiguous (a column-major A, a row-major B) make a copy per t; contiguous
/// elements (a row-major A, a column-major B) a transpose.
template <int P, class T>
void pack_interleaved(const T* src, std::int64_t s_i, std::int64_t s_t, int count, std::int64_t len, T* dst) {
    if (s_i == 1) {
        for (std::int64_t t = 0; t < len; ++t) {
            const T* s = src + t * s_t;
            T* d = dst + t * P;
            if (count == P) {
                for (int i = 0; i < P; ++i) d[i] = s[i];
            } else {
                for (int i = 0; i < count; ++i) d[i] = s[i];
                for (int i = count; i < P; ++i) d[i] = T(0);
            }
        }
        return;
    }
    std::int64_t t0 = 0;  // where the scalar loops start
#if XSIMD_WITH_AVX512F
    if constexpr (avx512) {
        if (s_t == 1) {
            constexpr int w = Tiling<T>::w;
            for (; t0 + w <= len; t0 += w)
                for (int i = 0; i < P; i += w)
                    transpose_block(src + i * s_i + t0, s_i, std::clamp(count - i, 0, w), dst + t0 * P + i, P,
                                    std::min(P - i, w));
        }
    }
#endif
    for (int i = 0; i < count; ++i)
        for (std::int64_t t = t0; t < len; ++t) dst[t * P + i] = src[i * s_i + t * s_t];
    for (int i = count; i < P; ++i)
        for (std::int64_t t = t0; t < len; ++t) dst[t * P + i] = T(0);
}

/// Packs the B micro-panels [j0, j0 + cols) x [p, p + len) into consecutive [k][nr] panels.
template <class T>
void pack_b(const Matrix<T>& b, std::int64_t p, std::int64_t j0, std::int64_t cols, std::int64_t len, T* dst) {
    using Vec = typename Tiling<T>::Vec;
    constexpr int w = Tiling<T>::w, nr = Tiling<T>::nr;
    const std::int64_t panels = (cols + nr - 1) / nr;
    if (b.cs == 1) {
        // Row-major: walk each row of B once, from left to right, into every panel.
        for (std::int64_t t = 0; t < len; ++t) {
            const T* s = b.at(p + t, j0);
            for (std::int64_t q = 0; q < panels; ++q) {
                T* d = dst + q * nr * len + t * nr;
                const T* sq = s + q * nr;
                const std::int64_t count = std::min<std::int64_t>(nr, cols - q * nr);
                for (int c = 0; c < nr; c += w) {
                    if (c + w <= count)
                        Vec::load_unaligned(sq + c).store_aligned(d + c);
                    else if (c >= count)
                        Vec(T(0)).store_aligned(d + c);
                    else
                        for (int i = c; i < c + w; ++i) d[i] = i < count ? sq[i] : T(0);
                }
            }
        }
        return;
    }
    for (std::int64_t q = 0; q < panels; ++q)
        pack_interleaved<nr>(b.at(p, j0 + q * nr), b.cs, b.rs, static_cast<int>(std::min<std::int64_t>(nr, cols - q * nr)),
                             len, dst + q * nr * len);
}

/// C[0:rows, 0:cols] (+)= (packed A micro-panel) x (packed B micro-panel) over kc. R (<= mr) rows
/// and V (<= nv) vectors of the register tile are computed; the rest of the packed panels is
/// padding that this tile does not reach.
// The register tile's loops must be unrolled completely, or the accumulators live in memory:
// GCC's -O2 does not do it by itself (70 instead of 180 GFLOP/s at 512^3 here).
#define LAZYTENSOR_UNROLL _Pragma("GCC unroll 32")

template <class T, int R, int V>
void micro_kernel(std::int64_t kc, const T* __restrict a, const T* __restrict b, T* c, std::int64_t ldc,
                  int rows, int cols, bool accumulate) {
    using Vec = typename Tiling<T>::Vec;
    constexpr int w = Tiling<T>::w, mr = Tiling<T>::mr, nr = Tiling<T>::nr;
    // C is read (or written) at the end; start fetching it now.
    for (int r = 0; r < rows; ++r)
        for (int v = 0; v < V; ++v) __builtin_prefetch(c + r * ldc + v * w, 1);
    Vec acc[R][V];
    LAZYTENSOR_UNROLL
    for (int r = 0; r < R; ++r)
        LAZYTENSOR_UNROLL
        for (int v = 0; v < V; ++v) acc[r][v] = Vec(T(0));
    for (std::int64_t p = 0; p < kc; ++p, a += mr, b += nr) {
        Vec bv[V];
        LAZYTENSOR_UNROLL
        for (int v = 0; v < V; ++v) bv[v] = Vec::load_aligned(b + v * w);
        LAZYTENSOR_UNROLL
        for (int r = 0; r < R; ++r) {
            const Vec ar(a[r]);
            LAZYTENSOR_UNROLL
            for (int v = 0; v < V; ++v) acc[r][v] = multiply_add(ar, bv[v], acc[r][v]);
        }
    }
    if (rows == R && cols == V * w) {
        LAZYTENSOR_UNROLL
        for (int r = 0; r < R; ++r)
            LAZYTENSOR_UNROLL
            for (int v = 0; v < V; ++v) {
                T* out = c + r * ldc + v * w;
                (accumulate ? acc[r][v] + Vec::load_unaligned(out) : acc[r][v]).store_unaligned(out);
            }
        return;
    }
    // An edge tile: go through memory and write back only the elements inside C.
    alignas(64) T tile[R][V * w];
    for (int r = 0; r < R; ++r)
        for (int v = 0; v < V; ++v) acc[r][v].store_aligned(&tile[r][v * w]);
    for (int r = 0; r < rows; ++r)
        for (int j = 0; j < cols; ++j) c[r * ldc + j] = accumulate ? c[r * ldc + j] + tile[r][j] : tile[r][j];
}

#undef LAZYTENSOR_UNROLL

/// Runs the micro-kernel variant that covers a rows x cols tile with the least padding.
template <class T>
void run_tile(std::int64_t kc, const T* a, const T* b, T* c, std::int64_t ldc, int rows, int cols, bool accumulate) {
    constexpr int step = Tiling<T>::mr_step, w = Tiling<T>::w;
    const int row_steps = (rows + step - 1) / step;
    if (cols > w) {
        switch (row_steps) {
            case 1: return micro_kernel<T, step, 2>(kc, a, b, c, ldc, rows, cols, accumulate);
            case 2: return micro_kernel<T, 2 * step, 2>(kc, a, b, c, ldc, rows, cols, accumulate);
            default: return micro_kernel<T, 3 * step, 2>(kc, a, b, c, ldc, rows, cols, accumulate);
        }
    }
    switch (row_steps) {
        case 1: return micro_kernel<T, step, 1>(kc, a, b, c, ldc, rows, cols, accumulate);
        case 2: return micro_kernel<T, 2 * step, 1>(kc, a, b, c, ldc, rows, cols, accumulate);
        default: return micro_kernel<T, 3 * step, 1>(kc, a, b, c, ldc, rows, cols, accumulate);
    }
}

/// How a rows x cols x k product (k > 0) is cut for the caches: k slices of kc, A panels of ma
/// rows, B blocks of block_panels micro-panels. Slices and blocks are balanced (no short last one).
template <class T>
struct Blocking {
    std::int64_t kc, ma, block_panels;

    Blocking(std::int64_t rows, std::int64_t cols, std::int64_t k) {
        using Tl = Tiling<T>;
        const std::int64_t k_slices = (k + Tl::kc - 1) / Tl::kc;
        kc = (k + k_slices - 1) / k_slices;
        ma = std::min(std::max<std::int64_t>(1, Tl::a_panel_bytes / (Tl::mr * kc * std::int64_t(sizeof(T)))) * Tl::mr,
                      (rows + Tl::mr - 1) / Tl::mr * Tl::mr);
        const std::int64_t n_panels = (cols + Tl::nr - 1) / Tl::nr;
        const std::int64_t max_panels = std::max<std::int64_t>(1, Tl::b_block_bytes / (kc * Tl::nr * std::int64_t(sizeof(T))));
        const std::int64_t blocks = (n_panels + max_panels - 1) / max_panels;
        block_panels = (n_panels + blocks - 1) / blocks;
    }
};

/// C (rows x cols, leading dimension ldc) = A (rows x k) x B (k x cols), cut as `bl` says, on the
/// calling thread.
template <class T>
void gemm_block(const Blocking<T>& bl, std::int64_t rows, std::int64_t cols, std::int64_t k, const Matrix<T>& a,
                const Matrix<T>& b, T* c, std::int64_t ldc) {
    constexpr int mr = Tiling<T>::mr, nr = Tiling<T>::nr;
    const std::int64_t kc = bl.kc, ma = bl.ma, block_panels = bl.block_panels;
    Scratch& scratch = thread_scratch();
    T* a_pack = scratch.a.get<T>(ma * kc);
    T* b_pack = scratch.b.get<T>(block_panels * nr * kc);

    for (std::int64_t i0 = 0; i0 < rows; i0 += ma) {
        const std::int64_t mb = std::min(ma, rows - i0);
        const std::int64_t m_panels = (mb + mr - 1) / mr;
        for (std::int64_t p0 = 0; p0 < k; p0 += kc) {
            const std::int64_t kb = std::min(kc, k - p0);
            const std::int64_t a_panel = mr * kb;  // one packed A micro-panel
            for (std::int64_t pm = 0; pm < m_panels; ++pm)
                pack_interleaved<mr>(a.at(i0 + pm * mr, p0), a.rs, a.cs, static_cast<int>(std::min<std::int64_t>(mr, mb - pm * mr)),
                                     kb, a_pack + pm * a_panel);
            for (std::int64_t j0 = 0; j0 < cols; j0 += block_panels * nr) {
                const std::int64_t nb = std::min(block_panels * nr, cols - j0);
                pack_b(b, p0, j0, nb, kb, b_pack);
                // The packed A panel outgrows L2: while one A micro-panel meets the block's B
                // micro-panels, fetch the next one into L2, a few lines per tile.
                constexpr std::int64_t line = 64 / sizeof(T);
                const std::int64_t tiles_per_panel = (nb + nr - 1) / nr;
                const std::int64_t lines_per_tile = (a_panel / line + tiles_per_panel - 1) / tiles_per_panel;
                for (std::int64_t pm = 0; pm < m_panels; ++pm) {
                    const int tile_rows = static_cast<int>(std::min<std::int64_t>(mr, mb - pm * mr));
                    const T* next_a = pm + 1 < m_panels ? a_pack + (pm + 1) * a_panel : nullptr;
                    for (std::int64_t j = 0, l0 = 0; j < nb; j += nr, l0 += lines_per_tile) {
                        if (next_a)
                            for (std::int64_t l = l0; l < std::min(a_panel / line, l0 + lines_per_tile); ++l)
                                __builtin_prefetch(next_a + l * line, 0, 2);
                        run_tile<T>(kb, a_pack + pm * a_panel, b_pack + j * kb, c + (i0 + pm * mr) * ldc + j0 + j, ldc,
                                    tile_rows, static_cast<int>(std::min<std::int64_t>(nr, nb - j)), p0 > 0);
                    }
                }
            }
        }
    }
}

/// How the work is cut into tasks for the pool: each batch's C into m_parts x n_parts blocks
/// (whole micro-panels each), or groups of whole batches.
struct Split {
    std::int64_t m_parts = 1, n_parts = 1;
    std::int64_t batches_per_task = 1;
};

/// Picks the split that finishes soonest when every round of `threads` tasks runs at once. A
/// task costs its FMAs plus the packing of its A rows and B columns (each task packs its own:
/// no barriers, no shared buffers), in units of one FMA vector; packing an element costs about
/// half of one. k > 0.
template <class T>
Split choose_split(std::int64_t batches, std::int64_t m, std::int64_t n, std::int64_t k, int threads) {
    using Tl = Tiling<T>;
    const auto ceil_div = [](std::int64_t x, std::int64_t y) { return (x + y - 1) / y; };
    const std::int64_t m_panels = ceil_div(m, Tl::mr), n_panels = ceil_div(n, Tl::nr);
    const double per_task_overhead = 256;  // taking an item, finding the scratch buffers
    const double wake_up = 8192;           // waking the pool's workers and waiting for them: ~2 us
    Split best;
    double best_cost = 1e300;
    const std::int64_t max_parts = batches >= 4 * threads ? 1 : 2 * threads;
    for (std::int64_t mp = 1; mp <= std::min(m_panels, max_parts); ++mp)
        for (std::int64_t np = 1; np <= std::min(n_panels, max_parts); ++np) {
            const double rows = double(ceil_div(m_panels, mp) * Tl::mr), cols = double(ceil_div(n_panels, np) * Tl::nr);
            const double task = rows * cols * double(k) / Tl::w + 0.5 * (rows + cols) * double(k) + per_task_overhead;
            const std::int64_t tasks = batches * mp * np;
            const double cost = double(ceil_div(tasks, threads)) * task + (tasks > 1 ? wake_up : 0);
            if (cost < best_cost) best_cost = cost, best = Split{mp, np, 1};
        }
    if (best.m_parts * best.n_parts == 1) {
        // Whole batches, grouped: all in one task when waking the workers would cost more than
        // the work, otherwise enough per task to be worth taking it (up to an even share).
        const double vectors = double(m) * double(n) * double(k) / Tl::w;
        best.batches_per_task = vectors * double(batches) < wake_up
                                    ? batches
                                    : std::clamp<std::int64_t>(static_cast<std::int64_t>(16 * per_task_overhead / vectors), 1,
                                                               ceil_div(batches, threads));
    }
    return best;
}

}  // namespace gemm_detail

/// C = A x B for every batch of g (see ir::Gemm); a and b are the operands' base pointers, c a
/// contiguous [batch..., m, n] output. Any strides; reads only the elements the layouts name.
template <class T>
void gemm(const ir::Gemm& g, const T* a, const T* b, T* c, ThreadPool& pool) {
    static_assert(std::is_same_v<T, float> || std::is_same_v<T, double>, "host::gemm is for float and double");
    using namespace gemm_detail;
    constexpr int mr = Tiling<T>::mr, nr = Tiling<T>::nr;
    const std::int64_t batches = g.batch_count();
    if (batches == 0 || g.m == 0 || g.n == 0) return;
    if (g.k == 0) {  // an empty sum; the operands may have no elements at all
        std::fill(c, c + batches * g.m * g.n, T(0));
        return;
    }
    std::vector<std::int64_t> a_off, b_off;
    g.batch_offsets(a_off, b_off);
    const Split split = choose_split<T>(batches, g.m, g.n, g.k, pool.size());
    const std::int64_t m_panels = (g.m + mr - 1) / mr, n_panels = (g.n + nr - 1) / nr;
    const std::int64_t blocks = split.m_parts * split.n_parts;
    const std::int64_t tasks = (batches + split.batches_per_task - 1) / split.batches_per_task * blocks;
    pool.parallel_for(tasks, [&](std::int64_t task, int) {
        const std::int64_t block = task % blocks, tm = block / split.n_parts, tn = block % split.n_parts;
        const std::int64_t i0 = m_panels * tm / split.m_parts * mr, i1 = std::min(g.m, m_panels * (tm + 1) / split.m_parts * mr);
        const std::int64_t j0 = n_panels * tn / split.n_parts * nr, j1 = std::min(g.n, n_panels * (tn + 1) / split.n_parts * nr);
        const Blocking<T> blocking(i1 - i0, j1 - j0, g.k);
        const std::int64_t first = task / blocks * split.batches_per_task;
        for (std::int64_t t = first; t < std::min(batches, first + split.batches_per_task); ++t) {
            const Matrix<T> at{a + a_off[t] + i0 * g.a.row_stride, g.a.row_stride, g.a.col_stride};
            const Matrix<T> bt{b + b_off[t] + j0 * g.b.col_stride, g.b.row_stride, g.b.col_stride};
            gemm_block<T>(blocking, i1 - i0, j1 - j0, g.k, at, bt, c + t * g.m * g.n + i0 * g.n + j0, g.n);
        }
    });
}

}  // namespace lazytensor::detail::host

LAZYTENSOR_XSIMD_WARNINGS_ON
