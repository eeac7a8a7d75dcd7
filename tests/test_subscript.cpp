// SPDX-License-Identifier: MIT
// Subscripts: x.index({...}) and index_put against NumPy's answers (tests/fixtures/index_cases.inc,
// written by NumPy), views sharing memory, gradients through index tensors, nonzero, where,
// masked_select, unique_all, the scatter underneath them on every dtype, and bad indices.
#include <algorithm>
#include <limits>

#include "common.hpp"

namespace {

/// One index entry of a fixture case, rebuilt as a lt::TensorIndex on the test device.
struct IdxCase {
    enum Kind { Integer, Slice, Ellipsis, NewAxis, Ints, Mask } kind = Integer;
    std::int64_t number = 0;
    lt::Slice slice_value;
    std::vector<std::int64_t> shape, values;

    static IdxCase integer(std::int64_t i) {
        IdxCase c;
        c.number = i;
        return c;
    }
    static IdxCase slice(lt::Slice::Bound a, lt::Slice::Bound b, lt::Slice::Bound s) {
        IdxCase c;
        c.kind = Slice;
        c.slice_value = lt::Slice(a, b, s);
        return c;
    }
    static IdxCase ellipsis() {
        IdxCase c;
        c.kind = Ellipsis;
        return c;
    }
    static IdxCase new_axis() {
        IdxCase c;
        c.kind = NewAxis;
        return c;
    }
    static IdxCase ints(std::vector<std::int64_t> shape, std::vector<std::int64_t> values) {
        IdxCase c;
        c.kind = Ints;
        c.shape = std::move(shape);
        c.values = std::move(values);
        return c;
    }
    static IdxCase mask(std::vector<std::int64_t> shape, std::vector<std::int64_t> values) {
        IdxCase c = ints(std::move(shape), std::move(values));
        c.kind = Mask;
        return c;
    }

    lt::TensorIndex build() const {
        lt::Shape s;
        for (std::int64_t e : shape) s.push_back(e);
        switch (kind) {
            case Integer: return number;
            case Slice: return slice_value;
            case Ellipsis: return lt::Ellipsis;
            case NewAxis: return lt::NewAxis;
            case Ints: return lt::tensor<std::int64_t>(values, s);
            case Mask: {  // a lazy bool expression, as masks usually are
                std::vector<std::uint8_t> bytes(values.begin(), values.end());
                return lt::tensor<std::uint8_t>(bytes, s).cast<bool>();
            }
        }
        return lt::Ellipsis;
    }
};

struct IdxRead {
    const char* name;
    std::vector<std::int64_t> shape;
    std::vector<IdxCase> index;
    std::vector<std::int64_t> out_shape;
    std::vector<float> out;
};

struct IdxWrite {
    const char* name;
    std::vector<std::int64_t> shape;
    std::vector<IdxCase> index;
    std::vector<std::int64_t> value_shape;
    std::vector<float> value;
    bool accumulate;
    std::vector<float> out;
};

#include "fixtures/index_cases.inc"

lt::Shape shape_of(const std::vector<std::int64_t>& v) {
    lt::Shape s;
    for (std::int64_t e : v) s.push_back(e);
    return s;
}

lt::Tensor<float> arange_of(const std::vector<std::int64_t>& shape) {
    const lt::Shape s = shape_of(shape);
    return lt::arange<float>(lt::numel(s)).reshape(s).realize();
}

std::vector<lt::TensorIndex> build(const std::vector<IdxCase>& cases) {
    std::vector<lt::TensorIndex> out;
    for (const IdxCase& c : cases) out.push_back(c.build());
    return out;
}

template <class T>
lt::Tensor<T> from_node(const lt::detail::NodePtr& n) {
    return lt::Tensor<T>(n);
}

}  // namespace

TEST_CASE("index: every form gives NumPy's shape and values") {
    for_each_device([](lt::Device) {
        for (const IdxRead& c : kIndexReads) {
            INFO(c.name);
            const lt::Tensor<float> x = arange_of(c.shape);
            const lt::Tensor<float> y = x.index(build(c.index));
            CHECK(y.shape() == shape_of(c.out_shape));
            CHECK(y.to_vector() == c.out);
            // The same through a lazy value (x * 1 + 0 is x's values, computed in a kernel).
            const lt::Tensor<float> lazy = (x * 2.0f - x).index(build(c.index));
            CHECK(lazy.to_vector() == c.out);
        }
    });
}

