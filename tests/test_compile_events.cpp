// SPDX-License-Identifier: MIT
// Cold start (issue 52): compile events through lt::set_log_handler (a new kernel reports its
// build, a cached one nothing, a warm disk cache says so, a failed build reports its error), and
// lt::warmup / lt::warmup_async (everything built ahead, nothing run, a realize afterwards or
// meanwhile right and compiling nothing).
#include <algorithm>
#include <atomic>
#include <cmath>
#include <filesystem>
#include <future>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common.hpp"

namespace {

/// The events a handler heard, kept under a lock (builds may report from any thread).
struct EventLog {
    std::mutex mutex;
    std::vector<lt::CompileEvent> events;

    std::vector<lt::CompileEvent> taken() {
        std::lock_guard<std::mutex> lock(mutex);
        return std::exchange(events, {});
    }
};

/// Installs a handler that records into `log` for a scope, then restores the default (nullptr).
struct Listening {
    explicit Listening(EventLog& log) {
        lt::set_log_handler([&log](const lt::CompileEvent& e) {
            std::lock_guard<std::mutex> lock(log.mutex);
            log.events.push_back(e);
        });
    }
    Listening(const Listening&) = delete;
    Listening& operator=(const Listening&) = delete;
    ~Listening() { lt::set_log_handler(nullptr); }
};

std::size_t count_phase(const std::vector<lt::CompileEvent>& events, lt::CompileEvent::Phase phase) {
    std::size_t n = 0;
    for (const auto& e : events) n += e.phase == phase;
    return n;
}

/// cos(x) * s + sqrt(|x|) for a Ref, in double: the reference of ce_expression.
Ref ce_reference(const Ref& x, double s) {
    Ref out = x;
    for (double& v : out.v) v = std::cos(v) * s + std::sqrt(std::fabs(v));
    return out;
}

lt::Tensor<float> ce_expression(const lt::Tensor<float>& x, float s) { return lt::cos(x) * s + lt::sqrt(lt::abs(x)); }

/// (a @ b) * 2 + 1 and the row sums of exp(a), for Refs, in double.
void ce_matmul_reference(const Ref& a, const Ref& b, std::int64_t m, std::int64_t k, std::int64_t n, Ref& product, Ref& sums) {
    product = Ref{{m, n}, std::vector<double>(static_cast<std::size_t>(m * n))};
    sums = Ref{{m}, std::vector<double>(static_cast<std::size_t>(m))};
    for (std::int64_t i = 0; i < m; ++i) {
        for (std::int64_t j = 0; j < n; ++j) {
            double acc = 0;
            for (std::int64_t p = 0; p < k; ++p) acc += a.v[static_cast<std::size_t>(i * k + p)] * b.v[static_cast<std::size_t>(p * n + j)];
            product.v[static_cast<std::size_t>(i * n + j)] = acc * 2 + 1;
        }
        double s = 0;
        for (std::int64_t p = 0; p < k; ++p) s += std::exp(a.v[static_cast<std::size_t>(i * k + p)]);
        sums.v[static_cast<std::size_t>(i)] = s;
    }
}

}  // namespace

TEST_CASE("compile events: a new kernel reports started and finished, a cached one nothing; nullptr restores the default") {
    for_each_device([](lt::Device d) {
        EventLog log;
        const Ref rx = random_ref<float>({5, 97}, 71);
        lt::Tensor<float> x = make_tensor<float>(rx);
        {
            Listening listening(log);
            check_close(ce_expression(x, 1.5f), ce_reference(rx, 1.5));
            const std::vector<lt::CompileEvent> first = log.taken();
            REQUIRE(count_phase(first, lt::CompileEvent::Phase::Started) >= 1);
            REQUIRE(count_phase(first, lt::CompileEvent::Phase::Finished) >= 1);
            CHECK(count_phase(first, lt::CompileEvent::Phase::Failed) == 0);
            CHECK(first.front().phase == lt::CompileEvent::Phase::Started);
            const lt::CompileEvent* kernel = nullptr;
            for (const auto& e : first)
                if (e.phase == lt::CompileEvent::Phase::Finished && e.what.find("fused kernel: ") == 0) kernel = &e;
            REQUIRE(kernel != nullptr);
            CHECK(kernel->device == d);
            CHECK(kernel->kind == lt::CompileEvent::Kind::Program);
            CHECK(kernel->what.find("cos") != std::string::npos);
            CHECK(kernel->what.find("-> float32[") != std::string::npos);  // (element-wise kernels run flat: [485])
            CHECK(kernel->ms >= 0);
            CHECK((kernel->source == lt::CompileEvent::Source::Compiler || kernel->source == lt::CompileEvent::Source::Disk));
            // Another scalar: the plan and its kernel are reused, nothing is built.
            check_close(ce_expression(x, -0.5f), ce_reference(rx, -0.5));
            CHECK(log.taken().empty());
        }
        // The default again: a new structure reaches no handler.
        lt::Tensor<float> y = lt::tan(x * 0.25f) - lt::cos(x);
        y.realize();
        CHECK(log.taken().empty());
    });
}

