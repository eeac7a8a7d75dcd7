// SPDX-License-Identifier: MIT
// Faults: check mode catching a wrong kernel, a device that runs out of memory, a device that
// disappears mid-run. Each gives a clear error and loses nothing already realized. (A kernel
// that fails to build and a corrupt or unwritable disk cache are in test_opencl.cpp.)
#include "common.hpp"

#include <optional>

namespace {

/// Turns check mode on for a scope, and the result-corrupting hook off at its end.
struct CheckModeOn {
    bool was = lt::check_enabled();
    CheckModeOn() { lt::set_check_enabled(true); }
    ~CheckModeOn() {
        lt::detail::after_launch_hook() = nullptr;
        lt::set_check_enabled(was);
    }
};

/// Overwrites element `at` of every float32 output of `numel` elements: a miscompiled kernel.
void corrupt_outputs(std::int64_t numel, std::size_t at, float value) {
    lt::detail::after_launch_hook() = [=](lt::Buffer& out) {
        if (out.dtype() == lt::DType::Float32 && out.numel() == numel)
            lt::detail::backend_for(out.device()).write(out, at * sizeof(float), &value, sizeof value);
    };
}

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

/// The message of the BackendError that realizing `t` throws (the test fails if it does not).
std::string realize_error(const lt::Tensor<float>& t) {
    try {
        t.realize();
    } catch (const lt::BackendError& e) {
        return e.what();
    }
    FAIL_CHECK("realize did not throw");
    return {};
}

}  // namespace

TEST_CASE("check mode: a kernel that disagrees with the host interpreter throws with its IR and source") {
    for_each_device([](lt::Device d) {
        // On the host, only compiled loops have a second implementation to compare with.
        const bool checked = d != lt::Device::host() || lt::static_kernels_enabled();
        CheckModeOn on;
        lt::Tensor<float> a = lt::tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3});
        lt::Tensor<float> e = lt::sin(a) * 2.0f + 3.0f;
        corrupt_outputs(6, 4, 42.0f);
        if (!checked) {
            CHECK_NOTHROW(e.realize());
            return;
        }
        const std::string m = realize_error(e);
        INFO(m);
        CHECK(contains(m, "LAZYTENSOR_CHECK: kernel 0 of 1 on " + d.str()));
        CHECK(contains(m, "the host interpreter"));
        CHECK(contains(m, "1 of 6 elements of its float32 output differ; the first is element 4: 42"));
        // README's row: sin(5) * 2 + 3 has magnitude (|sin 5| + 5) * 2 + 3.
        CHECK(contains(m, "1.08215 from the reference (tolerance 0.000257394: 0.0001 relative + 1e-05 times the element's magnitude 14.9178 + 4 units of the smallest subnormal)"));
        CHECK(contains(m, "--- kernel IR ---"));
        CHECK(contains(m, "sin"));
        if (d != lt::Device::host()) CHECK(contains(m, "--- generated source ---\n"));
        // Nothing was committed: the tensors are as they were and compute correctly.
        lt::detail::after_launch_hook() = nullptr;
        CHECK_FALSE(e.is_realized());
        const std::vector<float> v = e.to_vector();
        for (std::size_t i = 0; i < v.size(); ++i) CHECK(v[i] == doctest::Approx(std::sin(float(i + 1)) * 2 + 3));
        CHECK(a.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
    });
}

