// SPDX-License-Identifier: MIT
// Memory: buffers are freed when their last holder goes, intermediates are released inside a
// schedule, long loops of realizes keep memory flat (caches evict, nothing leaks), and a memory
// limit gives a clear out-of-memory error that leaves every tensor usable.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <unistd.h>

#include "common.hpp"

namespace {

/// Resident set size of this process in bytes (Linux: /proc/self/statm), 0 where unknown.
std::size_t resident_bytes() {
    std::FILE* f = std::fopen("/proc/self/statm", "r");
    if (!f) return 0;
    unsigned long long size = 0, resident = 0;
    const int n = std::fscanf(f, "%llu %llu", &size, &resident);
    std::fclose(f);
    if (n != 2) return 0;
    return static_cast<std::size_t>(resident) * static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
}

double mib(std::size_t bytes) { return static_cast<double>(bytes) / (1024.0 * 1024.0); }
double mib_diff(std::size_t after, std::size_t before) {
    return (static_cast<double>(after) - static_cast<double>(before)) / (1024.0 * 1024.0);
}

/// The iteration count of the long loop: LAZYTENSOR_TEST_MEMORY_ITERATIONS, else `fallback`.
long loop_iterations(long fallback) {
    if (const char* v = std::getenv("LAZYTENSOR_TEST_MEMORY_ITERATIONS")) {
        char* end = nullptr;
        const long n = std::strtol(v, &end, 10);
        if (*v && !*end && n > 0) return n;
    }
    return fallback;
}

}  // namespace

