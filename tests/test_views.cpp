// SPDX-License-Identifier: MIT
// Views: reshape, permute, transpose, expand; zero-copy where the layout allows, a copy (or a
// fused read) where it does not; views of lazy values and of other views.
#include "common.hpp"

namespace {

bool shares_buffer(const lt::Tensor<float>& a, const lt::Tensor<float>& b) {
    return a.is_realized() && b.is_realized() && a.node_ptr()->buffer == b.node_ptr()->buffer;
}

Ref reshape_ref(Ref r, const lt::Shape& shape) {
    r.shape = shape;
    return r;
}

}  // namespace

TEST_CASE("reshape, permute, transpose and expand give the reference values") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({2, 3, 4}, 1);
        lt::Tensor<float> t = make_tensor<float>(x);
        check_close(t.reshape({6, 4}), reshape_ref(x, {6, 4}), 0, 0);
        check_close(t.reshape({4, -1}), reshape_ref(x, {4, 6}), 0, 0);
        check_close(lt::reshape(t, {24}), reshape_ref(x, {24}), 0, 0);
        check_close(t.reshape({1, 2, 1, 12}), reshape_ref(x, {1, 2, 1, 12}), 0, 0);
        check_close(t.permute({2, 0, 1}), permute(x, {2, 0, 1}), 0, 0);
        check_close(lt::permute(t, {-1, -3, -2}), permute(x, {2, 0, 1}), 0, 0);
        check_close(t.transpose(0, 2), permute(x, {2, 1, 0}), 0, 0);
        check_close(lt::transpose(t, -1, -2), permute(x, {0, 2, 1}), 0, 0);
        Ref row = random_ref<float>({4}, 2);
        check_close(make_tensor<float>(row).expand({3, 4}), broadcast(row, {3, 4}), 0, 0);
        Ref col = random_ref<float>({3, 1}, 3);
        check_close(lt::expand(make_tensor<float>(col), {2, 3, 5}), broadcast(col, {2, 3, 5}), 0, 0);
        check_close(make_tensor<float>(col).expand({-1, 4}), broadcast(col, {3, 4}), 0, 0);
        lt::Tensor<float> s = lt::tensor<float>({7.0f}, {});
        CHECK(s.reshape({1, 1}).expand({2, 3}).to_vector() == std::vector<float>(6, 7.0f));
        CHECK(s.expand({4}).sum().item() == 28.0f);
        CHECK(lt::zeros<float>({0, 4}).reshape({4, 0, 3}).numel() == 0);
    });
}

TEST_CASE("views of realized tensors are zero-copy when the layout allows") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({4, 6}, 10);
        lt::Tensor<float> t = make_tensor<float>(x);

        lt::Tensor<float> r = t.reshape({2, 12});
        CHECK(lt::kernel_count(lt::schedule(r)) == 0);
        r.realize();
        CHECK(shares_buffer(r, t));
        check_close(r, reshape_ref(x, {2, 12}), 0, 0);

        lt::Tensor<float> p = t.transpose(0, 1);
        CHECK(lt::kernel_count(lt::schedule(p)) == 0);
        p.realize();
        CHECK(shares_buffer(p, t));
        CHECK(p.node_ptr()->strides == lt::Strides{1, 6});
        check_close(p, permute(x, {1, 0}), 0, 0);

        lt::Tensor<float> e = t.reshape({4, 1, 6}).expand({4, 3, 6});
        e.realize();
        CHECK(shares_buffer(e, t));
        CHECK(e.node_ptr()->strides == lt::Strides{6, 0, 1});
        check_close(e, broadcast(reshape_ref(x, {4, 1, 6}), {4, 3, 6}), 0, 0);

        // A permuted tensor whose merged axes are contiguous reshapes without a copy (as in PyTorch).
        Ref y = random_ref<float>({2, 3, 4}, 11);
        lt::Tensor<float> ty = make_tensor<float>(y);
        lt::Tensor<float> merged = ty.permute({2, 0, 1}).reshape({4, 6});
        CHECK(lt::kernel_count(lt::schedule(merged)) == 0);
        merged.realize();
        CHECK(shares_buffer(merged, ty));
        check_close(merged, reshape_ref(permute(y, {2, 0, 1}), {4, 6}), 0, 0);

        // Views of views.
        lt::Tensor<float> vv = p.reshape({3, 2, 4}).transpose(0, 2);
        check_close(vv, permute(reshape_ref(permute(x, {1, 0}), {3, 2, 4}), {2, 1, 0}), 0, 0);
    });
}

TEST_CASE("reshape of a layout that needs a copy runs one kernel") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({4, 6}, 20);
        lt::Tensor<float> t = make_tensor<float>(x);
        lt::Tensor<float> flat = t.transpose(0, 1).reshape({24});
        auto items = lt::schedule(flat);
        CHECK(lt::kernel_count(items) == 1);
        flat.realize();
        CHECK_FALSE(shares_buffer(flat, t));
        check_close(flat, reshape_ref(permute(x, {1, 0}), {24}), 0, 0);
        // Misaligned reshapes of transposed data: [4, 6]^T = [6, 4] -> [8, 3] -> transposed.
        check_close(t.transpose(0, 1).reshape({8, 3}).transpose(0, 1),
                    permute(reshape_ref(permute(x, {1, 0}), {8, 3}), {1, 0}), 0, 0);
        check_close(t.transpose(0, 1).reshape({3, 8}) * 2.0f,
                    map(reshape_ref(permute(x, {1, 0}), {3, 8}), [](double v) { return 2 * v; }), 0, 0);
    });
}

