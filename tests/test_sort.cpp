// SPDX-License-Identifier: MIT
// sort, argsort and topk: against std::stable_sort of the values (NaN last; descending: the
// reverse order of values, ties still by position) on every device, every dtype, along every
// axis, rows shorter and longer than the OpenCL sort's local blocks, many ties.
#include <algorithm>
#include <limits>
#include <numeric>

#include "common.hpp"

namespace {

/// The positions that sort `row` stably (NaN after every number; descending reverses the order
/// of values only).
std::vector<std::int64_t> sorted_positions(const std::vector<double>& row, bool descending) {
    std::vector<std::int64_t> p(row.size());
    std::iota(p.begin(), p.end(), 0);
    auto rank = [](double v) { return std::isnan(v) ? std::numeric_limits<double>::infinity() : v; };
    std::stable_sort(p.begin(), p.end(), [&](std::int64_t a, std::int64_t b) {
        const double x = row[static_cast<std::size_t>(a)], y = row[static_cast<std::size_t>(b)];
        const bool xn = std::isnan(x), yn = std::isnan(y);
        if (xn || yn) return descending ? xn && !yn : !xn && yn;
        return descending ? rank(x) > rank(y) : rank(x) < rank(y);
    });
    return p;
}

/// Checks sort, argsort and topk of `x` (reference `r`) along `axis`.
template <class T>
void check_sorts(const lt::Tensor<T>& x, const Ref& r, int axis) {
    const int a = axis < 0 ? axis + static_cast<int>(r.shape.size()) : axis;
    const std::int64_t n = r.shape[static_cast<std::size_t>(a)];
    for (bool descending : {false, true}) {
        INFO("axis " << axis << (descending ? ", descending" : ", ascending"));
        auto [values, indices] = lt::sort(x, axis, descending);
        const lt::Tensor<std::int64_t> order = lt::argsort(x, axis, descending);
        const std::int64_t k = std::min<std::int64_t>(n, 5);
        auto [top, top_at] = lt::topk(x, k, axis, descending);
        REQUIRE(values.shape() == r.shape);
        REQUIRE(order.shape() == r.shape);
        const std::vector<T> v = values.to_vector(), tv = top.to_vector();
        const std::vector<std::int64_t> i = indices.to_vector(), o = order.to_vector(), ti = top_at.to_vector();
        // Row by row along the axis: outer index, position along the axis, inner index.
        std::int64_t inner = 1, outer = 1;
        for (std::size_t d = 0; d < r.shape.size(); ++d) {
            if (static_cast<int>(d) < a) outer *= r.shape[d];
            if (static_cast<int>(d) > a) inner *= r.shape[d];
        }
        int failures = 0;
        for (std::int64_t p = 0; p < outer && failures < 5; ++p)
            for (std::int64_t q = 0; q < inner && failures < 5; ++q) {
                std::vector<double> row(static_cast<std::size_t>(n));
                for (std::int64_t j = 0; j < n; ++j) row[static_cast<std::size_t>(j)] = r.v[static_cast<std::size_t>((p * n + j) * inner + q)];
                const std::vector<std::int64_t> want = sorted_positions(row, descending);
                for (std::int64_t j = 0; j < n; ++j) {
                    const std::size_t at = static_cast<std::size_t>((p * n + j) * inner + q);
                    const double want_v = row[static_cast<std::size_t>(want[static_cast<std::size_t>(j)])];
                    const bool ok = i[at] == want[static_cast<std::size_t>(j)] && o[at] == want[static_cast<std::size_t>(j)] &&
                                    (std::isnan(want_v) ? std::isnan(double(v[at])) : double(v[at]) == want_v);
                    if (!ok && ++failures <= 5)
                        FAIL_CHECK("row (" << p << ", " << q << ") position " << j << ": got value " << double(v[at]) << " from "
                                           << i[at] << " (argsort " << o[at] << "), want " << want_v << " from " << want[static_cast<std::size_t>(j)]);
                    if (j < k) {
                        const std::size_t kt = static_cast<std::size_t>((p * k + j) * inner + q);
                        if (ti[kt] != want[static_cast<std::size_t>(j)] && ++failures <= 5)
                            FAIL_CHECK("topk row (" << p << ", " << q << ") position " << j << ": got " << ti[kt] << ", want "
                                                    << want[static_cast<std::size_t>(j)]);
                        CHECK((std::isnan(want_v) ? std::isnan(double(tv[kt])) : double(tv[kt]) == want_v));
                    }
                }
            }
    }
}

/// Random values in T with many ties (integers in [-20, 20], halves for floating types) and,
/// for floating types, some NaN, infinities and signed zeros.
template <class T>
Ref sort_data(const lt::Shape& shape, unsigned seed) {
    Ref r = random_ref<std::int32_t>(shape, seed, -20, 20);
    if constexpr (std::is_same_v<T, bool>) {
        for (double& v : r.v) v = v > 0;
    } else if constexpr (std::is_same_v<T, std::uint8_t>) {
        for (double& v : r.v) v += 20;
    } else if constexpr (lt::detail::is_floating_v<T>) {
        std::mt19937 gen(seed);
        const double specials[] = {std::nan(""), INFINITY, -INFINITY, -0.0, 0.0};
        for (double& v : r.v) {
            v /= 2;
            if (gen() % 16 == 0) v = specials[gen() % 5];
        }
    }
    return r;
}

}  // namespace

