// SPDX-License-Identifier: MIT
// Element-wise ops against a double-precision reference: every op, every dtype it allows,
// broadcasting, scalars on either side, non-contiguous inputs, NaN and Inf.
#include <cstring>

#include "common.hpp"

namespace {

// Shapes that exercise: a scalar, a tail shorter than a SIMD batch, several blocks, threads.
const std::vector<lt::Shape> kShapes = {{}, {0}, {1}, {7}, {3, 5}, {2, 0, 3}, {2, 3, 4}, {1031}, {300, 401}};

double sigmoid_ref(double x) { return 1.0 / (1.0 + std::exp(-x)); }

template <class T, class F>
void check_unary(F&& op, const std::function<double(double)>& ref, double lo, double hi, unsigned seed) {
    for (const lt::Shape& shape : kShapes) {
        INFO("shape " << shape);
        Ref x = random_ref<T>(shape, seed, lo, hi);
        lt::Tensor<T> t = make_tensor<T>(x);
        check_close(op(t), map(x, ref), tol<T>(), tol<T>());
    }
}

}  // namespace

TEST_CASE_TEMPLATE("floating unary functions", T, float, double) {
    for_each_device([](lt::Device) {
        check_unary<T>([](const auto& x) { return lt::exp(x); }, [](double v) { return std::exp(v); }, -5, 5, 1);
        check_unary<T>([](const auto& x) { return lt::log(x); }, [](double v) { return std::log(v); }, 0.01, 50, 2);
        check_unary<T>([](const auto& x) { return lt::sqrt(x); }, [](double v) { return std::sqrt(v); }, 0, 50, 3);
        check_unary<T>([](const auto& x) { return lt::sin(x); }, [](double v) { return std::sin(v); }, -10, 10, 4);
        check_unary<T>([](const auto& x) { return lt::cos(x); }, [](double v) { return std::cos(v); }, -10, 10, 5);
        check_unary<T>([](const auto& x) { return lt::tanh(x); }, [](double v) { return std::tanh(v); }, -6, 6, 6);
        check_unary<T>([](const auto& x) { return lt::sigmoid(x); }, sigmoid_ref, -20, 20, 7);
        check_unary<T>([](const auto& x) { return lt::abs(x); }, [](double v) { return std::fabs(v); }, -3, 3, 8);
        check_unary<T>([](const auto& x) { return lt::relu(x); }, [](double v) { return v < 0 ? 0.0 : v; }, -3, 3, 9);
        check_unary<T>([](const auto& x) { return -x; }, [](double v) { return -v; }, -3, 3, 10);
    });
}

TEST_CASE_TEMPLATE("integer unary functions", T, uint8_t, int32_t, int64_t) {
    for_each_device([](lt::Device) {
        const double lo = std::is_unsigned_v<T> ? 0 : -100, hi = 100;
        check_unary<T>([](const auto& x) { return lt::abs(x); }, [](double v) { return std::fabs(v); }, lo, hi, 11);
        check_unary<T>([](const auto& x) { return lt::relu(x); }, [](double v) { return v < 0 ? 0.0 : v; }, lo, hi, 12);
        if constexpr (std::is_signed_v<T>)
            check_unary<T>([](const auto& x) { return -x; }, [](double v) { return -v; }, lo, hi, 13);
        // Floating functions of integers compute in float32.
        Ref x = random_ref<T>({50}, 14, 0, 20);
        check_close(lt::sqrt(make_tensor<T>(x)), map(x, [](double v) { return std::sqrt(v); }), 1e-6, 1e-6);
    });
}