TEST_CASE("a loop of 100,000 realizes of a changing expression keeps memory flat") {
    for_each_device([](lt::Device d) {
        // On PoCL (2 cores) a realize costs about 0.2 ms, so 100,000 take ~20 s there once the
        // loop's kernels are built: a first run without the disk cache builds ~24 kernels, 0.5-2 s
        // each on PoCL.
        const bool host = d == lt::Device::host();
        const long iterations = loop_iterations(100000);
        // RSS and live memory are first read once the caches are full (on the host the plan
        // cache fills within the first ~3,100 realizes), after at most 10,000 realizes.
        const long warmup = std::min<long>(10000, std::max<long>(iterations / 10, std::min<long>(4000, iterations * 3 / 4)));
        // Far fewer kernels kept than the loop uses, so the kernel cache evicts whenever a plan
        // is made. On the host the loop also changes a constant of one form that is baked into
        // the kernel (1500 values), so every third realize makes a new plan and kernel, far
        // more than the plan cache (1024) and the kernel cache keep; on OpenCL, where each new
        // kernel is a build, the constant stays fixed and only the first 24 realizes make plans.
        KernelCacheCapacity small_cache(d, 8);

        // 8 shapes x 3 expression forms (24 plans and at most 24 kernels with fixed
        // constants; each new OpenCL kernel costs a build), data new every iteration.
        constexpr int kShapes = 8;
        auto shape_of = [](long s) -> lt::Shape { return {2 + s % 6, 16 + 8 * (s / 6 % 4)}; };
        std::vector<float> xs, ys;
        auto run_one = [&](long i, bool check) -> std::string {
            const long s = i % kShapes, form = (i / kShapes) % 3;
            const lt::Shape shape = shape_of(s);
            const std::int64_t n = lt::numel(shape);
            xs.resize(static_cast<std::size_t>(n));
            ys.resize(static_cast<std::size_t>(n));
            for (std::int64_t k = 0; k < n; ++k) {
                xs[static_cast<std::size_t>(k)] = static_cast<float>((k * 31 + i) % 97) / 48.5f - 1.0f;
                ys[static_cast<std::size_t>(k)] = static_cast<float>((k * 17 + 3 * i) % 89) / 44.5f - 1.0f;
            }
            lt::Tensor<float> x = lt::tensor<float>(xs, shape, d), y = lt::tensor<float>(ys, shape, d);
            // A constant that changes on the host in form 0 (1500 values: more plans than the plan
            // cache keeps; the plan of a (shape, constant) comes back only after 36,000 realizes).
            const float c = host && form == 0 ? 0.25f + 0.001f * static_cast<float>((i / kShapes) % 1500) : 0.25f;
            lt::Tensor<float> r;
            switch (form) {
                case 0: r = lt::exp(x * 0.5f) * y + c; break;
                case 1: r = (x * y).sum(1) + c; break;
                default: r = lt::tanh(x).sum(0) + y.max(0) * c; break;
            }
            std::vector<float> got = r.to_vector();
            if (!check) return {};
            Ref rx{shape, std::vector<double>(xs.begin(), xs.end())}, ry{shape, std::vector<double>(ys.begin(), ys.end())};
            Ref expected;
            switch (form) {
                case 0:
                    expected = zip(map(rx, [](double v) { return std::exp(v * 0.5); }), ry,
                                   [&](double a, double b) { return a * b + static_cast<double>(c); });
                    break;
                case 1:
                    expected = map(reduce(zip(rx, ry, [](double a, double b) { return a * b; }), {1}, false, 0.0, ref_add),
                                   [&](double v) { return v + static_cast<double>(c); });
                    break;
                default:
                    expected = zip(reduce(map(rx, [](double v) { return std::tanh(v); }), {0}, false, 0.0, ref_add),
                                   reduce(ry, {0}, false, -INFINITY, ref_max),
                                   [&](double a, double b) { return a + b * static_cast<double>(c); });
                    break;
            }
            std::ostringstream out;
            if (got.size() != expected.v.size()) return "wrong size";
            for (std::size_t k = 0; k < got.size(); ++k)
                if (!(std::fabs(got[k] - expected.v[k]) <= 1e-4 * std::fabs(expected.v[k]) + 1e-4)) {
                    out << "iteration " << i << " (form " << form << ", shape " << shape << "), element " << k
                        << ": got " << got[k] << ", expected " << expected.v[k];
                    return out.str();
                }
            return {};
        };

        const lt::MemoryStats before = lt::memory_stats(d);
        const auto t0 = std::chrono::steady_clock::now();
        std::size_t rss_warm = 0;
        lt::MemoryStats warm{};
        int wrong = 0;
        for (long i = 0; i < iterations; ++i) {
            if (i == warmup) {
                rss_warm = resident_bytes();
                warm = lt::memory_stats(d);
            }
            const std::string m = run_one(i, i % 101 == 0 || i < 3 * kShapes);
            if (!m.empty() && ++wrong <= 5) FAIL_CHECK(m);
        }
        const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        const std::size_t rss_end = resident_bytes();
        const lt::MemoryStats after = lt::memory_stats(d);
        CHECK(wrong == 0);

        MESSAGE(d.str() << ": " << iterations << " realizes in " << seconds << " s; RSS " << mib(rss_warm)
                        << " MiB after " << warmup << ", " << mib(rss_end) << " MiB at the end (growth "
                        << mib_diff(rss_end, rss_warm) << " MiB); live " << before.live_bytes << " bytes in "
                        << before.live_buffers << " buffers before, " << warm.live_bytes << " / " << warm.live_buffers
                        << " after warm-up, " << after.live_bytes << " / " << after.live_buffers << " at the end; cached "
                        << after.cached_bytes << " bytes; " << lt::detail::backend_for(d).cached_kernels()
                        << " kernels cached; " << lt::detail::plan_cache().size() << " plans cached");
        // Nothing the loop made is still held, and the process did not grow.
        CHECK(after.live_bytes == before.live_bytes);
        CHECK(after.live_buffers == before.live_buffers);
        CHECK(warm.live_bytes == before.live_bytes);
        CHECK(warm.live_buffers == before.live_buffers);
#if !defined(__SANITIZE_ADDRESS__)  // ASan keeps freed memory in quarantine: RSS grows by design
        if (rss_warm && rss_end) CHECK(mib_diff(rss_end, rss_warm) < 16.0);
#endif
        CHECK(lt::detail::backend_for(d).cached_kernels() <= 8);
        CHECK(lt::detail::plan_cache().size() <= 1024);
    });
}

