// SPDX-License-Identifier: MIT
// lazytensor's own OpenCL GEMM kernel (backend/opencl/gemm_kernel.hpp), forced on for every
// product: every operand layout (row- and column-major, strided, reversed), odd sizes 1-257,
// k = 0, batches with constant strides and with per-matrix offsets, float64, the epilogue hook,
// and products fused with their element-wise consumers, against a double reference computed
// here.
#include "common.hpp"

#if LAZYTENSOR_OPENCL && !LAZYTENSOR_ENGINE_DEFINITIONS  // else lazytensor.hpp holds the backend
#include <lazytensor/backend/opencl/opencl_backend.hpp>
#endif

#include <cstdlib>
#include <optional>
#include <tuple>

namespace {

#if LAZYTENSOR_OPENCL
namespace gk_ocl = lt::detail::opencl;

/// Makes every product on `d` run on the own kernel while in scope, with `params` if given
/// (else the device's set).
struct GkOwnGemm {
    gk_ocl::OpenCLBackend& backend;
    gk_ocl::GemmChoice old;
    bool fused_before;
    explicit GkOwnGemm(lt::Device d, std::optional<gk_ocl::GemmKernelParams> params = std::nullopt)
        : backend(gk_ocl::opencl_backend(d.index)), old(backend.gemm_choice()), fused_before(backend.fuse_epilogues()) {
        backend.set_gemm_choice(gk_ocl::GemmChoice::Own);
        backend.set_gemm_params(params);
    }
    ~GkOwnGemm() {
        backend.set_gemm_choice(old);
        backend.set_gemm_params(std::nullopt);
        backend.set_gemm_wide_index(false);
        backend.set_fuse_epilogues(fused_before);
        backend.set_fuse_half_loads(std::nullopt);
    }
};
#endif

/// C = A x B in double over [batch, m, k] x [batch, k, n] (batch already broadcast), and the
/// sum of |a*b| per element, the scale of a k-term float sum's rounding error.
struct GkProduct {
    std::vector<double> value, magnitude;
};

GkProduct gk_reference(const Ref& a, const Ref& b) {
    const std::size_t r = a.shape.size();
    const std::int64_t m = a.shape[r - 2], k = a.shape[r - 1], n = b.shape[r - 1];
    const std::int64_t batches = lt::numel(lt::Shape(a.shape.begin(), a.shape.end() - 2));
    GkProduct out;
    for (std::int64_t t = 0; t < batches; ++t)
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                double sum = 0, mag = 0;
                for (std::int64_t p = 0; p < k; ++p) {
                    const double x = a.v[static_cast<std::size_t>((t * m + i) * k + p)];
                    const double y = b.v[static_cast<std::size_t>((t * k + p) * n + j)];
                    sum += x * y;
                    mag += std::fabs(x * y);
                }
                out.value.push_back(sum);
                out.magnitude.push_back(mag);
            }
    return out;
}

/// Checks got (of shape [batch..., m, n]) against the product of the logical operands.
template <class T>
void gk_check(const lt::Tensor<T>& got_tensor, const Ref& a, const Ref& b) {
    const GkProduct expected = gk_reference(a, b);
    const std::int64_t k = a.shape.back();
    const std::vector<T> got = got_tensor.to_vector();
    REQUIRE(got.size() == expected.value.size());
    const double eps = std::numeric_limits<T>::epsilon();
    int failures = 0;
    for (std::size_t i = 0; i < got.size() && failures < 5; ++i) {
        const double bound = 2.0 * static_cast<double>(k + 2) * eps * expected.magnitude[i] + 1e-30;
        if (!(std::fabs(static_cast<double>(got[i]) - expected.value[i]) <= bound)) {
            ++failures;
            FAIL_CHECK("element " << i << ": got " << got[i] << ", expected " << expected.value[i] << " (bound " << bound
                                  << ")");
        }
    }
}

/// An operand of logical shape rows x cols, stored in one of several layouts; `ref` is its
/// logical value.
template <class T>
std::pair<lt::Tensor<T>, Ref> gk_operand(std::int64_t rows, std::int64_t cols, int layout, unsigned seed) {
    switch (layout) {
        case 0: {  // row-major
            const Ref r = random_ref<T>({rows, cols}, seed);
            return {make_tensor<T>(r), r};
        }
        case 1: {  // column-major: a transposed row-major array
            const Ref s = random_ref<T>({cols, rows}, seed);
            return {make_tensor<T>(s).t(), permute(s, {1, 0})};
        }
        case 2: {  // every other column of a row-major array: no unit stride
            const Ref s = random_ref<T>({rows, 2 * cols}, seed);
            const Ref r = ref_of({rows, cols}, [&](const auto& i) { return s.at({i[0], 2 * i[1]}); });
            return {make_tensor<T>(s).slice(1, {}, {}, 2), r};
        }
        default: {  // rows reversed and columns every other one of a column-major array
            const Ref s = random_ref<T>({2 * cols, rows}, seed);
            const Ref r = ref_of({rows, cols}, [&](const auto& i) { return s.at({2 * i[1], rows - 1 - i[0]}); });
            return {make_tensor<T>(s).slice(0, {}, {}, 2).t().flip({0}), r};
        }
    }
}

template <class T>
void gk_layouts_and_sizes() {
    const std::int64_t sizes[][3] = {{1, 1, 1},     {1, 257, 1},  {257, 1, 3},  {2, 3, 5},     {31, 33, 17},
                                     {64, 64, 64},  {65, 129, 33}, {127, 8, 255}, {200, 257, 66}};
    unsigned seed = 1;
    for (const auto& s : sizes)
        for (int la = 0; la < 4; ++la)
            for (int lb = 0; lb < 4; ++lb) {
                if ((la >= 2 || lb >= 2) && la != lb) continue;  // the strided layouts pair up: fewer cases
                INFO("m " << s[0] << ", k " << s[1] << ", n " << s[2] << ", layouts " << la << " x " << lb);
                auto [a, ra] = gk_operand<T>(s[0], s[1], la, seed += 2);
                auto [b, rb] = gk_operand<T>(s[1], s[2], lb, seed += 2);
                gk_check(lt::matmul(a, b), ra, rb);
            }
}

template <class T>
void gk_batches() {
    auto run = [](const lt::Shape& sa, const lt::Shape& sb, unsigned seed) {
        INFO("shapes " << sa << " x " << sb);
        const Ref a = random_ref<T>(sa, seed), b = random_ref<T>(sb, seed + 1);
        const lt::Tensor<T> p = lt::matmul(make_tensor<T>(a), make_tensor<T>(b));
        const lt::Shape batch(p.shape().begin(), p.shape().end() - 2);
        lt::Shape fa = batch, fb = batch;
        fa.push_back(sa[sa.size() - 2]), fa.push_back(sa.back()), fb.push_back(sb[sb.size() - 2]), fb.push_back(sb.back());
        gk_check(p, broadcast(a, fa), broadcast(b, fb));
    };
    run({6, 33, 17}, {6, 17, 65}, 41);       // a constant batch stride
    run({5, 7}, {3, 7, 2}, 43);              // a shared left operand: batch stride 0
    run({2, 1, 3, 4}, {1, 5, 4, 6}, 45);     // two batch axes: per-matrix offsets
    run({3, 2, 35, 9}, {3, 2, 9, 40}, 47);   // two axes that merge into one stride
    // More matrices than one launch takes (65535 on NVIDIA): launched in chunks.
    run({70000, 1, 2}, {70000, 2, 1}, 51);
    // The batch axis in the middle of A's storage ([m, batch, k]): read through strides.
    const Ref x = random_ref<T>({7, 5, 31}, 49), w = random_ref<T>({5, 31, 9}, 50);
    gk_check(lt::matmul(make_tensor<T>(x).permute({1, 0, 2}), make_tensor<T>(w)), permute(x, {1, 0, 2}), w);
    // k = 0: zeros.
    const lt::Tensor<T> z = lt::matmul(lt::ones<T>({5, 0}), lt::ones<T>({0, 7}));
    CHECK(z.shape() == lt::Shape{5, 7});
    for (T v : z.to_vector()) CHECK(v == T(0));
    const lt::Tensor<T> zb = lt::matmul(lt::ones<T>({3, 4, 0}), lt::ones<T>({3, 0, 2}));
    for (T v : zb.to_vector()) CHECK(v == T(0));
}

}  // namespace

