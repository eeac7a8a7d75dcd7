// SPDX-License-Identifier: MIT
// The host FFT engine (backend/host/fft.hpp) called directly, no graph: every length 1..64 and
// selected longer ones (powers of two to 2^16, mixed radices, primes through Bluestein, lengths
// with a large prime factor), both directions, float and double, strided and batched, r2c/c2r
// of even and odd n, N-D, round trips at 2^20, 3^12 and 100003, and threads against one thread.
//
// References are a direct DFT in long double (twiddles from long double cos/sin of an exactly
// reduced angle), never the engine's own output: every output up to n = 4099 in the length
// tests (1001 for the real transforms, 128 for the layouts), 64 sampled outputs beyond (0, 1,
// n/2, n - 1 and 60 random ones). The inputs are floats, so one reference serves both precisions.
//
// Error bound: ||got - ref||_2 / ||ref||_2 <= c * eps * log2(n) (log2 n at least 1), eps = 2^-24
// for float and 2^-53 for double, c = fft_bound_factor = 4 (float: 2.4e-7 log2 n; double:
// 4.4e-16 log2 n). A round trip (two transforms) gets twice that.
#include <doctest/doctest.h>

#include <lazytensor.hpp>
#if !LAZYTENSOR_ENGINE_DEFINITIONS  // built against lazytensor::runtime: the engine's FFT
#include <lazytensor/backend/host/fft.hpp>
#endif

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

namespace fft_engine = lazytensor::detail::host::fft;

/// The engine is the host's and does not depend on the test device: its cases run once, in the
/// host run with compiled loops (ctest runs each area on the host twice and on OpenCL).
bool fft_engine_elsewhere() {
    const char* devices = std::getenv("LAZYTENSOR_TEST_DEVICES");
    const char* loops = std::getenv("LAZYTENSOR_STATIC_KERNELS");
    const bool host = !devices || std::string(devices).find("host") != std::string::npos;
    return !host || (loops && std::string(loops) == "0");
}
using fft_index = std::int64_t;
using fft_lcomplex = std::complex<long double>;

constexpr double fft_bound_factor = 4.0;

template <class T>
double fft_bound(fft_index n, double transforms = 1) {
    const double eps = std::is_same_v<T, float> ? std::ldexp(1.0, -24) : std::ldexp(1.0, -53);
    return transforms * fft_bound_factor * eps * std::max(1.0, std::log2(double(n)));
}

/// exp(sign 2 pi i k/n) in long double, k reduced mod n exactly first.
fft_lcomplex fft_root(fft_index k, fft_index n, int sign) {
    k %= n;
    if (k < 0) k += n;
    const long double a = 2 * 3.14159265358979323846264338327950288L * static_cast<long double>(k) / n;
    return {std::cos(a), sign * std::sin(a)};
}

/// Random complex values whose parts are floats in [-1, 1] (exact in double too).
std::vector<std::complex<float>> fft_random_complex(fft_index n, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    std::vector<std::complex<float>> x(static_cast<std::size_t>(n));
    for (auto& v : x) v = {dist(gen), dist(gen)};
    return x;
}

std::vector<float> fft_random_real(fft_index n, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-1.f, 1.f);
    std::vector<float> x(static_cast<std::size_t>(n));
    for (auto& v : x) v = dist(gen);
    return x;
}

/// Output k of the direct DFT of x (length n), in long double, roots[j] = exp(sign 2 pi i j/n).
/// The root w^(jk) is read from the table every 256 terms and multiplied by w^k in between: a
/// table read per term misses the cache at long n (error of the products: ~256 * 2^-64).
template <class C>
fft_lcomplex fft_naive_one(const std::vector<C>& x, fft_index k, const std::vector<fft_lcomplex>& roots) {
    const fft_index n = static_cast<fft_index>(x.size());
    k %= n;
    const long double step_re = roots[static_cast<std::size_t>(k)].real(), step_im = roots[static_cast<std::size_t>(k)].imag();
    long double re = 0, im = 0, w_re = 1, w_im = 0;
    for (fft_index j = 0; j < n; ++j) {
        if (j % 256 == 0) {
            const fft_lcomplex w = roots[static_cast<std::size_t>((j * k) % n)];
            w_re = w.real(), w_im = w.imag();
        }
        const long double xr = x[static_cast<std::size_t>(j)].real(), xi = x[static_cast<std::size_t>(j)].imag();
        re += xr * w_re - xi * w_im;
        im += xr * w_im + xi * w_re;
        const long double next_re = w_re * step_re - w_im * step_im;
        w_im = w_re * step_im + w_im * step_re;
        w_re = next_re;
    }
    return {re, im};
}

