// SPDX-License-Identifier: MIT
// Composite reductions (var, std, argmax, argmin, cumsum, cumprod), indexing (gather,
// index_select, one_hot, scatter_add), random numbers, the neural-network composites and
// in-place assignment: each against a double-precision reference written here, on every device.
#include "common.hpp"

namespace {

Ref x_for_schedule() { return random_ref<float>({2, 50}, 45); }

/// The elements of row `i` of a 2-d reference along `axis` (0: a column, 1: a row).
std::vector<double> line(const Ref& x, int axis, std::int64_t i) {
    std::vector<double> out;
    const std::int64_t n = x.shape[static_cast<std::size_t>(axis)];
    for (std::int64_t j = 0; j < n; ++j) out.push_back(axis == 1 ? x.at({i, j}) : x.at({j, i}));
    return out;
}

template <class T>
std::vector<T> values(const lt::Tensor<T>& t) {
    return t.to_vector();
}

}  // namespace

// ------------------------------------------------------------------------ composite reductions

TEST_CASE("var and std with both corrections, on floats and integers, in one kernel") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({6, 9}, 31);
        lt::Tensor<float> t = make_tensor<float>(x);
        for (int axis : {0, 1})
            for (int correction : {0, 1}) {
                INFO("axis " << axis << ", correction " << correction);
                const std::int64_t rows = x.shape[static_cast<std::size_t>(1 - axis)];
                Ref var{{rows}, {}}, sd{{rows}, {}};
                for (std::int64_t i = 0; i < rows; ++i) {
                    const auto v = line(x, axis, i);
                    double mean = 0, ss = 0;
                    for (double e : v) mean += e / static_cast<double>(v.size());
                    for (double e : v) ss += (e - mean) * (e - mean);
                    var.v.push_back(ss / static_cast<double>(static_cast<std::int64_t>(v.size()) - correction));
                    sd.v.push_back(std::sqrt(var.v.back()));
                }
                lt::Tensor<float> got = t.var(axis, false, correction);
                CHECK(lt::kernel_count(lt::schedule(got)) == 1);
                check_close(got, var, 1e-5, 1e-6);
                check_close(lt::std(t, axis, false, correction), sd, 1e-5, 1e-6);
            }
        CHECK(t.var({0, 1}, true).shape() == lt::Shape{1, 1});
        lt::Tensor<std::int32_t> ints = lt::tensor<std::int32_t>({1, 2, 3, 4}, {4});
        lt::Tensor<float> iv = ints.var();
        CHECK(iv.item() == doctest::Approx(5.0 / 3.0));
        CHECK(std::isnan(lt::tensor<float>({2.0f}).var().item()));  // N - 1 = 0: 0 / 0
    });
}

TEST_CASE("argmax and argmin: first index on ties, first NaN, any axis, keepdim") {
    for_each_device([](lt::Device) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        lt::Tensor<float> t = lt::tensor<float>({3, 7, 7, 1,   //
                                                 2, 2, 2, 2,   //
                                                 nan, 5, nan, 9},
                                                {3, 4});
        CHECK(values(t.argmax(1)) == std::vector<std::int64_t>{1, 0, 0});
        CHECK(values(t.argmin(1)) == std::vector<std::int64_t>{3, 0, 0});
        CHECK(values(lt::argmax(t, 0)) == std::vector<std::int64_t>{2, 0, 2, 2});
        CHECK(values(t.slice(0, 0, 2).argmin(0)) == std::vector<std::int64_t>{1, 1, 1, 0});
        CHECK(t.argmax(-1, true).shape() == lt::Shape{3, 1});
        CHECK(lt::kernel_count(lt::schedule(t.argmax(1))) == 1);
        // Random data against the reference, integers and a permuted view.
        Ref x = random_ref<std::int32_t>({5, 8}, 32, -3, 3);
        lt::Tensor<std::int32_t> xi = make_tensor<std::int32_t>(x);
        std::vector<std::int64_t> want;
        for (std::int64_t c = 0; c < 8; ++c) {
            const auto col = line(x, 0, c);
            want.push_back(std::max_element(col.begin(), col.end()) - col.begin());  // first maximum
        }
        CHECK(values(xi.transpose(0, 1).argmax(1)) == want);
        CHECK(values(lt::tensor<bool>({false, true, true}).argmax(0)) == std::vector<std::int64_t>{1});
        CHECK_THROWS_AS(t.argmax(2), lt::AxisError);
        CHECK_THROWS_AS(lt::zeros<float>({0, 3}).argmax(0), lt::ValueError);
    });
}

TEST_CASE("cumsum and cumprod along any axis, short and long, floats and integers") {
    for_each_device([](lt::Device) {
        for (std::int64_t n : {1, 5, 32, 33, 100, 1500}) {
            INFO("n = " << n);
            Ref x = random_ref<float>({3, n}, 33);
            lt::Tensor<float> t = make_tensor<float>(x);
            Ref sums = ref_of({3, n}, [&](const std::vector<std::int64_t>& i) {
                double s = 0;
                for (std::int64_t j = 0; j <= i[1]; ++j) s += x.at({i[0], j});
                return s;
            });
            check_close(t.cumsum(1), sums, 1e-5, 1e-4);
            check_close(t.transpose(0, 1).cumsum(0).transpose(0, 1), sums, 1e-5, 1e-4);
            Ref ints = random_ref<std::int64_t>({n}, 34, -100, 100);
            std::vector<std::int64_t> want;
            std::int64_t acc = 0;
            for (double v : ints.v) want.push_back(acc += static_cast<std::int64_t>(v));
            CHECK(values(make_tensor<std::int64_t>(ints).cumsum(0)) == want);
        }
        Ref x = random_ref<float>({4, 40}, 35, 0.5, 1.5);
        Ref prods = ref_of({4, 40}, [&](const std::vector<std::int64_t>& i) {
            double p = 1;
            for (std::int64_t j = 0; j <= i[1]; ++j) p *= x.at({i[0], j});
            return p;
        });
        check_close(lt::cumprod(make_tensor<float>(x), -1), prods, 1e-4, 1e-6);
        lt::Tensor<std::int64_t> bools = lt::tensor<bool>({true, false, true, true}).cumsum(0);
        CHECK(values(bools) == std::vector<std::int64_t>{1, 1, 2, 3});
        CHECK(values(lt::tensor<std::int32_t>({2, 3, -1, 4}).cumprod(0)) == std::vector<std::int64_t>{2, 6, -6, -24});
        CHECK(lt::zeros<float>({0, 3}).cumsum(0).shape() == lt::Shape{0, 3});
        CHECK_THROWS_AS(lt::tensor<float>({1.0f}).cumsum(1), lt::AxisError);
    });
}

namespace {

/// The inclusive scan of `x` (row-major `shape`) along `axis` in double, and next to each
/// element the sum of the magnitudes it folds (a bound on the rounding of any order).
struct ScanRef {
    std::vector<double> value, magnitude;
};
ScanRef scan_ref(const std::vector<double>& x, const lt::Shape& shape, int axis, bool product) {
    std::int64_t inner = 1;
    for (std::size_t d = static_cast<std::size_t>(axis) + 1; d < shape.size(); ++d) inner *= shape[d];
    const std::int64_t length = shape[static_cast<std::size_t>(axis)];
    const std::int64_t outer = length == 0 ? 0 : static_cast<std::int64_t>(x.size()) / (length * inner);
    ScanRef r{std::vector<double>(x.size()), std::vector<double>(x.size())};
    for (std::int64_t o = 0; o < outer; ++o)
        for (std::int64_t j = 0; j < inner; ++j) {
            double acc = product ? 1 : 0, mag = product ? 1 : 0;
            for (std::int64_t i = 0; i < length; ++i) {
                const auto at = static_cast<std::size_t>((o * length + i) * inner + j);
                acc = product ? acc * x[at] : acc + x[at];
                mag = product ? mag * std::fabs(x[at]) : mag + std::fabs(x[at]);
                r.value[at] = acc;
                r.magnitude[at] = mag;
            }
        }
    return r;
}

/// The int64 scan of `x` along the last axis of [rows, n], wrapping as two's complement does.
std::vector<std::int64_t> wrapped_scan(const std::vector<std::int64_t>& x, std::int64_t n, bool product) {
    std::vector<std::int64_t> out(x.size());
    for (std::size_t r = 0; r < x.size() / static_cast<std::size_t>(n); ++r) {
        std::uint64_t acc = product ? 1 : 0;
        for (std::int64_t i = 0; i < n; ++i) {
            const std::size_t at = r * static_cast<std::size_t>(n) + static_cast<std::size_t>(i);
            acc = product ? acc * static_cast<std::uint64_t>(x[at]) : acc + static_cast<std::uint64_t>(x[at]);
            out[at] = static_cast<std::int64_t>(acc);
        }
    }
    return out;
}

template <class T>
void check_scan(const lt::Tensor<T>& got, const ScanRef& want, double rtol, const char* what = "") {
    INFO(std::string(what));
    const std::vector<T> g = got.to_vector();
    REQUIRE(g.size() == want.value.size());
    std::size_t bad = 0, first = 0;
    for (std::size_t i = 0; i < g.size(); ++i) {
        const double v = static_cast<double>(g[i]);
        const bool ok = std::isnan(want.value[i]) ? std::isnan(v) : std::fabs(v - want.value[i]) <= rtol * want.magnitude[i];
        if (!ok && bad++ == 0) first = i;
    }
    INFO("first of " << bad << " differing: element " << first << ": " << static_cast<double>(g[first]) << " vs "
                     << want.value[first]);
    CHECK(bad == 0);
}

}  // namespace

