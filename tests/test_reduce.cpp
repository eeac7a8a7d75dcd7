// SPDX-License-Identifier: MIT
// Reductions against a double-precision reference: every axis set, keepdim, negative axes,
// every dtype, empty and 0-d inputs, long rows and columns, NaN, and fused producers.
#include <cstring>

#include "common.hpp"

namespace {

const double kInf = std::numeric_limits<double>::infinity();

std::vector<std::vector<int>> axis_sets(std::size_t ndim) {
    std::vector<std::vector<int>> sets = {{}};  // {} = all axes
    for (int a = 0; a < static_cast<int>(ndim); ++a) sets.push_back({a});
    if (ndim >= 2) sets.push_back({0, static_cast<int>(ndim) - 1});
    if (ndim >= 3) sets.push_back({-1, -2});
    return sets;
}

template <class T>
void check_all_reductions(const lt::Shape& shape, unsigned seed) {
    Ref x = random_ref<T>(shape, seed, std::is_unsigned_v<T> ? 0 : -50, 50);
    lt::Tensor<T> t = make_tensor<T>(x);
    for (const auto& axes : axis_sets(shape.size())) {
        for (bool keepdim : {false, true}) {
            INFO("shape " << shape << " axes " << lt::Axes(axes) << " keepdim " << keepdim);
            const lt::Axes ax(axes);
            const bool all = axes.empty();
            std::int64_t count = 1;
            for (std::size_t k = 0; k < shape.size(); ++k) {
                bool r = all;
                for (int a : axes) r = r || (a < 0 ? a + static_cast<int>(shape.size()) : a) == static_cast<int>(k);
                if (r) count *= shape[k];
            }
            Ref sum = reduce(x, axes, keepdim || false, 0.0, [](double a, double b) { return a + b; });
            if (all && !keepdim) sum.shape = {};
            const double stol = std::is_floating_point_v<T> ? 1e-5 : 0;
            if (all && !keepdim) {
                check_close(t.sum(), sum, stol, stol * 10);
            } else {
                check_close(t.sum(all ? lt::detail::all_axes(shape.size()) : ax, keepdim), sum, stol, stol * 10);
            }
            if (count == 0) continue;
            Ref mx = reduce(x, axes, keepdim, -kInf, ref_max);
            Ref mn = reduce(x, axes, keepdim, kInf, ref_min);
            Ref mean = map(sum, [count](double v) { return v / static_cast<double>(count); });
            if (all && !keepdim) mx.shape = mn.shape = mean.shape = {};
            if (all && !keepdim) {
                check_close(t.max(), mx, 0, 0);
                check_close(lt::min(t), mn, 0, 0);
                check_close(lt::mean(t), mean, 1e-5, 1e-5);
            } else {
                const lt::Axes use = all ? lt::detail::all_axes(shape.size()) : ax;
                check_close(lt::max(t, use, keepdim), mx, 0, 0);
                check_close(t.min(use, keepdim), mn, 0, 0);
                check_close(t.mean(use, keepdim), mean, 1e-5, 1e-5);
            }
        }
    }
}

}  // namespace

TEST_CASE_TEMPLATE("sum, max, min and mean over every axis set", T, float, double, int32_t, int64_t, uint8_t) {
    for_each_device([](lt::Device) {
        unsigned seed = 100;
        for (const lt::Shape& shape : {lt::Shape{}, lt::Shape{1}, lt::Shape{9}, lt::Shape{5, 7}, lt::Shape{1, 6},
                                       lt::Shape{3, 4, 5}, lt::Shape{2, 1, 3, 2}})
            check_all_reductions<T>(shape, ++seed);
    });
}

TEST_CASE("long rows, long columns and long vectors (threads, blocks, split reductions)") {
    for_each_device([](lt::Device) {
        for (const lt::Shape& shape : {lt::Shape{3, 70001}, lt::Shape{70001, 3}, lt::Shape{517, 1029}, lt::Shape{1000003},
                                       lt::Shape{64, 65536}, lt::Shape{65536, 64}}) {
            INFO("shape " << shape);
            Ref x = random_ref<float>(shape, 7);
            lt::Tensor<float> t = make_tensor<float>(x);
            for (int axis = 0; axis < static_cast<int>(shape.size()); ++axis) {
                check_close(t.sum(axis), reduce(x, {axis}, false, 0.0, [](double a, double b) { return a + b; }), 1e-4, 1e-3);
                check_close(t.max(axis), reduce(x, {axis}, false, -kInf, ref_max), 0, 0);
            }
            Ref total = reduce(x, {}, false, 0.0, [](double a, double b) { return a + b; });
            total.shape = {};
            check_close(t.sum(), total, 1e-4, 1e-2);
            Ref lo = reduce(x, {}, false, kInf, ref_min);
            lo.shape = {};
            check_close(t.min(), lo, 0, 0);
        }
    });
}