std::vector<fft_lcomplex> fft_roots(fft_index n, int sign) {  // exp(sign 2 pi i k/n), k < n
    std::vector<fft_lcomplex> r(static_cast<std::size_t>(n));
    for (fft_index k = 0; k < n; ++k) r[static_cast<std::size_t>(k)] = fft_root(k, n, sign);
    return r;
}

/// The outputs a check looks at: all of them up to full_up_to, else 0, 1, n/2, n - 1 and 60
/// random ones.
std::vector<fft_index> fft_checked_outputs(fft_index n, unsigned seed, fft_index full_up_to = 4099) {
    std::vector<fft_index> ks;
    if (n <= full_up_to) {
        for (fft_index k = 0; k < n; ++k) ks.push_back(k);
        return ks;
    }
    ks = {0, 1, n / 2, n - 1};
    std::mt19937 gen(seed);
    std::uniform_int_distribution<fft_index> dist(0, n - 1);
    for (int i = 0; i < 60; ++i) ks.push_back(dist(gen));
    return ks;
}

/// The naive DFT at the checked outputs ks.
template <class C>
std::vector<fft_lcomplex> fft_naive_at(const std::vector<C>& x, const std::vector<fft_index>& ks, int sign) {
    const auto roots = fft_roots(static_cast<fft_index>(x.size()), sign);
    std::vector<fft_lcomplex> out;
    for (fft_index k : ks) out.push_back(fft_naive_one(x, k, roots));
    return out;
}

/// ||got - ref|| / ||ref|| over the checked outputs; with a sample, ||ref|| is the RMS of the
/// whole result (Parseval: ||X||^2 = n ||x||^2, from the input) times sqrt(samples).
template <class C, class Get>
double fft_rel_error(const std::vector<fft_lcomplex>& ref, const std::vector<fft_index>& ks, Get&& got,
                     long double ref_norm2_total, fft_index n) {
    long double err = 0, norm = 0;
    for (std::size_t i = 0; i < ks.size(); ++i) {
        const C g = got(ks[i]);
        const fft_lcomplex d = fft_lcomplex(g.real(), g.imag()) - ref[i];
        err += std::norm(d);
        norm += std::norm(ref[i]);
    }
    if (static_cast<fft_index>(ks.size()) != n) norm = ref_norm2_total / n * static_cast<long double>(ks.size());
    return norm == 0 ? double(std::sqrt(err)) : double(std::sqrt(err / norm));
}

template <class C>
long double fft_norm2(const std::vector<C>& x) {
    long double s = 0;
    for (const auto& v : x) s += std::norm(fft_lcomplex(v.real(), v.imag()));
    return s;
}

template <class T>
std::vector<std::complex<T>> fft_cast(const std::vector<std::complex<float>>& x) {
    std::vector<std::complex<T>> out;
    for (const auto& v : x) out.emplace_back(v.real(), v.imag());
    return out;
}

/// One contiguous transform of x against the reference at ks; returns the relative error.
template <class T>
double fft_c2c_error(const std::vector<std::complex<float>>& x, const std::vector<fft_index>& ks,
                     const std::vector<fft_lcomplex>& ref, fft_engine::Direction dir) {
    const fft_index n = static_cast<fft_index>(x.size());
    auto in = fft_cast<T>(x);
    std::vector<std::complex<T>> out(in.size(), std::complex<T>(NAN, NAN));
    fft_engine::c2c<T>(in.data(), 1, n, out.data(), 1, n, n, 1, dir, T(1), nullptr);
    return fft_rel_error<std::complex<T>>(ref, ks, [&](fft_index k) { return out[static_cast<std::size_t>(k)]; },
                                          fft_norm2(x) * n, n);
}