#if LAZYTENSOR_OPENCL

TEST_CASE_TEMPLATE("the own OpenCL GEMM kernel reads every layout in place, any size" *
                       doctest::skip(!has_test_device(lt::Device::Kind::OpenCL)),
                   T, float, double) {
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        if (std::is_same_v<T, double> && !lt::detail::supports_float64(d)) {
            MESSAGE("skipped on " << d.str() << ": the device has no float64");
            return;
        }
        GkOwnGemm own(d);
        gk_layouts_and_sizes<T>();
    });
}

TEST_CASE_TEMPLATE("the own OpenCL GEMM kernel runs batches and k = 0" *
                       doctest::skip(!has_test_device(lt::Device::Kind::OpenCL)),
                   T, float, double) {
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        if (std::is_same_v<T, double> && !lt::detail::supports_float64(d)) {
            MESSAGE("skipped on " << d.str() << ": the device has no float64");
            return;
        }
        GkOwnGemm own(d);
        gk_batches<T>();
    });
}

// The GPU sets read local memory in vector runs (v > 1), may load global memory in vectors
// (gv > 1: where a load is whole and aligned, else element by element), prefetch, and may
// double-buffer the local tiles: the same code, small tiles.
TEST_CASE_TEMPLATE("the own OpenCL GEMM kernel with vector loads, prefetch and double buffering" *
                       doctest::skip(!has_test_device(lt::Device::Kind::OpenCL)),
                   T, float, double) {
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        if (std::is_same_v<T, double> && !lt::detail::supports_float64(d)) {
            MESSAGE("skipped on " << d.str() << ": the device has no float64");
            return;
        }
        // (double buffer, fragments): off, each alone, both; then fragments under a register cap
        // (NVIDIA: a tight one, so that the compiler spills; other devices ignore it); then both
        // with runs of 2 under global loads of 4 (NVIDIA's set for narrow batches)
        for (int variant = 0; variant < 6; ++variant) {
            const bool double_buffer = variant & 1 || variant == 5, fragments = variant & 2 || variant >= 4;
            const int max_registers = variant == 4 ? 32 : 0;
            gk_ocl::GemmKernelParams params = std::is_same_v<T, float> ? gk_ocl::GemmKernelParams{4, 8, 4, 4, 8, 4, 4, true}
                                                                       : gk_ocl::GemmKernelParams{8, 4, 2, 4, 8, 2, 2, true};
            params.double_buffer = double_buffer;
            params.fragments = fragments;
            params.max_registers = max_registers;
            if (variant == 5) params.v = 2, params.gv = 4;
            INFO("parameters " << params.str());
            GkOwnGemm own(d, params);
            gk_layouts_and_sizes<T>();
            gk_batches<T>();
        }
    });
}

// A product whose tiles are all whole, with unit strides and aligned vectors, runs a kernel
// without edge checks; one that misses any condition runs the checked kernel. Both must be right.
TEST_CASE("the own GEMM kernel without edge checks where every tile is whole" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        // 16 x 32 tiles of depth 8, vector loads of 4 (as the GPU sets), fragments on and off
        for (const bool fragments : {false, true}) {
            gk_ocl::GemmKernelParams params{4, 8, 4, 4, 8, 4, 4, true};
            params.fragments = fragments;
            GkOwnGemm own(d, params);
            own.backend.set_fuse_epilogues(true);
            auto whole = [](const auto& make) { return debug_output(1, [&] { make().realize(); }).find("whole tiles") != std::string::npos; };
            auto product = [&](const Ref& a, const Ref& b, const lt::Tensor<float>& A, const lt::Tensor<float>& B, bool expect_whole) {
                INFO("A " << A.shape() << ", B " << B.shape() << ", expect whole tiles " << expect_whole << ", fragments " << fragments);
                CHECK(whole([&] { return lt::matmul(A, B); }) == expect_whole);
                gk_check(lt::matmul(A, B), a, b);
            };
            const Ref a = random_ref<float>({64, 48}, 81), b = random_ref<float>({48, 96}, 82);
            const auto A = make_tensor<float>(a), B = make_tensor<float>(b);
            product(a, b, A, B, true);
            // column-major A and B: their unit strides are along m and k
            const Ref at = permute(a, {1, 0}), bt = permute(b, {1, 0});
            product(a, b, make_tensor<float>(at).t(), make_tensor<float>(bt).t(), true);
            // k not a multiple of the depth; m and n not multiples of the tile
            const Ref a44 = random_ref<float>({64, 44}, 83), b44 = random_ref<float>({44, 96}, 84);
            product(a44, b44, make_tensor<float>(a44), make_tensor<float>(b44), false);
            const Ref a72 = random_ref<float>({72, 48}, 85), b80 = random_ref<float>({48, 80}, 86);
            product(a72, b, make_tensor<float>(a72), B, false);
            product(a, b80, A, make_tensor<float>(b80), false);
            // A starting one element in (not aligned for vectors of 4), and rows 50 apart
            const Ref wide = random_ref<float>({64, 50}, 87);
            const Ref inner = ref_of({64, 48}, [&](const auto& i) { return wide.at({i[0], i[1] + 1}); });
            product(inner, b, make_tensor<float>(wide).slice(1, 1, 49), B, false);
            const Ref left = ref_of({64, 48}, [&](const auto& i) { return wide.at({i[0], i[1]}); });
            product(left, b, make_tensor<float>(wide).slice(1, 0, 48), B, false);
            // rows 52 apart, the first at 0: aligned, whole
            const Ref wider = random_ref<float>({64, 52}, 88);
            const Ref head = ref_of({64, 48}, [&](const auto& i) { return wider.at({i[0], i[1]}); });
            product(head, b, make_tensor<float>(wider).slice(1, 0, 48), B, true);
            // k = 0 is never whole (the first tile's loads would read past the operands)
            CHECK_FALSE(whole([] { return lt::matmul(lt::ones<float>({64, 0}), lt::ones<float>({0, 96})); }));
            for (float v : lt::matmul(lt::ones<float>({64, 0}), lt::ones<float>({0, 96})).to_vector()) CHECK(v == 0.0f);
            // batches: a constant stride, a broadcast operand, and per-matrix offsets
            for (const auto& shapes : {std::pair<lt::Shape, lt::Shape>{{3, 32, 16}, {3, 16, 64}},
                                       {{32, 16}, {4, 16, 32}},
                                       {{2, 1, 16, 8}, {1, 3, 8, 32}}}) {
                // (Named references, not a structured binding: INFO captures them in a lambda, which C++17
                // does not allow for a structured binding; GCC accepts it, Clang does not.)
                const lt::Shape &sa = shapes.first, &sb = shapes.second;
                INFO("batch " << sa << " x " << sb);
                const Ref x = random_ref<float>(sa, 89), y = random_ref<float>(sb, 90);
                const lt::Tensor<float> got = lt::matmul(make_tensor<float>(x), make_tensor<float>(y));
                CHECK(whole([&] { return lt::matmul(make_tensor<float>(x), make_tensor<float>(y)); }));
                const lt::Shape batch(got.shape().begin(), got.shape().end() - 2);
                lt::Shape fx = batch, fy = batch;
                fx.push_back(sa[sa.size() - 2]), fx.push_back(sa.back()), fy.push_back(sb[sb.size() - 2]), fy.push_back(sb.back());
                gk_check(got, broadcast(x, fx), broadcast(y, fy));
            }
            // an epilogue and a prologue in the kernel without edge checks
            const Ref bias = random_ref<float>({96}, 93);
            const lt::Tensor<float> fused = lt::relu(lt::matmul(A * 0.5f, B) + make_tensor<float>(bias));
            CHECK(whole([&] { return lt::relu(lt::matmul(A * 0.5f, B) + make_tensor<float>(bias)); }));
            const GkProduct p = gk_reference(a, b);
            const std::vector<float> got = fused.to_vector();
            REQUIRE(got.size() == p.value.size());
            for (std::size_t i = 0; i < got.size(); ++i) {
                const double want = std::max(0.5 * p.value[i] + bias.v[i % 96], 0.0);
                CHECK(std::fabs(got[i] - want) <= 1e-5 * (p.magnitude[i] + std::fabs(bias.v[i % 96])) + 1e-30);
            }
            // float16: A read as halves through the vector loads, and a result stored as halves
            own.backend.set_fuse_half_loads(true);
            const Ref ah = map(a, [](double x) { return double(static_cast<float>(lt::half(float(x)))); });
            const lt::Tensor<lt::half> Ah = make_tensor<float>(ah).cast<lt::half>().realize();
            CHECK(whole([&] { return lt::matmul(Ah.cast<float>(), B); }));
            const auto items = lt::schedule(lt::matmul(Ah.cast<float>(), B));
            REQUIRE(items.size() == 1);
            CHECK(items[0].ir.find("prologue of A") != std::string::npos);
            gk_check(lt::matmul(Ah.cast<float>(), B), ah, b);
            CHECK(whole([&] { return lt::matmul(A, B).cast<lt::half>(); }));
            CHECK(lt::schedule(lt::matmul(A, B).cast<lt::half>()).size() == 1);
            const lt::Tensor<lt::half> h = lt::matmul(A, B).cast<lt::half>();
            const std::vector<lt::half> halves = h.to_vector();
            REQUIRE(halves.size() == p.value.size());
            for (std::size_t i = 0; i < halves.size(); ++i)
                CHECK(std::fabs(static_cast<float>(halves[i]) - p.value[i]) <= 1e-3 * std::fabs(p.value[i]) + 1e-5 * p.magnitude[i]);
            // bfloat16: a result stored as bfloat16 by the kernel (vector stores of whole tiles, and
            // element stores at the edges of 72 rows): the float product rounded once, bit for bit
            // as the host's bfloat16(float) rounds the same kernel's float results
            for (const bool edges : {false, true}) {
                INFO((edges ? "72 rows" : "whole tiles"));
                const lt::Tensor<float> X = edges ? make_tensor<float>(random_ref<float>({72, 48}, 85)) : A;
                CHECK(whole([&] { return lt::matmul(X, B).cast<lt::bfloat16>(); }) == !edges);
                CHECK(lt::schedule(lt::matmul(X, B).cast<lt::bfloat16>()).size() == 1);
                const lt::Tensor<lt::bfloat16> r = lt::matmul(X, B).cast<lt::bfloat16>();
                const lt::Tensor<float> f = lt::matmul(X, B);
                lt::realize({r, f});
                const std::vector<lt::bfloat16> got = r.to_vector();
                const std::vector<float> floats = f.to_vector();
                REQUIRE(got.size() == floats.size());
                std::size_t wrong = 0;
                for (std::size_t i = 0; i < got.size(); ++i) wrong += got[i].bits != lt::bfloat16(floats[i]).bits;
                CHECK(wrong == 0);
                if (!edges)
                    for (std::size_t i = 0; i < got.size(); ++i)
                        CHECK(std::fabs(static_cast<float>(got[i]) - p.value[i]) <= 0x1p-8 * std::fabs(p.value[i]) + 1e-5 * p.magnitude[i]);
            }
        }
    });
}

