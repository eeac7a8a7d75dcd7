// SPDX-License-Identifier: MIT
// Matrix products through the whole pipeline, on every test device: NumPy's matmul semantics
// against a double-precision reference, transposed and broadcast operands read in place,
// fusion around the product, integer products, and the errors users see.
#include <algorithm>

#include "common.hpp"

namespace {

/// A reference product with NumPy's rules, written out plainly, plus the sum of |a_ik * b_kj|
/// per element (the scale of the rounding error a float product may carry).
struct RefProduct {
    Ref value, magnitude;
};

RefProduct ref_matmul(const Ref& a_in, const Ref& b_in) {
    Ref a = a_in, b = b_in;
    const bool row = a.shape.size() == 1, col = b.shape.size() == 1;
    if (row) a.shape = lt::Shape{1, a.shape[0]};
    if (col) b.shape = lt::Shape{b.shape[0], 1};
    const std::size_t ra = a.shape.size(), rb = b.shape.size();
    const std::int64_t m = a.shape[ra - 2], k = a.shape[ra - 1], n = b.shape[rb - 1];
    REQUIRE(b.shape[rb - 2] == k);
    const lt::Shape batch = lt::detail::broadcast_shapes(lt::Shape(a.shape.begin(), a.shape.end() - 2),
                                                         lt::Shape(b.shape.begin(), b.shape.end() - 2), "ref");
    lt::Shape as = batch, bs = batch;
    as.push_back(m), as.push_back(k), bs.push_back(k), bs.push_back(n);
    const Ref x = broadcast(a, as), y = broadcast(b, bs);
    lt::Shape out = batch;
    if (!row) out.push_back(m);
    if (!col) out.push_back(n);
    RefProduct r{Ref{out, {}}, Ref{out, {}}};
    for (std::int64_t t = 0; t < lt::numel(batch); ++t)
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                double sum = 0, mag = 0;
                for (std::int64_t p = 0; p < k; ++p) {
                    const double prod = x.v[static_cast<std::size_t>((t * m + i) * k + p)] *
                                        y.v[static_cast<std::size_t>((t * k + p) * n + j)];
                    sum += prod;
                    mag += std::fabs(prod);
                }
                r.value.v.push_back(sum);
                r.magnitude.v.push_back(mag);
            }
    return r;
}

/// Checks a floating product element by element against the bound of a k-term sum's rounding.
template <class T>
void check_product(const lt::Tensor<T>& got_tensor, const RefProduct& expected, std::int64_t k) {
    REQUIRE(got_tensor.shape() == expected.value.shape);
    const std::vector<T> got = got_tensor.to_vector();
    const double eps = std::numeric_limits<T>::epsilon();
    int failures = 0;
    for (std::size_t i = 0; i < got.size() && failures < 5; ++i) {
        const double bound = 2.0 * static_cast<double>(k + 2) * eps * expected.magnitude.v[i] + 1e-30;
        const double diff = std::fabs(static_cast<double>(got[i]) - expected.value.v[i]);
        if (!(diff <= bound)) {
            ++failures;
            FAIL_CHECK("element " << i << " of shape " << expected.value.shape << ": got " << got[i] << ", expected "
                                  << expected.value.v[i] << " (bound " << bound << ")");
        }
    }
}

template <class T>
void check_matmul(const lt::Shape& sa, const lt::Shape& sb, unsigned seed) {
    INFO("shapes " << sa << " x " << sb);
    const Ref a = random_ref<T>(sa, seed), b = random_ref<T>(sb, seed + 1);
    const std::int64_t k = sa.back();
    check_product(lt::matmul(make_tensor<T>(a), make_tensor<T>(b)), ref_matmul(a, b), k);
}

std::size_t items_of_kind(const std::vector<lt::ScheduleItem>& items, lt::ScheduleItem::Kind kind) {
    return static_cast<std::size_t>(std::count_if(items.begin(), items.end(), [&](auto& i) { return i.kind == kind; }));
}

}  // namespace

