// SPDX-License-Identifier: MIT
// Attention, softmax(f(q @ k^T), -1) @ v: on a backend that fuses it (OpenCL) one item whose
// scores and weights never reach memory, elsewhere three items; either way the same values as a
// double-precision reference and as the unfused composition.
#include "common.hpp"

#if LAZYTENSOR_OPENCL && !LAZYTENSOR_ENGINE_DEFINITIONS  // else lazytensor.hpp holds the backend
#include <lazytensor/backend/opencl/opencl_backend.hpp>
#endif

namespace {

/// The double reference: softmax(scale * q @ k^T) @ v over [batch, T, D], [batch, S, D] and
/// [batch, S, DV] (NaN where a row's scores are all -inf, as the float composition gives).
Ref attention_reference(const Ref& q, const Ref& k, const Ref& v, double scale) {
    const std::int64_t b = q.shape[0], t = q.shape[1], d = q.shape[2], s = k.shape[1], dv = v.shape[2];
    Ref out{{b, t, dv}, std::vector<double>(static_cast<std::size_t>(b * t * dv))};
    std::vector<double> w(static_cast<std::size_t>(s));
    for (std::int64_t x = 0; x < b; ++x)
        for (std::int64_t i = 0; i < t; ++i) {
            double top = -INFINITY;
            for (std::int64_t j = 0; j < s; ++j) {
                double dot = 0;
                for (std::int64_t c = 0; c < d; ++c) dot += q.at({x, i, c}) * k.at({x, j, c});
                w[static_cast<std::size_t>(j)] = dot * scale;
                top = ref_max(top, w[static_cast<std::size_t>(j)]);
            }
            double total = 0;
            for (double& e : w) total += (e = std::exp(e - top));
            for (std::int64_t c = 0; c < dv; ++c) {
                double acc = 0;
                for (std::int64_t j = 0; j < s; ++j) acc += w[static_cast<std::size_t>(j)] * v.at({x, j, c});
                out.v[static_cast<std::size_t>((x * t + i) * dv + c)] = acc / total;
            }
        }
    return out;
}

std::size_t attention_items(const std::vector<lt::ScheduleItem>& items, lt::ScheduleItem::Kind kind) {
    std::size_t n = 0;
    for (const auto& item : items) n += item.kind == kind;
    return n;
}

/// Whether `d` runs attention as one item (the OpenCL backend, unless turned off).
bool fuses_attention(lt::Device d) { return d.kind == lt::Device::Kind::OpenCL; }

/// Checks the schedule of an attention expression on `d`: one attention item where the device
/// fuses it, else the scores product, the softmax kernel and the second product.
void check_attention_schedule(const lt::Tensor<float>& out, lt::Device d) {
    const auto items = lt::schedule(out);
    if (fuses_attention(d)) {
        CHECK(attention_items(items, lt::ScheduleItem::Kind::Attention) == 1);
        CHECK(attention_items(items, lt::ScheduleItem::Kind::Matmul) == 0);
    } else {
        CHECK(attention_items(items, lt::ScheduleItem::Kind::Attention) == 0);
        CHECK(attention_items(items, lt::ScheduleItem::Kind::Matmul) == 2);
    }
}

#if LAZYTENSOR_OPENCL
/// Attention on an OpenCL device runs unfused for a scope (the unfused composition to compare with).
struct UnfusedAttention {
    lt::detail::opencl::OpenCLBackend* backend = nullptr;
    explicit UnfusedAttention(lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        backend = &lt::detail::opencl::opencl_backend(d.index);
        backend->set_fuse_attention(false);
    }
    UnfusedAttention(const UnfusedAttention&) = delete;
    UnfusedAttention& operator=(const UnfusedAttention&) = delete;
    ~UnfusedAttention() {
        if (backend) backend->set_fuse_attention(true);
    }
};
#endif

}  // namespace