void fft_check_length(fft_index n) {
    CAPTURE(n);
    const auto x = fft_random_complex(n, static_cast<unsigned>(n));
    const auto ks = fft_checked_outputs(n, 7);
    for (auto dir : {fft_engine::Direction::forward, fft_engine::Direction::inverse}) {
        CAPTURE(dir == fft_engine::Direction::forward);
        const auto ref = fft_naive_at(x, ks, fft_engine::direction_sign(dir));
        CHECK(fft_c2c_error<float>(x, ks, ref, dir) <= fft_bound<float>(n));
        CHECK(fft_c2c_error<double>(x, ks, ref, dir) <= fft_bound<double>(n));
    }
}

}  // namespace

TEST_CASE("fft engine: the error measure sees a wrong result" * doctest::skip(fft_engine_elsewhere())) {
    // A bound that nothing could fail would prove nothing: one output off by 1e-5 of the
    // result's norm, a conjugated (wrong-direction) result, and a shift all fail it.
    const fft_index n = 64;
    const auto x = fft_random_complex(n, 1);
    const auto ks = fft_checked_outputs(n, 1);
    const auto ref = fft_naive_at(x, ks, -1);
    std::vector<std::complex<float>> out(static_cast<std::size_t>(n));
    fft_engine::c2c<float>(x.data(), 1, n, out.data(), 1, n, n, 1, fft_engine::Direction::forward, 1.f, nullptr);
    auto err = [&](const std::vector<std::complex<float>>& y) {
        return fft_rel_error<std::complex<float>>(ref, ks, [&](fft_index k) { return y[static_cast<std::size_t>(k)]; },
                                                  0, n);
    };
    CHECK(err(out) <= fft_bound<float>(n));
    auto bad = out;
    bad[5] += std::complex<float>(float(1e-5 * std::sqrt(double(fft_norm2(x) * n))), 0);
    CHECK(err(bad) > fft_bound<float>(n));
    std::vector<std::complex<float>> wrong_direction(static_cast<std::size_t>(n));
    fft_engine::c2c<float>(x.data(), 1, n, wrong_direction.data(), 1, n, n, 1, fft_engine::Direction::inverse, 1.f, nullptr);
    CHECK(err(wrong_direction) > 0.1);
    std::rotate(bad.begin(), bad.begin() + 1, bad.end());
    CHECK(err(bad) > 0.1);
}

TEST_CASE("fft engine: c2c of every length 1..64 against a direct DFT" * doctest::skip(fft_engine_elsewhere())) {
    for (fft_index n = 1; n <= 64; ++n) fft_check_length(n);
}

TEST_CASE("fft engine: c2c of selected lengths against a direct DFT" * doctest::skip(fft_engine_elsewhere())) {
    // Primes (Bluestein), powers of two (direct up to 4096, four-step beyond), mixed radices,
    // a product of two primes > 13 (Bluestein), a large prime factor (four-step over Bluestein).
    std::vector<fft_index> lengths = {97, 101, 1009, 4099, 2 * 3 * 5 * 7, 2 * 3 * 5 * 7 * 11, 2 * 3 * 5 * 7 * 11 * 13,
                                      1000, 1536, 4096 * 3, 17 * 19, 2 * 4099, 1024 * 17, 243, 625, 2401, 121, 169};
    for (fft_index n = 128; n <= (1 << 16); n *= 2) lengths.push_back(n);
    for (fft_index n : lengths) fft_check_length(n);
}