TEST_CASE("compile events: a handler that throws breaks no realize") {
    for_each_device([](lt::Device) {
        std::atomic<int> calls{0};
        lt::set_log_handler([&calls](const lt::CompileEvent&) {
            ++calls;
            throw std::runtime_error("a handler's own failure");
        });
        const Ref rx = random_ref<float>({3, 41}, 72);
        lt::Tensor<float> x = make_tensor<float>(rx);
        Ref want = rx;
        for (double& v : want.v) v = std::sin(v) * std::sin(v) - 0.75;
        try {
            check_close(lt::sin(x) * lt::sin(x) - 0.75f, want);
        } catch (...) {
            lt::set_log_handler(nullptr);
            throw;
        }
        lt::set_log_handler(nullptr);
        CHECK(calls.load() >= 1);
    });
}

TEST_CASE("lt::warmup builds what a realize needs and runs nothing; the realize after it compiles nothing") {
    for_each_device([](lt::Device d) {
        // The product only on the host: on PoCL its first build (CLBlast's program, or the own
        // GEMM kernel) takes seconds with PoCL's cache cold. The OpenCL GEMM's warmup is seen in
        // the test below; CLBlast's was checked by hand (bench notes in the report of issue 52).
        const bool with_product = d.kind == lt::Device::Kind::Host;
        const std::int64_t m = 19, k = 23, n = 29;
        const Ref ra = random_ref<float>({m, k}, 73), rb = random_ref<float>({k, n}, 74);
        lt::Tensor<float> a = make_tensor<float>(ra), b = make_tensor<float>(rb);
        lt::Tensor<float> product = with_product ? lt::Tensor<float>(lt::matmul(a, b) * 2.0f + 1.0f) : lt::Tensor<float>(a * 2.0f);
        lt::Tensor<float> sums = lt::exp(a).sum(1);
        EventLog log;
        std::vector<lt::CompileEvent> warming, realizing;
        lt::reset_compile_stats(d);
        lt::CompileStats warmed;
        {
            Listening listening(log);
            lt::warmup({product, sums});
            warming = log.taken();
            warmed = lt::compile_stats(d);
            CHECK_FALSE(product.is_realized());
            CHECK_FALSE(sums.is_realized());
            lt::realize({product, sums});
            realizing = log.taken();
        }
        CHECK(warmed.kernels_compiled >= 1);
        CHECK(count_phase(warming, lt::CompileEvent::Phase::Finished) >= 1);
        CHECK(realizing.empty());
        const lt::CompileStats after = lt::compile_stats(d);
        CHECK(after.kernels_compiled == warmed.kernels_compiled);
        CHECK(after.programs_built == warmed.programs_built);
        CHECK(after.disk_hits == warmed.disk_hits);
        Ref want_product, want_sums;
        ce_matmul_reference(ra, rb, m, k, n, want_product, want_sums);
        if (with_product) {
            check_close(product, want_product, 1e-5, 1e-5);
        } else {
            Ref doubled = ra;
            for (double& v : doubled.v) v *= 2;
            check_close(product, doubled);
        }
        check_close(sums, want_sums, 1e-5, 1e-5);
        // Warming up what is computed already is nothing.
        lt::warmup({product});
        CHECK(lt::compile_stats(d).kernels_compiled == warmed.kernels_compiled);
    });
}

TEST_CASE("lt::warmup_async while the program realizes the same tensors: right values, every build once") {
    for_each_device([](lt::Device d) {
        const Ref rx = random_ref<float>({7, 53}, 75);
        lt::Tensor<float> x = make_tensor<float>(rx);
        Ref want = rx;
        for (double& v : want.v) v = std::exp(-v * v) + 0.125 * v;
        lt::Tensor<float> y = lt::exp(-(x * x)) + x * 0.125f;
        lt::Tensor<float> z = lt::exp(-(x * x)) + x * 0.125f;  // the same structure: the same plan
        lt::reset_compile_stats(d);
        std::future<void> done = lt::warmup_async({y});
        lt::Tensor<float> w = lt::exp(-(x * x)) + x * 0.125f;
        check_close(z, want);  // meanwhile: waits for the warmup's build, or builds first
        done.get();
        check_close(y, want);
        check_close(w, want);
        CHECK(lt::compile_stats(d).kernels_compiled == 1);
        // Warmup of tensors another thread realizes at the same time.
        lt::Tensor<float> v = lt::exp(-(x * x)) * 0.5f;
        std::future<void> racing = lt::warmup_async({v});
        v.realize();
        racing.get();
        Ref half = rx;
        for (double& e : half.v) e = std::exp(-e * e) * 0.5;
        check_close(v, half);
    });
}