TEST_CASE("scans: every dtype, lengths around tiles and chunks, both axes, views, wrap, NaN, one scan item") {
    for_each_device([](lt::Device d) {
        for (std::int64_t n : {std::int64_t(1), std::int64_t(31), std::int64_t(32), std::int64_t(33), std::int64_t(1025), std::int64_t(2049), (std::int64_t(1) << 20) + 3}) {
            INFO("n = " << n);
            const std::int64_t rows = n > 4096 ? 1 : 3;
            Ref x = random_ref<float>({rows, n}, 41);
            lt::Tensor<float> t = make_tensor<float>(x, d);
            const ScanRef sums = scan_ref(x.v, {rows, n}, 1, false);
            check_scan(t.cumsum(1), sums, 1e-6);
            check_scan(lt::cumsum(make_tensor<double>(x, d), -1), sums, 1e-14);
            // Along the first axis: [n, rows] read in place through a transpose, and contiguous.
            check_scan(t.transpose(0, 1).cumsum(0).transpose(0, 1), sums, 1e-6);
            const std::vector<double> columns = permute(x, {1, 0}).v;
            check_scan(make_tensor<float>(Ref{{n, rows}, columns}, d).cumsum(0), scan_ref(columns, {n, rows}, 0, false), 1e-6);
            // Products of values near 1 stay finite over long rows.
            Ref near_one = random_ref<float>({rows, n}, 42, 0.999, 1.001);
            // (A product's rounding errors walk: about sqrt(n) ulps.)
            check_scan(make_tensor<float>(near_one, d).cumprod(1), scan_ref(near_one.v, {rows, n}, 1, true),
                       1e-6 * std::sqrt(static_cast<double>(n)) + 1e-6);
            // int64 sums and products wrap; int32, uint8 and bool accumulate in int64.
            Ref ints = random_ref<std::int64_t>({rows, n}, 43, -1000, 1000);
            std::vector<std::int64_t> big;
            for (double v : ints.v) big.push_back(static_cast<std::int64_t>(v) * (std::int64_t(1) << 52));
            CHECK(lt::tensor<std::int64_t>(big, {rows, n}, d).cumsum(1).to_vector() == wrapped_scan(big, n, false));
            std::vector<std::int64_t> small;
            for (double v : ints.v) small.push_back(static_cast<std::int64_t>(v) % 7 + 3);
            CHECK(lt::tensor<std::int64_t>(small, {rows, n}, d).cumprod(1).to_vector() == wrapped_scan(small, n, true));
            std::vector<std::int32_t> small32(small.begin(), small.end());
            CHECK(lt::tensor<std::int32_t>(small32, {rows, n}, d).cumsum(1).to_vector() == wrapped_scan(small, n, false));
            std::vector<std::uint8_t> bytes;
            for (double v : ints.v) bytes.push_back(static_cast<std::uint8_t>(static_cast<std::int64_t>(v) & 0xff));
            std::vector<std::int64_t> byte_values(bytes.begin(), bytes.end());
            CHECK(lt::tensor<std::uint8_t>(bytes, {rows, n}, d).cumsum(1).to_vector() == wrapped_scan(byte_values, n, false));
        }
        // Outputs of 16 MiB and more (the host writes them with non-temporal stores), of odd
        // lengths so that rows start unaligned: along rows and along columns (five blocks of
        // columns), float32, float64 and int64.
        {
            const std::int64_t rows = 1031, n = 4099, half_n = 2053;
            const Ref x = random_ref<float>({rows, n}, 45);
            const lt::Tensor<float> t = make_tensor<float>(x, d);
            check_scan(t.cumsum(1), scan_ref(x.v, {rows, n}, 1, false), 1e-6, "16.9 MB, float32 rows");
            check_scan(t.cumsum(0), scan_ref(x.v, {rows, n}, 0, false), 1e-6, "16.9 MB, float32 columns");
            const Ref y = random_ref<double>({rows, half_n}, 46);
            const lt::Tensor<double> u = make_tensor<double>(y, d);
            check_scan(u.cumsum(1), scan_ref(y.v, {rows, half_n}, 1, false), 1e-14, "16.9 MB, float64 rows");
            check_scan(u.cumsum(0), scan_ref(y.v, {rows, half_n}, 0, false), 1e-14, "16.9 MB, float64 columns");
            std::vector<std::int64_t> big;
            for (double v : y.v) big.push_back(static_cast<std::int64_t>(v * 1e6) * (std::int64_t(1) << 40));
            CHECK(lt::tensor<std::int64_t>(big, {rows, half_n}, d).cumsum(1).to_vector() == wrapped_scan(big, half_n, false));
        }
        // NaN from its position on; inf - inf is NaN.
        const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
        std::vector<float> with_nan(3000, 1.0f);
        with_nan[1700] = nan;
        const std::vector<float> s = lt::tensor<float>(with_nan, {3000}, d).cumsum(0).to_vector();
        CHECK(s[1699] == 1700.0f);
        for (std::size_t i = 1700; i < 3000; ++i) REQUIRE(std::isnan(s[i]));
        const std::vector<float> w = lt::tensor<float>({inf, 1.0f, -inf, 2.0f}, d).cumsum(0).to_vector();
        CHECK(w[1] == inf);
        CHECK(std::isnan(w[2]));
        CHECK(std::isnan(lt::tensor<float>({0.0f, inf, 2.0f}, d).cumprod(0).to_vector()[1]));
        // half: accumulated in float32, each element rounded once.
        std::vector<lt::half> h(700, lt::half(0.1f));
        const std::vector<lt::half> hs = lt::tensor<lt::half>(h, {700}, d).cumsum(0).to_vector();
        for (std::size_t i = 0; i < 700; i += 99)
            CHECK(static_cast<float>(hs[i]) == static_cast<float>(lt::half(static_cast<float>(lt::half(0.1f)) * static_cast<float>(i + 1))));
        // A 3-d operand read through a permuted, sliced view of a realized tensor (copied first).
        Ref cube = random_ref<float>({4, 5, 6}, 44);
        lt::Tensor<float> c = make_tensor<float>(cube, d);
        lt::Tensor<float> view = c.permute({2, 0, 1}).slice(2, 0, 5, 2).realize();  // [6, 4, 3], strided
        const Ref viewed = ref_of({6, 4, 3}, [&](const std::vector<std::int64_t>& i) { return cube.at({i[1], 2 * i[2], i[0]}); });
        for (int axis : {0, 1, 2}) {
            INFO("axis " << axis);
            check_scan(view.cumsum(axis), scan_ref(viewed.v, {6, 4, 3}, axis, false), 1e-6);
        }
        // Empty axes, and a scan between element-wise kernels: a scan item of its own on the
        // host; on OpenCL the kernels run in its loads and stores (the next case tests that).
        CHECK(lt::zeros<float>({3, 0}, d).cumsum(0).shape() == lt::Shape{3, 0});
        CHECK(lt::zeros<std::int32_t>({0, 3}, d).cumprod(1).shape() == lt::Shape{0, 3});
        lt::Tensor<float> r = make_tensor<float>(x_for_schedule(), d);
        lt::Tensor<float> fused = lt::cumsum(r * 2.0f, 1) + 1.0f;
        const std::vector<lt::ScheduleItem> items = lt::schedule(fused);
        if (d.kind == lt::Device::Kind::Host) {
            REQUIRE(items.size() == 3);
            CHECK(items[0].kind == lt::ScheduleItem::Kind::Kernel);
            CHECK(items[1].kind == lt::ScheduleItem::Kind::Scan);
            CHECK(items[1].ops == std::vector<std::string>{"cumsum"});
            CHECK(items[2].kind == lt::ScheduleItem::Kind::Kernel);
        } else {
            REQUIRE(items.size() == 1);
            CHECK(items[0].kind == lt::ScheduleItem::Kind::Scan);
            CHECK(items[0].ops == std::vector<std::string>{"mul", "cumsum", "add"});
        }
        check_scan(lt::Tensor<float>(fused - 1.0f), scan_ref(map(x_for_schedule(), [](double v) { return 2 * v; }).v, {2, 50}, 1, false), 1e-6);
        // Axis 0 of the view: its axes after it are no single strided run; axis 1: both sides are.
        CHECK(lt::schedule(view.cumsum(0))[0].ops == std::vector<std::string>{"copy", "cumsum"});
        CHECK(lt::schedule(view.cumsum(1))[0].ops == std::vector<std::string>{"cumsum"});
        CHECK(lt::schedule(c.transpose(0, 2).cumsum(1))[0].ops == std::vector<std::string>{"cumsum"});  // in place
    });
}

