// SPDX-License-Identifier: MIT
// The scheduler: how many kernels a graph becomes and why each ends, shared nodes computed
// once, several outputs in one schedule, the kernel cache, debug output, buffer lifetimes.
#include <iostream>
#include <regex>
#include <sstream>

#include "common.hpp"

namespace {

lt::Tensor<float> rand_tensor(const lt::Shape& shape, unsigned seed) { return make_tensor<float>(random_ref<float>(shape, seed)); }

}  // namespace

TEST_CASE("element-wise chains and a reduction with its producers are one kernel") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> a = rand_tensor({64, 32}, 1), b = rand_tensor({64, 32}, 2), c = rand_tensor({32}, 3);
        CHECK(lt::kernel_count(lt::schedule(lt::exp(a) * b + c * 0.5f - lt::tanh(a))) == 1);
        CHECK(lt::kernel_count(lt::schedule(lt::sum(lt::exp(a) * b))) == 1);
        CHECK(lt::kernel_count(lt::schedule(lt::mean(a * b, 1))) == 1);
        CHECK(lt::kernel_count(lt::schedule(a.sum(1, true) / 3.0f + 1.0f)) == 1);
        CHECK(lt::kernel_count(lt::schedule(lt::where(a > 0.0f, a, b.transpose(0, 1).transpose(0, 1)))) == 1);
        CHECK(lt::kernel_count(lt::schedule(lt::cast<int32_t>(a * 10.0f).cast<float>())) == 1);

        auto items = lt::schedule(lt::sum(lt::exp(a) * b));
        REQUIRE(items.size() == 1);
        CHECK(items[0].kind == lt::ScheduleItem::Kind::Kernel);
        CHECK(items[0].reason == "output");
        CHECK(items[0].ops == std::vector<std::string>{"exp", "mul", "sum"});
        CHECK(items[0].inputs == std::vector<std::string>{"float32[64, 32]", "float32[64, 32]"});
        CHECK(items[0].output == "float32[]");
    });
}

TEST_CASE("an expression has one compiled loop, for its whole tree, and it runs") {
    lt::Tensor<float> a = rand_tensor({64, 32}, 1), b = rand_tensor({64, 32}, 2);
    lt::Tensor<float> e = lt::exp(a) * b + 0.5f - lt::tanh(a);
    const lt::detail::Node& root = *e.node_ptr();
    CHECK(root.static_kernel != nullptr);
    // Operands were built without one: a loop per subexpression would be O(depth^2) code.
    REQUIRE(root.nsrc == 2);
    const lt::detail::Node& sum = *root.src[0];  // exp(a) * b + 0.5f
    REQUIRE(sum.kind == lt::detail::NodeKind::Binary);
    CHECK(sum.static_kernel == nullptr);
    REQUIRE(sum.src[0]->kind == lt::detail::NodeKind::Binary);  // exp(a) * b
    CHECK(sum.src[0]->static_kernel == nullptr);
    // On the host the kernel runs as that loop (unless compiled loops are switched off).
    const auto items = lt::schedule(e);
    REQUIRE(items.size() == 1);
    CHECK(items[0].compiled_loop == lt::static_kernels_enabled());
    // A subexpression inside a reduction, a product or a cast is fused, not compiled alone.
    CHECK(lt::schedule(lt::sum(lt::exp(a) * b))[0].compiled_loop == false);
}

TEST_CASE("softmax and layer norm from primitives are one kernel each (one pass per row)") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> x = rand_tensor({16, 100}, 4);
        lt::Tensor<float> e = lt::exp(x - x.max(1, true));
        lt::Tensor<float> softmax = e / e.sum(1, true);
        auto items = lt::schedule(softmax);
        CHECK(lt::kernel_count(items) == 1);
        CHECK(items[0].phases == 3);  // max, sum, store

        lt::Tensor<float> centered = x - x.mean(-1, true);
        lt::Tensor<float> norm = centered / lt::sqrt((centered * centered).mean(-1, true) + 1e-5f);
        CHECK(lt::kernel_count(lt::schedule(norm)) == 1);

        // Column softmax: the reduced axis is not the innermost one.
        lt::Tensor<float> ec = lt::exp(x - x.max(0, true));
        CHECK(lt::kernel_count(lt::schedule(ec / ec.sum(0, true))) == 1);
    });
}

