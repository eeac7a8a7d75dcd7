// SPDX-License-Identifier: MIT
// The host FFT engine (issue 48): complex-to-complex, real-to-complex and complex-to-real
// transforms of any length, float and double, batched and strided, on the host thread pool.
// Unnormalized like FFTW and pocketfft: the caller passes the norm's factor as `scale`, which the
// last pass applies (no extra pass over the data).
//
// How a transform of length n runs (Plan chooses once, cached by length, precision, direction):
//   direct     n's prime factors are all <= 13 and n <= max_direct: a Stockham autosort FFT
//              (radix 8, 4, 2, 3, 5, 7, 11, 13; no bit reversal) on a *lane group*: W transforms
//              side by side, element e of all of them in one SIMD vector (W = the complex numbers
//              a vector holds: 8 floats' pairs with AVX-512). Every butterfly is then plain vector
//              arithmetic with broadcast twiddles, whatever the pass. Transforms whose elements
//              lie side by side in memory (a batch stride of 1: an axis that is not the last)
//              are read and written in place, or, when their rows are far apart (pages: the
//              prefetchers do not follow and the TLB does not hold them), copied a row at a
//              time into 512 KiB strips of several lane groups; other transforms (rows) are
//              gathered into a scratch lane group and scattered back (W x W blocks transposed
//              in registers on AVX-512).
//   four-step  n = n1 * n2 with n1 direct: n2 column transforms of length n1 (strips of
//              adjacent columns), each output multiplied by w_n^(j2 k1) in their last pass, then
//              n1 row transforms of length n2 written with a stride of n1 (the transposition,
//              through strips of rows). Used for long single transforms (they parallelize and
//              each strip fits in L2) and for lengths with a large prime factor (n2 is then a
//              Bluestein plan).
//   Bluestein  n prime > 13 (or no smooth factor), and batches of W or more transforms of a
//              length <= max_direct with a prime factor > 13: a chirp-z convolution through a
//              2/3/5-smooth length m >= 2n - 1 (W transforms at a time), the chirp's spectrum
//              computed in double and rounded once.
// Real transforms of even n are complex transforms of n/2 (the even samples as real parts, the
// odd ones as imaginary parts) and one pass that separates them; odd n go through a full complex
// transform.
//
// Twiddles are computed in long double and rounded once to the plan's precision, except the
// four-step's w_n^(j2 k1) = w_n^(l k1) w_n^(first k1) for lane l of a lane group starting at
// column `first`: the first factor rounded once, the second the product of two double roots
// rounded to the plan's precision, their product taken in that precision (a few ulps).
// Results do not depend on the thread count: threads take whole lane groups, strips or
// transforms, or chunks of an element-wise pass, each computed the same way on any thread.
#pragma once

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <type_traits>
#include <vector>

#include "../../core/config.hpp"
#include "../../core/error.hpp"
#include "../../core/lru_cache.hpp"
#include "../../simd/simd_arch.hpp"
LAZYTENSOR_XSIMD_WARNINGS_OFF
#include <xsimd/xsimd.hpp>
#if XSIMD_WITH_AVX512F
#include <immintrin.h>
#endif
LAZYTENSOR_XSIMD_WARNINGS_ON

#include "thread_pool.hpp"

