// SPDX-License-Identifier: MIT
// Creation, element types and promotion, item/to_vector, printing, and bad input.
#include <sstream>

#include "common.hpp"

TEST_CASE("creation from data, constants and ranges") {
    for_each_device([](lt::Device d) {
        lt::Tensor<float> a = lt::tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3});
        CHECK(a.shape() == lt::Shape{2, 3});
        CHECK(a.numel() == 6);
        CHECK(a.ndim() == 2);
        CHECK(a.dtype() == lt::DType::Float32);
        CHECK(a.device() == d);
        CHECK(a.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});

        lt::Tensor<int32_t> v = lt::tensor<int32_t>({7, -8, 9});
        CHECK(v.shape() == lt::Shape{3});
        CHECK(v.to_vector() == std::vector<int32_t>{7, -8, 9});

        CHECK(lt::zeros<double>({2, 2}).to_vector() == std::vector<double>(4, 0.0));
        CHECK(lt::ones<int64_t>({3}).to_vector() == std::vector<int64_t>(3, 1));
        CHECK(lt::full<uint8_t>({2}, 200).to_vector() == std::vector<uint8_t>{200, 200});
        CHECK(lt::full<bool>({2}, true).to_vector() == std::vector<bool>{true, true});

        CHECK(lt::arange<int32_t>(5).to_vector() == std::vector<int32_t>{0, 1, 2, 3, 4});
        CHECK(lt::arange<float>(1, 2, 0.25).to_vector() == std::vector<float>{1, 1.25f, 1.5f, 1.75f});
        CHECK(lt::arange<int64_t>(10, 0, -3).to_vector() == std::vector<int64_t>{10, 7, 4, 1});
        CHECK(lt::arange<float>(3, 1).numel() == 0);
        CHECK_THROWS_AS(lt::arange<float>(0, 1e300), lt::ValueError);  // too many elements, not UB

        lt::Tensor<bool> mask = lt::tensor<bool>({true, false, true}, {3});
        CHECK(mask.to_vector() == std::vector<bool>{true, false, true});
    });
}

TEST_CASE("0-d, size-1 and size-0 tensors") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> s = lt::tensor<float>(std::vector<float>{2.5f}, {});
        CHECK(s.shape() == lt::Shape{});
        CHECK(s.ndim() == 0);
        CHECK(s.numel() == 1);
        CHECK(s.item() == 2.5f);
        CHECK((s * 2.0f + 1.0f).item() == 6.0f);
        CHECK(lt::full<int32_t>({}, 4).item() == 4);

        lt::Tensor<double> one = lt::tensor<double>({3.0}, {1, 1});
        CHECK(lt::exp(one).item() == doctest::Approx(std::exp(3.0)));

        lt::Tensor<float> empty = lt::zeros<float>({0, 3});
        CHECK(empty.numel() == 0);
        CHECK((empty + 1.0f).to_vector().empty());
        CHECK((empty + 1.0f).shape() == lt::Shape{0, 3});
        lt::Tensor<float> empty_data = lt::tensor<float>(std::vector<float>{}, {2, 0});
        CHECK(empty_data.to_vector().empty());
    });
}

// ----------------------------------------------------------------------------------- promotion

template <class A, class B>
void check_promotion_pair() {
    // Compile-time type of the expression equals the dtype the graph computes at run time.
    lt::Tensor<A> a = lt::ones<A>({2});
    lt::Tensor<B> b = lt::ones<B>({2});
    if constexpr (!(std::is_same_v<A, bool> && std::is_same_v<B, bool>)) {
        auto sum = a + b;
        using R = typename decltype(sum)::value_type;
        static_assert(std::is_same_v<R, lt::promote_t<A, B>>);
        lt::Tensor<R> t = sum;
        CHECK(t.node_ptr()->dtype == lt::dtype_of<R>());
    }
    auto cmp = a < b;
    static_assert(std::is_same_v<typename decltype(cmp)::value_type, bool>);
    auto m = lt::maximum(a, b);
    lt::Tensor<typename decltype(m)::value_type> mt = m;
    CHECK(mt.node_ptr()->dtype == lt::dtype_of<lt::promote_t<A, B>>());
}