TEST_CASE_TEMPLATE("arithmetic with broadcasting, tensors and scalars on either side", T, float, double, int32_t, int64_t) {
    for_each_device([](lt::Device) {
        const std::vector<std::pair<lt::Shape, lt::Shape>> pairs = {
            {{3, 4}, {3, 4}}, {{3, 4}, {4}}, {{3, 1}, {1, 4}}, {{}, {2, 3}}, {{5, 1, 3}, {4, 1}}, {{257, 129}, {129}}};
        unsigned seed = 20;
        for (const auto& pair : pairs) {
            // (Named references, not a structured binding: INFO captures them in a lambda, which C++17
            // does not allow for a structured binding; GCC accepts it, Clang does not.)
            const lt::Shape &sa = pair.first, &sb = pair.second;
            INFO("shapes " << sa << " and " << sb);
            Ref a = random_ref<T>(sa, ++seed, -9, 9);
            Ref b = random_ref<T>(sb, ++seed, -9, 9);
            lt::Tensor<T> ta = make_tensor<T>(a), tb = make_tensor<T>(b);
            const double t = std::is_floating_point_v<T> ? tol<T>() : 0;
            check_close(ta + tb, zip(a, b, [](double x, double y) { return x + y; }), t, t);
            check_close(ta - tb, zip(a, b, [](double x, double y) { return x - y; }), t, t);
            check_close(ta * tb, zip(a, b, [](double x, double y) { return x * y; }), t, t);
            check_close(lt::maximum(ta, tb), zip(a, b, ref_max), 0, 0);
            check_close(lt::minimum(ta, tb), zip(a, b, ref_min), 0, 0);
            // Division by non-zero values (true division: integers give float32).
            Ref nz = map(b, [](double v) { return v == 0 ? 3.0 : v; });
            lt::Tensor<T> tnz = make_tensor<T>(nz);
            check_close(ta / tnz, zip(a, nz, [](double x, double y) { return x / y; }), 2e-6, 1e-6);
            // Scalars on either side.
            check_close(ta * T(3), map(a, [](double v) { return v * 3; }), t, t);
            check_close(T(2) - ta, map(a, [](double v) { return 2 - v; }), t, t);
            check_close(ta + 1, map(a, [](double v) { return v + 1; }), t, t);
        }
    });
}

TEST_CASE_TEMPLATE("pow", T, float, double, int32_t, int64_t) {
    for_each_device([](lt::Device) {
        if constexpr (std::is_floating_point_v<T>) {
            Ref a = random_ref<T>({4, 33}, 40, 0.1, 4);
            Ref b = random_ref<T>({33}, 41, -3, 3);
            check_close(lt::pow(make_tensor<T>(a), make_tensor<T>(b)), zip(a, b, [](double x, double y) { return std::pow(x, y); }),
                        1e-5, 1e-6);
            check_close(lt::pow(make_tensor<T>(a), T(2)), map(a, [](double x) { return x * x; }), 1e-5, 1e-6);
        } else {
            lt::Tensor<T> base = lt::tensor<T>({2, -3, 5, 1, -1, 7, 0});
            lt::Tensor<T> exps = lt::tensor<T>({10, 3, 0, -4, -3, -1, 0});
            CHECK(lt::pow(base, exps).to_vector() == std::vector<T>{1024, -27, 1, 1, -1, 0, 1});
        }
    });
}

TEST_CASE_TEMPLATE("comparisons give bool tensors", T, float, int32_t, uint8_t, bool) {
    for_each_device([](lt::Device) {
        Ref a = random_ref<T>({6, 7}, 50, 0, 5);
        Ref b = random_ref<T>({7}, 51, 0, 5);
        lt::Tensor<T> ta = make_tensor<T>(a), tb = make_tensor<T>(b);
        auto as_bool = [](const std::function<bool(double, double)>& f) {
            return [f](double x, double y) { return f(x, y) ? 1.0 : 0.0; };
        };
        auto lt_ = ta < tb;
        static_assert(std::is_same_v<typename decltype(lt_)::value_type, bool>);
        check_close(lt_, zip(a, b, as_bool([](double x, double y) { return x < y; })), 0, 0);
        check_close(ta <= tb, zip(a, b, as_bool([](double x, double y) { return x <= y; })), 0, 0);
        check_close(ta > tb, zip(a, b, as_bool([](double x, double y) { return x > y; })), 0, 0);
        check_close(ta >= tb, zip(a, b, as_bool([](double x, double y) { return x >= y; })), 0, 0);
        check_close(ta == tb, zip(a, b, as_bool([](double x, double y) { return x == y; })), 0, 0);
        check_close(ta != tb, zip(a, b, as_bool([](double x, double y) { return x != y; })), 0, 0);
        check_close(ta > T(1), map(a, [](double x) { return x > 1 ? 1.0 : 0.0; }), 0, 0);
    });
}