namespace lazytensor::detail::host::fft {

using Index = std::int64_t;
template <class T>
using Complex = std::complex<T>;

/// forward: X_k = sum_j x_j exp(-2 pi i jk/n); inverse: exp(+2 pi i jk/n), unnormalized.
enum class Direction { forward, inverse };

inline int direction_sign(Direction d) { return d == Direction::forward ? -1 : 1; }

/// Longest length run directly as one Stockham lane group: 2 scratch groups of n x W complex
/// numbers (512 KiB at 4096) stay in L2.
inline constexpr Index max_direct = 4096;
/// Transforms at least this long are run four-step when there are fewer than W of them (a lane
/// group of one transform would waste W - 1 lanes).
inline constexpr Index min_four_step = 256;

namespace fft_detail {

// ---------------------------------------------------------------------------------- scratch

/// Per-thread scratch memory, reused across calls (a fresh 8 MiB buffer would cost its page
/// faults on every call). Blocks are handed out best-fit and returned when a Scratch dies, so
/// nested users (a four-step inside Bluestein) each get their own. A thread keeps at most 8
/// blocks and 256 MiB.
class ScratchArena {
public:
    struct Block {
        void* data = nullptr;
        std::size_t bytes = 0;
    };
    static ScratchArena& local() {
        thread_local ScratchArena arena;
        return arena;
    }
    Block acquire(std::size_t bytes) {
        std::size_t best = free_.size();
        for (std::size_t i = 0; i < free_.size(); ++i)
            if (free_[i].bytes >= bytes && (best == free_.size() || free_[i].bytes < free_[best].bytes)) best = i;
        if (best != free_.size()) {
            Block b = free_[best];
            free_.erase(free_.begin() + static_cast<std::ptrdiff_t>(best));
            retained_ -= b.bytes;
            return b;
        }
        bytes = (bytes + 4095) / 4096 * 4096;
        return Block{::operator new(bytes, std::align_val_t(64)), bytes};
    }
    void release(Block b) {
        free_.push_back(b);
        retained_ += b.bytes;
        auto by_size = [](const Block& x, const Block& y) { return x.bytes < y.bytes; };
        while (free_.size() > 8 || retained_ > (std::size_t(256) << 20)) {
            // Beyond 8 blocks, the smallest goes; beyond 256 MiB, the largest.
            auto victim = free_.size() > 8 ? std::min_element(free_.begin(), free_.end(), by_size)
                                           : std::max_element(free_.begin(), free_.end(), by_size);
            retained_ -= victim->bytes;
            ::operator delete(victim->data, std::align_val_t(64));
            free_.erase(victim);
        }
    }
    ~ScratchArena() {
        for (Block& b : free_) ::operator delete(b.data, std::align_val_t(64));
    }

private:
    std::vector<Block> free_;
    std::size_t retained_ = 0;  // bytes in free_
};

template <class U>
class Scratch {
public:
    explicit Scratch(Index count) : block_(ScratchArena::local().acquire(sizeof(U) * static_cast<std::size_t>(count))) {}
    Scratch(const Scratch&) = delete;
    Scratch& operator=(const Scratch&) = delete;
    ~Scratch() { ScratchArena::local().release(block_); }
    U* data() const { return static_cast<U*>(block_.data); }

private:
    ScratchArena::Block block_;
};

template <class F>
void parallel(ThreadPool* pool, Index n, F&& f) {
    if (pool && n > 1)
        pool->parallel_for(n, [&](std::int64_t i, int) { f(static_cast<Index>(i)); });
    else
        for (Index i = 0; i < n; ++i) f(i);
}

/// f(row, begin, end) over [0, length) of each of count rows, in chunks of at least 16384
/// elements when there is a pool, so that one long row is shared by the threads too.
template <class F>
void parallel_rows(ThreadPool* pool, Index count, Index length, F&& f) {
    const Index chunks = pool ? std::max<Index>(1, std::min<Index>(16, length / 16384)) : 1;
    parallel(pool, count * chunks, [&](Index i) {
        const Index b = i / chunks, c = i % chunks;
        f(b, length * c / chunks, length * (c + 1) / chunks);
    });
}

// ---------------------------------------------------------------------------------- numbers

/// exp(sign * 2 pi i k / n) in long double (k reduced mod n first, so large k lose nothing).
inline std::complex<long double> unit_root(Index k, Index n, int sign) {
    k %= n;
    if (k < 0) k += n;
    const long double angle = 6.283185307179586476925286766559005768L * static_cast<long double>(k) /
                              static_cast<long double>(n);
    return {std::cos(angle), sign * std::sin(angle)};
}

/// exp(sign * 2 pi i k / n) for any k, in long double, from two tables of about sqrt(n) roots
/// each (w^k = w^(hi * block) w^lo): a plan's long tables cost 2 sqrt(n) cos/sin calls, not n
/// (an x87 cos and sin take ~0.2 us: 2^20 of them, 0.2 s). The product adds ~2^-64.
class UnitRoots {
public:
    UnitRoots(Index n, int sign) : n_(n), block_(static_cast<Index>(std::ceil(std::sqrt(double(n))))) {
        for (Index k = 0; k < block_; ++k) {
            low_.push_back(unit_root(k, n, sign));
            high_.push_back(unit_root(k * block_, n, sign));
        }
    }
    std::complex<long double> operator()(Index k) const {
        k %= n_;
        if (k < 0) k += n_;
        const std::complex<long double> a = high_[static_cast<std::size_t>(k / block_)];
        const std::complex<long double> b = low_[static_cast<std::size_t>(k % block_)];
        return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
    }

private:
    Index n_, block_;
    std::vector<std::complex<long double>> low_, high_;
};

template <class T, class U>
Complex<T> round_to(const std::complex<U>& z) {
    return {static_cast<T>(z.real()), static_cast<T>(z.imag())};
}

/// a * b without std::complex's NaN/infinity recovery (a library call per product).
template <class T>
inline Complex<T> mul(Complex<T> a, Complex<T> b) {
    return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

inline bool is_smooth(Index n) {  // all prime factors <= 13: a direct Stockham plan exists
    for (Index p : {2, 3, 5, 7, 11, 13})
        while (n % p == 0) n /= p;
    return n == 1;
}

/// Radices of a smooth n, largest passes first: 8s, then one 4 or 2, then 3, 5, 7, 11, 13.
inline std::vector<int> radices_of(Index n) {
    std::vector<int> out;
    while (n % 8 == 0) out.push_back(8), n /= 8;
    if (n % 4 == 0) out.push_back(4), n /= 4;
    if (n % 2 == 0) out.push_back(2), n /= 2;
    for (int p : {3, 5, 7, 11, 13})
        while (n % p == 0) out.push_back(p), n /= p;
    return out;
}

/// The smallest 2/3/5-smooth number >= n (Bluestein's convolution length).
inline Index next_smooth(Index n) {
    Index best = 1;
    while (best < n) best *= 2;
    for (Index p5 = 1; p5 < 2 * n; p5 *= 5)
        for (Index p35 = p5; p35 < 2 * n; p35 *= 3) {
            Index v = p35;
            while (v < n) v *= 2;
            best = std::min(best, v);
        }
    return best;
}

// ---------------------------------------------------------------------------------- vectors

template <class T>
using Vec = xsimd::batch<T, simd_arch>;
/// Complex numbers per SIMD vector: a lane group holds this many transforms.
template <class T>
inline constexpr Index lanes = static_cast<Index>(Vec<T>::size / 2);

template <class T>
inline Vec<T> load(const Complex<T>* p) {
    return Vec<T>::load_unaligned(reinterpret_cast<const T*>(p));
}
template <class T>
inline void store(Complex<T>* p, const Vec<T>& v) {
    v.store_unaligned(reinterpret_cast<T*>(p));
}

struct SwapPairsIndex {
    static constexpr unsigned get(unsigned i, unsigned) { return i ^ 1u; }
};

/// (re, im) -> (im, re) in every complex lane.
template <class T>
inline Vec<T> swap_pairs(const Vec<T>& v) {
#if XSIMD_WITH_AVX512F
    if constexpr (simd_is_avx512) {
        if constexpr (std::is_same_v<T, float>)
            return _mm512_permute_ps(v, 0xB1);
        else
            return _mm512_permute_pd(v, 0x55);
    }
#endif
    using U = std::conditional_t<std::is_same_v<T, float>, std::uint32_t, std::uint64_t>;
    return xsimd::swizzle(v, xsimd::make_batch_constant<xsimd::batch<U, simd_arch>, SwapPairsIndex>());
}

/// (-1, +1, -1, +1, ...): turns a broadcast imaginary part d into the (-d, d) a product needs.
template <class T>
inline Vec<T> odd_positive() {
    alignas(64) T v[Vec<T>::size];
    for (std::size_t i = 0; i < Vec<T>::size; ++i) v[i] = i % 2 ? T(1) : T(-1);
    return Vec<T>::load_unaligned(v);
}

/// x * w for interleaved x, where c = (w.re, w.re, ...) and d = (-w.im, w.im, ...).
template <class T>
inline Vec<T> cmul(const Vec<T>& x, const Vec<T>& c, const Vec<T>& d) {
    return multiply_add(x, c, swap_pairs(x) * d);
}

/// Whether transpose_block exists for T: W x W complex numbers in W registers (AVX-512: 8 x 8
/// complex<float>, 4 x 4 complex<double>).
template <class T>
inline constexpr bool has_register_transpose = simd_is_avx512;

/// dst[j * dst_step + i] = src[i * src_step + j] for i, j < W: W vectors in, W vectors out.
template <class T>
inline void transpose_block(const Complex<T>* src, Index src_step, Complex<T>* dst, Index dst_step) {
#if XSIMD_WITH_AVX512F
    if constexpr (simd_is_avx512 && std::is_same_v<T, float>) {
        // 8 x 8 of 64-bit elements (a complex<float> each): pairs, then 128-bit lanes, twice.
        __m512d r[8], t[8], u[8];
        for (int i = 0; i < 8; ++i) r[i] = _mm512_loadu_pd(reinterpret_cast<const double*>(src + i * src_step));
        for (int i = 0; i < 8; i += 2) {
            t[i] = _mm512_unpacklo_pd(r[i], r[i + 1]);      // r_i[0] r_i+1[0] r_i[2] r_i+1[2] ...
            t[i + 1] = _mm512_unpackhi_pd(r[i], r[i + 1]);  // r_i[1] r_i+1[1] r_i[3] r_i+1[3] ...
        }
        for (int h = 0; h < 8; h += 4)
            for (int odd = 0; odd < 2; ++odd) {
                u[h + odd] = _mm512_shuffle_f64x2(t[h + odd], t[h + 2 + odd], 0x88);      // columns 0+odd, 4+odd
                u[h + 2 + odd] = _mm512_shuffle_f64x2(t[h + odd], t[h + 2 + odd], 0xDD);  // columns 2+odd, 6+odd
            }
        for (int c = 0; c < 4; ++c) {
            _mm512_storeu_pd(reinterpret_cast<double*>(dst + c * dst_step), _mm512_shuffle_f64x2(u[c], u[c + 4], 0x88));
            _mm512_storeu_pd(reinterpret_cast<double*>(dst + (c + 4) * dst_step), _mm512_shuffle_f64x2(u[c], u[c + 4], 0xDD));
        }
        return;
    }
    if constexpr (simd_is_avx512 && std::is_same_v<T, double>) {
        // 4 x 4 of 128-bit elements (a complex<double> each).
        __m512d r[4];
        for (int i = 0; i < 4; ++i) r[i] = _mm512_loadu_pd(reinterpret_cast<const double*>(src + i * src_step));
        const __m512d t0 = _mm512_shuffle_f64x2(r[0], r[1], 0x44), t1 = _mm512_shuffle_f64x2(r[0], r[1], 0xEE);
        const __m512d t2 = _mm512_shuffle_f64x2(r[2], r[3], 0x44), t3 = _mm512_shuffle_f64x2(r[2], r[3], 0xEE);
        _mm512_storeu_pd(reinterpret_cast<double*>(dst), _mm512_shuffle_f64x2(t0, t2, 0x88));
        _mm512_storeu_pd(reinterpret_cast<double*>(dst + dst_step), _mm512_shuffle_f64x2(t0, t2, 0xDD));
        _mm512_storeu_pd(reinterpret_cast<double*>(dst + 2 * dst_step), _mm512_shuffle_f64x2(t1, t3, 0x88));
        _mm512_storeu_pd(reinterpret_cast<double*>(dst + 3 * dst_step), _mm512_shuffle_f64x2(t1, t3, 0xDD));
        return;
    }
#endif
    constexpr Index W = lanes<T>;
    for (Index i = 0; i < W; ++i)
        for (Index j = 0; j < W; ++j) dst[j * dst_step + i] = src[i * src_step + j];
}

// ---------------------------------------------------------------------------------- butterflies

/// cos and sin of 2 pi jk/R for an odd radix R, j, k in [1, (R-1)/2], rounded once from long double.
template <class T>
struct OddRadixTable {
    T cos[14][6][6];  // [R][j - 1][k - 1]
    T sin[14][6][6];
    OddRadixTable() {
        for (int r : {3, 5, 7, 11, 13})
            for (int j = 1; j <= (r - 1) / 2; ++j)
                for (int k = 1; k <= (r - 1) / 2; ++k) {
                    const auto w = unit_root(j * k, r, 1);
                    cos[r][j - 1][k - 1] = static_cast<T>(w.real());
                    sin[r][j - 1][k - 1] = static_cast<T>(w.imag());
                }
    }
    static const OddRadixTable& get() {
        static const OddRadixTable table;
        return table;
    }
};

/// The length-R DFT of a[0..R) in place. rot multiplies by (sign * i): swap_pairs(x) * rot_sign.
template <class T, int R>
inline void butterfly(Vec<T>* a, const Vec<T>& rot_sign, const OddRadixTable<T>& odd) {
    using V = Vec<T>;
    auto rot = [&](const V& x) { return swap_pairs(x) * rot_sign; };
    if constexpr (R == 2) {
        const V t = a[0] - a[1];
        a[0] = a[0] + a[1];
        a[1] = t;
    } else if constexpr (R == 4) {
        const V t0 = a[0] + a[2], t1 = a[0] - a[2], t2 = a[1] + a[3], t3 = rot(a[1] - a[3]);
        a[0] = t0 + t2;
        a[2] = t0 - t2;
        a[1] = t1 + t3;
        a[3] = t1 - t3;
    } else if constexpr (R == 8) {
        // Two radix-4 DFTs (even and odd samples) joined by w8^j = ((1 + sign i)/sqrt 2)^j.
        V e[4] = {a[0], a[2], a[4], a[6]}, o[4] = {a[1], a[3], a[5], a[7]};
        butterfly<T, 4>(e, rot_sign, odd);
        butterfly<T, 4>(o, rot_sign, odd);
        const V half_sqrt2(static_cast<T>(0.707106781186547524400844362104849039L));
        const V o1 = (o[1] + rot(o[1])) * half_sqrt2;  // w8 * o1
        const V o2 = rot(o[2]);                         // w8^2 = sign i
        const V o3 = (rot(o[3]) - o[3]) * half_sqrt2;   // w8^3 = (-1 + sign i)/sqrt 2
        a[0] = e[0] + o[0];
        a[4] = e[0] - o[0];
        a[1] = e[1] + o1;
        a[5] = e[1] - o1;
        a[2] = e[2] + o2;
        a[6] = e[2] - o2;
        a[3] = e[3] + o3;
        a[7] = e[3] - o3;
    } else {
        // Odd R: b_j = a0 + sum_k cos(2 pi jk/R) (a_k + a_{R-k}) + sign i sum_k sin(2 pi jk/R) (a_k - a_{R-k}).
        constexpr int H = (R - 1) / 2;
        V sum[H], dif[H];
        V b0 = a[0];
        for (int k = 1; k <= H; ++k) {
            sum[k - 1] = a[k] + a[R - k];
            dif[k - 1] = a[k] - a[R - k];
            b0 = b0 + sum[k - 1];
        }
        V out[R];
        out[0] = b0;
        for (int j = 1; j <= H; ++j) {
            V re = a[0], im = dif[0] * V(odd.sin[R][j - 1][0]);
            for (int k = 1; k <= H; ++k) re = multiply_add(sum[k - 1], V(odd.cos[R][j - 1][k - 1]), re);
            for (int k = 2; k <= H; ++k) im = multiply_add(dif[k - 1], V(odd.sin[R][j - 1][k - 1]), im);
            const V r = rot(im);
            out[j] = re + r;
            out[R - j] = re - r;
        }
        for (int k = 0; k < R; ++k) a[k] = out[k];
    }
}

// ---------------------------------------------------------------------------------- passes

/// One Stockham pass (decimation in frequency): the sub-transforms of length radix * m, spaced s
/// apart, become radix sub-transforms of length m spaced s * radix apart, in natural order at
/// the end. Element e of the lane group lives at base + e * stride.
struct Pass {
    int radix;
    Index m;         // sub-transform length after this pass
    Index s;         // stride (in elements) between the sub-transforms' points
    Index twiddles;  // offset of this pass's twiddles w^(p j), [p][j - 1]
};

/// What a pass does to its outputs: twiddles (every pass but the last: the last has m = 1, so
/// all its twiddles are 1), or, in the last, nothing, a real scale, or the four-step's per-lane
/// twiddles.
enum class Finish { twiddle, plain, scale, lane_twiddle };

/// The four-step's twiddle w_n^(j2 k1) for output element k1 of lane j2 = first + l: the product
/// of w_n^(l k1) (the plan's lane table, c/d form, one vector per k1) and w_n^(first k1) (per
/// lane group, scalar).
template <class T>
struct LaneTwiddle {
    const T* lane_c;          // [k1][2W]
    const T* lane_d;          // [k1][2W]
    const Complex<T>* group;  // [k1]
};

template <class T, int R, Finish F>
void stockham_pass(const Pass& ps, const Complex<T>* tw, const Complex<T>* x, Index xs, Complex<T>* y, Index ys,
                   int sign, T scale, const LaneTwiddle<T>* lane_tw) {
    using V = Vec<T>;
    const OddRadixTable<T>& odd = OddRadixTable<T>::get();
    const V odd_pos = odd_positive<T>();
    const V rot_sign = sign > 0 ? odd_pos : V(T(0)) - odd_pos;
    const V scale_v(scale);
    constexpr Index W = lanes<T>;
    const Index m = ps.m, s = ps.s;
    for (Index p = 0; p < m; ++p) {
        V c[R], d[R];
        if constexpr (F == Finish::twiddle)
            for (int j = 1; j < R; ++j) {
                const Complex<T> w = tw[p * (R - 1) + j - 1];
                c[j] = V(w.real());
                d[j] = V(w.imag()) * odd_pos;
            }
        const Complex<T>* xp = x + s * p * xs;
        Complex<T>* yp = y + s * R * p * ys;
        for (Index q = 0; q < s; ++q) {
            V a[R];
            for (int k = 0; k < R; ++k) a[k] = load(xp + (q + k * m * s) * xs);
            butterfly<T, R>(a, rot_sign, odd);
            for (int j = 0; j < R; ++j) {
                V b = a[j];
                const Index e = q + s * j;  // the output element (p = 0 in the last pass)
                if constexpr (F == Finish::twiddle) {
                    if (j > 0) b = cmul(b, c[j], d[j]);
                } else if constexpr (F == Finish::scale) {
                    b = b * scale_v;
                } else if constexpr (F == Finish::lane_twiddle) {
                    b = cmul(b, V::load_unaligned(lane_tw->lane_c + e * 2 * W), V::load_unaligned(lane_tw->lane_d + e * 2 * W));
                    const Complex<T> g = lane_tw->group[e];
                    b = cmul(b, V(g.real()), V(g.imag()) * odd_pos);
                }
                store(yp + e * ys, b);
            }
        }
    }
}

template <class T, Finish F>
void run_pass(const Pass& ps, const Complex<T>* tw, const Complex<T>* x, Index xs, Complex<T>* y, Index ys, int sign,
              T scale, const LaneTwiddle<T>* lane_tw) {
    switch (ps.radix) {
        case 2: return stockham_pass<T, 2, F>(ps, tw, x, xs, y, ys, sign, scale, lane_tw);
        case 3: return stockham_pass<T, 3, F>(ps, tw, x, xs, y, ys, sign, scale, lane_tw);
        case 4: return stockham_pass<T, 4, F>(ps, tw, x, xs, y, ys, sign, scale, lane_tw);
        case 5: return stockham_pass<T, 5, F>(ps, tw, x, xs, y, ys, sign, scale, lane_tw);
        case 7: return stockham_pass<T, 7, F>(ps, tw, x, xs, y, ys, sign, scale, lane_tw);
        case 8: return stockham_pass<T, 8, F>(ps, tw, x, xs, y, ys, sign, scale, lane_tw);
        case 11: return stockham_pass<T, 11, F>(ps, tw, x, xs, y, ys, sign, scale, lane_tw);
        case 13: return stockham_pass<T, 13, F>(ps, tw, x, xs, y, ys, sign, scale, lane_tw);
        default: break;
    }
}

}  // namespace fft_detail

// ---------------------------------------------------------------------------------- plans

template <class T>
class Plan;
template <class T>
std::shared_ptr<const Plan<T>> plan_c2c(Index n, Direction dir);

/// A complex transform of one length, precision and direction (see the top of the file).
template <class T>
class Plan {
public:
    enum class Kind { direct, four_step, bluestein };