TEST_CASE("sums of integers and bools accumulate in int64") {
    for_each_device([](lt::Device) {
        lt::Tensor<bool> mask = lt::tensor<bool>({true, false, true, true}, {2, 2});
        auto count = lt::sum(mask);
        static_assert(std::is_same_v<typename decltype(count)::value_type, int64_t>);
        CHECK(count.item() == 3);
        CHECK(mask.sum(1).to_vector() == std::vector<int64_t>{1, 2});
        CHECK(lt::max(mask, 0).to_vector() == std::vector<bool>{true, true});
        lt::Tensor<int32_t> big = lt::full<int32_t>({4, 1000}, 2000000000);
        CHECK(big.sum().item() == int64_t(8000) * 1000000000);
        lt::Tensor<uint8_t> bytes = lt::full<uint8_t>({300}, 255);
        CHECK(bytes.sum().item() == 300 * 255);
        auto avg = lt::mean(lt::tensor<int32_t>({1, 2}));
        static_assert(std::is_same_v<typename decltype(avg)::value_type, float>);
        CHECK(avg.item() == 1.5f);
    });
}

TEST_CASE("empty reductions and NaN") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> empty = lt::zeros<float>({0, 4});
        CHECK(empty.sum().item() == 0.0f);
        CHECK(empty.sum(0).to_vector() == std::vector<float>(4, 0.0f));
        CHECK(empty.sum(1).shape() == lt::Shape{0});
        CHECK(std::isnan(empty.mean().item()));
        CHECK(empty.max(1).shape() == lt::Shape{0});  // nothing to reduce per row: no rows
        CHECK_THROWS_AS(empty.max(0), lt::ValueError);

        const float nan = std::numeric_limits<float>::quiet_NaN();
        lt::Tensor<float> x = lt::tensor<float>({1, nan, 3, 4, 5, 6}, {2, 3});
        std::vector<float> mx = x.max(1).to_vector();
        CHECK(std::isnan(mx[0]));
        CHECK(mx[1] == 6.0f);
        CHECK(std::isnan(x.min().item()));
        CHECK(std::isnan(x.sum(0).to_vector()[1]));
    });
}

TEST_CASE_TEMPLATE("row reductions of lengths around the SIMD width and the block size, NaN and extremes anywhere", T,
                   float, double, int32_t, int64_t) {
    // The host folds a row into a block of lane accumulators, then folds those pairwise with
    // SIMD batches and a scalar tail: every split of a length into batches and tail, and an
    // extreme or NaN in each part, must give the reference.
    for_each_device([](lt::Device) {
        for (std::int64_t n : {1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 63, 64, 65, 127, 1023, 1024, 1025, 2047, 2049, 3000}) {
            INFO("row length " << n);
            Ref x = random_ref<T>({3, n}, static_cast<unsigned>(n), -50, 50);
            // Row 1: its maximum at the end; row 2: its minimum at the start.
            x.v[static_cast<std::size_t>(2 * n - 1)] = 1000;
            x.v[static_cast<std::size_t>(2 * n)] = -1000;
            lt::Tensor<T> t = make_tensor<T>(x);
            const double tol = std::is_floating_point_v<T> ? 1e-5 : 0;
            check_close(t.sum(1), reduce(x, {1}, false, 0.0, ref_add), tol, tol * 10);
            check_close(t.max(1), reduce(x, {1}, false, -kInf, ref_max), 0, 0);
            check_close(t.min(1), reduce(x, {1}, false, kInf, ref_min), 0, 0);
            const std::vector<std::int64_t> hi = t.argmax(1).to_vector(), lo = t.argmin(1).to_vector();
            for (std::int64_t r = 0; r < 3; ++r) {
                std::int64_t best_hi = 0, best_lo = 0;
                for (std::int64_t i = 1; i < n; ++i) {
                    if (x.at({r, i}) > x.at({r, best_hi})) best_hi = i;
                    if (x.at({r, i}) < x.at({r, best_lo})) best_lo = i;
                }
                CHECK(hi[static_cast<std::size_t>(r)] == best_hi);
                CHECK(lo[static_cast<std::size_t>(r)] == best_lo);
            }
            if constexpr (std::is_floating_point_v<T>) {
                for (std::int64_t at : {std::int64_t(0), n / 2, n - 1}) {
                    Ref y = x;
                    y.v[static_cast<std::size_t>(n + at)] = std::numeric_limits<double>::quiet_NaN();
                    lt::Tensor<T> u = make_tensor<T>(y);
                    const std::vector<T> mx = u.max(1).to_vector(), mn = u.min(1).to_vector();
                    CHECK(std::isnan(mx[1]));
                    CHECK(std::isnan(mn[1]));
                    CHECK(!std::isnan(mx[0]));
                    CHECK(u.argmax(1).to_vector()[1] == at);  // NaN counts as the maximum (PyTorch)
                }
            }
        }
    });
}