TEST_CASE("where selects with broadcasting; tensors or scalars") {
    for_each_device([](lt::Device) {
        Ref c = random_ref<bool>({4, 5}, 60);
        Ref x = random_ref<float>({5}, 61);
        Ref y = random_ref<float>({4, 1}, 62);
        lt::Tensor<bool> tc = make_tensor<bool>(c);
        lt::Tensor<float> tx = make_tensor<float>(x), ty = make_tensor<float>(y);
        Ref xb = broadcast(x, {4, 5}), yb = broadcast(y, {4, 5});
        Ref expected = xb;
        for (std::size_t i = 0; i < expected.v.size(); ++i) expected.v[i] = c.v[i] != 0 ? xb.v[i] : yb.v[i];
        check_close(lt::where(tc, tx, ty), expected, 0, 0);

        Ref clipped = map(x, [](double v) { return v > 0 ? v : -1.0; });
        check_close(lt::where(tx > 0.0f, tx, -1.0f), clipped, 0, 0);
        auto from_scalars = lt::where(tx > 0.0f, 1.0, 0.0);  // two scalars: float32
        static_assert(std::is_same_v<typename decltype(from_scalars)::value_type, float>);
        check_close(from_scalars, map(x, [](double v) { return v > 0 ? 1.0 : 0.0; }), 0, 0);
        // An integer condition is converted to bool.
        lt::Tensor<int32_t> ic = lt::tensor<int32_t>({0, 2, -1});
        CHECK(lt::where(ic, 1, 0).to_vector() == std::vector<int64_t>{0, 1, 1});
    });
}

TEST_CASE_TEMPLATE("maximum and minimum of -0 and +0 give the first operand, as NumPy and PyTorch (fuzz seed 12022667)", T, float, double) {
    for_each_device([](lt::Device d) {
        lt::Tensor<T> a = lt::tensor<T>({T(-0.0), T(0.0), T(-0.0), T(0.0)}, {4}, d);
        lt::Tensor<T> b = lt::tensor<T>({T(0.0), T(-0.0), T(-0.0), T(0.0)}, {4}, d);
        for (const std::vector<T>& v : {lt::maximum(a, b).to_vector(), lt::minimum(a, b).to_vector(),
                                        lt::cast<T>(lt::maximum(a, b) * T(1)).to_vector()}) {
            REQUIRE(v.size() == 4u);
            CHECK(std::signbit(v[0]));
            CHECK(!std::signbit(v[1]));
            CHECK(std::signbit(v[2]));
            CHECK(!std::signbit(v[3]));
        }
        // What the sign decides: 1 / minimum(-0, +0) is -inf.
        CHECK((T(1) / lt::minimum(a, b)).to_vector()[0] == -std::numeric_limits<T>::infinity());
    });
}

TEST_CASE_TEMPLATE("negation flips the sign of zero, as C and OpenCL C do", T, float, double) {
    for_each_device([](lt::Device d) {
        // xsimd 8's AVX-512 negation is 0 - x: -(+0) was +0 on such hosts.
        const lt::Tensor<T> z = lt::tensor<T>({T(0.0), T(-0.0), T(2.0)}, {3}, d);
        for (const std::vector<T>& v : {lt::Tensor<T>(-z).to_vector(), lt::Tensor<T>(-(z * T(1))).to_vector()}) {
            REQUIRE(v.size() == 3u);
            CHECK(std::signbit(v[0]));
        }
        const std::vector<T> v = lt::Tensor<T>(-z).to_vector();
        CHECK(!std::signbit(v[1]));
        CHECK(v[2] == T(-2));
        CHECK((T(1) / -z).to_vector()[0] == -std::numeric_limits<T>::infinity());
    });
}

