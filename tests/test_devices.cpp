// SPDX-License-Identifier: MIT
// Several devices at once: copies between OpenCL devices and tensors sharded over devices (realizes
// on several devices at the same time are tested in test_threads.cpp, which also runs under TSan). Runs on every device lt::devices() lists (in CI:
// the host and PoCL's two devices, POCL_DEVICES="pthread pthread"); the `devices_staged` test
// runs it again with LAZYTENSOR_OPENCL_SHARED_CONTEXT=off, so that copies between OpenCL devices
// go through host memory instead of clEnqueueCopyBuffer.
#include "common.hpp"

namespace {

std::vector<lt::Device> opencl_devices() {
    std::vector<lt::Device> out;
    for (const auto& info : lt::devices())
        if (info.device.kind == lt::Device::Kind::OpenCL) out.push_back(info.device);
    return out;
}

bool two_opencl_devices() { return opencl_devices().size() >= 2; }

/// Every device: the host first, then the OpenCL devices.
std::vector<lt::Device> all_devices() {
    std::vector<lt::Device> out{lt::Device::host()};
    for (lt::Device d : opencl_devices()) out.push_back(d);
    return out;
}

bool expect_direct_copies() {
    const char* e = std::getenv("LAZYTENSOR_OPENCL_SHARED_CONTEXT");
    return !(e && std::string(e) == "off");
}

}  // namespace

// --------------------------------------------------------------------------------------- copies

TEST_CASE("a copy between two OpenCL devices has every value of every dtype" * doctest::skip(!two_opencl_devices())) {
    const lt::Device a = opencl_devices()[0], b = opencl_devices()[1];
    auto& from = lt::detail::opencl::opencl_backend(a.index);
    auto& to = lt::detail::opencl::opencl_backend(b.index);
    CHECK(lt::detail::opencl::copies_directly(from, to) == expect_direct_copies());

    const Ref r = random_ref<float>({37, 29}, 5);
    lt::Tensor<float> x = make_tensor<float>(r, a);
    lt::Tensor<float> y = x.to(b);
    CHECK(y.device() == b);
    CHECK(y.is_realized());
    check_close(y, r, 0, 0);
    check_close(y.to(a), r, 0, 0);  // and back

    // Views and lazy expressions move as their values (made contiguous on their own device first).
    check_close(x.transpose(0, 1).to(b), permute(r, {1, 0}), 0, 0);
    check_close(x.slice(0, 3, 20).to(b), ref_of({17, 29}, [&](const std::vector<std::int64_t>& i) { return r.at({i[0] + 3, i[1]}); }), 0, 0);
    check_close(x.slice(0, 5, 6).reshape({29}).to(b), ref_of({29}, [&](const std::vector<std::int64_t>& i) { return r.at({5, i[0]}); }), 0, 0);
    check_close((lt::exp(x) * 2.0f).to(b), map(r, [](double v) { return std::exp(v) * 2.0; }), 1e-6);

    lt::Tensor<bool> flags = lt::tensor<bool>({true, false, true, true}, a).to(b);
    CHECK(flags.to_vector() == std::vector<bool>{true, false, true, true});
    const std::vector<std::int64_t> big{-(std::int64_t(1) << 62), 7, std::numeric_limits<std::int64_t>::max()};
    CHECK(lt::tensor<std::int64_t>(big, {3}, a).to(b).to_vector() == big);
    CHECK(lt::tensor<std::uint8_t>({0, 255, 7}, {3}, a).to(b).to_vector() == std::vector<std::uint8_t>{0, 255, 7});
    CHECK(lt::tensor<std::int32_t>({-5, 1 << 30}, {2}, a).to(b).to_vector() == std::vector<std::int32_t>{-5, 1 << 30});
    CHECK(lt::tensor<double>({1e300, -0.0}, {2}, a).to(b).to_vector() == std::vector<double>{1e300, -0.0});
    CHECK(lt::Tensor<float>(lt::zeros<float>({0, 3}, a)).to(b).shape() == lt::Shape{0, 3});
    CHECK(lt::Tensor<float>(lt::full<float>({}, 2.5f, a)).to(b).to_vector() == std::vector<float>{2.5f});
}