TEST_CASE_TEMPLATE("exp(a - b), exp(a + b) and exp(a * b) in one step: row lengths around the SIMD width and the block size, "
                   "a row's value or a scalar on either side, NaN and the ends",
                   T, float, double) {
    // The host computes exp of a sum, difference or product whose intermediate nothing else
    // reads in one pass, reading a row's value or a scalar once rather than at every lane;
    // softmax's exp(x - max) is the common case. Expected values are exp in double, rounded to T.
    const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
    auto exp_t = [](double v) { return static_cast<double>(static_cast<T>(std::exp(v))); };
    auto sub = [](double a, double b) { return a - b; };
    for_each_device([&](lt::Device) {
        for (std::int64_t n : {1, 2, 7, 15, 16, 17, 31, 33, 1023, 1024, 1025, 3000}) {
            INFO("row length " << n);
            Ref x = random_ref<T>({3, n}, static_cast<unsigned>(n) + 700, -20, 20);
            Ref y = random_ref<T>({3, n}, static_cast<unsigned>(n) + 701, -20, 20);
            x.v[static_cast<std::size_t>(n - 1)] = nan;   // row 0: a NaN (its max is NaN)
            x.v[static_cast<std::size_t>(n)] = inf;       // row 1: +inf (inf - inf is NaN, the rest exp(-inf) = 0)
            x.v[static_cast<std::size_t>(3 * n - 1)] = n > 1 ? -inf : 150;  // row 2: -inf, or past exp's range
            y.v[static_cast<std::size_t>(2 * n + n / 2)] = 120;             // exp(x + y) overflows to inf in float
            lt::Tensor<T> tx = make_tensor<T>(x), ty = make_tensor<T>(y);
            const Ref mx = broadcast(reduce(x, {1}, true, -kInf, ref_max), {3, n});
            const Ref mx0 = broadcast(reduce(x, {0}, true, -kInf, ref_max), {3, n});
            const double rtol = tol<T>() * 5;
            check_close(lt::exp(tx - tx.max(1, true)), map(zip(x, mx, sub), exp_t), rtol, 0);
            check_close(lt::exp(tx.max(1, true) - tx), map(zip(mx, x, sub), exp_t), rtol, 0);
            check_close(lt::exp(tx - tx.max(1, true)) * tx.max(1, true),
                        zip(map(zip(x, mx, sub), exp_t), mx, [](double e, double m) { return e * m; }), rtol, 0);
            check_close(lt::exp(tx - tx.max(0, true)), map(zip(x, mx0, sub), exp_t), rtol, 0);  // lanes across rows
            check_close(lt::exp(tx * T(0.5)), map(x, [&](double v) { return exp_t(v * 0.5); }), rtol, 0);
            check_close(lt::exp(T(2) - tx), map(x, [&](double v) { return exp_t(2 - v); }), rtol, 0);
            check_close(lt::exp(tx + ty), map(zip(x, y, [](double a, double b) { return a + b; }), exp_t), rtol, 0);
            check_close(lt::exp(tx - ty) + (tx - ty),  // the difference read twice: computed once, kept
                        zip(x, y, [&](double a, double b) { return exp_t(a - b) + (a - b); }), rtol, 0);
            const Ref e = map(zip(x, mx, sub), exp_t);
            check_close(lt::exp(tx - tx.max(1, true)).sum(1), reduce(e, {1}, false, 0.0, ref_add), rtol * 10, 0);
        }
    });
}