namespace {

/// The kinds of a schedule's items, in order.
std::vector<lt::ScheduleItem::Kind> kinds(const std::vector<lt::ScheduleItem>& items) {
    std::vector<lt::ScheduleItem::Kind> out;
    for (const lt::ScheduleItem& item : items) out.push_back(item.kind);
    return out;
}

/// `scan` with an element-wise function applied: values f(v, at) and magnitudes |f'| bounds.
ScanRef scan_then(const ScanRef& scan, const std::function<double(double, std::size_t)>& f,
                  const std::function<double(double, std::size_t)>& magnitude) {
    ScanRef out;
    for (std::size_t i = 0; i < scan.value.size(); ++i) {
        out.value.push_back(f(scan.value[i], i));
        out.magnitude.push_back(magnitude(scan.magnitude[i], i));
    }
    return out;
}

}  // namespace

TEST_CASE("scans fuse their operand's producer into their loads and their consumer into their stores on OpenCL") {
    for_each_device([](lt::Device d) {
        using Kind = lt::ScheduleItem::Kind;
        const bool fuses = d.kind != lt::Device::Kind::Host;  // the host runs them as kernels of their own
        // Along rows and across rows, short and long enough for chunks (a fold pass, then
        // carries), with a consumer that reads two broadcast inputs at the result's coordinates.
        for (std::int64_t n : {std::int64_t(1), std::int64_t(33), std::int64_t(1025), (std::int64_t(1) << 20) + 3}) {
            INFO("n = " << n);
            const std::int64_t rows = n > 4096 ? 2 : 3;
            const Ref x = random_ref<float>({rows, n}, 51), w = random_ref<float>({1, n}, 52), b = random_ref<float>({rows, 1}, 53);
            const lt::Tensor<float> tx = make_tensor<float>(x, d), tw = make_tensor<float>(w, d), tb = make_tensor<float>(b, d);
            const ScanRef half_scan = scan_ref(map(x, [](double v) { return v * 0.5; }).v, {rows, n}, 1, false);
            auto row_of = [&](std::size_t at) { return at / static_cast<std::size_t>(n); };
            auto col_of = [&](std::size_t at) { return at % static_cast<std::size_t>(n); };
            lt::Tensor<float> y = lt::cumsum(tx * 0.5f, 1) * tw + tb;
            const std::vector<lt::ScheduleItem> items = lt::schedule(y);
            if (fuses) {
                REQUIRE(kinds(items) == std::vector<Kind>{Kind::Scan});
                CHECK(items[0].ops == std::vector<std::string>{"mul", "cumsum", "mul", "add"});
                CHECK(lt::kernel_count(items) == 0);
            } else {
                CHECK(kinds(items) == std::vector<Kind>{Kind::Kernel, Kind::Scan, Kind::Kernel});
            }
            check_scan(y,
                       scan_then(half_scan, [&](double v, std::size_t at) { return v * w.v[col_of(at)] + b.v[row_of(at)]; },
                                 [&](double m, std::size_t at) { return m * std::fabs(w.v[col_of(at)]) + std::fabs(b.v[row_of(at)]); }),
                       1e-6, "rows");
            // Across rows: [n, rows], the consumer's inputs broadcast the other way.
            const Ref xt = permute(x, {1, 0});
            lt::Tensor<float> z = lt::cumsum(make_tensor<float>(xt, d) * 0.5f, 0) * tb.reshape({1, rows}) + tw.reshape({n, 1});
            if (fuses) CHECK(kinds(lt::schedule(z)) == std::vector<Kind>{Kind::Scan});
            const ScanRef column_scan = scan_ref(map(xt, [](double v) { return v * 0.5; }).v, {n, rows}, 0, false);
            check_scan(z,
                       scan_then(column_scan, [&](double v, std::size_t at) { return v * b.v[at % static_cast<std::size_t>(rows)] + w.v[at / static_cast<std::size_t>(rows)]; },
                                 [&](double m, std::size_t at) {
                                     return m * std::fabs(b.v[at % static_cast<std::size_t>(rows)]) + std::fabs(w.v[at / static_cast<std::size_t>(rows)]);
                                 }),
                       1e-6, "columns");
            // A product of a producer, read through a transpose of it.
            const Ref near_one = random_ref<float>({rows, n}, 54, 0.999, 1.001);
            lt::Tensor<float> p = lt::cumprod((make_tensor<float>(near_one, d) * 0.5f + 0.5f).transpose(0, 1), 0).transpose(0, 1);
            if (fuses) CHECK(lt::kernel_count(lt::schedule(p)) == 0);  // a scan item, then a view of it
            check_scan(p, scan_ref(map(near_one, [](double v) { return v * 0.5 + 0.5; }).v, {rows, n}, 1, true),
                       1e-6 * std::sqrt(static_cast<double>(n)) + 1e-6);
        }
        // The middle axis of three, with a consumer broadcast along it: coordinates from (o, i, j).
        const Ref cube = random_ref<float>({4, 37, 5}, 55), plane = random_ref<float>({4, 1, 5}, 56);
        lt::Tensor<float> mid = lt::exp(lt::cumsum(make_tensor<float>(cube, d) * 0.25f, 1) - make_tensor<float>(plane, d));
        if (fuses) CHECK(kinds(lt::schedule(mid)) == std::vector<Kind>{Kind::Scan});
        const ScanRef mid_scan = scan_ref(map(cube, [](double v) { return v * 0.25; }).v, {4, 37, 5}, 1, false);
        auto plane_at = [&](std::size_t at) { return plane.v[(at / (37 * 5)) * 5 + at % 5]; };
        check_scan(mid,
                   scan_then(mid_scan, [&](double v, std::size_t at) { return std::exp(v - plane_at(at)); },
                             [&](double m, std::size_t at) { return std::exp(mid_scan.value[at] - plane_at(at)) * (m + std::fabs(plane_at(at)) + 1); }),
                   1e-6, "the middle axis");
        // A consumer of another shape (a reshape): coordinates from the flat index.
        const Ref small = random_ref<float>({3, 10}, 57), bias = random_ref<float>({1, 6}, 58);
        lt::Tensor<float> reshaped = lt::cumsum(make_tensor<float>(small, d) * 2.0f, 1).reshape({5, 6}) + make_tensor<float>(bias, d);
        if (fuses) CHECK(kinds(lt::schedule(reshaped)) == std::vector<Kind>{Kind::Scan});
        check_scan(reshaped,
                   scan_then(scan_ref(map(small, [](double v) { return 2 * v; }).v, {3, 10}, 1, false),
                             [&](double v, std::size_t at) { return v + bias.v[at % 6]; },
                             [&](double m, std::size_t at) { return m + std::fabs(bias.v[at % 6]); }),
                   1e-6, "a reshaped consumer");
        // float64 through a cast in the loads.
        lt::Tensor<double> wide = lt::cumsum(make_tensor<float>(small, d).cast<double>() * 3.0, 1);
        if (fuses) CHECK(kinds(lt::schedule(wide)) == std::vector<Kind>{Kind::Scan});
        check_scan(wide, scan_ref(map(small, [](double v) { return 3 * static_cast<double>(static_cast<float>(v)); }).v, {3, 10}, 1, false), 1e-14, "float64");
        // Integers: int32, uint8 and bool cast to int64 in the loads; an int64 scan's consumer may
        // store anything, exactly.
        const Ref ints = random_ref<std::int64_t>({3, 300}, 59, -1000, 1000);
        std::vector<std::int32_t> i32;
        std::vector<std::int64_t> i64;
        std::vector<std::uint8_t> bytes;
        std::vector<bool> flags;
        for (double v : ints.v) {
            i32.push_back(static_cast<std::int32_t>(v));
            i64.push_back(static_cast<std::int64_t>(v));
            bytes.push_back(static_cast<std::uint8_t>(static_cast<std::int64_t>(v) & 0xff));
            flags.push_back(v > 0);
        }
        const std::vector<std::int64_t> sums = wrapped_scan(i64, 300, false);
        lt::Tensor<std::int64_t> scaled = lt::cumsum(lt::tensor<std::int32_t>(i32, {3, 300}, d), 1) * std::int64_t(3) - std::int64_t(1);
        lt::Tensor<bool> positive = lt::cumsum(lt::tensor<std::int32_t>(i32, {3, 300}, d), 1) > std::int64_t(0);
        if (fuses) {
            CHECK(kinds(lt::schedule(scaled)) == std::vector<Kind>{Kind::Scan});
            CHECK(kinds(lt::schedule(positive)) == std::vector<Kind>{Kind::Scan});
        }
        std::vector<std::int64_t> want_scaled;
        std::vector<bool> want_positive;
        for (std::int64_t v : sums) want_scaled.push_back(v * 3 - 1), want_positive.push_back(v > 0);
        CHECK(scaled.to_vector() == want_scaled);
        const std::vector<bool> got_positive = positive.to_vector();
        CHECK(got_positive == want_positive);
        std::vector<std::int64_t> byte_values(bytes.begin(), bytes.end()), flag_values(flags.begin(), flags.end());
        CHECK(lt::tensor<std::uint8_t>(bytes, {3, 300}, d).cumsum(1).to_vector() == wrapped_scan(byte_values, 300, false));
        CHECK(lt::tensor<bool>(flags, {3, 300}, d).cumsum(1).to_vector() == wrapped_scan(flag_values, 300, false));
        // A float scan's comparison stays a kernel of its own (check mode compares it exactly).
        const Ref signs = random_ref<float>({3, 300}, 60);
        lt::Tensor<bool> above = lt::cumsum(make_tensor<float>(signs, d), 1) > 0.0f;
        CHECK(kinds(lt::schedule(above)) == std::vector<Kind>{Kind::Scan, Kind::Kernel});
        const ScanRef sign_scan = scan_ref(signs.v, {3, 300}, 1, false);
        const std::vector<bool> got_above = above.to_vector();
        for (std::size_t i = 0; i < got_above.size(); ++i)
            if (std::fabs(sign_scan.value[i]) > 1e-4 * sign_scan.magnitude[i]) REQUIRE(got_above[i] == (sign_scan.value[i] > 0));
        // half: cast to float32 in the loads, the sum rounded to half once in the stores.
        std::vector<lt::half> h(700, lt::half(0.1f));
        lt::Tensor<lt::half> hs = lt::tensor<lt::half>(h, {700}, d).cumsum(0);
        if (fuses) {
            REQUIRE(kinds(lt::schedule(hs)) == std::vector<Kind>{Kind::Scan});
            CHECK(lt::schedule(hs)[0].ops == std::vector<std::string>{"cast", "cumsum", "cast"});
        }
        const std::vector<lt::half> hv = hs.to_vector();
        for (std::size_t i = 0; i < 700; i += 33)
            CHECK(static_cast<float>(hv[i]) == static_cast<float>(lt::half(static_cast<float>(lt::half(0.1f)) * static_cast<float>(i + 1))));
        // A producer and a scan that tensors of the program hold are stored too, and right.
        const lt::Tensor<float> held_x = make_tensor<float>(small, d);
        lt::Tensor<float> producer = held_x * 2.0f;
        lt::Tensor<float> scanned = lt::cumsum(producer, 1);
        lt::Tensor<float> consumer = lt::exp(scanned * 0.125f);
        if (fuses) CHECK(kinds(lt::schedule(consumer)) == std::vector<Kind>{Kind::Scan});
        consumer.realize();
        CHECK(producer.is_realized());
        CHECK(scanned.is_realized());
        const ScanRef doubled = scan_ref(map(small, [](double v) { return 2 * v; }).v, {3, 10}, 1, false);
        check_close(producer, map(small, [](double v) { return 2 * v; }), 1e-6, 1e-6);
        check_scan(scanned, doubled, 1e-6, "a held scan");
        check_scan(consumer,
                   scan_then(doubled, [](double v, std::size_t) { return std::exp(v * 0.125); },
                             [&](double m, std::size_t at) { return std::exp(doubled.value[at] * 0.125) * (m * 0.125 + 1); }),
                   1e-6, "a consumer of a held scan");
        // A changing scalar in the loads and stores reuses the scan's program.
        for (float scale : {0.5f, 1.5f}) {
            lt::Tensor<float> varied = lt::cumsum(held_x * scale, 1) + scale;
            check_scan(varied,
                       scan_then(scan_ref(map(small, [&](double v) { return v * scale; }).v, {3, 10}, 1, false),
                                 [&](double v, std::size_t) { return v + scale; }, [&](double m, std::size_t) { return m + scale; }),
                       1e-6, "a changing scalar");
        }
        lt::reset_compile_stats(d);
        lt::Tensor<float> again = lt::cumsum(held_x * 2.5f, 1) + 2.5f;
        again.realize();
        CHECK(lt::compile_stats(d).programs_built + lt::compile_stats(d).disk_hits + lt::compile_stats(d).kernels_compiled == 0);
        // LAZYTENSOR_DEBUG=2 shows the fused scan's generated program, its producer and consumer in it.
        if (fuses) {
            const std::string source = debug_output(2, [&] { (lt::cumsum(held_x * 3.5f, 1) + 3.5f).realize(); });
            CHECK(source.find("scan 0 on " + d.str() + ":") != std::string::npos);
            CHECK(source.find("__kernel void lt_scan_rows(") != std::string::npos);
            CHECK(source.find("lt_prologue_s(") != std::string::npos);
            CHECK(source.find("store_scanned") != std::string::npos);
        }
    });
}