template <class A>
void check_promotion_row() {
    check_promotion_pair<A, bool>();
    check_promotion_pair<A, uint8_t>();
    check_promotion_pair<A, int32_t>();
    check_promotion_pair<A, int64_t>();
    check_promotion_pair<A, float>();
    check_promotion_pair<A, double>();
}

TEST_CASE("type promotion follows PyTorch, at compile time and run time alike") {
    static_assert(std::is_same_v<lt::promote_t<int32_t, float>, float>);
    static_assert(std::is_same_v<lt::promote_t<int64_t, float>, float>);
    static_assert(std::is_same_v<lt::promote_t<uint8_t, int32_t>, int32_t>);
    static_assert(std::is_same_v<lt::promote_t<bool, uint8_t>, uint8_t>);
    static_assert(std::is_same_v<lt::promote_t<float, double>, double>);
    // A scalar does not widen a tensor of its own category.
    static_assert(std::is_same_v<lt::scalar_promote_t<int32_t, int64_t>, int32_t>);
    static_assert(std::is_same_v<lt::scalar_promote_t<float, double>, float>);
    static_assert(std::is_same_v<lt::scalar_promote_t<int32_t, double>, float>);
    static_assert(std::is_same_v<lt::scalar_promote_t<bool, int>, int64_t>);
    static_assert(std::is_same_v<lt::scalar_promote_t<uint8_t, int>, uint8_t>);
    check_promotion_row<bool>();
    check_promotion_row<uint8_t>();
    check_promotion_row<int32_t>();
    check_promotion_row<int64_t>();
    check_promotion_row<float>();
    check_promotion_row<double>();

    for_each_device([](lt::Device) {
        lt::Tensor<int32_t> i = lt::tensor<int32_t>({1, 2, 3});
        auto half = i * 2.5;  // int tensor * floating scalar -> float32
        static_assert(std::is_same_v<typename decltype(half)::value_type, float>);
        CHECK(half.to_vector() == std::vector<float>{2.5f, 5.0f, 7.5f});
        auto same = i + int64_t(1);  // int64 scalar does not widen int32
        static_assert(std::is_same_v<typename decltype(same)::value_type, int32_t>);
        CHECK(same.to_vector() == std::vector<int32_t>{2, 3, 4});
        auto quotient = i / 2;  // true division
        static_assert(std::is_same_v<typename decltype(quotient)::value_type, float>);
        CHECK(quotient.to_vector() == std::vector<float>{0.5f, 1.0f, 1.5f});
        lt::Tensor<uint8_t> u = lt::tensor<uint8_t>({250, 3});
        CHECK((u + 10).to_vector() == std::vector<uint8_t>{4, 13});  // uint8 arithmetic wraps
        lt::Tensor<bool> mask = lt::tensor<bool>({true, false});
        auto counted = mask + 1;
        static_assert(std::is_same_v<typename decltype(counted)::value_type, int64_t>);
        CHECK(counted.to_vector() == std::vector<int64_t>{2, 1});
        auto exp_int = lt::exp(i);  // floating functions of integers compute in float32
        static_assert(std::is_same_v<typename decltype(exp_int)::value_type, float>);
        CHECK(exp_int.to_vector()[1] == doctest::Approx(std::exp(2.0)));
    });
}

TEST_CASE("compound assignment builds a new lazy value") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> x = lt::tensor<float>({1, 2, 3});
        lt::Tensor<float> original = x;
        x += 1.0f;
        x *= x;
        x -= lt::tensor<float>({1, 1, 1});
        x /= 2;
        CHECK(x.to_vector() == std::vector<float>{1.5f, 4.0f, 7.5f});
        CHECK(original.to_vector() == std::vector<float>{1, 2, 3});
        lt::Tensor<int32_t> i = lt::tensor<int32_t>({1, 2});
        i += 5;
        CHECK(i.to_vector() == std::vector<int32_t>{6, 7});
    });
}