TEST_CASE("NaN and Inf are values, propagated as IEEE says") {
    for_each_device([](lt::Device) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        const float inf = std::numeric_limits<float>::infinity();
        lt::Tensor<float> a = lt::tensor<float>({nan, 1.0f, inf, -inf, 0.0f, 2.0f});
        lt::Tensor<float> b = lt::tensor<float>({1.0f, nan, 1.0f, 1.0f, 0.0f, -inf});
        std::vector<float> mx = lt::maximum(a, b).to_vector();
        CHECK(std::isnan(mx[0]));
        CHECK(std::isnan(mx[1]));
        CHECK(mx[2] == inf);
        CHECK(mx[3] == 1.0f);
        std::vector<float> mn = lt::minimum(a, b).to_vector();
        CHECK(std::isnan(mn[0]));
        CHECK(std::isnan(mn[1]));
        CHECK(mn[5] == -inf);
        std::vector<float> q = (a / b).to_vector();
        CHECK(std::isnan(q[4]));  // 0 / 0
        CHECK(q[5] == -0.0f);
        CHECK(lt::exp(lt::tensor<float>({inf, -inf})).to_vector() == std::vector<float>{inf, 0.0f});
        CHECK(lt::log(lt::tensor<float>({0.0f})).item() == -inf);
        CHECK(std::isnan(lt::sqrt(lt::tensor<float>({-1.0f})).item()));
        CHECK(std::isnan(lt::relu(lt::tensor<float>({nan})).item()));
        CHECK(lt::sigmoid(lt::tensor<float>({-inf, inf})).to_vector() == std::vector<float>{0.0f, 1.0f});
        CHECK((a == a).to_vector() == std::vector<bool>{false, true, true, true, true, true});
    });
}

TEST_CASE("non-contiguous and broadcast inputs") {
    for_each_device([](lt::Device) {
        Ref a = random_ref<float>({37, 53}, 70);
        Ref b = random_ref<float>({53, 37}, 71);
        lt::Tensor<float> ta = make_tensor<float>(a), tb = make_tensor<float>(b);
        Ref bt = permute(b, {1, 0});
        check_close(ta + tb.transpose(0, 1), zip(a, bt, [](double x, double y) { return x + y; }), tol<float>(), tol<float>());
        check_close(lt::exp(tb.permute({1, 0})), map(bt, [](double v) { return std::exp(v); }), tol<float>(), tol<float>());
    });
}

TEST_CASE("the issue's chain: exp(a)*b + c*0.5 - tanh(a)") {
    for_each_device([](lt::Device) {
        for (const lt::Shape& shape : {lt::Shape{5}, lt::Shape{100003}, lt::Shape{129, 1031}}) {
            Ref a = random_ref<float>(shape, 80), b = random_ref<float>(shape, 81), c = random_ref<float>(shape, 82);
            lt::Tensor<float> ta = make_tensor<float>(a), tb = make_tensor<float>(b), tc = make_tensor<float>(c);
            Ref expected = a;
            for (std::size_t i = 0; i < a.v.size(); ++i)
                expected.v[i] = std::exp(a.v[i]) * b.v[i] + c.v[i] * 0.5 - std::tanh(a.v[i]);
            check_close(lt::exp(ta) * tb + tc * 0.5f - lt::tanh(ta), expected, 1e-5, 1e-5);
        }
    });
}


TEST_CASE("compiled loops of float expressions agree bit for bit with the interpreter") {
    for_each_device([](lt::Device) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        Ref ra = random_ref<float>({67, 131}, 90), rb = random_ref<float>({131}, 91), rc = random_ref<float>({131, 67}, 92);
        ra.v[5] = nan;
        lt::Tensor<float> a = make_tensor<float>(ra), b = make_tensor<float>(rb), c = make_tensor<float>(rc);
        lt::Tensor<double> d = make_tensor<double>(random_ref<double>({1000}, 93));
        check_compiled_matches_interpreted([&] { return lt::exp(a) * b + c.transpose(0, 1) * 0.5f - lt::tanh(a); }, true);
        check_compiled_matches_interpreted([&] { return lt::where(a > b, lt::sqrt(lt::abs(a)), -b) / 3; }, true);
        check_compiled_matches_interpreted([&] { return lt::maximum(a, 0.25f) + lt::minimum(1.0f, b) * lt::pow(lt::abs(a), 1.5f); }, true);
        check_compiled_matches_interpreted([&] { return lt::where(a != a, 0.0f, lt::erf(a)) + lt::log(lt::relu(a) + 1); }, true);
        check_compiled_matches_interpreted([&] { return lt::sin(d) * lt::cos(d) - d; }, true);
        // Mixed types are interpreted.
        lt::Tensor<int32_t> i = lt::arange<int32_t>(131);
        check_compiled_matches_interpreted([&] { return lt::exp(a) * i; }, false);
    });
}