TEST_CASE_TEMPLATE("sort, argsort and topk: stable, NaN last, every axis", T, bool, std::uint8_t, std::int32_t, std::int64_t, lt::half,
                   float, double) {
    for_each_device([](lt::Device) {
        for (const lt::Shape& shape : std::vector<lt::Shape>{{1}, {7}, {3, 5}, {4, 3, 6}, {2, 1000}, {3000, 2}}) {
            INFO("shape " << shape);
            const Ref r = sort_data<T>(shape, 900 + static_cast<unsigned>(shape.size() * 7 + shape.back()));
            const lt::Tensor<T> x = make_tensor<T>(r);
            for (int axis = 0; axis < static_cast<int>(shape.size()); ++axis) check_sorts(x, r, axis);
            check_sorts(x, r, -1);
        }
    });
}

TEST_CASE("sort of rows longer than the local blocks, of lazy views and of slices") {
    for_each_device([](lt::Device) {
        // 5000 and 70000 elements: the OpenCL sort's global stages (blocks of at most 512).
        for (std::int64_t n : {5000, 70000}) {
            const Ref r = sort_data<float>({2, n}, 77);
            check_sorts(make_tensor<float>(r), r, 1);
        }
        // A lazy expression read through a transpose.
        const Ref a = sort_data<float>({6, 9}, 78);
        const Ref at = map(permute(a, {1, 0}), [](double v) { return v * 2 + 1; });
        check_sorts(lt::Tensor<float>(make_tensor<float>(a).t() * 2.0f + 1.0f), at, 0);
        check_sorts(lt::Tensor<float>(make_tensor<float>(a).t() * 2.0f + 1.0f), at, 1);
        // A realized slice that does not start at its buffer's start.
        lt::Tensor<float> whole = make_tensor<float>(a);
        lt::Tensor<float> rows = whole.slice(0, 2, 5);
        Ref ra{{3, 9}, std::vector<double>(a.v.begin() + 18, a.v.begin() + 45)};
        check_sorts(rows, ra, 1);
    });
}

TEST_CASE_TEMPLATE("one long row sorts onesweep where look-backs are asked for (OpenCL: LAZYTENSOR_OPENCL_LOOKBACK=on, as here)", T, std::int64_t,
                   float, double) {
    ScopedEnvVar look_back("LAZYTENSOR_OPENCL_LOOKBACK", "on");
    for_each_device([](lt::Device) {
        const Ref r = sort_data<T>({70001}, 4244);  // 35 tiles of 2048 keys, the last partial
        check_sorts(make_tensor<T>(r), r, 0);
    });
}