TEST_CASE("views of lazy values fuse into the consumer's kernel") {
    for_each_device([](lt::Device) {
        Ref a = random_ref<float>({5, 8}, 30), b = random_ref<float>({8, 5}, 31);
        lt::Tensor<float> ta = make_tensor<float>(a), tb = make_tensor<float>(b);
        auto expr = lt::exp(ta).transpose(0, 1) + tb;
        CHECK(lt::kernel_count(lt::schedule(expr)) == 1);
        check_close(expr, zip(permute(map(a, [](double v) { return std::exp(v); }), {1, 0}), b,
                              [](double x, double y) { return x + y; }),
                    2e-6, 1e-6);
        // Reshape of a lazy value, then a reduction over the new axes.
        auto rs = (ta * 2.0f).reshape({4, 10}).sum(1);
        CHECK(lt::kernel_count(lt::schedule(rs)) == 1);
        check_close(rs, reduce(map(reshape_ref(a, {4, 10}), [](double v) { return 2 * v; }), {1}, false, 0.0,
                               [](double x, double y) { return x + y; }),
                    1e-5, 1e-5);
        // Broadcast then merge (a tile): still one kernel.
        Ref row = random_ref<float>({3, 1}, 32);
        auto tiled = (make_tensor<float>(row) + 1.0f).expand({3, 4}).reshape({12});
        CHECK(lt::kernel_count(lt::schedule(tiled)) == 1);
        check_close(tiled, reshape_ref(broadcast(map(row, [](double v) { return v + 1; }), {3, 4}), {12}), 1e-6, 1e-6);
    });
}

TEST_CASE("to_vector of strided realized views walks them in logical order") {
    for_each_device([](lt::Device) {
        lt::Tensor<int32_t> t = lt::arange<int32_t>(12).reshape({3, 4}).realize();
        CHECK(t.transpose(0, 1).realize().to_vector() == std::vector<int32_t>{0, 4, 8, 1, 5, 9, 2, 6, 10, 3, 7, 11});
        CHECK(t.reshape({3, 1, 4}).expand({3, 2, 4}).transpose(0, 1).to_vector() ==
              std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11});
    });
}

TEST_CASE("regressions: reshapes moved below element-wise ops that still need a copy") {
    for_each_device([](lt::Device) {
        Ref m = random_ref<float>({3, 4}, 40);
        lt::Tensor<float> tm = make_tensor<float>(m);
        lt::Tensor<float> z = lt::exp(tm.transpose(0, 1)).reshape({3, 4}) * tm;
        check_close(z, zip(reshape_ref(map(permute(m, {1, 0}), [](double v) { return std::exp(v); }), {3, 4}), m,
                           [](double x, double y) { return x * y; }),
                    1e-6, 1e-6);
        lt::Tensor<float> a = lt::tensor<float>({1, 2, 3});
        CHECK((a.expand({4, 3}) + 0.0f).reshape({3, 4}).sum(1).to_vector() == std::vector<float>{7, 8, 9});
    });
}

// ---------------------------------------------------------------------------- movement ops

namespace {

/// out[i] = x[source(i)] (or `fill` where source gives an empty index): the reference of any
/// movement op, written as the index function it is.
Ref gather_ref(const Ref& x, const lt::Shape& shape, double fill,
               const std::function<std::vector<std::int64_t>(const std::vector<std::int64_t>&)>& source) {
    Ref out{shape, std::vector<double>(static_cast<std::size_t>(lt::numel(shape)))};
    for (std::int64_t i = 0; i < out.size(); ++i) {
        const auto from = source(unravel(i, shape));
        out.v[static_cast<std::size_t>(i)] = from.empty() ? fill : x.at(from);
    }
    return out;
}

/// Python's slice semantics, written out independently: the indices start:stop:step selects.
std::vector<std::int64_t> python_slice(std::int64_t n, std::optional<std::int64_t> start, std::optional<std::int64_t> stop,
                                       std::int64_t step) {
    std::vector<std::int64_t> out;
    auto clip = [&](std::optional<std::int64_t> v, bool is_start) -> std::int64_t {
        if (!v) return step > 0 ? (is_start ? 0 : n) : (is_start ? n - 1 : -1);
        std::int64_t b = *v < 0 ? *v + n : *v;
        if (step > 0) return std::clamp<std::int64_t>(b, 0, n);
        return std::clamp<std::int64_t>(b, -1, n - 1);
    };
    const std::int64_t a = clip(start, true), b = clip(stop, false);
    for (std::int64_t i = a; step > 0 ? i < b : i > b; i += step) out.push_back(i);
    return out;
}

}  // namespace