TEST_CASE("casts convert like C++, saturating float to integer and mapping NaN to 0") {
    for_each_device([](lt::Device) {
        const float nan = std::numeric_limits<float>::quiet_NaN();
        const float inf = std::numeric_limits<float>::infinity();
        lt::Tensor<float> f = lt::tensor<float>({-1.75f, 2.5f, 300.0f, -1e20f, nan, inf});
        CHECK(lt::cast<int32_t>(f).to_vector() ==
              std::vector<int32_t>{-1, 2, 300, std::numeric_limits<int32_t>::min(), 0, std::numeric_limits<int32_t>::max()});
        CHECK(f.cast<uint8_t>().to_vector() == std::vector<uint8_t>{0, 2, 255, 0, 0, 255});
        CHECK(f.cast<bool>().to_vector() == std::vector<bool>{true, true, true, true, true, true});
        lt::Tensor<int64_t> big = lt::tensor<int64_t>({(int64_t(1) << 40) + 1, -3});
        CHECK(big.cast<double>().to_vector() == std::vector<double>{double((int64_t(1) << 40) + 1), -3.0});
        CHECK(big.cast<int32_t>().to_vector()[1] == -3);
        lt::Tensor<bool> b = lt::tensor<bool>({true, false});
        CHECK(b.cast<float>().to_vector() == std::vector<float>{1.0f, 0.0f});
        CHECK(lt::cast<double>(lt::tensor<uint8_t>({255})).item() == 255.0);
    });
}

TEST_CASE("printing shows values, shape, dtype and device") {
    lt::Tensor<float> a = lt::tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    std::ostringstream out;
    out << a;
    CHECK(out.str() == "tensor([[1., 2., 3.],\n        [4., 5., 6.]], shape=[2, 3], dtype=float32, device=host)");
    std::ostringstream big;
    big << lt::arange<int32_t>(5000);
    CHECK(big.str().find("[   0,    1,    2, ..., 4997, 4998, 4999]") != std::string::npos);
    std::ostringstream flag;
    flag << (a > 3.0f);
    CHECK(flag.str().find("[[false, false, false],") != std::string::npos);
    CHECK(flag.str().find("dtype=bool") != std::string::npos);
}

// ----------------------------------------------------------------------------------- bad input