TEST_CASE("which products have whole tiles") {
    const gk_ocl::GemmKernelParams p{4, 8, 4, 4, 8, 4, 4, true};  // 16 x 32 tiles of depth 8, vectors of 4
    lt::detail::ir::Gemm g;
    g.dtype = lt::DType::Float32;
    g.batch = {2};
    g.m = 32, g.k = 16, g.n = 64;
    g.a = {0, 16, 1, {512}};  // row-major, offset, row stride, column stride, batch strides
    g.b = {0, 64, 1, {1024}};
    auto whole = [&] { return gk_ocl::gemm_whole_tiles(g, gk_ocl::gemm_layout_class(g), p); };
    CHECK(whole());
    g.a.batch_strides = {514};  // the second matrix of A starts 2 elements past a vector
    CHECK_FALSE(whole());
    g.batch = {1};  // ... which one matrix never reads
    CHECK(whole());
    g.batch = {2}, g.a.batch_strides = {512}, g.b.offset = 2;
    CHECK_FALSE(whole());
    g.b.offset = 4, g.b.row_stride = 66;  // B's rows 66 apart: every other one unaligned
    CHECK_FALSE(whole());
    g.b.row_stride = 68;
    CHECK(whole());
    g.a = {0, 1, 32, {512}};  // column-major A: its unit stride is along m
    CHECK(whole());
    g.a.row_stride = 2, g.a.col_stride = 64;  // no unit stride
    CHECK_FALSE(whole());
    g.a = {0, 16, 1, {512}};
    for (const auto& mkn : {std::tuple<int, int, int>{48, 16, 64}, {32, 12, 64}, {32, 16, 48}, {32, 0, 64}, {8, 16, 64}}) {
        const int m = std::get<0>(mkn), k = std::get<1>(mkn), n = std::get<2>(mkn);  // (INFO's lambda captures them)
        INFO(m << " x " << k << " x " << n);
        g.m = m, g.k = k, g.n = n;
        g.a.row_stride = std::max(k, 4), g.b.row_stride = n;
        CHECK(whole() == (m == 48));
    }
}

TEST_CASE("a kernel for whole tiles has no edge checks") {
    gk_ocl::GemmLayoutClass layout;
    const gk_ocl::GemmKernelParams p{16, 16, 8, 8, 8, 4, 4, true, false, true, 128};
    const std::string checked = gk_ocl::gemm_kernel_source(lt::DType::Float32, layout, p);
    layout.whole_tiles = true;
    const std::string whole = gk_ocl::gemm_kernel_source(lt::DType::Float32, layout, p);
    for (const char* edge : {"< m", "< k)", "< n", "A_vec", "continue"}) {
        INFO(std::string(edge));
        CHECK(checked.find(edge) != std::string::npos);
        CHECK(whole.find(edge) == std::string::npos);
    }
}

TEST_CASE("a register cap goes among the PTX entry's directives, once") {
    const std::string ptx = "//\n.version 8.8\n.target sm_90\n.address_size 64\n\n"
                            "\t// .globl\tlt_gemm\n.entry lt_gemm(\n\t.param .u64 lt_gemm_param_0,\n"
                            "\t.param .u32 lt_gemm_param_1\n)\n.reqntid 16, 16, 1\n{\n\t.reg .f32 \t%f<9>;\n\tret;\n}\n";
    const std::optional<std::string> capped = gk_ocl::ptx_with_register_cap(ptx, 128);
    REQUIRE(capped);
    CHECK(capped->find(".reqntid 16, 16, 1\n.maxnreg 128\n{\n\t.reg .f32") != std::string::npos);
    CHECK(capped->size() == ptx.size() + std::string(".maxnreg 128\n").size());
    CHECK_FALSE(gk_ocl::ptx_with_register_cap(*capped, 64));  // capped already
    const std::optional<std::string> both = gk_ocl::ptx_with_directive(*capped, ".minnctapersm 2");  // another directive
    REQUIRE(both);
    CHECK(both->find(".maxnreg 128\n.minnctapersm 2\n{") != std::string::npos);
    CHECK_FALSE(gk_ocl::ptx_with_register_cap(ptx + ptx.substr(ptx.find(".entry")), 128));  // two kernels
    CHECK_FALSE(gk_ocl::ptx_with_register_cap("\x7f" "ELF\x02\x01 not text", 128));  // a CPU driver's binary
    CHECK_FALSE(gk_ocl::ptx_with_register_cap("", 128));
    CHECK_FALSE(gk_ocl::ptx_with_register_cap(".entry lt_gemm\n{\n\tret;\n}\n", 128));  // no parameter list
    // Caps outside 16-255 are refused with the rest of a bad set.
    gk_ocl::GemmKernelParams p{4, 8, 4, 4, 8, 4, 4, true};
    for (int cap : {0, 16, 128, 255}) {
        p.max_registers = cap;
        CHECK(gk_ocl::gemm_params_valid(p));
    }
    for (int cap : {-1, 8, 256}) {
        p.max_registers = cap;
        CHECK_FALSE(gk_ocl::gemm_params_valid(p));
        CHECK_THROWS_WITH_AS(gk_ocl::check_gemm_params(p), doctest::Contains("register cap"), lt::ValueError);
    }
}