TEST_CASE("buffers are freed when their last tensor goes") {
    for_each_device([](lt::Device d) {
        const lt::MemoryStats base = lt::memory_stats(d);
        auto live_bytes = [&] { return lt::memory_stats(d).live_bytes - base.live_bytes; };
        auto live_buffers = [&] { return lt::memory_stats(d).live_buffers - base.live_buffers; };
        constexpr std::size_t kBytes = 1000 * sizeof(float);
        {
            std::vector<float> data(1000);
            for (std::size_t k = 0; k < data.size(); ++k) data[k] = static_cast<float>(k) * 0.5f;
            lt::Tensor<float> a = lt::tensor<float>(data, {10, 100}, d);
            CHECK(live_bytes() == kBytes);
            CHECK(live_buffers() == 1);

            lt::Tensor<float> b = lt::exp(a * 0.001f) + 1.0f;  // lazy: no memory yet
            CHECK(live_buffers() == 1);
            b.realize();
            CHECK(live_bytes() == 2 * kBytes);
            CHECK(live_buffers() == 2);

            // Copies of the handle and views share the buffer; a realized view of a realized
            // tensor is zero-copy.
            lt::Tensor<float> copy = b;
            lt::Tensor<float> view = b.slice(0, 2, 5).transpose(0, 1);
            lt::Tensor<float> flat = b.reshape({1000});
            view.realize();
            flat.realize();
            CHECK(view.is_realized());
            CHECK(live_buffers() == 2);
            CHECK(live_bytes() == 2 * kBytes);

            b = lt::Tensor<float>();
            copy = lt::Tensor<float>();
            CHECK(live_buffers() == 2);  // the views keep b's buffer
            flat = lt::Tensor<float>();
            CHECK(live_buffers() == 2);  // `view` still does
            const std::vector<float> got = view.to_vector();
            REQUIRE(got.size() == 300);
            CHECK(got[0] == doctest::Approx(std::exp(data[200] * 0.001) + 1.0));
            CHECK(got[1] == doctest::Approx(std::exp(data[300] * 0.001) + 1.0));
            view = lt::Tensor<float>();
            CHECK(live_bytes() == kBytes);
            CHECK(live_buffers() == 1);

            // A lazy expression keeps the tensors it reads alive; a lazy view keeps its base.
            lt::Tensor<float> lazy = a * 2.0f;
            lt::Tensor<float> lazy_view = a.slice(1, 10, 20);
            a = lt::Tensor<float>();
            CHECK(live_buffers() == 1);
            CHECK(lazy_view.to_vector()[0] == data[10]);
            CHECK(live_buffers() == 1);  // the view was realized without a copy
            lazy_view = lt::Tensor<float>();
            CHECK(live_buffers() == 1);
            CHECK(lazy.to_vector()[999] == data[999] * 2.0f);
            CHECK(live_buffers() == 1);  // lazy's own buffer; a's went with its last reader
            CHECK(live_bytes() == kBytes);
        }
        CHECK(live_bytes() == 0);
        CHECK(live_buffers() == 0);

        // A value read once and dropped, and an expression never realized, leave nothing.
        {
            lt::Tensor<float> x = lt::full<float>({256}, 3.0f, d);
            CHECK((lt::sqrt(x) * x).sum().item() == doctest::Approx(256 * 3.0 * std::sqrt(3.0)));
            lt::Tensor<float> never = lt::exp(x) * 2.0f;
        }
        CHECK(live_bytes() == 0);
        CHECK(live_buffers() == 0);
    });
}