TEST_CASE("slice follows Python's rules: negative indices and steps, clipping, empty results; zero-copy") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({5, 7}, 21);
        lt::Tensor<float> t = make_tensor<float>(x);
        using O = std::optional<std::int64_t>;
        const std::vector<std::tuple<O, O, std::int64_t>> cases = {
            {1, 4, 1}, {O{}, O{}, 2}, {-3, O{}, 1}, {O{}, O{}, -1}, {5, 1, -2}, {-1, -8, -3},
            {10, 20, 1}, {-100, 3, 1}, {3, 3, 1}, {4, 1, 1}, {O{}, -5, -1}, {6, O{}, -3}};
        for (const auto& c : cases) {
            // (Named references, not a structured binding: INFO captures them in a lambda, which C++17
            // does not allow for a structured binding; GCC accepts it, Clang does not.)
            const O &start = std::get<0>(c), &stop = std::get<1>(c);
            const std::int64_t step = std::get<2>(c);
            const auto picked = python_slice(7, start, stop, step);
            INFO("slice " << (start ? std::to_string(*start) : "none") << ":" << (stop ? std::to_string(*stop) : "none")
                          << ":" << step);
            lt::Tensor<float> s = t.slice(1, start, stop, step);
            CHECK(lt::kernel_count(lt::schedule(s)) == 0);  // a view of t's buffer
            check_close(s, gather_ref(x, {5, static_cast<std::int64_t>(picked.size())}, 0,
                                      [&](const std::vector<std::int64_t>& i) {
                                          return std::vector<std::int64_t>{i[0], picked[static_cast<std::size_t>(i[1])]};
                                      }),
                        0, 0);
        }
        // A slice of a slice, of a permuted view, and fused into arithmetic.
        lt::Tensor<float> nested = t.slice(0, 1, {}, 1).slice(0, {}, {}, -2).transpose(0, 1).slice(0, 2, 6, 3);
        check_close(nested, gather_ref(x, {2, 2}, 0, [](const std::vector<std::int64_t>& i) {
                        return std::vector<std::int64_t>{4 - 2 * i[1], 2 + 3 * i[0]};
                    }),
                    0, 0);
        lt::Tensor<float> fused = t.slice(0, {}, {}, -1) * 2.0f + t.flip(1);
        CHECK(lt::kernel_count(lt::schedule(fused)) == 1);
        check_close(fused, ref_of({5, 7}, [&](const std::vector<std::int64_t>& i) {
                        return 2 * x.at({4 - i[0], i[1]}) + x.at({i[0], 6 - i[1]});
                    }));
        CHECK_THROWS_AS(t.slice(1, 0, 3, 0), lt::ValueError);
        CHECK_THROWS_AS(t.slice(2, 0, 3), lt::AxisError);
    });
}

TEST_CASE("select, flip, squeeze, unsqueeze and flatten") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({3, 1, 4}, 22);
        lt::Tensor<float> t = make_tensor<float>(x);
        check_close(t.select(2, -1), gather_ref(x, {3, 1}, 0, [](const std::vector<std::int64_t>& i) {
                        return std::vector<std::int64_t>{i[0], i[1], 3};
                    }),
                    0, 0);
        CHECK_THROWS_AS(t.select(0, 3), lt::IndexError);
        check_close(lt::flip(t, {0, 2}), gather_ref(x, {3, 1, 4}, 0, [](const std::vector<std::int64_t>& i) {
                        return std::vector<std::int64_t>{2 - i[0], i[1], 3 - i[2]};
                    }),
                    0, 0);
        lt::Tensor<float> f = t.flip(-1);
        f.realize();
        CHECK(f.node_ptr()->buffer == t.node_ptr()->buffer);  // zero-copy, negative stride
        CHECK(f.node_ptr()->strides[2] == -1);
        CHECK(t.squeeze().shape() == lt::Shape{3, 4});
        CHECK(t.squeeze({1}).shape() == lt::Shape{3, 4});
        CHECK_THROWS_AS(t.squeeze({0}), lt::ShapeError);
        CHECK(t.unsqueeze(0).shape() == lt::Shape{1, 3, 1, 4});
        CHECK(t.unsqueeze(-1).shape() == lt::Shape{3, 1, 4, 1});
        CHECK(t.flatten().shape() == lt::Shape{12});
        CHECK(t.flatten(1).shape() == lt::Shape{3, 4});
        CHECK(t.flatten(0, 1).shape() == lt::Shape{3, 4});
        check_close(t.flip(0).flatten(), gather_ref(x, {12}, 0, [](const std::vector<std::int64_t>& i) {
                        return std::vector<std::int64_t>{2 - i[0] / 4, 0, i[0] % 4};
                    }),
                    0, 0);
    });
}

