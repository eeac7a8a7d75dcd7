// SPDX-License-Identifier: MIT
// Scalars and seeds are kernel parameters: a loop whose values change compiles nothing after its
// first step (no plan, no kernel, no OpenCL program), on every device, and every step's values
// are right. Also: the compile statistics, batched first builds, and the bounded caches.
#include "common.hpp"

namespace {

/// Compile counters of a device and of the plan cache, to compare before and after a loop.
struct Builds {
    lt::CompileStats stats;
    std::size_t plans;

    explicit Builds(lt::Device d) : stats(lt::compile_stats(d)), plans(lt::detail::plan_cache().made()) {}
};

/// Checks that nothing was compiled on `d` (nor planned) since `before`.
void check_nothing_built(lt::Device d, const Builds& before) {
    const Builds now(d);
    CHECK(now.stats.kernels_compiled == before.stats.kernels_compiled);
    CHECK(now.stats.programs_built == before.stats.programs_built);
    CHECK(now.stats.disk_hits == before.stats.disk_hits);
    CHECK(now.plans == before.plans);
}

lt::Tensor<float> param_input(const lt::Shape& shape, unsigned seed) { return make_tensor<float>(random_ref<float>(shape, seed)); }

/// Element i of lt::rand<float>(shape, seed): the top 24 bits of philox(i, seed) (the generator
/// is checked against the published Philox vectors in test_nn.cpp) times 2^-24.
double rand_float_ref(std::uint64_t i, std::uint64_t seed) {
    return std::ldexp(static_cast<double>(lt::detail::philox_bits(i, seed) >> 40), -24);
}

}  // namespace

TEST_CASE("a changing scalar builds no new kernel: y = y * 0.99 + x * alpha, a new alpha each step") {
    for_each_device([](lt::Device d) {
        const lt::Shape shape{1 << 12};
        lt::Tensor<float> x = param_input(shape, 1);
        const std::vector<double> xs = random_ref<float>(shape, 1).v;
        std::vector<double> ref(xs.size(), 0.5);
        lt::Tensor<float> y = lt::full<float>(shape, 0.5f);
        y.realize();  // (a lazy y would make the first step's graph different from the others')
        std::optional<Builds> after_first;
        for (int step = 0; step < 12; ++step) {
            const float alpha = 0.1f + 0.37f * static_cast<float>(step);
            y = y * 0.99f + x * alpha;
            y.realize();
            for (std::size_t i = 0; i < ref.size(); ++i)
                ref[i] = static_cast<float>(static_cast<float>(ref[i] * 0.99f) + static_cast<float>(xs[i] * alpha));
            const std::vector<float> got = y.to_vector();
            INFO("step " << step << ", alpha " << alpha);
            REQUIRE(got.size() == ref.size());
            for (std::size_t i = 0; i < ref.size(); i += 97) REQUIRE(got[i] == doctest::Approx(ref[i]).epsilon(1e-6));
            if (step == 0) after_first.emplace(d);
        }
        check_nothing_built(d, *after_first);
    });
}

TEST_CASE("a new random seed each step builds no new kernel, and the numbers are Philox's") {
    for_each_device([](lt::Device d) {
        const lt::Shape shape{3, 1000};
        std::optional<Builds> after_first;
        for (std::uint64_t step = 0; step < 8; ++step) {
            const std::uint64_t seed = 1000003 * step + (step << 40);  // seeds above 2^32 too
            const std::vector<float> got = lt::rand<float>(shape, seed).to_vector();
            INFO("step " << step << ", seed " << seed);
            for (std::uint64_t i = 0; i < got.size(); ++i) REQUIRE(got[i] == rand_float_ref(i, seed));
            // randn and randint take the seed as a parameter too.
            (void)lt::randn<float>(shape, seed).to_vector();
            const std::vector<std::int32_t> ints = lt::randint<std::int32_t>(-5, 7, shape, seed).to_vector();
            for (std::uint64_t i = 0; i < ints.size(); ++i) {
                const std::uint64_t r63 = lt::detail::philox_bits(i, seed) >> 1;
                REQUIRE(ints[i] == static_cast<std::int32_t>(-5 + static_cast<std::int64_t>(r63 % 12)));
            }
            if (step == 0) after_first.emplace(d);
        }
        check_nothing_built(d, *after_first);
    });
}