TEST_CASE_TEMPLATE("rows of 4096 and more sort each on its own (OpenCL: the segmented radix sort), ties by position",
                   T, std::int32_t, float, double) {
    for_each_device([](lt::Device) {
        // Rows of one tile (2048 keys where the device allows), of several, and a partial last tile;
        // many ties, NaN and -0 (sort_data).
        for (const lt::Shape& shape : std::vector<lt::Shape>{{5, 4099}, {3, 6144}, {7, 4096}}) {
            INFO("shape " << shape);
            const Ref r = sort_data<T>(shape, 1300 + static_cast<unsigned>(shape[1]));
            check_sorts(make_tensor<T>(r), r, 1);
        }
        // topk past the register path: the last pass keeps each row's first k.
        const Ref r = sort_data<T>({3, 5000}, 1301);
        for (bool descending : {false, true}) {
            INFO((descending ? "descending" : "ascending"));
            auto [top, top_at] = lt::topk(make_tensor<T>(r), 40, 1, descending);
            const std::vector<T> tv = top.to_vector();
            const std::vector<std::int64_t> ti = top_at.to_vector();
            REQUIRE(ti.size() == 3 * 40);
            for (std::size_t row = 0; row < 3; ++row) {
                const std::vector<double> values(r.v.begin() + static_cast<std::ptrdiff_t>(row * 5000),
                                                 r.v.begin() + static_cast<std::ptrdiff_t>((row + 1) * 5000));
                const std::vector<std::int64_t> want = sorted_positions(values, descending);
                for (std::size_t j = 0; j < 40; ++j) {
                    const double want_v = values[static_cast<std::size_t>(want[j])];
                    REQUIRE(ti[row * 40 + j] == want[j]);
                    REQUIRE((std::isnan(want_v) ? std::isnan(double(tv[row * 40 + j])) : double(tv[row * 40 + j]) == want_v));
                }
            }
        }
    });
}

TEST_CASE("sort, argsort and topk: 0-d, empty axes, k at its ends, errors") {
    for_each_device([](lt::Device) {
        const lt::Tensor<float> s = lt::full<float>({}, 2.5f);
        auto [v, i] = lt::sort(s);
        CHECK(v.shape() == lt::Shape{});
        CHECK(v.item() == 2.5f);
        CHECK(i.item() == 0);
        auto [ev, ei] = lt::sort(lt::zeros<float>({3, 0}), 1);
        CHECK(ev.shape() == lt::Shape{3, 0});
        CHECK(ei.shape() == lt::Shape{3, 0});
        auto [zv, zi] = lt::sort(lt::zeros<float>({0, 4}), 1);
        CHECK(zv.shape() == lt::Shape{0, 4});
        const lt::Tensor<std::int32_t> x = lt::tensor<std::int32_t>({4, 1, 3, 1, 5}, {5});
        auto [t0, t0i] = lt::topk(x, 0);
        CHECK(t0.shape() == lt::Shape{0});
        auto [t5, t5i] = lt::topk(x, 5, 0, false);
        CHECK(t5.to_vector() == std::vector<std::int32_t>{1, 1, 3, 4, 5});
        CHECK(t5i.to_vector() == std::vector<std::int64_t>{1, 3, 2, 0, 4});
        auto [t2, t2i] = lt::topk(x, 2);
        CHECK(t2.to_vector() == std::vector<std::int32_t>{5, 4});
        CHECK(t2i.to_vector() == std::vector<std::int64_t>{4, 0});
        CHECK_THROWS_AS(lt::topk(x, 6), lt::ValueError);
        CHECK_THROWS_AS(lt::topk(x, -1), lt::ValueError);
        CHECK_THROWS_AS(lt::sort(x, 1), lt::AxisError);
        // A 0-d tensor takes axis 0 or -1 (its one element, as PyTorch); another axis names the 0-d
        // tensor, not the [1] it is sorted as.
        CHECK(lt::sort(s, 0).values.item() == 2.5f);
        CHECK_THROWS_WITH_AS(lt::sort(s, 1),
                             "lt::sort: axis 1 is out of range: the tensor is 0-d (shape []) and has no axes; as in "
                             "PyTorch, axis 0 or -1 takes its one element",
                             lt::AxisError);
        CHECK_THROWS_AS(lt::argsort(x, -2), lt::AxisError);
        try {
            (void)lt::topk(x.reshape({1, 5}), 7, 1);
            FAIL("topk with k past the extent must throw");
        } catch (const lt::ValueError& e) {
            CHECK(std::string(e.what()).find("k = 7 is outside [0, 5], the extent of axis 1 of shape [1, 5]") != std::string::npos);
        }
    });
}