TEST_CASE("attention: one item where the backend fuses it, the values of the double reference") {
    for_each_device([](lt::Device d) {
        struct Case {
            std::int64_t b, t, s, d, dv;
        };
        // The head size; odd T, S, d and dv; one query; two keys; d and dv to 256; a batch
        // large enough for NVIDIA's 256-row blocks.
        for (const Case c : {Case{2, 64, 64, 64, 64}, Case{3, 33, 67, 5, 7}, Case{1, 1, 5, 3, 40}, Case{2, 17, 2, 128, 96},
                             Case{1, 9, 70, 256, 256}, Case{2, 130, 33, 16, 33}, Case{140, 20, 33, 16, 16}}) {
            INFO("batch " << c.b << ", T " << c.t << ", S " << c.s << ", d " << c.d << ", dv " << c.dv);
            const Ref q = random_ref<float>({c.b, c.t, c.d}, 11), k = random_ref<float>({c.b, c.s, c.d}, 12),
                      v = random_ref<float>({c.b, c.s, c.dv}, 13);
            const auto Q = make_tensor<float>(q), K = make_tensor<float>(k), V = make_tensor<float>(v);
            const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
            lt::Tensor<float> out = lt::matmul(lt::softmax(lt::matmul(Q, K.mT()) * scale, -1), V);
            check_attention_schedule(out, d);
            check_close(out, attention_reference(q, k, v, scale), 1e-4, 1e-5);
        }
    });
}

TEST_CASE("attention: operands through views, other spellings of the scale, batches that fold or merge") {
    for_each_device([](lt::Device d) {
        const Ref q = random_ref<float>({2, 3, 19, 12}, 21), k = random_ref<float>({2, 3, 23, 12}, 22),
                  v = random_ref<float>({2, 3, 23, 10}, 23);
        auto flat = [](const Ref& r) { return Ref{{r.shape[0] * r.shape[1], r.shape[2], r.shape[3]}, r.v}; };
        const Ref expected = attention_reference(flat(q), flat(k), flat(v), 0.25);
        auto as4d = [&](const Ref& r) { return Ref{{2, 3, r.shape[1], r.shape[2]}, r.v}; };
        const auto Q = make_tensor<float>(q), K = make_tensor<float>(k), V = make_tensor<float>(v);
        // Two batch axes (they merge); the scale divided, and on the left.
        lt::Tensor<float> a = lt::matmul(lt::softmax(lt::matmul(Q, K.mT()) / 4.0f, -1), V);
        check_attention_schedule(a, d);
        check_close(a, as4d(expected), 1e-4, 1e-5);
        lt::Tensor<float> b = lt::matmul(lt::softmax(0.25f * lt::matmul(Q, K.mT()), -1), V);
        check_close(b, as4d(expected), 1e-4, 1e-5);
        // k stored transposed ([.., d, S]: kt read with unit stride along the keys), v read through
        // a transposing view, q a slice of a wider tensor: every operand read in place.
        const auto KT = make_tensor<float>(permute(k, {0, 1, 3, 2}));
        const auto VT = make_tensor<float>(permute(v, {0, 1, 3, 2}));
        Ref wide = ref_of({2, 3, 19, 14}, [&](const std::vector<std::int64_t>& i) {
            return i[3] >= 1 && i[3] <= 12 ? q.at({i[0], i[1], i[2], i[3] - 1}) : 99.0;
        });
        const auto QW = make_tensor<float>(wide);
        lt::Tensor<float> c = lt::matmul(lt::softmax(lt::matmul(QW.slice(3, 1, 13), KT) * 0.25f, -1), VT.mT());
        check_attention_schedule(c, d);
        check_close(c, as4d(expected), 1e-4, 1e-5);
        // Keys and values shared by every query batch: the batch folds into the rows.
        const Ref k0 = random_ref<float>({23, 12}, 24), v0 = random_ref<float>({23, 10}, 25);
        lt::Tensor<float> e =
            lt::matmul(lt::softmax(lt::matmul(Q, make_tensor<float>(k0).t()) * 0.25f, -1), make_tensor<float>(v0));
        check_attention_schedule(e, d);
        Ref kb{{6, 23, 12}, {}}, vb{{6, 23, 10}, {}};
        for (int x = 0; x < 6; ++x) {
            kb.v.insert(kb.v.end(), k0.v.begin(), k0.v.end());
            vb.v.insert(vb.v.end(), v0.v.begin(), v0.v.end());
        }
        check_close(e, as4d(attention_reference(flat(q), kb, vb, 0.25)), 1e-4, 1e-5);
    });
}