#if LAZYTENSOR_OPENCL
TEST_CASE("compile events: a program loaded from a warm disk cache is reported as such") {
    namespace fs = std::filesystem;
    for (lt::Device d : test_devices()) {
        if (d.kind != lt::Device::Kind::OpenCL) continue;
        INFO("device " << d.str());
        auto& be = lt::detail::opencl::opencl_backend(d.index);
        auto& disk = be.disk_cache();
        std::random_device rd;
        const fs::path dir = fs::temp_directory_path() / ("lazytensor-events-" + std::to_string(rd()) + std::to_string(rd()));
        const std::string saved = disk.directory();
        disk.set_directory(dir.string());
        EventLog log;
        std::vector<lt::CompileEvent> cold, warm;
        lt::Tensor<float> x = make_tensor<float>(random_ref<float>({9, 37}, 76), d);
        lt::Tensor<float> xt = make_tensor<float>(random_ref<float>({37, 9}, 77), d);
        try {
            Listening listening(log);
            be.clear_kernel_cache();
            (lt::atan(x) * 0.375f - lt::floor(x)).realize();
            cold = log.taken();
            // A new process, simulated: nothing in memory, the binary on disk. (Another shape of
            // as many elements: a new plan, so the kernel is looked up again; the same kernel.)
            be.clear_kernel_cache();
            (lt::atan(xt) * 0.625f - lt::floor(xt)).realize();
            warm = log.taken();
        } catch (...) {
            disk.set_directory(saved);
            throw;
        }
        disk.set_directory(saved);
        std::error_code ec;
        fs::remove_all(dir, ec);
        auto finished_from = [](const std::vector<lt::CompileEvent>& events, lt::CompileEvent::Source source) {
            for (const auto& e : events)
                if (e.phase == lt::CompileEvent::Phase::Finished && e.what.find("fused kernel: atan") == 0 && e.source == source)
                    return true;
            return false;
        };
        CHECK(finished_from(cold, lt::CompileEvent::Source::Compiler));
        CHECK(finished_from(warm, lt::CompileEvent::Source::Disk));
    }
}

TEST_CASE("lt::warmup builds the own GEMM kernel a product (with its fused epilogue) runs") {
    // Seen through a build that fails: building the GEMM kernel takes PoCL about 2 s, a failure
    // at its first line a fraction of that. (The build that succeeds, and a realize after it that
    // builds nothing, were checked by hand on PoCL.)
    for (lt::Device d : test_devices()) {
        if (d.kind != lt::Device::Kind::OpenCL) continue;
        INFO("device " << d.str());
        auto& be = lt::detail::opencl::opencl_backend(d.index);
        const auto choice = be.gemm_choice();
        const std::string options = be.build_options();
        be.set_gemm_choice(lt::detail::opencl::GemmChoice::Own);
        be.clear_kernel_cache();
        const Ref ra = random_ref<float>({17, 31}, 78), rb = random_ref<float>({31, 13}, 79);
        lt::Tensor<float> a = make_tensor<float>(ra, d), b = make_tensor<float>(rb, d);
        lt::Tensor<float> product = lt::matmul(a, b) * 2.0f + 1.0f;  // the epilogue runs in the GEMM's stores
        EventLog log;
        std::string message;
        be.exchange_build_options(options + " -Dlt_gemm=(");
        {
            Listening listening(log);
            try {
                lt::warmup({product});
            } catch (const lt::BackendError& error) {
                message = error.what();
            } catch (...) {
                be.exchange_build_options(options);
                be.set_gemm_choice(choice);
                throw;
            }
        }
        be.exchange_build_options(options);
        be.set_gemm_choice(choice);
        CHECK(message.find("build log") != std::string::npos);
        CHECK(message.find("lt_gemm") != std::string::npos);
        bool gemm_failed = false;
        for (const auto& e : log.taken())
            gemm_failed = gemm_failed || (e.phase == lt::CompileEvent::Phase::Failed && e.what.find("GEMM kernel ") == 0 &&
                                          e.what.find("float32, with fused code") != std::string::npos);
        CHECK(gemm_failed);
        CHECK_FALSE(product.is_realized());
    }
}