TEST_CASE("a large copy between OpenCL devices arrives whole, in order, through several staging chunks" *
          doctest::skip(!two_opencl_devices())) {
    const lt::Device a = opencl_devices()[0], b = opencl_devices()[1];
    const std::int64_t n = (std::int64_t(40) << 20) / 4 + 123;  // 40 MiB and a bit: three 16 MiB chunks, the last partial
    lt::Tensor<std::int32_t> x = lt::arange<std::int32_t>(0, n, 1, a);
    lt::Tensor<std::int32_t> x_copy = x.to(b);
    // The values, checked on the destination device itself (no second copy involved).
    lt::Tensor<std::int32_t> expected = lt::arange<std::int32_t>(0, n, 1, b);
    CHECK(lt::Tensor<bool>(lt::all(x_copy == expected)).item() == true);
    // The copy of a tensor computed just before it waits for that tensor.
    lt::Tensor<std::int32_t> y = x * 3 + 1;
    lt::Tensor<std::int32_t> y_copy = y.to(b);
    CHECK(lt::Tensor<bool>(lt::all(y_copy == expected * 3 + 1)).item() == true);
    CHECK(y_copy.slice(0, n - 2, {}).to_vector() == std::vector<std::int32_t>{static_cast<std::int32_t>((n - 2) * 3 + 1),
                                                                                 static_cast<std::int32_t>((n - 1) * 3 + 1)});
}

TEST_CASE("a copy keeps its values when the source is freed and its memory reused at once" *
          doctest::skip(!two_opencl_devices())) {
    const lt::Device a = opencl_devices()[0], b = opencl_devices()[1];
    const std::int64_t n = 1 << 20;
    std::vector<lt::Tensor<float>> copies;
    for (int round = 0; round < 8; ++round) {
        lt::Tensor<float> copy;
        {
            lt::Tensor<float> source = lt::full<float>({n}, static_cast<float>(round), a);
            source.realize();
            copy = source.to(b);
        }  // the source's memory returns to a's cache ...
        lt::Tensor<float> overwrite = lt::full<float>({n}, -1.0f, a);  // ... and is taken again, and written
        overwrite.realize();
        copies.push_back(copy);
    }
    for (int round = 0; round < 8; ++round) {
        INFO("round " << round);
        CHECK(lt::Tensor<float>(lt::min(copies[static_cast<std::size_t>(round)])).item() == static_cast<float>(round));
        CHECK(lt::Tensor<float>(lt::max(copies[static_cast<std::size_t>(round)])).item() == static_cast<float>(round));
    }
}

TEST_CASE("a staged read (the collectives' copy to pinned host memory) reads the buffer as it was when queued" *
          doctest::skip(opencl_devices().empty())) {
    for (lt::Device d : opencl_devices()) {
        INFO(d.str());
        auto& backend = lt::detail::opencl::opencl_backend(d.index);
        const std::size_t n = std::size_t(1) << 20, bytes = n * sizeof(float);
        lt::BufferPtr buffer = backend.allocate(lt::DType::Float32, static_cast<std::int64_t>(n));
        std::vector<float> values(n);
        for (std::size_t i = 0; i < n; ++i) values[i] = static_cast<float>(i);
        backend.write(*buffer, 0, values.data(), bytes);
        std::shared_ptr<void> staged = backend.host_staging(bytes - 16);
        // From byte 16 on; then the buffer is overwritten at once on the device's queue: the read
        // (on the transfer queue) must still see the old values.
        auto done = backend.read_async(*buffer, 16, staged.get(), bytes - 16);
        const std::vector<float> minus(n, -1.0f);
        backend.write(*buffer, 0, minus.data(), bytes);
        done->wait();
        const float* got = static_cast<const float*>(staged.get());
        std::size_t wrong = 0;
        for (std::size_t i = 0; i + 4 < n; ++i) wrong += got[i] != static_cast<float>(i + 4);
        CHECK(wrong == 0);
        // The pool hands a returned block out again.
        void* block = staged.get();
        done.reset();
        staged.reset();
        CHECK(backend.host_staging(bytes - 16).get() == block);
    }
}