TEST_CASE("pad surrounds with a constant, reads no memory outside, and fuses") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<float>({3, 4}, 23);
        lt::Tensor<float> t = make_tensor<float>(x);
        auto padded_ref = [&](std::int64_t b0, std::int64_t a0, std::int64_t b1, std::int64_t a1, double v) {
            return gather_ref(x, {3 + b0 + a0, 4 + b1 + a1}, v, [=](const std::vector<std::int64_t>& i) {
                const std::int64_t r = i[0] - b0, c = i[1] - b1;
                if (r < 0 || r >= 3 || c < 0 || c >= 4) return std::vector<std::int64_t>{};
                return std::vector<std::int64_t>{r, c};
            });
        };
        check_close(t.pad({{1, 2}, {0, 3}}, -5.0f), padded_ref(1, 2, 0, 3, -5), 0, 0);
        check_close(lt::pad(t, {{0, 0}, {2, 0}}), padded_ref(0, 0, 2, 0, 0), 0, 0);
        // Fused with a view of the padded value and arithmetic: one kernel.
        lt::Tensor<float> p = (t.transpose(0, 1).pad({{1, 1}, {1, 1}}, 1.0f) * 3.0f).transpose(0, 1);
        CHECK(lt::kernel_count(lt::schedule(p)) == 1);
        Ref expected = map(padded_ref(1, 1, 1, 1, 1), [](double v) { return 3 * v; });
        check_close(p, expected, 1e-6, 0);
        // A pad of a pad, of a lazy value, and of a broadcast.
        lt::Tensor<float> twice = (t + 1.0f).pad({{1, 0}, {0, 0}}, 2.0f).pad({{0, 1}, {1, 0}}, 3.0f);
        const auto got = twice.to_vector();
        REQUIRE(twice.shape() == lt::Shape{5, 5});
        for (std::int64_t r = 0; r < 5; ++r)
            for (std::int64_t c = 0; c < 5; ++c) {
                const double want = r == 4 || c == 0 ? 3.0 : r == 0 ? 2.0 : x.at({r - 1, c - 1}) + 1;
                CHECK(got[static_cast<std::size_t>(r * 5 + c)] == doctest::Approx(want));
            }
        CHECK(lt::Tensor<std::int32_t>(lt::full<std::int32_t>({2}, 7).pad({{1, 1}}, -1)).to_vector() ==
              std::vector<std::int32_t>{-1, 7, 7, -1});
        CHECK_THROWS_AS(t.pad({{1, 0}}), lt::ShapeError);
        CHECK_THROWS_AS(t.pad({{-1, 0}, {0, 0}}), lt::ValueError);
        // A reduction over a padded value: the padding takes part.
        CHECK(t.pad({{0, 0}, {0, 2}}, 10.0f).sum().item() == doctest::Approx(reduce(x, {}, false, 0, std::plus<double>()).v[0] + 60));
    });
}

namespace {

// x padded by before[k] / after[k] elements of `value` along each axis k.
Ref pad_ref(const Ref& x, const std::vector<std::int64_t>& before, const std::vector<std::int64_t>& after, double value) {
    lt::Shape shape = x.shape;
    for (std::size_t k = 0; k < shape.size(); ++k) shape[k] += before[k] + after[k];
    return ref_of(shape, [&](const std::vector<std::int64_t>& i) {
        std::vector<std::int64_t> src(i.size());
        for (std::size_t k = 0; k < i.size(); ++k) {
            src[k] = i[k] - before[k];
            if (src[k] < 0 || src[k] >= x.shape[k]) return value;
        }
        return x.at(src);
    });
}

}  // namespace

TEST_CASE("pad in kernels of many rows: short rows, long rows, flipped and broadcast operands, every element size") {
    for_each_device([](lt::Device) {
        // Rows shorter than a block (many rows per block), and rows longer than one.
        for (const lt::Shape& shape : {lt::Shape{37, 5}, lt::Shape{3, 3000}, lt::Shape{4, 6, 9}}) {
            const Ref x = random_ref<float>(shape, 31);
            lt::Tensor<float> t = make_tensor<float>(x);
            std::vector<std::int64_t> before(shape.size()), after(shape.size());
            std::vector<std::pair<std::int64_t, std::int64_t>> widths;
            for (std::size_t k = 0; k < shape.size(); ++k) {
                before[k] = static_cast<std::int64_t>(k % 3);
                after[k] = static_cast<std::int64_t>((k + 2) % 4);
                widths.emplace_back(before[k], after[k]);
            }
            INFO("shape " << shape.size() << "-d, first extent " << shape[0]);
            check_close(t.pad(widths, -2.5f), pad_ref(x, before, after, -2.5), 0, 0);
            // A pad of a flipped view (its reads walk backwards) and arithmetic on both sides.
            const Ref flipped = ref_of(shape, [&](std::vector<std::int64_t> i) {
                i[0] = shape[0] - 1 - i[0];
                i.back() = shape.back() - 1 - i.back();
                return x.at(i);
            });
            lt::Tensor<float> f = (t.flip(lt::Axes{0, static_cast<int>(shape.size()) - 1}) * 2.0f).pad(widths, 1.0f) + 0.5f;
            check_close(f, map(pad_ref(map(flipped, [](double v) { return 2 * v; }), before, after, 1.0), [](double v) { return v + 0.5; }),
                        1e-6, 0);
        }
        // A pad of a broadcast (every lane of a row reads one element).
        const Ref col = random_ref<float>({9, 1}, 32);
        lt::Tensor<float> b = make_tensor<float>(col).expand({9, 700}).pad({{1, 2}, {3, 1}}, 4.0f) * 1.0f;
        check_close(b, pad_ref(broadcast(col, {9, 700}), {1, 3}, {2, 1}, 4.0), 0, 0);
        // Element sizes of 1, 2 (half), 4 and 8 bytes.
        const Ref ints = random_ref<std::int64_t>({11, 13}, 33, -1e6, 1e6);
        check_close(make_tensor<std::int64_t>(ints).pad({{2, 1}, {0, 5}}, std::int64_t(-7)), pad_ref(ints, {2, 0}, {1, 5}, -7), 0, 0);
        const Ref bytes = random_ref<std::uint8_t>({11, 13}, 34, 0, 200);
        check_close(make_tensor<std::uint8_t>(bytes).pad({{1, 1}, {4, 0}}, std::uint8_t(255)), pad_ref(bytes, {1, 4}, {1, 0}, 255), 0, 0);
        const Ref halves = random_ref<lt::half>({11, 13}, 35);
        check_close(make_tensor<lt::half>(halves).pad({{0, 3}, {2, 2}}, lt::half(1.5f)), pad_ref(halves, {0, 2}, {3, 2}, 1.5), 0, 0);
    });
}