TEST_CASE("a GEMM parameter set reads back from its text") {
    const gk_ocl::GemmKernelParams p{16, 16, 8, 8, 8, 4, 4, true, false, true, 128};
    const std::optional<gk_ocl::GemmKernelParams> back = gk_ocl::parse_gemm_params(p.str());
    REQUIRE(back);
    CHECK(back->str() == p.str());
    const std::optional<gk_ocl::GemmKernelParams> short_form = gk_ocl::parse_gemm_params("32,8,4,8,16,4,4,0");
    REQUIRE(short_form);  // the other fields default
    CHECK(short_form->str() == "32,8,4,8,16,4,4,0,0,0,0");
    for (const char* bad : {"", "16,16,8,8,8,4,4", "16,16,8,8,8,4,4,1,", "16,16,8,8,8,4,4,1x", "16,16,8,8,8,4,4,1,0,1,128,8"})
        CHECK_MESSAGE(!gk_ocl::parse_gemm_params(bad), bad);
}

// On NVIDIA the cap reaches the device compiler: the program's PTX carries it.
TEST_CASE("a register cap on NVIDIA is in the built program's PTX" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    int nvidia = 0;
    for_each_device([&](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        auto& backend = gk_ocl::opencl_backend(d.index);
        const std::string platform = backend.platform_name();
        if (platform.find("NVIDIA") == std::string::npos) return;
        ++nvidia;
        gk_ocl::GemmKernelParams p{16, 16, 8, 8, 8, 4, 4, true, false, true, 96};
        const std::string source = gk_ocl::gemm_kernel_source(lt::DType::Float32, gk_ocl::GemmLayoutClass{}, p);
        const auto program = backend.build_program(source, nullptr, p.max_registers);
        std::size_t size = 0;
        REQUIRE(clGetProgramInfo(program->program, CL_PROGRAM_BINARY_SIZES, sizeof size, &size, nullptr) == CL_SUCCESS);
        std::string binary(size, '\0');
        unsigned char* at = reinterpret_cast<unsigned char*>(binary.data());
        REQUIRE(clGetProgramInfo(program->program, CL_PROGRAM_BINARIES, sizeof at, &at, nullptr) == CL_SUCCESS);
        CHECK(binary.find(".maxnreg 96") != std::string::npos);
    });
    if (nvidia == 0) MESSAGE("no NVIDIA OpenCL device among the test devices: the PTX check did not run");
}

TEST_CASE("the own GEMM kernel's parameter sets per device class fit the device") {
    lt::detail::ir::Gemm g;
    g.m = g.n = g.k = 1024;
    const std::string h100 = "NVIDIA H100 80GB HBM3";
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).block_n() == 64);  // 64 tiles of 128^2: narrower ones
    g.m = 8192, g.n = 512;  // 256 tiles of 128^2, two work-groups a multiprocessor
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).block_n() == 128);
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).block_m() == 128);
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).fragments);
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).max_registers == 128);
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).bk == 8);  // no unit strides: edge checks, depth 8
    g.a = {0, 1024, 1, {}}, g.b = {0, 512, 1, {}};  // row-major: whole tiles, depth 16
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).bk == 16);
    g.k = 1000, g.a.row_stride = 1000;  // k not a multiple of 16
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).bk == 8);
    g.k = 1024, g.a = {}, g.b = {};
    g.m = 2048;  // 64 tiles of 128^2: smaller ones
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).block_n() == 64);
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).max_registers == 0);
    g.m = 8192, g.batch = lt::Shape{2};
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).block_m() == 64);
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).block_n() == 128);
    g.batch = lt::Shape{};
    g.n = 256;  // 128 tiles of 128^2
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).block_n() == 128);
    g.n = 128;  // 64 tiles of 128^2: narrower ones
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).block_n() == 64);
    g.n = 10;  // a classifier's last layer: narrow tiles, more work-groups
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).block_n() == 16);
    g.n = 64;
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).block_n() == 64);
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).threads() == 256);
    g.batch = lt::Shape{32}, g.m = g.k = 1024;  // a narrow batch (attention's second product): runs of 2
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).block_m() == 128);
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).threads() == 128);
    CHECK(gk_ocl::gemm_params_for(g, true, h100, 1024, 48 << 10).v == 2);
    g.batch = lt::Shape{}, g.m = 8192, g.k = 1024;
    CHECK(gk_ocl::gemm_params_for(g, false, "pthread-cpu", 4096, 64 << 10).threads() == 64);
    // Small devices get sets that fit them, or one work-item per group.
    for (std::size_t group : {1, 16, 64})
        for (std::size_t local : {256, 4096, 48 << 10}) {
            const gk_ocl::GemmKernelParams p = gk_ocl::gemm_params_for(g, true, h100, group, local);
            CHECK(gk_ocl::gemm_params_valid(p));
            CHECK(std::size_t(p.threads()) <= group);
            CHECK(std::size_t(p.bk) * std::size_t(p.block_m() + p.block_n() + 2 * p.v) * sizeof(float) <= local);
        }
    CHECK(gk_ocl::own_gemm_faster(g, true, h100));
    g.m = g.n = g.k = 4096;
    CHECK(gk_ocl::own_gemm_faster(g, true, h100));  // measured faster than CLBlast's tuned kernel there too
    g.dtype = lt::DType::Float64;
    CHECK_FALSE(gk_ocl::own_gemm_faster(g, true, h100));  // not measured: CLBlast stays
    g.dtype = lt::DType::Float32, g.m = 64;
    CHECK_FALSE(gk_ocl::own_gemm_faster(g, false, "pthread-cpu"));
}

TEST_CASE("the own OpenCL GEMM kernel with 64-bit element offsets" * doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        GkOwnGemm own(d);
        own.backend.set_gemm_wide_index(true);  // what matrices of 2^31 elements or more get
        unsigned seed = 91;
        for (int layout : {0, 1, 3}) {
            INFO("layout " << layout);
            auto [a, ra] = gk_operand<float>(37, 65, layout, seed += 2);
            auto [b, rb] = gk_operand<float>(65, 19, layout, seed += 2);
            gk_check(lt::matmul(a, b), ra, rb);
        }
        const Ref x = random_ref<float>({2, 1, 5, 7}, 97), y = random_ref<float>({1, 3, 7, 4}, 98);
        gk_check(lt::matmul(make_tensor<float>(x), make_tensor<float>(y)), broadcast(x, {2, 3, 5, 7}), broadcast(y, {2, 3, 7, 4}));
    });
}

TEST_CASE("bad own GEMM kernel parameters are a ValueError" * doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        auto& backend = gk_ocl::opencl_backend(d.index);
        CHECK_THROWS_AS(backend.set_gemm_params(gk_ocl::GemmKernelParams{16, 16, 6, 8, 16, 4, 1, true}), lt::ValueError);
        CHECK_THROWS_AS(backend.set_gemm_params(gk_ocl::GemmKernelParams{16, 16, 1, 1, 3, 1, 1, true}), lt::ValueError);
        CHECK_THROWS_AS(backend.set_gemm_params(gk_ocl::GemmKernelParams{16, 16, 1, 1, 16, 1, 4, true}), lt::ValueError);
        CHECK_THROWS_AS(backend.set_gemm_params(gk_ocl::GemmKernelParams{64, 128, 1, 1, 128, 1, 1, true}),
                        lt::ValueError);  // more work-items than a group may have
        CHECK_THROWS_AS(backend.set_gemm_params(gk_ocl::GemmKernelParams{16, 16, 1, 1, 16, 1, 1, false, true}),
                        lt::ValueError);  // double buffering without prefetch
    });
}

