// SPDX-License-Identifier: MIT
// Automatic differentiation (issue 19's targets):
//   - one training step of the 784-512-256-10 perceptron (relu, cross-entropy over 10 classes,
//     batch 8192): forward, lt::grad's backward and the SGD update, realized in one call;
//   - sum(softmax(x) * y) over 8192 x 8192 floats: the forward alone, the gradient alone, and
//     both in one realize.
// Each timing is the wall clock of building the graph, realizing it and a synchronize, median of
// 15 after two warm-up calls. With Eigen (bench_autodiff is built with it where it is found,
// and with OpenMP), the same step written by hand in Eigen runs in the same process on the host.
// bench/autodiff_peer.py times PyTorch the same way; bench/run_autodiff_gpu.sh runs both.
//
//   bench_autodiff [--device host|opencl:N] [--quick] [--batch N] [--side N]
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <lazytensor.hpp>
#include <string>
#include <thread>
#include <vector>
#if LAZYTENSOR_BENCH_EIGEN
#include <Eigen/Dense>
#ifdef _OPENMP
#include <omp.h>
#endif
#endif

namespace lt = lazytensor;
using Clock = std::chrono::steady_clock;

namespace {

/// Median over 15 calls of f() then sync() (ms), after two warm-up calls.
double median_ms(const std::function<void()>& f, const std::function<void()>& sync) {
    for (int i = 0; i < 2; ++i) {
        f();
        sync();
    }
    std::vector<double> t;
    for (int i = 0; i < 15; ++i) {
        const auto t0 = Clock::now();
        f();
        sync();
        t.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
}

const std::int64_t kSizes[] = {784, 512, 256, 10};
constexpr float kLr = 0.01f;

#if LAZYTENSOR_BENCH_EIGEN
using Matrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Row = Eigen::Matrix<float, 1, Eigen::Dynamic>;

/// The same step written by hand: forward, cross-entropy, backward and SGD.
struct EigenMlp {
    std::vector<Matrix> w;
    std::vector<Row> b;
    Matrix x;
    std::vector<int> labels;

    explicit EigenMlp(std::int64_t batch) : x(Matrix::Random(batch, kSizes[0])), labels(static_cast<std::size_t>(batch)) {
        for (int l = 0; l < 3; ++l) {
            w.push_back(Matrix::Random(kSizes[l], kSizes[l + 1]) * std::sqrt(2.0f / float(kSizes[l])));
            b.push_back(Row::Zero(kSizes[l + 1]));
        }
        for (std::size_t i = 0; i < labels.size(); ++i) labels[i] = static_cast<int>(i * 7 % 10);
    }

    float step() {
        const Eigen::Index n = x.rows();
        Matrix z1 = x * w[0];
        z1.rowwise() += b[0];
        const Matrix h1 = z1.cwiseMax(0.0f);
        Matrix z2 = h1 * w[1];
        z2.rowwise() += b[1];
        const Matrix h2 = z2.cwiseMax(0.0f);
        Matrix z3 = h2 * w[2];
        z3.rowwise() += b[2];
        // softmax and the loss; dz3 = (p - onehot) / n
        Matrix p = (z3.colwise() - z3.rowwise().maxCoeff()).array().exp();
        p.array().colwise() /= p.rowwise().sum().array();
        float loss = 0;
        for (Eigen::Index i = 0; i < n; ++i) {
            loss -= std::log(p(i, labels[static_cast<std::size_t>(i)]));
            p(i, labels[static_cast<std::size_t>(i)]) -= 1.0f;
        }
        const Matrix dz3 = p / float(n);
        const Matrix dh2 = dz3 * w[2].transpose();
        const Matrix dz2 = dh2.cwiseProduct((z2.array() > 0.0f).cast<float>().matrix());
        const Matrix dh1 = dz2 * w[1].transpose();
        const Matrix dz1 = dh1.cwiseProduct((z1.array() > 0.0f).cast<float>().matrix());
        w[2].noalias() -= kLr * (h2.transpose() * dz3);
        w[1].noalias() -= kLr * (h1.transpose() * dz2);
        w[0].noalias() -= kLr * (x.transpose() * dz1);
        b[2] -= kLr * dz3.colwise().sum();
        b[1] -= kLr * dz2.colwise().sum();
        b[0] -= kLr * dz1.colwise().sum();
        return loss / float(n);
    }
};
#endif

}  // namespace

int main(int argc, char** argv) {
    lt::Device d = lt::Device::host();
    bool quick = false;
    std::int64_t batch = 8192, side = 8192;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--device") && i + 1 < argc) d = lt::detail::parse_device(argv[++i]);
        else if (!std::strcmp(argv[i], "--quick")) quick = true;
        else if (!std::strcmp(argv[i], "--batch") && i + 1 < argc) batch = std::atoll(argv[++i]);
        else if (!std::strcmp(argv[i], "--side") && i + 1 < argc) side = std::atoll(argv[++i]);
    }
    if (quick) batch = side = 1024;
    for (const auto& info : lt::devices())
        if (info.device == d) std::printf("bench_autodiff on %s (%s)\n", d.str().c_str(), info.name.c_str());
    auto sync = [&] { lt::synchronize(d); };