TEST_CASE("index_put: every write form gives NumPy's result (np.add.at for accumulate)") {
    for_each_device([](lt::Device) {
        for (const IdxWrite& c : kIndexWrites) {
            INFO(c.name);
            lt::Tensor<float> x = arange_of(c.shape);
            if (c.value.size() == 1 && c.value_shape.empty()) x.index_put(build(c.index), c.value[0], c.accumulate);
            else x.index_put(build(c.index), lt::tensor<float>(c.value, shape_of(c.value_shape)), c.accumulate);
            CHECK(x.to_vector() == c.out);
        }
    });
}

TEST_CASE("index: basic indices are views of x's memory, writes through them reach x") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> x = lt::arange<float>(12).reshape({3, 4}).realize();
        lt::Tensor<float> row = x(1, lt::Slice(lt::None, lt::None, 2)).realize();  // x[1, ::2]
        CHECK(row.node_ptr()->buffer == x.node_ptr()->buffer);
        CHECK(row.to_vector() == std::vector<float>{4, 6});
        x.index_put({lt::Slice(), 3}, 100.0f);  // x[:, 3] = 100
        x.index_put({0}, 1.0f, true);          // x[0] += 1
        CHECK(x.to_vector() == std::vector<float>{1, 2, 3, 101, 4, 5, 6, 100, 8, 9, 10, 100});
        // A lazy x is realized to be written into.
        lt::Tensor<float> lazy = lt::zeros<float>({2, 2}) + 1.0f;
        lazy.index_put({lt::tensor<std::int64_t>({1}), lt::tensor<std::int64_t>({0})}, 5.0f);
        CHECK(lazy.to_vector() == std::vector<float>{1, 1, 5, 1});
        // x(...) is x.index({...}); an index on a transposed view follows the view.
        CHECK(x.t()(lt::tensor<std::int64_t>({3, 0}), 0).to_vector() == std::vector<float>{101, 1});
        CHECK(x(lt::Ellipsis).to_vector() == x.to_vector());
        // Index tensors written through a transposed view reach x; so do writes through a view of
        // a lazy tensor (computed first, as assign does); a mask with no true element writes nothing.
        lt::Tensor<float> t = x.t();
        t.index_put({lt::tensor<std::int64_t>({2})}, -1.0f);  // x[:, 2] = -1
        CHECK(x.to_vector() == std::vector<float>{1, 2, -1, 101, 4, 5, -1, 100, 8, 9, -1, 100});
        lt::Tensor<float> base = lt::zeros<float>({2, 3}) + 2.0f;
        lt::Tensor<float> view = base.t();
        view.index_put({lt::tensor<std::int64_t>({0, 2}), lt::tensor<std::int64_t>({1, 0})}, 7.0f);  // base[1, 0], base[0, 2]
        CHECK(base.to_vector() == std::vector<float>{2, 2, 7, 7, 2, 2});
        x.index_put({x > 1000.0f}, 0.0f);
        x.index_put({lt::zeros<std::int64_t>({0})}, 3.0f, true);
        CHECK(x.sum().item() == 1 + 2 - 1 + 101 + 4 + 5 - 1 + 100 + 8 + 9 - 1 + 100);
    });
}

TEST_CASE("index: other dtypes, int32 index tensors and bool data") {
    for_each_device([](lt::Device) {
        const lt::Tensor<std::int64_t> x = lt::arange<std::int64_t>(10);
        CHECK(x.index({lt::tensor<std::int32_t>({9, -10, 3})}).to_vector() == std::vector<std::int64_t>{9, 0, 3});
        const lt::Tensor<bool> b = x > std::int64_t(6);
        CHECK(b.index({lt::Slice(5, 9)}).to_vector() == std::vector<bool>{false, false, true, true});
        const lt::Tensor<double> d = lt::arange<double>(4);
        lt::Tensor<double> w = d.realize();
        w.index_put({lt::tensor<std::uint8_t>({3, 3})}, 0.25, true);
        CHECK(w.to_vector() == std::vector<double>{0, 1, 2, 3.5});
        // One mask over all of x: a select (a scalar, a one-element tensor) or a scatter (values in order).
        lt::Tensor<bool> flags = lt::tensor<bool>({false, true, false, false}).realize();
        flags.index_put({lt::tensor<bool>({true, true, false, false})}, true, true);
        CHECK(flags.to_vector() == std::vector<bool>{true, true, false, false});
        w.index_put({w > 1.5}, lt::tensor<double>({-1.0}));
        CHECK(w.to_vector() == std::vector<double>{0, 1, -1, -1});
        w.index_put({w < 0.0}, lt::tensor<double>({7.0, 8.0}));
        CHECK(w.to_vector() == std::vector<double>{0, 1, 7, 8});
        w.index_put({w > 0.5}, 2.0, true);
        CHECK(w.to_vector() == std::vector<double>{0, 3, 9, 10});
    });
}