TEST_CASE("bad input throws lazytensor errors that name the operation and the values") {
    lt::Tensor<float> a = lt::tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3});
    lt::Tensor<float> b = lt::tensor<float>({1, 2, 3, 4}, {4});

    std::string m = message_of<lt::ShapeError>([&] { auto e = a + b; });
    CHECK(m.find("add") != std::string::npos);
    CHECK(m.find("[2, 3]") != std::string::npos);
    CHECK(m.find("[4]") != std::string::npos);

    m = message_of<lt::AxisError>([&] { auto s = a.sum(2); });
    CHECK(m.find("sum") != std::string::npos);
    CHECK(m.find("axis 2") != std::string::npos);
    CHECK(m.find("[2, 3]") != std::string::npos);
    CHECK(message_of<lt::AxisError>([&] { auto s = lt::max(a, -3); }).find("axis -3") != std::string::npos);
    CHECK(message_of<lt::AxisError>([&] { auto s = a.mean({1, -1}); }).find("twice") != std::string::npos);
    CHECK(message_of<lt::AxisError>([&] { auto p = a.permute({0, 0}); }).find("twice") != std::string::npos);
    CHECK(message_of<lt::AxisError>([&] { auto p = a.transpose(0, 5); }).find("transpose") != std::string::npos);

    m = message_of<lt::ShapeError>([&] { auto r = a.reshape({4}); });
    CHECK(m.find("reshape") != std::string::npos);
    CHECK(m.find("[2, 3]") != std::string::npos);
    CHECK(m.find("[4]") != std::string::npos);
    CHECK(message_of<lt::ShapeError>([&] { auto r = a.reshape({-1, -1}); }).find("only one") != std::string::npos);
    CHECK(message_of<lt::ShapeError>([&] { auto r = a.reshape({4, -1}); }).find("-1") != std::string::npos);
    CHECK(message_of<lt::ShapeError>([&] { auto r = a.expand({4, 3}); }).find("expand") != std::string::npos);

    m = message_of<lt::ValueError>([&] { a.item(); });
    CHECK(m.find("item()") != std::string::npos);
    CHECK(m.find("[2, 3]") != std::string::npos);
    CHECK(m.find("6 elements") != std::string::npos);

    m = message_of<lt::ShapeError>([&] { lt::tensor<float>({1, 2, 3, 4, 5}, {2, 3}); });
    CHECK(m.find("lt::tensor") != std::string::npos);
    CHECK(m.find("5 values") != std::string::npos);
    CHECK(m.find("[2, 3]") != std::string::npos);

    CHECK(message_of<lt::ValueError>([&] { lt::zeros<float>({0, 2}).max().realize(); }).find("extent 0") != std::string::npos);
    CHECK(message_of<lt::ValueError>([&] { lt::arange<float>(0, 1, 0); }).find("arange") != std::string::npos);
    CHECK(message_of<lt::ValueError>([&] { lt::Tensor<float> empty; empty.shape(); }).find("empty") != std::string::npos);
    CHECK(message_of<lt::DeviceError>([&] { lt::detail::parse_device("gpu"); }).find("gpu") != std::string::npos);

    // Every error derives from lt::Error and std::exception.
    CHECK_THROWS_AS(a + b, lt::Error);
    CHECK_THROWS_AS(a.reshape({5}), std::exception);

    // After the throws, the tensors are untouched and usable.
    CHECK(a.to_vector() == std::vector<float>{1, 2, 3, 4, 5, 6});
    CHECK((a * 2.0f).sum().item() == 42.0f);
    CHECK(b.to_vector() == std::vector<float>{1, 2, 3, 4});
}

TEST_CASE("a failed realize leaves every tensor usable") {
    for_each_device([](lt::Device) {
        lt::Tensor<float> a = lt::tensor<float>({1, 2, 3});
        lt::Tensor<float> small = a * 2.0f;
        // Far more memory than any machine has: allocation fails after `small` may have run.
        lt::Tensor<float> huge = lt::full<float>({int64_t(1) << 44}, 1.0f) + 1.0f;
        CHECK_THROWS_AS(lt::realize({small, huge}), lt::Error);
        CHECK_FALSE(small.is_realized());
        CHECK_FALSE(huge.is_realized());
        CHECK(small.to_vector() == std::vector<float>{2, 4, 6});
        CHECK(a.to_vector() == std::vector<float>{1, 2, 3});
        CHECK(huge.shape() == lt::Shape{int64_t(1) << 44});
    });
}

// A lazy tensor in static storage is destroyed after the main thread's thread_locals.
lt::Tensor<float> g_lazy_until_exit;

TEST_CASE("regressions: sizes that overflow, negative extents, lazy tensors alive at exit") {
    CHECK_THROWS_AS(lt::full<float>({int64_t(1) << 32, int64_t(1) << 32}, 1.0f), lt::ShapeError);
    CHECK_THROWS_AS(lt::tensor<float>({1.0f}).expand({-2}), lt::ShapeError);
    CHECK_THROWS_AS(lt::tensor<float>({1.0f}).reshape({int64_t(1) << 40, int64_t(1) << 40}), lt::ShapeError);
    lt::Tensor<float> wide = lt::full<float>({int64_t(1) << 32, 1}, 1.0f);
    CHECK_THROWS_AS(wide + lt::full<float>({1, int64_t(1) << 32}, 1.0f), lt::ShapeError);
    lt::Tensor<float> huge = lt::full<float>({int64_t(1) << 62}, 1.0f) + 1.0f;
    CHECK_THROWS_AS(huge.realize(), lt::BackendError);
    lt::Tensor<float> a = lt::tensor<float>({1, 2, 3});
    g_lazy_until_exit = lt::exp(a) + 1.0f;
    { lt::Tensor<float> tmp = a * 2.0f; }
    CHECK(a.to_vector() == std::vector<float>{1, 2, 3});
}