TEST_CASE("a node used by several kernels is computed once into its own buffer") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> a = rand_tensor({8, 16}, 5);
        lt::Tensor<float> shared = lt::exp(a) + 1.0f;
        lt::Tensor<float> s = shared.sum(0);         // reduces over axis 0
        lt::Tensor<float> t = shared.max(1, true);   // reduces over axis 1
        auto items = lt::schedule({s, t});
        REQUIRE(lt::kernel_count(items) == 3);
        CHECK(items[0].ops == std::vector<std::string>{"exp", "add"});
        CHECK(items[0].reason.find("used by 2 consumers in 2 kernels") != std::string::npos);
        lt::realize({s, t});
        CHECK(s.is_realized());
        CHECK(t.is_realized());
        Ref ra = random_ref<float>({8, 16}, 5);
        Ref rs = map(ra, [](double v) { return std::exp(v) + 1; });
        check_close(s, reduce(rs, {0}, false, 0.0, [](double x, double y) { return x + y; }), 1e-5, 1e-5);
        check_close(t, reduce(rs, {1}, true, -INFINITY, ref_max), 1e-6, 1e-6);

        // Used twice inside one kernel: computed once there, no extra kernel.
        lt::Tensor<float> u = a + 2.0f;
        CHECK(lt::kernel_count(lt::schedule(u * u - u)) == 1);
        // A reduction whose result is read with a different domain gets its own kernel.
        lt::Tensor<float> colmax = a.max(0, true);
        auto mixed = lt::schedule(a.sum(1, true) + colmax.sum());
        CHECK(lt::kernel_count(mixed) == 3);
    });
}

TEST_CASE("realize of several outputs shares one schedule") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> a = rand_tensor({10, 10}, 6);
        lt::Tensor<float> base = lt::exp(a);
        lt::Tensor<float> x = base * 2.0f, y = base + 1.0f;
        auto items = lt::schedule({x, y});
        CHECK(lt::kernel_count(items) == 3);  // base once, then x and y
        lt::realize({x, y, x});
        std::vector<float> xv = x.to_vector(), yv = y.to_vector(), av = a.to_vector();
        for (std::size_t i = 0; i < av.size(); ++i) {
            CHECK(xv[i] == doctest::Approx(2 * std::exp(av[i])).epsilon(1e-6));
            CHECK(yv[i] == doctest::Approx(std::exp(av[i]) + 1).epsilon(1e-6));
        }
        // The user still holds `base`: it was computed in this schedule, so it is kept.
        CHECK(base.is_realized());
        // Already realized outputs schedule nothing.
        CHECK(lt::schedule({x, y}).empty());
        // A std::vector of tensors of one type realizes the same way.
        std::vector<lt::Tensor<float>> list{lt::exp(a) * 3.0f, lt::exp(a) - 1.0f};
        lt::realize(list);
        CHECK(list[0].is_realized());
        CHECK(list[1].is_realized());
        const std::vector<float> l0 = list[0].to_vector(), l1 = list[1].to_vector();
        for (std::size_t i = 0; i < av.size(); ++i) {
            CHECK(l0[i] == doctest::Approx(3 * std::exp(av[i])).epsilon(1e-6));
            CHECK(l1[i] == doctest::Approx(std::exp(av[i]) - 1).epsilon(1e-6));
        }
    });
}