TEST_CASE("check mode: an infinite or NaN reference must be matched exactly") {
    for_each_device([](lt::Device d) {
        CheckModeOn on;
        lt::Tensor<float> a = lt::tensor<float>({1, 2, 1000, 4, 0, 6}, {6});
        lt::Tensor<float> e = lt::exp(a) * 2.0f + (a - a) / a;  // element 2: inf; element 4: NaN
        corrupt_outputs(6, 2, 42.0f);                           // a finite value where inf belongs
        if (d == lt::Device::host() && !lt::static_kernels_enabled()) {
            // Interpreted, the host is the reference itself: nothing to compare, nothing thrown.
            CHECK_NOTHROW(e.realize());
            return;
        }
        std::string m = realize_error(e);
        CHECK(contains(m, "the first is element 2: 42 on " + d.str()));
        CHECK(!e.is_realized());
        corrupt_outputs(6, 4, 7.0f);  // a number where NaN belongs
        m = realize_error(e);
        CHECK(contains(m, "the first is element 4: 7 on " + d.str()));
        lt::detail::after_launch_hook() = nullptr;
        const std::vector<float> v = e.to_vector();
        CHECK(std::isinf(v[2]));
        CHECK(std::isnan(v[4]));
    });
}

TEST_CASE("check mode: a subnormal result may differ by a few units of the smallest subnormal, not more") {
    for_each_device([](lt::Device d) {
        CheckModeOn on;
        // exp(-103) is about 1.4e-45 * 1.0: the float32 result is the smallest subnormal or 0.
        lt::Tensor<float> a = lt::tensor<float>({1, -103.0f, 2, 3}, {4});
        lt::Tensor<float> e = lt::exp(a) * 1.0f;
        const float unit = std::numeric_limits<float>::denorm_min();
        corrupt_outputs(4, 1, 3 * unit);  // within 4 units of the reference
        if (d == lt::Device::host() && !lt::static_kernels_enabled()) {
            CHECK_NOTHROW(e.realize());  // interpreted: the host is the reference itself
            return;
        }
        CHECK_NOTHROW(e.realize());
        CHECK(e.is_realized());
        lt::Tensor<float> e2 = lt::exp(a) * 1.0f + 0.0f;
        corrupt_outputs(4, 1, 40 * unit);  // 40 units: far outside
        const std::string m = realize_error(e2);
        CHECK(contains(m, "the first is element 1: 5.60519e-44 on " + d.str()));
        CHECK(contains(m, "1 of 4 elements of its float32 output differ"));
        CHECK_FALSE(e2.is_realized());
    });
}

TEST_CASE("check mode: the bound is per element (a small element of a wide-range output is checked, cancellation is allowed where it happens)") {
    for_each_device([](lt::Device d) {
        CheckModeOn on;
        lt::Tensor<float> a = lt::tensor<float>({1e8f, 1e-8f, -3e7f, 2e-6f, 5.0f, -1e-20f}, {6});
        lt::Tensor<float> e = a * 2.0f + 1e-30f;
        corrupt_outputs(6, 1, 3e-8f);  // 2e-8 belongs there: off by half, far below 1e-5 * 2e8
        if (d == lt::Device::host() && !lt::static_kernels_enabled()) {
            // Interpreted, the host is the reference itself: nothing to compare, nothing thrown.
            CHECK_NOTHROW(e.realize());
            return;
        }
        std::string m = realize_error(e);
        CHECK(contains(m, "1 of 6 elements of its float32 output differ; the first is element 1: 3e-08"));
        corrupt_outputs(6, 5, -1e-20f);  // -2e-20 belongs there
        m = realize_error(e);
        CHECK(contains(m, "the first is element 5: -1e-20"));
        lt::detail::after_launch_hook() = nullptr;
        CHECK(e.to_vector()[1] == 2e-8f + 1e-30f);
        // x - mean(x) over rows of values near 1e4: the mean may round differently on each
        // backend, and the tiny differences it leaves are within |x| + |mean| of rounding.
        const Ref rx = random_ref<float>({8, 4096}, 11, -1.0, 1.0);
        lt::Tensor<float> x = make_tensor<float>(rx, d) + 1e4f;
        lt::Tensor<float> centered = x - x.mean(1, true), scaled = lt::exp(x * 1e-9f) - 1.0f;
        CHECK_NOTHROW(lt::realize({centered, scaled}));
        // And a wrong element of the centered rows is caught.
        corrupt_outputs(8 * 4096, 3, 0.25f);
        lt::Tensor<float> again = x - x.mean(1, true) + 0.0f;
        m = realize_error(again);
        CHECK(contains(m, "the first is element 3: 0.25"));
    });
}