TEST_CASE("scans of few long rows run one pass over tiles that look back: lengths around tiles, wrap, products, fused") {
    // On OpenCL a row of more than one tile (2048 elements where the device allows 256 work-items)
    // among few rows gets a work-group per tile, which adds up the totals of the tiles before it
    // as they publish them (lt_scan_lookback, where LAZYTENSOR_OPENCL_LOOKBACK=on asks for it, as here); the
    // host scans the same cases.
    ScopedEnvVar look_back("LAZYTENSOR_OPENCL_LOOKBACK", "on");
    for_each_device([](lt::Device d) {
        const std::int64_t tile = 2048;
        for (std::int64_t n : {std::int64_t(1), tile - 1, tile, tile + 1, 2 * tile, 7 * tile + 5, std::int64_t(40009)}) {
            INFO("n = " << n);
            const std::int64_t rows = n == 40009 ? 1 : 2;
            const Ref x = random_ref<float>({rows, n}, 61);
            const ScanRef sums = scan_ref(x.v, {rows, n}, 1, false);
            check_scan(make_tensor<float>(x, d).cumsum(1), sums, 1e-6, "float32");
            check_scan(make_tensor<double>(x, d).cumsum(1), sums, 1e-14, "float64");
            const Ref near_one = random_ref<float>({rows, n}, 62, 0.999, 1.001);
            check_scan(make_tensor<float>(near_one, d).cumprod(1), scan_ref(near_one.v, {rows, n}, 1, true),
                       1e-6 * std::sqrt(static_cast<double>(n)) + 1e-6, "float32 products");
            // int64 wraps: every element near 2^62, so that sums pass 2^63 many times.
            const Ref ints = random_ref<std::int64_t>({rows, n}, 63, -1000, 1000);
            std::vector<std::int64_t> big, small;
            for (double v : ints.v) {
                // (in uint64: the product passes 2^63, and a signed overflow would be undefined)
                big.push_back(static_cast<std::int64_t>(static_cast<std::uint64_t>(static_cast<std::int64_t>(v)) * (std::uint64_t(1) << 53) +
                                                        (std::uint64_t(1) << 62)));
                small.push_back(static_cast<std::int64_t>(v) % 7 + 3);
            }
            CHECK(lt::tensor<std::int64_t>(big, {rows, n}, d).cumsum(1).to_vector() == wrapped_scan(big, n, false));
            CHECK(lt::tensor<std::int64_t>(small, {rows, n}, d).cumprod(1).to_vector() == wrapped_scan(small, n, true));
            // A producer in the loads and a consumer in the stores (fused on OpenCL).
            const lt::Tensor<float> y = lt::cumsum(make_tensor<float>(x, d) * 0.5f, 1) * 2.0f + 1.0f;
            check_scan(y,
                       scan_then(sums, [](double v, std::size_t) { return v + 1; }, [](double m, std::size_t) { return m + 1; }),
                       1e-6, "fused");
            // half: accumulated in float32 (exactly: multiples of 2^-13 below 2^11), rounded once.
            if (n > 20000) continue;
            const std::vector<lt::half> h(static_cast<std::size_t>(n), lt::half(0.1f));
            const std::vector<lt::half> hs = lt::tensor<lt::half>(h, {n}, d).cumsum(0).to_vector();
            for (std::size_t i = 0; i < hs.size(); i += 97)
                REQUIRE(static_cast<float>(hs[i]) ==
                        static_cast<float>(lt::half(static_cast<float>(lt::half(0.1f)) * static_cast<float>(i + 1))));
        }
        // Many tiles, repeated: exact int64 sums, so a tile that read a predecessor's total too
        // early (a race) would show.
        const std::int64_t n = 100003;
        std::vector<std::int64_t> v(static_cast<std::size_t>(n));
        for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::int64_t>((i * 2654435761u) % 1999) - 999;
        const std::vector<std::int64_t> want = wrapped_scan(v, n, false);
        const lt::Tensor<std::int64_t> t = lt::tensor<std::int64_t>(v, {n}, d);
        for (int repeat = 0; repeat < 5; ++repeat) REQUIRE(lt::cumsum(t + std::int64_t(0), 0).to_vector() == want);
        if (d.kind != lt::Device::Kind::Host) {
            ScopedEnvVar bad("LAZYTENSOR_OPENCL_LOOKBACK", "sometimes");
            try {
                lt::cumsum(t, 0).realize();
                FAIL_CHECK("LAZYTENSOR_OPENCL_LOOKBACK=sometimes was accepted");
            } catch (const lt::ValueError& e) {
                CHECK(std::string(e.what()).find("LAZYTENSOR_OPENCL_LOOKBACK=sometimes") != std::string::npos);
            }
        }
    });
}

// -------------------------------------------------------------------------------- composites