TEST_CASE_TEMPLATE("square and rectangular products against a double reference", T, float, double) {
    for_each_device([](lt::Device) {
        unsigned seed = 1;
        for (std::int64_t s : {1, 2, 7, 31, 64, 65, 127, 257}) check_matmul<T>({s, s}, {s, s}, seed += 2);
        const std::int64_t shapes[][3] = {{7, 31, 65}, {65, 7, 1},  {1, 257, 2},  {127, 64, 31},
                                          {257, 2, 127}, {2, 65, 257}, {31, 1, 7}, {64, 127, 64}};
        for (auto& s : shapes) check_matmul<T>({s[0], s[1]}, {s[1], s[2]}, seed += 2);
    });
}

TEST_CASE("transposed and permuted operands are read in place") {
    for_each_device([](lt::Device device) {
        INFO("device " << device.str());
        const Ref a = random_ref<float>({65, 31}, 11), b = random_ref<float>({31, 127}, 12);
        const Ref at = permute(a, {1, 0}), bt = permute(b, {1, 0});  // stored transposed
        const auto ta = make_tensor<float>(at), tb = make_tensor<float>(bt);
        const auto A = make_tensor<float>(a), B = make_tensor<float>(b);
        const RefProduct expected = ref_matmul(a, b);
        const lt::Tensor<float> products[] = {lt::matmul(ta.t(), B), lt::matmul(A, tb.t()), ta.mT().matmul(tb.mT()),
                                              lt::matmul(tb, ta).t()};
        for (const auto& p : products) {
            const auto items = lt::schedule(p);
            CHECK(items_of_kind(items, lt::ScheduleItem::Kind::Matmul) == 1);
            CHECK(lt::kernel_count(items) == 0);  // no copy of a transposed operand
            check_product(p, expected, 31);
        }
        // A batch stored with its batch axis in the middle ([m, batch, k]) is read through strides.
        const Ref x = random_ref<float>({7, 5, 31}, 13), w = random_ref<float>({5, 31, 9}, 14);
        const auto xp = make_tensor<float>(x).permute({1, 0, 2});
        const auto p = lt::matmul(xp, make_tensor<float>(w));
        CHECK(lt::kernel_count(lt::schedule(p)) == 0);
        check_product(p, ref_matmul(permute(x, {1, 0, 2}), w), 31);
    });
}

TEST_CASE_TEMPLATE("batched products broadcast their batch axes", T, float, double) {
    for_each_device([](lt::Device) {
        check_matmul<T>({8, 1, 64, 32}, {4, 32, 16}, 21);  // the example: -> {8, 4, 64, 16}
        check_matmul<T>({3, 5, 7}, {7, 2}, 23);            // a shared right operand: one GEMM of 15 rows
        check_matmul<T>({5, 7}, {3, 7, 2}, 25);            // a shared left operand
        check_matmul<T>({2, 1, 3, 4}, {1, 5, 4, 6}, 27);   // both broadcast: a general batch
        check_matmul<T>({4, 1, 9}, {9, 3}, 29);            // m = 1 rows fold into one GEMM
        check_matmul<T>({6, 33, 17}, {6, 17, 65}, 31);     // one strided batch
        check_matmul<T>({1, 1, 5, 3}, {2, 2, 3, 4}, 33);
    });
    lt::Tensor<float> out = lt::matmul(lt::zeros<float>({8, 1, 64, 32}), lt::zeros<float>({4, 32, 16}));
    CHECK(out.shape() == lt::Shape{8, 4, 64, 16});
    // A right operand shared by the batch: one GEMM over all 15 rows, on every device.
    for_each_device([](lt::Device) {
        const auto x = make_tensor<T>(random_ref<T>({3, 5, 7}, 35)), w = make_tensor<T>(random_ref<T>({7, 2}, 36));
        const auto items = lt::schedule(lt::matmul(x, w));
        REQUIRE(items.size() == 1);
        CHECK(items[0].ir.find("batch [], m 15, n 2, k 7") != std::string::npos);
    });
}

TEST_CASE("one-dimensional operands follow NumPy") {
    for_each_device([](lt::Device) {
        check_matmul<float>({31}, {31}, 41);  // dot product: a 0-d result
        check_matmul<float>({7}, {7, 5}, 43);
        check_matmul<float>({6, 7}, {7}, 45);
        check_matmul<float>({7}, {3, 7, 5}, 47);
        check_matmul<float>({3, 6, 7}, {7}, 49);
        CHECK(lt::matmul(lt::ones<float>({4}), lt::ones<float>({4})).shape() == lt::Shape{});
        CHECK(lt::matmul(lt::ones<float>({4}), lt::ones<float>({4})).item() == 4.0f);
    });
}