TEST_CASE("check mode: an assign that disagrees throws and leaves its target as it was" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;  // (on the host the interpreter is the reference)
        CheckModeOn on;
        lt::Tensor<float> t = lt::tensor<float>({1, 2, 3, 4, 5, 6}, {6});
        t.realize();
        corrupt_outputs(6, 1, 42.0f);
        const std::string m = [&] {
            try {
                t.slice(0, 0, 4).assign(t.slice(0, 2, 6) * 2.0f);
            } catch (const lt::BackendError& e) {
                return std::string(e.what());
            }
            FAIL_CHECK("the assign did not throw");
            return std::string();
        }();
        CHECK(contains(m, "LAZYTENSOR_CHECK"));
        lt::detail::after_launch_hook() = nullptr;
        CHECK(t.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
        t.slice(0, 0, 4).assign(t.slice(0, 2, 6) * 2.0f);  // and it works once the fault is gone
        CHECK(t.to_vector() == std::vector<float>{6, 8, 10, 12, 5, 6});
    });
}

TEST_CASE("check mode: a matrix product that disagrees with the host's GEMM throws" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d == lt::Device::host()) return;  // the host GEMM is the reference itself
        CheckModeOn on;
        const Ref ra = random_ref<float>({4, 5}, 1), rb = random_ref<float>({5, 3}, 2);
        lt::Tensor<float> a = make_tensor<float>(ra), b = make_tensor<float>(rb);
        lt::Tensor<float> c = lt::matmul(a, b);
        corrupt_outputs(12, 0, 1e6f);
        const std::string m = realize_error(c);
        INFO(m);
        CHECK(contains(m, "LAZYTENSOR_CHECK: matmul 0 of 1 on " + d.str()));
        CHECK(contains(m, "the host's packed GEMM"));
        CHECK(contains(m, "gemm float32: batch [], m 4, n 3, k 5"));
        lt::detail::after_launch_hook() = nullptr;
        CHECK_FALSE(c.is_realized());
        check_close(c, ref_matmul_2d(ra, rb), 1e-5, 1e-5);
    });
}

