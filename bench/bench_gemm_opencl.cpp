// SPDX-License-Identifier: MIT
// lazytensor's matmul on an OpenCL device vs CLBlast called directly on the same buffers, in
// one process and on one queue.
//
//   bench_gemm_opencl [--device N] [--small] [--sizes 1024,4096,8192] [--batch 64,512] [--rounds R]
//                     [--xgemm-params "GEMMK=0 MWG=128 ..."] [--min-indirect N]
//
// The Xgemm parameters CLBlast uses are process-wide: lazytensor's shipped tuning
// (backend/opencl/clblast_tuning.hpp; LAZYTENSOR_CLBLAST_TUNING=off for CLBlast's defaults) or
// --xgemm-params apply to both sides alike, so the ratio measures lazytensor's overhead and the
// TFLOP/s the tuning.
//
// Each case: the first lazytensor product is timed on its own (it includes CLBlast compiling
// its kernels, once per process and kernel variant); then, in R alternating rounds, a burst of
// back-to-back products from each side is timed by the wall clock up to clFinish, and the
// median round is reported. Back-to-back products overlap lazytensor's host work (graph,
// plan lookup, allocation) with the device, as in a real program; the direct call overlaps
// CLBlast's own. Results are checked against each other and against sampled double-precision
// dot products. Target (issue 3): lazytensor >= 0.97x the direct CLBlast call.
// Exit status: 0, or 1 when a result is wrong, 2 on an error.
#include <lazytensor.hpp>
#if !LAZYTENSOR_ENGINE_DEFINITIONS  // built against lazytensor::runtime: the internals used here
#include <lazytensor/runtime/device.hpp>
#endif

#include <clblast.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <sstream>
#include <string>
#include <vector>

namespace lt = lazytensor;
namespace ocl = lazytensor::detail::opencl;
using Clock = std::chrono::steady_clock;

namespace {

struct Options {
    int device = 0;
    std::vector<std::int64_t> sizes{1024, 4096, 8192};
    std::int64_t batch = 64, batch_size = 512;
    int rounds = 7;
    std::string xgemm;  // --xgemm-params: Xgemm parameters to try (overrides any shipped tuning)
    std::int64_t min_indirect = 0;  // --min-indirect: CLBlast's XGEMM_MIN_INDIRECT_SIZE to try
};

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "%s\nusage: bench_gemm_opencl [--device N] [--small] [--sizes 1024,4096,8192] [--batch 64,512] "
                 "[--rounds R]\n"
                 "       [--xgemm-params \"GEMMK=0 MWG=128 ...\"]   (CLBlast Xgemm parameters to try, for both sides)\n"
                 "       [--min-indirect N]   (CLBlast's XGEMM_MIN_INDIRECT_SIZE to try, for both sides)\n",
                 why);
    std::exit(2);
}

std::vector<std::int64_t> parse_list(const std::string& text) {
    std::vector<std::int64_t> out;
    std::stringstream s(text);
    for (std::string item; std::getline(s, item, ',');) {
        char* end = nullptr;
        const long long v = std::strtoll(item.c_str(), &end, 10);
        if (item.empty() || *end || v <= 0) usage("expected a comma-separated list of positive integers");
        out.push_back(v);
    }
    return out;
}

Options parse(int argc, char** argv) {
    Options o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&]() -> std::string {
            if (i + 1 >= argc) usage(("missing value after " + a).c_str());
            return argv[++i];
        };
        if (a == "--device") o.device = static_cast<int>(parse_list(value())[0]);
        else if (a == "--small") o.sizes = {256, 512}, o.batch = 8, o.batch_size = 128, o.rounds = 3;
        else if (a == "--sizes") o.sizes = parse_list(value());
        else if (a == "--batch") {
            const auto v = parse_list(value());
            if (v.size() != 2) usage("--batch takes COUNT,SIZE");
            o.batch = v[0], o.batch_size = v[1];
        } else if (a == "--rounds") o.rounds = static_cast<int>(parse_list(value())[0]);
        else if (a == "--xgemm-params") o.xgemm = value();
        else if (a == "--min-indirect") o.min_indirect = parse_list(value())[0];
        else usage(("unknown option " + a).c_str());
    }
    return o;
}

std::vector<float> random_vector(std::size_t n, std::uint64_t seed) {
    std::vector<float> v(n);
    std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (auto& e : v) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        e = static_cast<float>(static_cast<double>(x >> 11) / 9007199254740992.0 * 2.0 - 1.0);
    }
    return v;
}

cl_mem mem_of(const lt::Tensor<float>& t) { return static_cast<cl_mem>(t.node_ptr()->buffer->handle()); }

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

