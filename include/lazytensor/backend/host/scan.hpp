// SPDX-License-Identifier: MIT
// Scans on the host (cumsum, cumprod): ir::Scan over float, double and int64 (which wraps).
//
// Along rows (one element after the next in memory) each SIMD batch is scanned in registers
// (log2(width) shifts and adds) and offset by the running total, which is carried from batch to
// batch by one add: the scan runs at memory speed. Across rows (inner > 1) each output row is
// the previous output row combined with the next input row, element-wise in SIMD. Threads take
// rows, or blocks of columns. When there are too few of those for the threads, the scanned axis
// is cut into chunks: rows (a long 1-D scan) are scanned chunk by chunk in order, each chunk
// offset by the one before once that is done (chained_row_scan); across rows, each chunk's
// total comes first, then the chunks are scanned from the combined totals before them. Outputs
// of LAZYTENSOR_HOST_STREAM_MIN bytes and more are written with non-temporal stores, as
// element-wise kernels write them (no read-for-ownership of the destination): along rows each
// batch as it is computed, across rows a row of a block of columns at a time.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <memory>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/dtype.hpp"
#include "../../ir/scan.hpp"
#include "../../simd/simd_arch.hpp"
#include "../../simd/simd_ops.hpp"
#include "thread_pool.hpp"