TEST_CASE("a new random key each step builds no new kernel (the draw's key is a kernel argument)") {
    for_each_device([](lt::Device d) {
        const lt::Shape shape{3, 1000};
        const lt::Key root(5);
        std::optional<Builds> after_first;
        std::vector<float> previous;
        for (std::uint64_t step = 0; step < 6; ++step) {
            const auto [k1, k2] = lt::split(lt::fold_in(root, step));
            INFO("step " << step);
            const std::vector<float> got = lt::rand<float>(shape, k1).to_vector();
            CHECK(got != previous);
            previous = got;
            (void)lt::randn<float>(shape, k2).to_vector();
            (void)lt::dropout(lt::ones<float>(shape), 0.25, k2).to_vector();
            if (step == 0) after_first.emplace(d);
        }
        check_nothing_built(d, *after_first);
    });
}

TEST_CASE("random tensors are bit-identical across devices for a seed") {
    const auto devices = test_devices();
    const lt::Shape shape{257, 33};
    for (std::uint64_t seed : {std::uint64_t(0), std::uint64_t(42), ~std::uint64_t(0)}) {
        const std::vector<float> on_host = lt::rand<float>(shape, seed, lt::Device::host()).to_vector();
        const std::vector<double> normal_host = lt::randn<double>(shape, seed, lt::Device::host()).to_vector();
        for (lt::Device d : devices) {
            INFO("device " << d.str() << ", seed " << seed);
            CHECK(lt::rand<float>(shape, seed, d).to_vector() == on_host);
            const std::vector<double> normal = lt::randn<double>(shape, seed, d).to_vector();
            for (std::size_t i = 0; i < normal.size(); ++i)  // log, sqrt, cos may round differently
                REQUIRE(normal[i] == doctest::Approx(normal_host[i]).epsilon(1e-12));
        }
    }
}

TEST_CASE("changing clamp bounds, where values, full values and pad values build no new kernel") {
    for_each_device([](lt::Device d) {
        const lt::Shape shape{64, 33};
        lt::Tensor<float> x = param_input(shape, 5);
        const Ref rx = random_ref<float>(shape, 5);
        lt::Tensor<std::int32_t> xi = lt::cast<std::int32_t>(x * 100.0f);
        xi.realize();
        std::optional<Builds> after_first;
        for (int step = 0; step < 6; ++step) {
            INFO("step " << step);
            const float lo = -0.5f + 0.1f * static_cast<float>(step), hi = 0.2f + 0.05f * static_cast<float>(step);
            check_close(lt::clamp(x, lo, hi), map(rx, [&](double v) { return std::min<double>(std::max<double>(v, lo), hi); }),
                        0, 0);
            const float fill = 1.5f * static_cast<float>(step) - 3.0f;
            check_close(lt::where(x > 0.0f, x, fill), map(rx, [&](double v) { return v > 0 ? v : fill; }), 0, 0);
            check_close(lt::full<float>(shape, fill) * x, map(rx, [&](double v) { return static_cast<float>(fill * v); }),
                        0, 0);
            // An int32 scalar, a double scalar and a bool value.
            const std::int32_t k = 7 * step - 20;
            const std::vector<std::int32_t> xis = xi.to_vector();
            const std::vector<std::int32_t> shifted = (xi + k).to_vector();
            for (std::size_t i = 0; i < xis.size(); ++i) REQUIRE(shifted[i] == xis[i] + k);
            const double scale = 0.25 * step - 1.0;
            check_close(lt::cast<double>(x) * scale, map(rx, [&](double v) { return v * scale; }), 0, 0);
            const bool flag = step % 2 == 0;
            const std::vector<bool> picked = lt::Tensor<bool>(lt::where(x > 0.5f, flag, x < 0.1f)).to_vector();
            for (std::size_t i = 0; i < picked.size(); ++i) REQUIRE(picked[i] == (rx.v[i] > 0.5 ? flag : rx.v[i] < 0.1));
            // A pad value.
            const std::vector<float> padded = x.pad({{1, 0}, {0, 2}}, fill).to_vector();
            REQUIRE(padded.size() == 65u * 35u);
            CHECK(padded[0] == fill);
            CHECK(padded[35 + 33] == fill);
            CHECK(padded[35 + 1] == static_cast<float>(rx.v[1]));
            if (step == 0) after_first.emplace(d);
        }
        check_nothing_built(d, *after_first);
    });
}