    Plan(Index n, Direction dir) : n_(n), dir_(dir), sign_(direction_sign(dir)) {
        using namespace fft_detail;
        if (n < 1) throw ValueError("fft: a transform's length must be at least 1, got " + std::to_string(n));
        if (is_smooth(n) && n <= max_direct) build_direct();
        if (n >= min_four_step || !has_direct_) build_four_step();
        // Bluestein when nothing else runs n, and for batches of short lengths with a large
        // prime factor: lane groups of W transforms through a short convolution beat a
        // four-step per transform.
        if (!has_direct_ && (!has_four_step_ || n <= max_direct)) build_bluestein();
    }

    Index size() const { return n_; }
    Direction direction() const { return dir_; }
    /// How count transforms of this length run.
    Kind kind_for(Index count) const {
        const bool batch = count >= fft_detail::lanes<T>;
        if (has_direct_ && (batch || !has_four_step_)) return Kind::direct;
        if (has_four_step_ && !(batch && has_bluestein_)) return Kind::four_step;
        return Kind::bluestein;
    }

    /// count transforms: transform b reads in[b * in_dist + j * in_stride] and writes
    /// out[b * out_dist + k * out_stride] (strides in complex elements, any sign), times scale.
    /// in and out are the same array with the same layout, or do not overlap.
    void execute(const Complex<T>* in, Index in_stride, Index in_dist, Complex<T>* out, Index out_stride,
                 Index out_dist, Index count, T scale, ThreadPool* pool) const {
        using namespace fft_detail;
        if (count <= 0) return;
        if (n_ == 1) {
            parallel(nullptr, count, [&](Index b) { out[b * out_dist] = in[b * in_dist] * scale; });
            return;
        }
        switch (kind_for(count)) {
            case Kind::direct: {
                constexpr Index W = lanes<T>;
                if (in_dist == 1 && out_dist == 1 && std::abs(in_stride) * Index(sizeof(Complex<T>)) >= 1024) {
                    const Index width = strip_width(n_, count, strip_bytes);
                    parallel(pool, (count + width - 1) / width, [&](Index t) {
                        run_strip(in + t * width, in_stride, 1, out + t * width, out_stride, 1, std::min(width, count - t * width),
                                  width, scale, [](Index) { return nullptr; });
                    });
                    return;
                }
                parallel(pool, (count + W - 1) / W, [&](Index g) {
                    run_lane_group(in + g * W * in_dist, in_stride, in_dist, out + g * W * out_dist, out_stride, out_dist,
                                   std::min(W, count - g * W), scale, nullptr);
                });
                return;
            }
            case Kind::four_step:
                for (Index b = 0; b < count; ++b)
                    run_four_step(in + b * in_dist, in_stride, out + b * out_dist, out_stride, scale, pool);
                return;
            case Kind::bluestein: {
                constexpr Index W = lanes<T>;
                parallel(pool, (count + W - 1) / W, [&](Index g) {
                    run_bluestein(in + g * W * in_dist, in_stride, in_dist, out + g * W * out_dist, out_stride, out_dist,
                                  std::min(W, count - g * W), scale, pool);
                });
                return;
            }
        }
    }

private:
    /// `columns` transforms of a direct plan that lie side by side (transform c's element e at
    /// in[e * in_stride + c * in_lane]), far apart element to element: copied a row at a time
    /// into a dense strip of `width` columns (in L2), run there as lane groups in
    /// place, copied back. group_twiddle(g) gives the four-step's twiddles for the lane group
    /// of columns g.. (or nothing).
    template <class GroupTwiddle>
    void run_strip(const Complex<T>* in, Index in_stride, Index in_lane, Complex<T>* out, Index out_stride,
                   Index out_lane, Index columns, Index width, T scale, GroupTwiddle&& group_twiddle) const {
        using namespace fft_detail;
        constexpr Index W = lanes<T>;
        const Index n = n_;
        Scratch<Complex<T>> strip_buffer(n * width);
        Complex<T>* strip = strip_buffer.data();
        for (Index e = 0; e < n; ++e) {
            const Complex<T>* row = in + e * in_stride;
            if (in_lane == 1) {
                if (e + prefetch_rows < n) prefetch(row + prefetch_rows * in_stride, columns, false);
                std::copy(row, row + columns, strip + e * width);
            } else {
                for (Index c = 0; c < columns; ++c) strip[e * width + c] = row[c * in_lane];
            }
        }
        for (Index g = 0; g < columns; g += W) {
            const auto lane_tw = group_twiddle(g);
            run_lane_group(strip + g, width, 1, strip + g, width, 1, std::min(W, columns - g), scale, lane_tw_pointer(lane_tw));
        }
        for (Index e = 0; e < n; ++e) {
            Complex<T>* row = out + e * out_stride;
            if (out_lane == 1) {
                if (e + prefetch_rows < n) prefetch(row + prefetch_rows * out_stride, columns, true);
                std::copy(strip + e * width, strip + e * width + columns, row);
            } else {
                for (Index c = 0; c < columns; ++c) row[c * out_lane] = strip[e * width + c];
            }
        }
    }