TEST_CASE("kernels of the same structure share one compiled form") {
    for_each_device([](lt::Device d) {
        auto& backend = lt::detail::backend_for(d);
        auto run = [](unsigned seed) {
            lt::Tensor<float> a = rand_tensor({33, 17}, seed), b = rand_tensor({33, 17}, seed + 1);
            return (a * b + 3.0f).realize();
        };
        run(10);
        const std::size_t cached = backend.cached_kernels();
        lt::Tensor<float> r = run(20);
        CHECK(backend.cached_kernels() == cached);
        Ref ra = random_ref<float>({33, 17}, 20), rb = random_ref<float>({33, 17}, 21);
        check_close(r, zip(ra, rb, [](double x, double y) { return x * y + 3; }), 1e-6, 1e-6);
        // Contiguous tensors of another shape with the same element count normalize to the same kernel.
        lt::Tensor<float> a = rand_tensor({561}, 30), b = rand_tensor({561}, 31);
        (a * b + 3.0f).realize();
        CHECK(backend.cached_kernels() == cached);
        // A different constant is the same kernel: the value is a parameter of it.
        lt::Tensor<float> r4 = (a * b + 4.0f).realize();
        CHECK(backend.cached_kernels() == cached);
        Ref xa = random_ref<float>({561}, 30), xb = random_ref<float>({561}, 31);
        check_close(r4, zip(xa, xb, [](double x, double y) { return x * y + 4; }), 1e-6, 1e-6);
    });
}

TEST_CASE("LAZYTENSOR_DEBUG prints the schedule, the IR and kernel times") {
    lt::Tensor<float> x = rand_tensor({4, 8}, 7);
    lt::Tensor<float> shared = x * 2.0f;
    lt::Tensor<float> out1 = shared.sum(0), out2 = shared.sum(1);
    std::string one = debug_output(1, [&] { lt::realize({out1, out2}); });
    CHECK(one.find("schedule: 3 kernels for 2 outputs") != std::string::npos);
    CHECK(one.find("used by 2 consumers in 2 kernels") != std::string::npos);
    CHECK(one.find("(ends: output)") != std::string::npos);
    CHECK(one.find("float32[4, 8]") != std::string::npos);
    CHECK(one.find("phase") == std::string::npos);

    std::string two = debug_output(2, [&] { (x + 1.0f).realize(); });
    CHECK(two.find("phase 0: store") != std::string::npos);
    CHECK(two.find("load p0") != std::string::npos);

    std::string three = debug_output(3, [&] { (x - 1.0f).realize(); });
    // "  kernel 0: 0.0123 ms[ on the device], 0.0456 GB/s": a time and the bandwidth it implies.
    INFO(three);
    CHECK(std::regex_search(three, std::regex(R"(kernel 0: [0-9.e+-]+ ms( on the device)?, [0-9.e+-]+ GB/s)")));
    CHECK(debug_output(0, [&] { (x * 5.0f).realize(); }).empty());
}

TEST_CASE("intermediate buffers are freed once no longer needed") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> a = rand_tensor({32, 32}, 8);
        std::weak_ptr<lt::detail::Node> inner;
        std::weak_ptr<lt::Buffer> inner_buffer;
        lt::Tensor<float> out;
        {
            lt::Tensor<float> shared = lt::exp(a);  // read by two kernels: materialized
            inner = shared.node_ptr();
            out = shared.sum(0, true) + shared.max(1, true);
        }
        out.realize();
        CHECK(out.is_realized());
        CHECK(inner.expired());  // nobody holds it any more: node and buffer are gone
        // A realized tensor's buffer goes with its last handle.
        lt::Tensor<float> b = (a + 1.0f).realize();
        std::weak_ptr<lt::Buffer> buf = b.node_ptr()->buffer;
        lt::Tensor<float> view = b.transpose(0, 1).realize();
        b = lt::Tensor<float>();
        CHECK_FALSE(buf.expired());  // the view still uses it
        view = lt::Tensor<float>();
        CHECK(buf.expired());
    });
}

TEST_CASE("realizing a realized tensor, and a constant") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> c = lt::full<float>({3, 2}, 1.5f);
        CHECK(lt::kernel_count(lt::schedule(c)) == 1);
        c.realize();
        CHECK(c.is_realized());
        CHECK(c.to_vector() == std::vector<float>(6, 1.5f));
        c.realize();  // nothing left to do
        CHECK(lt::schedule({c}).empty());
    });
}