TEST_CASE("LAZYTENSOR_DEBUG names the own GEMM kernel; LAZYTENSOR_OPENCL_GEMM is checked" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        GkOwnGemm own(d);
        const auto A = make_tensor<float>(random_ref<float>({4, 8}, 61)), B = make_tensor<float>(random_ref<float>({8, 2}, 62));
        const std::string out = debug_output(1, [&] { lt::matmul(A, B).realize(); });
        CHECK(out.find("lazytensor GEMM kernel") != std::string::npos);
        if (LAZYTENSOR_CLBLAST) {
            own.backend.set_gemm_choice(gk_ocl::GemmChoice::CLBlast);
            const std::string blas = debug_output(1, [&] { lt::matmul(A, B * 2.0f).realize(); });
            CHECK(blas.find("CLBlast Gemm") != std::string::npos);
        } else {
            CHECK_THROWS_AS(own.backend.set_gemm_choice(gk_ocl::GemmChoice::CLBlast), lt::DeviceError);
        }
    });
    const char* before = std::getenv("LAZYTENSOR_OPENCL_GEMM");
    const std::optional<std::string> saved = before ? std::optional<std::string>(before) : std::nullopt;
    setenv("LAZYTENSOR_OPENCL_GEMM", "OWN", 1);
    CHECK(gk_ocl::gemm_choice_from_env() == gk_ocl::GemmChoice::Own);
    setenv("LAZYTENSOR_OPENCL_GEMM", "cublas", 1);
    try {
        gk_ocl::gemm_choice_from_env();
        FAIL_CHECK("LAZYTENSOR_OPENCL_GEMM=cublas was accepted");
    } catch (const lt::ValueError& e) {
        CHECK(std::string(e.what()).find("LAZYTENSOR_OPENCL_GEMM=cublas") != std::string::npos);
    }
    if (saved) setenv("LAZYTENSOR_OPENCL_GEMM", saved->c_str(), 1);
    else unsetenv("LAZYTENSOR_OPENCL_GEMM");
}

TEST_CASE("the own GEMM kernel's epilogue hook sees each result with its row and column" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        auto& backend = gk_ocl::opencl_backend(d.index);
        const std::int64_t m = 37, k = 19, n = 45;
        const Ref a = random_ref<float>({m, k}, 71), b = random_ref<float>({k, n}, 72), bias = random_ref<float>({n}, 73);
        auto upload = [&](const Ref& r) {
            std::vector<float> v(r.v.begin(), r.v.end());
            lt::BufferPtr buf = backend.allocate(lt::DType::Float32, static_cast<std::int64_t>(v.size()));
            backend.write(*buf, 0, v.data(), v.size() * sizeof(float));
            return buf;
        };
        const auto ba = upload(a), bb = upload(b), bbias = upload(bias);
        lt::BufferPtr bc = backend.allocate(lt::DType::Float32, m * n);
        lt::detail::ir::Gemm g;
        g.m = m, g.n = n, g.k = k;
        g.a = {0, k, 1, {}};
        g.b = {0, n, 1, {}};
        gk_ocl::FusedEpilogue relu_bias_row;
        relu_bias_row.parameters = ", __global const T* bias";
        relu_bias_row.code = "v = fmax(v + bias[col], (T)0) + (T)row;";
        backend.own_gemm(g, *ba, *bb, *bc, relu_bias_row, {bbias.get()});
        std::vector<float> got(static_cast<std::size_t>(m * n));
        backend.read(*bc, 0, got.data(), got.size() * sizeof(float));
        const GkProduct p = gk_reference(a, b);
        for (std::int64_t i = 0; i < m; ++i)
            for (std::int64_t j = 0; j < n; ++j) {
                const std::size_t at = static_cast<std::size_t>(i * n + j);
                const double expected = std::max(p.value[at] + bias.v[static_cast<std::size_t>(j)], 0.0) + double(i);
                const double bound = 2.0 * (k + 3) * 1.2e-7 * (p.magnitude[at] + std::fabs(bias.v[static_cast<std::size_t>(j)]) + i);
                if (!(std::fabs(got[at] - expected) <= bound)) FAIL_CHECK("row " << i << ", col " << j << ": " << got[at] << " vs " << expected);
            }
    });
}

#endif

// ------------------------------------------------------------------------- fused epilogues

#if LAZYTENSOR_OPENCL
namespace {

/// The reference of a product and its epilogue: f(product value, its coordinates) in double,
/// with the bound the float product's rounding allows plus `slack` relative.
void gk_check_epilogue(const std::vector<float>& got, const GkProduct& p, const std::vector<double>& expected,
                       std::int64_t k, double slack = 1e-6) {
    REQUIRE(got.size() == expected.size());
    int failures = 0;
    for (std::size_t i = 0; i < got.size() && failures < 5; ++i) {
        const std::size_t at = i % p.value.size();
        const double bound = 2.0 * double(k + 4) * 1.2e-7 * p.magnitude[at] + slack * (1 + std::fabs(expected[i]));
        if (!(std::fabs(double(got[i]) - expected[i]) <= bound)) {
            ++failures;
            FAIL_CHECK("element " << i << ": got " << got[i] << ", expected " << expected[i] << " (bound " << bound << ")");
        }
    }
}

/// The schedule of `y` is one matmul item with its epilogue fused, and LAZYTENSOR_DEBUG says so.
void gk_check_fused(const lt::Tensor<float>& y, bool fused) {
    const auto items = lt::schedule(y);
    if (fused) {
        REQUIRE(items.size() == 1);
        CHECK(items[0].kind == lt::ScheduleItem::Kind::Matmul);
        CHECK(items[0].ops.size() > 1);
        CHECK(items[0].ir.find("epilogue") != std::string::npos);
    } else {
        CHECK(items.size() > 1);
    }
}

}  // namespace