TEST_CASE("fft engine: strided, batched and in-place c2c with a scale" * doctest::skip(fft_engine_elsewhere())) {
    // Layouts: gaps between elements and transforms; transforms side by side (batch stride 1:
    // an axis that is not the last), with a partial lane group, close together or over 1 KiB
    // apart (strips); reversed elements; in place.
    struct Case {
        const char* name;
        fft_index in_stride, in_dist, out_stride, out_dist;
        bool in_place;
        bool reversed;
    };
    for (fft_index n : {1, 5, 12, 34, 64, 100, 323, 1000, 4099, 1 << 14}) {
        const fft_index count = 11;
        const Case cases[] = {
            {"gaps", 3, 3 * n + 1, 2, 2 * n + 5, false, false},
            {"side by side", count, 1, count, 1, false, false},
            {"side by side, in place", count, 1, count, 1, true, false},
            {"side by side, rows far apart (strips)", count + 200, 1, count + 130, 1, false, false},
            {"side by side, rows far apart, in place", count + 200, 1, count + 200, 1, true, false},
            {"rows in place", 1, n, 1, n, true, false},
            {"reversed elements", -1, n, 1, n, false, true},
        };
        for (const Case& c : cases) {
            CAPTURE(n);
            CAPTURE(c.name);
            const auto ks = fft_checked_outputs(n, 3, 128);
            const fft_index span_in = std::abs(c.in_stride) * (n - 1) + c.in_dist * (count - 1) + 1;
            const fft_index span_out = c.out_stride * (n - 1) + c.out_dist * (count - 1) + 1;
            const fft_index first = c.reversed ? n - 1 : 0;
            const auto data = fft_random_complex(span_in, static_cast<unsigned>(n + 17));
            for (auto dir : {fft_engine::Direction::forward, fft_engine::Direction::inverse}) {
                // The references, once for both precisions.
                std::vector<std::vector<fft_lcomplex>> refs;
                std::vector<long double> norms;
                // Beyond 128, transforms 0, 5 and 10 (the partial lane group's last) are checked.
                auto checked = [&](fft_index b) { return n <= 128 || b % 5 == 0; };
                for (fft_index b = 0; b < count; ++b) {
                    if (!checked(b)) {
                        refs.emplace_back();
                        norms.push_back(0);
                        continue;
                    }
                    std::vector<std::complex<float>> x;
                    for (fft_index j = 0; j < n; ++j)
                        x.push_back(data[static_cast<std::size_t>(first + b * c.in_dist + j * c.in_stride)]);
                    refs.push_back(fft_naive_at(x, ks, fft_engine::direction_sign(dir)));
                    norms.push_back(fft_norm2(x) * n);
                }
                auto run = [&](auto precision) {
                    using T = decltype(precision);
                    const T scale = T(1) / std::sqrt(T(n));  // "ortho"
                    auto in = fft_cast<T>(data);
                    std::vector<std::complex<T>> out_buffer(static_cast<std::size_t>(span_out), std::complex<T>(NAN, NAN));
                    std::complex<T>* out_ptr = c.in_place ? in.data() : out_buffer.data();
                    fft_engine::c2c<T>(in.data() + first, c.in_stride, c.in_dist, out_ptr, c.out_stride, c.out_dist, n, count, dir,
                                scale, nullptr);
                    for (fft_index b = 0; b < count; ++b) {
                        if (!checked(b)) continue;
                        auto ref = refs[static_cast<std::size_t>(b)];
                        for (auto& r : ref) r *= static_cast<long double>(scale);
                        const double e = fft_rel_error<std::complex<T>>(
                            ref, ks, [&](fft_index k) { return out_ptr[b * c.out_dist + k * c.out_stride]; },
                            norms[static_cast<std::size_t>(b)] * scale * scale, n);
                        CAPTURE(b);
                        CHECK(e <= fft_bound<T>(n));
                    }
                };
                run(float());
                run(double());
            }
        }
    }
}