TEST_CASE("host and OpenCL tensors move both ways with one copy, views included") {
    for (lt::Device d : opencl_devices()) {
        INFO("device: " << d.str());
        const Ref r = random_ref<double>({6, 5}, 9);
        lt::Tensor<double> h = make_tensor<double>(r, lt::Device::host());
        check_close(h.to(d), r, 0, 0);
        check_close(h.slice(0, 2, 4).to(d), ref_of({2, 5}, [&](const std::vector<std::int64_t>& i) { return r.at({i[0] + 2, i[1]}); }), 0, 0);
        check_close(h.transpose(0, 1).to(d).to(lt::Device::host()), permute(r, {1, 0}), 0, 0);
        lt::Tensor<double> g = h.to(d);
        check_close(g.slice(1, 1, 3).to(lt::Device::host()),
                    ref_of({6, 2}, [&](const std::vector<std::int64_t>& i) { return r.at({i[0], i[1] + 1}); }), 0, 0);
    }
}

// --------------------------------------------------------------------------------------- shards

namespace {

/// Sharding layouts to test: every device alone, all devices evenly, uneven weights, and one
/// device getting nothing.
std::vector<std::pair<std::vector<lt::Device>, std::vector<double>>> layouts() {
    const std::vector<lt::Device> all = all_devices();
    std::vector<std::pair<std::vector<lt::Device>, std::vector<double>>> out;
    out.push_back({{all.back()}, {1.0}});
    out.push_back({all, std::vector<double>(all.size(), 1.0)});
    std::vector<double> uneven;
    for (std::size_t i = 0; i < all.size(); ++i) uneven.push_back(1.0 + 2.0 * static_cast<double>(i));
    out.push_back({all, uneven});
    std::vector<double> one_empty(all.size(), 1.0);
    one_empty[0] = 0.0;
    if (all.size() > 1) out.push_back({all, one_empty});
    return out;
}

}  // namespace