    /// Columns (or rows) a strip of about `bytes` holds, at least a lane group. Whole strips are
    /// copied in and out a row at a time, so that each 4 KiB page of a layout whose rows are
    /// pages apart is visited once per strip, not once per lane group (the prefetchers do not
    /// follow such strides and the TLB does not hold their pages): the wider, the fewer visits,
    /// as long as the strip and the lane groups' scratch stay in L2. Measured on 1024 x 513
    /// columns (float, Zen 4, 1 MiB L2): 64 KiB (one lane group) 1.14 ms, 128 KiB 0.94, 256
    /// KiB 0.85, 512 KiB 0.78-0.82 (two threads: 1.04, 0.67-0.74, 0.60-0.68, 0.50-0.55).
    static Index strip_width(Index length, Index available, Index bytes) {
        constexpr Index W = fft_detail::lanes<T>;
        const Index fit = bytes / (length * Index(sizeof(Complex<T>))) / W * W;
        return std::min(std::max(fit, W), (available + W - 1) / W * W);
    }
    /// Strips of side-by-side transforms; the four-step's are half as wide (its first step also
    /// reads its twiddle tables, 128 KiB at 2^20: 512 KiB strips were no faster there).
    static constexpr Index strip_bytes = Index(512) << 10;
    static constexpr Index four_step_strip_bytes = Index(256) << 10;

    /// One lane group of `count` <= W transforms of a direct plan: lane l's element e at
    /// in[e * in_stride + l * in_lane]. Lanes side by side (in_lane == 1, all W used) are read
    /// in place; others are gathered into scratch first (and scattered after, for the output).
    void run_lane_group(const Complex<T>* in, Index in_stride, Index in_lane, Complex<T>* out, Index out_stride,
                        Index out_lane, Index count, T scale, const fft_detail::LaneTwiddle<T>* lane_tw) const {
        using namespace fft_detail;
        constexpr Index W = lanes<T>;
        const Index n = n_;
        const bool gather = in_lane != 1 || count != W;
        const bool scatter = out_lane != 1 || count != W;
        Scratch<Complex<T>> buffer(3 * n * W);
        Complex<T>* const gathered = buffer.data();
        Complex<T>* const ping[2] = {buffer.data() + n * W, buffer.data() + 2 * n * W};
        const Complex<T>* src = in;
        Index src_stride = in_stride;
        if (gather) {
            transpose_copy(n, count, in, in_stride, in_lane, gathered, W, 1);
            for (Index e = 0; e < n; ++e)
                for (Index l = count; l < W; ++l) gathered[e * W + l] = Complex<T>();
            src = gathered;
            src_stride = W;
        }
        const Index passes = static_cast<Index>(passes_.size());
        // The last pass writes where the result goes: the output, or (to scatter) the gathered
        // buffer, free once the first pass has read it (ping[0] when there is one pass).
        Complex<T>* dst = scatter ? (passes >= 2 ? gathered : ping[0]) : out;
        const Index dst_stride = scatter ? W : out_stride;
        for (Index i = 0; i < passes; ++i) {
            const bool last = i == passes - 1;
            Complex<T>* to = last ? dst : ping[i % 2];
            const Index to_stride = last ? dst_stride : W;
            const Pass& ps = passes_[static_cast<std::size_t>(i)];
            const Complex<T>* tw = twiddles_.data() + ps.twiddles;
            if (!last)
                run_pass<T, Finish::twiddle>(ps, tw, src, src_stride, to, to_stride, sign_, scale, lane_tw);
            else if (lane_tw)
                run_pass<T, Finish::lane_twiddle>(ps, tw, src, src_stride, to, to_stride, sign_, scale, lane_tw);
            else if (scale != T(1))
                run_pass<T, Finish::scale>(ps, tw, src, src_stride, to, to_stride, sign_, scale, lane_tw);
            else
                run_pass<T, Finish::plain>(ps, tw, src, src_stride, to, to_stride, sign_, scale, lane_tw);
            src = to;
            src_stride = to_stride;
        }
        if (scatter) transpose_copy(n, count, dst, W, 1, out, out_stride, out_lane);
    }