TEST_CASE_TEMPLATE("sort of one long row (OpenCL: the radix sort), every dtype", T, bool, std::uint8_t, std::int32_t, std::int64_t,
                   lt::half, float, double) {
    for_each_device([](lt::Device) {
        const Ref r = sort_data<T>({70001}, 4242);
        check_sorts(make_tensor<T>(r), r, 0);
        // Two rows along axis 0 of a transposed view: one long row each after the move.
        const Ref two = sort_data<T>({2, 65537}, 4243);
        check_sorts(make_tensor<T>(two), two, 1);
    });
}

TEST_CASE_TEMPLATE("a long row's sorted values are its elements bit for bit (-0, NaN signs and payloads), and topk of a long row",
                   T, lt::half, float, double) {
    // The OpenCL radix sort writes values from their keys, which do not tell -0 from +0 or one
    // NaN from another: those must still come from the input.
    using Bits = std::conditional_t<sizeof(T) == 2, std::uint16_t, std::conditional_t<sizeof(T) == 4, std::uint32_t, std::uint64_t>>;
    const int top_bit = 8 * sizeof(T) - 1;
    const Bits sign = Bits(Bits(1) << top_bit);
    const Bits quiet_nan = sizeof(T) == 2 ? Bits(0x7e00) : sizeof(T) == 4 ? Bits(0x7fc00000u) : Bits(0x7ff8000000000000ull);
    const Bits specials[] = {Bits(0), sign, quiet_nan, Bits(quiet_nan | sign), Bits(quiet_nan | 5), Bits(quiet_nan | sign | 3)};
    const std::int64_t n = 70001;
    std::vector<T> x(static_cast<std::size_t>(n));
    std::vector<double> as_double(x.size());
    std::uint64_t state = 99;
    for (std::size_t i = 0; i < x.size(); ++i) {
        state = state * 6364136223846793005ull + 1442695040888963407ull;
        const unsigned pick = static_cast<unsigned>(state >> 33) % 16;
        if (pick < 6) {
            std::memcpy(&x[i], &specials[pick], sizeof(T));
        } else {
            x[i] = static_cast<T>(static_cast<float>(static_cast<int>(state >> 40) % 64 - 32) * 0.5f);
        }
        as_double[i] = static_cast<double>(static_cast<float>(x[i]));
    }
    for_each_device([&](lt::Device) {
        const lt::Tensor<T> t = lt::tensor(x, {n});
        for (bool descending : {false, true}) {
            INFO((descending ? "descending" : "ascending"));
            const std::vector<std::int64_t> want = sorted_positions(as_double, descending);
            auto [values, indices] = lt::sort(t, 0, descending);
            const std::vector<T> v = values.to_vector();
            const std::vector<std::int64_t> at = indices.to_vector();
            int failures = 0;
            for (std::size_t j = 0; j < x.size() && failures < 5; ++j) {
                Bits got = 0, expected = 0;
                std::memcpy(&got, &v[j], sizeof(T));
                std::memcpy(&expected, &x[static_cast<std::size_t>(want[j])], sizeof(T));
                if (at[j] != want[j] || got != expected) {
                    ++failures;
                    FAIL_CHECK("position " << j << ": got element " << at[j] << " (bits " << std::uint64_t(got)
                                           << "), expected element " << want[j] << " (bits " << std::uint64_t(expected) << ")");
                }
            }
            // k above topk's register path: the radix sort's last pass keeps the first k.
            auto [top, top_at] = lt::topk(t, 40, 0, descending);
            const std::vector<T> tv = top.to_vector();
            const std::vector<std::int64_t> ti = top_at.to_vector();
            REQUIRE(ti.size() == 40);
            for (std::size_t j = 0; j < 40; ++j) {
                Bits got = 0, expected = 0;
                std::memcpy(&got, &tv[j], sizeof(T));
                std::memcpy(&expected, &x[static_cast<std::size_t>(want[j])], sizeof(T));
                CHECK(ti[j] == want[j]);
                CHECK(got == expected);
            }
        }
    });
}