/// One case: C[batch, m, n] = A x B with A stored [batch, m, k] (or transposed, [batch, k, m]).
struct Case {
    std::string name;
    std::int64_t batch, m, n, k;
    bool a_transposed = false;
};

bool run_case(const Case& c, const Options& o, ocl::OpenCLBackend& be) {
    const lt::Device dev = lt::Device::opencl(o.device);
    const std::int64_t b = c.batch, m = c.m, n = c.n, k = c.k;
    const std::vector<float> ha = random_vector(static_cast<std::size_t>(b * m * k), 1);
    const std::vector<float> hb = random_vector(static_cast<std::size_t>(b * k * n), 2);
    const lt::Shape a_shape = c.a_transposed ? lt::Shape{b, k, m} : lt::Shape{b, m, k};
    lt::Tensor<float> A = lt::tensor<float>(ha, a_shape, dev).realize();
    lt::Tensor<float> B = lt::tensor<float>(hb, {b, k, n}, dev).realize();
    if (b == 1) {
        A = A.reshape({a_shape[1], a_shape[2]}).realize();
        B = B.reshape({k, n}).realize();
    }
    const lt::Tensor<float> lhs = c.a_transposed ? A.mT() : A;
    cl_command_queue queue = be.queue();
    cl_int err = CL_SUCCESS;
    cl_mem direct_c = clCreateBuffer(be.context(), CL_MEM_READ_WRITE, static_cast<std::size_t>(b * m * n) * 4, nullptr, &err);
    if (err != CL_SUCCESS) throw std::runtime_error("clCreateBuffer failed");

    auto ours = [&] { return lt::matmul(lhs, B).realize(); };
    auto direct = [&] {
        using clblast::Transpose;
        const auto ta = c.a_transposed ? Transpose::kYes : Transpose::kNo;
        const auto lda = static_cast<std::size_t>(c.a_transposed ? m : k);
        const auto M = static_cast<std::size_t>(m), N = static_cast<std::size_t>(n), K = static_cast<std::size_t>(k);
        clblast::StatusCode s;
        if (b == 1)
            s = clblast::Gemm<float>(clblast::Layout::kRowMajor, ta, Transpose::kNo, M, N, K, 1.0f, mem_of(A), 0, lda,
                                     mem_of(B), 0, N, 0.0f, direct_c, 0, N, &queue, nullptr);
        else
            s = clblast::GemmStridedBatched<float>(clblast::Layout::kRowMajor, ta, Transpose::kNo, M, N, K, 1.0f,
                                                   mem_of(A), 0, lda, M * K, mem_of(B), 0, N, K * N, 0.0f, direct_c, 0,
                                                   N, M * N, static_cast<std::size_t>(b), &queue, nullptr);
        if (s != clblast::StatusCode::kSuccess) throw std::runtime_error("direct CLBlast call failed: " + std::to_string(static_cast<int>(s)));
    };

    // The first product: includes CLBlast compiling its kernels where this variant is new.
    auto t0 = Clock::now();
    lt::Tensor<float> C = ours();
    clFinish(queue);
    const double first_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    direct();
    clFinish(queue);

    // Correctness: both sides agree, and sampled entries match double-precision dot products.
    const std::vector<float> got = C.to_vector();
    std::vector<float> peer(got.size());
    clEnqueueReadBuffer(queue, direct_c, CL_TRUE, 0, peer.size() * 4, peer.data(), 0, nullptr, nullptr);
    double worst = 0;
    for (std::size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(double(got[i]) - double(peer[i])));
    double sample_err = 0;
    for (int s = 0; s < 64; ++s) {
        const std::int64_t t = (s * 7) % b, i = (s * 977) % m, j = (s * 331) % n;
        double dot = 0, mag = 0;
        for (std::int64_t p = 0; p < k; ++p) {
            const double x = c.a_transposed ? ha[static_cast<std::size_t>((t * k + p) * m + i)]
                                            : ha[static_cast<std::size_t>((t * m + i) * k + p)];
            const double y = hb[static_cast<std::size_t>((t * k + p) * n + j)];
            dot += x * y;
            mag += std::fabs(x * y);
        }
        const double e = std::fabs(double(got[static_cast<std::size_t>((t * m + i) * n + j)]) - dot) / (mag + 1e-30);
        sample_err = std::max(sample_err, e);
    }
    const bool correct = worst == 0 || worst < 1e-3 * std::sqrt(double(k));
    const bool accurate = sample_err < 1e-4;

    // Steady state: bursts of back-to-back products, alternating sides.
    const double flops = 2.0 * double(b) * double(m) * double(n) * double(k);
    auto burst_ms = [&](const std::function<void()>& f, int reps) {
        clFinish(queue);
        const auto start = Clock::now();
        for (int r = 0; r < reps; ++r) f();
        clFinish(queue);
        return std::chrono::duration<double, std::milli>(Clock::now() - start).count() / reps;
    };
    const double estimate = burst_ms(direct, 2);
    const int reps = static_cast<int>(std::clamp(std::ceil(60.0 / std::max(estimate, 1e-3)), 3.0, 400.0));
    std::vector<double> lt_ms, cl_ms;
    for (int r = 0; r < o.rounds; ++r) {
        if (r % 2 == 0) {
            lt_ms.push_back(burst_ms([&] { C = ours(); }, reps));
            cl_ms.push_back(burst_ms(direct, reps));
        } else {
            cl_ms.push_back(burst_ms(direct, reps));
            lt_ms.push_back(burst_ms([&] { C = ours(); }, reps));
        }
    }
    const double ours_ms = median(lt_ms), peer_ms = median(cl_ms);
    const double ratio = peer_ms / ours_ms;
    std::printf("%-30s %9.3f %9.3f %8.2f %8.2f %7.3f   %-8s %9.1f   %s%s\n", c.name.c_str(), ours_ms, peer_ms,
                flops / ours_ms / 1e9, flops / peer_ms / 1e9, ratio, ratio >= 0.97 ? "PASS" : "MISS", first_ms,
                correct && accurate ? "ok" : "WRONG",
                correct && accurate ? "" : (" (max |lt - clblast| " + std::to_string(worst) + ", sampled rel err " +
                                            std::to_string(sample_err) + ")").c_str());
    std::fflush(stdout);
    clReleaseMemObject(direct_c);
    return correct && accurate;
}

}  // namespace