namespace lazytensor::detail::host {

/// Whether xsimd can move lanes of float, double and int64 batches on this architecture
/// (swizzle); elsewhere rows are scanned one element at a time.
inline constexpr bool kScanLaneMoves =
    std::is_base_of_v<xsimd::avx2, simd_arch> || (std::is_base_of_v<xsimd::sse2, simd_arch> && !std::is_base_of_v<xsimd::avx, simd_arch>)
#if XSIMD_WITH_AVX512F
    || std::is_base_of_v<xsimd::avx512f, simd_arch>
#endif
    ;

/// The scan's operation on values of T: + or *, integers wrapping.
template <class T, bool Product>
struct ScanOp {
    using B = xsimd::batch<T, simd_arch>;
    static constexpr T identity() { return T(Product ? 1 : 0); }
    static T apply(T a, T b) {
        if constexpr (std::is_integral_v<T>) {
            using U = std::make_unsigned_t<T>;
            return static_cast<T>(Product ? U(a) * U(b) : U(a) + U(b));
        } else {
            return Product ? a * b : a + b;
        }
    }
    static B apply(const B& a, const B& b) { return Product ? a * b : a + b; }
};

/// The batch with its lanes moved up by S (lane i gets lane i - S), the identity below.
template <class Op, std::size_t S, class B, std::size_t... I>
B lanes_up(const B& v, std::index_sequence<I...>) {
    using T = typename B::value_type;
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    using A = typename B::arch_type;
    const B moved = xsimd::swizzle(v, xsimd::batch_constant<xsimd::batch<U, A>, static_cast<U>(I >= S ? I - S : 0)...>{});
    return xsimd::select(xsimd::batch_bool_constant<B, (I >= S)...>{}, moved, B(Op::identity()));
}

/// Every lane of the batch set to its last lane.
template <class B, std::size_t... I>
B last_lane_everywhere(const B& v, std::index_sequence<I...>) {
    using T = typename B::value_type;
    using U = std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>;
    using A = typename B::arch_type;
    return xsimd::swizzle(v, xsimd::batch_constant<xsimd::batch<U, A>, static_cast<U>(I * 0 + B::size - 1)...>{});
}

#if XSIMD_WITH_AVX512F
/// AVX-512: the batch with its lanes moved up by S, the identity below, in one instruction
/// (valignd/valignq), where the generic swizzle and select take two on the same ports.
template <class Op, std::size_t S, class B>
B lanes_up_avx512(const B& v) {
    using T = typename B::value_type;  // float, double or int64 (the register: __m512, __m512d, __m512i)
    auto bits = [](const B& b) {
        if constexpr (std::is_same_v<T, float>) return _mm512_castps_si512(b);
        else if constexpr (std::is_same_v<T, double>) return _mm512_castpd_si512(b);
        else return static_cast<__m512i>(b);
    };
    const __m512i x = bits(v), fill = bits(B(Op::identity()));
    __m512i moved;
    // (The zero-masked forms: GCC 12's plain ones read an "undefined" register that
    // -Wmaybe-uninitialized reports.)
    if constexpr (sizeof(T) == 4) moved = _mm512_maskz_alignr_epi32(__mmask16(0xFFFF), x, fill, int(B::size - S));
    else moved = _mm512_maskz_alignr_epi64(__mmask8(0xFF), x, fill, int(B::size - S));
    if constexpr (std::is_same_v<T, float>) return B(_mm512_castsi512_ps(moved));
    else if constexpr (std::is_same_v<T, double>) return B(_mm512_castsi512_pd(moved));
    else return B(moved);
}
#endif

/// The inclusive scan of the lanes of one batch (Hillis-Steele: log2(width) steps).
template <class Op, std::size_t S = 1, class B>
B scan_lanes(const B& v) {
    if constexpr (S >= B::size) {
        return v;
    } else {
#if XSIMD_WITH_AVX512F
        if constexpr (std::is_base_of_v<xsimd::avx512f, typename B::arch_type>)
            return scan_lanes<Op, 2 * S>(Op::apply(v, lanes_up_avx512<Op, S>(v)));
#endif
        return scan_lanes<Op, 2 * S>(Op::apply(v, lanes_up<Op, S>(v, std::make_index_sequence<B::size>{})));
    }
}

/// Stores a batch at p (aligned to the batch's size) with a non-temporal store where the
/// architecture has one for its register, else with an ordinary aligned store.
template <class B, class T>
void stream_batch(T* p, const B& v) {
    // By element type and register width (x86's registers as template arguments draw
    // -Wignored-attributes): float, double, or integers.
    constexpr std::size_t bytes = sizeof(typename B::register_type);
    constexpr bool f32 = std::is_same_v<T, float>, f64 = std::is_same_v<T, double>;
#if defined(__AVX512F__)
    if constexpr (bytes == 64 && f32) return _mm512_stream_ps(reinterpret_cast<float*>(p), v);
    if constexpr (bytes == 64 && f64) return _mm512_stream_pd(reinterpret_cast<double*>(p), v);
    if constexpr (bytes == 64 && std::is_integral_v<T>) return _mm512_stream_si512(reinterpret_cast<__m512i*>(p), v);
#endif
#if defined(__AVX__)
    if constexpr (bytes == 32 && f32) return _mm256_stream_ps(reinterpret_cast<float*>(p), v);
    if constexpr (bytes == 32 && f64) return _mm256_stream_pd(reinterpret_cast<double*>(p), v);
    if constexpr (bytes == 32 && std::is_integral_v<T>) return _mm256_stream_si256(reinterpret_cast<__m256i*>(p), v);
#endif
#if defined(__SSE2__)
    if constexpr (bytes == 16 && f32) return _mm_stream_ps(reinterpret_cast<float*>(p), v);
    if constexpr (bytes == 16 && f64) return _mm_stream_pd(reinterpret_cast<double*>(p), v);
    if constexpr (bytes == 16 && std::is_integral_v<T>) return _mm_stream_si128(reinterpret_cast<__m128i*>(p), v);
#endif
    v.store_aligned(p);
}

/// Elements of a run staged in cache before a non-temporal write.
inline constexpr std::int64_t kScanStage = 1024;

/// Scans in[0], in[stride], ... (n elements) into out[0 .. n), starting from `carry`, which
/// becomes the fold of everything; with out null, only folds. `stream`: out is written with
/// non-temporal stores (a stream_fence must follow before others read it).
template <class T, class Op>
void scan_row(const T* in, std::int64_t stride, std::int64_t n, T* out, T& carry, bool stream = false) {
    using B = typename Op::B;
    constexpr std::int64_t W = static_cast<std::int64_t>(B::size);
    std::int64_t i = 0;
    if constexpr (kScanLaneMoves) {
        if (stride == 1 && n >= W) {
            if (!out) {  // a fold: lanes apart, joined at the end
                B acc(Op::identity());
                for (; i + W <= n; i += W) acc = Op::apply(acc, B::load_unaligned(in + i));
                alignas(64) T lanes[W];
                acc.store_aligned(lanes);
                for (std::int64_t l = 0; l < W; ++l) carry = Op::apply(carry, lanes[l]);
            } else {
                // Streamed: one element at a time up to an aligned batch, then each batch's
                // non-temporal store as it is computed (staging runs to stream them later left
                // the memory idle while computing: 1.6 times a copy's time, against 1.0).
                if (stream)
                    for (; i < n && reinterpret_cast<std::uintptr_t>(out + i) % sizeof(B) != 0; ++i)
                        out[i] = carry = Op::apply(carry, in[i]);
                B running(carry);
                for (; i + W <= n; i += W) {
                    const B prefix = scan_lanes<Op>(B::load_unaligned(in + i));
                    const B value = Op::apply(running, prefix);
                    if (stream) stream_batch(out + i, value);
                    else value.store_unaligned(out + i);
                    // The carry chain is one operation per batch; the broadcast is off it.
                    running = Op::apply(running, last_lane_everywhere(prefix, std::make_index_sequence<B::size>{}));
                }
                carry = running.get(W - 1);
            }
            stream = false;  // the tail: ordinary stores
        }
    }
    if (out && stream) {  // no batches (strided, or no lane moves): staged in cache, then streamed
        alignas(64) T staged[kScanStage];
        for (std::int64_t i0 = 0; i0 < n; i0 += kScanStage) {
            const std::int64_t len = std::min(kScanStage, n - i0);
            scan_row<T, Op>(in + i0 * stride, stride, len, staged, carry);
            stream_copy(reinterpret_cast<char*>(out + i0), reinterpret_cast<const char*>(staged),
                        static_cast<std::size_t>(len) * sizeof(T));
        }
        return;
    }
    for (; i < n; ++i) {
        carry = Op::apply(carry, in[i * stride]);
        if (out) out[i] = carry;
    }
}

/// For each of `count` columns j (in[j * inner_stride], the next row `stride` further on; out
/// rows `inner` apart): scans n rows starting from acc[j], which becomes the column's fold;
/// with out null, only folds. `stream`: out is written with non-temporal stores (count at most
/// kScanStage; a stream_fence must follow).
template <class T, class Op>
void scan_columns(const T* in, std::int64_t stride, std::int64_t inner_stride, std::int64_t n, std::int64_t count,
                  T* out, std::int64_t inner, T* acc, bool stream = false) {
    using B = typename Op::B;
    constexpr std::int64_t W = static_cast<std::int64_t>(B::size);
    alignas(64) T staged[kScanStage];
    stream = stream && out && count <= kScanStage;
    for (std::int64_t i = 0; i < n; ++i) {
        const T* row = in + i * stride;
        T* const out_row = out ? out + i * inner : nullptr;
        T* dst = stream ? staged : out_row;
        std::int64_t j = 0;
        if (inner_stride == 1) {
            for (; j + W <= count; j += W) {
                const B v = Op::apply(B::load_unaligned(acc + j), B::load_unaligned(row + j));
                v.store_unaligned(acc + j);
                if (dst) v.store_unaligned(dst + j);
            }
        }
        for (; j < count; ++j) {
            acc[j] = Op::apply(acc[j], row[j * inner_stride]);
            if (dst) dst[j] = acc[j];
        }
        if (stream)
            stream_copy(reinterpret_cast<char*>(out_row), reinterpret_cast<const char*>(staged),
                        static_cast<std::size_t>(count) * sizeof(T));
    }
}

/// Rows too few for the threads: each row in chunks of L2 size, taken in order. A chunk is
/// scanned from the identity while it is read; then, once the chunk before has published the
/// fold of everything up to its end, that fold is applied to the chunk (still in cache) and the
/// fold up to this chunk's end published: one read of the input, as one thread's scan.
template <class T, class Op>
void chained_row_scan(const ir::Scan& s, const T* in, T* out, ThreadPool& pool) {
    constexpr std::int64_t kChunk = 32768;
    const std::int64_t chunks = (s.length + kChunk - 1) / kChunk;
    std::vector<T> ends(static_cast<std::size_t>(s.outer * chunks));
    std::unique_ptr<std::atomic<bool>[]> published(new std::atomic<bool>[static_cast<std::size_t>(s.outer * chunks)]);
    for (std::int64_t i = 0; i < s.outer * chunks; ++i) published[i].store(false, std::memory_order_relaxed);
    using B = typename Op::B;
    constexpr std::int64_t W = static_cast<std::int64_t>(B::size);
    // Items are taken in increasing order, so the chunk waited for is always being worked on.
    pool.parallel_for(s.outer * chunks, [&](std::int64_t task, int) {
        const std::int64_t o = task / chunks, c = task % chunks, i0 = c * kChunk, n = std::min(kChunk, s.length - i0);
        T* dst = out + o * s.length + i0;
        T total = Op::identity();
        scan_row<T, Op>(in + s.offset + o * s.outer_stride + i0 * s.stride, s.stride, n, dst, total);
        T before = Op::identity();
        if (c > 0) {
            while (!published[task - 1].load(std::memory_order_acquire)) std::this_thread::yield();
            before = ends[static_cast<std::size_t>(task - 1)];
            const B b(before);
            std::int64_t i = 0;
            for (; i + W <= n; i += W) Op::apply(b, B::load_unaligned(dst + i)).store_unaligned(dst + i);
            for (; i < n; ++i) dst[i] = Op::apply(before, dst[i]);
        }
        ends[static_cast<std::size_t>(task)] = Op::apply(before, total);
        published[task].store(true, std::memory_order_release);
    });
}

/// Runs `s` from in into out (contiguous [outer, length, inner]) on the pool's threads.
template <class T, class Op>
void scan_with(const ir::Scan& s, const T* in, T* out, ThreadPool& pool) {
    constexpr std::int64_t kColumns = 1024;  // columns per task across rows (an L1-sized carry row)
    const std::int64_t column_blocks = s.inner == 1 ? 1 : (s.inner + kColumns - 1) / kColumns;
    const std::int64_t lines = s.outer * column_blocks;  // independent scans (rows or column blocks)
    const std::int64_t threads = pool.size();
    const bool few_lines = threads > 1 && lines < 4 * threads;
    if (few_lines && s.inner == 1 && s.length >= 2 * 32768) return chained_row_scan<T, Op>(s, in, out, pool);
    // Across rows, chunks along the scanned axis when the column blocks are too few for the
    // threads: each chunk's total first, then each chunk scanned from the totals before it.
    std::int64_t chunks = 1;
    if (few_lines && s.inner > 1)
        chunks = std::clamp<std::int64_t>((4 * threads + lines - 1) / lines, 1,
                                          std::max<std::int64_t>(1, s.length * std::min(s.inner, kColumns) / 4096));
    const std::int64_t chunk_length = (s.length + chunks - 1) / chunks;
    chunks = (s.length + chunk_length - 1) / std::max<std::int64_t>(1, chunk_length);
    const std::int64_t width = s.inner == 1 ? 1 : kColumns;
    static_assert(kColumns <= kScanStage, "a block of columns is staged whole");
    const bool stream = s.numel() >= LAZYTENSOR_HOST_STREAM_MIN / static_cast<std::int64_t>(sizeof(T));

    // carries[(line * chunks + c) * width + j]: what chunk c of a line starts from.
    std::vector<T> carries(static_cast<std::size_t>(lines * chunks * width), Op::identity());
    auto run = [&](std::int64_t task, bool fold_only) {
        const std::int64_t line = task / chunks, c = task % chunks;
        if (fold_only && c == chunks - 1) return;  // the last chunk's total is never needed
        const std::int64_t o = line / column_blocks, j0 = (line % column_blocks) * kColumns;
        const std::int64_t i0 = c * chunk_length, n = std::min(chunk_length, s.length - i0);
        const T* src = in + s.offset + o * s.outer_stride + i0 * s.stride + j0 * s.inner_stride;
        T* dst = fold_only ? nullptr : out + (o * s.length + i0) * s.inner + j0;
        T* carry = carries.data() + (line * chunks + c) * width;
        if (fold_only) carry += width;  // chunk c's total goes where chunk c + 1 starts from
        if (s.inner == 1)
            scan_row<T, Op>(src, s.stride, n, dst, *carry, stream);
        else
            scan_columns<T, Op>(src, s.stride, s.inner_stride, n, std::min(kColumns, s.inner - j0), dst, s.inner, carry, stream);
        if (dst && stream) stream_fence();  // this thread's streamed stores before the task counts as done
    };
    if (chunks > 1) {
        pool.parallel_for(lines * chunks, [&](std::int64_t task, int) { run(task, true); });
        for (std::int64_t line = 0; line < lines; ++line)  // each chunk's total -> what it starts from
            for (std::int64_t c = 2; c < chunks; ++c) {
                const T* before = carries.data() + (line * chunks + c - 1) * width;
                T* mine = carries.data() + (line * chunks + c) * width;
                for (std::int64_t j = 0; j < width; ++j) mine[j] = Op::apply(before[j], mine[j]);
            }
    }
    pool.parallel_for(lines * chunks, [&](std::int64_t task, int) { run(task, false); });
}

/// Runs `s`: out (contiguous [outer, length, inner]) from in.
inline void scan(const ir::Scan& s, const void* in, void* out, ThreadPool& pool) {
    if (s.numel() == 0) return;
    auto go = [&](auto tag, auto product) {
        using T = decltype(tag);
        using Op = ScanOp<T, decltype(product)::value>;
        scan_with<T, Op>(s, static_cast<const T*>(in), static_cast<T*>(out), pool);
    };
    const bool product = s.op == ReduceOp::Prod;
    switch (s.dtype) {
        case DType::Float32: return product ? go(float{}, std::true_type{}) : go(float{}, std::false_type{});
        case DType::Float64: return product ? go(double{}, std::true_type{}) : go(double{}, std::false_type{});
        case DType::Int64:
            return product ? go(std::int64_t{}, std::true_type{}) : go(std::int64_t{}, std::false_type{});
        default: fail<Error>("lazytensor internal error: a scan of ", s.dtype, " on the host");
    }
}

}  // namespace lazytensor::detail::host