TEST_CASE("sharded element-wise expressions equal the single-device result") {
    const Ref ra = random_ref<float>({23, 6}, 1), rb = random_ref<float>({23, 6}, 2), rc = random_ref<float>({6}, 3);
    lt::Tensor<float> a = make_tensor<float>(ra, lt::Device::host()), b = make_tensor<float>(rb, lt::Device::host());
    lt::Tensor<float> c = make_tensor<float>(rc, lt::Device::host());
    const Ref chain = zip(zip(map(ra, [](double x) { return std::exp(x); }), rb, [](double x, double y) { return x * y; }),
                          map(ra, [](double x) { return std::tanh(x); }), [](double x, double y) { return x - y; });
    for (int axis : {0, 1}) {
        for (const auto& layout : layouts()) {
            // Named references, not a structured binding: INFO's lambda captures them, and C++17
            // lets no lambda capture a structured binding (GCC accepts it, Clang does not).
            const std::vector<lt::Device>& devices = layout.first;
            const std::vector<double>& weights = layout.second;
            INFO("axis " << axis << ", " << devices.size() << " devices, first weight " << weights[0]);
            auto sa = lt::shard(a, devices, axis, weights);
            auto sb = lt::shard(b, devices, axis, weights);
            REQUIRE(sa.devices() == devices);
            std::int64_t covered = 0;
            for (std::size_t i = 0; i < devices.size(); ++i) {
                CHECK(sa.shard(i).device() == devices[i]);
                covered += sa.extents()[i];
            }
            CHECK(covered == a.shape()[static_cast<std::size_t>(axis)]);
            if (weights[0] == 0.0) CHECK(sa.extents()[0] == 0);
            auto y = lt::exp(sa) * sb - lt::tanh(sa);
            CHECK(y.shape() == lt::Shape{23, 6});
            check_close(y.gather(lt::Device::host()), chain, 1e-5, 1e-6);
            // A replicated bias: sliced where it spans the split axis, broadcast where it does not.
            auto with_bias = sa + lt::replicate(c, devices);
            check_close(with_bias.gather(devices.back()), zip(ra, broadcast(rc, {23, 6}), [](double x, double y) { return x + y; }));
            // Scalars on either side, comparisons, where.
            check_close((2.0f - sa * 0.5f).gather(lt::Device::host()), map(ra, [](double x) { return 2.0 - x * 0.5; }));
            auto positive = lt::where(sa > 0.0f, sa, 0.0f);
            check_close(positive.gather(lt::Device::host()), map(ra, [](double x) { return x > 0 ? x : 0.0; }));
            check_close(lt::sigmoid(sa).gather(lt::Device::host()), map(ra, [](double x) { return 1.0 / (1.0 + std::exp(-x)); }));
            // The composites with scalar arguments.
            check_close(lt::clamp(sa, -0.5f, 0.75f).gather(lt::Device::host()),
                        map(ra, [](double x) { return std::min(std::max(x, -0.5), 0.75); }), 0, 0);
            check_close(lt::softplus(sa).gather(lt::Device::host()), map(ra, [](double x) { return std::log1p(std::exp(x)); }), 1e-5);
            check_close(lt::softplus(sa, 2.0).gather(lt::Device::host()),
                        map(ra, [](double x) { return std::log1p(std::exp(2 * x)) / 2; }), 1e-5);
            check_close(lt::elu(sa, 0.5).gather(lt::Device::host()), map(ra, [](double x) { return x > 0 ? x : 0.5 * std::expm1(x); }),
                        1e-5);
            check_close(lt::leaky_relu(sa, 0.1).gather(lt::Device::host()), map(ra, [](double x) { return x > 0 ? x : 0.1 * x; }),
                        1e-6);
            // A softmax along the axis that is not split: shard by shard.
            const int other = 1 - axis;
            const Ref e = map(ra, [](double x) { return std::exp(x); });
            const Ref totals = reduce(e, {other}, true, 0.0, ref_add);
            const lt::Shape full{23, 6};
            check_close(lt::softmax(sa, other).gather(lt::Device::host()),
                        zip(e, broadcast(totals, full), [](double x, double t) { return x / t; }), 1e-5);
        }
    }
}

TEST_CASE("sharded reductions over every axis, the split one included, equal the single-device result") {
    const Ref r = random_ref<float>({5, 7, 4}, 21, 0.5, 1.5);
    lt::Tensor<float> x = make_tensor<float>(r, lt::Device::host());
    for (int split = 0; split < 3; ++split) {
        for (const auto& layout : layouts()) {
            const std::vector<lt::Device>& devices = layout.first;
            const std::vector<double>& weights = layout.second;
            auto s = lt::shard(x, devices, split, weights);
            for (int axis = 0; axis < 3; ++axis) {
                for (bool keepdim : {false, true}) {
                    INFO("split " << split << ", axis " << axis << ", keepdim " << keepdim << ", " << devices.size()
                                  << " devices, first weight " << weights[0]);
                    auto sum = lt::sum(s, axis, keepdim);
                    CHECK(sum.replicated() == (axis == split));
                    check_close(sum.gather(lt::Device::host()), reduce(r, {axis}, keepdim, 0.0, ref_add), 1e-5);
                    check_close(lt::max(s, axis, keepdim).gather(lt::Device::host()), reduce(r, {axis}, keepdim, -INFINITY, ref_max));
                    check_close(lt::min(s, axis, keepdim).gather(lt::Device::host()), reduce(r, {axis}, keepdim, INFINITY, ref_min));
                    check_close(lt::prod(s, axis, keepdim).gather(lt::Device::host()),
                                reduce(r, {axis}, keepdim, 1.0, [](double a, double b) { return a * b; }), 1e-4);
                    const Ref mean = map(reduce(r, {axis}, keepdim, 0.0, ref_add),
                                         [&](double v) { return v / static_cast<double>(r.shape[static_cast<std::size_t>(axis)]); });
                    check_close(lt::mean(s, axis, keepdim).gather(lt::Device::host()), mean, 1e-5);
                }
            }
            // Everything at once, and a normalization by the all-reduced total.
            double total = 0;
            for (double v : r.v) total += v;
            auto whole = lt::sum(s);
            CHECK(whole.shape() == lt::Shape{});
            CHECK(whole.gather(lt::Device::host()).item() == doctest::Approx(total).epsilon(1e-5));
            CHECK(whole.item() == doctest::Approx(total).epsilon(1e-5));
            // An empty axis list means all axes, as for every reduction.
            CHECK(lt::sum(s, lt::Axes{}).item() == doctest::Approx(total).epsilon(1e-5));
            auto kept = lt::sum(s, lt::Axes{}, true);
            CHECK(kept.shape() == lt::Shape{1, 1, 1});
            CHECK(kept.item() == doctest::Approx(total).epsilon(1e-5));
            CHECK(lt::mean(s, lt::Axes{}).item() == doctest::Approx(total / 140.0).epsilon(1e-5));
            for (std::size_t i = 0; i < devices.size(); ++i) CHECK(whole.shard(i).device() == devices[i]);
            check_close((s / whole).gather(lt::Device::host()), map(r, [&](double v) { return v / total; }), 1e-5);
        }
    }
}

