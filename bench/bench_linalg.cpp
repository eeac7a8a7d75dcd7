// SPDX-License-Identifier: MIT
// lt::linalg against NumPy on the host (issue 47's target: >= 0.95x NumPy with the same LAPACK,
// 2 threads): cholesky, solve (one right-hand side), qr (reduced, Q and R), svd (full
// matrices, U, S and Vh) and eigh (eigenvalues and vectors) of a 1024 x 1024 double matrix, and
// the batched small case, 4096 matrices of 32 x 32 (cholesky and solve). Each timing is the wall
// clock of one call realizing everything it returns, on an input already realized, median of
// `runs` after a warm-up call. bench/linalg_peer.py times NumPy the same way on the same kind of
// matrices (well conditioned, symmetric positive definite where the routine needs it);
// bench/run_linalg_host.sh runs both and prints the ratios.
//
// --large: issue 47's GPU target instead, cholesky and solve (one right-hand side) of an 8192 x
// 8192 float32 matrix (or of order N with --large N), against torch.linalg (cuSOLVER) with TF32
// off: bench/linalg_torch_peer.py --large, both run by bench/run_linalg_large_gpu.sh.
//
//   bench_linalg [--device host|opencl:N] [--quick] [--batched (the batched small lines only)] [--large [N]]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <lazytensor.hpp>

#include "median_ms.hpp"

namespace lt = lazytensor;

namespace {

/// A batch of symmetric positive definite matrices: M M^T / n + I, M uniform in [0, 1).
lt::Tensor<double> spd(lt::Shape batch, std::int64_t n, lt::Device d) {
    lt::Shape s = batch;
    s.push_back(n);
    s.push_back(n);
    const lt::Tensor<double> m = lt::rand<double>(s, 7, d);
    return lt::Tensor<double>(lt::matmul(m, m.transpose(-2, -1)) / static_cast<double>(n) + lt::eye<double>(n, d)).realize();
}

void line(const char* name, double ms) { std::printf("%-52s %10.3f ms\n", name, ms); }

/// A symmetric positive definite float32 matrix, M M^T / n + I, M uniform in [0, 1).
lt::Tensor<float> spd_float(std::int64_t n, lt::Device d) {
    const lt::Tensor<float> m = lt::rand<float>({n, n}, 7, d);
    return lt::Tensor<float>(lt::matmul(m, m.transpose(-2, -1)) / static_cast<float>(n) + lt::eye<float>(n, d)).realize();
}

}  // namespace

/// The --large lines: float32 of order n.
static void large_float(lt::Device d, std::int64_t n, int runs) {
    const lt::Tensor<float> a = spd_float(n, d);
    const lt::Tensor<float> b = lt::rand<float>({n, 1}, 8, d).realize();
    const std::string size = std::to_string(n) + "x" + std::to_string(n);
    line(("cholesky " + size + " float32").c_str(), median_ms(d, [&] { lt::linalg::cholesky(a).realize(); }, runs));
    line(("solve " + size + " float32, one right-hand side").c_str(),
         median_ms(d, [&] { lt::linalg::solve(a, b).realize(); }, runs));
}

/// The 1024 x 1024 lines.
static void large(lt::Device d, std::int64_t n, int runs) {
    const lt::Tensor<double> a = spd({}, n, d);
    const lt::Tensor<double> b = lt::rand<double>({n}, 8, d).realize();
    line("cholesky 1024x1024 double", median_ms(d, [&] { lt::linalg::cholesky(a).realize(); }, runs));
    line("solve 1024x1024 double, one right-hand side", median_ms(d, [&] { lt::linalg::solve(a, b).realize(); }, runs));
    line("qr 1024x1024 double (Q and R)", median_ms(d, [&] {
             auto [q, r] = lt::linalg::qr(a);
             lt::realize({q, r});
         }, runs));
    line("svd 1024x1024 double (U, S, Vh)", median_ms(d, [&] {
             auto [u, s, vh] = lt::linalg::svd(a);
             lt::realize({u, s, vh});
         }, runs));
    line("eigh 1024x1024 double (eigenvalues and vectors)", median_ms(d, [&] {
             auto [w, v] = lt::linalg::eigh(a);
             lt::realize({w, v});
         }, runs));
}

int main(int argc, char** argv) {
    lt::Device d = lt::Device::host();
    bool quick = false, batched_only = false;
    std::int64_t large_n = 0;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--large")) {
            large_n = i + 1 < argc && argv[i + 1][0] != '-' ? std::atoll(argv[++i]) : 8192;
            continue;
        }
        if (!std::strcmp(argv[i], "--device") && i + 1 < argc) d = lt::detail::parse_device(argv[++i]);
        else if (!std::strcmp(argv[i], "--quick")) quick = true;
        else if (!std::strcmp(argv[i], "--batched")) batched_only = true;
    }
    for (const auto& info : lt::devices())
        if (info.device == d) std::printf("bench_linalg on %s (%s)\n", d.str().c_str(), info.name.c_str());
    const std::int64_t n = quick ? 256 : 1024, batch = quick ? 256 : 4096;
    const int runs = quick ? 3 : 7;
    if (large_n > 0) {
        large_float(d, large_n, runs);
        return 0;
    }
    if (!batched_only) large(d, n, runs);
    const lt::Tensor<double> small = spd({batch}, 32, d);
    const lt::Tensor<double> rhs = lt::rand<double>({batch, 32, 1}, 9, d).realize();
    line("cholesky 4096 x (32x32) double", median_ms(d, [&] { lt::linalg::cholesky(small).realize(); }, runs));
    line("solve 4096 x (32x32) double, one right-hand side", median_ms(d, [&] { lt::linalg::solve(small, rhs).realize(); }, runs));
}