    /// to[e * to_stride + l * to_lane] = from[e * from_stride + l * from_lane] for e < n, l <
    /// lanes. A full group between rows and the lane-group layout (a gather of W rows, a scatter
    /// back) goes W x W elements at a time through registers where there is a transpose for
    /// them (AVX-512); otherwise in blocks of 64 elements with the lane loop outside, each
    /// lane's run of elements read or written in one stream.
    static void transpose_copy(Index n, Index lanes, const Complex<T>* from, Index from_stride, Index from_lane,
                               Complex<T>* to, Index to_stride, Index to_lane) {
        using namespace fft_detail;
        constexpr Index W = fft_detail::lanes<T>;
        Index done = 0;
        if constexpr (has_register_transpose<T>) {
            if (lanes == W && from_stride == 1 && to_stride == W && to_lane == 1) {  // gather rows
                for (; done + W <= n; done += W) transpose_block<T>(from + done, from_lane, to + done * W, W);
            } else if (lanes == W && from_stride == W && from_lane == 1 && to_stride == 1) {  // scatter rows
                for (; done + W <= n; done += W) transpose_block<T>(from + done * W, W, to + done, to_lane);
            }
        }
        constexpr Index block = 64;
        for (Index e0 = done; e0 < n; e0 += block) {
            const Index e1 = std::min(n, e0 + block);
            for (Index l = 0; l < lanes; ++l) {
                const Complex<T>* f = from + l * from_lane;
                Complex<T>* t = to + l * to_lane;
                for (Index e = e0; e < e1; ++e)  // one move per element (an assignment is two)
                    std::memcpy(static_cast<void*>(t + e * to_stride), f + e * from_stride, sizeof(Complex<T>));
            }
        }
    }

    void build_direct() {
        using namespace fft_detail;
        has_direct_ = true;
        Index n_cur = n_, s = 1;
        for (int r : radices_of(n_)) {
            const Index m = n_cur / r;
            passes_.push_back(Pass{r, m, s, static_cast<Index>(twiddles_.size())});
            if (m > 1)  // the last pass (m = 1) has only w^0
                for (Index p = 0; p < m; ++p)
                    for (int j = 1; j < r; ++j) twiddles_.push_back(round_to<T>(unit_root(p * j, n_cur, sign_)));
            n_cur = m;
            s *= r;
        }
    }

    /// n = n1 * n2 with n1 the smooth divisor <= max_direct closest to sqrt(n), preferring an
    /// n2 that fills whole lane groups; none (n prime, or no smooth factor): no four-step.
    void build_four_step() {
        using namespace fft_detail;
        constexpr Index W = lanes<T>;
        Index best = 0;
        double best_score = 0;
        for (Index d = 2; d <= max_direct && d * 2 <= n_; ++d) {
            if (n_ % d || !is_smooth(d)) continue;
            const double score = std::abs(std::log2(double(d)) - 0.5 * std::log2(double(n_))) + ((n_ / d) % W ? 0.5 : 0.0);
            if (!best || score < best_score) best = d, best_score = score;
        }
        if (!best) return;
        has_four_step_ = true;
        n1_ = best;
        n2_ = n_ / best;
        columns_ = plan_c2c<T>(n1_, dir_);
        rows_ = plan_c2c<T>(n2_, dir_);
        // w_n^(l k1) for l < W in c/d form, and a two-level table of w_n^k (k = hi * block + lo)
        // for the lane groups' w_n^(first k1).
        lane_c_.resize(static_cast<std::size_t>(n1_ * 2 * W));
        lane_d_.resize(lane_c_.size());
        const UnitRoots roots(n_, sign_);
        for (Index k1 = 0; k1 < n1_; ++k1)
            for (Index l = 0; l < W; ++l) {
                const Complex<T> w = round_to<T>(roots(l * k1));
                const std::size_t at = static_cast<std::size_t>(k1 * 2 * W + 2 * l);
                lane_c_[at] = lane_c_[at + 1] = w.real();
                lane_d_[at] = -w.imag();
                lane_d_[at + 1] = w.imag();
            }
        root_block_ = static_cast<Index>(std::ceil(std::sqrt(double(n_))));
        for (Index k = 0; k < root_block_; ++k) {
            roots_lo_.push_back(round_to<double>(unit_root(k, n_, sign_)));
            roots_hi_.push_back(round_to<double>(unit_root(k * root_block_, n_, sign_)));
        }
    }

    void build_bluestein() {
        using namespace fft_detail;
        has_bluestein_ = true;
        const Index m = next_smooth(2 * n_ - 1);
        convolution_fwd_ = plan_c2c<T>(m, Direction::forward);
        convolution_inv_ = plan_c2c<T>(m, Direction::inverse);
        // chirp_k = exp(sign i pi k^2 / n); the kernel conj(chirp) on (-n, n), wrapped mod m.
        chirp_.resize(static_cast<std::size_t>(n_));
        std::vector<Complex<double>> kernel(static_cast<std::size_t>(m));
        const UnitRoots roots(2 * n_, sign_);
        for (Index k = 0; k < n_; ++k) {
            const std::complex<long double> c = roots((k * k) % (2 * n_));
            chirp_[static_cast<std::size_t>(k)] = round_to<T>(c);
            const Complex<double> conj_c = round_to<double>(std::conj(c));
            kernel[static_cast<std::size_t>(k)] = conj_c;
            if (k) kernel[static_cast<std::size_t>(m - k)] = conj_c;
        }
        // Its spectrum in double (rounded once), with the inverse's 1/m folded in.
        plan_c2c<double>(m, Direction::forward)->execute(kernel.data(), 1, m, kernel.data(), 1, m, 1, 1.0 / double(m), nullptr);
        for (const auto& k : kernel) kernel_spectrum_.push_back(round_to<T>(k));
    }

    /// Rows ahead that the strip copies prefetch: their rows are pages apart, which the hardware
    /// prefetchers do not follow, and a copy that waits for each row is latency-bound.
    static constexpr Index prefetch_rows = 8;
    static void prefetch(const Complex<T>* p, Index count, bool for_write) {
        const char* c = reinterpret_cast<const char*>(p);
        for (Index b = 0; b < count * Index(sizeof(Complex<T>)); b += 64) {
            if (for_write)
                __builtin_prefetch(c + b, 1);
            else
                __builtin_prefetch(c + b, 0);
        }
    }

    static const fft_detail::LaneTwiddle<T>* lane_tw_pointer(std::nullptr_t) { return nullptr; }
    static const fft_detail::LaneTwiddle<T>* lane_tw_pointer(const fft_detail::LaneTwiddle<T>& t) { return &t; }

    void run_four_step(const Complex<T>* in, Index in_stride, Complex<T>* out, Index out_stride, T scale,
                       ThreadPool* pool) const {
        using namespace fft_detail;
        constexpr Index W = lanes<T>;
        Scratch<Complex<T>> middle(n_);  // [k1][j2]
        Complex<T>* mid = middle.data();
        // Step 1: columns j2 (length n1, stride n2), times w_n^(j2 k1), into mid[k1][j2].
        const Index width1 = strip_width(n1_, n2_, four_step_strip_bytes);
        parallel(pool, (n2_ + width1 - 1) / width1, [&](Index t) {
            const Index first = t * width1;
            Scratch<Complex<T>> group(n1_);
            columns_->run_strip(in + first * in_stride, n2_ * in_stride, in_stride, mid + first, n2_, 1,
                                std::min(width1, n2_ - first), width1, T(1), [&](Index g) {
                                    for (Index k1 = 0; k1 < n1_; ++k1) {
                                        const Index k = ((first + g) * k1) % n_;
                                        group.data()[k1] = round_to<T>(mul(roots_hi_[static_cast<std::size_t>(k / root_block_)],
                                                                           roots_lo_[static_cast<std::size_t>(k % root_block_)]));
                                    }
                                    return LaneTwiddle<T>{lane_c_.data(), lane_d_.data(), group.data()};
                                });
        });
        // Step 2: row k1 (length n2) goes to out[(k1 + n1 k2) * out_stride]: the transposition.
        if (!rows_->has_direct_) {
            rows_->execute(mid, 1, n2_, out, n1_ * out_stride, out_stride, n1_, scale, pool);
            return;
        }
        const Index width2 = strip_width(n2_, n1_, four_step_strip_bytes);
        parallel(pool, (n1_ + width2 - 1) / width2, [&](Index t) {
            const Index first = t * width2, rows = std::min(width2, n1_ - first);
            Scratch<Complex<T>> strip_buffer(n2_ * width2);
            Complex<T>* strip = strip_buffer.data();  // [k2][k1 - first]
            for (Index g = 0; g < rows; g += W)
                rows_->run_lane_group(mid + (first + g) * n2_, 1, n2_, strip + g, width2, 1, std::min(W, rows - g), scale,
                                      nullptr);
            for (Index k2 = 0; k2 < n2_; ++k2) {
                Complex<T>* row = out + (first + n1_ * k2) * out_stride;
                if (out_stride == 1) {
                    if (k2 + prefetch_rows < n2_) prefetch(row + prefetch_rows * n1_, rows, true);
                    std::copy(strip + k2 * width2, strip + k2 * width2 + rows, row);
                } else {
                    for (Index r = 0; r < rows; ++r) row[r * out_stride] = strip[k2 * width2 + r];
                }
            }
        });
    }