TEST_CASE("attention: rows whose scores are all equal, all -inf, or hold a NaN") {
    for_each_device([](lt::Device d) {
        Ref q = random_ref<float>({1, 4, 8}, 31), k = random_ref<float>({1, 40, 8}, 32, 0.5, 2.0);
        const Ref v = random_ref<float>({1, 40, 6}, 33);
        for (std::int64_t c = 0; c < 8; ++c) {
            q.v[static_cast<std::size_t>(c)] = 0;                                       // row 0: every score 0
            q.v[static_cast<std::size_t>(8 + c)] = c == 0 ? -INFINITY : 0;              // row 1: every score -inf (k > 0)
            q.v[static_cast<std::size_t>(16 + c)] = c == 3 ? std::nan("") : q.v[16 + c];  // row 2: NaN
        }
        const auto Q = make_tensor<float>(q), K = make_tensor<float>(k), V = make_tensor<float>(v);
        auto attention = [&] { return lt::matmul(lt::softmax(lt::matmul(Q, K.mT()) * 0.5f, -1), V); };
        lt::Tensor<float> out = attention();
        check_attention_schedule(out, d);
        const Ref expected = attention_reference(q, k, v, 0.5);
        for (std::int64_t c = 0; c < 6; ++c) {  // the reference itself: row 0 is the mean of v, row 1 and 2 NaN
            double mean = 0;
            for (std::int64_t j = 0; j < 40; ++j) mean += v.at({0, j, c}) / 40;
            CHECK(expected.at({0, 0, c}) == doctest::Approx(mean));
            CHECK(std::isnan(expected.at({0, 1, c})));
            CHECK(std::isnan(expected.at({0, 2, c})));
        }
        {
            INFO("as scheduled");
            check_close(out, expected, 1e-4, 1e-5);
        }
#if LAZYTENSOR_OPENCL
        UnfusedAttention unfused(d);  // the three items give the same
        INFO("as three items");
        lt::Tensor<float> composed = attention();
        CHECK(attention_items(lt::schedule(composed), lt::ScheduleItem::Kind::Attention) == 0);
        check_close(composed, expected, 1e-4, 1e-5);
#endif
    });
}

TEST_CASE("attention: a new scale reuses the compiled kernel") {
    for_each_device([](lt::Device d) {
        const Ref q = random_ref<float>({2, 20, 16}, 41), k = random_ref<float>({2, 30, 16}, 42), v = random_ref<float>({2, 30, 8}, 43);
        const auto Q = make_tensor<float>(q), K = make_tensor<float>(k), V = make_tensor<float>(v);
        // The first step compiles. (Named first: in `lt::matmul(...).realize()` the temporaries of the
        // statement still hold the scores and the weights, which are then stored.)
        lt::Tensor<float> first = lt::matmul(lt::softmax(lt::matmul(Q, K.mT()) * 0.01f, -1), V);
        first.realize();
        lt::reset_compile_stats(d);
        for (float scale : {0.1f, 0.2f, 0.35f}) {
            lt::Tensor<float> out = lt::matmul(lt::softmax(lt::matmul(Q, K.mT()) * scale, -1), V);
            check_close(out, attention_reference(q, k, v, scale), 1e-4, 1e-5);
        }
        const lt::CompileStats stats = lt::compile_stats(d);
        CHECK(stats.kernels_compiled == 0);
        CHECK(stats.programs_built == 0);
    });
}

TEST_CASE("attention: scores and weights that a tensor holds are stored, and right") {
    for_each_device([](lt::Device d) {
        const Ref q = random_ref<float>({2, 9, 8}, 51), k = random_ref<float>({2, 11, 8}, 52), v = random_ref<float>({2, 11, 4}, 53);
        const auto Q = make_tensor<float>(q), K = make_tensor<float>(k), V = make_tensor<float>(v);
        lt::Tensor<float> scores = lt::matmul(Q, K.mT());
        lt::Tensor<float> weights = lt::softmax(scores * 0.3f, -1);
        lt::Tensor<float> out = lt::matmul(weights, V);
        check_attention_schedule(out, d);  // (held or not is known when it runs)
        out.realize();
        CHECK(scores.is_realized());
        CHECK(weights.is_realized());
        check_close(out, attention_reference(q, k, v, 0.3), 1e-4, 1e-5);
        const Ref s = ref_of({2, 9, 11}, [&](const std::vector<std::int64_t>& i) {
            double dot = 0;
            for (std::int64_t c = 0; c < 8; ++c) dot += q.at({i[0], i[1], c}) * k.at({i[0], i[2], c});
            return dot;
        });
        check_close(scores, s, 1e-4, 1e-5);
        // Each row of the weights: softmax of 0.3 * s.
        const Ref top = reduce(map(s, [](double x) { return x * 0.3; }), {2}, true, -INFINITY, ref_max);
        const Ref e = ref_of({2, 9, 11}, [&](const std::vector<std::int64_t>& i) { return std::exp(0.3 * s.at(i) - top.at({i[0], i[1], 0})); });
        const Ref total = reduce(e, {2}, true, 0.0, ref_add);
        check_close(weights, ref_of({2, 9, 11}, [&](const std::vector<std::int64_t>& i) { return e.at(i) / total.at({i[0], i[1], 0}); }),
                    1e-4, 1e-6);
    });
}