TEST_CASE("producers fuse into their own kernels, the consumer of the product into one after it") {
    for_each_device([](lt::Device d) {
        const Ref x = random_ref<float>({33, 20}, 51), w = random_ref<float>({20, 17}, 52), bias = random_ref<float>({17}, 53);
        const auto X = make_tensor<float>(x), W = make_tensor<float>(w), Bias = make_tensor<float>(bias);
        lt::Tensor<float> y = lt::relu(lt::matmul(X, W) + Bias);
        const auto items = lt::schedule(y);
        CHECK(items_of_kind(items, lt::ScheduleItem::Kind::Matmul) == 1);
        // The consumer is one kernel after the product, or runs in its stores where the product
        // runs on the own OpenCL GEMM kernel (test_gemm_kernel.cpp tests that in detail).
        const bool fused = items.back().kind == lt::ScheduleItem::Kind::Matmul && items.back().ops.size() > 1;
        if (fused) CHECK(d.kind == lt::Device::Kind::OpenCL);
        CHECK(lt::kernel_count(items) == (fused ? 0 : 1));
        const Ref expected = map(zip(ref_matmul(x, w).value, bias, [](double p, double c) { return p + c; }),
                                 [](double v) { return v > 0 ? v : 0; });
        check_close(y, expected, 1e-4, 1e-4);

        // exp(x) and w * 2 are computed by kernels of their own, then the GEMM reads them; on
        // the own GEMM kernel they run in its loads, and the consumer in its stores.
        lt::Tensor<float> z = lt::matmul(lt::exp(X * 0.25f), W * 2.0f) - 1.0f;
        const auto zi = lt::schedule(z);
        CHECK(items_of_kind(zi, lt::ScheduleItem::Kind::Matmul) == 1);
        CHECK(lt::kernel_count(zi) == (fused ? 0 : 3));
        const Ref ex = map(x, [](double v) { return std::exp(static_cast<double>(static_cast<float>(v * 0.25))); });
        const Ref w2 = map(w, [](double v) { return v * 2; });
        check_close(z, map(ref_matmul(ex, w2).value, [](double v) { return v - 1; }), 1e-4, 1e-3);

        // A product used twice is computed once; products chain.
        const auto P = lt::matmul(X, W);
        lt::Tensor<float> both = P * P + lt::matmul(lt::matmul(P, W.t()), W);
        CHECK(items_of_kind(lt::schedule(both), lt::ScheduleItem::Kind::Matmul) == 3);
        const Ref pr = ref_matmul(x, w).value;
        const Ref chained = ref_matmul(ref_matmul(pr, permute(w, {1, 0})).value, w).value;
        const Ref expected_both = zip(zip(pr, pr, [](double a, double b) { return a * b; }), chained,
                                      [](double a, double b) { return a + b; });
        check_close(both, expected_both, 1e-4, 1e-3);
        // The same tensor on both sides.
        check_product(lt::matmul(X, X.t()), ref_matmul(x, permute(x, {1, 0})), 20);
    });
}

TEST_CASE("operands in layouts BLAS cannot read, constants and realized views") {
    for_each_device([](lt::Device) {
        const Ref v = random_ref<float>({9}, 61), w = random_ref<float>({9, 4}, 62);
        const auto V = make_tensor<float>(v), W = make_tensor<float>(w);
        // Every row the same vector: a zero row stride.
        const Ref rows = broadcast(v, {5, 9});
        check_product(lt::matmul(V.expand({5, 9}), W), ref_matmul(rows, w), 9);
        // The same, realized as a view first: the product reads a realized zero-stride layout.
        lt::Tensor<float> realized = V.expand({5, 9}).realize();
        check_product(lt::matmul(realized, W), ref_matmul(rows, w), 9);
        // Every column the same: a zero column stride, on the right.
        const Ref cols = broadcast(Ref{{9, 1}, v.v}, {9, 3});
        check_product(lt::matmul(W.t(), V.reshape({9, 1}).expand({9, 3})), ref_matmul(permute(w, {1, 0}), cols), 9);
        // Constant operands.
        lt::Tensor<float> ones = lt::matmul(lt::ones<float>({3, 9}), W);
        check_close(ones, ref_matmul(broadcast(Ref{{1}, {1.0}}, {3, 9}), w).value, 1e-5, 1e-5);
    });
}