    void run_bluestein(const Complex<T>* in, Index in_stride, Index in_dist, Complex<T>* out, Index out_stride,
                       Index out_dist, Index count, T scale, ThreadPool* pool) const {
        using namespace fft_detail;
        const Index m = convolution_fwd_->size();
        Scratch<Complex<T>> buffer(count * m);
        Complex<T>* a = buffer.data();
        parallel_rows(pool, count, m, [&](Index b, Index begin, Index end) {
            Complex<T>* row = a + b * m;
            for (Index k = begin; k < std::min(end, n_); ++k)
                row[k] = mul(in[b * in_dist + k * in_stride], chirp_[static_cast<std::size_t>(k)]);
            if (end > n_) std::fill(row + std::max(begin, n_), row + end, Complex<T>());
        });
        convolution_fwd_->execute(a, 1, m, a, 1, m, count, T(1), pool);
        parallel_rows(pool, count, m, [&](Index b, Index begin, Index end) {
            for (Index k = begin; k < end; ++k) a[b * m + k] = mul(a[b * m + k], kernel_spectrum_[static_cast<std::size_t>(k)]);
        });
        convolution_inv_->execute(a, 1, m, a, 1, m, count, T(1), pool);
        parallel_rows(pool, count, n_, [&](Index b, Index begin, Index end) {
            for (Index k = begin; k < end; ++k)
                out[b * out_dist + k * out_stride] = mul(a[b * m + k], chirp_[static_cast<std::size_t>(k)]) * scale;
        });
    }