TEST_CASE("softmax, log_softmax and logsumexp: reference values, extremes, one kernel") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({7, 33}, 36, -20, 20);
        lt::Tensor<float> t = make_tensor<float>(x);
        Ref lse{{7}, {}};
        for (std::int64_t r = 0; r < 7; ++r) {
            double s = 0;
            for (double v : line(x, 1, r)) s += std::exp(v);
            lse.v.push_back(std::log(s));
        }
        Ref sm = ref_of({7, 33}, [&](const std::vector<std::int64_t>& i) { return std::exp(x.at(i) - lse.v[static_cast<std::size_t>(i[0])]); });
        Ref lsm = ref_of({7, 33}, [&](const std::vector<std::int64_t>& i) { return x.at(i) - lse.v[static_cast<std::size_t>(i[0])]; });
        lt::Tensor<float> s = lt::softmax(t, 1);
        CHECK(lt::kernel_count(lt::schedule(s)) == 1);
        check_close(s, sm, 1e-5, 1e-7);
        lt::Tensor<float> ls = lt::log_softmax(t, -1);
        CHECK(lt::kernel_count(lt::schedule(ls)) == 1);
        check_close(ls, lsm, 1e-5, 1e-4);
        lt::Tensor<float> l = lt::logsumexp(t, 1);
        CHECK(lt::kernel_count(lt::schedule(l)) == 1);
        check_close(l, lse, 1e-5, 1e-4);
        // The issue's own spelling, sum(exp(x - max(x, axis, keepdim)), axis): one kernel.
        lt::Tensor<float> manual = lt::sum(lt::exp(t - lt::max(t, 1, true)), 1);
        CHECK(lt::kernel_count(lt::schedule(manual)) == 1);
        // Softmax along the first axis (a column reduction), and of a permuted view.
        check_close(lt::softmax(t.transpose(0, 1), 0).transpose(0, 1), sm, 1e-5, 1e-7);
        // Large values do not overflow; -inf rows give -inf; +inf gives +inf.
        const float inf = std::numeric_limits<float>::infinity();
        lt::Tensor<float> big = lt::tensor<float>({1000, 1000, -inf, -inf, -inf, -inf, 1, inf, 0}, {3, 3});
        const auto lv = values(lt::logsumexp(big, 1));
        CHECK(lv[0] == doctest::Approx(1000 + std::log(2.0)));
        CHECK(lv[1] == -inf);
        CHECK(lv[2] == inf);
        const auto sv = values(lt::softmax(big.slice(0, 0, 1), 1));
        CHECK(sv[0] == doctest::Approx(0.5));
        CHECK(sv[2] == 0.0f);
        // Integers are computed in float.
        lt::Tensor<float> si = lt::softmax(lt::tensor<std::int32_t>({0, 0}, {1, 2}));
        CHECK(values(si) == std::vector<float>{0.5f, 0.5f});
        // Over an empty axis (a batch of empty sequences), as PyTorch: softmax and log_softmax are
        // empty, logsumexp is log(0) = -inf; a bad axis is still an AxisError.
        const lt::Tensor<float> none = lt::zeros<float>({3, 0});
        CHECK(lt::softmax(none, 1).shape() == lt::Shape{3, 0});
        CHECK(lt::softmax(none, 1).to_vector().empty());
        CHECK(lt::log_softmax(none, -1).shape() == lt::Shape{3, 0});
        CHECK(lt::log_softmax(none, -1).to_vector().empty());
        CHECK(values(lt::logsumexp(none, 1)) == std::vector<float>{-inf, -inf, -inf});
        CHECK(values(lt::logsumexp(none, 1, true)).size() == 3);
        CHECK(values(lt::logsumexp(none)) == std::vector<float>{-inf});
        CHECK(values(lt::softmax(none, 0)).empty());  // the empty axis is the other one: 0 rows of 3
        CHECK_THROWS_AS(lt::softmax(none, 2), lt::AxisError);
        CHECK_THROWS_AS(lt::logsumexp(none, 2), lt::AxisError);
        // Attention over no keys: the weights are empty, the product with them zeros.
        const lt::Tensor<float> q = lt::ones<float>({2, 4, 3}), k = lt::ones<float>({2, 0, 3}), v = lt::ones<float>({2, 0, 5});
        const lt::Tensor<float> attended = lt::matmul(lt::softmax(lt::matmul(q, k.mT()) * 0.5f, -1), v);
        CHECK(attended.shape() == lt::Shape{2, 4, 5});
        CHECK(values(attended) == std::vector<float>(40, 0.0f));
    });
}

TEST_CASE("layer_norm with and without weight and bias, in at most 3 kernels") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({4, 6, 10}, 37);
        lt::Tensor<float> t = make_tensor<float>(x);
        Ref w = random_ref<float>({10}, 38), b = random_ref<float>({10}, 39);
        auto reference = [&](bool affine, bool two_axes) {
            return ref_of({4, 6, 10}, [&](const std::vector<std::int64_t>& i) {
                double mean = 0, ss = 0, n = two_axes ? 60 : 10;
                for (std::int64_t p = 0; p < (two_axes ? 6 : 1); ++p)
                    for (std::int64_t q = 0; q < 10; ++q) mean += x.at({i[0], two_axes ? p : i[1], q}) / n;
                for (std::int64_t p = 0; p < (two_axes ? 6 : 1); ++p)
                    for (std::int64_t q = 0; q < 10; ++q) {
                        const double d = x.at({i[0], two_axes ? p : i[1], q}) - mean;
                        ss += d * d / n;
                    }
                const double y = (x.at(i) - mean) / std::sqrt(ss + 1e-5);
                return affine ? y * w.at({i[2]}) + b.at({i[2]}) : y;
            });
        };
        lt::Tensor<float> plain = lt::layer_norm(t, -1);
        CHECK(lt::kernel_count(lt::schedule(plain)) == 1);  // the issue asks for at most 3
        check_close(plain, reference(false, false), 1e-4, 1e-5);
        lt::Tensor<float> affine = lt::layer_norm(t, {-1}, 1e-5, make_tensor<float>(w), make_tensor<float>(b));
        CHECK(lt::kernel_count(lt::schedule(affine)) <= 3);
        check_close(affine, reference(true, false), 1e-4, 1e-5);
        lt::Tensor<float> two = lt::layer_norm(t, {1, 2});
        CHECK(lt::kernel_count(lt::schedule(two)) <= 3);
        check_close(two, reference(false, true), 1e-4, 1e-5);
        CHECK_THROWS_AS(lt::layer_norm(t, 3), lt::AxisError);
        // A weight or bias that does not broadcast to x's shape is layer_norm's error (was mul's
        // or add's), naming its shape and the normalized shape.
        CHECK_THROWS_WITH_AS(lt::layer_norm(t, {-1}, 1e-5, lt::ones<float>({9})),
                             "layer_norm: the weight's shape [9] does not fit the normalized shape [10] (x has shape "
                             "[4, 6, 10], normalized over axes [2]); the weight must broadcast to x's shape, e.g. have "
                             "shape [10]",
                             lt::ShapeError);
        CHECK_THROWS_WITH_AS(lt::layer_norm(t, {1, 2}, 1e-5, std::nullopt, lt::zeros<float>({10, 6})),
                             "layer_norm: the bias's shape [10, 6] does not fit the normalized shape [6, 10] (x has shape "
                             "[4, 6, 10], normalized over axes [1, 2]); the bias must broadcast to x's shape, e.g. have "
                             "shape [6, 10]",
                             lt::ShapeError);
        CHECK_THROWS_WITH_AS(lt::layer_norm(t, {0}, 1e-5, lt::ones<float>({4})),
                             "layer_norm: the weight's shape [4] does not fit the normalized shape [4, 1, 1] (x has shape "
                             "[4, 6, 10], normalized over axes [0]); the weight must broadcast to x's shape, e.g. have "
                             "shape [4, 1, 1]",
                             lt::ShapeError);
        // Larger than x: the result would not have x's shape.
        CHECK_THROWS_AS(lt::layer_norm(t, {-1}, 1e-5, lt::ones<float>({2, 4, 6, 10})), lt::ShapeError);
        // Shapes that broadcast to x's stay accepted: a weight of the normalized shape along axis 0,
        // and a bias of one element.
        Ref w0 = random_ref<float>({4, 1, 1}, 46);
        lt::Tensor<float> along_0 = lt::layer_norm(t, {0}, 1e-5, make_tensor<float>(w0), lt::full<float>({1}, 0.5f));
        check_close(along_0, ref_of({4, 6, 10}, [&](const std::vector<std::int64_t>& i) {
                        double mean = 0, ss = 0;
                        for (std::int64_t p = 0; p < 4; ++p) mean += x.at({p, i[1], i[2]}) / 4;
                        for (std::int64_t p = 0; p < 4; ++p) ss += (x.at({p, i[1], i[2]}) - mean) * (x.at({p, i[1], i[2]}) - mean) / 4;
                        return (x.at(i) - mean) / std::sqrt(ss + 1e-5) * w0.at({i[0], 0, 0}) + 0.5;
                    }),
                    1e-4, 1e-5);
        // No axes means all of them, as for var, std and logsumexp: each [6, 10] slab normalized
        // on its own is reference(false, true)'s slab.
        lt::Tensor<float> slab = lt::layer_norm(t.select(0, 2), lt::Axes{});
        const std::vector<double> all = reference(false, true).v;
        const std::vector<float> got = slab.to_vector();
        REQUIRE(got.size() == 60);
        for (std::size_t k = 0; k < 60; ++k) CHECK(got[k] == doctest::Approx(all[120 + k]).epsilon(1e-4));
    });
}