TEST_CASE("environment variables: one rule for switches and numbers; a bad value is a ValueError naming it") {
    using lt::detail::env_flag;
    using lt::detail::env_int;
    for (const char* on : {"1", "on", "ON", "true", "True", "yes"}) {
        ScopedEnvVar v("LAZYTENSOR_CHECK", on);
        CHECK(env_flag("LAZYTENSOR_CHECK", false));
    }
    for (const char* off : {"0", "off", "Off", "false", "FALSE", "no"}) {
        ScopedEnvVar v("LAZYTENSOR_STATIC_KERNELS", off);
        CHECK(!env_flag("LAZYTENSOR_STATIC_KERNELS", true));
    }
    {
        ScopedEnvVar v("LAZYTENSOR_CHECK", "");  // empty is unset
        CHECK(!env_flag("LAZYTENSOR_CHECK", false));
    }
    for (const char* bad : {"2", "enabled", "o", " 1"}) {
        ScopedEnvVar v("LAZYTENSOR_CHECK", bad);
        CHECK_THROWS_WITH_AS(env_flag("LAZYTENSOR_CHECK", false),
                             (std::string("LAZYTENSOR_CHECK=") + bad + " is not a switch: use 1 or 0 (also on/off, true/false, yes/no)").c_str(),
                             lt::ValueError);
    }
    {
        ScopedEnvVar v("LAZYTENSOR_DEBUG", "2");
        CHECK(env_int("LAZYTENSOR_DEBUG", 0, 0, 3, "a debug level") == 2);
    }
    for (const char* bad : {"abc", "4", "-1", "1.5", "2x", " 2", "+2", "99999999999999999999999"}) {
        ScopedEnvVar v("LAZYTENSOR_DEBUG", bad);
        CHECK_THROWS_WITH_AS(env_int("LAZYTENSOR_DEBUG", 0, 0, 3, "a debug level"),
                             (std::string("LAZYTENSOR_DEBUG=") + bad + " is not a debug level (a whole number from 0 to 3)").c_str(),
                             lt::ValueError);
    }
    // A choice among words: its index, in any case; the fallback when unset; else the choices.
    {
        using lt::detail::env_choice;
        {
            ScopedEnvVar unset("LAZYTENSOR_OPENCL_GEMM", nullptr);
            CHECK(env_choice("LAZYTENSOR_OPENCL_GEMM", {"auto", "own", "clblast"}, 1, "") == 1);
        }
        ScopedEnvVar v("LAZYTENSOR_OPENCL_GEMM", "CLBlast");
        CHECK(env_choice("LAZYTENSOR_OPENCL_GEMM", {"auto", "own", "clblast"}, 0, "") == 2);
        ScopedEnvVar bad("LAZYTENSOR_OPENCL_FFT", "cufft");
        CHECK_THROWS_WITH_AS(env_choice("LAZYTENSOR_OPENCL_FFT", {"auto", "vkfft", "host"}, 0, "auto, vkfft or host"),
                             "LAZYTENSOR_OPENCL_FFT=cufft is not a choice: use auto, vkfft or host", lt::ValueError);
    }
    {
        ScopedEnvVar v("LAZYTENSOR_THREADS", "0");
        CHECK_THROWS_WITH_AS(lt::detail::host_threads(), "LAZYTENSOR_THREADS=0 is not a thread count (a whole number from 1 to 4096)",
                             lt::ValueError);
    }
    {
        ScopedEnvVar v("LAZYTENSOR_KERNEL_CACHE", "many");
        CHECK_THROWS_AS(lt::detail::kernel_cache_capacity_from_env(), lt::ValueError);
    }
    // A device index too large for an int is an unknown device, not std::out_of_range.
    CHECK_THROWS_AS(lt::detail::parse_device("opencl:99999999999"), lt::DeviceError);
    CHECK_THROWS_AS(lt::detail::parse_device("opencl:-1"), lt::DeviceError);
    CHECK_THROWS_AS(lt::detail::parse_device("gpu"), lt::DeviceError);
    CHECK(lt::detail::parse_device("opencl:3") == lt::Device::opencl(3));
}