namespace {

/// The reference irfft at outputs js: the Hermitian extension of X (imaginary parts of X_0, and of X_(n/2)
/// for even n, dropped as NumPy does), inverse DFT, real parts; in long double.
std::vector<long double> fft_naive_irfft(const std::vector<std::complex<float>>& half, fft_index n,
                                         const std::vector<fft_index>& js) {
    std::vector<fft_lcomplex> full(static_cast<std::size_t>(n));
    for (fft_index k = 0; k <= n / 2; ++k) {
        fft_lcomplex v(half[static_cast<std::size_t>(k)].real(), half[static_cast<std::size_t>(k)].imag());
        if (k == 0 || 2 * k == n) v = v.real();
        full[static_cast<std::size_t>(k)] = v;
        if (k > 0) full[static_cast<std::size_t>(n - k)] = std::conj(v);
    }
    const auto roots = fft_roots(n, 1);
    std::vector<long double> out;
    for (fft_index j : js) out.push_back(fft_naive_one(full, j, roots).real());
    return out;
}

template <class T>
void fft_check_real(fft_index n, fft_index count) {
    CAPTURE(n);
    const fft_index h = n / 2 + 1;
    // r2c: real rows with a gap (stride 1, dist n + 3) and with stride 2, into rows of h + 1.
    for (fft_index in_stride : {1, 2}) {
        CAPTURE(in_stride);
        const fft_index in_dist = in_stride * n + 3;
        const auto data = fft_random_real(in_dist * count, static_cast<unsigned>(n));
        std::vector<T> in(data.begin(), data.end());
        std::vector<std::complex<T>> out(static_cast<std::size_t>((h + 1) * count), std::complex<T>(NAN, NAN));
        const T scale = T(0.5);
        fft_engine::r2c<T>(in.data(), in_stride, in_dist, out.data(), 1, h + 1, n, count, scale, nullptr);
        for (fft_index b = 0; b < count; ++b) {
            std::vector<std::complex<float>> x;
            for (fft_index j = 0; j < n; ++j) x.emplace_back(data[static_cast<std::size_t>(b * in_dist + j * in_stride)], 0.f);
            std::vector<fft_index> ks;
            if (n <= 1001)
                for (fft_index k = 0; k < h; ++k) ks.push_back(k);
            else
                for (fft_index k : fft_checked_outputs(n, 5, 1001)) ks.push_back(std::min(k, n - k));
            auto ref = fft_naive_at(x, ks, -1);
            for (auto& r : ref) r *= 0.5L;
            // Over the half spectrum, ||ref||^2 is about half of the full one's.
            const double e = fft_rel_error<std::complex<T>>(
                ref, ks, [&](fft_index k) { return out[static_cast<std::size_t>(b * (h + 1) + k)]; },
                fft_norm2(x) * n * 0.25L * h / n, n <= 1001 ? static_cast<fft_index>(ks.size()) : h);
            CAPTURE(b);
            CHECK(e <= fft_bound<T>(n));
            // The row's padding element is left alone.
            CHECK(std::isnan(out[static_cast<std::size_t>(b * (h + 1) + h)].real()));
        }
    }
    // c2r: spectra whose X_0 (and X_(n/2)) have imaginary parts that must be ignored, read with
    // stride 1 and 2, written to rows with a gap and with stride 3.
    for (fft_index out_stride : {1, 3}) {
        CAPTURE(out_stride);
        const fft_index in_stride = out_stride == 1 ? 1 : 2;
        const fft_index in_dist = in_stride * h + 1;
        const auto data = fft_random_complex(in_dist * count, static_cast<unsigned>(n + 1));
        auto in = fft_cast<T>(data);
        const fft_index out_dist = out_stride * n + 2;
        std::vector<T> out(static_cast<std::size_t>(out_dist * count), T(NAN));
        const T scale = T(1) / T(n);
        fft_engine::c2r<T>(in.data(), in_stride, in_dist, out.data(), out_stride, out_dist, n, count, scale, nullptr);
        for (fft_index b = 0; b < count; ++b) {
            std::vector<std::complex<float>> half;
            for (fft_index k = 0; k < h; ++k) half.push_back(data[static_cast<std::size_t>(b * in_dist + k * in_stride)]);
            // All outputs up to 1001, a sample beyond (each output of the direct irfft is O(n)).
            const auto js = fft_checked_outputs(n, 9, 1001);
            const auto ref = fft_naive_irfft(half, n, js);
            long double err = 0, norm = 0;
            for (std::size_t i = 0; i < js.size(); ++i) {
                const long double r = ref[i] / n;
                err += std::pow(out[static_cast<std::size_t>(b * out_dist + js[i] * out_stride)] - r, 2);
                norm += r * r;
            }
            CAPTURE(b);
            CHECK(double(std::sqrt(err / norm)) <= fft_bound<T>(n));
            if (out_stride == 3) CHECK(std::isnan(out[static_cast<std::size_t>(b * out_dist + 1)]));
        }
    }
}

}  // namespace