TEST_CASE("empty products: k = 0 gives zeros, m = 0 an empty result") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> z = lt::matmul(lt::ones<float>({3, 0}), lt::ones<float>({0, 4}));
        CHECK(z.shape() == lt::Shape{3, 4});
        for (float v : z.to_vector()) CHECK(v == 0.0f);
        lt::Tensor<float> e = lt::matmul(lt::ones<float>({0, 5}), lt::ones<float>({5, 4}));
        CHECK(e.shape() == lt::Shape{0, 4});
        CHECK(e.to_vector().empty());
        CHECK(lt::matmul(lt::ones<int32_t>({2, 0}), lt::ones<int32_t>({0, 2})).to_vector() == std::vector<int32_t>(4, 0));
    });
}

TEST_CASE_TEMPLATE("integer and bool products run as a fused reduction kernel", T, int32_t, int64_t, uint8_t, bool) {
    for_each_device([](lt::Device) {
        const Ref a = random_ref<T>({3, 7, 5}, 71, 0, 9), b = random_ref<T>({5, 6}, 72, 0, 9);
        const auto p = lt::matmul(make_tensor<T>(a), make_tensor<T>(b));
        static_assert(std::is_same_v<typename decltype(p)::value_type, T>);
        const auto items = lt::schedule(p);
        CHECK(items_of_kind(items, lt::ScheduleItem::Kind::Matmul) == 0);
        CHECK(lt::kernel_count(items) == 1);
        Ref expected = ref_matmul(a, b).value;
        for (double& e : expected.v) {
            if constexpr (std::is_same_v<T, bool>) e = e != 0;
            else if constexpr (std::is_same_v<T, uint8_t>) e = static_cast<double>(static_cast<std::uint8_t>(static_cast<std::int64_t>(e)));
        }
        check_close(p, expected, 0, 0);
    });
}

TEST_CASE("operands of different types meet in the promoted type") {
    for_each_device([](lt::Device) {
        const Ref a = random_ref<float>({4, 6}, 81), b = random_ref<double>({6, 3}, 82);
        lt::Tensor<double> p = lt::matmul(make_tensor<float>(a), make_tensor<double>(b));
        check_product(p, ref_matmul(a, b), 6);
        const Ref i = random_ref<int32_t>({4, 6}, 83);
        const Ref at = permute(a, {1, 0});
        lt::Tensor<float> q = lt::matmul(make_tensor<int32_t>(i), make_tensor<float>(at));
        check_product(q, ref_matmul(i, at), 6);
    });
}

