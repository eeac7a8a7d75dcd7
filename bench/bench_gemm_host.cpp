// SPDX-License-Identifier: MIT
// The host backend's packed GEMM (host::gemm, and lt::matmul through the public API) vs
// OpenBLAS's cblas_?gemm, same data, same process, same thread count. Prints GFLOP/s of each and
// the ratio lt::matmul / OpenBLAS (above 1: lazytensor is faster), and the largest difference
// between the results relative to the largest value of OpenBLAS's.
//
// Each library runs its repetitions in a block of its own, after a pause: OpenBLAS's idle
// workers keep spinning for 2^28 cycles (0.13 s at 2 GHz) after each call, and would take a core
// from the next runs of ours. The time is the best of `--reps` runs in each of `--rounds` rounds
// (the machine may be shared).
//
//   bench_gemm_host [--sizes 256,512,...] [--reps N] [--rounds N] [--threads N] [--quick]
#include <cblas.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <lazytensor.hpp>
#if !LAZYTENSOR_ENGINE_DEFINITIONS  // built against lazytensor::runtime: the internals used here
#include <lazytensor/backend/host/gemm.hpp>
#endif
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace lt = lazytensor;
namespace host = lazytensor::detail::host;
namespace ir = lazytensor::detail::ir;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    std::vector<std::int64_t> sizes{256, 512, 1024, 2048};
    int reps = 5;
    int rounds = 3;
    int threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
};

/// One product: C (m x n) = op(A) x op(B), batched over `batches` independent matrices.
struct Case {
    std::string name;
    std::int64_t m, n, k;
    bool a_col_major = false, b_col_major = false;
    std::int64_t batches = 1;
};

double best_seconds(int reps, const std::function<void()>& f) {
    double best = 1e300;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = Clock::now();
        f();
        best = std::min(best, std::chrono::duration<double>(Clock::now() - t0).count());
    }
    return best;
}

template <class T>
std::vector<T> random_vector(std::size_t n, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<T> dist(T(-1), T(1));
    std::vector<T> v(n);
    for (auto& x : v) x = dist(gen);
    return v;
}

template <class T>
double max_rel_diff(const std::vector<T>& ours, const std::vector<T>& ref) {
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < ref.size(); ++i) {
        worst = std::max(worst, std::fabs(double(ours[i]) - double(ref[i])));
        scale = std::max(scale, std::fabs(double(ref[i])));
    }
    return worst / std::max(scale, 1e-300);
}

template <class T>
void blas_gemm(const Case& c, const T* a, const T* b, T* out) {
    const auto ta = c.a_col_major ? CblasTrans : CblasNoTrans, tb = c.b_col_major ? CblasTrans : CblasNoTrans;
    // A col-major is stored as its transpose (k x m, row-major); likewise B.
    const int lda = int(c.a_col_major ? c.m : c.k), ldb = int(c.b_col_major ? c.k : c.n);
    for (std::int64_t i = 0; i < c.batches; ++i) {
        const T* ai = a + i * c.m * c.k;
        const T* bi = b + i * c.k * c.n;
        T* ci = out + i * c.m * c.n;
        if constexpr (std::is_same_v<T, float>)
            cblas_sgemm(CblasRowMajor, ta, tb, int(c.m), int(c.n), int(c.k), 1.0f, ai, lda, bi, ldb, 0.0f, ci, int(c.n));
        else
            cblas_dgemm(CblasRowMajor, ta, tb, int(c.m), int(c.n), int(c.k), 1.0, ai, lda, bi, ldb, 0.0, ci, int(c.n));
    }
}

template <class T>
void run_case(const Case& c, const Options& opt, host::ThreadPool& pool) {
    const auto va = random_vector<T>(std::size_t(c.batches * c.m * c.k), 1);
    const auto vb = random_vector<T>(std::size_t(c.batches * c.k * c.n), 2);
    std::vector<T> ours(std::size_t(c.batches * c.m * c.n)), ref(ours.size());

    ir::Gemm g;
    g.dtype = std::is_same_v<T, float> ? lt::DType::Float32 : lt::DType::Float64;
    g.m = c.m, g.n = c.n, g.k = c.k;
    if (c.batches > 1) {
        g.batch = lt::Shape{c.batches};
        g.a.batch_strides = lt::Strides{c.m * c.k};
        g.b.batch_strides = lt::Strides{c.k * c.n};
    }
    g.a.row_stride = c.a_col_major ? 1 : c.k;
    g.a.col_stride = c.a_col_major ? c.m : 1;
    g.b.row_stride = c.b_col_major ? 1 : c.n;
    g.b.col_stride = c.b_col_major ? c.k : 1;

    // The same product through the public API: tensors on the host (stored as the case says,
    // col-major ones as a transposed view), realized through the scheduler and the backend.
    const lt::Shape a_shape = c.a_col_major ? lt::Shape{c.batches, c.k, c.m} : lt::Shape{c.batches, c.m, c.k};
    const lt::Shape b_shape = c.b_col_major ? lt::Shape{c.batches, c.n, c.k} : lt::Shape{c.batches, c.k, c.n};
    lt::Tensor<T> ta = lt::tensor<T>(va, a_shape, lt::Device::host()), tb = lt::tensor<T>(vb, b_shape, lt::Device::host());
    if (c.a_col_major) ta = ta.mT();
    if (c.b_col_major) tb = tb.mT();
    lt::Tensor<T> product;

    const auto run_ours = [&] { host::gemm<T>(g, va.data(), vb.data(), ours.data(), pool); };
    const auto run_lt = [&] { product = lt::matmul(ta, tb).realize(); };
    const auto run_blas = [&] { blas_gemm<T>(c, va.data(), vb.data(), ref.data()); };
    run_ours();  // warm-up: page faults, packing buffers
    run_lt();
    run_blas();
    double t_ours = 1e300, t_lt = 1e300, t_blas = 1e300;
    const auto pause = std::chrono::milliseconds(300);
    for (int round = 0; round < opt.rounds; ++round) {
        std::this_thread::sleep_for(pause);
        t_ours = std::min(t_ours, best_seconds(opt.reps, run_ours));
        std::this_thread::sleep_for(pause);  // the bench's own pool's workers go to sleep
        t_lt = std::min(t_lt, best_seconds(opt.reps, run_lt));
        std::this_thread::sleep_for(pause);
        t_blas = std::min(t_blas, best_seconds(opt.reps, run_blas));
    }
    const double flops = 2.0 * double(c.batches) * double(c.m) * double(c.n) * double(c.k);
    const double g_ours = flops / t_ours * 1e-9, g_lt = flops / t_lt * 1e-9, g_blas = flops / t_blas * 1e-9;
    const std::vector<T> through_api = product.to_vector();
    std::printf("%-7s %-34s %9.1f %9.1f %9.1f %7.2fx   %.1e %.1e\n", std::is_same_v<T, float> ? "float" : "double",
                c.name.c_str(), g_ours, g_lt, g_blas, g_lt / g_blas, max_rel_diff(ours, ref),
                max_rel_diff(through_api, ref));
    std::fflush(stdout);
}