TEST_CASE("fft engine: r2c and c2r of every length 1..64 and selected ones, even and odd" * doctest::skip(fft_engine_elsewhere())) {
    for (fft_index n = 1; n <= 64; ++n) {
        fft_check_real<float>(n, 3);
        fft_check_real<double>(n, 3);
    }
    for (fft_index n : {100, 101, 1000, 1001, 1024, 4096, 4099, 4098, 12288, 1 << 16}) {
        fft_check_real<float>(n, n <= 4099 ? 9 : 3);
        fft_check_real<double>(n, 2);
    }
    // Enough rows that they are transformed and (un)packed a chunk at a time, the last one short.
    for (fft_index n : {8, 64, 256}) {
        fft_check_real<float>(n, 37);
        fft_check_real<double>(n, 37);
    }
}

namespace {

struct fft_round_trip_reference {
    std::vector<std::complex<float>> x;
    std::vector<fft_index> ks;
    std::vector<fft_lcomplex> spectrum;  // the direct DFT of x at ks
    std::vector<float> real;
};

template <class T>
void fft_round_trip(const fft_round_trip_reference& ref) {
    const auto& x = ref.x;
    const fft_index n = static_cast<fft_index>(x.size());
    CAPTURE(n);
    auto in = fft_cast<T>(x);
    std::vector<std::complex<T>> spectrum(in.size()), back(in.size());
    fft_engine::c2c<T>(in.data(), 1, n, spectrum.data(), 1, n, n, 1, fft_engine::Direction::forward, T(1), nullptr);
    // The forward result against a direct DFT at a sample of outputs.
    CHECK(fft_rel_error<std::complex<T>>(ref.spectrum, ref.ks,
                                         [&](fft_index k) { return spectrum[static_cast<std::size_t>(k)]; },
                                         fft_norm2(x) * n, n) <= fft_bound<T>(n));
    fft_engine::c2c<T>(spectrum.data(), 1, n, back.data(), 1, n, n, 1, fft_engine::Direction::inverse, T(1) / T(n), nullptr);
    long double err = 0;
    for (fft_index j = 0; j < n; ++j)
        err += std::norm(fft_lcomplex(back[static_cast<std::size_t>(j)].real() - x[static_cast<std::size_t>(j)].real(),
                                      back[static_cast<std::size_t>(j)].imag() - x[static_cast<std::size_t>(j)].imag()));
    CHECK(double(std::sqrt(err / fft_norm2(x))) <= fft_bound<T>(n, 2));
    // Real round trip: r2c, then c2r with 1/n.
    const auto& r = ref.real;
    std::vector<T> real_in(r.begin(), r.end()), real_back(r.size());
    std::vector<std::complex<T>> half(static_cast<std::size_t>(n / 2 + 1));
    fft_engine::r2c<T>(real_in.data(), 1, n, half.data(), 1, n / 2 + 1, n, 1, T(1), nullptr);
    fft_engine::c2r<T>(half.data(), 1, n / 2 + 1, real_back.data(), 1, n, n, 1, T(1) / T(n), nullptr);
    long double rerr = 0, rnorm = 0;
    for (fft_index j = 0; j < n; ++j) {
        rerr += std::pow(static_cast<long double>(real_back[static_cast<std::size_t>(j)]) - r[static_cast<std::size_t>(j)], 2);
        rnorm += std::pow(static_cast<long double>(r[static_cast<std::size_t>(j)]), 2);
    }
    CHECK(double(std::sqrt(rerr / rnorm)) <= fft_bound<T>(n, 2));
}

}  // namespace

TEST_CASE("fft engine: round trips at 2^20, 3^12 and the prime 100003" * doctest::skip(fft_engine_elsewhere())) {
    for (fft_index n : {fft_index(1) << 20, fft_index(531441), fft_index(100003)}) {
        fft_round_trip_reference ref;
        ref.x = fft_random_complex(n, 11);
        ref.ks = fft_checked_outputs(n, 13);
        ref.spectrum = fft_naive_at(ref.x, ref.ks, -1);
        ref.real = fft_random_real(n, 12);
        fft_round_trip<float>(ref);
        fft_round_trip<double>(ref);
    }
}