TEST_CASE("bfloat16 products run in float32 and round once (a bfloat16 accumulator would differ)") {
    using bf16 = lt::bfloat16;
    auto bf16s = [](const std::vector<float>& v) {
        std::vector<bf16> out;
        for (float x : v) out.push_back(bf16(x));
        return out;
    };
    auto bits = [](const std::vector<bf16>& v) {
        std::vector<std::uint16_t> out;
        for (bf16 x : v) out.push_back(x.bits);
        return out;
    };
    // Row 0 . column 0 is 256 + 1 + 2 = 259, which rounds to 260 (0x4382); a bfloat16
    // accumulator would give 258 (256 + 1 rounds to 256). The other results are exact.
    const std::vector<bf16> a = bf16s({16, 1, 1, 2, 3, 4}), b = bf16s({16, 1, 1, 0.5f, 2, 0.25f});
    // A larger product, exact in float (integers below 2^24), whose results need rounding.
    std::vector<float> xa, xb;
    for (int i = 0; i < 8 * 16; ++i) xa.push_back(float(i % 7 * 17 - 40));
    for (int i = 0; i < 16 * 8; ++i) xb.push_back(float(i % 5 * 3 - 5));
    std::vector<float> exact(64, 0.0f);
    for (int i = 0; i < 8; ++i)
        for (int j = 0; j < 8; ++j)
            for (int k = 0; k < 16; ++k) exact[std::size_t(i * 8 + j)] += xa[std::size_t(i * 16 + k)] * xb[std::size_t(k * 8 + j)];
    for_each_device([&](lt::Device) {
        const lt::Tensor<bf16> ta = lt::tensor<bf16>(a, {2, 3}), tb = lt::tensor<bf16>(b, {3, 2});
        auto p = lt::matmul(ta, tb);
        static_assert(std::is_same_v<typename decltype(p)::value_type, bf16>);
        auto dot = lt::matmul(ta.slice(0, 0, 1).reshape({3}), tb.slice(1, 0, 1).reshape({3}));  // row 0 . column 0
        auto mixed = lt::matmul(ta, lt::cast<float>(tb));  // promotes to float32: 259 stays
        static_assert(std::is_same_v<typename decltype(mixed)::value_type, float>);
        const lt::Tensor<bf16> pt = p, dt = dot;
        const lt::Tensor<bf16> big = lt::matmul(lt::tensor<bf16>(bf16s(xa), {8, 16}), lt::tensor<bf16>(bf16s(xb), {16, 8}));
        const lt::Tensor<float> mt = mixed;
        lt::realize({pt, dt, big, mt});
        CHECK(bits(pt.to_vector()) == std::vector<std::uint16_t>{0x4382, bf16(16.75f).bits, bf16(43.0f).bits, bf16(4.5f).bits});
        CHECK(dt.item().bits == 0x4382);
        CHECK(mt.to_vector() == std::vector<float>{259, 16.75f, 43, 4.5f});
        CHECK(bits(big.reshape({64}).to_vector()) == bits(bf16s(exact)));
    });
}

TEST_CASE("the plan is reused for new data of the same structure") {
    for_each_device([](lt::Device) {
        check_matmul<float>({2, 17, 9}, {9, 13}, 90);
        const std::size_t plans = lt::detail::plan_cache().size();
        for (unsigned seed = 91; seed < 94; ++seed) check_matmul<float>({2, 17, 9}, {9, 13}, seed);
        CHECK(lt::detail::plan_cache().size() == plans);  // no new plan: the first one ran again
    });
}

TEST_CASE("shape errors name both shapes and the contracted dimensions") {
    auto message = [](auto&& f) {
        try {
            f();
        } catch (const lt::ShapeError& e) {
            return std::string(e.what());
        }
        return std::string("no ShapeError");
    };
    const std::string m1 = message([] { lt::matmul(lt::ones<float>({2, 3}), lt::ones<float>({4, 5})); });
    CHECK(m1.find("[2, 3]") != std::string::npos);
    CHECK(m1.find("[4, 5]") != std::string::npos);
    CHECK(m1.find("3 columns") != std::string::npos);
    CHECK(m1.find("4 rows") != std::string::npos);
    const std::string m2 = message([] { lt::matmul(lt::ones<float>({2, 3, 4}), lt::ones<float>({5, 4, 6})); });
    CHECK(m2.find("batch dimensions") != std::string::npos);
    CHECK(m2.find("[2]") != std::string::npos);
    CHECK(m2.find("[5]") != std::string::npos);
    const std::string m3 = message([] { lt::matmul(lt::ones<float>({}), lt::ones<float>({3})); });
    CHECK(m3.find("at least one dimension") != std::string::npos);
    const std::string m4 = message([] { lt::matmul(lt::ones<float>({3}), lt::ones<float>({4})); });
    CHECK(m4.find("[3]") != std::string::npos);
    CHECK_THROWS_AS(lt::ones<float>({2, 3, 4}).t(), lt::AxisError);
    CHECK_THROWS_AS(lt::ones<float>({4}).mT(), lt::AxisError);
    for (lt::Device d : test_devices())
        if (d != lt::Device::host())
            CHECK_THROWS_AS(lt::matmul(lt::ones<float>({2, 2}), lt::ones<float>({2, 2}, d)), lt::DeviceError);
}