TEST_CASE("intermediate buffers are released within a schedule") {
    for_each_device([](lt::Device d) {
        constexpr int kSteps = 12;
        constexpr std::int64_t kN = 256;
        constexpr std::size_t kFull = kN * kN * sizeof(float);  // one intermediate: 256 KiB
        const Ref rx = random_ref<float>({kN, kN}, 71, -1.0, 1.0);
        lt::Tensor<float> x = make_tensor<float>(rx, d);

        // Each step's y is read by two kernels (a column sum and a row sum), so it is
        // materialized into a buffer of its own; the result of the step is [kN, kN] again.
        lt::Tensor<float> h = x;
        Ref rh = rx;
        for (int k = 0; k < kSteps; ++k) {
            lt::Tensor<float> y = h * 0.5f + 1.0f;  // the chain converges to 2: values stay bounded
            h = (y.sum(0, true) + y.sum(1, true)) / static_cast<float>(2 * kN);
            std::vector<double> ry(rh.v.size()), column(kN, 0.0), row(kN, 0.0);
            for (std::size_t i = 0; i < ry.size(); ++i) ry[i] = rh.v[i] * 0.5 + 1.0;
            for (std::int64_t r = 0; r < kN; ++r)
                for (std::int64_t c = 0; c < kN; ++c) {
                    column[static_cast<std::size_t>(c)] += ry[static_cast<std::size_t>(r * kN + c)];
                    row[static_cast<std::size_t>(r)] += ry[static_cast<std::size_t>(r * kN + c)];
                }
            for (std::int64_t r = 0; r < kN; ++r)
                for (std::int64_t c = 0; c < kN; ++c)
                    rh.v[static_cast<std::size_t>(r * kN + c)] =
                        (column[static_cast<std::size_t>(c)] + row[static_cast<std::size_t>(r)]) / (2 * kN);
        }
        const auto items = lt::schedule(h);
        std::size_t full_size = 0;
        for (const auto& item : items) full_size += item.output == "float32[256, 256]";
        INFO("kernels: " << lt::kernel_count(items));
        CHECK(lt::kernel_count(items) >= 2 * kSteps);
        CHECK(full_size >= kSteps);  // kSteps full-size intermediates (and the output) ...
        if (lt::kernel_count(items) < 2 * kSteps || full_size < kSteps)
            for (const auto& item : items) MESSAGE(item.kind << " -> " << item.output << " (" << item.reason << ")");

        const lt::MemoryStats before = lt::memory_stats(d);
        lt::reset_peak_memory(d);
        CHECK(lt::memory_stats(d).peak_bytes == before.live_bytes);
        h.realize();
        const lt::MemoryStats after = lt::memory_stats(d);
        const std::size_t peak_growth = after.peak_bytes - before.live_bytes;
        MESSAGE(d.str() << ": " << lt::kernel_count(items) << " kernels, " << full_size << " results of "
                        << kFull << " bytes; peak " << peak_growth << " bytes above the live " << before.live_bytes
                        << " (all intermediates together: " << kSteps * kFull << ")");
        // ... but only two are alive at once: a step's y while the next y (or the output) is
        // computed from it, and a few column sums.
        CHECK(peak_growth <= 2 * kFull + 16 * 1024);
        CHECK(peak_growth * 4 <= kSteps * kFull);
        CHECK(peak_growth >= kFull);
        // Only the result stays.
        CHECK(after.live_bytes == before.live_bytes + kFull);
        CHECK(after.live_buffers == before.live_buffers + 1);
        check_close(h, rh, 1e-4, 1e-5);
    });
}