TEST_CASE("cross_entropy against the reference, all reductions, label errors") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({8, 5}, 40, -4, 4);
        lt::Tensor<float> logits = make_tensor<float>(x);
        const std::vector<std::int64_t> labels = {0, 4, 2, 2, 1, 3, 0, 4};
        lt::Tensor<std::int64_t> l = lt::tensor<std::int64_t>(labels, {8});
        Ref per{{8}, {}};
        double total = 0;
        for (std::int64_t r = 0; r < 8; ++r) {
            double s = 0;
            for (double v : line(x, 1, r)) s += std::exp(v);
            per.v.push_back(std::log(s) - x.at({r, labels[static_cast<std::size_t>(r)]}));
            total += per.v.back();
        }
        check_close(lt::cross_entropy(logits, l, lt::Reduction::None), per, 1e-5, 1e-5);
        CHECK(lt::cross_entropy(logits, l).item() == doctest::Approx(total / 8).epsilon(1e-5));
        CHECK(lt::cross_entropy(logits, l, lt::Reduction::Sum).item() == doctest::Approx(total).epsilon(1e-5));
        // Per row: one kernel; the mean over rows: a second.
        CHECK(lt::kernel_count(lt::schedule(lt::cross_entropy(logits, l))) <= 2);
        CHECK_THROWS_AS(lt::cross_entropy(logits, lt::tensor<std::int64_t>({0, 5, 0, 0, 0, 0, 0, 0}, {8})), lt::IndexError);
        CHECK_THROWS_AS(lt::cross_entropy(logits, lt::tensor<std::int64_t>({0, 1}, {2})), lt::ShapeError);
    });
}

TEST_CASE("argmin of distances computed by a reduction: one pass, no NaN mask of the input") {
    // Issue 54: k-means' argmin over distances (a sum over the features) had a kernel of its
    // own writing x != x, a bool[points, clusters] buffer. Now: the distances, then one kernel.
    for_each_device([](lt::Device) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        // 4 points, 3 clusters, 2 features; point 1 has a NaN feature.
        const auto points = lt::tensor<float>({0, 0,  //
                                               nan, 1,  //
                                               5, 5,  //
                                               2, 0},
                                              {4, 1, 2});
        const auto centers = lt::tensor<float>({0, 1,  //
                                                5, 4,  //
                                                2, -1},
                                               {1, 3, 2});
        const auto diff = points - centers;
        const auto distances = lt::sum(diff * diff, 2);  // [4, 3]
        // Distances by hand: {1, 41, 5}, {nan, nan, nan}, {41, 1, 45}, {5, 25, 1}.
        for (const bool is_min : {true, false}) {
            INFO((is_min ? "argmin" : "argmax"));
            const auto arg = is_min ? lt::argmin(distances, 1) : lt::argmax(distances, 1);
            const auto items = lt::schedule(arg);
            CHECK(items.size() == 2);  // the distances, then the argmin
            for (const auto& item : items) {
                INFO("item output " << item.output);
                CHECK(item.output.rfind("bool", 0) == std::string::npos);
            }
            CHECK(values(arg) == (is_min ? std::vector<std::int64_t>{0, 0, 1, 2} : std::vector<std::int64_t>{1, 0, 2, 1}));
        }
        // Ties and NaNs along the other axis and keepdim, over a reduction too: column 0 of
        // the distances is {1, nan, 41, 5}, column 1 {41, nan, 1, 25}, column 2 {5, nan, 45, 1}.
        CHECK(values(lt::argmin(distances, 0, true)) == std::vector<std::int64_t>{1, 1, 1});
        const auto finite = lt::sum(diff * diff, 2).slice(0, 2, 4);  // {41, 1, 45}, {5, 25, 1}
        CHECK(values(lt::argmin(finite, 0)) == std::vector<std::int64_t>{1, 0, 1});
        // Ties: {41, 25, 45} and {25, 25, 25} give the first extreme.
        CHECK(values(lt::argmax(lt::maximum(finite, 25.0f), 1)) == std::vector<std::int64_t>{2, 0});
        CHECK(values(lt::argmin(lt::maximum(finite, 25.0f), 1)) == std::vector<std::int64_t>{1, 0});
        // double, with -inf and +inf beside NaN: the first NaN wins, then the first extreme.
        if (lt::detail::supports_float64(lt::default_device())) {
            const double inf = std::numeric_limits<double>::infinity(), dn = std::numeric_limits<double>::quiet_NaN();
            const auto t = lt::tensor<double>({inf, 1, inf, -inf,  //
                                               -inf, dn, inf, dn,  //
                                               2, 2, -inf, -inf},
                                              {3, 4});
            CHECK(values(lt::argmax(t * 1.0, 1)) == std::vector<std::int64_t>{0, 1, 0});
            CHECK(values(lt::argmin(t * 1.0, 1)) == std::vector<std::int64_t>{3, 1, 2});
            CHECK(lt::kernel_count(lt::schedule(lt::argmax(t * 1.0, 1))) == 1);
        }
    });
}

TEST_CASE("one_hot is lazy: no read-back, a label out of range gives a row of zeros") {
    for_each_device([](lt::Device) {
        // Labels computed lazily stay lazy: one_hot reads nothing back and is one kernel with them.
        const auto raw = lt::tensor<std::int64_t>({2, -1, 4, 0, 3, 7}, {6});
        const lt::Tensor<std::int64_t> labels = raw * std::int64_t{1};
        const auto encoded = lt::one_hot(labels, 4);
        CHECK_FALSE(labels.is_realized());
        const auto items = lt::schedule(encoded);
        CHECK(items.size() == 1);
        CHECK(lt::kernel_count(items) == 1);
        CHECK(values(encoded) == std::vector<std::int64_t>{0, 0, 1, 0,  //
                                                           0, 0, 0, 0,  // -1: out of range
                                                           0, 0, 0, 0,  // 4
                                                           1, 0, 0, 0,  //
                                                           0, 0, 0, 1,  //
                                                           0, 0, 0, 0});  // 7
        // No class at all: an empty last axis. uint8 labels of 255 and more classes.
        CHECK(lt::one_hot(labels, 0).shape() == lt::Shape{6, 0});
        const auto bytes = lt::tensor<std::uint8_t>({255, 1}, {2});
        const std::vector<std::int64_t> wide = values(lt::one_hot(bytes, 256));
        CHECK(wide[255] == 1);
        CHECK(std::count(wide.begin(), wide.end(), std::int64_t{1}) == 2);
        CHECK(wide[256 + 1] == 1);
        CHECK(values(lt::one_hot(bytes, 2)) == std::vector<std::int64_t>{0, 0, 0, 1});
        // num_classes = -1 reads the largest label back (the shape needs it); negative labels
        // are rows of zeros there too.
        const auto inferred = lt::one_hot(lt::tensor<std::int32_t>({1, -2, 2}, {3}));
        CHECK(inferred.shape() == lt::Shape{3, 3});
        CHECK(values(inferred) == std::vector<std::int64_t>{0, 1, 0, 0, 0, 0, 0, 0, 1});
    });
}

TEST_CASE("one_hot and cross_entropy take labels of every integer dtype") {
    // Floating and bool labels do not compile (compile_fail_one_hot_of_float_labels,
    // compile_fail_cross_entropy_with_*_labels); uint8, int32 and int64 all work alike.
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({3, 4}, 44, -3, 3);
        const lt::Tensor<float> logits = make_tensor<float>(x);
        const std::vector<int> labels = {2, 0, 3};
        Ref per{{3}, {}};
        for (std::int64_t r = 0; r < 3; ++r) {
            double s = 0;
            for (double v : line(x, 1, r)) s += std::exp(v);
            per.v.push_back(std::log(s) - x.at({r, labels[static_cast<std::size_t>(r)]}));
        }
        auto check = [&](auto tag) {
            using T = decltype(tag);
            INFO("labels of " << lt::dtype_of<T>());
            const lt::Tensor<T> l = lt::tensor<T>({T(2), T(0), T(3)}, {3});
            CHECK(values(lt::one_hot(l, 4)) == std::vector<std::int64_t>{0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1});
            CHECK(lt::one_hot(l).shape() == lt::Shape{3, 4});
            check_close(lt::cross_entropy(logits, l, lt::Reduction::None), per, 1e-5, 1e-5);
        };
        check(std::uint8_t{});
        check(std::int32_t{});
        check(std::int64_t{});
    });
}

// ---------------------------------------------------------------------------------- indexing