TEST_CASE("a kernel reads at most 64 buffers and takes at most 125 arguments: a sum of 200 scaled tensors is several kernels") {
    for_each_device([](lt::Device) {
        std::vector<lt::Tensor<float>> xs;
        for (int i = 0; i < 200; ++i) xs.push_back(lt::full<float>({3}, static_cast<float>(i)).realize());
        lt::Tensor<float> total = xs[0];
        for (int i = 1; i < 200; ++i) total = total + xs[static_cast<std::size_t>(i)] * 2.0f;
        auto items = lt::schedule(total);
        // 200 buffers and 199 scalars: 125 arguments a kernel.
        CHECK(lt::kernel_count(items) == 4);
        for (auto& item : items) CHECK(item.inputs.size() <= 64);
        for (auto& item : items) CHECK(item.inputs.size() + static_cast<std::size_t>(item.scalars) <= 125);
        CHECK(items[0].scalars > 0);
        CHECK(total.to_vector() == std::vector<float>(3, 2.0f * (199 * 200 / 2)));
        // 200 buffers alone: 64 a kernel.
        lt::Tensor<float> plain = xs[0];
        for (int i = 1; i < 200; ++i) plain = plain + xs[static_cast<std::size_t>(i)];
        items = lt::schedule(plain);
        CHECK(lt::kernel_count(items) == 4);
        for (auto& item : items) CHECK(item.inputs.size() <= 64);
        CHECK(items[0].reason.find("a kernel reads at most 64 buffers") != std::string::npos);
        CHECK(plain.to_vector() == std::vector<float>(3, 199 * 200 / 2));
        // One buffer read 200 times with 200 scalar values: 125 arguments a kernel.
        lt::Tensor<float> x = xs[1], scaled = x * 0.0f;
        for (int i = 1; i < 200; ++i) scaled = scaled + x * static_cast<float>(i);
        items = lt::schedule(scaled);
        CHECK(lt::kernel_count(items) >= 2);
        for (auto& item : items) CHECK(item.inputs.size() + static_cast<std::size_t>(item.scalars) <= 125);
        CHECK(items[0].reason.find("at most 125 arguments (buffers and scalar values)") != std::string::npos);
        CHECK(scaled.to_vector() == std::vector<float>(3, 199 * 200 / 2));
        CHECK(total.to_vector() == std::vector<float>(3, 2.0f * (199 * 200 / 2)));
        // The widest arguments: int64 scalars into a reduction split over work-groups (its output,
        // scratch and count of work-items too: 1024 bytes, OpenCL's least guaranteed).
        lt::Tensor<std::int64_t> w = lt::arange<std::int64_t>(0, 100000);
        lt::Tensor<std::int64_t> shifted = w;
        for (std::int64_t i = 1; i <= 124; ++i) shifted = shifted + i;  // a buffer and 124 scalars: one kernel
        CHECK(lt::kernel_count(lt::schedule(shifted.sum())) == 1);
        const std::int64_t want = std::int64_t(99999) * 100000 / 2 + std::int64_t(100000) * (124 * 125 / 2);
        CHECK(shifted.sum().item() == want);
    });
}

TEST_CASE("the 64-buffer limit counts distinct buffers: a sum of 50 squares reads 50 buffers, each twice, in one kernel") {
    for_each_device([](lt::Device) {
        std::vector<lt::Tensor<float>> xs;
        for (int i = 0; i < 50; ++i) xs.push_back(lt::full<float>({4}, static_cast<float>(i)).realize());
        lt::Tensor<float> squares = xs[0] * xs[0];
        for (int i = 1; i < 50; ++i) squares = squares + xs[static_cast<std::size_t>(i)] * xs[static_cast<std::size_t>(i)];
        auto items = lt::schedule(squares);
        REQUIRE(items.size() == 1);
        CHECK(items[0].inputs.size() == 50);
        // One tensor read through 100 views (each a path of its own) is one buffer.
        lt::Tensor<float> x = lt::arange<float>(0, 8).realize(), flips = x.flip(0);
        for (int i = 1; i < 100; ++i) flips = flips + (i % 2 ? x : x.flip(0));
        items = lt::schedule(flips);
        REQUIRE(items.size() == 1);
        CHECK(items[0].inputs.size() == 1);
        CHECK(squares.to_vector() == std::vector<float>(4, 49.0f * 50 * 99 / 6));
        CHECK(flips.to_vector() == std::vector<float>(8, 50.0f * 7));
        // 70 distinct buffers, each read twice, still cut at 64.
        lt::Tensor<float> many = xs[0] * xs[0];
        for (int i = 1; i < 70; ++i) {
            const lt::Tensor<float> xi = lt::full<float>({4}, 1.0f).realize();
            many = many + xi * xi;
        }
        items = lt::schedule(many);
        CHECK(lt::kernel_count(items) == 2);
        for (auto& item : items) CHECK(item.inputs.size() <= 64);
        CHECK(many.to_vector() == std::vector<float>(4, 69.0f));
    });
}