TEST_CASE("attention: what is not the pattern stays three items or more") {
    for_each_device([](lt::Device) {
        const auto Q = make_tensor<float>(random_ref<float>({2, 8, 4}, 61)), K = make_tensor<float>(random_ref<float>({2, 8, 4}, 62)),
                   V = make_tensor<float>(random_ref<float>({2, 8, 4}, 63));
        const auto mask = make_tensor<float>(random_ref<float>({8, 8}, 64));
        const auto S = lt::matmul(Q, K.mT());
        for (const lt::Tensor<float>& not_attention :
             {lt::matmul(lt::softmax(S, 1), V),            // softmax over the queries
              lt::matmul(lt::softmax(S + mask, -1), V),    // a mask: the softmax reads another tensor
              lt::matmul(lt::log_softmax(S, -1), V),       // not a softmax
              lt::matmul(lt::softmax(S, -1).mT(), V),      // the weights read transposed
              lt::matmul(V.mT(), lt::softmax(S, -1))}) {   // the weights as the second operand
            const auto items = lt::schedule(not_attention);
            CHECK(attention_items(items, lt::ScheduleItem::Kind::Attention) == 0);
        }
        // float64 attention stays three items (the fused kernel computes in float32).
        const auto Qd = Q.cast<double>(), Kd = K.cast<double>(), Vd = V.cast<double>();
        const auto items = lt::schedule(lt::matmul(lt::softmax(lt::matmul(Qd, Kd.mT()), -1), Vd));
        CHECK(attention_items(items, lt::ScheduleItem::Kind::Attention) == 0);
    });
}

TEST_CASE("attention: LAZYTENSOR_DEBUG names the item, lists what it fuses and times it") {
    for_each_device([](lt::Device d) {
        const auto Q = make_tensor<float>(random_ref<float>({2, 8, 4}, 71)), K = make_tensor<float>(random_ref<float>({2, 8, 4}, 72)),
                   V = make_tensor<float>(random_ref<float>({2, 8, 4}, 73));
        auto attention = [&] { return lt::matmul(lt::softmax(lt::matmul(Q, K.mT()) * 0.5f, -1), V); };
        const std::string one = debug_output(1, [&] { attention().realize(); });
        const std::string two = debug_output(2, [&] { attention().realize(); });
        const std::string three = debug_output(3, [&] { attention().realize(); });
        if (!fuses_attention(d)) {
            CHECK(one.find("2 matmuls") != std::string::npos);
            return;
        }
        CHECK(one.find("0 kernels, 1 attention for 1 output") != std::string::npos);
        CHECK(one.find("attention 0: matmul, mul, max, sub, exp, sum, div, matmul (lazytensor attention kernel") != std::string::npos);
        CHECK(two.find("scores, never stored:") != std::string::npos);
        CHECK(two.find("phase 1: reduce sum") != std::string::npos);
        CHECK(two.find("__kernel __attribute__((reqd_work_group_size") != std::string::npos);
        CHECK(three.find("GFLOP/s") != std::string::npos);
    });
}