namespace {

/// The direct DFT of a dense row-major long double array along one axis, in place.
void fft_naive_along(std::vector<fft_lcomplex>& a, const std::vector<fft_index>& shape, int axis, int sign) {
    fft_index inner = 1, outer = 1;
    for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
    for (int d = 0; d < axis; ++d) outer *= shape[static_cast<std::size_t>(d)];
    const fft_index n = shape[static_cast<std::size_t>(axis)];
    const auto roots = fft_roots(n, sign);
    for (fft_index o = 0; o < outer; ++o)
        for (fft_index i = 0; i < inner; ++i) {
            std::vector<fft_lcomplex> line;
            for (fft_index j = 0; j < n; ++j) line.push_back(a[static_cast<std::size_t>((o * n + j) * inner + i)]);
            for (fft_index k = 0; k < n; ++k)
                a[static_cast<std::size_t>((o * n + k) * inner + i)] = fft_naive_one(line, k, roots);
        }
}

fft_engine::Layout fft_dense(const std::vector<fft_index>& shape) {
    fft_engine::Layout l{shape, std::vector<fft_index>(shape.size())};
    fft_index s = 1;
    for (std::size_t d = shape.size(); d-- > 0;) l.strides[d] = s, s *= shape[d];
    return l;
}

}  // namespace

TEST_CASE("fft engine: fftn, rfftn and irfftn along several axes" * doctest::skip(fft_engine_elsewhere())) {
    // The last axis is long enough that the others' rows lie over 1 KiB apart: they run in strips.
    const std::vector<fft_index> shape = {6, 10, 260};
    const fft_index total = 6 * 10 * 260;
    for (const std::vector<int>& axes : {std::vector<int>{0, 1, 2}, std::vector<int>{0, 2}, std::vector<int>{2, 1},
                                         std::vector<int>{1}}) {
        CAPTURE(axes.size());
        CAPTURE(axes.back());
        // fftn of a complex array against the direct DFT along each axis.
        const auto x = fft_random_complex(total, 21);
        std::vector<fft_lcomplex> ref;
        for (const auto& v : x) ref.emplace_back(v.real(), v.imag());
        for (int a : axes) fft_naive_along(ref, shape, a, -1);
        std::vector<std::complex<double>> out(static_cast<std::size_t>(total));
        const auto in = fft_cast<double>(x);
        fft_engine::c2c_axes<double>(in.data(), fft_dense(shape), out.data(), fft_dense(shape), axes, fft_engine::Direction::forward, 1.0,
                              nullptr);
        std::vector<fft_index> all(static_cast<std::size_t>(total));
        for (fft_index i = 0; i < total; ++i) all[static_cast<std::size_t>(i)] = i;
        fft_index len = 1;
        for (int a : axes) len *= shape[static_cast<std::size_t>(a)];
        CHECK(fft_rel_error<std::complex<double>>(ref, all, [&](fft_index i) { return out[static_cast<std::size_t>(i)]; }, 0,
                                                  total) <= fft_bound<double>(len));
        // rfftn of a real array: r2c along axes.back(), the rest complex.
        const auto r = fft_random_real(total, 22);
        std::vector<fft_lcomplex> rref(r.begin(), r.end());
        for (auto it = axes.rbegin(); it != axes.rend(); ++it) fft_naive_along(rref, shape, *it, -1);
        auto half_shape = shape;
        const auto last = static_cast<std::size_t>(axes.back());
        half_shape[last] = shape[last] / 2 + 1;
        const fft_engine::Layout half_layout = fft_dense(half_shape);
        fft_index half_total = 1;
        for (fft_index e : half_shape) half_total *= e;
        std::vector<std::complex<float>> spectrum(static_cast<std::size_t>(half_total));
        fft_engine::r2c_axes<float>(r.data(), fft_dense(shape), spectrum.data(), half_layout, axes, 1.f, nullptr);
        long double err = 0, norm = 0;
        for (fft_index i = 0; i < half_total; ++i) {
            // The full-shape index of half-shape element i.
            fft_index rem = i, full = 0;
            for (std::size_t d = 0; d < shape.size(); ++d) {
                const fft_index idx = rem / half_layout.strides[d];
                rem %= half_layout.strides[d];
                full = full * shape[d] + idx;
            }
            const auto g = spectrum[static_cast<std::size_t>(i)];
            err += std::norm(fft_lcomplex(g.real(), g.imag()) - rref[static_cast<std::size_t>(full)]);
            norm += std::norm(rref[static_cast<std::size_t>(full)]);
        }
        CHECK(double(std::sqrt(err / norm)) <= fft_bound<float>(len));
        // irfftn back, with 1/len: the real array again.
        std::vector<float> back(static_cast<std::size_t>(total), NAN);
        fft_engine::c2r_axes<float>(spectrum.data(), half_layout, back.data(), fft_dense(shape), axes, 1.f / float(len), nullptr);
        long double berr = 0, bnorm = 0;
        for (fft_index i = 0; i < total; ++i) {
            berr += std::pow(static_cast<long double>(back[static_cast<std::size_t>(i)]) - r[static_cast<std::size_t>(i)], 2);
            bnorm += std::pow(static_cast<long double>(r[static_cast<std::size_t>(i)]), 2);
        }
        CHECK(double(std::sqrt(berr / bnorm)) <= fft_bound<float>(len, 2));
    }
}

