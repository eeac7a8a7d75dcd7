// SPDX-License-Identifier: MIT
// Host backend vs Eigen, same data, same process. Prints times and ratios (Eigen time divided
// by lazytensor time: above 1 means lazytensor is faster). Eigen runs single-threaded (its
// element-wise and reduction code does not use threads); lazytensor uses all cores unless
// LAZYTENSOR_THREADS says otherwise. Timings: best of several runs, after a warm-up.
//
//   bench_host [--quick]
#include <Eigen/Dense>
#include <unsupported/Eigen/SpecialFunctions>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <lazytensor.hpp>
#include <random>
#include <string>
#include <vector>

namespace lt = lazytensor;
using Clock = std::chrono::steady_clock;

namespace {

double best_ms(int reps, const std::function<void()>& f) {
    f();  // warm-up (and, for lazytensor, the first compile)
    double best = 1e300;
    for (int r = 0; r < reps; ++r) {
        const auto t0 = Clock::now();
        f();
        best = std::min(best, std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    return best;
}

std::vector<float> random_vector(std::size_t n, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> dist(-2.0f, 2.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = dist(gen);
    return v;
}

// Largest difference from Eigen's result, relative to the largest value of that result.
double max_rel_diff(const float* a, const float* b, std::size_t n) {
    double worst = 0, scale = 0;
    for (std::size_t i = 0; i < n; ++i) {
        worst = std::max(worst, std::fabs(double(a[i]) - double(b[i])));
        scale = std::max(scale, std::fabs(double(b[i])));
    }
    return worst / std::max(scale, 1e-30);
}

void report(const char* name, double eigen_ms, double lt_ms, double target, double diff) {
    const double ratio = eigen_ms / lt_ms;
    std::printf("%-44s %10.3f %12.3f %8.2fx   >= %.1fx %s   (max diff %.1e)\n", name, eigen_ms, lt_ms, ratio, target,
                ratio >= target ? "ok  " : "MISS", diff);
}

}  // namespace

int main(int argc, char** argv) {
    const bool quick = argc > 1 && std::strcmp(argv[1], "--quick") == 0;
    const int reps = quick ? 3 : 10;
    std::printf("lazytensor host backend vs Eigen %d.%d.%d; %s; %s\n", EIGEN_WORLD_VERSION, EIGEN_MAJOR_VERSION,
                EIGEN_MINOR_VERSION, lt::devices()[0].name.c_str(), quick ? "quick" : "full");
    std::printf("%-44s %10s %12s %9s   %s\n", "benchmark", "eigen ms", "lazytensor ms", "ratio", "target");

    {  // y = exp(a)*b + c*0.5 - tanh(a) over 2^24 floats
        const std::size_t n = std::size_t(1) << 24;
        std::vector<float> va = random_vector(n, 1), vb = random_vector(n, 2), vc = random_vector(n, 3), ve(n);
        Eigen::Map<Eigen::ArrayXf> A(va.data(), n), B(vb.data(), n), C(vc.data(), n), Y(ve.data(), n);
        const double eigen = best_ms(reps, [&] { Y = A.exp() * B + C * 0.5f - A.tanh(); });
        lt::Tensor<float> a = lt::tensor<float>(va, {int64_t(n)}), b = lt::tensor<float>(vb, {int64_t(n)}),
                          c = lt::tensor<float>(vc, {int64_t(n)});
        lt::Tensor<float> y;
        const double ours = best_ms(reps, [&] { y = (lt::exp(a) * b + c * 0.5f - lt::tanh(a)).realize(); });
        report("chain exp(a)*b+c*0.5-tanh(a), 2^24", eigen, ours, 1.0, max_rel_diff(y.to_vector().data(), ve.data(), n));
    }

    {  // the composites (issue 53): sigmoid, silu, gelu of 2^22 floats; Eigen's own functors
        const std::size_t n = std::size_t(1) << 22;
        std::vector<float> va = random_vector(n, 7), ve(n);
        Eigen::Map<Eigen::ArrayXf> A(va.data(), n), Y(ve.data(), n);
        lt::Tensor<float> a = lt::tensor<float>(va, {int64_t(n)}), y;
        const double e_sigmoid = best_ms(reps, [&] { Y = A.logistic(); });
        const double l_sigmoid = best_ms(reps, [&] { y = lt::Tensor<float>(lt::sigmoid(a)).realize(); });
        report("sigmoid, 2^22", e_sigmoid, l_sigmoid, 1.0, max_rel_diff(y.to_vector().data(), ve.data(), n));
        const double e_silu = best_ms(reps, [&] { Y = A * A.logistic(); });
        const double l_silu = best_ms(reps, [&] { y = lt::Tensor<float>(lt::silu(a)).realize(); });
        report("silu, 2^22", e_silu, l_silu, 1.0, max_rel_diff(y.to_vector().data(), ve.data(), n));
        const double e_gelu = best_ms(reps, [&] { Y = 0.5f * A * (1.0f + (A * 0.70710678f).erf()); });
        const double l_gelu = best_ms(reps, [&] { y = lt::Tensor<float>(lt::gelu(a)).realize(); });
        report("gelu, 2^22", e_gelu, l_gelu, 1.0, max_rel_diff(y.to_vector().data(), ve.data(), n));
    }

    const int64_t rows = 4096, cols = 4096;
    using RowMajor = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
    std::vector<float> vm = random_vector(std::size_t(rows * cols), 4);
    Eigen::Map<RowMajor> M(vm.data(), rows, cols);
    lt::Tensor<float> m = lt::tensor<float>(vm, {rows, cols});
    {
        Eigen::VectorXf out(rows);
        const double eigen = best_ms(reps, [&] { out = M.rowwise().sum(); });
        lt::Tensor<float> s;
        const double ours = best_ms(reps, [&] { s = m.sum(1).realize(); });
        report("row sum 4096x4096", eigen, ours, 0.9, max_rel_diff(s.to_vector().data(), out.data(), std::size_t(rows)));
    }
    {
        Eigen::RowVectorXf out(cols);
        const double eigen = best_ms(reps, [&] { out = M.colwise().sum(); });
        lt::Tensor<float> s;
        const double ours = best_ms(reps, [&] { s = m.sum(0).realize(); });
        report("column sum 4096x4096", eigen, ours, 1.0, max_rel_diff(s.to_vector().data(), out.data(), std::size_t(cols)));
    }
    {
        // Eigen's fastest form: one pass per row (max, exp, sum, scale).
        RowMajor out(rows, cols);
        const double eigen = best_ms(reps, [&] {
            for (int64_t r = 0; r < rows; ++r) {
                const float mx = M.row(r).maxCoeff();
                out.row(r) = (M.row(r).array() - mx).exp();
                out.row(r) /= out.row(r).sum();
            }
        });
        lt::Tensor<float> sm;
        const double ours = best_ms(reps, [&] {
            lt::Tensor<float> e = lt::exp(m - m.max(1, true));
            sm = (e / e.sum(1, true)).realize();
        });
        report("row softmax 4096x4096 (primitives)", eigen, ours, 1.0,
               max_rel_diff(sm.to_vector().data(), out.data(), std::size_t(rows * cols)));
    }
    {
        // A scan along rows against a copy of the same data (issue 18: at most 1.5 times a copy).
        RowMajor copy(rows, cols);
        const double copy_ms = best_ms(reps, [&] { copy = M; });
        std::vector<float> want(vm.size());
        for (int64_t r = 0; r < rows; ++r) {
            float acc = 0;
            for (int64_t c = 0; c < cols; ++c) want[std::size_t(r * cols + c)] = acc += vm[std::size_t(r * cols + c)];
        }
        lt::Tensor<float> s;
        const double ours = best_ms(reps, [&] { s = m.cumsum(1).realize(); });
        report("cumsum along rows 4096x4096 (peer: a copy)", copy_ms, ours, 1 / 1.5,
               max_rel_diff(s.to_vector().data(), want.data(), want.size()));
    }
    {
        Eigen::VectorXf out(rows);
        const double eigen = best_ms(reps, [&] { out = M.rowwise().maxCoeff(); });
        lt::Tensor<float> s;
        const double ours = best_ms(reps, [&] { s = m.max(1).realize(); });
        report("row max 4096x4096", eigen, ours, 1.0, max_rel_diff(s.to_vector().data(), out.data(), std::size_t(rows)));
    }
    {
        // Eigen's per-row maxCoeff(&index) (the first maximum, as lazytensor's and PyTorch's).
        std::vector<float> out(static_cast<std::size_t>(rows));
        const double eigen = best_ms(reps, [&] {
            for (int64_t r = 0; r < rows; ++r) {
                Eigen::Index at = 0;
                M.row(r).maxCoeff(&at);
                out[static_cast<std::size_t>(r)] = static_cast<float>(at);
            }
        });
        lt::Tensor<std::int64_t> s;
        const double ours = best_ms(reps, [&] { s = m.argmax(1).realize(); });
        std::vector<float> got;
        for (std::int64_t v : s.to_vector()) got.push_back(static_cast<float>(v));
        report("argmax along rows 4096x4096", eigen, ours, 1.0, max_rel_diff(got.data(), out.data(), out.size()));
    }
    {
        // layer_norm over rows (biased variance, eps 1e-5): Eigen's row loop, two passes per row.
        RowMajor out(rows, cols);
        const double eigen = best_ms(reps, [&] {
            for (int64_t r = 0; r < rows; ++r) {
                const float mean = M.row(r).mean();
                const float var = (M.row(r).array() - mean).square().mean();
                out.row(r) = (M.row(r).array() - mean) * (1.0f / std::sqrt(var + 1e-5f));
            }
        });
        lt::Tensor<float> y;
        const double ours = best_ms(reps, [&] { y = lt::Tensor<float>(lt::layer_norm(m, lt::Axes{1})).realize(); });
        report("layer_norm over rows 4096x4096", eigen, ours, 1.0,
               max_rel_diff(y.to_vector().data(), out.data(), std::size_t(rows * cols)));
    }
    {
        // Re-realizing a cached 3-op expression on 1024 floats: host time per realize.
        const int64_t n = 1024;
        std::vector<float> va = random_vector(n, 5), vb = random_vector(n, 6);
        Eigen::Map<Eigen::ArrayXf> A(va.data(), n), B(vb.data(), n);
        Eigen::ArrayXf Y(n);
        const int iters = quick ? 2000 : 20000;
        const double eigen = best_ms(3, [&] {
                                 for (int i = 0; i < iters; ++i) Y = A * B + 1.0f - A;
                             }) *
                             1000.0 / iters;
        lt::Tensor<float> a = lt::tensor<float>(va, {n}), b = lt::tensor<float>(vb, {n});
        lt::Tensor<float> y;
        const double ours = best_ms(3, [&] {
                                for (int i = 0; i < iters; ++i) y = (a * b + 1.0f - a).realize();
                            }) *
                            1000.0 / iters;
        std::printf("%-44s %10.3f %12.3f   (microseconds per realize; target <= 20 us: %s)\n",
                    "cached 3-op expression, 1024 floats", eigen, ours, ours <= 20.0 ? "ok" : "MISS");
    }
    return 0;
}