TEST_CASE("slice steps at the limits of int64 and arange past its dtype's range are handled, not undefined") {
    for_each_device([](lt::Device d) {
        lt::Tensor<float> x = lt::tensor<float>({0, 1, 2, 3, 4}, {5}, d);
        const std::int64_t most = std::numeric_limits<std::int64_t>::max(), least = std::numeric_limits<std::int64_t>::min();
        CHECK(x.slice(0, 1, 5, most).to_vector() == std::vector<float>{1});
        CHECK(x.slice(0, 3, std::nullopt, least).to_vector() == std::vector<float>{3});
        CHECK(x.slice(0, std::nullopt, std::nullopt, least).to_vector() == std::vector<float>{4});
        CHECK(x.slice(0, 0, 5, most).slice(0, 0, 1, most).to_vector() == std::vector<float>{0});
        CHECK(x.slice(0, 0, 5, 2).slice(0, std::nullopt, std::nullopt, -1).to_vector() == std::vector<float>{4, 2, 0});
        CHECK(lt::arange<std::uint8_t>(250, 256, 1, d).to_vector() == std::vector<std::uint8_t>{250, 251, 252, 253, 254, 255});
        CHECK_THROWS_WITH_AS(lt::arange<std::uint8_t>(0, 300, 1, d),
                             "lt::arange: [0, 300) in steps of 1 reaches 299, which does not fit uint8", lt::ValueError);
        CHECK(lt::arange<std::int32_t>(-1, 5, 1, d).to_vector() == std::vector<std::int32_t>{-1, 0, 1, 2, 3, 4});
        CHECK_THROWS_AS(lt::arange<std::uint8_t>(-1, 5, 1, d), lt::ValueError);
    });
}