TEST_CASE("half and composite scalars are parameters; values at their limits pass through exactly") {
    for_each_device([](lt::Device d) {
        const lt::Shape shape{40};
        lt::Tensor<float> x = param_input(shape, 9);
        const Ref rx = random_ref<float>(shape, 9);
        lt::Tensor<lt::half> h = lt::cast<lt::half>(x);
        h.realize();
        std::optional<Builds> after_first;
        const float values[] = {0.5f, 3.0f, -7.25f, 65504.0f, 1e-3f, 0.0f};
        for (int step = 0; step < 6; ++step) {
            const float v = values[step];
            INFO("step " << step << ", value " << v);
            // half: the scalar is rounded to half once, as a literal would be.
            const std::vector<lt::half> hs = h.to_vector();
            const std::vector<lt::half> scaled = (h * lt::half(v)).to_vector();
            for (std::size_t i = 0; i < hs.size(); ++i)
                REQUIRE(static_cast<float>(scaled[i]) == static_cast<float>(lt::half(static_cast<float>(hs[i]) * static_cast<float>(lt::half(v)))));
            // A composite's scalar argument (layer_norm's epsilon).
            const double eps = 1e-5 + std::fabs(v);
            double mean = 0, var = 0;
            for (double e : rx.v) mean += e / 40;
            for (double e : rx.v) var += (e - mean) * (e - mean) / 40;
            check_close(lt::layer_norm(x, -1, eps), map(rx, [&](double e) { return (e - mean) / std::sqrt(var + eps); }),
                        1e-4, 1e-5);
            if (step == 0) after_first.emplace(d);
        }
        check_nothing_built(d, *after_first);
        // Extreme values pass through exactly.
        const float specials[] = {std::numeric_limits<float>::infinity(), -std::numeric_limits<float>::infinity(),
                                  std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::max(),
                                  std::numeric_limits<float>::denorm_min(), -0.0f};
        for (float s : specials) {
            const std::vector<float> got = lt::full<float>(shape, s).to_vector();
            for (float g : got) REQUIRE(std::memcmp(&g, &s, sizeof g) == 0);
        }
        for (std::int64_t s : {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max(), std::int64_t(0)}) {
            const std::vector<std::int64_t> got = (lt::full<std::int64_t>(shape, 0) + s).to_vector();
            for (std::int64_t g : got) REQUIRE(g == s);
        }
    });
}