TEST_CASE("LAZYTENSOR_DEBUG names the matmul item and how the backend runs it") {
    for_each_device([](lt::Device device) {
        const auto A = make_tensor<float>(random_ref<float>({4, 8}, 101));
        const auto B = make_tensor<float>(random_ref<float>({8, 2}, 102));
        const std::string one = debug_output(1, [&] { lt::relu(lt::matmul(A, B)).realize(); });
        // (relu runs in the product's stores where the own OpenCL GEMM kernel runs it)
        CHECK((one.find("1 kernel, 1 matmul") != std::string::npos ||
               (one.find("0 kernels, 1 matmul") != std::string::npos && one.find("epilogue fused") != std::string::npos)));
        if (device == lt::Device::host()) CHECK(one.find("packed SIMD GEMM") != std::string::npos);
        else  // CLBlast or lazytensor's own kernel, as LAZYTENSOR_OPENCL_GEMM and the device choose
            CHECK((one.find("CLBlast Gemm") != std::string::npos || one.find("lazytensor GEMM kernel") != std::string::npos));
        const std::string two = debug_output(2, [&] { lt::matmul(A.t().t(), B * 3.0f).realize(); });
        CHECK(two.find("gemm float32: batch [], m 4, n 2, k 8") != std::string::npos);
        const std::string three = debug_output(3, [&] { lt::matmul(A, B * 2.0f).realize(); });
        CHECK(three.find("GFLOP/s") != std::string::npos);
    });
}

TEST_CASE("a product with few output tiles and a long contracted axis splits k on OpenCL") {
    for_each_device([&](lt::Device d) {
        // [96, 4096] x [4096, 40] (a weight gradient's shape): on a GPU-like device one batched
        // GEMM over parts of k, read in place, then one kernel that sums the parts.
        const Ref ra = random_ref<float>({4096, 96}, 81), rb = random_ref<float>({4096, 40}, 82);
        auto a = make_tensor<float>(ra), b = make_tensor<float>(rb);
        auto p = a.t().matmul(b);
        const auto items = lt::schedule(p);
        int gemms = 0, kernels = 0;
        for (const auto& item : items) {
            gemms += item.kind == lt::ScheduleItem::Kind::Matmul;
            kernels += item.kind == lt::ScheduleItem::Kind::Kernel;
        }
        CHECK(gemms == 1);
        if (d.kind == lt::Device::Kind::Host) {
            CHECK(kernels == 0);
        } else if (lt::detail::gemm_available(lt::DType::Float32, d)) {
            CHECK(kernels == 1);
            CHECK(items[0].ir.find("batch [16], m 96, n 40, k 256") != std::string::npos);
        }
        check_close(p, ref_matmul_2d(permute(ra, {1, 0}), rb), 1e-4, 1e-3);
        // Batched, with a length that 2 divides only a few times: parts of k that divide it.
        const Ref rx = random_ref<float>({2, 3, 1100}, 83), ry = random_ref<float>({2, 1100, 5}, 84);
        auto q = lt::matmul(make_tensor<float>(rx), make_tensor<float>(ry));
        for (std::int64_t i = 0; i < 2; ++i) {
            Ref xi{{3, 1100}, std::vector<double>(rx.v.begin() + i * 3300, rx.v.begin() + (i + 1) * 3300)};
            Ref yi{{1100, 5}, std::vector<double>(ry.v.begin() + i * 5500, ry.v.begin() + (i + 1) * 5500)};
            check_close(q.select(0, i), ref_matmul_2d(xi, yi), 1e-4, 1e-3);
        }
    });
}