TEST_CASE("index: gradients reach x through index tensors and masks, repeated positions adding up") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> x = lt::arange<float>(6).reshape({2, 3}).realize();
        // y = x[[1, 0, 1], 2] * [1, 2, 3]: d/dx[1][2] = 1 + 3, d/dx[0][2] = 2.
        const auto idx = lt::tensor<std::int64_t>({1, 0, 1});
        const auto w = lt::tensor<float>({1, 2, 3});
        const lt::Tensor<float> g = lt::grad((x.index({idx, 2}) * w).sum(), x);
        CHECK(g.to_vector() == std::vector<float>{0, 0, 2, 0, 0, 4});
        // Many positions (the scatter-add path): 40 reads of 5 slots, slot i read i + 1 .. times.
        std::vector<std::int64_t> many;
        std::vector<float> expected(5, 0.0f);
        for (int i = 0; i < 40; ++i) {
            many.push_back((i * 7) % 5);
            expected[static_cast<std::size_t>((i * 7) % 5)] += static_cast<float>(i);
        }
        lt::Tensor<float> v = lt::zeros<float>({5}).realize();
        const lt::Tensor<float> gv = lt::grad((v.index({lt::tensor<std::int64_t>(many, {40})}) * lt::arange<float>(40)).sum(), v);
        CHECK(gv.to_vector() == expected);
        // Through a mask: the gradient is the mask.
        const lt::Tensor<float> gm = lt::grad((x.index({x > 2.5f}) * 2.0f).sum(), x);
        CHECK(gm.to_vector() == std::vector<float>{0, 0, 0, 2, 2, 2});
    });
}

TEST_CASE("nonzero, where(cond), masked_select") {
    for_each_device([](lt::Device) {
        const auto x = lt::tensor<float>({0, 3, 0, -1, 2, 0}, {2, 3});
        const lt::Tensor<std::int64_t> nz = lt::nonzero(x);
        CHECK(nz.shape() == lt::Shape{3, 2});
        CHECK(nz.to_vector() == std::vector<std::int64_t>{0, 1, 1, 0, 1, 1});
        const std::vector<lt::Tensor<std::int64_t>> w = lt::where(x > 0.0f);
        REQUIRE(w.size() == 2);
        CHECK(w[0].to_vector() == std::vector<std::int64_t>{0, 1});
        CHECK(w[1].to_vector() == std::vector<std::int64_t>{1, 1});
        CHECK(x.index({w[0], w[1]}).to_vector() == std::vector<float>{3, 2});
        CHECK(lt::masked_select(x, x < 0.5f).to_vector() == std::vector<float>{0, 0, -1, 0});
        // Broadcast mask: a row mask picks columns of every row.
        CHECK(lt::masked_select(x, lt::tensor<bool>({true, false, true})).to_vector() == std::vector<float>{0, 0, -1, 0});
        CHECK(lt::nonzero(lt::zeros<float>({4})).shape() == lt::Shape{0, 1});
        CHECK(lt::masked_select(x, x > 10.0f).numel() == 0);
        // A longer mask: every 3rd of 3000 (the scan and the scatter over many elements).
        const lt::Tensor<std::int64_t> r = lt::arange<std::int64_t>(3000);
        const lt::Tensor<std::int64_t> picked = lt::masked_select(r, lt::remainder(r, std::int64_t(3)) == std::int64_t(0));
        REQUIRE(picked.numel() == 1000);
        const std::vector<std::int64_t> p = picked.to_vector();
        bool all = true;
        for (std::int64_t i = 0; i < 1000; ++i) all = all && p[static_cast<std::size_t>(i)] == 3 * i;
        CHECK(all);
    });
}