TEST_CASE("gather and index_select read the named positions; out-of-range positions are errors") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({4, 6}, 41);
        lt::Tensor<float> t = make_tensor<float>(x);
        const std::vector<std::int64_t> idx = {5, 0, 0, 3, 1, 2, 2, 2, 4};
        lt::Tensor<std::int64_t> i = lt::tensor<std::int64_t>(idx, {3, 3});
        check_close(lt::gather(t, 1, i), ref_of({3, 3}, [&](const std::vector<std::int64_t>& p) {
                        return x.at({p[0], idx[static_cast<std::size_t>(p[0] * 3 + p[1])]});
                    }),
                    0, 0);
        const std::vector<std::int64_t> rows = {3, 0, 1, 3, 2, 0};
        lt::Tensor<std::int32_t> r = lt::tensor<std::int32_t>({3, 0, 1, 3, 2, 0}, {2, 3});
        check_close(lt::gather(t.transpose(0, 1), 1, r), ref_of({2, 3}, [&](const std::vector<std::int64_t>& p) {
                        return x.at({rows[static_cast<std::size_t>(p[0] * 3 + p[1])], p[0]});
                    }),
                    0, 0);
        // Gather from a computed value, with a computed index, fused with arithmetic.
        lt::Tensor<float> g = lt::gather(t * 2.0f, 0, lt::Tensor<std::int64_t>(lt::tensor<std::int64_t>({1, 2}, {1, 2}) + std::int64_t(1))) + 1.0f;
        CHECK(values(g) == std::vector<float>{static_cast<float>(2 * x.at({2, 0}) + 1), static_cast<float>(2 * x.at({3, 1}) + 1)});
        check_close(lt::index_select(t, 0, lt::tensor<std::int64_t>({3, 3, 0})), ref_of({3, 6}, [&](const std::vector<std::int64_t>& p) {
                        return x.at({p[0] < 2 ? 3 : 0, p[1]});
                    }),
                    0, 0);
        check_close(lt::index_select(t, -1, lt::tensor<std::int64_t>({5, 1})), ref_of({4, 2}, [&](const std::vector<std::int64_t>& p) {
                        return x.at({p[0], p[1] ? 1 : 5});
                    }),
                    0, 0);
        CHECK_THROWS_AS(lt::gather(t, 1, lt::tensor<std::int64_t>({6}, {1, 1})), lt::IndexError);
        CHECK_THROWS_AS(lt::gather(t, 1, lt::tensor<std::int64_t>({-1}, {1, 1})), lt::IndexError);
        CHECK_THROWS_AS(lt::gather(t, 1, lt::tensor<std::int64_t>({0, 0, 0, 0, 0}, {5, 1})), lt::ShapeError);
        CHECK_THROWS_AS(lt::gather(t, 1, lt::tensor<float>({0.0f}, {1, 1})), lt::ValueError);
        CHECK_THROWS_AS(lt::index_select(t, 0, lt::tensor<std::int64_t>({4})), lt::IndexError);
        try {
            lt::gather(t, 0, lt::tensor<std::int64_t>({7}, {1, 1}));
            FAIL("no error");
        } catch (const lt::IndexError& e) {
            CHECK(std::string(e.what()).find("index 7 is out of range for axis 0 of extent 4") != std::string::npos);
        }
    });
}

TEST_CASE("one_hot and scatter_add") {
    for_each_device([](lt::Device) {
        lt::Tensor<std::int64_t> labels = lt::tensor<std::int64_t>({2, 0, 3}, {3});
        CHECK(values(lt::one_hot(labels, 4)) == std::vector<std::int64_t>{0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 0, 1});
        CHECK(lt::one_hot(labels).shape() == lt::Shape{3, 4});
        CHECK(lt::one_hot(lt::tensor<std::int32_t>({1, 0, 1, 1}, {2, 2}), 2).shape() == lt::Shape{2, 2, 2});
        // A label out of range is a row of zeros (one_hot reads nothing back to check it).
        CHECK(values(lt::one_hot(labels, 3)) == std::vector<std::int64_t>{0, 0, 1, 1, 0, 0, 0, 0, 0});
        CHECK(lt::one_hot(labels, 0).shape() == lt::Shape{3, 0});

        Ref x = random_ref<float>({3, 5}, 42), src = random_ref<float>({4, 5}, 43);
        const std::vector<std::int64_t> idx = {0, 2, 2, 1, 0, 1, 1, 0, 2, 2, 2, 0};  // shape [3, 4]: index < src's [4, 5]
        // scatter along axis 0 with index shape [3, 4]: out[idx[i][j]][j] += src[i][j]
        Ref want = x;
        for (std::int64_t i = 0; i < 3; ++i)
            for (std::int64_t j = 0; j < 4; ++j) {
                const std::int64_t row = idx[static_cast<std::size_t>(i * 4 + j)];
                want.v[static_cast<std::size_t>(row * 5 + j)] += src.at({i, j});
            }
        lt::Tensor<float> out = lt::scatter_add(make_tensor<float>(x), 0, lt::tensor<std::int64_t>(idx, {3, 4}), make_tensor<float>(src));
        check_close(out, want, 1e-6, 1e-6);
        // Along the last axis, with integers.
        lt::Tensor<std::int32_t> counts = lt::scatter_add(lt::zeros<std::int32_t>({2, 3}), 1,
                                                           lt::tensor<std::int64_t>({0, 2, 2, 1, 1, 1}, {2, 3}),
                                                           lt::ones<std::int32_t>({2, 3}));
        CHECK(values(counts) == std::vector<std::int32_t>{1, 0, 2, 0, 3, 0});
        CHECK_THROWS_AS(lt::scatter_add(make_tensor<float>(x), 0, lt::tensor<std::int64_t>({3}, {1, 1}), make_tensor<float>(src)),
                        lt::IndexError);
    });
}

// ------------------------------------------------------------------------------------ random

TEST_CASE("Philox 4x32-10 matches the published known-answer vectors") {
    struct Case {
        std::uint32_t ctr[4], key[2], out[4];
    };
    const Case cases[] = {
        {{0, 0, 0, 0}, {0, 0}, {0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8}},
        {{0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}, {0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd}},
        {{0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}, {0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1}},
    };
    for (const Case& c : cases) {
        std::uint32_t block[4] = {c.ctr[0], c.ctr[1], c.ctr[2], c.ctr[3]};
        lt::detail::philox4x32_10(block, c.key[0], c.key[1]);
        for (int i = 0; i < 4; ++i) CHECK(block[i] == c.out[i]);
    }
}

TEST_CASE("rand, randn and randint: the same numbers on every device, the right distribution") {
    for_each_device([](lt::Device) {
        const std::uint64_t seed = 0x5eed1234abcdULL;
        const lt::Shape shape{3, 1000};
        // The exact values, from the generator's definition: element i uses philox(i, seed).
        const auto u = values(lt::rand<float>(shape, seed));
        const auto d = values(lt::rand<double>(shape, seed));
        const auto k = values(lt::randint<std::int32_t>(-5, 7, shape, seed));
        const auto n = values(lt::randn<float>(shape, seed));
        for (std::size_t i = 0; i < u.size(); ++i) {
            const std::uint64_t bits = lt::detail::philox_bits(i, seed);
            REQUIRE(u[i] == static_cast<float>(std::ldexp(static_cast<double>(bits >> 40), -24)));
            REQUIRE(d[i] == std::ldexp(static_cast<double>(bits >> 11), -53));
            REQUIRE(k[i] == static_cast<std::int32_t>(-5 + static_cast<std::int64_t>((bits >> 1) % 12)));
            const double u1 = std::ldexp(static_cast<double>(((bits >> 32) & 0xFFFFFF) + 1), -24);
            const double u2 = std::ldexp(static_cast<double>(bits & 0xFFFFFF), -24);
            REQUIRE(n[i] == doctest::Approx(std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2)).epsilon(1e-5).scale(1));
        }
        // Statistics over a million values: mean, variance, range.
        lt::Tensor<float> big = lt::rand<float>({1 << 20}, 7);
        CHECK(big.mean().item() == doctest::Approx(0.5).epsilon(0.005));
        CHECK(big.var().item() == doctest::Approx(1.0 / 12).epsilon(0.01));
        CHECK(big.min().item() >= 0.0f);
        CHECK(big.max().item() < 1.0f);
        lt::Tensor<float> normal = lt::randn<float>({1 << 20}, 8);
        CHECK(std::fabs(normal.mean().item()) < 0.005);
        CHECK(normal.std().item() == doctest::Approx(1.0).epsilon(0.005));
        lt::Tensor<std::int64_t> ints = lt::randint<std::int64_t>(0, 10, {1 << 16}, 9);
        CHECK(ints.min().item() == 0);
        CHECK(ints.max().item() == 9);
        // Different seeds differ; the same seed repeats.
        CHECK(values(lt::rand<float>({16}, 1)) != values(lt::rand<float>({16}, 2)));
        CHECK(values(lt::rand<float>({16}, 1)) == values(lt::rand<float>({16}, 1)));
        CHECK_THROWS_AS(lt::randint<std::int32_t>(3, 3, {2}, 1), lt::ValueError);
        CHECK_THROWS_AS(lt::randint<std::uint8_t>(0, 300, {2}, 1), lt::ValueError);
        // The widest range that works is 2^63 - 1 values; one more is an error, not an overflow.
        const std::int64_t lo = std::numeric_limits<std::int64_t>::min();
        CHECK_THROWS_AS(lt::randint<std::int64_t>(lo, std::numeric_limits<std::int64_t>::max(), {2}, 1), lt::ValueError);
        CHECK_THROWS_AS(lt::randint<std::int64_t>(lo, 0, {2}, 1), lt::ValueError);
        CHECK(lt::randint<std::int64_t>(lo, -1, {64}, 1).max().item() < -1);
    });
}