TEST_CASE("pow's exact exponents (2, 1, -1, 0.5) stay exact when the exponent is a parameter") {
    for_each_device([](lt::Device d) {
        const lt::Shape shape{500};
        lt::Tensor<float> x = param_input(shape, 11) * 3.0f - 1.0f;
        const std::vector<float> xs = x.to_vector();
        std::optional<Builds> after_first;
        const float exponents[] = {2.0f, 1.0f, -1.0f, 0.5f, 3.0f, 2.0f};
        for (int step = 0; step < 6; ++step) {
            const float p = exponents[step];
            INFO("exponent " << p);
            const std::vector<float> got = lt::pow(x, p).to_vector();
            for (std::size_t i = 0; i < xs.size(); ++i) {
                const float v = xs[i];
                if (p == 2.0f) REQUIRE(got[i] == v * v);
                else if (p == 1.0f) REQUIRE(got[i] == v);
                else if (p == -1.0f) REQUIRE(got[i] == 1.0f / v);
                else if (p == 0.5f && v >= 0) REQUIRE(got[i] == std::sqrt(v));
                else if (p == 0.5f) REQUIRE(std::isnan(got[i]));
                else REQUIRE(got[i] == doctest::Approx(std::pow(static_cast<double>(v), 3.0)).epsilon(1e-5));
            }
            if (step == 0) after_first.emplace(d);
        }
        check_nothing_built(d, *after_first);
    });
}

TEST_CASE("a new length of an element-wise expression builds no new OpenCL program; every length computes right") {
    for_each_device([](lt::Device d) {
        lt::detail::backend_for(d).clear_kernel_cache();
        lt::reset_compile_stats(d);
        // Lengths of one vector width (odd: one element a work-item) and of another (multiples
        // of 4), on both sides of a work-group; and a broadcast over a batch of varying size.
        for (std::int64_t n : {5, 255, 257, 4099, 100003}) {
            INFO("length " << n);
            const Ref rx = random_ref<float>({n}, 40);
            check_close(lt::exp(make_tensor<float>(rx) * 0.5f) - 1.0f, map(rx, [](double v) { return std::exp(v * 0.5) - 1.0; }));
        }
        const std::size_t odd_programs = lt::compile_stats(d).programs_built + lt::compile_stats(d).disk_hits;
        for (std::int64_t n : {4, 256, 1000, 65536}) {
            INFO("length " << n);
            const Ref rx = random_ref<float>({n}, 41);
            check_close(lt::exp(make_tensor<float>(rx) * 0.5f) - 1.0f, map(rx, [](double v) { return std::exp(v * 0.5) - 1.0; }));
        }
        const std::size_t vector_programs = lt::compile_stats(d).programs_built + lt::compile_stats(d).disk_hits - odd_programs;
        const Ref rb = random_ref<float>({24}, 42);
        for (std::int64_t rows : {3, 11, 700}) {
            INFO("rows " << rows);
            const Ref ra = random_ref<float>({rows, 24}, 43);
            Ref want = ra;
            for (std::size_t i = 0; i < want.v.size(); ++i) want.v[i] = ra.v[i] * 2.0 + rb.v[i % 24];
            check_close(make_tensor<float>(ra) * 2.0f + make_tensor<float>(rb), want);
        }
        const std::size_t programs = lt::compile_stats(d).programs_built + lt::compile_stats(d).disk_hits;
        if (d.kind == lt::Device::Kind::OpenCL) {
            CHECK(odd_programs == 1);
            CHECK(vector_programs == 1);
            CHECK(programs == 3);
        }
        // (One element, and a batch of one row, are kernels of their own shape: not counted.)
        for (std::int64_t n : {1, 24}) {
            const Ref rx = random_ref<float>({n}, 44);
            check_close(lt::exp(make_tensor<float>(rx) * 0.5f) - 1.0f, map(rx, [](double v) { return std::exp(v * 0.5) - 1.0; }));
        }
        // Reductions along rows: the batch's size is an argument too, once it fills a work-group.
        const std::size_t before_rows = lt::compile_stats(d).programs_built + lt::compile_stats(d).disk_hits;
        for (std::int64_t rows : {64, 300, 1001}) {
            INFO("softmax rows " << rows);
            const Ref rx = random_ref<float>({rows, 64}, 45);
            Ref want = rx;
            for (std::int64_t r = 0; r < rows; ++r) {
                double top = -INFINITY, total = 0;
                for (std::int64_t c = 0; c < 64; ++c) top = std::max(top, rx.v[static_cast<std::size_t>(r * 64 + c)]);
                for (std::int64_t c = 0; c < 64; ++c) total += std::exp(rx.v[static_cast<std::size_t>(r * 64 + c)] - top);
                for (std::int64_t c = 0; c < 64; ++c)
                    want.v[static_cast<std::size_t>(r * 64 + c)] = std::exp(rx.v[static_cast<std::size_t>(r * 64 + c)] - top) / total;
            }
            check_close(lt::softmax(make_tensor<float>(rx), -1), want, 1e-5, 1e-6);
        }
        const std::size_t softmax_programs = lt::compile_stats(d).programs_built + lt::compile_stats(d).disk_hits - before_rows;
        for (std::int64_t rows : {16, 500, 3001}) {
            INFO("row sums, rows " << rows);
            const Ref rx = random_ref<float>({rows, 40}, 46);
            check_close(make_tensor<float>(rx).sum(1), reduce(rx, {1}, false, 0, ref_add), 1e-5, 1e-5);
        }
        const std::size_t sum_programs =
            lt::compile_stats(d).programs_built + lt::compile_stats(d).disk_hits - before_rows - softmax_programs;
        if (d.kind == lt::Device::Kind::OpenCL) {
            CHECK(softmax_programs == 1);
            CHECK(sum_programs == 1);
        }
        // A block in the middle of a buffer: the count bounds the writes.
        lt::Tensor<float> x = lt::full<float>({1000}, -1.0f);
        x.realize();
        x.slice(0, 3, 998).assign(lt::arange<float>(0, 995) * 2.0f);
        const std::vector<float> got = x.to_vector();
        for (std::size_t i = 0; i < got.size(); ++i) {
            INFO("element " << i);
            REQUIRE(got[i] == (i < 3 || i >= 998 ? -1.0f : 2.0f * static_cast<float>(i - 3)));
        }
    });
}