TEST_CASE("fft engine: two threads give bit-identical results to one" * doctest::skip(fft_engine_elsewhere())) {
    // Threads take whole lane groups, rows or transforms; each is computed the same way on any
    // thread, so the results are the same bits.
    lazytensor::detail::host::ThreadPool pool(2);
    auto same = [](const auto& a, const auto& b) {
        return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(a[0])) == 0;
    };
    struct Shape {
        fft_index n, count;
    };
    for (Shape s : {Shape{1 << 20, 1}, Shape{1024, 64}, Shape{4099, 9}, Shape{531441, 1}, Shape{100003, 1}}) {
        CAPTURE(s.n);
        const auto x = fft_random_complex(s.n * s.count, 31);
        std::vector<std::complex<float>> one(x.size()), two(x.size());
        fft_engine::c2c<float>(x.data(), 1, s.n, one.data(), 1, s.n, s.n, s.count, fft_engine::Direction::forward, 1.f, nullptr);
        fft_engine::c2c<float>(x.data(), 1, s.n, two.data(), 1, s.n, s.n, s.count, fft_engine::Direction::forward, 1.f, &pool);
        CHECK(same(one, two));
    }
    // rfft2 of 512 x 512 and its inverse.
    const auto r = fft_random_real(512 * 512, 32);
    const fft_engine::Layout real_layout = fft_dense({512, 512}), half_layout = fft_dense({512, 257});
    std::vector<std::complex<float>> one(512 * 257), two(512 * 257);
    fft_engine::r2c_axes<float>(r.data(), real_layout, one.data(), half_layout, {0, 1}, 1.f, nullptr);
    fft_engine::r2c_axes<float>(r.data(), real_layout, two.data(), half_layout, {0, 1}, 1.f, &pool);
    CHECK(same(one, two));
    std::vector<float> back_one(r.size()), back_two(r.size());
    fft_engine::c2r_axes<float>(one.data(), half_layout, back_one.data(), real_layout, {0, 1}, 1.f, nullptr);
    fft_engine::c2r_axes<float>(one.data(), half_layout, back_two.data(), real_layout, {0, 1}, 1.f, &pool);
    CHECK(same(back_one, back_two));
}

TEST_CASE("fft engine: a length below 1 is a ValueError" * doctest::skip(fft_engine_elsewhere())) {
    CHECK_THROWS_AS(fft_engine::plan_c2c<float>(0, fft_engine::Direction::forward), lazytensor::ValueError);
    CHECK_THROWS_AS(fft_engine::plan_real<double>(-4, fft_engine::Direction::inverse), lazytensor::ValueError);
}