TEST_CASE("a product's element-wise consumer runs in the own GEMM kernel's stores" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        GkOwnGemm own(d);
        own.backend.set_fuse_epilogues(true);
        const std::int64_t m = 65, k = 33, n = 47;
        const Ref a = random_ref<float>({m, k}, 301), b = random_ref<float>({k, n}, 302);
        const Ref bias = random_ref<float>({n}, 303), res = random_ref<float>({m, n}, 304);
        const GkProduct p = gk_reference(a, b);
        const auto A = make_tensor<float>(a), B = make_tensor<float>(b), Bias = make_tensor<float>(bias);
        const auto Res = make_tensor<float>(res);
        std::vector<double> want(p.value.size());

        SUBCASE("relu(x @ w + b), one kernel; its output is usable") {
            const lt::Tensor<float> y = lt::relu(lt::matmul(A, B) + Bias);
            gk_check_fused(y, true);
            const std::string out = debug_output(1, [&] { lt::relu(lt::matmul(A, B) + Bias).realize(); });
            CHECK(out.find("with the epilogue fused into its stores") != std::string::npos);
            CHECK(out.find("1 matmul") != std::string::npos);
            // Level 2 shows the fused kernel's generated source, epilogue included.
            const std::string source = debug_output(2, [&] { lt::relu(lt::matmul(A, B) + Bias).realize(); });
            CHECK(source.find("matmul 0 on " + d.str() + ":") != std::string::npos);
            CHECK(source.find("void lt_gemm(") != std::string::npos);
            CHECK(source.find("store_product") != std::string::npos);
            for (std::size_t i = 0; i < want.size(); ++i) want[i] = std::max(p.value[i] + bias.v[i % n], 0.0);
            gk_check_epilogue(y.to_vector(), p, want, k);
            gk_check_epilogue((y + 1.0f).to_vector(), p, [&] { auto w = want; for (double& v : w) v += 1; return w; }(), k);
        }
        SUBCASE("a scale and a residual add; a changing scale reuses the program") {
            for (float scale : {0.5f, -3.0f}) {
                lt::reset_compile_stats(d);
                const lt::Tensor<float> y = lt::matmul(A, B) * scale + Res;
                gk_check_fused(y, true);
                for (std::size_t i = 0; i < want.size(); ++i) want[i] = p.value[i] * scale + res.v[i];
                gk_check_epilogue(y.to_vector(), p, want, k, 1e-6 * 3);
                if (scale != 0.5f) CHECK(lt::compile_stats(d).programs_built + lt::compile_stats(d).disk_hits == 0);
            }
        }
        SUBCASE("a product held by the program is stored too") {
            const lt::Tensor<float> h = lt::matmul(A, B);
            const lt::Tensor<float> y = lt::relu(h + Bias);
            y.realize();
            CHECK(h.is_realized());
            gk_check(h, a, b);
            for (std::size_t i = 0; i < want.size(); ++i) want[i] = std::max(p.value[i] + bias.v[i % n], 0.0);
            gk_check_epilogue(y.to_vector(), p, want, k);
        }
        SUBCASE("a product realized with its consumer") {
            const lt::Tensor<float> h = lt::matmul(A, B);
            const lt::Tensor<float> y = lt::tanh(h);
            lt::realize({h, y});
            gk_check(h, a, b);
            for (std::size_t i = 0; i < want.size(); ++i) want[i] = std::tanh(p.value[i]);
            gk_check_epilogue(y.to_vector(), p, want, k, 1e-5);
        }
        SUBCASE("bool and float16 inputs, and a select") {
            const Ref mask = ref_of({m, n}, [](const auto& i) { return double((i[0] * 7 + i[1]) % 3 == 0); });
            const Ref half_bias = map(random_ref<float>({n}, 305), [](double v) -> double { return double(static_cast<float>(lt::half(float(v)))); });
            const lt::Tensor<bool> Mask = make_tensor<float>(mask) != 0.0f;
            const lt::Tensor<lt::half> HalfBias = make_tensor<float>(half_bias).cast<lt::half>();
            Mask.realize(), HalfBias.realize();
            const lt::Tensor<float> y = lt::where(Mask, lt::matmul(A, B) + HalfBias.cast<float>(), -1.0f);
            gk_check_fused(y, true);
            for (std::size_t i = 0; i < want.size(); ++i) want[i] = mask.v[i] != 0 ? p.value[i] + half_bias.v[i % n] : -1.0;
            gk_check_epilogue(y.to_vector(), p, want, k);
        }
        SUBCASE("casts to float16 and float64, with a product held; check mode compares them") {
            // float16: the float product rounded once to nearest even, so within the product's
            // bound plus half a float16 ulp (2^-11 relative).
            const lt::Tensor<lt::half> h16 = (lt::matmul(A, B) + Bias).cast<lt::half>();
            REQUIRE(lt::schedule(h16).size() == 1);
            CHECK(lt::schedule(h16)[0].kind == lt::ScheduleItem::Kind::Matmul);
            const std::vector<lt::half> got16 = h16.to_vector();
            std::vector<float> as_float(got16.size());
            for (std::size_t i = 0; i < got16.size(); ++i) as_float[i] = static_cast<float>(got16[i]);
            for (std::size_t i = 0; i < want.size(); ++i) want[i] = p.value[i] + bias.v[i % n];
            gk_check_epilogue(as_float, p, want, k, 4.9e-4);
            // int32 and bool results stay kernels of their own (exact in check mode).
            const lt::Tensor<int32_t> i32 = (lt::matmul(A, B) * 100.0f).cast<int32_t>();
            CHECK(lt::schedule(i32).size() == 2);
            const lt::Tensor<float> h = lt::matmul(A, B);
            const lt::Tensor<bool> positive = h > 0.0f;
            CHECK(lt::schedule(positive).size() == 2);
            const std::vector<bool> gotb = positive.to_vector();
            const std::vector<float> hv = h.to_vector();
            for (std::size_t i = 0; i < gotb.size(); ++i) CHECK(gotb[i] == (hv[i] > 0.0f));
            if (lt::detail::supports_float64(d)) {
                const lt::Tensor<float> held = lt::matmul(A, B);
                const lt::Tensor<double> c = held.cast<double>();
                REQUIRE(lt::schedule(c).size() == 1);
                const std::vector<double> cv = c.to_vector();
                CHECK(held.is_realized());  // stored by the fused item (a tensor holds it)
                const std::vector<float> heldv = held.to_vector();
                for (std::size_t i = 0; i < cv.size(); ++i) CHECK(cv[i] == double(heldv[i]));
                for (std::size_t i = 0; i < want.size(); ++i) want[i] = p.value[i];
                gk_check_epilogue(heldv, p, want, k);
                const bool before = lt::check_enabled();
                lt::set_check_enabled(true);
                CHECK_NOTHROW((lt::matmul(A, B) * 3.0f).cast<double>().realize());
                CHECK_NOTHROW((lt::matmul(A, B) - Bias).cast<lt::half>().realize());
                lt::set_check_enabled(before);
            } else {
                MESSAGE("the float64 cast skipped on " << d.str() << ": the device has no float64");
            }
        }
        SUBCASE("casts through vector stores of 4 and 2 (n = 48), and element stores (n = 45)") {
            for (const gk_ocl::GemmKernelParams& params :
                 {gk_ocl::GemmKernelParams{4, 8, 4, 4, 8, 4, 4, true, true}, gk_ocl::GemmKernelParams{8, 4, 2, 4, 8, 2, 2, true}}) {
                own.backend.set_gemm_params(params);
                for (const std::int64_t nn : {48, 45}) {
                    const Ref b2 = random_ref<float>({k, nn}, 306);
                    const GkProduct p2 = gk_reference(a, b2);
                    const lt::Tensor<lt::half> y = (lt::matmul(A, make_tensor<float>(b2)) * 0.5f).cast<lt::half>();
                    REQUIRE(lt::schedule(y).size() == 1);
                    const std::vector<lt::half> got = y.to_vector();
                    std::vector<float> as_float(got.size());
                    for (std::size_t i = 0; i < got.size(); ++i) as_float[i] = static_cast<float>(got[i]);
                    std::vector<double> w2(p2.value.size());
                    for (std::size_t i = 0; i < w2.size(); ++i) w2[i] = p2.value[i] * 0.5;
                    gk_check_epilogue(as_float, p2, w2, k, 4.9e-4);
                    if (lt::detail::supports_float64(d)) {
                        const std::vector<double> got64 = lt::matmul(A, make_tensor<float>(b2)).cast<double>().to_vector();
                        gk_check_epilogue(std::vector<float>(got64.begin(), got64.end()), p2, p2.value, k);
                    }
                }
            }
            own.backend.set_gemm_params(std::nullopt);
        }
        SUBCASE("what does not fuse still runs: a reduction, a second reader") {
            const lt::Tensor<float> s = lt::softmax(lt::matmul(A, B), -1);
            gk_check_fused(s, false);
            const lt::Tensor<float> h = lt::matmul(A, B);
            const lt::Tensor<float> y = lt::relu(h), z = h.sum(1);
            lt::realize({y, z});
            for (std::size_t i = 0; i < want.size(); ++i) want[i] = std::max(p.value[i], 0.0);
            gk_check_epilogue(y.to_vector(), p, want, k);
        }
    });
}