TEST_CASE("lt::compile_stats counts compiled kernels and cache hits; LAZYTENSOR_DEBUG says when it compiles") {
    for_each_device([](lt::Device d) {
        lt::reset_compile_stats(d);
        CHECK(lt::compile_stats(d).kernels_compiled == 0);
        // A structure no other test builds: an odd shape and an op mix of its own.
        lt::Tensor<float> x = param_input({7, 131}, 3);
        const std::string first = debug_output(1, [&] { (lt::sin(x) * 1.25f - lt::floor(x * 3.0f)).realize(); });
        const lt::CompileStats s = lt::compile_stats(d);
        CHECK(s.kernels_compiled == 1);
        CHECK(s.compile_ms > 0);
        CHECK(first.find("compiled in") != std::string::npos);
        CHECK(first.find("not in this device's kernel cache") != std::string::npos);
        if (d.kind == lt::Device::Kind::OpenCL) CHECK(s.programs_built + s.disk_hits == 1);
        else CHECK(s.programs_built + s.disk_hits == 0);
        // Another value: the plan is reused, nothing is compiled or printed about compiling.
        const std::string again = debug_output(1, [&] { (lt::sin(x) * 2.5f - lt::floor(x * 4.0f)).realize(); });
        CHECK(again.find("compiled in") == std::string::npos);
        CHECK(lt::compile_stats(d).kernels_compiled == 1);
        // A new plan of a known kernel structure (another shape, same element count): a memory hit.
        lt::Tensor<float> y = param_input({131, 7}, 4);
        (lt::sin(y) * 2.5f - lt::floor(y * 4.0f)).realize();
        CHECK(lt::compile_stats(d).kernels_compiled == 1);
        CHECK(lt::compile_stats(d).memory_hits >= 1);
    });
}