TEST_CASE("check mode: a scan that disagrees with the host's scan throws; scans that agree pass" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d == lt::Device::host()) return;  // the host scan is the reference itself
        CheckModeOn on;
        const Ref rx = random_ref<float>({3, 700}, 5);
        lt::Tensor<float> x = make_tensor<float>(rx);
        // Along rows, across rows, and through a view read by a copy first; int64 exactly.
        lt::Tensor<float> cube = x.reshape({3, 20, 35}).permute({2, 0, 1}).realize();
        CHECK_NOTHROW(lt::realize({x.cumsum(1), x.cumprod(0), cube.cumsum(2)}));
        CHECK(lt::schedule(cube.cumsum(2))[0].ops == std::vector<std::string>{"copy", "cumsum"});
        CHECK_NOTHROW(lt::cast<std::int64_t>(x * 100.0f).cumsum(1).realize());
        lt::Tensor<float> c = x.cumsum(1);
        corrupt_outputs(2100, 1500, 1e6f);
        const std::string m = realize_error(c);
        INFO(m);
        CHECK(contains(m, "LAZYTENSOR_CHECK: scan 0 of 1 on " + d.str()));
        CHECK(contains(m, "the host's scan"));
        CHECK(contains(m, "scan sum float32: outer 3, length 700, inner 1"));
        lt::detail::after_launch_hook() = nullptr;
        CHECK_FALSE(c.is_realized());
        double row = 0;
        for (std::size_t i = 0; i < 700; ++i) row += rx.v[i];
        CHECK(c.to_vector()[699] == doctest::Approx(row).epsilon(1e-5));
        // Scans with their producer and consumer fused: rows in chunks, columns in chunks, a
        // cast from half and back, int64 with an integer consumer, a held scan.
        const Ref long_rows = random_ref<float>({2, 70000}, 6);
        lt::Tensor<float> lx = make_tensor<float>(long_rows);
        lt::Tensor<float> held = lt::cumsum(x * 0.5f, 1);
        const lt::Tensor<float> rows = lt::exp(lt::cumsum(lx * 1e-3f, 1)) + 1.0f;
        const lt::Tensor<float> columns = lt::cumprod(lx.transpose(0, 1) * 1e-4f + 1.0f, 0) * 2.0f;
        const lt::Tensor<float> halves = lt::cumsum(x.cast<lt::half>(), 1).cast<float>();
        const lt::Tensor<float> integers = lt::cast<float>(lt::cumsum(lt::cast<std::int32_t>(x * 100.0f), 1) * std::int64_t(3));
        const lt::Tensor<float> twice = held * 2.0f;
        CHECK_NOTHROW(lt::realize({rows, columns, halves, integers, twice}));
        CHECK(held.is_realized());
        // A fused scan that disagrees names the host's scan, its prologue and its epilogue.
        lt::Tensor<float> fused = lt::cumsum(x * 2.0f, 1) + 1.0f;
        REQUIRE(lt::schedule(fused).size() == 1);
        corrupt_outputs(2100, 3, 1e6f);
        const std::string fm = realize_error(fused);
        INFO(fm);
        CHECK(contains(fm, "LAZYTENSOR_CHECK: scan 0 of 1 on " + d.str()));
        CHECK(contains(fm, "the host's scan and interpreter"));
        CHECK(contains(fm, "--- prologue ---"));
        CHECK(contains(fm, "--- epilogue (reads the scan as p0) ---"));
        lt::detail::after_launch_hook() = nullptr;
        CHECK_FALSE(fused.is_realized());
        CHECK(fused.to_vector()[0] == doctest::Approx(2 * rx.v[0] + 1).epsilon(1e-6));
    });
}

TEST_CASE("check mode passes a mixed workload: reductions, views, casts, integers, matmul, assign") {
    for_each_device([](lt::Device) {
        CheckModeOn on;
        const Ref ra = random_ref<float>({6, 7}, 3), rb = random_ref<float>({7, 5}, 4);
        lt::Tensor<float> a = make_tensor<float>(ra), b = make_tensor<float>(rb);
        lt::Tensor<float> soft = lt::softmax(a, -1);
        lt::Tensor<float> mixed = lt::tanh(lt::matmul(a, b)).sum(0) + b.flip(0).slice(0, 1, {}, 2).max(0);
        lt::Tensor<std::int64_t> counts = (lt::cast<std::int32_t>(a * 3.0f) % 4).sum(1);
        lt::Tensor<double> wide = lt::cast<double>(a.permute({1, 0}).pad({{1, 0}, {0, 2}}, 0.5f)).mean(1);
        lt::Tensor<float> target = lt::zeros<float>({6, 7});
        target.realize();
        CHECK_NOTHROW(lt::realize({soft, mixed, counts, wide}));
        CHECK_NOTHROW(target.slice(0, 2, 4).assign(a.slice(0, 0, 2) * 2.0f));
        // The results themselves are right (check mode compared backends, not the truth).
        for (std::int64_t r = 0; r < 6; ++r) {
            double sum = 0;
            for (std::int64_t c = 0; c < 7; ++c) sum += soft.to_vector()[static_cast<std::size_t>(r * 7 + c)];
            CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
        }
        const std::vector<float> t = target.to_vector();
        CHECK(t[2 * 7 + 3] == doctest::Approx(2 * ra.v[3]));
        CHECK(t[0] == 0.0f);
        std::int64_t count0 = 0;
        for (std::size_t c = 0; c < 7; ++c)  // % is Python's: the sign of the divisor
            count0 += (static_cast<std::int32_t>(static_cast<float>(ra.v[c]) * 3.0f) % 4 + 4) % 4;
        CHECK(counts.to_vector()[0] == count0);
        // wide: row 0 is all padding; row i is column i - 1 of a and two padding values.
        const std::vector<double> w = wide.to_vector();
        REQUIRE(w.size() == 8u);
        CHECK(w[0] == doctest::Approx(0.5));
        for (std::size_t i = 1; i < 8; ++i) {
            double sum = 1.0;  // the two padding values
            for (std::size_t j = 0; j < 6; ++j) sum += static_cast<double>(static_cast<float>(ra.v[j * 7 + i - 1]));
            CHECK(w[i] == doctest::Approx(sum / 8).epsilon(1e-6));
        }
        // mixed: column sums of tanh(a @ b), plus the maximum over b's rows 5, 3 and 1.
        const Ref ab = ref_matmul_2d(ra, rb);
        const std::vector<float> m = mixed.to_vector();
        REQUIRE(m.size() == 5u);
        for (std::size_t c = 0; c < 5; ++c) {
            double col = 0;
            for (std::size_t r = 0; r < 6; ++r) col += std::tanh(ab.v[r * 5 + c]);
            const double most = std::max({rb.v[5 * 5 + c], rb.v[3 * 5 + c], rb.v[1 * 5 + c]});
            CHECK(m[c] == doctest::Approx(col + most).epsilon(1e-4));
        }
    });
}