TEST_CASE("concat, stack, tile and repeat_interleave") {
    for_each_device([](lt::Device) {
        Ref a = random_ref<float>({2, 3}, 24), b = random_ref<float>({2, 1}, 25), c = random_ref<float>({2, 4}, 26);
        lt::Tensor<float> ta = make_tensor<float>(a), tb = make_tensor<float>(b), tc = make_tensor<float>(c);
        lt::Tensor<float> joined = lt::concat<float>({ta, tb, tc.transpose(0, 1).transpose(0, 1), lt::zeros<float>({2, 0})}, 1);
        CHECK(lt::kernel_count(lt::schedule(joined)) == 1);
        check_close(joined, ref_of({2, 8}, [&](const std::vector<std::int64_t>& i) {
                        const std::int64_t r = i[0], k = i[1];
                        return k < 3 ? a.at({r, k}) : k < 4 ? b.at({r, 0}) : c.at({r, k - 4});
                    }),
                    0, 0);
        lt::Tensor<float> rows = lt::concat<float>({ta.slice(1, 0, 1), tb * 2.0f}, 0);
        CHECK(rows.shape() == lt::Shape{4, 1});
        const auto rv = rows.to_vector();
        CHECK(rv == std::vector<float>{static_cast<float>(a.at({0, 0})), static_cast<float>(a.at({1, 0})),
                                       static_cast<float>(2 * b.at({0, 0})), static_cast<float>(2 * b.at({1, 0}))});
        CHECK_THROWS_AS(lt::concat<float>({ta, tc}, 0), lt::ShapeError);
        CHECK_THROWS_AS(lt::concat<float>({}, 0), lt::ValueError);

        lt::Tensor<float> st = lt::stack<float>({ta, ta * 2.0f}, 1);
        CHECK(st.shape() == lt::Shape{2, 2, 3});
        check_close(st, ref_of({2, 2, 3}, [&](const std::vector<std::int64_t>& i) { return (i[1] + 1) * a.at({i[0], i[2]}); }),
                    0, 0);
        CHECK_THROWS_AS(lt::stack<float>({ta, tc}, 0), lt::ShapeError);

        check_close(ta.tile({2, 3}), gather_ref(a, {4, 9}, 0, [](const std::vector<std::int64_t>& i) {
                        return std::vector<std::int64_t>{i[0] % 2, i[1] % 3};
                    }),
                    0, 0);
        check_close(lt::tile(ta, {2, 1, 1}), gather_ref(a, {2, 2, 3}, 0, [](const std::vector<std::int64_t>& i) {
                        return std::vector<std::int64_t>{i[1], i[2]};
                    }),
                    0, 0);
        check_close(ta.repeat({1, 2}), gather_ref(a, {2, 6}, 0, [](const std::vector<std::int64_t>& i) {
                        return std::vector<std::int64_t>{i[0], i[1] % 3};
                    }),
                    0, 0);
        check_close(ta.repeat_interleave(3, 1), gather_ref(a, {2, 9}, 0, [](const std::vector<std::int64_t>& i) {
                        return std::vector<std::int64_t>{i[0], i[1] / 3};
                    }),
                    0, 0);
        CHECK(lt::kernel_count(lt::schedule(ta.tile({2, 3}) + 1.0f)) == 1);
    });
}

namespace {
// lt::philox(a, b) would be found by argument-dependent lookup if it were public.
template <class T, class = void>
struct has_public_philox : std::false_type {};
template <class T>
struct has_public_philox<T, std::void_t<decltype(philox(std::declval<T>(), std::declval<T>()))>> : std::true_type {};
}  // namespace