int main(int argc, char** argv) {
    const Options o = parse(argc, argv);
    try {
        ocl::OpenCLBackend& be = ocl::opencl_backend(o.device);
        std::printf("device: %s\n", be.name().c_str());
        if (!o.xgemm.empty()) {
            const auto status = clblast::OverrideParameters(be.device_id(), "Xgemm", clblast::Precision::kSingle,
                                                            ocl::parse_clblast_parameters(o.xgemm));
            if (status != clblast::StatusCode::kSuccess) throw std::runtime_error("OverrideParameters failed");
            std::printf("CLBlast Xgemm parameters (both sides): %s\n", o.xgemm.c_str());
        } else {
            std::printf("CLBlast Xgemm parameters: %s\n", std::getenv("LAZYTENSOR_CLBLAST_TUNING")
                                                               ? "CLBlast's defaults (LAZYTENSOR_CLBLAST_TUNING=off)"
                                                               : "lazytensor's tuning for this device, if it has one");
        }
        if (o.min_indirect) {
            const auto status =
                clblast::OverrideParameters(be.device_id(), "GemmRoutine", clblast::Precision::kSingle,
                                            {{"XGEMM_MIN_INDIRECT_SIZE", static_cast<std::size_t>(o.min_indirect)}});
            if (status != clblast::StatusCode::kSuccess)
                throw std::runtime_error("OverrideParameters(GemmRoutine) failed: " + std::to_string(static_cast<int>(status)));
            std::printf("CLBlast XGEMM_MIN_INDIRECT_SIZE (both sides): %lld\n", static_cast<long long>(o.min_indirect));
        }
        const lt::detail::ir::Gemm probe{};
        std::printf("lazytensor runs a float GEMM as: %s\n", be.gemm_routine(probe).c_str());
        std::printf("%-30s %9s %9s %8s %8s %7s   %-8s %9s   %s\n", "case (float32)", "lt ms", "clblast", "lt TF/s",
                    "cb TF/s", "cb/lt", ">=0.97x", "first ms", "check");
        std::vector<Case> cases;
        for (std::int64_t s : o.sizes) cases.push_back({"square " + std::to_string(s), 1, s, s, s});
        const std::int64_t t = o.batch_size;
        cases.push_back({"batched " + std::to_string(o.batch) + " x " + std::to_string(t) + "^3", o.batch, t, t, t});
        const std::int64_t big = o.sizes.size() > 1 ? o.sizes[1] : o.sizes[0];
        cases.push_back({"A transposed, square " + std::to_string(big), 1, big, big, big, true});
        bool ok = true;
        for (const Case& c : cases) ok = run_case(c, o, be) && ok;
        std::printf("first ms: the first lazytensor product of the case, with CLBlast compiling kernels it has not "
                    "compiled before in this process\n");
        return ok ? 0 : 1;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "error: %s\n", e.what());
        return 2;
    }
}