TEST_CASE("float tanh is within 5 ulp everywhere (the accuracy OpenCL requires)") {
    for_each_device([](lt::Device) {
        std::vector<float> xs;
        for (double v = -12; v < 12; v += 1.7e-5) xs.push_back(static_cast<float>(v));
        for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f, 9.0f, -9.0f, 1e30f, INFINITY, -INFINITY}) xs.push_back(v);
        const auto n = static_cast<int64_t>(xs.size());
        std::vector<float> got = lt::tanh(lt::tensor<float>(xs, {n})).to_vector();
        double worst = 0;
        for (std::size_t i = 0; i < xs.size(); ++i) {
            const double ref = std::tanh(static_cast<double>(xs[i]));
            const float rf = static_cast<float>(ref);
            const double ulp = std::max(double(std::nextafter(std::fabs(rf), 2.0f)) - std::fabs(rf), 1e-45);
            worst = std::max(worst, std::fabs(got[i] - ref) / ulp);
            if (xs[i] == 0) CHECK(std::signbit(got[i]) == std::signbit(xs[i]));
        }
        CHECK(worst <= 5.0);
        CHECK(std::isnan(lt::tanh(lt::tensor<float>({NAN})).item()));
    });
}

TEST_CASE("regressions: arithmetic on comparison results") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> a = lt::tensor<float>({1, 5, 3}), b = lt::tensor<float>({2, 2, 3});
        lt::Tensor<float> c = (a < b) * 2.0f;
        CHECK(c.to_vector() == std::vector<float>{2, 0, 0});
        lt::Tensor<float> d = (a < b) + a;
        CHECK(d.to_vector() == std::vector<float>{2, 5, 3});
        lt::Tensor<float> e = lt::where((a < b) == (b < a), a, -a);
        CHECK(e.to_vector() == std::vector<float>{-1, -5, 3});
    });
}

TEST_CASE_TEMPLATE("pow and exp follow C's special cases", T, float, double) {
    for_each_device([](lt::Device) {
        const T inf = std::numeric_limits<T>::infinity(), nan = std::numeric_limits<T>::quiet_NaN();
        const std::vector<T> base = {0, -0.0, nan, inf, 1, 0, -2, -2, 2, -inf, 0.5, 3};
        const std::vector<T> expo = {0, 0, 0, 0, nan, -1, 3, 0.5, -inf, 3, inf, 2};
        const auto n = static_cast<int64_t>(base.size());
        for (bool scalar_exponent : {false, true}) {
            std::vector<T> got;
            if (scalar_exponent) {
                for (std::size_t i = 0; i < base.size(); ++i) got.push_back(lt::pow(lt::tensor<T>({base[i]}), expo[i]).item());
            } else {
                got = lt::pow(lt::tensor<T>(base, {n}), lt::tensor<T>(expo, {n})).to_vector();
            }
            for (std::size_t i = 0; i < base.size(); ++i) {
                const T want = std::pow(base[i], expo[i]);
                INFO("pow(" << base[i] << ", " << expo[i] << ") scalar exponent " << scalar_exponent);
                if (std::isnan(want)) CHECK(std::isnan(got[i]));
                else CHECK(got[i] == want);
            }
        }
        const T big = std::is_same_v<T, float> ? T(88.5) : T(709.5);
        const T tiny = std::is_same_v<T, float> ? T(-88) : T(-720);
        std::vector<T> ex = lt::exp(lt::tensor<T>({big, tiny, inf, -inf})).to_vector();
        CHECK(ex[0] == doctest::Approx(std::exp(big)).epsilon(1e-6));
        CHECK(ex[1] == doctest::Approx(std::exp(tiny)).epsilon(1e-4));
        CHECK(ex[1] > 0);
        CHECK(ex[2] == inf);
        CHECK(ex[3] == 0);
    });
}