TEST_CASE("unique_all: values, first positions, inverse and counts as NumPy's") {
    for_each_device([](lt::Device) {
        const auto x = lt::tensor<float>({3, 1, 3, 2, 1, 3}, {2, 3});
        const lt::UniqueResult<float> u = lt::unique_all(x);
        CHECK(u.values.to_vector() == std::vector<float>{1, 2, 3});
        CHECK(u.indices.to_vector() == std::vector<std::int64_t>{1, 3, 0});
        CHECK(u.inverse.shape() == lt::Shape{2, 3});
        CHECK(u.inverse.to_vector() == std::vector<std::int64_t>{2, 0, 2, 1, 0, 2});
        CHECK(u.counts.to_vector() == std::vector<std::int64_t>{2, 1, 3});
        // NaNs are one value (NumPy's equal_nan), after the numbers.
        const float nan = std::numeric_limits<float>::quiet_NaN();
        const std::vector<float> v = lt::unique(lt::tensor<float>({nan, 2, nan, -0.5f})).to_vector();
        REQUIRE(v.size() == 3);
        CHECK(v[0] == -0.5f);
        CHECK(v[1] == 2.0f);
        CHECK(std::isnan(v[2]));
        CHECK(lt::unique(lt::tensor<std::int32_t>({5, 5, 5})).to_vector() == std::vector<std::int32_t>{5});
        CHECK(lt::unique(lt::zeros<float>({0, 3})).numel() == 0);
    });
}

TEST_CASE("scatter: every dtype, repeated and skipped positions, integers wrapping") {
    namespace g = lt::detail::graph;
    for_each_device([](lt::Device d) {
        const auto at = lt::tensor<std::int64_t>({2, -1, 0, 2, 4, 2});  // -1 and 4 (of 4) are skipped
        auto scatter = [&](auto base, auto values, bool accumulate) {
            using T = typename decltype(base)::value_type;
            return from_node<T>(g::scatter(base.build(), at.build(), values.build(), accumulate)).to_vector();
        };
        CHECK(scatter(lt::tensor<std::int32_t>({std::numeric_limits<std::int32_t>::max(), 0, 1, 0}),
                      lt::tensor<std::int32_t>({1, 1, 1, 1, 1, 1}), true) ==
              std::vector<std::int32_t>{std::numeric_limits<std::int32_t>::min(), 0, 4, 0});
        CHECK(scatter(lt::tensor<std::uint8_t>({255, 0, 250, 0}), lt::tensor<std::uint8_t>({3, 9, 1, 3, 9, 3}), true) ==
              std::vector<std::uint8_t>{0, 0, 3, 0});
        CHECK(scatter(lt::tensor<std::int64_t>({1, 0, 0, 0}), lt::tensor<std::int64_t>({-5, 9, 10, -5, 9, -5}), true) ==
              std::vector<std::int64_t>{11, 0, -15, 0});
        CHECK(scatter(lt::tensor<bool>({false, false, false, true}), lt::tensor<bool>({false, true, true, true, true, false}), true) ==
              std::vector<bool>{true, false, true, true});
        CHECK(scatter(lt::tensor<lt::half>({lt::half(1.0f), lt::half(0.0f), lt::half(0.5f), lt::half(0.0f)}),
                      lt::tensor<lt::half>({lt::half(0.25f), lt::half(0.0f), lt::half(1.0f), lt::half(0.25f), lt::half(0.0f),
                                            lt::half(0.25f)}),
                      true) == std::vector<lt::half>{lt::half(2.0f), lt::half(0.0f), lt::half(1.25f), lt::half(0.0f)});
        if (lt::detail::supports_float64(d)) {
            CHECK(scatter(lt::tensor<double>({0, 0, 0, 0}), lt::tensor<double>({0.5, 9, 0.25, 0.125, 9, 1}), true) ==
                  std::vector<double>{0.25, 0, 1.625, 0});
        }
        // The narrow and unsigned integers (added through host memory on OpenCL).
        CHECK(scatter(lt::tensor<std::int8_t>({127, 0, -128, 0}), lt::tensor<std::int8_t>({-1, 1, 1, -1, 1, -1}), true) ==
              std::vector<std::int8_t>{-128, 0, 125, 0});
        CHECK(scatter(lt::tensor<std::uint64_t>({0, 0, 0, 0}), lt::tensor<std::uint64_t>({1, 2, ~std::uint64_t(0), 4, 5, 6}), false)[0] ==
              ~std::uint64_t(0));  // position 0 is written once (position 2's three writes keep any one of them on a device)
        // An overwrite at one position each: exact on every device.
        const auto once = lt::tensor<std::int64_t>({3, 1});
        CHECK(from_node<float>(g::scatter(lt::zeros<float>({4}).build(), once.build(), lt::tensor<float>({7, 8}).build(), false))
                  .to_vector() == std::vector<float>{0, 8, 0, 7});
        // Many adds to few places (atomics under contention on a device): 2^14 ones into 7 bins.
        const std::int64_t n = 1 << 14;
        const lt::Tensor<std::int64_t> bins = lt::remainder(lt::arange<std::int64_t>(n), std::int64_t(7));
        const std::vector<float> counts =
            from_node<float>(g::scatter(lt::zeros<float>({7}).build(), bins.build(), lt::ones<float>({n}).build(), true)).to_vector();
        std::vector<float> expected(7, 0.0f);
        for (std::int64_t i = 0; i < n; ++i) expected[static_cast<std::size_t>(i % 7)] += 1.0f;
        CHECK(counts == expected);
    });
}