namespace {

int count_items(const std::vector<lt::ScheduleItem>& items, lt::ScheduleItem::Kind kind) {
    int n = 0;
    for (const lt::ScheduleItem& item : items) n += item.kind == kind;
    return n;
}

bool has_op(const lt::ScheduleItem& item, const std::string& op) {
    return std::find(item.ops.begin(), item.ops.end(), op) != item.ops.end();
}

}  // namespace

TEST_CASE("sort is lazy: one sort item, the element-wise work producing its input computed in it") {
    for_each_device([](lt::Device) {
        const Ref ra = random_ref<float>({5, 40}, 31, -2, 2), rb = random_ref<float>({5, 40}, 32, 0.5, 2);
        const lt::Tensor<float> a = make_tensor<float>(ra), b = make_tensor<float>(rb);
        const lt::Tensor<std::int64_t> order = lt::argsort(lt::exp(a) * b, 1, true);
        CHECK_FALSE(order.is_realized());
        const std::vector<lt::ScheduleItem> items = lt::schedule(order);
        REQUIRE(items.size() == 1);
        CHECK(items[0].kind == lt::ScheduleItem::Kind::Sort);
        CHECK(has_op(items[0], "exp"));
        CHECK(has_op(items[0], "sort"));
        CHECK(lt::to_string(items[0].kind) == std::string("sort"));
        // Against the order of the reference values, row by row.
        const std::vector<std::int64_t> got = order.to_vector();
        for (std::size_t row = 0; row < 5; ++row) {
            std::vector<double> values(40);
            for (std::size_t j = 0; j < 40; ++j) values[j] = std::exp(ra.v[row * 40 + j]) * rb.v[row * 40 + j];
            const std::vector<std::int64_t> want = sorted_positions(values, true);
            CHECK(std::vector<std::int64_t>(got.begin() + static_cast<std::ptrdiff_t>(row * 40),
                                            got.begin() + static_cast<std::ptrdiff_t>(row * 40 + 40)) == want);
        }
        // Values and positions both stored: the sort stores the values as it sorts (one item).
        auto [sorted, sorted_at] = lt::sort(a, 1);
        const std::vector<lt::ScheduleItem> both = lt::schedule({sorted, sorted_at});
        REQUIRE(both.size() == 1);
        CHECK(both[0].kind == lt::ScheduleItem::Kind::Sort);
        lt::realize({sorted, sorted_at});
        const std::vector<float> sv = sorted.to_vector();
        const std::vector<std::int64_t> si = sorted_at.to_vector();
        for (std::size_t j = 0; j < 200; ++j)
            CHECK(sv[j] == static_cast<float>(ra.v[(j / 40) * 40 + static_cast<std::size_t>(si[j])]));
        // The values are gathered where they are read: topk's values times 2 is one kernel after the sort.
        auto [top, top_at] = lt::topk(a, 3, 1);
        const lt::Tensor<float> scaled = top * 2.0f;
        const std::vector<lt::ScheduleItem> two = lt::schedule(scaled);
        CHECK(count_items(two, lt::ScheduleItem::Kind::Sort) == 1);
        CHECK(count_items(two, lt::ScheduleItem::Kind::Kernel) == 1);
        const std::vector<float> v = scaled.to_vector();
        const std::vector<std::int64_t> at = top_at.to_vector();
        for (std::size_t row = 0; row < 5; ++row)
            for (std::size_t j = 0; j < 3; ++j)
                CHECK(v[row * 3 + j] == static_cast<float>(2 * ra.v[row * 40 + static_cast<std::size_t>(at[row * 3 + j])]));
        // A sort along a reduction's result: the reduction is a kernel of its own, then the sort.
        const lt::Tensor<std::int64_t> by_mean = lt::argsort(a - lt::mean(a, 1, true), 1);
        CHECK(count_items(lt::schedule(by_mean), lt::ScheduleItem::Kind::Sort) == 1);
        CHECK(by_mean.to_vector() == lt::argsort(a, 1).to_vector());  // (a shift keeps the order)
    });
}