TEST_CASE("free functions take braced lists of tensors and axes, and max/min of two tensors are element-wise") {
    static_assert(!has_public_philox<lt::Tensor<std::int64_t>>::value, "philox is internal");
    for_each_device([](lt::Device device) {
        lt::Tensor<float> a = lt::tensor({1.0f, 2.0f, 3.0f}, device), b = lt::tensor({4.0f, 5.0f, 6.0f}, device);
        CHECK(a.device() == device);
        CHECK(lt::concat({a, b}, 0).to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
        CHECK(lt::concat({a, b}).to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
        lt::Tensor<float> s = lt::stack({a, b}, 1);
        CHECK(s.shape() == lt::Shape{3, 2});
        CHECK(s.to_vector() == std::vector<float>{1, 4, 2, 5, 3, 6});
        CHECK(lt::stack({a, b}).shape() == lt::Shape{2, 3});

        lt::Tensor<float> x = lt::tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3}, device);
        CHECK(lt::var(x, 0, false).to_vector() == std::vector<float>{4.5f, 4.5f, 4.5f});
        CHECK(lt::var(x, {0, 1}).item() == doctest::Approx(3.5));
        CHECK(lt::var(x, {0, 1}, false, 0).item() == doctest::Approx(17.5 / 6));
        lt::Tensor<float> sd = lt::std(x, 1, true);
        CHECK(sd.shape() == lt::Shape{2, 1});
        CHECK(sd.to_vector() == std::vector<float>{1, 1});
        CHECK(lt::std(x).item() == doctest::Approx(std::sqrt(3.5)));
        CHECK(lt::argmax(x, 1).to_vector() == std::vector<std::int64_t>{2, 2});
        lt::Tensor<std::int64_t> am = lt::argmin(x, 0, true);
        CHECK(am.shape() == lt::Shape{1, 3});
        CHECK(am.to_vector() == std::vector<std::int64_t>{0, 0, 0});
        CHECK(lt::cumsum(x, 1).to_vector() == std::vector<float>{1, 3, 6, 4, 9, 15});
        CHECK(lt::cumprod(x, 0).to_vector() == std::vector<float>{1, 2, 3, 4, 10, 18});

        // PyTorch's names: max/min of one tensor reduce, of two tensors compare element-wise.
        CHECK(lt::max(a, b).to_vector() == std::vector<float>{4, 5, 6});
        CHECK(lt::min(a, b).to_vector() == std::vector<float>{1, 2, 3});
        CHECK(lt::max(a + 4.5f, b).to_vector() == std::vector<float>{5.5f, 6.5f, 7.5f});
        CHECK(lt::min(b, a * 2.0f).to_vector() == std::vector<float>{2, 4, 6});
        CHECK(lt::max(a).item() == 3.0f);
        CHECK(lt::max(x, 1).to_vector() == std::vector<float>{3, 6});
        CHECK(lt::min(x, {0, 1}).item() == 1.0f);
    });
}