TEST_CASE("sharded partials meet on the host when small and on the first device when large") {
    // Rows of 65,536 partials (the largest the host combines) and of 65,537 (the first device's
    // kernel): both all-reduce to the column sums, exact in int64.
    const std::vector<lt::Device> all = all_devices();
    for (std::int64_t width : {std::int64_t(1) << 16, (std::int64_t(1) << 16) + 1}) {
        INFO("width " << width);
        lt::Tensor<std::int64_t> x = lt::arange<std::int64_t>(0, static_cast<double>(3 * width), 1, lt::Device::host()).reshape({3, width});
        auto total = lt::sum(lt::shard(x, all, 0), 0);
        CHECK(total.replicated());
        for (std::size_t i = 0; i < all.size(); ++i) {
            CHECK(total.shard(i).device() == all[i]);
            const std::vector<std::int64_t> got = total.shard(i).to_vector();
            REQUIRE(got.size() == static_cast<std::size_t>(width));
            CHECK(got[0] == 3 * width);                          // 0 + width + 2 width
            CHECK(got.back() == 3 * (width - 1) + 3 * width);    // (w - 1) + (2w - 1) + (3w - 1)
        }
    }
}

TEST_CASE("a max over the split axis propagates NaN and skips empty shards; integer sums are exact") {
    const std::vector<lt::Device> all = all_devices();
    std::vector<double> weights(all.size(), 1.0);
    weights[0] = 0.0;
    if (all.size() == 1) weights[0] = 1.0;
    lt::Tensor<float> x = lt::tensor<float>({1, 2, NAN, 4, 5, 6, 7, 8}, {8}, lt::Device::host());
    auto s = lt::shard(x, all, 0, weights);
    CHECK(std::isnan(lt::max(s).gather(lt::Device::host()).item()));
    lt::Tensor<std::int64_t> big = lt::full<std::int64_t>({1000}, std::int64_t(1) << 50, lt::Device::host());
    CHECK(lt::sum(lt::shard(big, all, 0, weights)).gather(lt::Device::host()).item() == (std::int64_t(1) << 50) * 1000);
    // An integer mean: the exact sum divided once (in float, 2^30 + 7 and -2^30 + 1 would cancel
    // to 0 and the mean would be 0, not 4).
    std::vector<std::int32_t> values;
    for (int i = 0; i < 500; ++i) values.insert(values.end(), {(1 << 30) + 7, -(1 << 30) + 1});
    lt::Tensor<std::int32_t> ints = lt::tensor<std::int32_t>(values, {1000}, lt::Device::host());
    CHECK(lt::mean(lt::shard(ints, all, 0, weights)).item() == 4.0f);
    CHECK(lt::mean(ints).item() == 4.0f);
}