TEST_CASE("the gradient of sorted values flows back through their positions") {
    for_each_device([](lt::Device) {
        const Ref rx = random_ref<float>({4, 9}, 41, -3, 3), rw = random_ref<float>({4, 3}, 42, -1, 1);
        const lt::Tensor<float> x = make_tensor<float>(rx), w = make_tensor<float>(rw);
        auto [top, positions] = lt::topk(x * 1.5f, 3, 1);
        const lt::Tensor<float> g = lt::grad(lt::sum(top * w), x);
        // d/dx[r, p] = 1.5 * w[r, j] where p is the j-th largest of row r, else 0.
        std::vector<double> want(36, 0.0);
        for (std::size_t row = 0; row < 4; ++row) {
            const std::vector<double> values(rx.v.begin() + static_cast<std::ptrdiff_t>(row * 9),
                                             rx.v.begin() + static_cast<std::ptrdiff_t>(row * 9 + 9));
            const std::vector<std::int64_t> order = sorted_positions(values, true);
            for (std::size_t j = 0; j < 3; ++j) want[row * 9 + static_cast<std::size_t>(order[j])] += 1.5 * rw.v[row * 3 + j];
        }
        const std::vector<float> got = g.to_vector();
        for (std::size_t i = 0; i < 36; ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
        // Positions have no gradient: sorting a descending copy gives the same gradient of the values.
        const lt::Tensor<float> gs = lt::grad(lt::sum(lt::sort(x, 1, true).values * lt::arange<float>(9)), x);
        std::vector<double> want_all(36, 0.0);
        for (std::size_t row = 0; row < 4; ++row) {
            const std::vector<double> values(rx.v.begin() + static_cast<std::ptrdiff_t>(row * 9),
                                             rx.v.begin() + static_cast<std::ptrdiff_t>(row * 9 + 9));
            const std::vector<std::int64_t> order = sorted_positions(values, true);
            for (std::size_t j = 0; j < 9; ++j) want_all[row * 9 + static_cast<std::size_t>(order[j])] = static_cast<double>(j);
        }
        const std::vector<float> all = gs.to_vector();
        for (std::size_t i = 0; i < 36; ++i) CHECK(all[i] == static_cast<float>(want_all[i]));
    });
}

TEST_CASE("check mode compares a sort item with the host's sort, and a wrong position fails the realize") {
    const bool was = lt::check_enabled();
    lt::set_check_enabled(true);
    for_each_device([](lt::Device d) {
        const Ref r = sort_data<float>({6, 50}, 51);
        const lt::Tensor<float> x = make_tensor<float>(r);
        check_sorts(lt::Tensor<float>(x * 1.0f), r, 1);  // a fused operand, checked
        if (d.kind == lt::Device::Kind::Host) return;     // (the host's sort is the reference itself)
        lt::detail::after_launch_hook() = [](lt::Buffer& out) {
            if (out.dtype() != lt::DType::Int64 || out.numel() != 6 * 50) return;
            const std::int64_t wrong = 49;
            lt::detail::backend_for(out.device()).write(out, 0, &wrong, sizeof wrong);
        };
        const lt::Tensor<std::int64_t> order = lt::argsort(lt::exp(x), 1);
        try {
            order.realize();
            FAIL_CHECK("a wrong position passed check mode");
        } catch (const lt::BackendError& e) {
            const std::string what = e.what();
            CHECK(what.find("LAZYTENSOR_CHECK: sort 0 of 1") != std::string::npos);
            CHECK(what.find("--- sort ---") != std::string::npos);
        }
        lt::detail::after_launch_hook() = nullptr;
        CHECK_FALSE(order.is_realized());  // nothing committed; it realizes again
        CHECK(order.to_vector() == lt::argsort(x, 1).to_vector());
    });
    lt::set_check_enabled(was);
}