TEST_CASE("a device that runs out of memory gives OutOfMemoryError and loses nothing") {
    for_each_device([](lt::Device d) {
        // Filling the host's memory (PoCL's too) would make this machine swap: only a GPU's
        // memory is filled for real, and only when LAZYTENSOR_TEST_FILL_GPU=1 (ctest's
        // reliability_fill_gpu, run alone: other processes could not even create a context on
        // the full GPU). A memory limit stands in for a full device elsewhere.
        bool gpu = false;
#if LAZYTENSOR_OPENCL
        gpu = d != lt::Device::host() && std::getenv("LAZYTENSOR_TEST_FILL_GPU") &&
              lt::detail::opencl::opencl_backend(d.index).kind() == "gpu";
#endif
        std::optional<MemoryLimit> limit;
        if (!gpu) limit.emplace(d, 1 << 20);
        const std::int64_t chunk = gpu ? std::int64_t(1) << 28 : 1 << 16;  // 1 GiB or 256 KiB of floats
        lt::Tensor<float> keep = lt::tensor<float>({1, 2, 3});
        lt::Tensor<float> lazy = lt::full<float>({chunk}, 1.0f) * keep.sum();  // needs a chunk too
        std::vector<lt::Tensor<float>> hogs;
        bool out_of_memory = false;
        for (int i = 0; i < 4096 && !out_of_memory; ++i) {
            try {
                hogs.push_back(lt::full<float>({chunk}, float(i)));
                hogs.back().realize();
                lt::synchronize(d);  // drivers allocate lazily: the first use may be what fails
            } catch (const lt::OutOfMemoryError& e) {
                out_of_memory = true;
                INFO(std::string(e.what()));
                CHECK(contains(e.what(), "out of memory"));
                CHECK(contains(e.what(), d.str()));
                hogs.pop_back();
            }
        }
        REQUIRE(out_of_memory);
        REQUIRE(!hogs.empty());
        MESSAGE(d.str() << ": out of memory after " << hogs.size() << " buffers of " << chunk * 4 << " bytes");
        // A realize that needs memory fails the same way, and leaves its tensors lazy.
        CHECK_THROWS_AS(lazy.realize(), lt::OutOfMemoryError);
        CHECK_FALSE(lazy.is_realized());
        // Everything realized before is intact; after freeing, work goes on.
        CHECK(hogs.front().to_vector()[0] == 0.0f);
        CHECK(hogs.back().to_vector()[static_cast<std::size_t>(chunk - 1)] == float(hogs.size() - 1));
        hogs.clear();
        limit.reset();
        CHECK(lazy.to_vector()[static_cast<std::size_t>(chunk - 1)] == 6.0f);
        CHECK(keep.to_vector() == std::vector<float>{1, 2, 3});
    });
}