TEST_CASE("a sharded mean is lt::mean's: the exact sum divided once, half summed in float32") {
    const std::vector<lt::Device> all = all_devices();
    const std::vector<double> weights(all.size(), 1.0);
    // 2^25 + 5 is no float32: rounding the sum first and then the quotient by 5 gives 6710887,
    // one rounding of (2^25 + 5) / 5 = 6710887.4 gives 6710887.5.
    lt::Tensor<std::int64_t> ints = lt::tensor<std::int64_t>({std::int64_t(1) << 25, 1, 2, 0, 2}, {5}, lt::Device::host());
    CHECK(lt::mean(ints).item() == 6710887.5f);
    CHECK(lt::mean(lt::shard(ints, all, 0, weights)).item() == 6710887.5f);
    CHECK(lt::mean(lt::shard(ints, all, 0, weights), 0, true).gather(lt::Device::host()).item() == 6710887.5f);
    // 2049 ones: a half sum is 2048, a float32 sum 2049; the mean is 1.
    lt::Tensor<lt::half> ones = lt::full<lt::half>({2049}, lt::half(1.0f), lt::Device::host());
    CHECK(static_cast<float>(lt::mean(ones).item()) == 1.0f);
    CHECK(static_cast<float>(lt::mean(lt::shard(ones, all, 0, weights)).item()) == 1.0f);
    // Along an axis that is not split: per shard, by the same division.
    lt::Tensor<lt::half> rows = lt::full<lt::half>({2 * static_cast<std::int64_t>(all.size()), 2049}, lt::half(1.0f), lt::Device::host());
    const auto per_row = lt::mean(lt::shard(rows, all, 0, weights), 1).gather(lt::Device::host()).to_vector();
    for (lt::half v : per_row) CHECK(static_cast<float>(v) == 1.0f);
}

TEST_CASE("a product with a split left operand and a replicated right one is one product per device") {
    const Ref ra = random_ref<float>({19, 12}, 31), rw = random_ref<float>({12, 5}, 32), rb = random_ref<float>({5}, 33);
    lt::Tensor<float> a = make_tensor<float>(ra, lt::Device::host()), w = make_tensor<float>(rw, lt::Device::host());
    lt::Tensor<float> bias = make_tensor<float>(rb, lt::Device::host());
    const Ref product = ref_matmul_2d(ra, rw);
    const Ref layer = map(zip(product, broadcast(rb, {19, 5}), [](double x, double y) { return x + y; }),
                          [](double v) { return v > 0 ? v : 0.0; });
    for (const auto& layout : layouts()) {
        const std::vector<lt::Device>& devices = layout.first;
        const std::vector<double>& weights = layout.second;
        INFO(devices.size() << " devices, first weight " << weights[0]);
        auto sa = lt::shard(a, devices, 0, weights);
        auto sw = lt::replicate(w, devices);
        auto y = lt::matmul(sa, sw);
        CHECK(y.axis() == 0);
        check_close(y.gather(lt::Device::host()), product, 1e-4, 1e-5);
        auto relu_layer = lt::relu(lt::matmul(sa, sw) + lt::replicate(bias, devices));
        check_close(relu_layer.gather(lt::Device::host()), layer, 1e-4, 1e-5);
        auto mapped = lt::map_shards([](const auto& x, const auto& m, const auto& b) { return lt::relu(lt::matmul(x, m) + b); },
                                     sa, sw, lt::replicate(bias, devices));
        check_close(mapped.gather(lt::Device::host()), layer, 1e-4, 1e-5);
        // A vector on the right drops the contracted axis: the result stays split along the rows.
        const Ref rv = random_ref<float>({12}, 34);
        auto by_vector = lt::matmul(sa, lt::replicate(make_tensor<float>(rv, lt::Device::host()), devices));
        CHECK(by_vector.axis() == 0);
        check_close(by_vector.gather(lt::Device::host()), ref_of({19}, [&](const std::vector<std::int64_t>& i) {
                        double acc = 0;
                        for (std::int64_t p = 0; p < 12; ++p) acc += ra.at({i[0], p}) * rv.v[static_cast<std::size_t>(p)];
                        return acc;
                    }), 1e-4, 1e-5);
        // The other way round: a replicated left and a right split by columns.
        auto by_columns = lt::matmul(lt::replicate(a, devices), lt::shard(w, devices, 1, weights));
        CHECK(by_columns.axis() == 1);
        check_close(by_columns.gather(lt::Device::host()), product, 1e-4, 1e-5);
    }
}