TEST_CASE("linspace, eye, triu and tril, the *_like functions, clone and contiguous") {
    for_each_device([](lt::Device device) {
        CHECK(lt::linspace<float>(0, 1, 5, device).to_vector() == std::vector<float>{0, 0.25f, 0.5f, 0.75f, 1});
        CHECK(lt::linspace<double>(-1, 1, 3, device).to_vector() == std::vector<double>{-1, 0, 1});
        CHECK(lt::linspace<float>(2, 7, 1, device).to_vector() == std::vector<float>{2});
        CHECK(lt::linspace<float>(2, 7, 0, device).numel() == 0);
        // The end is exact (counted back from it): 0.1 * 9 is not 0.9 in double, 1 - 0.1 is.
        CHECK(lt::linspace<double>(0, 1, 11, device).to_vector()[9] == 1.0 - 0.1);
        CHECK(lt::linspace<std::int32_t>(0, 10, 4, device).to_vector() == std::vector<std::int32_t>{0, 3, 6, 10});
        CHECK(lt::linspace<float>(2, 7, 2, device).device() == device);
        CHECK_THROWS_AS(lt::linspace<float>(0, 1, -1, device), lt::ValueError);
        CHECK_THROWS_AS(lt::linspace<std::uint8_t>(0, 300, 4, device), lt::ValueError);

        lt::Tensor<std::int32_t> e = lt::eye<std::int32_t>(2, 3, device);
        CHECK(e.shape() == lt::Shape{2, 3});
        CHECK(e.to_vector() == std::vector<std::int32_t>{1, 0, 0, 0, 1, 0});
        CHECK(lt::eye<float>(3, device).sum().item() == 3.0f);
        CHECK(lt::eye<bool>(2, device).to_vector() == std::vector<bool>{true, false, false, true});
        CHECK(lt::eye<float>(0, device).numel() == 0);
        CHECK_THROWS_AS(lt::eye<float>(-1, 2, device), lt::ShapeError);

        lt::Tensor<float> x = lt::tensor<float>({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {3, 4}, device);
        CHECK(lt::triu(x).to_vector() == std::vector<float>{1, 2, 3, 4, 0, 6, 7, 8, 0, 0, 11, 12});
        CHECK(lt::triu(x, 1).to_vector() == std::vector<float>{0, 2, 3, 4, 0, 0, 7, 8, 0, 0, 0, 12});
        CHECK(lt::tril(x).to_vector() == std::vector<float>{1, 0, 0, 0, 5, 6, 0, 0, 9, 10, 11, 0});
        CHECK(lt::tril(x, -1).to_vector() == std::vector<float>{0, 0, 0, 0, 5, 0, 0, 0, 9, 10, 0, 0});
        CHECK(lt::triu(x * 2.0f, -1).to_vector() == std::vector<float>{2, 4, 6, 8, 10, 12, 14, 16, 0, 20, 22, 24});
        // Batched: the last two axes; a view (transpose) and an integer dtype.
        lt::Tensor<std::int32_t> b = lt::arange<std::int32_t>(8, device).reshape({2, 2, 2});
        CHECK(lt::tril(b).to_vector() == std::vector<std::int32_t>{0, 0, 2, 3, 4, 0, 6, 7});
        CHECK(lt::triu(x.t()).to_vector() == std::vector<float>{1, 5, 9, 0, 6, 10, 0, 0, 11, 0, 0, 0});
        CHECK(lt::kernel_count(lt::schedule(lt::triu(x * 2.0f) + 1.0f)) == 1);
        CHECK_THROWS_AS(lt::triu(lt::tensor({1.0f, 2.0f}, device)), lt::ShapeError);

        lt::Tensor<float> z = lt::zeros_like(x + 1.0f);
        CHECK(z.shape() == x.shape());
        CHECK(z.device() == device);
        CHECK(z.sum().item() == 0.0f);
        CHECK(lt::ones_like(b).to_vector() == std::vector<std::int32_t>(8, 1));
        CHECK(lt::full_like(x, 2.5f).to_vector() == std::vector<float>(12, 2.5f));
        CHECK(lt::full_like(b, 7).to_vector() == std::vector<std::int32_t>(8, 7));
        CHECK_THROWS_AS(lt::full_like(b, 3.0e10), lt::ValueError);  // never wraps
        CHECK(float(lt::full_like(lt::zeros<lt::half>({2}, device), 1.5f).to_vector()[1]) == 1.5f);
        lt::Tensor<float> r = lt::rand_like(x, 7);
        CHECK(r.to_vector() == lt::rand<float>({3, 4}, 7, device).to_vector());
        CHECK(lt::randn_like(x, 7).shape() == x.shape());

        // clone: memory of its own; the original's later writes do not reach it.
        lt::Tensor<float> c = lt::clone(x);
        c.realize();
        CHECK(c.node_ptr()->buffer != x.node_ptr()->buffer);
        lt::Tensor<float> lazy_clone = lt::clone(x);
        x.slice(0, 0, 1).assign(0.0f);
        CHECK(c.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
        CHECK(lazy_clone.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
        c.assign(1.0f);
        CHECK(x.to_vector()[4] == 5.0f);

        // contiguous: the tensor itself when it already is; a row-major copy of a strided view.
        CHECK(lt::contiguous(x).node_ptr() == x.node_ptr());
        lt::Tensor<float> rows = x.slice(0, 1, 3);  // realized zero-copy: a contiguous block at an offset
        rows.realize();
        CHECK(rows.node_ptr()->buffer == x.node_ptr()->buffer);
        CHECK(lt::contiguous(rows).node_ptr() == rows.node_ptr());
        lt::Tensor<float> cols = x.slice(1, 1, 3);  // realized zero-copy, rows with gaps: copied
        cols.realize();
        lt::Tensor<float> packed = lt::contiguous(cols);
        CHECK(packed.node_ptr() != cols.node_ptr());
        CHECK(packed.to_vector() == std::vector<float>{0, 0, 6, 7, 10, 11});
        CHECK(packed.node_ptr()->strides == lt::Strides{2, 1});
        lt::Tensor<float> t = lt::contiguous(x.t());
        t.realize();
        CHECK(t.node_ptr()->strides == lt::Strides{3, 1});
        CHECK(t.to_vector() == std::vector<float>{0, 5, 9, 0, 6, 10, 0, 7, 11, 0, 8, 12});
        CHECK(lt::contiguous(x + 1.0f).to_vector()[4] == 6.0f);
    });
}

TEST_CASE("split, chunk, unbind, movedim and broadcast_to give zero-copy views") {
    for_each_device([](lt::Device device) {
        lt::Tensor<float> x = lt::arange<float>(10, device).reshape({2, 5});
        x.realize();
        std::vector<lt::Tensor<float>> p = lt::split(x, 2, 1);
        REQUIRE(p.size() == 3);
        CHECK(p[0].shape() == lt::Shape{2, 2});
        CHECK(p[0].to_vector() == std::vector<float>{0, 1, 5, 6});
        CHECK(p[1].to_vector() == std::vector<float>{2, 3, 7, 8});
        CHECK(p[2].shape() == lt::Shape{2, 1});
        CHECK(p[2].to_vector() == std::vector<float>{4, 9});
        p[1].realize();
        CHECK(p[1].node_ptr()->buffer == x.node_ptr()->buffer);
        CHECK(lt::split(x, 1).size() == 2);
        std::vector<lt::Tensor<float>> q = lt::split(x, {1, 4}, 1);
        REQUIRE(q.size() == 2);
        CHECK(q[0].to_vector() == std::vector<float>{0, 5});
        CHECK(q[1].to_vector() == std::vector<float>{1, 2, 3, 4, 6, 7, 8, 9});
        CHECK(lt::split(x, {0, 5, 0}, -1)[1].shape() == lt::Shape{2, 5});
        CHECK(lt::split(lt::zeros<float>({0, 3}, device), 2).size() == 1);
        CHECK(lt::split(x * 2.0f, 3, 1)[1].to_vector() == std::vector<float>{6, 8, 16, 18});
        CHECK_THROWS_AS(lt::split(x, 0), lt::ValueError);
        CHECK_THROWS_AS(lt::split(x, {3, 1}, 1), lt::ShapeError);
        CHECK_THROWS_AS(lt::split(x, {6, -1}, 1), lt::ShapeError);
        const std::int64_t huge = std::numeric_limits<std::int64_t>::max();
        CHECK_THROWS_AS(lt::split(x, {huge, huge, 2}, 1), lt::ShapeError);  // no overflow
        CHECK(lt::split(x, huge, 1).size() == 1);
        CHECK_THROWS_AS(lt::split(x, 2, 2), lt::AxisError);

        CHECK(lt::chunk(x, 3, 1).size() == 3);
        CHECK(lt::chunk(x, 3, 1)[2].to_vector() == std::vector<float>{4, 9});
        CHECK(lt::chunk(x, 4, 1).size() == 3);  // ceil(5 / 4) = 2 per piece: three pieces
        CHECK(lt::chunk(x, 5, 1).size() == 5);
        CHECK(lt::chunk(x, 1)[0].shape() == x.shape());
        CHECK_THROWS_AS(lt::chunk(x, 0), lt::ValueError);

        std::vector<lt::Tensor<float>> cols = lt::unbind(x, 1);
        REQUIRE(cols.size() == 5);
        CHECK(cols[3].shape() == lt::Shape{2});
        CHECK(cols[3].to_vector() == std::vector<float>{3, 8});
        CHECK(lt::unbind(x)[1].to_vector() == std::vector<float>{5, 6, 7, 8, 9});

        lt::Tensor<float> y = lt::arange<float>(24, device).reshape({2, 3, 4});
        lt::Tensor<float> m = lt::movedim(y, 0, -1);
        CHECK(m.shape() == lt::Shape{3, 4, 2});
        CHECK(m.to_vector()[1] == 12.0f);  // m[0][0][1] = y[1][0][0]
        CHECK(m.to_vector()[3] == 13.0f);  // m[0][1][1] = y[1][0][1]
        CHECK(lt::movedim(y, {0, 1}, {2, 0}).shape() == lt::Shape{3, 4, 2});
        lt::Tensor<float> m2 = lt::movedim(y, 2, 0);
        CHECK(m2.shape() == lt::Shape{4, 2, 3});
        CHECK(m2.to_vector()[1] == 4.0f);  // m2[0][0][1] = y[0][1][0]
        CHECK(lt::movedim(y, {0, 2}, {2, 0}).shape() == lt::Shape{4, 3, 2});
        CHECK(lt::kernel_count(lt::schedule(m)) == 0);
        CHECK_THROWS_AS(lt::movedim(y, {0, 0}, {1, 2}), lt::AxisError);
        CHECK_THROWS_AS(lt::movedim(y, {0}, {1, 2}), lt::ValueError);
        CHECK_THROWS_AS(lt::movedim(y, 3, 0), lt::AxisError);

        lt::Tensor<float> b = lt::broadcast_to(lt::tensor({1.0f, 2.0f, 3.0f}, device), {2, 3});
        CHECK(b.to_vector() == std::vector<float>{1, 2, 3, 1, 2, 3});
        CHECK_THROWS_AS(lt::broadcast_to(lt::tensor({1.0f, 2.0f, 3.0f}, device), {2, 4}), lt::ShapeError);
    });
}

TEST_CASE("lt::schedule names each input by the shape it is read in, a view's, not its buffer's") {
    // Issue 54: a [4, 16] slice of a [1000, 16] buffer was listed as float32[1000, 16].
    for_each_device([](lt::Device) {
        const auto X = make_tensor<float>(random_ref<float>({1000, 16}, 71));
        const auto b = make_tensor<float>(random_ref<float>({16}, 72));
        const auto T = make_tensor<float>(random_ref<float>({16, 1000}, 73));
        // A product of the buffer and a transposed slice of it (32 columns: a GEMM everywhere).
        auto items = lt::schedule(lt::matmul(X, X.slice(0, 0, 32).t()));
        REQUIRE(items.size() == 1);
        CHECK(items[0].inputs == std::vector<std::string>{"float32[1000, 16]", "float32[16, 32]"});
        // A transposed buffer as the left operand.
        items = lt::schedule(lt::matmul(T.t(), X.slice(0, 0, 32).t()));
        REQUIRE(items.size() == 1);
        CHECK(items[0].inputs == std::vector<std::string>{"float32[1000, 16]", "float32[16, 32]"});
        // Kernels: a slice, a strided slice and a transpose are read in their shapes; one buffer
        // read through two views lists both; a broadcast bias is read in its own shape.
        items = lt::schedule(X.slice(0, 0, 4) * 2.0f);
        REQUIRE(items.size() == 1);
        CHECK(items[0].inputs == std::vector<std::string>{"float32[4, 16]"});
        items = lt::schedule(lt::sum(X.slice(0, 10, 20, 5), 1));
        REQUIRE(items.size() == 1);
        CHECK(items[0].inputs == std::vector<std::string>{"float32[2, 16]"});
        items = lt::schedule(X.slice(0, 0, 4) + X.slice(0, 0, 64).reshape({4, 16, 16}).sum(2));
        REQUIRE(items.size() == 1);
        CHECK(items[0].inputs == std::vector<std::string>{"float32[4, 16] and [4, 16, 16]"});
        items = lt::schedule(T.t() + b);
        REQUIRE(items.size() == 1);
        CHECK(items[0].inputs == std::vector<std::string>{"float32[1000, 16]", "float32[16]"});
        // A whole buffer keeps its own shape; a scan reads its operand's view.
        items = lt::schedule(X * 2.0f);
        REQUIRE(items.size() == 1);
        CHECK(items[0].inputs == std::vector<std::string>{"float32[1000, 16]"});
        items = lt::schedule(lt::cumsum(X.slice(0, 0, 8), 0));
        REQUIRE(items.size() == 1);
        CHECK(items[0].inputs == std::vector<std::string>{"float32[8, 16]"});
    });
}