TEST_CASE("fused epilogues over batches, folded batches, reshapes, n = 1 and k = 0" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        GkOwnGemm own(d);
        own.backend.set_fuse_epilogues(true);
        SUBCASE("a batch with a bias per matrix: the domain is [batch, m, n]") {
            const Ref a = random_ref<float>({3, 33, 17}, 311), b = random_ref<float>({3, 17, 29}, 312);
            const Ref bias = random_ref<float>({3, 1, 29}, 313);
            const lt::Tensor<float> y = lt::relu(lt::matmul(make_tensor<float>(a), make_tensor<float>(b)) * 0.25f + make_tensor<float>(bias));
            gk_check_fused(y, true);
            const GkProduct p = gk_reference(a, b);
            std::vector<double> want(p.value.size());
            for (std::size_t i = 0; i < want.size(); ++i)
                want[i] = std::max(p.value[i] * 0.25 + bias.v[i / (33 * 29) * 29 + i % 29], 0.0);
            gk_check_epilogue(y.to_vector(), p, want, 17);
        }
        SUBCASE("x[b, m, k] @ w[k, n] + bias: one GEMM of b*m rows") {
            const Ref x = random_ref<float>({4, 9, 17}, 321), w = random_ref<float>({17, 21}, 322), bias = random_ref<float>({21}, 323);
            const lt::Tensor<float> y = lt::matmul(make_tensor<float>(x), make_tensor<float>(w)) + make_tensor<float>(bias);
            gk_check_fused(y, true);
            const GkProduct p = gk_reference(Ref{{36, 17}, x.v}, w);
            std::vector<double> want(p.value.size());
            for (std::size_t i = 0; i < want.size(); ++i) want[i] = p.value[i] + bias.v[i % 21];
            gk_check_epilogue(y.to_vector(), p, want, 17);
        }
        SUBCASE("a product read through a reshape: coordinates by division") {
            const Ref a = random_ref<float>({6, 5}, 331), b = random_ref<float>({5, 10}, 332), bias = random_ref<float>({20}, 333);
            const lt::Tensor<float> y = lt::matmul(make_tensor<float>(a), make_tensor<float>(b)).reshape({3, 20}) - make_tensor<float>(bias);
            gk_check_fused(y, true);
            const GkProduct p = gk_reference(a, b);
            std::vector<double> want(p.value.size());
            for (std::size_t i = 0; i < want.size(); ++i) want[i] = p.value[i] - bias.v[i % 20];
            gk_check_epilogue(y.to_vector(), p, want, 5);
        }
        SUBCASE("a column-major operand, n = 1, and a transposed batch") {
            const Ref a = random_ref<float>({19, 40}, 341), b = random_ref<float>({19, 1}, 342);
            const lt::Tensor<float> y = lt::exp(lt::matmul(make_tensor<float>(a).t(), make_tensor<float>(b)) * 0.1f);
            gk_check_fused(y, true);
            const GkProduct p = gk_reference(permute(a, {1, 0}), b);
            std::vector<double> want(p.value.size());
            for (std::size_t i = 0; i < want.size(); ++i) want[i] = std::exp(p.value[i] * 0.1);
            gk_check_epilogue(y.to_vector(), p, want, 19, 1e-5);
        }
        SUBCASE("k = 0: the epilogue of zeros") {
            const Ref bias = random_ref<float>({7}, 351);
            const auto empty_a = make_tensor<float>(Ref{{5, 0}, {}}), empty_b = make_tensor<float>(Ref{{0, 7}, {}});
            const lt::Tensor<float> y = lt::relu(lt::matmul(empty_a, empty_b) + make_tensor<float>(bias));
            const auto items = lt::schedule(y);  // (the front end may know the product is zeros)
            CHECK(items.size() == 1);
            const std::vector<float> got = y.to_vector();
            REQUIRE(got.size() == 35);
            for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == float(std::max(bias.v[i % 7], 0.0)));
        }
        SUBCASE("float64") {
            if (!lt::detail::supports_float64(d)) {
                MESSAGE("skipped on " << d.str() << ": the device has no float64");
                return;
            }
            const Ref a = random_ref<double>({23, 31}, 361), b = random_ref<double>({31, 18}, 362);
            const lt::Tensor<double> y = lt::relu(lt::matmul(make_tensor<double>(a), make_tensor<double>(b)) - 0.5);
            const auto items = lt::schedule(y);
            REQUIRE(items.size() == 1);
            const GkProduct p = gk_reference(a, b);
            const std::vector<double> got = y.to_vector();
            for (std::size_t i = 0; i < got.size(); ++i)
                CHECK(std::fabs(got[i] - std::max(p.value[i] - 0.5, 0.0)) <= 2.0 * 35 * 2.3e-16 * (p.magnitude[i] + 0.5));
        }
        SUBCASE("LAZYTENSOR_CHECK compares a fused item with the host") {
            const bool before = lt::check_enabled();
            lt::set_check_enabled(true);
            const Ref a = random_ref<float>({12, 8}, 371), b = random_ref<float>({8, 9}, 372);
            const lt::Tensor<float> h = lt::matmul(make_tensor<float>(a), make_tensor<float>(b));
            const lt::Tensor<float> y = lt::sigmoid(h + 1.0f);
            CHECK_NOTHROW(y.realize());
            lt::set_check_enabled(before);
            const GkProduct p = gk_reference(a, b);
            std::vector<double> want(p.value.size());
            for (std::size_t i = 0; i < want.size(); ++i) want[i] = 1.0 / (1.0 + std::exp(-(p.value[i] + 1.0)));
            gk_check_epilogue(y.to_vector(), p, want, 8, 1e-5);
        }
    });
}

namespace {

/// The schedule of `y` is one matmul item with the producer of operand `which` ("A" or "B")
/// fused into its loads.
template <class T>
void gk_check_prologue(const lt::Tensor<T>& y, const char* which) {
    const auto items = lt::schedule(y);
    REQUIRE(items.size() == 1);
    CHECK(items[0].kind == lt::ScheduleItem::Kind::Matmul);
    CHECK(items[0].ir.find(std::string("prologue of ") + which) != std::string::npos);
}

/// `r` with each element a float: f(float(v)) rounded to float, as the device computes it.
Ref gk_float_map(const Ref& r, const std::function<float(float)>& f) {
    return map(r, [&](double v) { return double(f(float(v))); });
}

}  // namespace