std::vector<std::int64_t> parse_list(const char* s) {
    std::vector<std::int64_t> out;
    for (const char* p = s; *p;) {
        char* end = nullptr;
        out.push_back(std::strtoll(p, &end, 10));
        p = *end == ',' ? end + 1 : end;
        if (end == p && *p) break;
    }
    return out;
}

std::string shape_name(std::int64_t m, std::int64_t n, std::int64_t k) {
    return std::to_string(m) + "x" + std::to_string(n) + "x" + std::to_string(k);
}

}  // namespace

int main(int argc, char** argv) {
    Options opt;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const bool has_value = i + 1 < argc;
        if (arg == "--sizes" && has_value)
            opt.sizes = parse_list(argv[++i]);
        else if (arg == "--reps" && has_value)
            opt.reps = std::max(1, std::atoi(argv[++i]));
        else if (arg == "--rounds" && has_value)
            opt.rounds = std::max(1, std::atoi(argv[++i]));
        else if (arg == "--threads" && has_value)
            opt.threads = std::max(1, std::atoi(argv[++i]));
        else if (arg == "--quick")
            opt.sizes = {256, 512}, opt.reps = 3, opt.rounds = 1;
        else {
            std::fprintf(stderr, "usage: %s [--sizes 256,512,...] [--reps N] [--rounds N] [--threads N] [--quick]\n", argv[0]);
            return 2;
        }
    }
    host::ThreadPool pool(opt.threads);
    openblas_set_num_threads(opt.threads);
    std::printf("host::gemm (%s, %d threads) vs OpenBLAS %s (%d threads, core %s)\n", xsimd::default_arch::name(),
                pool.size(), openblas_get_config(), openblas_get_num_threads(), openblas_get_corename());
    std::printf("best of %d reps x %d rounds; GFLOP/s = 2mnk / time; m x n x k\n", opt.reps, opt.rounds);
    std::printf("lt::matmul: the same product through the public API (realize: schedule, allocate, backend);\n"
                "ratio: lt::matmul / OpenBLAS (issue 3's target: >= 0.8x for float, square 256..2048)\n");
    std::printf("%-7s %-34s %9s %9s %9s %8s   %s\n", "dtype", "case", "host::gemm", "lt::matmul", "openblas", "ratio",
                "max rel diff (gemm, matmul)");

    std::vector<Case> square, other;
    for (const std::int64_t s : opt.sizes) square.push_back({"square " + shape_name(s, s, s), s, s, s});
    const std::int64_t t = opt.sizes.empty() ? 1024 : std::min<std::int64_t>(1024, opt.sizes.back());
    other.push_back({"A col-major " + shape_name(t, t, t), t, t, t, true, false});
    other.push_back({"B col-major " + shape_name(t, t, t), t, t, t, false, true});
    other.push_back({"A, B col-major " + shape_name(t, t, t), t, t, t, true, true});
    other.push_back({"odd " + shape_name(1000, 1000, 1000), 1000, 1000, 1000});
    other.push_back({"tall " + shape_name(4096, 256, 512), 4096, 256, 512});
    other.push_back({"wide " + shape_name(256, 4096, 512), 256, 4096, 512});
    other.push_back({"small k " + shape_name(2048, 2048, 64), 2048, 2048, 64});
    other.push_back({"batched 256 x " + shape_name(64, 64, 64), 64, 64, 64, false, false, 256});
    other.push_back({"batched 4096 x " + shape_name(16, 16, 16), 16, 16, 16, false, false, 4096});

    for (const auto& c : square) run_case<float>(c, opt, pool);
    for (const auto& c : square) run_case<double>(c, opt, pool);
    for (const auto& c : other) run_case<float>(c, opt, pool);
    for (const auto& c : other) run_case<double>(c, opt, pool);
}