TEST_CASE("README's table of bad input: each row gives its error type and the message README quotes") {
    // Rows that need an OpenCL device, a failing build, a corrupt cache, a lost device or check
    // mode are tested where those are set up: tests/test_opencl.cpp, test_reliability.cpp and
    // test_reduce.cpp (float64 without cl_khr_fp64).
    lt::Tensor<float> a = lt::tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3}), b = lt::tensor<float>({1, 2, 3, 4}, {4});
    CHECK_THROWS_WITH_AS(a + b, "add: shapes [2, 3] and [4] cannot be broadcast together (dimension -1 is 3 vs 4)", lt::ShapeError);
    CHECK_THROWS_WITH_AS(lt::matmul(a, a),
                         "matmul: shapes [2, 3] and [2, 3] cannot be multiplied: the contracted dimensions differ (3 columns "
                         "in the first operand (its last dimension) vs 2 rows in the second (its second-to-last dimension))",
                         lt::ShapeError);
    CHECK_THROWS_WITH_AS(a.reshape({4}), "lt::reshape: cannot reshape tensor of shape [2, 3] (6 elements) into shape [4] (4 elements)",
                         lt::ShapeError);
    CHECK_THROWS_WITH_AS(lt::tensor<float>({1, 2, 3}, {2, 2}), "lt::tensor: 3 values do not fit shape [2, 2] (4 elements)", lt::ShapeError);
    CHECK_THROWS_WITH_AS(lt::full<float>({int64_t(1) << 32, int64_t(1) << 32}, 1.0f),
                         "lt::full: shape [4294967296, 4294967296] has more elements than a 64-bit count can hold", lt::ShapeError);
    CHECK_THROWS_WITH_AS(lt::full<float>({-1, 2}, 1.0f), "lt::full: negative extent in shape [-1, 2]", lt::ShapeError);
    CHECK_THROWS_WITH_AS(a.sum(5), "sum: axis 5 is out of range for a tensor of 2 dimensions (shape [2, 3]; valid axes are -2..1)",
                         lt::AxisError);
    // A 0-d tensor has no axes (not "valid axes are 0..-1").
    const lt::Tensor<float> zero_d = lt::full<float>({}, 1.0f);
    CHECK_THROWS_WITH_AS(zero_d.sum(0), "sum: axis 0 is out of range: the tensor is 0-d (shape []) and has no axes",
                         lt::AxisError);
    CHECK_THROWS_WITH_AS(zero_d.select(-1, 0), "select: axis -1 is out of range: the tensor is 0-d (shape []) and has no axes",
                         lt::AxisError);
    CHECK_THROWS_WITH_AS(lt::softmax(zero_d, 0), "softmax: axis 0 is out of range: the tensor is 0-d (shape []) and has no axes",
                         lt::AxisError);
    CHECK_THROWS_WITH_AS(a.permute({0, 0}), "lt::permute: axis 0 appears twice in permutation [0, 0] (shape [2, 3])", lt::AxisError);
    CHECK_THROWS_WITH_AS(a.slice(0, 0, 2, 0), "slice: step must not be 0 (axis 0, shape [2, 3])", lt::ValueError);
    CHECK_THROWS_WITH_AS(a.item(), "item(): the tensor has shape [2, 3] (6 elements); item() needs exactly one element", lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::zeros<float>({0, 3}).max(0).realize(),
                         "max: cannot reduce over axis 0 of extent 0 (shape [0, 3]): the reduction has no identity", lt::ValueError);
    CHECK_THROWS_WITH_AS(a.pad({{-1, 0}, {0, 0}}, 0.0f),
                         "pad: widths must be >= 0, got -1 before and 0 after axis 0 (shape [2, 3]); use slice to crop", lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::randint<int32_t>(5, 5, {3}, 1), "randint: needs low < high, got [5, 5)", lt::ValueError);
    lt::Tensor<std::uint8_t> u8 = lt::tensor<std::uint8_t>({1, 200}, {2});
    CHECK_THROWS_WITH_AS(static_cast<void>(u8 < 256),
                         "lt: the scalar 256 does not fit uint8 (0 to 255), the dtype the operation computes in; cast the tensor "
                         "first, e.g. lt::cast<int64_t>(x) or lt::cast<float>(x)",
                         lt::ValueError);
    CHECK_THROWS_AS(lt::clamp(u8, 0, 300), lt::ValueError);
    CHECK_THROWS_AS(lt::tensor<int32_t>({1}) + (1LL << 40), lt::ValueError);
    CHECK_THROWS_AS(lt::tensor<int32_t>({1}).realize().assign(1e20), lt::ValueError);
    lt::Tensor<float> empty;
    CHECK_THROWS_WITH_AS(empty.shape(), "use of an empty lt::Tensor (default-constructed and never assigned)", lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::gather(a, 1, lt::tensor<std::int64_t>({7}, {1, 1})).realize(),
                         "gather: index 7 is out of range for axis 1 of extent 3 (shape [2, 3]) (valid: 0 to 2)", lt::IndexError);
    CHECK_THROWS_WITH_AS(lt::detail::parse_device("gpu"), "unknown device \"gpu\"; expected host, opencl or opencl:N", lt::DeviceError);
    CHECK_THROWS_WITH_AS((lt::full<float>({int64_t(1) << 62}, 1.0f) + 1.0f).realize(),
                         "host: cannot allocate 4611686018427387904 elements of float32: the size in bytes does not fit in 64 bits",
                         lt::BackendError);
    try {
        (lt::full<float>({int64_t(1) << 44}, 1.0f) + 1.0f).realize();
        FAIL_CHECK("2^44 floats were allocated");
    } catch (const lt::OutOfMemoryError& e) {
        const std::string m = e.what();
        CHECK(m.rfind("out of memory on host: allocating 17592186044416 elements of float32 (70368744177664 bytes), more than this "
                      "machine's ", 0) == 0);
        CHECK(m.find(" bytes of memory and swap") != std::string::npos);
    }
    {
        const lt::MemoryStats base = lt::memory_stats(lt::Device::host());
        lt::set_memory_limit(lt::Device::host(), base.live_bytes + 1000);
        try {
            (lt::full<float>({1000}, 1.0f) + 1.0f).realize();
            FAIL_CHECK("the memory limit was not enforced");
        } catch (const lt::OutOfMemoryError& e) {
            CHECK(std::string(e.what()).rfind("out of memory on host: allocating 1000 elements of float32 (4000 bytes) would pass the "
                                              "limit of ", 0) == 0);
            CHECK(std::string(e.what()).find(" set with lt::set_memory_limit (") != std::string::npos);
        }
        lt::set_memory_limit(lt::Device::host(), 0);
    }