TEST_CASE_TEMPLATE("comparisons, where, maximum and minimum over lengths around the SIMD width, NaN anywhere", T, float,
                   double, int32_t, int64_t, uint8_t, bool) {
    // The host runs these in SIMD batches (masks stored as bool bytes, blends by a mask of the
    // condition bytes, integer max and min) with a scalar tail: every split of a length into
    // batches and tail must give the reference.
    for_each_device([](lt::Device) {
        for (std::int64_t n : {1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 1023, 1024, 1025, 2051}) {
            INFO("length " << n);
            Ref ra = random_ref<T>({n}, static_cast<unsigned>(n), std::is_unsigned_v<T> ? 0 : -3, 3);
            Ref rb = random_ref<T>({n}, static_cast<unsigned>(n) + 7, std::is_unsigned_v<T> ? 0 : -3, 3);
            for (std::int64_t i = 0; i < n; i += 3) rb.v[static_cast<std::size_t>(i)] = ra.v[static_cast<std::size_t>(i)];  // ties
            if constexpr (std::is_floating_point_v<T>) {
                for (std::int64_t at : {std::int64_t(0), n / 2, n - 1}) ra.v[static_cast<std::size_t>(at)] = std::nan("");
                if (n > 4) rb.v[static_cast<std::size_t>(n - 2)] = std::nan("");
            }
            lt::Tensor<T> a = make_tensor<T>(ra), b = make_tensor<T>(rb);
            auto as_bool = [](const Ref& r) { return map(r, [](double v) { return v != 0.0 ? 1.0 : 0.0; }); };
            if constexpr (!std::is_same_v<T, bool>) {
                check_close(lt::Tensor<bool>(a < b), zip(ra, rb, [](double x, double y) { return x < y ? 1.0 : 0.0; }), 0, 0);
                check_close(lt::Tensor<bool>(a <= b), zip(ra, rb, [](double x, double y) { return x <= y ? 1.0 : 0.0; }), 0, 0);
                check_close(lt::Tensor<bool>(a > b), zip(ra, rb, [](double x, double y) { return x > y ? 1.0 : 0.0; }), 0, 0);
                check_close(lt::Tensor<bool>(a >= b), zip(ra, rb, [](double x, double y) { return x >= y ? 1.0 : 0.0; }), 0, 0);
            }
            check_close(lt::Tensor<bool>(a == b), zip(ra, rb, [](double x, double y) { return x == y ? 1.0 : 0.0; }), 0, 0);
            check_close(lt::Tensor<bool>(a != b), zip(ra, rb, [](double x, double y) { return x != y ? 1.0 : 0.0; }), 0, 0);
            check_close(lt::Tensor<T>(lt::maximum(a, b)), zip(ra, rb, ref_max), 0, 0);
            check_close(lt::Tensor<T>(lt::minimum(a, b)), zip(ra, rb, ref_min), 0, 0);
            // where with a condition of its own (not a comparison fused into the same loop).
            Ref rc = as_bool(random_ref<std::int32_t>({n}, static_cast<unsigned>(n) + 11, -1, 2));
            lt::Tensor<bool> c = make_tensor<bool>(rc);
            check_close(lt::Tensor<T>(lt::where(c, a, b)),
                        ref_of({n}, [&](const std::vector<std::int64_t>& i) { return rc.at(i) != 0 ? ra.at(i) : rb.at(i); }), 0, 0);
            // Positions (the index lanes argmax uses) and where over them.
            const std::vector<std::int64_t> positions = lt::Tensor<std::int64_t>(lt::arange<std::int64_t>(0, n) * 3 - 5).to_vector();
            for (std::int64_t i = 0; i < n; ++i) CHECK(positions[static_cast<std::size_t>(i)] == i * 3 - 5);
            check_close(lt::Tensor<std::int64_t>(lt::where(c, lt::arange<std::int64_t>(0, n), std::int64_t(-1))),
                        ref_of({n}, [&](const std::vector<std::int64_t>& i) { return rc.at(i) != 0 ? double(i[0]) : -1.0; }), 0, 0);
        }
    });
}