TEST_CASE("very deep lazy chains realize and free without deep recursion") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> x = lt::tensor<float>({1.0f, 2.0f});
        lt::Tensor<float> y = x;
        for (int i = 0; i < 20000; ++i) y = y + 1.0f;
        auto items = lt::schedule(y);
        // 20000 additions of a scalar: 125 arguments a kernel (a buffer and 124 scalar values).
        CHECK(lt::kernel_count(items) == (20000 + 123) / 124);
        CHECK(items[0].reason.find("at most 125 arguments") != std::string::npos);
        CHECK(y.to_vector() == std::vector<float>{20001.0f, 20002.0f});
        // A million-node lazy chain is released without realizing it.
        lt::Tensor<float> z = x;
        for (int i = 0; i < 1000000; ++i) z = z * 1.0f;
        z = lt::Tensor<float>();
        CHECK(x.to_vector() == std::vector<float>{1.0f, 2.0f});
    });
}

TEST_CASE("realizing a graph of the same structure again reuses its plan") {
    for_each_device([](lt::Device) {
        auto& plans = lt::detail::plan_cache();
        auto run = [](unsigned seed) {
            lt::Tensor<float> a = rand_tensor({40, 30}, seed), b = rand_tensor({30}, seed + 1);
            lt::Tensor<float> e = lt::exp(a - a.max(1, true));
            return std::make_pair((e / e.sum(1, true) + b).realize(), std::make_pair(a, b));
        };
        run(50);
        const std::size_t before = plans.made();
        auto [result, inputs] = run(60);
        CHECK(plans.made() == before);
        Ref ra = random_ref<float>({40, 30}, 60), rb = random_ref<float>({30}, 61);
        Ref mx = reduce(ra, {1}, true, -INFINITY, ref_max);
        Ref e = map(zip(ra, mx, [](double x, double m) { return x - m; }), [](double v) { return std::exp(v); });
        Ref sm = zip(e, reduce(e, {1}, true, 0.0, [](double x, double y) { return x + y; }), [](double x, double y) { return x / y; });
        check_close(result, zip(sm, rb, [](double x, double y) { return x + y; }), 1e-5, 1e-6);
        // Same structure, but an intermediate is now held by the caller: it is kept this time.
        lt::Tensor<float> a = rand_tensor({40, 30}, 70);
        lt::Tensor<float> shared = lt::exp(a);
        lt::Tensor<float> s1 = shared.sum(0), s2 = shared.sum(1);
        lt::realize({s1, s2});
        CHECK(shared.is_realized());
        lt::Tensor<float> a2 = rand_tensor({40, 30}, 71);
        lt::Tensor<float> t1, t2;
        {
            lt::Tensor<float> unheld = lt::exp(a2);
            t1 = unheld.sum(0);
            t2 = unheld.sum(1);
        }
        const std::size_t plans_before = plans.made();
        lt::realize({t1, t2});
        CHECK(plans.made() == plans_before);
        CHECK(t1.is_realized());
        CHECK(t2.to_vector().size() == 40);
        // A different layout of an input is a different plan.
        lt::Tensor<float> c = rand_tensor({30, 40}, 72);
        (lt::exp(c.transpose(0, 1)) * 2.0f).realize();
        const std::size_t n = plans.made();
        (lt::exp(rand_tensor({40, 30}, 73)) * 2.0f).realize();
        CHECK(plans.made() == n + 1);
    });
}