TEST_CASE_TEMPLATE("a row's value broadcast along its row: every dtype, lengths around the SIMD width and the block size",
                   T, uint8_t, int32_t, int64_t, float, double) {
    // The host copies a row's value (and a bool made of it) across a block of lanes for the
    // instructions that read it at every lane, in SIMD stores of its bytes.
    for_each_device([](lt::Device) {
        for (std::int64_t n : {1, 2, 15, 16, 17, 31, 32, 33, 63, 64, 65, 1023, 1024, 1025, 2049}) {
            INFO("row length " << n);
            const Ref x = random_ref<T>({3, n}, static_cast<unsigned>(n) + 800, 0, 100);
            lt::Tensor<T> t = make_tensor<T>(x);
            const Ref lo = broadcast(reduce(x, {1}, true, kInf, ref_min), {3, n});
            const Ref hi = broadcast(reduce(x, {1}, true, -kInf, ref_max), {3, n});
            const double rtol = std::is_floating_point_v<T> ? tol<T>() : 0;  // float subtraction rounds
            check_close(t - t.min(1, true), zip(x, lo, [](double a, double b) { return a - b; }), rtol, 0);
            Ref picked = x;  // where the row's maximum passes 90, the row; else its minimum
            for (std::size_t i = 0; i < picked.v.size(); ++i)
                if (!(hi.v[i] > 90)) picked.v[i] = lo.v[i];
            check_close(lt::where(t.max(1, true) > T(90), t, t.min(1, true)), picked, 0, 0);
        }
    });
}

TEST_CASE("reductions of permuted and broadcast inputs") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({3, 4, 5}, 200);
        lt::Tensor<float> t = make_tensor<float>(x);
        Ref p = permute(x, {2, 0, 1});
        check_close(t.permute({2, 0, 1}).sum({0, 2}), reduce(p, {0, 2}, false, 0.0, [](double a, double b) { return a + b; }),
                    1e-5, 1e-5);
        check_close(t.transpose(0, 2).max(-1, true), reduce(permute(x, {2, 1, 0}), {-1}, true, -kInf, ref_max), 0, 0);
        lt::Tensor<float> row = lt::tensor<float>({1, 2, 3});
        CHECK(row.expand({4, 3}).sum(0).to_vector() == std::vector<float>{4, 8, 12});
        CHECK(row.reshape({3, 1}).expand({3, 5}).sum().item() == 30.0f);
    });
}

TEST_CASE("fused producers and consumers: sum(exp(a) * b), mean, softmax, layer norm") {
    for_each_device([](lt::Device) {
        Ref a = random_ref<float>({33, 129}, 300), b = random_ref<float>({33, 129}, 301);
        lt::Tensor<float> ta = make_tensor<float>(a), tb = make_tensor<float>(b);
        Ref prod = zip(map(a, [](double v) { return std::exp(v); }), b, [](double x, double y) { return x * y; });
        Ref total = reduce(prod, {}, false, 0.0, [](double x, double y) { return x + y; });
        total.shape = {};
        check_close(lt::sum(lt::exp(ta) * tb), total, 1e-5, 1e-4);
        check_close(lt::sum(lt::exp(ta) * tb, 1, true) / 3.0f,
                    map(reduce(prod, {1}, true, 0.0, [](double x, double y) { return x + y; }), [](double v) { return v / 3; }),
                    1e-5, 1e-5);

        // Softmax over rows, written with primitives.
        auto softmax = [](const lt::Tensor<float>& x, int axis) {
            lt::Tensor<float> e = lt::exp(x - x.max(axis, true));
            return lt::Tensor<float>(e / e.sum(axis, true));
        };
        for (int axis : {1, 0}) {
            Ref mx = reduce(a, {axis}, true, -kInf, ref_max);
            Ref e = map(zip(a, mx, [](double x, double m) { return x - m; }), [](double v) { return std::exp(v); });
            Ref s = reduce(e, {axis}, true, 0.0, [](double x, double y) { return x + y; });
            check_close(softmax(ta, axis), zip(e, s, [](double x, double y) { return x / y; }), 1e-5, 1e-7);
        }

        // Layer norm over the last axis.
        lt::Tensor<float> mean = ta.mean(1, true);
        lt::Tensor<float> centered = ta - mean;
        lt::Tensor<float> var = (centered * centered).mean(1, true);
        lt::Tensor<float> norm = centered / lt::sqrt(var + 1e-5f);
        Ref m = map(reduce(a, {1}, true, 0.0, [](double x, double y) { return x + y; }), [](double v) { return v / 129; });
        Ref c = zip(a, m, [](double x, double y) { return x - y; });
        Ref v = map(reduce(map(c, [](double x) { return x * x; }), {1}, true, 0.0, [](double x, double y) { return x + y; }),
                    [](double x) { return x / 129; });
        check_close(norm, zip(c, v, [](double x, double y) { return x / std::sqrt(y + 1e-5); }), 1e-4, 1e-5);
    });
}