TEST_CASE("sharding mistakes are errors that name them") {
    const std::vector<lt::Device> all = all_devices();
    lt::Tensor<float> x = lt::ones<float>({4, 3}, lt::Device::host());
    CHECK_THROWS_WITH_AS(lt::shard(x, all, 0, std::vector<double>(all.size() + 1, 1.0)),
                         doctest::Contains("weights for"), lt::ValueError);
    std::vector<double> negative(all.size(), 1.0);
    negative[0] = -1.0;
    CHECK_THROWS_WITH_AS(lt::shard(x, all, 0, negative), doctest::Contains("must be finite and not negative"), lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::shard(x, all, 0, std::vector<double>(all.size(), 0.0)), doctest::Contains("all 0"), lt::ValueError);
    CHECK_THROWS_AS(lt::shard(x, all, 2), lt::AxisError);
    CHECK_THROWS_AS(lt::shard(x, {}, 0), lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::shard(x, {lt::Device::host(), lt::Device::host()}, 0), doctest::Contains("holds two shards"),
                         lt::ValueError);
    CHECK_THROWS_AS(lt::shard(x, {lt::Device::opencl(97)}, 0), lt::DeviceError);
    if (all.size() >= 2) {
        auto by_rows = lt::shard(x, all, 0, std::vector<double>(all.size(), 1.0));
        auto by_columns = lt::shard(x, all, 1, std::vector<double>(all.size(), 1.0));
        CHECK_THROWS_WITH_AS(by_rows + by_columns, doctest::Contains("split differently"), lt::DeviceError);
        auto elsewhere = lt::shard(x, {all[1], all[0]}, 0, {1.0, 1.0});
        try {
            auto bad = lt::shard(x, {all[0], all[1]}, 0, {1.0, 1.0}) * elsewhere;
            FAIL("expected a DeviceError");
        } catch (const lt::DeviceError& e) {
            const std::string msg = e.what();
            CHECK(msg.find(all[0].str()) != std::string::npos);
            CHECK(msg.find(all[1].str()) != std::string::npos);
        }
        CHECK_THROWS_WITH_AS(lt::softmax(by_rows, 0), doctest::Contains("split axis"), lt::ValueError);
        CHECK_THROWS_WITH_AS(lt::matmul(by_columns, lt::replicate(lt::ones<float>({3, 2}, lt::Device::host()), all)),
                             doctest::Contains("contracts"), lt::ValueError);
    }
}

TEST_CASE("default weights come from measured bandwidth and cover the axis") {
    const std::vector<lt::Device> all = all_devices();
    lt::Tensor<float> x = lt::arange<float>(0, 1000, 1, lt::Device::host());
    auto s = lt::shard(x, all);
    std::int64_t covered = 0;
    for (std::int64_t e : s.extents()) covered += e;
    CHECK(covered == 1000);
    for (lt::Device d : all) CHECK(lt::detail::measured_bandwidth(d) > 0);
    CHECK(s.to_vector() == x.to_vector());
    // Devices of one name (PoCL's two) get one weight, whatever their measurements say.
    if (two_opencl_devices()) {
        const std::vector<lt::Device> twins{opencl_devices()[0], opencl_devices()[1]};
        const std::vector<double> w = lt::detail::bandwidth_weights(twins);
        if (lt::devices()[1].name == lt::devices()[2].name) CHECK(w[0] == w[1]);
        const std::vector<std::int64_t> parts = lt::shard(x, twins).extents();
        CHECK(parts[0] + parts[1] == 1000);
    }
}