TEST_CASE("a first realize with several new kernels builds them as one program, with the same results as one by one") {
    for_each_device([](lt::Device d) {
        // Four outputs, each its own kernel, of structures no other test makes.
        lt::Tensor<float> x = param_input({6, 77}, 21);
        const Ref rx = random_ref<float>({6, 77}, 21);
        auto make = [&](float k) {
            return std::vector<lt::Tensor<float>>{lt::exp(x * k).sum(1), lt::tanh(x + k).max(0), (x * x - k).min(1),
                                                  lt::sqrt(x * x + k) * 0.5f};
        };
        lt::detail::backend_for(d).clear_kernel_cache();
        lt::reset_compile_stats(d);
        std::vector<lt::Tensor<float>> together = make(0.75f);
        lt::realize({together[0], together[1], together[2], together[3]});
        CHECK(lt::compile_stats(d).kernels_compiled == 4);
        // On OpenCL the four are one program (unless a program of one of them was in memory).
        if (d.kind == lt::Device::Kind::OpenCL) CHECK(lt::compile_stats(d).programs_built + lt::compile_stats(d).disk_hits == 1);
        // One by one, from a cold cache again.
        lt::detail::backend_for(d).clear_kernel_cache();
        std::vector<lt::Tensor<float>> single = make(0.75f);
        for (auto& t : single) t.realize();
        for (std::size_t k = 0; k < 4; ++k) CHECK(together[k].to_vector() == single[k].to_vector());
        check_close(together[0], reduce(map(rx, [](double v) { return std::exp(v * 0.75); }), {1}, false, 0, ref_add),
                    1e-5, 1e-5);
    });
}

TEST_CASE("LAZYTENSOR_KERNEL_CACHE bounds the kernel cache (and OpenCL's program cache) of every device") {
    for_each_device([](lt::Device d) {
        auto& backend = lt::detail::backend_for(d);
        KernelCacheCapacity small(d, 3);
        lt::Tensor<float> x = param_input({50}, 8);
        for (int k = 1; k <= 6; ++k) {  // six structures: a chain of k ops each
            lt::Tensor<float> e = x;
            for (int j = 0; j < k; ++j) e = lt::sin(e);
            e.realize();
            CHECK(backend.cached_kernels() <= 3);
        }
#if LAZYTENSOR_OPENCL
        if (d.kind == lt::Device::Kind::OpenCL) CHECK(lt::detail::opencl::opencl_backend(d.index).cached_programs() <= 3);
#endif
    });
}

#if LAZYTENSOR_OPENCL
TEST_CASE("a schedule's new kernels that do not build as one program are built one by one") {
    for (lt::Device d : test_devices()) {
        if (d.kind != lt::Device::Kind::OpenCL) continue;
        INFO("device " << d.str());
        auto& be = lt::detail::opencl::opencl_backend(d.index);
        lt::Tensor<float> x = lt::tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3}, d);
        const std::string options = be.build_options();
        // A macro that breaks the second kernel function of a combined program only (alone, a
        // kernel's function is lt_kernel).
        be.clear_kernel_cache();
        lt::reset_compile_stats(d);
        be.exchange_build_options(options + " -Dlt_kernel1=(");
        lt::Tensor<float> a = (x * 2.0f).sum(1), b = (x + 1.0f).max(0);
        try {
            lt::realize({a, b});
        } catch (...) {
            be.exchange_build_options(options);
            throw;
        }
        be.exchange_build_options(options);
        CHECK(a.to_vector() == std::vector<float>{12, 30});
        CHECK(b.to_vector() == std::vector<float>{5, 6, 7});
        CHECK(lt::compile_stats(d).kernels_compiled == 2);
        CHECK(lt::compile_stats(d).programs_built + lt::compile_stats(d).disk_hits == 2);

        // Every build fails: the error carries one kernel's own source, and nothing is lost.
        be.clear_kernel_cache();
        be.exchange_build_options(options + " -Dlt_kernel=( -Dlt_kernel0=( -Dlt_kernel1=(");
        lt::Tensor<float> c = (x * 3.0f).sum(0), e = lt::exp(x).min(1);
        std::string message;
        try {
            lt::realize({c, e});
        } catch (const lt::BackendError& error) {
            message = error.what();
        }
        be.exchange_build_options(options);
        CHECK(message.find("CL_BUILD_PROGRAM_FAILURE") != std::string::npos);
        CHECK(message.find("void lt_kernel(") != std::string::npos);
        CHECK(!c.is_realized());
        CHECK(c.to_vector() == std::vector<float>{15, 21, 27});
        CHECK(e.to_vector()[0] == std::exp(1.0f));
    }
}
#endif