TEST_CASE("index math is 64-bit: a tensor of more than 2^31 elements") {
    // 2^31 + 1024 bytes with position-dependent values: any offset that wraps at 2^31 changes
    // the sums below.
    const int64_t rows = (int64_t(1) << 21) + 1, cols = 1024, n = rows * cols;
    auto value = [](int64_t i) { return int64_t(i % 251) + 1; };
    for_each_device([&](lt::Device d) {
        lt::Tensor<uint8_t> x;
        {
            std::vector<uint8_t> data(static_cast<std::size_t>(n));
            for (int64_t i = 0; i < 251 * 64; ++i) data[static_cast<std::size_t>(i)] = static_cast<uint8_t>(i % 251);
            for (int64_t done = 251 * 64; done < n; done *= 2)
                std::memcpy(data.data() + done, data.data(), static_cast<std::size_t>(std::min(done, n - done)));
            // PoCL sizes its largest buffer from the memory free when it starts (2 or 4 GiB on
            // the 24 GiB CI machine): a device too small gets the size error instead.
            std::size_t largest = 0;
            for (const lt::DeviceInfo& info : lt::devices())
                if (info.device == d) largest = info.largest_buffer;
            if (largest < static_cast<std::size_t>(n)) {
                MESSAGE(d.str() << " holds at most " << largest << " bytes a buffer: the 2^31-element sums are not run there");
                CHECK_THROWS_WITH_AS(lt::tensor<uint8_t>(data, {n}), doctest::Contains("the device's largest buffer is"),
                                     lt::BackendError);
                return;
            }
            x = lt::tensor<uint8_t>(data, {n});
        }
        lt::Tensor<uint8_t> y = (x + uint8_t(1)).realize();
        x = lt::Tensor<uint8_t>();
        const int64_t q = n / 251, r = n % 251;
        CHECK(y.sum().item() == q * (251 * 252 / 2) + r * (r + 1) / 2);

        lt::Tensor<int64_t> row_sums = y.reshape({rows, cols}).sum(1);
        int64_t last_row = 0;
        for (int64_t i = n - cols; i < n; ++i) last_row += value(i);
        std::vector<int64_t> rs = row_sums.to_vector();
        REQUIRE(rs.size() == static_cast<std::size_t>(rows));
        CHECK(rs.back() == last_row);

        std::vector<int64_t> cs = y.reshape({rows, cols}).sum(0).to_vector();
        int64_t last_col = 0;
        for (int64_t row = 0; row < rows; ++row) last_col += value(row * cols + cols - 1);
        CHECK(cs.back() == last_col);
    });
}

TEST_CASE("regressions: two reductions broadcast in one phase; rows too long for the row cache") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> x = lt::tensor<float>({1, 2, 3, 4});
        lt::Tensor<float> y = (x - x.max(0, true)) * x.sum(0, true);
        CHECK(y.to_vector() == std::vector<float>{-30, -20, -10, 0});
        for (int64_t rows : {1, 2}) {
            std::vector<float> big(static_cast<std::size_t>(rows * 300000));
            for (std::size_t i = 0; i < big.size(); ++i) big[i] = float(i % 7) / 7;
            lt::Tensor<float> r = lt::tensor<float>(big, {rows, 300000});
            lt::Tensor<float> e = lt::exp(r - r.max(1, true));
            std::vector<float> s = (e / e.sum(1, true)).sum(1).to_vector();
            for (float v : s) CHECK(v == doctest::Approx(1.0).epsilon(1e-4));
        }
    });
}