TEST_CASE("attention: check mode compares the fused kernel with the host's three items" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for (lt::Device d : test_devices()) {
        if (!fuses_attention(d)) continue;  // (the host runs the three items: nothing fused to compare)
        INFO("device: " << d.str());
        lt::set_default_device(d);
        const bool was = lt::check_enabled();
        lt::set_check_enabled(true);
        const Ref q = random_ref<float>({2, 24, 16}, 81), k = random_ref<float>({2, 40, 16}, 82), v = random_ref<float>({2, 40, 8}, 83);
        const auto Q = make_tensor<float>(q), K = make_tensor<float>(k), V = make_tensor<float>(v);
        auto attention = [&] { return lt::matmul(lt::softmax(lt::matmul(Q, K.mT()) * 0.7f, -1), V); };
        CHECK_NOTHROW(attention().realize());
        // A wrong element is found, named, and nothing is committed.
        lt::detail::after_launch_hook() = [](lt::Buffer& out) {
            if (out.dtype() == lt::DType::Float32 && out.numel() == 2 * 24 * 8) {
                const float wrong = 5.0f;
                lt::detail::backend_for(out.device()).write(out, 3 * sizeof(float), &wrong, sizeof wrong);
            }
        };
        lt::Tensor<float> out = attention();
        std::string message;
        try {
            out.realize();
        } catch (const lt::BackendError& e) {
            message = e.what();
        }
        lt::detail::after_launch_hook() = nullptr;
        lt::set_check_enabled(was);
        CHECK(message.find("LAZYTENSOR_CHECK: attention 0 of 1") != std::string::npos);
        CHECK(message.find("the first is element 3") != std::string::npos);
        CHECK(message.find("--- attention ---") != std::string::npos);
        CHECK_FALSE(out.is_realized());
        check_close(out, attention_reference(q, k, v, 0.7), 1e-4, 1e-5);
        lt::set_default_device(lt::Device::host());
    }
}

#if LAZYTENSOR_OPENCL
TEST_CASE("attention: the kernel's parameters per device, depth and batch") {
    namespace ocl = lt::detail::opencl;
    ocl::DeviceTraits h100;
    h100.max_work_group = 1024, h100.compute_units = 132, h100.local_memory = 48 * 1024;
    auto shape = [](const std::optional<ocl::AttentionParams>& p) {
        return p ? std::to_string(p->bm) + "x" + std::to_string(p->bn) + "/" + std::to_string(p->tx) + "x" + std::to_string(p->ty)
                 : std::string("none");
    };
    // NVIDIA 9.0 and 8.0, d and dv up to 64: 256-row blocks where they keep 3/4 of the device busy, else 128.
    CHECK(shape(ocl::attention_params_for(64, 64, 16 * 4, h100, 90)) == "128x64/8x16");
    CHECK(shape(ocl::attention_params_for(64, 64, 98, h100, 90)) == "128x64/8x16");
    CHECK(shape(ocl::attention_params_for(64, 64, 99, h100, 90)) == "256x64/8x32");
    CHECK(shape(ocl::attention_params_for(64, 64, 32 * 4, h100, 90)) == "256x64/8x32");
    CHECK(shape(ocl::attention_params_for(64, 64, 200, h100, 80)) == "256x64/8x32");
    // Elsewhere (8.6, other vendors) and for deeper heads: the blocks that fit the local memory.
    CHECK(shape(ocl::attention_params_for(64, 64, 200, h100, 86)) == "64x32/8x16");
    CHECK(shape(ocl::attention_params_for(65, 64, 200, h100, 90)) == "64x32/8x16");
    CHECK(shape(ocl::attention_params_for(128, 128, 200, h100, 0)) == "32x32/8x16");
    CHECK(shape(ocl::attention_params_for(256, 256, 200, h100, 0)) == "16x16/8x16");
    for (int depth : {128, 256})
        CHECK(ocl::attention_local_bytes(*ocl::attention_params_for(depth, depth, 1, h100, 0), depth, depth) <= 48 * 1024);
    CHECK(shape(ocl::attention_params_for(257, 64, 200, h100, 90)) == "none");
    CHECK(shape(ocl::attention_params_for(64, 257, 200, h100, 90)) == "none");
    ocl::DeviceTraits small = h100;
    small.local_memory = 16 * 1024;
    CHECK(shape(ocl::attention_params_for(256, 256, 200, small, 0)) == "none");
    small.max_work_group = 64;
    CHECK(shape(ocl::attention_params_for(8, 8, 200, small, 90)) == "none");  // work-groups of 128 do not fit
    CHECK_THROWS_AS(ocl::check_attention_params(ocl::AttentionParams{12, 32, 8, 16}, 1024), lt::ValueError);
    CHECK_THROWS_AS(ocl::check_attention_params(ocl::AttentionParams{128, 64, 8, 32}, 128), lt::ValueError);
    CHECK_NOTHROW(ocl::check_attention_params(ocl::AttentionParams{128, 64, 8, 32}, 256));
}
#endif