    Index n_;
    Direction dir_;
    int sign_;
    // direct
    bool has_direct_ = false;
    std::vector<fft_detail::Pass> passes_;
    std::vector<Complex<T>> twiddles_;
    // four-step
    bool has_four_step_ = false;
    Index n1_ = 0, n2_ = 0, root_block_ = 0;
    std::shared_ptr<const Plan<T>> columns_, rows_;
    std::vector<T> lane_c_, lane_d_;
    std::vector<Complex<double>> roots_lo_, roots_hi_;
    // Bluestein
    bool has_bluestein_ = false;
    std::shared_ptr<const Plan<T>> convolution_fwd_, convolution_inv_;
    std::vector<Complex<T>> chirp_, kernel_spectrum_;
};

/// A real transform of length n: r2c (forward) or c2r (inverse). Even n: a complex plan of n/2
/// and the twiddles w_n^k = exp(-2 pi i k/n), k <= n/2, that separate (or join) the even and
/// odd samples' spectra. Odd n: a complex plan of n.
template <class T>
class RealPlan {
public:
    RealPlan(Index n, Direction dir) : n_(n) {
        if (n < 1) throw ValueError("fft: a transform's length must be at least 1, got " + std::to_string(n));
        if (n % 2 == 0) {
            complex_ = plan_c2c<T>(n / 2, dir);
            const fft_detail::UnitRoots roots(n, -1);
            for (Index k = 0; k <= n / 2; ++k) {
                const Complex<T> w = fft_detail::round_to<T>(roots(k));
                twiddles_.push_back(w);
                twiddle_c_.insert(twiddle_c_.end(), {w.real(), w.real()});
                twiddle_d_.insert(twiddle_d_.end(), {-w.imag(), w.imag()});
            }
        } else {
            complex_ = plan_c2c<T>(n, dir);
        }
    }
    Index size() const { return n_; }
    const Plan<T>& complex_plan() const { return *complex_; }
    /// w_n^k = exp(-2 pi i k/n), k <= n/2; and the same in c/d form (see cmul), two T per k.
    const Complex<T>* twiddles() const { return twiddles_.data(); }
    const T* twiddle_c() const { return twiddle_c_.data(); }
    const T* twiddle_d() const { return twiddle_d_.data(); }

private:
    Index n_;
    std::shared_ptr<const Plan<T>> complex_;
    std::vector<Complex<T>> twiddles_;
    std::vector<T> twiddle_c_, twiddle_d_;
};

namespace fft_detail {

/// The pairs (k, h - k), k in [begin, end) within [0, h/2], of a real transform's split (r2c)
/// or join (c2r) pass: pair(k) for one k, pairs(k) for W consecutive ones at once, with the
/// partners' lanes reversed. Vectors need both halves apart (2k + 2W - 2 < h) and k >= 1 (the
/// pair (0, h) reads X_h, which the join needs apart).
template <class T, class One, class Block>
void for_each_pair(Index h, Index begin, Index end, One&& pair, Block&& pairs) {
    constexpr Index W = lanes<T>;
    Index k = begin;
    if (k == 0 && k < end) pair(k++);
    for (; k + W <= end && 2 * k + 2 * W - 2 < h; k += W) pairs(k);
    for (; k < end; ++k) pair(k);
}

struct ReversePairsIndex {  // complex lane l <- lane W - 1 - l
    static constexpr unsigned get(unsigned i, unsigned size) { return size - 2 - (i & ~1u) + (i & 1u); }
};

template <class T>
inline Vec<T> reverse_pairs(const Vec<T>& v) {
    using U = std::conditional_t<std::is_same_v<T, float>, std::uint32_t, std::uint64_t>;
    return xsimd::swizzle(v, xsimd::make_batch_constant<xsimd::batch<U, simd_arch>, ReversePairsIndex>());
}

}  // namespace fft_detail

namespace fft_detail {

/// The plan cache: plans of the most recently used lengths and directions, shared by every
/// thread (LruCache locks); a plan is built outside the lock, so that it may ask for others.
template <class P, class T>
std::shared_ptr<const P> cached_plan(const char* kind, Index n, Direction dir) {
    static LruCache<const P> cache(256);
    const std::string key = std::string(kind) + (std::is_same_v<T, float> ? ":f:" : ":d:") + std::to_string(n) +
                            (dir == Direction::forward ? ":fwd" : ":inv");
    if (auto found = cache.find(key)) return found;
    return cache.insert(key, std::make_shared<const P>(n, dir)).first;
}

}  // namespace fft_detail

/// The cached plan of a complex transform of length n >= 1.
template <class T>
std::shared_ptr<const Plan<T>> plan_c2c(Index n, Direction dir) {
    return fft_detail::cached_plan<Plan<T>, T>("c2c", n, dir);
}

/// The cached plan of a real transform of length n >= 1 (forward: r2c, inverse: c2r).
template <class T>
std::shared_ptr<const RealPlan<T>> plan_real(Index n, Direction dir) {
    return fft_detail::cached_plan<RealPlan<T>, T>("real", n, dir);
}

// ---------------------------------------------------------------------------------- 1-D entry points

/// count complex transforms of length n along one axis: transform b reads
/// in[b * in_dist + j * in_stride] and writes out[b * out_dist + k * out_stride] (strides in
/// complex elements), multiplied by scale. in == out with the same layout is allowed.
template <class T>
void c2c(const Complex<T>* in, Index in_stride, Index in_dist, Complex<T>* out, Index out_stride, Index out_dist,
         Index n, Index count, Direction dir, T scale, ThreadPool* pool) {
    plan_c2c<T>(n, dir)->execute(in, in_stride, in_dist, out, out_stride, out_dist, count, scale, pool);
}

/// count real-to-complex transforms (NumPy's rfft): n reals in[b * in_dist + j * in_stride] give
/// the n/2 + 1 complex out[b * out_dist + k * out_stride], times scale. in and out must not overlap.
template <class T>
void r2c(const T* in, Index in_stride, Index in_dist, Complex<T>* out, Index out_stride, Index out_dist, Index n,
         Index count, T scale, ThreadPool* pool) {
    using namespace fft_detail;
    if (count <= 0) return;
    const auto plan = plan_real<T>(n, Direction::forward);
    const Plan<T>& complex = plan->complex_plan();
    if (n % 2) {
        // Odd n: the full complex transform of the real rows, the first n/2 + 1 outputs kept.
        Scratch<Complex<T>> rows(count * n);
        Complex<T>* z = rows.data();
        parallel(pool, count, [&](Index b) {
            for (Index j = 0; j < n; ++j) z[b * n + j] = Complex<T>(in[b * in_dist + j * in_stride], T(0));
        });
        complex.execute(z, 1, n, z, 1, n, count, scale, pool);
        parallel(pool, count, [&](Index b) {
            for (Index k = 0; k <= n / 2; ++k) out[b * out_dist + k * out_stride] = z[b * n + k];
        });
        return;
    }
    // Even n: z_j = x_2j + i x_2j+1 (the reals themselves, read as complex, when contiguous).
    const Index h = n / 2;
    const bool as_complex = in_stride == 1 && in_dist % 2 == 0 &&
                            reinterpret_cast<std::uintptr_t>(in) % alignof(Complex<T>) == 0;
    Scratch<Complex<T>> gathered(as_complex ? 0 : count * h);
    const Complex<T>* z = reinterpret_cast<const Complex<T>*>(in);
    Index z_dist = in_dist / 2;
    if (!as_complex) {
        Complex<T>* g = gathered.data();
        parallel(pool, count, [&](Index b) {
            for (Index j = 0; j < h; ++j)
                g[b * h + j] = Complex<T>(in[b * in_dist + 2 * j * in_stride], in[b * in_dist + (2 * j + 1) * in_stride]);
        });
        z = g;
        z_dist = h;
    }
    // Z = FFT_h(z) into out[0, h), then each row in place. With E_k, O_k the spectra of the
    // even and odd samples, Z_k = E_k + i O_k and conj(Z_(h-k)) = E_k - i O_k, so with
    // a = Z_k + conj(Z_(h-k)) = 2 E_k and b = -i w^k (Z_k - conj(Z_(h-k))) = 2 w^k O_k:
    // X_k = E_k + w^k O_k = (a + b)/2 and, as w^(h-k) = -conj(w^k), X_(h-k) = conj(a - b)/2.
    const Complex<T>* w = plan->twiddles();
    const T half = scale / 2;
    // Row b's unpacking of the pairs k in [begin, end) of [0, h/2].
    auto unpack = [&](Index b, Index begin, Index end) {
        Complex<T>* row = out + b * out_dist;
        auto pair = [&](Index k) {
            Complex<T>& xk = row[k * out_stride];
            Complex<T>& xh = row[(h - k) * out_stride];
            const Complex<T> zk = xk, zh = row[((h - k) % h) * out_stride];
            const Complex<T> a(zk.real() + zh.real(), zk.imag() - zh.imag());
            const Complex<T> wd = mul(w[k], Complex<T>(zk.real() - zh.real(), zk.imag() + zh.imag()));
            const Complex<T> b(wd.imag(), -wd.real());
            xh = Complex<T>((a.real() - b.real()) * half, -(a.imag() - b.imag()) * half);
            xk = Complex<T>((a.real() + b.real()) * half, (a.imag() + b.imag()) * half);
        };
        if (out_stride != 1) {
            for (Index k = begin; k < end; ++k) pair(k);
            return;
        }
        using V = Vec<T>;
        const V conj_sign = V(T(0)) - odd_positive<T>(), half_v(half);
        constexpr Index W = lanes<T>;
        for_each_pair<T>(h, begin, end, pair, [&](Index k) {
            const V zk = load(row + k), zh = reverse_pairs(load(row + h - k - W + 1));
            const V a = zk + zh * conj_sign;
            const V wd = cmul(zk - zh * conj_sign, V::load_unaligned(plan->twiddle_c() + 2 * k),
                              V::load_unaligned(plan->twiddle_d() + 2 * k));
            const V b = swap_pairs(wd) * conj_sign;
            store(row + k, (a + b) * half_v);
            store(row + h - k - W + 1, reverse_pairs((a - b) * conj_sign * half_v));
        });
    };
    // Many rows: each chunk of rows is transformed and unpacked while it is in cache (one pass
    // over the output, not two; the threads share rows). Few (long) rows: the transform and the
    // unpacking each split every row among the threads.
    constexpr Index chunk = 2 * lanes<T>;
    if (count >= 2 * chunk && complex.kind_for(chunk) == Plan<T>::Kind::direct) {
        parallel(pool, (count + chunk - 1) / chunk, [&](Index c) {
            const Index first = c * chunk, rows = std::min(chunk, count - first);
            complex.execute(z + first * z_dist, 1, z_dist, out + first * out_dist, out_stride, out_dist, rows, T(1), nullptr);
            for (Index b = first; b < first + rows; ++b) unpack(b, 0, h / 2 + 1);
        });
        return;
    }
    complex.execute(z, 1, z_dist, out, out_stride, out_dist, count, T(1), pool);
    parallel_rows(pool, count, h / 2 + 1, unpack);
}

/// count complex-to-real transforms (NumPy's irfft, unnormalized): the n/2 + 1 complex
/// in[b * in_dist + k * in_stride] give n reals out[b * out_dist + j * out_stride], times scale.
/// As NumPy, the imaginary parts of X_0 (and of X_(n/2) for even n) are ignored.
template <class T>
void c2r(const Complex<T>* in, Index in_stride, Index in_dist, T* out, Index out_stride, Index out_dist, Index n,
         Index count, T scale, ThreadPool* pool) {
    using namespace fft_detail;
    if (count <= 0) return;
    const auto plan = plan_real<T>(n, Direction::inverse);
    const Plan<T>& complex = plan->complex_plan();
    if (n % 2) {
        // Odd n: the full Hermitian spectrum, a complex inverse, its real parts.
        Scratch<Complex<T>> rows(count * n);
        Complex<T>* z = rows.data();
        parallel(pool, count, [&](Index b) {
            Complex<T>* row = z + b * n;
            row[0] = Complex<T>(in[b * in_dist].real(), T(0));
            for (Index k = 1; k <= n / 2; ++k) {
                const Complex<T> x = in[b * in_dist + k * in_stride];
                row[k] = x;
                row[n - k] = std::conj(x);
            }
        });
        complex.execute(z, 1, n, z, 1, n, count, scale, pool);
        parallel(pool, count, [&](Index b) {
            for (Index j = 0; j < n; ++j) out[b * out_dist + j * out_stride] = z[b * n + j].real();
        });
        return;
    }
    // Even n: with a = X_k + conj(X_(h-k)) = 2 E_k and b = i conj(w^k) (X_k - conj(X_(h-k)))
    // = 2 i O_k, Z_k = a + b is twice the spectrum of z_j = x_2j + i x_2j+1 (so that the
    // unnormalized inverse of length h gives n z), and Z_(h-k) = conj(a - b). X_0 and X_h are
    // taken as real.
    const Index h = n / 2;
    Scratch<Complex<T>> rows(count * h);
    Complex<T>* z = rows.data();
    const Complex<T>* w = plan->twiddles();
    // Row b's pairs k in [begin, end) of [0, h/2], into z.
    auto pack = [&](Index b, Index begin, Index end) {
        const Complex<T>* x = in + b * in_dist;
        Complex<T>* row = z + b * h;
        auto pair = [&](Index k) {
            Complex<T> xk = x[k * in_stride], xh = x[(h - k) * in_stride];
            if (k == 0) xk = Complex<T>(xk.real(), T(0)), xh = Complex<T>(xh.real(), T(0));
            const Complex<T> a(xk.real() + xh.real(), xk.imag() - xh.imag());
            const Complex<T> o = mul(std::conj(w[k]), Complex<T>(xk.real() - xh.real(), xk.imag() + xh.imag()));
            const Complex<T> ib(-o.imag(), o.real());
            row[k] = a + ib;
            if (k > 0) row[h - k] = std::conj(a - ib);
        };
        if (in_stride != 1) {
            for (Index k = begin; k < end; ++k) pair(k);
            return;
        }
        using V = Vec<T>;
        const V odd_pos = odd_positive<T>(), conj_sign = V(T(0)) - odd_pos;
        constexpr Index W = lanes<T>;
        for_each_pair<T>(h, begin, end, pair, [&](Index k) {
            const V xk = load(x + k), xh = reverse_pairs(load(x + h - k - W + 1));
            const V a = xk + xh * conj_sign;
            const V o = cmul(xk - xh * conj_sign, V::load_unaligned(plan->twiddle_c() + 2 * k),
                             V(T(0)) - V::load_unaligned(plan->twiddle_d() + 2 * k));
            const V ib = swap_pairs(o) * odd_pos;
            store(row + k, a + ib);
            store(row + h - k - W + 1, reverse_pairs((a - ib) * conj_sign));
        });
    };
    const bool as_complex = out_stride == 1 && out_dist % 2 == 0 &&
                            reinterpret_cast<std::uintptr_t>(out) % alignof(Complex<T>) == 0;
    // Many rows written in place: each chunk of rows is packed and transformed while it is in
    // cache, as in r2c.
    constexpr Index chunk = 2 * lanes<T>;
    if (as_complex && count >= 2 * chunk && complex.kind_for(chunk) == Plan<T>::Kind::direct) {
        parallel(pool, (count + chunk - 1) / chunk, [&](Index c) {
            const Index first = c * chunk, rows = std::min(chunk, count - first);
            for (Index b = first; b < first + rows; ++b) pack(b, 0, h / 2 + 1);
            complex.execute(z + first * h, 1, h, reinterpret_cast<Complex<T>*>(out + first * out_dist), 1, out_dist / 2,
                            rows, scale, nullptr);
        });
        return;
    }
    parallel_rows(pool, count, h / 2 + 1, pack);
    if (as_complex) {
        complex.execute(z, 1, h, reinterpret_cast<Complex<T>*>(out), 1, out_dist / 2, count, scale, pool);
        return;
    }
    complex.execute(z, 1, h, z, 1, h, count, scale, pool);
    parallel(pool, count, [&](Index b) {
        for (Index j = 0; j < h; ++j) {
            out[b * out_dist + 2 * j * out_stride] = z[b * h + j].real();
            out[b * out_dist + (2 * j + 1) * out_stride] = z[b * h + j].imag();
        }
    });
}

// ---------------------------------------------------------------------------------- N-D

/// A strided N-D array's extents and strides (in elements of its type).
struct Layout {
    std::vector<Index> shape;
    std::vector<Index> strides;
};

namespace fft_detail {

/// Calls one(in_offset, out_offset, count, in_dist, out_dist) for every line along `axis`: the
/// batch is the other axis with the smallest output stride, the rest are looped over.
template <class F>
void for_each_line_batch(const Layout& in, const Layout& out, int axis, F&& one) {
    const int rank = static_cast<int>(out.shape.size());
    for (int d = 0; d < rank; ++d)
        if (out.shape[static_cast<std::size_t>(d)] == 0) return;
    int batch = -1;
    for (int d = 0; d < rank; ++d) {
        if (d == axis || out.shape[static_cast<std::size_t>(d)] == 1) continue;
        if (batch < 0 || std::abs(out.strides[static_cast<std::size_t>(d)]) < std::abs(out.strides[static_cast<std::size_t>(batch)]))
            batch = d;
    }
    const Index count = batch < 0 ? 1 : out.shape[static_cast<std::size_t>(batch)];
    const Index in_dist = batch < 0 ? 0 : in.strides[static_cast<std::size_t>(batch)];
    const Index out_dist = batch < 0 ? 0 : out.strides[static_cast<std::size_t>(batch)];
    std::vector<Index> index(static_cast<std::size_t>(rank), 0);
    for (;;) {
        Index in_off = 0, out_off = 0;
        for (int d = 0; d < rank; ++d) {
            in_off += index[static_cast<std::size_t>(d)] * in.strides[static_cast<std::size_t>(d)];
            out_off += index[static_cast<std::size_t>(d)] * out.strides[static_cast<std::size_t>(d)];
        }
        one(in_off, out_off, count, in_dist, out_dist);
        int d = rank - 1;
        for (; d >= 0; --d) {
            if (d == axis || d == batch) continue;
            if (++index[static_cast<std::size_t>(d)] < out.shape[static_cast<std::size_t>(d)]) break;
            index[static_cast<std::size_t>(d)] = 0;
        }
        if (d < 0) return;
    }
}

template <class T>
void c2c_along(const Complex<T>* in, const Layout& in_layout, Complex<T>* out, const Layout& out_layout, int axis,
               Direction dir, T scale, ThreadPool* pool) {
    const auto a = static_cast<std::size_t>(axis);
    const Index n = out_layout.shape[a];
    const auto plan = plan_c2c<T>(n, dir);
    for_each_line_batch(in_layout, out_layout, axis, [&](Index io, Index oo, Index count, Index id, Index od) {
        plan->execute(in + io, in_layout.strides[a], id, out + oo, out_layout.strides[a], od, count, scale, pool);
    });
}

}  // namespace fft_detail

/// Complex transforms along `axes` in turn (NumPy's fftn/ifftn): the first from in into out,
/// the others in place in out; `scale` is applied once, by the last. Both layouts have the
/// same shape; in may be out.
template <class T>
void c2c_axes(const Complex<T>* in, const Layout& in_layout, Complex<T>* out, const Layout& out_layout,
              const std::vector<int>& axes, Direction dir, T scale, ThreadPool* pool) {
    for (std::size_t i = 0; i < axes.size(); ++i) {
        const bool first = i == 0, last = i + 1 == axes.size();
        fft_detail::c2c_along<T>(first ? in : out, first ? in_layout : out_layout, out, out_layout, axes[i], dir,
                                 last ? scale : T(1), pool);
    }
}

/// NumPy's rfftn: r2c along axes.back() (in_layout: the real array; out_layout: its shape with
/// that axis n/2 + 1), then forward complex transforms along the other axes, in order, in place.
template <class T>
void r2c_axes(const T* in, const Layout& in_layout, Complex<T>* out, const Layout& out_layout,
              const std::vector<int>& axes, T scale, ThreadPool* pool) {
    const int last_axis = axes.back();
    const auto a = static_cast<std::size_t>(last_axis);
    const Index n = in_layout.shape[a];
    fft_detail::for_each_line_batch(in_layout, out_layout, last_axis, [&](Index io, Index oo, Index count, Index id, Index od) {
        r2c<T>(in + io, in_layout.strides[a], id, out + oo, out_layout.strides[a], od, n, count,
               axes.size() == 1 ? scale : T(1), pool);
    });
    for (std::size_t i = 0; i + 1 < axes.size(); ++i)
        fft_detail::c2c_along<T>(out, out_layout, out, out_layout, axes[i], Direction::forward,
                                 i + 2 == axes.size() ? scale : T(1), pool);
}

/// NumPy's irfftn: inverse complex transforms along all axes but the last (in order) into a
/// dense scratch copy, then c2r along axes.back() into out (out_layout: the real result, whose
/// extent along that axis is n; in_layout: the same with n/2 + 1). in is left as it is.
template <class T>
void c2r_axes(const Complex<T>* in, const Layout& in_layout, T* out, const Layout& out_layout,
              const std::vector<int>& axes, T scale, ThreadPool* pool) {
    const int last_axis = axes.back();
    const auto a = static_cast<std::size_t>(last_axis);
    const Index n = out_layout.shape[a];
    const Complex<T>* spectrum = in;
    Layout spectrum_layout = in_layout;
    std::vector<Complex<T>> dense;
    if (axes.size() > 1) {
        Index total = 1;
        spectrum_layout.strides.assign(in_layout.shape.size(), 0);
        for (std::size_t d = in_layout.shape.size(); d-- > 0;) {
            spectrum_layout.strides[d] = total;
            total *= in_layout.shape[d];
        }
        dense.resize(static_cast<std::size_t>(total));
        for (std::size_t i = 0; i + 1 < axes.size(); ++i)
            fft_detail::c2c_along<T>(i == 0 ? in : dense.data(), i == 0 ? in_layout : spectrum_layout, dense.data(),
                                     spectrum_layout, axes[i], Direction::inverse, T(1), pool);
        spectrum = dense.data();
    }
    fft_detail::for_each_line_batch(spectrum_layout, out_layout, last_axis, [&](Index io, Index oo, Index count, Index id, Index od) {
        c2r<T>(spectrum + io, spectrum_layout.strides[a], id, out + oo, out_layout.strides[a], od, n, count, scale, pool);
    });
}

}  // namespace lazytensor::detail::host::fft