TEST_CASE("regressions: integer means are exact before the division") {
    for_each_device([](lt::Device) {
        lt::Tensor<int32_t> ii = lt::tensor<int32_t>({INT32_MIN, -7, -1, 0, 1, 7, INT32_MAX});
        CHECK(ii.mean().item() == doctest::Approx(-1.0 / 7).epsilon(1e-6));
        lt::Tensor<int64_t> big = lt::tensor<int64_t>({(int64_t(1) << 40) + 1, (int64_t(1) << 40) + 3}, {2});
        CHECK(big.mean().item() == static_cast<float>(double((int64_t(1) << 40) + 2)));
    });
}

TEST_CASE("an empty axis list means all axes, for every reduction") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> x = lt::tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3});
        CHECK(x.sum(lt::Axes{}).item() == 21.0f);
        CHECK(x.sum(lt::Axes{}, true).shape() == lt::Shape{1, 1});
        CHECK(x.max(lt::Axes{}).item() == 6.0f);
        CHECK(x.min(lt::Axes{}).item() == 1.0f);
        CHECK(x.prod(lt::Axes{}).item() == 720.0f);
        CHECK(x.mean(lt::Axes{}).item() == 3.5f);
        CHECK(lt::Tensor<bool>(x > 5.0f).any(lt::Axes{}).item());
        CHECK(!lt::Tensor<bool>(x > 5.0f).all(lt::Axes{}).item());
        CHECK(x.var(lt::Axes{}, false, 0).item() == doctest::Approx(17.5 / 6));
        CHECK(lt::logsumexp(x, lt::Axes{}).item() == doctest::Approx(std::log(std::exp(1.) + std::exp(2.) + std::exp(3.) +
                                                                             std::exp(4.) + std::exp(5.) + std::exp(6.))));
        // A 0-d tensor has no axis to reduce: the value itself.
        CHECK(lt::full<float>({}, 2.5f).sum(lt::Axes{}).item() == 2.5f);
    });
}

TEST_CASE("host interpreter: a value a later phase reads from the row cache is computed where it is first written, even if unused there") {
    // Phase 0 computes exp(x) but folds x; phase 1 uses exp(x). The row cache must be filled by
    // an instruction that runs (it was once filled by phase 0's dead exp: garbage in phase 1).
    namespace ir = lt::detail::ir;
    constexpr std::int64_t kRows = 3, kCols = 4096;
    auto load = [] {
        ir::Instr in;
        in.op = ir::Op::Load;
        in.arg = 0;
        in.access = lt::detail::Access{0, lt::Strides{kCols, 1}};
        return in;
    };
    ir::Instr exp_of_load;
    exp_of_load.op = ir::Op::Unary;
    exp_of_load.unary = lt::UnaryOp::Exp;
    exp_of_load.a = 0;
    ir::Kernel k;
    k.domain = lt::Shape{kRows, kCols};
    k.reduced = {false, true};
    k.params = {ir::Param{lt::DType::Float32, false}, ir::Param{lt::DType::Float32, true}};
    ir::Phase sum;
    sum.kind = ir::Phase::Kind::Reduce;
    sum.instrs = {load(), exp_of_load};
    sum.reduce_value = 0;
    ir::Phase store;
    ir::Instr slot;
    slot.op = ir::Op::Slot;
    slot.arg = 0;
    ir::Instr add;
    add.op = ir::Op::Binary;
    add.binary = lt::BinaryOp::Add;
    add.a = 1;
    add.b = 2;
    store.instrs = {load(), exp_of_load, slot, add};
    store.stores = {ir::Store{1, 3, lt::detail::Access{0, lt::Strides{kCols, 1}}}};
    k.phases = {sum, store};

    lt::detail::Backend& host = lt::detail::host_backend();
    lt::BufferPtr in = host.allocate(lt::DType::Float32, kRows * kCols), out = host.allocate(lt::DType::Float32, kRows * kCols);
    auto* x = static_cast<float*>(in->handle());
    std::vector<double> row_sum(kRows, 0.0);
    for (std::int64_t i = 0; i < kRows * kCols; ++i) {
        x[i] = static_cast<float>((i * 37 % 101) - 50) / 64.0f;
        row_sum[static_cast<std::size_t>(i / kCols)] += x[i];
    }
    host.launch(*host.get_kernel(k), {in.get(), out.get()}, {});
    host.synchronize();
    const auto* y = static_cast<const float*>(out->handle());
    std::int64_t wrong = 0, first = -1;
    for (std::int64_t i = 0; i < kRows * kCols; ++i) {
        const double want = std::exp(static_cast<double>(x[i])) + row_sum[static_cast<std::size_t>(i / kCols)];
        if (!(std::fabs(y[i] - want) <= 1e-4 * std::fabs(want) + 1e-4) && wrong++ == 0) first = i;
    }
    INFO("first wrong element: " << first);
    CHECK(wrong == 0);
}