// ------------------------------------------------------------------------------------ assign

TEST_CASE("assign writes in place; slices write into their tensor; earlier lazy reads keep old values") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> x = lt::tensor<float>({0, 1, 2, 3, 4, 5}, {2, 3});
        x.realize();
        const auto memory = x.node_ptr()->buffer;
        lt::Tensor<float> before = x * 10.0f;  // lazy, built before the writes
        lt::Tensor<float> row = x.select(0, 1);
        x.assign(x + 1.0f);
        CHECK(x.node_ptr()->buffer == memory);  // in place
        CHECK(values(x) == std::vector<float>{1, 2, 3, 4, 5, 6});
        x.slice(1, 0, 3, 2).assign(lt::full<float>({2, 1}, -1.0f));  // broadcast into a strided slice
        CHECK(values(x) == std::vector<float>{-1, 2, -1, -1, 5, -1});
        x.select(1, 1).assign(7);  // a scalar, converted
        CHECK(values(x) == std::vector<float>{-1, 7, -1, -1, 7, -1});
        CHECK(values(before) == std::vector<float>{0, 10, 20, 30, 40, 50});
        CHECK(values(row) == std::vector<float>{-1, 7, -1});  // a view sees the memory
        CHECK(x.node_ptr()->buffer == memory);
        // A value that reads the memory it overwrites elsewhere is computed into a copy first.
        lt::Tensor<float> v = lt::tensor<float>({1, 2, 3, 4, 5}, {5});
        v.assign(v.flip(0));
        CHECK(values(v) == std::vector<float>{5, 4, 3, 2, 1});
        v.slice(0, 1, 5).assign(v.slice(0, 0, 4) * 10.0f);  // overlapping shift
        CHECK(values(v) == std::vector<float>{5, 50, 40, 30, 20});
        lt::Tensor<float> flipped = v.flip(0);
        flipped.realize();  // a realized view of v's memory
        v.assign(flipped);
        CHECK(values(v) == std::vector<float>{20, 30, 40, 50, 5});
        // The same graph shape with and without aliasing: the plan of one must not serve the other.
        lt::Tensor<float> p = lt::tensor<float>({1, 2, 3}, {3}), q = lt::tensor<float>({7, 8, 9}, {3});
        lt::Tensor<float> q_row = q.unsqueeze(0), p_row = p.unsqueeze(0);
        lt::realize({q_row, p_row});  // zero-copy: p_row is a second node on p's memory
        REQUIRE(p_row.node_ptr()->buffer == p.node_ptr()->buffer);
        p.assign(q_row.reshape({3}).flip(0));
        CHECK(values(p) == std::vector<float>{9, 8, 7});
        p.assign(p_row.reshape({3}).flip(0));
        CHECK(values(p) == std::vector<float>{7, 8, 9});
        // Assigning a whole lazy tensor and integer targets.
        lt::Tensor<std::int32_t> c = lt::zeros<std::int32_t>({4});
        c.assign(lt::arange<std::int32_t>(4) * 3);
        c.slice(0, 1, 3).assign(c.slice(0, 2, 4));
        CHECK(values(c) == std::vector<std::int32_t>{0, 6, 9, 9});
        // A slice of a lazy value: the value gets memory first, and the write reaches it.
        lt::Tensor<float> lazy = lt::arange<float>(4) * 2.0f;
        lazy.slice(0, 1, 3).assign(-1.0f);
        CHECK(values(lazy) == std::vector<float>{0, -1, -1, 6});
        // A reshape that needs a copy cannot be written through.
        lt::Tensor<float> m = lt::tensor<float>({0, 1, 2, 3, 4, 5}, {2, 3});
        CHECK_THROWS_AS(m.transpose(0, 1).reshape({6}).assign(0.0f), lt::ValueError);
        CHECK(values(m) == std::vector<float>{0, 1, 2, 3, 4, 5});
        // Errors: shapes and broadcast targets.
        CHECK_THROWS_AS(x.assign(lt::zeros<float>({3, 2})), lt::ShapeError);
        CHECK_THROWS_AS(x.slice(0, 0, 1).expand({4, 3}).assign(0.0f), lt::ValueError);
        CHECK(values(x) == std::vector<float>{-1, 7, -1, -1, 7, -1});  // a failed assign changes nothing
    });
}

TEST_CASE("a write through a view of a tensor that was never realized reaches the tensor") {
    for_each_device([](lt::Device d) {
        // A constant base (lt::zeros, lt::full): its views are views, not constants of their own.
        lt::Tensor<float> t = lt::zeros<float>({3, 4});
        t.slice(1, 1, 3, 1).assign(lt::ones<float>({3, 2}) * 5.0f);
        CHECK(values(t) == std::vector<float>{0, 5, 5, 0, 0, 5, 5, 0, 0, 5, 5, 0});
        lt::Tensor<float> f = lt::full<float>({2, 3}, 1.0f);
        f.transpose(0, 1).select(0, 2).assign(lt::tensor<float>({8, 9}, {2}));
        CHECK(values(f) == std::vector<float>{1, 1, 8, 1, 1, 9});
        lt::Tensor<std::int32_t> g = lt::zeros<std::int32_t>({6});
        g.reshape({2, 3}).slice(1, 0, 1).assign(4);  // a view of a view
        CHECK(values(g) == std::vector<std::int32_t>{4, 0, 0, 4, 0, 0});
        // A lazy expression base, through a view of a view.
        lt::Tensor<float> e = lt::arange<float>(6) + 1.0f;
        e.reshape({2, 3}).flip(1).slice(0, 1, 2).assign(0.0f);
        CHECK(values(e) == std::vector<float>{1, 2, 3, 0, 0, 0});
        // The user holds only the view: its base must stay alive through the assign (ASan).
        lt::Tensor<float> a = lt::tensor<float>({0, 1, 2}, {3});
        lt::Tensor<float> only_view = lt::Tensor<float>(lt::exp(a)).slice(0, 0, 2);
        only_view.assign(-2.0f);
        CHECK(values(only_view) == std::vector<float>{-2, -2});
        (void)d;
    });
}

TEST_CASE("assign into an empty slice writes nothing (it is no broadcast view)") {
    // Found by the fuzzer (seed 33 of the typed-path version): slice(1, 3, -2, -2) of [9, 7, 5] is
    // empty, and its strides are 0; assign called it a broadcast view and threw ValueError.
    for_each_device([](lt::Device d) {
        lt::Tensor<float> x = lt::tensor<float>({0, 1, 2, 3, 4, 5}, {2, 3}, d);
        x.realize();
        x.slice(1, 2, 1).assign(lt::full<float>({1}, 9.0f, d));
        x.slice(0, 1, 1).assign(7.0f);
        CHECK(values(x) == std::vector<float>{0, 1, 2, 3, 4, 5});
        lt::Tensor<float> y = lt::tensor<float>(std::vector<float>(315, 1.0f), {9, 7, 5}, d);
        y.realize();
        y.slice(1, 3, -2, -2).assign(lt::full<float>({5}, 2.0f, d));
        CHECK(values(y) == std::vector<float>(315, 1.0f));
        // Fuzz seed 42050092 (version 4): the value a sum over an empty axis, whose kernel reduces
        // over the empty target's only axis; the host stored its 0 once, at the buffer's start.
        lt::Tensor<float> z = lt::tensor<float>({1, 2}, {2}, d);
        z.realize();
        z.slice(0, 1, 1).assign(lt::zeros<float>({0}, d).sum());
        z.slice(0, -2, 1, -2).assign(lt::ones<float>({0}, d).sum() + 3.0f);
        CHECK(values(z) == std::vector<float>{1, 2});
    });
}

TEST_CASE("an assign that fails still computes the earlier lazy readers first next time") {
    for_each_device([](lt::Device d) {
        lt::Tensor<float> x = lt::tensor<float>(std::vector<float>(1000, 1.0f), {1000}, d);
        x.realize();
        lt::Tensor<float> reader = x * 2.0f;  // lazy: must see x as it is now
        {
            MemoryLimit none_left(d, lt::memory_stats(d).live_bytes);  // computing the reader fails
            CHECK_THROWS_AS(x.assign(5.0f), lt::OutOfMemoryError);
        }
        CHECK(values(x) == std::vector<float>(1000, 1.0f));
        x.assign(5.0f);
        CHECK(values(x) == std::vector<float>(1000, 5.0f));
        CHECK(values(reader) == std::vector<float>(1000, 2.0f));
    });
}

TEST_CASE("assign in a loop updates an accumulator without new memory") {
    for_each_device([](lt::Device) {
        lt::Tensor<double> acc = lt::zeros<double>({8});
        acc.realize();
        const auto memory = acc.node_ptr()->buffer;
        for (int i = 1; i <= 10; ++i) acc.slice(0, i % 8, i % 8 + 1).assign(acc.slice(0, i % 8, i % 8 + 1) + double(i));
        CHECK(acc.node_ptr()->buffer == memory);
        CHECK(values(acc) == std::vector<double>{8, 1 + 9, 2 + 10, 3, 4, 5, 6, 7});
    });
}