TEST_CASE("the kernel cache keeps the most recently used kernels") {
    for_each_device([](lt::Device d) {
        auto& backend = lt::detail::backend_for(d);
        const std::size_t capacity = backend.cache_capacity();
        backend.set_cache_capacity(2);
        CHECK(backend.cached_kernels() <= 2);
        lt::Tensor<float> a = rand_tensor({17}, 90);
        for (int c = 0; c < 5; ++c) {
            // Fresh shapes each time: new plans and new kernels.
            lt::Tensor<float> x = rand_tensor({19 + c}, 91);
            CHECK((x * 3.0f + 1.0f).sum().item() == doctest::Approx(3.0 * x.sum().item() + (19 + c)).epsilon(1e-5));
        }
        CHECK(backend.cached_kernels() == 2);
        backend.set_cache_capacity(capacity);
        CHECK((a + 1.0f).to_vector().size() == 17);
    });
}

namespace {

struct ScheduleCost {
    std::size_t kernels = 0;
    std::int64_t work = 0;
};

ScheduleCost cost_of(const std::vector<lt::ScheduleItem>& items) {
    ScheduleCost c;
    c.kernels = lt::kernel_count(items);
    for (const auto& item : items) c.work += item.work;
    return c;
}

// u <- pad(u[:-2] + u[2:], 1): every step reads the last one through two shifted maps.
lt::Tensor<float> stencil_1d(const lt::Tensor<float>& u) { return lt::pad(u.slice(0, 0, -2) + u.slice(0, 2, {}), {{1, 1}}, 0.0f); }

std::vector<float> stencil_1d_reference(std::vector<float> u, int steps) {
    for (int k = 0; k < steps; ++k) {
        std::vector<float> next(u.size(), 0.0f);
        for (std::size_t i = 1; i + 1 < u.size(); ++i) next[i] = u[i - 1] + u[i + 1];
        u.swap(next);
    }
    return u;
}

// A 2-D step of shifted slices, a pad back to the shape and a flip: v = pad(0.25 * (up + down +
// left + right), 1); u <- 0.5 * (v + v.flip(0)).
lt::Tensor<float> stencil_2d(const lt::Tensor<float>& u) {
    lt::Tensor<float> v = lt::pad(0.25f * (u.slice(0, 0, -2).slice(1, 1, -1) + u.slice(0, 2, {}).slice(1, 1, -1) +
                                           u.slice(0, 1, -1).slice(1, 0, -2) + u.slice(0, 1, -1).slice(1, 2, {})),
                                  {{1, 1}, {1, 1}}, 0.0f);
    return 0.5f * (v + v.flip(0));
}

// In float, in the graph's order of operations.
std::vector<float> stencil_2d_reference(std::vector<float> u, std::int64_t rows, std::int64_t cols, int steps) {
    auto at = [&](const std::vector<float>& a, std::int64_t i, std::int64_t j) { return a[static_cast<std::size_t>(i * cols + j)]; };
    for (int k = 0; k < steps; ++k) {
        std::vector<float> v(u.size(), 0.0f), next(u.size());
        for (std::int64_t i = 1; i + 1 < rows; ++i)
            for (std::int64_t j = 1; j + 1 < cols; ++j)
                v[static_cast<std::size_t>(i * cols + j)] =
                    0.25f * (at(u, i - 1, j) + at(u, i + 1, j) + at(u, i, j - 1) + at(u, i, j + 1));
        for (std::int64_t i = 0; i < rows; ++i)
            for (std::int64_t j = 0; j < cols; ++j)
                next[static_cast<std::size_t>(i * cols + j)] = 0.5f * (at(v, i, j) + at(v, rows - 1 - i, j));
        u.swap(next);
    }
    return u;
}

}  // namespace