namespace {
/// Whether `d` computes float64 (an OpenCL device without cl_khr_fp64, or with
/// LAZYTENSOR_OPENCL_FP64=off, does not).
bool computes_float64(lt::Device d) {
    for (const lt::DeviceInfo& info : lt::devices())
        if (info.device == d) return info.float64;
    return true;
}
bool some_test_device_lacks_float64() {
    for (lt::Device d : test_devices())
        if (!computes_float64(d)) return true;
    return false;
}
}  // namespace

// ctest runs this as reduce_opencl_no_fp64, with LAZYTENSOR_OPENCL_FP64=off.
TEST_CASE("a device without float64: integer and bool means work, and double is a DeviceError naming cl_khr_fp64" *
          doctest::skip(!some_test_device_lacks_float64())) {
    for_each_device([](lt::Device d) {
        if (computes_float64(d)) return;
        lt::Tensor<int32_t> ii = lt::tensor<int32_t>({INT32_MIN, -7, -1, 0, 1, 7, INT32_MAX}, {7}, d);
        CHECK(ii.mean().item() == -1.0f / 7);
        lt::Tensor<int64_t> big = lt::tensor<int64_t>({(int64_t(1) << 40) + 1, (int64_t(1) << 40) + 3}, {2}, d);
        CHECK(big.mean().item() == static_cast<float>(double((int64_t(1) << 40) + 2)));
        CHECK(lt::tensor<int64_t>({-5, -2}, {2}, d).mean().item() == -3.5f);
        CHECK(lt::tensor<bool>({true, false, true, true}, {4}, d).mean().item() == 0.75f);
        CHECK(std::isnan(lt::zeros<int32_t>({3, 0}, d).mean().item()));
        // Rows of random integers: within 1 ulp of the exact mean (|q| < 2^24 here).
        constexpr std::int64_t kRows = 16, kCols = 1001;
        std::vector<std::int64_t> values(kRows * kCols);
        std::uint64_t state = 12345;
        for (auto& v : values) {
            state = state * 6364136223846793005ull + 1442695040888963407ull;
            v = static_cast<std::int64_t>(state >> 40) - (std::int64_t(1) << 23);
        }
        const std::vector<float> means = lt::tensor<int64_t>(values, {kRows, kCols}, d).mean(1).to_vector();
        REQUIRE(means.size() == static_cast<std::size_t>(kRows));
        for (std::int64_t r = 0; r < kRows; ++r) {
            long double total = 0;
            for (std::int64_t c = 0; c < kCols; ++c) total += values[static_cast<std::size_t>(r * kCols + c)];
            const float exact = static_cast<float>(total / kCols);
            CHECK(std::fabs(means[static_cast<std::size_t>(r)] - exact) <= std::nextafter(std::fabs(exact), INFINITY) - std::fabs(exact));
        }
        // Double itself is refused, naming what is missing.
        lt::Tensor<double> x = lt::full<double>({5}, 1.5, d);
        try {
            (x * 2.0).realize();
            FAIL_CHECK("float64 on a device without it did not throw");
        } catch (const lt::DeviceError& e) {
            CHECK(std::string(e.what()).find("does not support float64 (the device lacks cl_khr_fp64)") != std::string::npos);
        }
    });
}