TEST_CASE("lt::warmup builds fused attention's kernel; the realize after it builds nothing") {
    for (lt::Device d : test_devices()) {
        if (d.kind != lt::Device::Kind::OpenCL) continue;
        INFO("device " << d.str());
        const std::int64_t batch = 2, rows = 24, depth = 8, value_depth = 4;
        const Ref rq = random_ref<float>({batch, rows, depth}, 80), rk = random_ref<float>({batch, rows, depth}, 81);
        const Ref rv = random_ref<float>({batch, rows, value_depth}, 82);
        lt::Tensor<float> q = make_tensor<float>(rq, d), k = make_tensor<float>(rk, d), v = make_tensor<float>(rv, d);
        lt::Tensor<float> out = lt::matmul(lt::softmax(lt::matmul(q, k.transpose(1, 2)) * 0.375f, -1), v);
        const std::vector<lt::ScheduleItem> items = lt::schedule({out});
        REQUIRE(items.size() == 1);
        REQUIRE(items[0].kind == lt::ScheduleItem::Kind::Attention);
        EventLog log;
        std::vector<lt::CompileEvent> warming, realizing;
        {
            Listening listening(log);
            lt::warmup({out});
            warming = log.taken();
            out.realize();
            realizing = log.taken();
        }
        bool built = false;
        for (const auto& e : warming)
            built = built || (e.phase == lt::CompileEvent::Phase::Finished && e.what.find("attention kernel ") == 0);
        CHECK(built);
        CHECK(realizing.empty());
        // softmax(q k^T * 0.375) v, row by row, in double.
        Ref want{{batch, rows, value_depth}, std::vector<double>(static_cast<std::size_t>(batch * rows * value_depth))};
        auto at = [](const Ref& r, std::int64_t b, std::int64_t i, std::int64_t j, std::int64_t cols) {
            return r.v[static_cast<std::size_t>((b * 24 + i) * cols + j)];
        };
        for (std::int64_t b = 0; b < batch; ++b)
            for (std::int64_t i = 0; i < rows; ++i) {
                std::vector<double> w(static_cast<std::size_t>(rows));
                double top = -INFINITY, total = 0;
                for (std::int64_t j = 0; j < rows; ++j) {
                    double s = 0;
                    for (std::int64_t c = 0; c < depth; ++c) s += at(rq, b, i, c, depth) * at(rk, b, j, c, depth);
                    w[static_cast<std::size_t>(j)] = s * 0.375;
                    top = std::max(top, s * 0.375);
                }
                for (double& e : w) total += (e = std::exp(e - top));
                for (std::int64_t c = 0; c < value_depth; ++c) {
                    double acc = 0;
                    for (std::int64_t j = 0; j < rows; ++j) acc += w[static_cast<std::size_t>(j)] / total * at(rv, b, j, c, value_depth);
                    want.v[static_cast<std::size_t>((b * rows + i) * value_depth + c)] = acc;
                }
            }
        check_close(out, want, 1e-5, 1e-5);
    }
}

TEST_CASE("a build that fails during lt::warmup throws as a realize would, reports a failed event, and leaves the tensors usable") {
    for (lt::Device d : test_devices()) {
        if (d.kind != lt::Device::Kind::OpenCL) continue;
        INFO("device " << d.str());
        auto& be = lt::detail::opencl::opencl_backend(d.index);
        lt::Tensor<float> x = lt::tensor<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, {2, 5}, d);
        lt::Tensor<float> c = (x * 3.0f).sum(0), e = (x - 1.0f).max(1);
        const std::string options = be.build_options();
        be.clear_kernel_cache();
        // Every kernel function's name is broken by a macro: every build fails.
        be.exchange_build_options(options + " -Dlt_kernel=( -Dlt_kernel0=( -Dlt_kernel1=(");
        EventLog log;
        std::string message;
        {
            Listening listening(log);
            try {
                lt::warmup({c, e});
            } catch (const lt::BackendError& error) {
                message = error.what();
            } catch (...) {
                be.exchange_build_options(options);
                throw;
            }
        }
        be.exchange_build_options(options);
        CHECK(message.find("build log") != std::string::npos);
        CHECK(message.find("generated source") != std::string::npos);
        const std::vector<lt::CompileEvent> events = log.taken();
        const lt::CompileEvent* failed = nullptr;
        for (const auto& ev : events)
            if (ev.phase == lt::CompileEvent::Phase::Failed) failed = &ev;
        REQUIRE(failed != nullptr);
        CHECK(failed->device == d);
        CHECK(failed->error.find("build log") != std::string::npos);
        CHECK_FALSE(c.is_realized());
        CHECK(c.to_vector() == std::vector<float>{21, 27, 33, 39, 45});
        CHECK(e.to_vector() == std::vector<float>{4, 9});
    }
}
#endif