TEST_CASE("a memory limit gives a clear out-of-memory error and leaves every tensor usable") {
    for_each_device([](lt::Device d) {
        constexpr std::int64_t kN = 1 << 18;  // 1 MiB of floats per tensor
        constexpr std::size_t kBytes = kN * sizeof(float);
        const lt::MemoryStats base = lt::memory_stats(d);
        MemoryLimit limit(d, base.live_bytes + 8 * kBytes + kBytes / 2);  // room for 8 tensors
        CHECK(lt::memory_stats(d).limit_bytes == base.live_bytes + 8 * kBytes + kBytes / 2);

        // Tensors of data and realized results, until an allocation fails.
        std::vector<lt::Tensor<float>> kept;
        std::vector<float> first_values;  // kept[i] holds i + 1 + (element index % 7)
        std::string message;
        bool threw = false, right_type = false;
        for (int i = 0; i < 64 && !threw; ++i) {
            try {
                if (i % 2 == 0) {
                    std::vector<float> data(static_cast<std::size_t>(kN));
                    for (std::int64_t k = 0; k < kN; ++k) data[static_cast<std::size_t>(k)] = static_cast<float>(i + 1 + k % 7);
                    kept.push_back(lt::tensor<float>(data, {kN}, d));
                } else {
                    // (previous + 1): i + 1 + k % 7 again, computed by a kernel.
                    kept.push_back((kept.back() + 1.0f).realize());
                }
            } catch (const lt::Error& e) {
                threw = true;
                message = e.what();
                right_type = dynamic_cast<const lt::OutOfMemoryError*>(&e) != nullptr;
            }
        }
        REQUIRE(threw);
        INFO("the error: " << message);
        CHECK(kept.size() == 8);
        CHECK(right_type);
        CHECK(message.find("out of memory") != std::string::npos);
        CHECK(message.find(d.str()) != std::string::npos);
        CHECK(lt::memory_stats(d).live_bytes == base.live_bytes + kept.size() * kBytes);

        // Every tensor made before the error reads back its values.
        for (std::size_t i = 0; i < kept.size(); ++i) {
            const std::vector<float> v = kept[i].to_vector();
            CHECK(v[0] == static_cast<float>(i + 1));
            CHECK(v[static_cast<std::size_t>(kN - 1)] == static_cast<float>(i + 1 + (kN - 1) % 7));
        }

        // A realize that needs more memory fails, commits nothing and leaks nothing ...
        lt::Tensor<float> shared = lt::exp(kept[0] * 0.01f);
        lt::Tensor<float> big = shared.sum() + shared * kept[1];
        const std::size_t live_before = lt::memory_stats(d).live_bytes;
        CHECK_THROWS_AS(big.realize(), lt::OutOfMemoryError);
        CHECK_FALSE(big.is_realized());
        CHECK_FALSE(shared.is_realized());
        CHECK(lt::memory_stats(d).live_bytes == live_before);

        // ... and succeeds once memory is freed, or the limit raised or removed.
        kept.pop_back();
        kept.pop_back();
        CHECK_NOTHROW(big.realize());
        const std::vector<float> got = big.to_vector();
        double s = 0;
        for (std::int64_t k = 0; k < kN; ++k) s += std::exp(0.01 * static_cast<double>(1 + k % 7));
        CHECK(got[0] == doctest::Approx(s + std::exp(0.01) * 2.0).epsilon(1e-4));
        CHECK(got[8] == doctest::Approx(s + std::exp(0.02) * 3.0).epsilon(1e-4));

        lt::Tensor<float> more = lt::exp(kept[2]) + kept[3] + kept[4];  // lazy
        std::vector<lt::Tensor<float>> extra;
        auto fill_up = [&] {
            for (int i = 0; i < 16; ++i) extra.push_back(lt::full<float>({kN}, 1.0f, d).realize());
        };
        CHECK_THROWS_AS(fill_up(), lt::OutOfMemoryError);
        CHECK(extra.size() == 1);  // 6 + big + 1 fit under 8.5 MiB
        CHECK_THROWS_AS(more.realize(), lt::OutOfMemoryError);
        lt::set_memory_limit(d, base.live_bytes + 64 * kBytes);
        CHECK(more.to_vector()[1] == doctest::Approx(std::exp(4.0) + 5.0 + 6.0));
        lt::set_memory_limit(d, 0);
        CHECK(lt::memory_stats(d).limit_bytes == 0);
        // New work succeeds, and the first tensors are still intact.
        CHECK((lt::full<float>({kN}, 2.0f, d) * kept[0]).sum().item() == doctest::Approx(2.0 * 4.0 * kN).epsilon(1e-3));
        CHECK(kept[0].to_vector()[3] == 4.0f);
        extra.clear();
        kept.clear();
        shared = big = more = lt::Tensor<float>();
        CHECK(lt::memory_stats(d).live_bytes == base.live_bytes);
    });
}