#if LAZYTENSOR_OPENCL
TEST_CASE("a kernel build that fails inside realize gives the build log and source, and loses nothing" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d == lt::Device::host()) return;
        auto& backend = lt::detail::opencl::opencl_backend(d.index);
        lt::Tensor<float> done = lt::tensor<float>({1, 2, 3});
        done.realize();
        // Constants no other test uses: realize must build this kernel now.
        lt::Tensor<float> lazy = lt::cos(done) * 0.123456f + 7.654321f;
        const std::string options = backend.exchange_build_options("-cl-std=CL1.2 -lazytensor-no-such-option");
        struct Restore {
            lt::detail::opencl::OpenCLBackend& b;
            std::string options;
            ~Restore() { b.exchange_build_options(options); }
        } restore{backend, options};
        const std::string m = realize_error(lazy);
        INFO(m);
        CHECK(contains(m, "building a lazytensor kernel for " + d.str()));
        CHECK(contains(m, "--- build log ---"));
        CHECK(contains(m, "--- generated source (options: -cl-std=CL1.2 -lazytensor-no-such-option) ---"));
        CHECK(contains(m, "__kernel"));
        CHECK_FALSE(lazy.is_realized());
        CHECK(done.to_vector() == std::vector<float>{1, 2, 3});
        backend.exchange_build_options(options);
        restore.options = options;
        const std::vector<float> v = lazy.to_vector();
        CHECK(v[2] == doctest::Approx(std::cos(3.0f) * 0.123456f + 7.654321f));
    });
}

TEST_CASE("an OpenCL device lost mid-run (an invalid queue) gives a clear error and loses nothing" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d == lt::Device::host()) return;
        auto& backend = lt::detail::opencl::opencl_backend(d.index);
        lt::Tensor<float> done = lt::tensor<float>({1, 2, 3, 4});
        lt::Tensor<float> on_host = done.to(lt::Device::host());
        lt::Tensor<float> lazy = lt::exp(done) + 1.0f;
        lt::Tensor<float> product = lt::matmul(done.reshape({2, 2}), done.reshape({2, 2}));
        lt::synchronize(d);
        cl_command_queue queue = backend.exchange_queue(nullptr);
        struct Restore {
            lt::detail::opencl::OpenCLBackend& b;
            cl_command_queue q;
            ~Restore() { b.exchange_queue(q); }
        } restore{backend, queue};
        for (auto* attempt : {&lazy, &product}) {
            const std::string m = realize_error(*attempt);
            INFO(m);
            CHECK(contains(m, "CL_INVALID_COMMAND_QUEUE"));
            CHECK(contains(m, d.str()));
            CHECK(contains(m, "lost or reset"));
            CHECK_FALSE(attempt->is_realized());
        }
        CHECK_THROWS_AS(done.to_vector(), lt::BackendError);  // reading needs the device too
        CHECK(on_host.to_vector() == std::vector<float>{1, 2, 3, 4});
        (on_host * 2.0f).realize();  // the host goes on
        // The device comes back: what was realized there is intact, the lazy work runs.
        backend.exchange_queue(queue);
        restore.q = queue;
        CHECK(done.to_vector() == std::vector<float>{1, 2, 3, 4});
        CHECK(lazy.to_vector()[0] == doctest::Approx(std::exp(1.0f) + 1.0f));
        CHECK(product.to_vector() == std::vector<float>{7, 10, 15, 22});
    });
}
#endif