TEST_CASE("scatter: gradients to the base (written positions get none) and to the values") {
    namespace g = lt::detail::graph;
    for_each_device([](lt::Device) {
        const lt::Tensor<float> base = lt::tensor<float>({1, 2, 3, 4}).realize(), values = lt::tensor<float>({5, 6, 7}).realize();
        const auto at = lt::tensor<std::int64_t>({2, -1, 0});  // the second value lands nowhere
        const auto w = lt::tensor<float>({10, 20, 30, 40});
        for (bool accumulate : {false, true}) {
            INFO("accumulate " << accumulate);
            const lt::Tensor<float> y(g::scatter(base.build(), at.build(), values.build(), accumulate));
            const std::vector<lt::Tensor<float>> d = lt::grad((y * w).sum(), {base, values});
            CHECK(d[0].to_vector() == (accumulate ? std::vector<float>{10, 20, 30, 40} : std::vector<float>{0, 20, 0, 40}));
            CHECK(d[1].to_vector() == std::vector<float>{30, 0, 10});
        }
    });
}

TEST_CASE("index: bad indices name the mistake and leave x usable") {
    for_each_device([](lt::Device) {
        const lt::Tensor<float> x = lt::arange<float>(12).reshape({3, 4}).realize();
        auto message = [](auto&& f) {
            try {
                f();
            } catch (const lt::Error& e) {
                return std::string(e.what());
            }
            return std::string("no error");
        };
        std::string m = message([&] { (void)x.index({0, 4}); });
        CHECK(m.find("index 4 is out of range for axis 1 of extent 4") != std::string::npos);
        CHECK_THROWS_AS((void)x.index({-4}), lt::IndexError);
        m = message([&] { (void)x.index({lt::Slice(), lt::tensor<std::int64_t>({0, 7})}); });
        CHECK(m.find("index 7 is out of range for axis 1 of extent 4") != std::string::npos);
        CHECK_THROWS_AS((void)x.index({lt::tensor<std::int64_t>({-5})}), lt::IndexError);
        CHECK_THROWS_AS((void)x.index({lt::tensor<float>({0.0f})}), lt::DTypeError);
        m = message([&] { (void)x.index({lt::tensor<bool>({true, false})}); });
        CHECK(m.find("mask's shape [2] does not match the shape [3]") != std::string::npos);
        m = message([&] { (void)x.index({0, 0, 0}); });
        CHECK(m.find("too many indices for a tensor of 2 dimensions") != std::string::npos);
        CHECK_THROWS_AS((void)x.index({lt::Ellipsis, 0, lt::Ellipsis}), lt::IndexError);
        CHECK_THROWS_AS((void)x.index({lt::Slice(0, 2, 0)}), lt::ValueError);
        CHECK_THROWS_AS((void)x.index({lt::tensor<std::int64_t>({0, 1}), lt::tensor<std::int64_t>({0, 1, 2})}), lt::ShapeError);
        lt::Tensor<float> y = x;
        CHECK_THROWS_AS(y.index_put({lt::tensor<std::int64_t>({0, 1})}, lt::ones<float>({3, 4})), lt::ShapeError);
        CHECK_THROWS_AS(y.index_put({lt::tensor<std::int64_t>({3})}, 1.0f), lt::IndexError);
        CHECK(x.sum().item() == 66.0f);  // nothing was written
    });
}