TEST_CASE("an operand's scale or cast runs in the own GEMM kernel's loads" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        GkOwnGemm own(d);
        own.backend.set_fuse_epilogues(true);
        own.backend.set_fuse_half_loads(true);  // (the default on CPU devices, not on GPUs)
        const std::int64_t m = 67, k = 35, n = 45;
        const Ref a = random_ref<float>({m, k}, 401), b = random_ref<float>({k, n}, 402), bias = random_ref<float>({n}, 403);
        const auto A = make_tensor<float>(a), B = make_tensor<float>(b), Bias = make_tensor<float>(bias);

        SUBCASE("a scale of A; a changing scale reuses the program") {
            for (float s : {0.5f, -3.0f, 1e-3f}) {
                lt::reset_compile_stats(d);
                const lt::Tensor<float> y = lt::matmul(A * s, B);
                gk_check_prologue(y, "A");
                gk_check(y, gk_float_map(a, [&](float v) { return v * s; }), b);
                if (s != 0.5f) CHECK(lt::compile_stats(d).programs_built + lt::compile_stats(d).disk_hits == 0);
            }
        }
        SUBCASE("float16 B cast to float32, read as half; LAZYTENSOR_DEBUG names it") {
            const Ref bh = map(b, [](double v) { return double(static_cast<float>(lt::half(float(v)))); });
            const lt::Tensor<lt::half> Bh = make_tensor<float>(bh).cast<lt::half>();
            Bh.realize();
            const lt::Tensor<float> y = lt::matmul(A, Bh.cast<float>());
            gk_check_prologue(y, "B");
            const std::string out = debug_output(1, [&] { lt::matmul(A, Bh.cast<float>()).realize(); });
            CHECK(out.find("with the producer of B fused into its loads") != std::string::npos);
            gk_check(y, a, bh);
        }
        SUBCASE("float16 operands through vector loads of 4 and of 2, and where rows are not aligned") {
            auto halves = [](const Ref& r) { return map(r, [](double v) { return double(static_cast<float>(lt::half(float(v)))); }); };
            // k = 36 and n = 48: rows aligned for vectors of 4; k = 35 and n = 45: no row after
            // the first is, so every load takes the element path.
            for (const std::int64_t kk : {36, 35}) {
                const std::int64_t nn = kk == 36 ? 48 : 45;
                const Ref ah = halves(random_ref<float>({m, kk}, 409)), bh = halves(random_ref<float>({kk, nn}, 410));
                const lt::Tensor<lt::half> Ah = make_tensor<float>(ah).cast<lt::half>().realize();
                const lt::Tensor<lt::half> Bh = make_tensor<float>(bh).cast<lt::half>().realize();
                for (const gk_ocl::GemmKernelParams& params :
                     {gk_ocl::GemmKernelParams{4, 8, 4, 4, 8, 4, 4, true, true}, gk_ocl::GemmKernelParams{8, 4, 2, 4, 8, 2, 2, true}}) {
                    own.backend.set_gemm_params(params);
                    const lt::Tensor<float> y = lt::matmul(Ah.cast<float>() * 2.0f, Bh.cast<float>());
                    const auto items = lt::schedule(y);
                    REQUIRE(items.size() == 1);
                    CHECK(items[0].ir.find("prologue of A") != std::string::npos);
                    CHECK(items[0].ir.find("prologue of B") != std::string::npos);
                    gk_check(y, map(ah, [](double v) { return 2 * v; }), bh);
                    // B transposed: its loads run along k, the unit-stride axis of Bt.
                    const lt::Tensor<lt::half> Bt = make_tensor<float>(permute(bh, {1, 0})).cast<lt::half>().realize();
                    const lt::Tensor<float> z = lt::matmul(Ah.cast<float>(), Bt.cast<float>().t());
                    CHECK(lt::schedule(z).size() == 1);
                    gk_check(z, ah, bh);
                }
            }
            own.backend.set_gemm_params(std::nullopt);
        }
        SUBCASE("both operands and an epilogue: one kernel") {
            const lt::Tensor<float> y = lt::relu(lt::matmul(A * 0.25f, B - 1.0f) + Bias);
            const auto items = lt::schedule(y);
            REQUIRE(items.size() == 1);
            CHECK(items[0].ir.find("prologue of A") != std::string::npos);
            CHECK(items[0].ir.find("prologue of B") != std::string::npos);
            CHECK(items[0].ir.find("epilogue") != std::string::npos);
            const Ref a2 = gk_float_map(a, [](float v) { return v * 0.25f; });
            const Ref b2 = gk_float_map(b, [](float v) { return v - 1.0f; });
            const GkProduct p = gk_reference(a2, b2);
            std::vector<double> want(p.value.size());
            for (std::size_t i = 0; i < want.size(); ++i) want[i] = std::max(p.value[i] + bias.v[i % n], 0.0);
            gk_check_epilogue(y.to_vector(), p, want, k);
        }
        SUBCASE("a producer held by the program is stored too") {
            const lt::Tensor<float> as = A * 2.0f;
            const lt::Tensor<float> y = lt::matmul(as, B);
            gk_check_prologue(y, "A");
            y.realize();
            CHECK(as.is_realized());
            const Ref a2 = gk_float_map(a, [](float v) { return v * 2.0f; });
            check_close(as, a2, 0, 0);
            gk_check(y, a2, b);
        }
        SUBCASE("operands read through transposes, a batch, and a column-major input") {
            const Ref at = random_ref<float>({k, m}, 404);  // A stored transposed
            const Ref at_t = permute(at, {1, 0});
            const lt::Tensor<float> y = lt::matmul((make_tensor<float>(at) * 3.0f).t(), B);
            gk_check(y, gk_float_map(at_t, [](float v) { return v * 3.0f; }), b);
            const lt::Tensor<float> y2 = lt::matmul(make_tensor<float>(at).t() * 3.0f, B);
            gk_check(y2, gk_float_map(at_t, [](float v) { return v * 3.0f; }), b);
            const Ref a3 = random_ref<float>({3, 9, k}, 405);
            const lt::Tensor<float> y3 = lt::matmul(make_tensor<float>(a3) * 0.5f, B);
            gk_check_prologue(y3, "A");
            gk_check(y3, gk_float_map(Ref{{27, k}, a3.v}, [](float v) { return v * 0.5f; }), b);
        }
        SUBCASE("what does not fuse still runs: two inputs, a second reader, a slice") {
            const Ref row = random_ref<float>({1, k}, 406);
            const lt::Tensor<float> y = lt::matmul(A * make_tensor<float>(row), B);
            CHECK(lt::schedule(y).size() == 2);
            gk_check(y, zip(a, broadcast(row, {m, k}), [](double x, double r) { return double(float(x) * float(r)); }), b);
            const lt::Tensor<float> as = A * 2.0f;
            const lt::Tensor<float> y2 = lt::matmul(as, B);
            const lt::Tensor<float> s = as.sum(1);
            lt::realize({y2, s});
            const Ref a2 = gk_float_map(a, [](float v) { return v * 2.0f; });
            gk_check(y2, a2, b);
            check_close(s, reduce(a2, {1}, false, 0.0, ref_add), 1e-5, 1e-5);
            const Ref wide = random_ref<float>({m, k + 3}, 407);
            const lt::Tensor<float> y3 = lt::matmul(make_tensor<float>(wide).slice(1, 1, k + 1) * 2.0f, B);
            const Ref sliced = ref_of({m, k}, [&](const auto& i) { return double(float(wide.at({i[0], i[1] + 1})) * 2.0f); });
            gk_check(y3, sliced, b);
        }
        SUBCASE("k = 0 and float64 inputs") {
            const auto empty_a = make_tensor<float>(Ref{{5, 0}, {}}), empty_b = make_tensor<float>(Ref{{0, 7}, {}});
            const std::vector<float> zeros = lt::matmul(empty_a * 2.0f, empty_b).to_vector();
            REQUIRE(zeros.size() == 35);
            for (float z : zeros) CHECK(z == 0.0f);
            const Ref bd = random_ref<double>({k, n}, 408);
            const lt::Tensor<float> y = lt::matmul(A, make_tensor<double>(bd).cast<float>());
            if (lt::detail::supports_float64(d)) gk_check_prologue(y, "B");
            else CHECK(lt::schedule(y).size() == 2);  // the double buffer is read by a kernel of its own
            gk_check(y, a, gk_float_map(bd, [](float v) { return v; }));
            if (lt::detail::supports_float64(d)) {
                // A float32 input widened in the loads of a float64 product keeps double precision
                // (the prologue's result is not rounded to its input's type).
                const lt::Tensor<double> w = lt::matmul(A.cast<double>() * 3.0, make_tensor<double>(bd));
                gk_check_prologue(w, "A");
                gk_check(w, map(a, [](double v) { return 3 * v; }), bd);
            }
        }
        SUBCASE("both prologues made while the fused code's cache is full") {
            // A's code must survive B's making room (under ASan, a dangling A was a use after free).
            const std::size_t before = own.backend.cache_capacity();
            own.backend.set_cache_capacity(1);
            const lt::Tensor<float> y = lt::matmul(A * 0.25f, B * 4.0f);
            gk_check_prologue(y, "B");
            gk_check(y, gk_float_map(a, [](float v) { return v * 0.25f; }), gk_float_map(b, [](float v) { return v * 4.0f; }));
            own.backend.set_cache_capacity(before);
        }
        SUBCASE("LAZYTENSOR_CHECK compares a fused prologue with the host") {
            const bool before = lt::check_enabled();
            lt::set_check_enabled(true);
            const lt::Tensor<float> y = lt::tanh(lt::matmul(A * 0.5f, B));
            CHECK_NOTHROW(y.realize());
            lt::set_check_enabled(before);
            const GkProduct p = gk_reference(gk_float_map(a, [](float v) { return v * 0.5f; }), b);
            std::vector<double> want(p.value.size());
            for (std::size_t i = 0; i < want.size(); ++i) want[i] = std::tanh(p.value[i]);
            gk_check_epilogue(y.to_vector(), p, want, k, 1e-5);
        }
        SUBCASE("fusion turned off runs the producer as a kernel of its own") {
            own.backend.set_fuse_epilogues(false);
            const lt::Tensor<float> y = lt::matmul(A * 0.5f, B);
            CHECK(lt::schedule(y).size() == 2);
            gk_check(y, gk_float_map(a, [](float v) { return v * 0.5f; }), b);
            own.backend.set_fuse_epilogues(true);
            own.backend.set_fuse_half_loads(false);
            const lt::Tensor<lt::half> Ah = A.cast<lt::half>().realize();
            const lt::Tensor<float> z = lt::matmul(Ah.cast<float>() * 0.5f, B);
            CHECK(lt::schedule(z).size() == 2);
            gk_check(z, gk_float_map(map(a, [](double v) { return double(static_cast<float>(lt::half(float(v)))); }),
                                     [](float v) { return v * 0.5f; }), b);
        }
    });
}

TEST_CASE("epilogue fusion turned off runs the consumer as a kernel of its own" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for_each_device([](lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL) return;
        GkOwnGemm own(d);
        own.backend.set_fuse_epilogues(false);
        const Ref a = random_ref<float>({9, 4}, 381), b = random_ref<float>({4, 6}, 382);
        const lt::Tensor<float> y = lt::relu(lt::matmul(make_tensor<float>(a), make_tensor<float>(b)));
        CHECK(lt::schedule(y).size() == 2);
        own.backend.set_fuse_epilogues(true);  // a plan made before is not reused
        CHECK(lt::schedule(y).size() == 1);
    });
}
#endif