TEST_CASE("a scalar the operation's dtype cannot hold is a ValueError naming it, never a wrapped value") {
    for_each_device([](lt::Device d) {
        lt::Tensor<std::uint8_t> u8 = lt::tensor<std::uint8_t>({0, 100, 200, 255}, {4}, d);
        lt::Tensor<std::int32_t> i32 = lt::tensor<std::int32_t>({-5, 0, 7}, {3}, d);
        // At the edges: fits.
        CHECK(lt::Tensor<bool>(u8 < 255).to_vector() == std::vector<bool>{true, true, true, false});
        CHECK(lt::Tensor<bool>(u8 >= 0).to_vector() == std::vector<bool>{true, true, true, true});
        CHECK(lt::clamp(u8, 0, 255).to_vector() == std::vector<std::uint8_t>{0, 100, 200, 255});
        CHECK((i32 + std::numeric_limits<std::int32_t>::min() / 2).to_vector()[1] == std::numeric_limits<std::int32_t>::min() / 2);
        CHECK((i32 * 1).to_vector() == std::vector<std::int32_t>{-5, 0, 7});
        // Past them: an error naming the value, the dtype and its range.
        CHECK_THROWS_WITH_AS(static_cast<void>(u8 < 256), "lt: the scalar 256 does not fit uint8 (0 to 255), the dtype the operation computes in; "
                             "cast the tensor first, e.g. lt::cast<int64_t>(x) or lt::cast<float>(x)", lt::ValueError);
        CHECK_THROWS_AS(lt::clamp(u8, 0, 300), lt::ValueError);
        CHECK_THROWS_AS(u8 + (-1), lt::ValueError);
        CHECK_THROWS_AS(lt::where(u8 > 100, u8, 1000), lt::ValueError);
        CHECK_THROWS_AS(static_cast<void>(i32 == std::int64_t(1) << 40), lt::ValueError);
        CHECK_THROWS_AS(i32 - std::numeric_limits<std::int64_t>::min(), lt::ValueError);
        // int64 holds every integer scalar; a floating scalar makes an integer tensor compute in float.
        lt::Tensor<std::int64_t> i64 = lt::cast<std::int64_t>(i32);
        CHECK((i64 + std::numeric_limits<std::int64_t>::max()).to_vector()[1] == std::numeric_limits<std::int64_t>::max());
        CHECK(lt::Tensor<bool>(u8 < 256.5f).to_vector() == std::vector<bool>{true, true, true, true});
        // Assigning: a floating scalar into integers is truncated when it fits, an error when not.
        lt::Tensor<std::int32_t> t = lt::zeros<std::int32_t>({2}, d);
        t.realize();
        t.assign(2.7);
        CHECK(t.to_vector() == std::vector<std::int32_t>{2, 2});
        CHECK_THROWS_AS(t.assign(1e20), lt::ValueError);
        CHECK_THROWS_AS(t.assign(std::nan("")), lt::ValueError);
        CHECK_THROWS_AS(t.assign(std::int64_t(3000000000)), lt::ValueError);
        CHECK(t.to_vector() == std::vector<std::int32_t>{2, 2});  // a refused assign changed nothing
        // Floating dtypes take any value: past half's range it is inf, as in IEEE arithmetic.
        lt::Tensor<lt::half> h = lt::tensor<lt::half>({lt::half(1.0f)}, {1}, d);
        CHECK(std::isinf(static_cast<float>((h * 1e6f).to_vector()[0])));
    });
}