#if LAZYTENSOR_OPENCL
    if (!lt::detail::opencl::opencl_device_ids().empty()) {
        const std::size_t n = lt::detail::opencl::opencl_device_ids().size();
        const lt::Device on_gpu = lt::Device::opencl(0);
        CHECK_THROWS_WITH_AS(a + lt::tensor<float>({1, 2, 3}, {3}, on_gpu),
                             "add: operands are on different devices (host and opencl:0); move one with .to(device)", lt::DeviceError);
        const std::string missing = "opencl:" + std::to_string(n);
        CHECK_THROWS_WITH_AS(lt::tensor<float>({1}, {1}, lt::Device::opencl(static_cast<int>(n))),
                             ("device " + missing + " does not exist: this machine has " + std::to_string(n) + " OpenCL device" +
                              (n == 1 ? "" : "s") + " (opencl:0 to opencl:" + std::to_string(n - 1) + ")")
                                 .c_str(),
                             lt::DeviceError);
    }
#endif
    // The environment rows: the "environment variables" case above.
}

TEST_CASE("lt::dist in a program built without MPI: a group of one; a launcher or LAZYTENSOR_DIST=mpi make init an error") {
    // This program is not built with LAZYTENSOR_MPI (test_dist is).
    REQUIRE(std::getenv("OMPI_COMM_WORLD_SIZE") == nullptr);
    ::setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    std::string launched;
    try {
        lt::dist::init();
    } catch (const lt::Error& e) {
        launched = e.what();
    }
    ::unsetenv("OMPI_COMM_WORLD_SIZE");
    CHECK(launched.find("started by an MPI launcher (OMPI_COMM_WORLD_SIZE=2)") != std::string::npos);
    CHECK(launched.find("built without MPI") != std::string::npos);
    ::setenv("LAZYTENSOR_DIST", "mpi", 1);
    CHECK_THROWS_WITH_AS(lt::dist::init(), doctest::Contains("MPI was asked for"), lt::Error);
    ::setenv("LAZYTENSOR_DIST", "mpy", 1);
    CHECK_THROWS_WITH_AS(lt::dist::init(), doctest::Contains("LAZYTENSOR_DIST=mpy is not a transport"), lt::ValueError);
    ::unsetenv("LAZYTENSOR_DIST");
    const lt::dist::Group world = lt::dist::init();
    CHECK(world.size() == 1);
    CHECK(world.rank() == 0);
    CHECK(world.transport() == lt::dist::Transport::Single);
    const lt::Tensor<float> x = lt::arange<float>(0, 6).reshape({2, 3});
    CHECK(lt::schedule(lt::dist::all_sum(x) * 2.0f).size() == 1);  // no collective: one kernel
    CHECK(lt::dist::all_gather(x, 1).to_vector() == x.to_vector());
    CHECK(lt::dist::all_mean(lt::tensor<std::int32_t>({1, 2})).to_vector() == std::vector<float>{1, 2});
    CHECK_THROWS_AS(lt::dist::broadcast(x, 1), lt::ValueError);
    const std::vector<lt::Tensor<float>> grads{x, x * 2.0f};
    CHECK(lt::dist::average_gradients(grads)[1].to_vector() == (x * 2.0f).to_vector());
    lt::dist::finalize();
    CHECK_THROWS_WITH_AS(lt::dist::all_sum(x), doctest::Contains("used after lt::dist::finalize()"), lt::Error);
    CHECK_THROWS_WITH_AS(lt::dist::init(), doctest::Contains("finalize() was called already"), lt::Error);
}