TEST_CASE_TEMPLATE("thin products: a reduction kernel on OpenCL CPU devices, right for every shape", T, float, double) {
    // Matrix x vector, vector x matrix, a few columns and k = 1 (issue 54): CLBlast's GEMM pads
    // them to its tiles, so on an OpenCL CPU device (PoCL) those of 2^16 elements or more run
    // as the engine's reduction kernel, fused with what feeds and reads them; the host and
    // GPUs keep their GEMM.
    std::vector<lt::Device> cpu_opencl;
    for (const auto& info : lt::devices())
        if (info.device.kind == lt::Device::Kind::OpenCL && info.kind == "cpu") cpu_opencl.push_back(info.device);
    for_each_device([&](lt::Device d) {
        if (!lt::detail::supports_float64(d) && lt::dtype_of<T>() == lt::DType::Float64) return;
        const bool reduction = std::find(cpu_opencl.begin(), cpu_opencl.end(), d) != cpu_opencl.end();
        INFO("runs as a reduction: " << reduction);
        struct Shapes {
            lt::Shape a, b;
            bool thin;
        };
        const Shapes cases[] = {
            {{3000, 37}, {37}, true},           // matrix x vector
            {{37}, {37, 3000}, true},           // vector x matrix
            {{3000, 37}, {37, 1}, true},        // a one-column matrix
            {{1, 37}, {37, 3000}, true},        // a one-row matrix
            {{3000, 37}, {37, 2}, true},        // a few columns
            {{8, 300, 37}, {37, 5}, true},      // batched, a shared right operand
            {{8, 300, 37}, {8, 37, 1}, true},   // batched matrix x vector
            {{8, 37}, {37, 3000}, true},        // 8 rows
            {{3000, 37}, {37, 9}, false},       // 9 columns: a GEMM everywhere
            {{400, 1}, {1, 200}, true},         // k = 1: an outer product
            {{40, 37}, {37}, false},            // small: a launch either way, the GEMM everywhere
            {{16, 37}, {37, 3000}, false},      // 16 rows
            {{40, 37}, {37, 300}, false},
        };
        unsigned seed = 300;
        for (const Shapes& c : cases) {
            INFO("shapes " << c.a << " x " << c.b);
            const Ref a = random_ref<T>(c.a, seed += 2), b = random_ref<T>(c.b, seed + 1);
            const auto p = lt::matmul(make_tensor<T>(a), make_tensor<T>(b));
            const auto items = lt::schedule(p);
            const bool gemm = !(reduction && c.thin);
            CHECK(items_of_kind(items, lt::ScheduleItem::Kind::Matmul) == (gemm ? 1u : 0u));
            if (!gemm) CHECK(lt::kernel_count(items) == 1);
            check_product(p, ref_matmul(a, b), c.a.back());
        }
        // Operands read through views: a transposed matrix, a strided slice of a vector, a
        // transposed batch.
        const Ref stored = random_ref<T>({37, 3000}, 331), v = random_ref<T>({74}, 332);
        const auto S = make_tensor<T>(stored), V = make_tensor<T>(v);
        Ref every_other{{37}, {}};
        for (std::int64_t i = 0; i < 37; ++i) every_other.v.push_back(v.v[static_cast<std::size_t>(2 * i)]);
        const auto mv = lt::matmul(S.t(), V.slice(0, 0, 74, 2));
        CHECK(items_of_kind(lt::schedule(mv), lt::ScheduleItem::Kind::Matmul) == (reduction ? 0u : 1u));
        check_product(mv, ref_matmul(permute(stored, {1, 0}), every_other), 37);
        check_product(lt::matmul(V.slice(0, 0, 37), S), ref_matmul(Ref{{37}, std::vector<double>(v.v.begin(), v.v.begin() + 37)}, stored), 37);
        const Ref batch = random_ref<T>({37, 3, 50}, 333), col = random_ref<T>({3, 37, 1}, 334);
        check_product(lt::matmul(make_tensor<T>(batch).permute({1, 2, 0}), make_tensor<T>(col)),
                      ref_matmul(permute(batch, {1, 2, 0}), col), 37);
        // Fused: relu(A x + b) is one kernel when the product is a reduction.
        const Ref m = random_ref<T>({3000, 37}, 335), x = random_ref<T>({37}, 336), bias = random_ref<T>({3000}, 337);
        const lt::Tensor<T> layer = lt::relu(lt::matmul(make_tensor<T>(m), make_tensor<T>(x)) + make_tensor<T>(bias));
        const auto layer_items = lt::schedule(layer);
        if (reduction) CHECK(layer_items.size() == 1);
        const RefProduct mx = ref_matmul(m, x);
        Ref want = mx.value;
        for (std::size_t i = 0; i < want.v.size(); ++i) want.v[i] = std::max(0.0, want.v[i] + bias.v[i]);
        RefProduct expected{want, mx.magnitude};
        for (std::size_t i = 0; i < want.v.size(); ++i) expected.magnitude.v[i] += std::fabs(bias.v[i]);
        check_product(layer, expected, 38);
    });
}