    // The perceptron's training step.
    std::vector<lt::Tensor<float>> params;
    for (int l = 0; l < 3; ++l) {
        params.push_back(lt::randn<float>({kSizes[l], kSizes[l + 1]}, 10 + l, d) * std::sqrt(2.0f / float(kSizes[l])));
        params.push_back(lt::zeros<float>({kSizes[l + 1]}, d));
    }
    const lt::Tensor<float> x = lt::rand<float>({batch, kSizes[0]}, 1, d).realize();
    const lt::Tensor<std::int64_t> labels = lt::randint<std::int64_t>(0, 10, {batch}, 2, d).realize();
    for (auto& p : params) p.realize();
    auto step = [&] {
        auto [loss, grads] = lt::value_and_grad(
            [&](const std::vector<lt::Tensor<float>>& p) {
                lt::Tensor<float> h = lt::relu(x.matmul(p[0]) + p[1]);
                h = lt::relu(h.matmul(p[2]) + p[3]);
                return lt::cross_entropy(h.matmul(p[4]) + p[5], labels);
            },
            params);
        std::vector<lt::TensorRef> outputs{loss};
        for (std::size_t i = 0; i < params.size(); ++i) {
            params[i] = params[i] - grads[i] * kLr;
            outputs.emplace_back(params[i]);
        }
        lt::realize(outputs);
    };
    const double ours = median_ms(step, sync);
    std::printf("MLP 784-512-256-10 training step, batch %lld                  %9.3f ms\n", static_cast<long long>(batch), ours);
#if LAZYTENSOR_BENCH_EIGEN
    if (d == lt::Device::host()) {
        EigenMlp eigen(batch);
        const double peer = median_ms([&] { (void)eigen.step(); }, [] {});
#ifdef _OPENMP
        const int eigen_threads = omp_get_max_threads();
#else
        const int eigen_threads = 1;
#endif
        const char* env = std::getenv("LAZYTENSOR_THREADS");
        const int our_threads = env ? std::atoi(env) : static_cast<int>(std::thread::hardware_concurrency());
        std::printf("  the same step in hand-written Eigen %d.%d.%d (%d threads)    %9.3f ms\n", EIGEN_WORLD_VERSION,
                    EIGEN_MAJOR_VERSION, EIGEN_MINOR_VERSION, eigen_threads, peer);
        std::printf("  lazytensor (%d threads) speed / Eigen's: %.2f (target >= 0.8); per core: %.2f\n", our_threads,
                    peer / ours, peer / ours * our_threads / eigen_threads);
    }
#endif

    // The step's matrix products one by one, in the layouts its forward and backward use
    // (W^T and X^T are transposed views).
    {
        auto r = [&](std::int64_t a, std::int64_t b, std::uint64_t seed) { return lt::rand<float>({a, b}, seed, d).realize(); };
        const std::int64_t n = batch;
        const lt::Tensor<float> w1 = r(784, 512, 20), w2 = r(512, 256, 21), w3 = r(256, 10, 22);
        const lt::Tensor<float> h1 = r(n, 512, 23), h2 = r(n, 256, 24), dz1 = r(n, 512, 25), dz2 = r(n, 256, 26), dz3 = r(n, 10, 27);
        struct Product {
            const char* name;
            lt::Tensor<float> a, b;
        };
        const Product products[] = {
            {"x @ w1", x, w1},         {"h1 @ w2", h1, w2},       {"h2 @ w3", h2, w3},         {"dz3 @ w3^T", dz3, w3.t()},
            {"dz2 @ w2^T", dz2, w2.t()}, {"x^T @ dz1", x.t(), dz1}, {"h1^T @ dz2", h1.t(), dz2}, {"h2^T @ dz3", h2.t(), dz3},
        };
        for (const Product& p : products)
            std::printf("  product %-12s %5lld x %5lld x %5lld                    %9.3f ms\n", p.name,
                        static_cast<long long>(p.a.shape()[0]), static_cast<long long>(p.b.shape()[1]),
                        static_cast<long long>(p.a.shape()[1]), median_ms([&] { p.a.matmul(p.b).realize(); }, sync));
    }

    // sum(softmax(x) * y) and its gradient.
    const lt::Tensor<float> sx = lt::rand<float>({side, side}, 3, d).realize();
    const lt::Tensor<float> sy = lt::rand<float>({side, side}, 4, d).realize();
    auto loss_of = [&] { return lt::Tensor<float>(lt::sum(lt::softmax(sx, 1) * sy)); };
    const double fwd = median_ms([&] { loss_of().realize(); }, sync);
    const double bwd = median_ms([&] { lt::grad(loss_of(), sx).realize(); }, sync);
    const double both = median_ms(
        [&] {
            auto l = loss_of();
            auto g = lt::grad(l, sx);
            lt::realize({l, g});
        },
        sync);
    std::printf("softmax %lldx%lld: forward sum(softmax(x) * y)                %9.3f ms\n", static_cast<long long>(side),
                static_cast<long long>(side), fwd);
    std::printf("softmax %lldx%lld: its gradient alone                         %9.3f ms\n", static_cast<long long>(side),
                static_cast<long long>(side), bwd);
    std::printf("softmax %lldx%lld: forward and gradient in one realize        %9.3f ms\n", static_cast<long long>(side),
                static_cast<long long>(side), both);
}