TEST_CASE("a lazy stencil loop costs work linear in its steps (a node read through several maps is not recomputed per read)") {
    for_each_device([](lt::Device) {
        // 1-D, realized only at the end: values against a plain loop, kernels and work linear.
        const Ref r1 = random_ref<float>({257}, 11);
        const std::vector<float> start(r1.v.begin(), r1.v.end());
        lt::Tensor<float> u0 = lt::tensor<float>(start, {257});
        ScheduleCost cost[2];
        int which = 0;
        for (int steps : {10, 40}) {
            lt::Tensor<float> u = u0;
            for (int k = 0; k < steps; ++k) u = stencil_1d(u);
            cost[which++] = cost_of(lt::schedule(u));
            const std::vector<float> want = stencil_1d_reference(start, steps), got = u.to_vector();
            REQUIRE(got.size() == want.size());
            for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
        }
        INFO("kernels " << cost[0].kernels << " and " << cost[1].kernels << ", work " << cost[0].work << " and " << cost[1].work);
        CHECK(cost[0].kernels >= 2);  // 10 steps are not one kernel: that would recompute 2^10 times
        CHECK(cost[1].kernels <= 4 * cost[0].kernels + 1);
        CHECK(cost[1].work <= 5 * cost[0].work);
        // Each step is at most kMaxRecomputations evaluations of its few instructions per element.
        CHECK(cost[1].work <= 40 * 2 * 16 * 257);

        // 2-D with pad, shifted slices and a flip.
        const lt::Shape shape{13, 11};
        const Ref r = random_ref<float>(shape, 12);
        lt::Tensor<float> v0 = make_tensor<float>(r);
        which = 0;
        for (int steps : {10, 40}) {
            lt::Tensor<float> u = v0;
            for (int k = 0; k < steps; ++k) u = stencil_2d(u);
            cost[which++] = cost_of(lt::schedule(u));
            const std::vector<float> want = stencil_2d_reference(std::vector<float>(r.v.begin(), r.v.end()), shape[0], shape[1], steps);
            const std::vector<float> got = u.to_vector();
            REQUIRE(got.size() == want.size());
            for (std::size_t i = 0; i < got.size(); ++i) CHECK(std::fabs(got[i] - want[i]) <= 1e-6f + 1e-5f * std::fabs(want[i]));
        }
        INFO("2-D: kernels " << cost[0].kernels << " and " << cost[1].kernels << ", work " << cost[0].work << " and " << cost[1].work);
        CHECK(cost[1].kernels <= 4 * cost[0].kernels + 1);
        CHECK(cost[1].work <= 5 * cost[0].work);
    });
}

TEST_CASE("the recomputation rule: why a node is materialized, and what still fuses") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> x = rand_tensor({64, 48}, 21), y = rand_tensor({64, 48}, 22);
        // One operation over buffers is recomputed per read, whatever the fan-out.
        lt::Tensor<float> e = lt::exp(x);
        CHECK(lt::kernel_count(lt::schedule(e.slice(0, 0, -2) + e.slice(0, 1, -1) + e.slice(0, 2, {}))) == 1);
        // A node of several operations read through two maps: recomputed twice, still one kernel.
        lt::Tensor<float> f = lt::exp(x) * y + 1.0f;
        CHECK(lt::kernel_count(lt::schedule(f + f.flip(0))) == 1);
        // Read the same way twice: computed once (no recomputation to avoid).
        CHECK(lt::kernel_count(lt::schedule(f * 0.5f + lt::sqrt(f))) == 1);
        // Three maps: materialized, and the reason says why.
        const auto items = lt::schedule(f.slice(0, 0, -2) + f.slice(0, 1, -1) + f.slice(0, 2, {}));
        REQUIRE(lt::kernel_count(items) == 2);
        CHECK(items[0].reason == "read through 3 index maps in one kernel: materialized to avoid recomputation");
        CHECK(items[0].output == "float32[64, 48]");
        // Softmax and layer norm of a computed input stay one kernel: reductions are phases, and
        // each phase reads the input at one map.
        lt::Tensor<float> z = x * y + 1.0f;
        lt::Tensor<float> ez = lt::exp(z - z.max(1, true));
        CHECK(lt::kernel_count(lt::schedule(ez / ez.sum(1, true))) == 1);
        // The LAZYTENSOR_DEBUG listing gives the same reason.
        const auto three = f.slice(1, 0, -2) + f.slice(1, 1, -1) + f.slice(1, 2, {});
        CHECK(lt::schedule(three)[0].reason.find("read through 3 index maps") != std::string::npos);
    });
}
