// SPDX-License-Identifier: MIT
// float16 (lt::half): the scalar type's conversions against a reference written here, and half
// tensors on every device: creation, casts, arithmetic, reductions, matmul and promotion.
// References compute in double from the half inputs and round with ref_round below.
#include <algorithm>
#include <cstring>
#include <limits>

#include "common.hpp"

namespace {

using lt::half;

// ---------------------------------------------------------------------------- reference half

/// The value of a half bit pattern, decoded from the format's definition (NaN as NaN).
double ref_value(std::uint16_t bits) {
    const int sign = bits >> 15, e = (bits >> 10) & 0x1f, m = bits & 0x3ff;
    double v;
    if (e == 0x1f) v = m ? std::numeric_limits<double>::quiet_NaN() : std::numeric_limits<double>::infinity();
    else if (e == 0) v = std::ldexp(m, -24);
    else v = std::ldexp(1024 + m, e - 25);
    return sign ? -v : v;
}

/// The half nearest to x, ties to the even bit pattern; beyond 65520 infinity (IEEE overflow).
std::uint16_t ref_round_bits(double x) {
    if (std::isnan(x)) return 0x7e00;
    const std::uint16_t sign = std::signbit(x) ? 0x8000 : 0;
    const double a = std::fabs(x);
    if (a >= 65520.0) return sign | 0x7c00;
    // Positive finite halves are ordered like their bit patterns 0 ... 0x7bff.
    std::uint16_t lo = 0, hi = 0x7bff;
    while (lo < hi) {  // the largest k with value(k) <= a
        const auto mid = static_cast<std::uint16_t>((lo + hi + 1) / 2);
        if (ref_value(mid) <= a) lo = mid;
        else hi = static_cast<std::uint16_t>(mid - 1);
    }
    std::uint16_t k = lo;
    if (k < 0x7bff) {
        const double below = a - ref_value(k), above = ref_value(static_cast<std::uint16_t>(k + 1)) - a;  // exact
        if (above < below || (above == below && (k & 1))) ++k;
    }
    return static_cast<std::uint16_t>(sign | k);
}

double ref_round(double x) { return ref_value(ref_round_bits(x)); }

Ref ref_round(Ref r) {
    for (double& x : r.v) x = ref_round(x);
    return r;
}

/// Random values exactly representable in half, in [lo, hi].
Ref half_ref(const lt::Shape& shape, unsigned seed, double lo = -4, double hi = 4) {
    Ref r = random_ref<double>(shape, seed, lo, hi);
    return ref_round(r);
}

lt::Tensor<half> half_tensor(const Ref& r, lt::Device device = lt::default_device()) {
    std::vector<half> data(r.v.size());
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = half(r.v[i]);
    return lt::tensor<half>(data, r.shape, device);
}

std::vector<std::uint16_t> bits_of(const std::vector<half>& v) {
    std::vector<std::uint16_t> out;
    for (half h : v) out.push_back(h.bits);
    return out;
}

/// Every element equal to the reference's half rounding, bit for bit (NaN: any NaN).
void check_half_exact(const lt::Tensor<half>& t, const Ref& expected) {
    REQUIRE(t.shape() == expected.shape);
    const std::vector<half> got = t.to_vector();
    int failures = 0;
    for (std::size_t i = 0; i < got.size() && failures < 5; ++i) {
        const std::uint16_t want = ref_round_bits(expected.v[i]);
        const bool ok = std::isnan(expected.v[i]) ? std::isnan(static_cast<float>(got[i])) : got[i].bits == want;
        if (!ok) {
            ++failures;
            FAIL_CHECK("element " << i << " of shape " << expected.shape << ": got " << static_cast<float>(got[i]) << " (0x"
                                  << std::hex << got[i].bits << "), expected " << ref_value(want) << " (0x" << want
                                  << std::dec << ")");
        }
    }
}

/// Within one half ulp of the reference's rounding (float evaluation may land on the other
/// side of a rounding boundary).
void check_half_near(const lt::Tensor<half>& t, const Ref& expected) {
    REQUIRE(t.shape() == expected.shape);
    const std::vector<half> got = t.to_vector();
    int failures = 0;
    for (std::size_t i = 0; i < got.size() && failures < 5; ++i) {
        const double e = ref_round(expected.v[i]), g = got[i];
        const double ulp = std::max(std::ldexp(1.0, -24), std::ldexp(1.0, std::ilogb(e == 0 ? 1e-30 : e) - 10));
        const bool ok = std::isnan(e) ? std::isnan(g) : std::isinf(e) ? g == e : std::fabs(g - e) <= ulp;
        if (!ok) {
            ++failures;
            FAIL_CHECK("element " << i << " of shape " << expected.shape << ": got " << g << ", expected " << e);
        }
    }
}

}  // namespace

// ------------------------------------------------------------------------------ the scalar type

TEST_CASE("half: every bit pattern converts to float exactly and back") {
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        const auto bits = static_cast<std::uint16_t>(b);
        const half h = half::from_bits(bits);
        const float f = h;
        const double want = ref_value(bits);
        INFO("bits 0x" << std::hex << b);
        if (std::isnan(want)) {
            REQUIRE(std::isnan(f));
            REQUIRE(std::isnan(static_cast<float>(half(f))));
            REQUIRE(std::isnan(static_cast<float>(half(static_cast<double>(f)))));
            REQUIRE(std::signbit(f) == std::signbit(static_cast<float>(half(f))));
        } else {
            REQUIRE(static_cast<double>(f) == want);
            REQUIRE(std::signbit(f) == ((bits & 0x8000) != 0));
            REQUIRE(half(f).bits == bits);
            REQUIRE(half(static_cast<double>(f)).bits == bits);
        }
    }
}

TEST_CASE("half: bulk conversions (F16C where available) match the scalar ones bit for bit") {
    std::vector<half> all(0x10000);
    for (std::uint32_t b = 0; b < 0x10000; ++b) all[b] = half::from_bits(static_cast<std::uint16_t>(b));
    std::vector<float> wide(all.size());
    lt::detail::half_to_float(all.data(), wide.data(), static_cast<std::int64_t>(all.size()));
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        const float f = all[b];
        REQUIRE(std::memcmp(&f, &wide[b], sizeof f) == 0);
    }
    // Floats around every half and every midpoint, NaNs with payloads, huge and tiny values.
    std::vector<float> floats;
    for (std::uint32_t b = 0; b < 0x10000; ++b) {
        const float f = all[b];
        floats.push_back(f);
        floats.push_back(std::nextafter(f, 0.0f));
        floats.push_back(std::nextafter(f, std::numeric_limits<float>::infinity()));
        if (b < 0x10000 - 1 && (b & 0x7fff) < 0x7bff) {
            const float mid = static_cast<float>((ref_value(static_cast<std::uint16_t>(b)) + ref_value(static_cast<std::uint16_t>(b + 1))) / 2);
            floats.push_back(mid);
            floats.push_back(std::nextafter(mid, 0.0f));
        }
    }
    for (std::uint32_t u : {0x7fc00001u, 0xffa00000u, 0x7f800001u, 0x00000001u, 0x80400000u, 0x7f7fffffu})
        floats.push_back([&] { float f; std::memcpy(&f, &u, sizeof f); return f; }());
    std::vector<half> narrow(floats.size());
    lt::detail::float_to_half(floats.data(), narrow.data(), static_cast<std::int64_t>(floats.size()));
    for (std::size_t i = 0; i < floats.size(); ++i) {
        INFO("float " << floats[i]);
        REQUIRE(narrow[i].bits == half(floats[i]).bits);
    }
}

TEST_CASE("half: rounding from float and double ties to even, overflows to inf, makes subnormals") {
    // Explicit cases.
    CHECK(half(1.0f).bits == 0x3c00);
    CHECK(half(-2.0).bits == 0xc000);
    CHECK(half(65504.0f).bits == 0x7bff);
    CHECK(half(65519.99f).bits == 0x7bff);
    CHECK(half(65520.0f).bits == 0x7c00);  // the tie between 65504 and 2^16 goes to "even": infinity
    CHECK(half(1e9).bits == 0x7c00);
    CHECK(half(-1e30f).bits == 0xfc00);
    CHECK(half(std::ldexp(1.0f, -24)).bits == 0x0001);
    CHECK(half(std::ldexp(1.0f, -25)).bits == 0x0000);           // tie between 0 and 2^-24: even
    CHECK(half(std::ldexp(1.0, -25) * 1.000001).bits == 0x0001);  // just above the tie
    CHECK(half(std::ldexp(3.0f, -25)).bits == 0x0002);           // tie between 1 and 2 units: even
    CHECK(half(std::ldexp(1.0f, -14)).bits == 0x0400);           // smallest normal
    CHECK(half(std::ldexp(1023.5f, -24)).bits == 0x0400);        // rounds up out of the subnormals
    CHECK(half(1.0f + std::ldexp(1.0f, -11)).bits == 0x3c00);    // tie: even
    CHECK(half(1.0f + std::ldexp(3.0f, -11)).bits == 0x3c02);    // tie: even
    CHECK(half(1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40)).bits == 0x3c01);  // no double rounding via float
    CHECK(half(-0.0f).bits == 0x8000);
    CHECK(half(std::numeric_limits<float>::denorm_min()).bits == 0x0000);
    CHECK(std::isnan(static_cast<float>(half(std::numeric_limits<double>::quiet_NaN()))));
    CHECK(half(std::numeric_limits<float>::infinity()).bits == 0x7c00);
    CHECK(half(3).bits == 0x4200);
    CHECK(half(std::int64_t(70000)).bits == 0x7c00);
    CHECK(half(true).bits == 0x3c00);
    CHECK(static_cast<float>(half(2.0f) + half(0.5f)) == 2.5f);
    CHECK(half(1.0f) < half(2.0f));
    CHECK((-half(1.5f)).bits == 0xbe00);
    CHECK(std::numeric_limits<half>::max().bits == 0x7bff);
    CHECK(static_cast<float>(std::numeric_limits<half>::max()) == 65504.0f);
    CHECK(static_cast<float>(std::numeric_limits<half>::min()) == std::ldexp(1.0f, -14));
    CHECK(static_cast<float>(std::numeric_limits<half>::epsilon()) == std::ldexp(1.0f, -10));
    CHECK(static_cast<float>(std::numeric_limits<half>::denorm_min()) == std::ldexp(1.0f, -24));
    CHECK(std::isinf(static_cast<float>(std::numeric_limits<half>::infinity())));
    CHECK(std::isnan(static_cast<float>(std::numeric_limits<half>::quiet_NaN())));

    // A sweep against the reference: random floats over every binade, midpoints and their
    // neighbours, from float and from double.
    std::mt19937 gen(7);
    std::uniform_real_distribution<double> mant(1.0, 2.0);
    std::uniform_int_distribution<int> expo(-30, 17);
    for (int i = 0; i < 200000; ++i) {
        const double d = (i & 1 ? -1 : 1) * std::ldexp(mant(gen), expo(gen));
        const float f = static_cast<float>(d);
        INFO("value " << d);
        REQUIRE(half(f).bits == ref_round_bits(f));
        REQUIRE(half(d).bits == ref_round_bits(d));
    }
    for (std::uint16_t b = 0; b < 0x7bff; ++b) {
        const double mid = (ref_value(b) + ref_value(static_cast<std::uint16_t>(b + 1))) / 2;  // exact in double
        INFO("midpoint above 0x" << std::hex << b);
        for (double d : {mid, std::nextafter(mid, 0.0), std::nextafter(mid, 1e9), -mid}) {
            REQUIRE(half(d).bits == ref_round_bits(d));
            const float f = static_cast<float>(d);
            REQUIRE(half(f).bits == ref_round_bits(f));
        }
    }
}

// ---------------------------------------------------------------------------------- promotion

TEST_CASE("half promotion: compile time and run time") {
    using lt::promote_t;
    using lt::scalar_promote_t;
    static_assert(std::is_same_v<promote_t<half, float>, float>);
    static_assert(std::is_same_v<promote_t<double, half>, double>);
    static_assert(std::is_same_v<promote_t<std::int32_t, half>, half>);
    static_assert(std::is_same_v<promote_t<std::int64_t, half>, half>);
    static_assert(std::is_same_v<promote_t<bool, half>, half>);
    static_assert(std::is_same_v<scalar_promote_t<half, double>, half>);
    static_assert(std::is_same_v<scalar_promote_t<half, std::int64_t>, half>);
    static_assert(std::is_same_v<scalar_promote_t<std::int32_t, double>, float>);
    static_assert(lt::is_floating(lt::DType::Float16) && lt::dtype_category(lt::DType::Float16) == 2);
    static_assert(lt::promote(lt::DType::Float16, lt::DType::Float32) == lt::DType::Float32);
    static_assert(lt::promote(lt::DType::Int64, lt::DType::Float16) == lt::DType::Float16);
    static_assert(lt::dtype_of<half>() == lt::DType::Float16);
    static_assert(std::is_same_v<decltype(half(1.0f) + 1.0f), float>);
    static_assert(std::is_same_v<decltype(half(1.0f) + half(1.0f)), half>);
    CHECK(std::string(lt::dtype_name(lt::DType::Float16)) == "float16");
    CHECK(lt::dtype_size(lt::DType::Float16) == 2);

    for_each_device([](lt::Device) {
        const Ref h = half_ref({3, 4}, 1), f = random_ref<float>({3, 4}, 2), i = random_ref<std::int32_t>({4}, 3, -9, 9);
        lt::Tensor<half> th = half_tensor(h);
        lt::Tensor<float> tf = make_tensor<float>(f);
        lt::Tensor<std::int32_t> ti = make_tensor<std::int32_t>(i);

        auto hf = th + tf;
        auto ih = ti + th;
        auto hs = th + 2.5;
        auto hi = th * 3;
        auto hh = th * half(0.5f);
        auto ex = lt::exp(ti);
        static_assert(std::is_same_v<decltype(hf)::value_type, float>);
        static_assert(std::is_same_v<decltype(ih)::value_type, half>);
        static_assert(std::is_same_v<decltype(hs)::value_type, half>);
        static_assert(std::is_same_v<decltype(hi)::value_type, half>);
        static_assert(std::is_same_v<decltype(hh)::value_type, half>);
        static_assert(std::is_same_v<decltype(ex)::value_type, float>);
        static_assert(std::is_same_v<decltype(th.sum())::value_type, half>);
        static_assert(std::is_same_v<decltype(th.mean())::value_type, half>);
        static_assert(std::is_same_v<decltype(th < 1.0f)::value_type, bool>);
        static_assert(std::is_same_v<decltype(lt::matmul(th, th.t()))::value_type, half>);
        static_assert(std::is_same_v<decltype(lt::matmul(th, tf.t()))::value_type, float>);

        lt::Tensor<float> rhf = hf;
        lt::Tensor<half> rih = ih, rhs = hs, rhi = hi, rhh = hh;
        CHECK(rhf.node_ptr()->dtype == lt::DType::Float32);
        CHECK(rih.node_ptr()->dtype == lt::DType::Float16);
        CHECK(rhs.node_ptr()->dtype == lt::DType::Float16);
        // half + float is a float addition of the widened half: correctly rounded to float.
        Ref sum_hf = zip(h, f, [](double a, double b) { return static_cast<double>(static_cast<float>(a + b)); });
        check_close(rhf, sum_hf, 0, 0);
        check_half_exact(rih, zip(i, h, [](double a, double b) { return a + b; }));
        check_half_exact(rhs, map(h, [](double a) { return a + 2.5; }));
        check_half_exact(rhi, map(h, [](double a) { return a * 3; }));
        check_half_exact(rhh, map(h, [](double a) { return a * 0.5; }));
        // A scalar next to a half tensor becomes a half constant: 0.1 is rounded first.
        check_half_exact(th + 0.1, map(h, [](double a) { return a + ref_round(0.1); }));
    });
}

// ------------------------------------------------------------------------------ tensors of half

TEST_CASE("half tensors: creation, reading back, item, printing, moving") {
    for_each_device([](lt::Device d) {
        const std::vector<half> data = {half(1.0f), half(-2.5f), half(65504.0f), half(std::ldexp(1.0f, -24)),
                                        half(-0.0f), half::from_bits(0x7c00), half::from_bits(0x7e00)};
        lt::Tensor<half> t = lt::tensor<half>(data, {7});
        CHECK(t.dtype() == lt::DType::Float16);
        CHECK(t.device() == d);
        const std::vector<half> back = t.to_vector();
        CHECK(bits_of(back) == bits_of(data));

        lt::Tensor<half> m = lt::tensor<half>({half(0.5f), half(1.5f), half(2.5f), half(3.5f), half(4.5f), half(5.5f)})
                                 .reshape({2, 3});
        CHECK(static_cast<float>(m.t().to_vector()[1]) == 3.5f);  // a transposed view read back

        CHECK(bits_of(lt::zeros<half>({3}).to_vector()) == std::vector<std::uint16_t>{0, 0, 0});
        CHECK(bits_of(lt::ones<half>({2}).to_vector()) == std::vector<std::uint16_t>{0x3c00, 0x3c00});
        CHECK(lt::full<half>({2, 2}, half(0.1)).to_vector()[3].bits == ref_round_bits(0.1));
        CHECK(lt::full<half>({}, half(7.0f)).item().bits == 0x4700);
        CHECK(lt::arange<half>(4).to_vector()[3].bits == 0x4200);
        // A lazy constant used in a kernel, and realized.
        CHECK((lt::full<half>({5}, half(1.5f)) * half(2.0f)).realize().to_vector()[4].bits == 0x4200);

        std::ostringstream s;
        s << lt::tensor<half>({half(1.5f), half(-0.25f)});
        CHECK(s.str().find("[ 1.5000, -0.2500]") != std::string::npos);  // PyTorch's format, 4 digits
        CHECK(s.str().find("dtype=float16") != std::string::npos);

        lt::Tensor<half> on_host = t.to(lt::Device::host());
        CHECK(bits_of(on_host.to_vector()) == bits_of(data));
        CHECK(bits_of(on_host.to(d).to_vector()) == bits_of(data));
    });
}

TEST_CASE("half casts to and from every dtype") {
    for_each_device([](lt::Device) {
        const std::vector<double> values = {0.0, -0.0, 1.0, -1.5, 2.75, 1000.5, 65504.0, -65504.0, 300.25, 0.099975586,
                                            std::ldexp(1.0, -24), std::numeric_limits<double>::infinity(),
                                            -std::numeric_limits<double>::infinity(), std::numeric_limits<double>::quiet_NaN()};
        Ref h{{static_cast<std::int64_t>(values.size())}, values};
        h = ref_round(h);
        lt::Tensor<half> t = half_tensor(h);
        auto to_int = [](double lo, double hi) {
            return [lo, hi](double x) { return std::isnan(x) ? 0.0 : std::clamp(std::trunc(x), lo, hi); };
        };
        check_close(lt::cast<bool>(t), map(h, [](double x) { return x != 0 ? 1.0 : 0.0; }), 0, 0);
        check_close(lt::cast<std::uint8_t>(t), map(h, to_int(0, 255)), 0, 0);
        check_close(lt::cast<std::int32_t>(t), map(h, to_int(-2147483648.0, 2147483647.0)), 0, 0);
        check_close(lt::cast<std::int64_t>(t), map(h, to_int(-9223372036854775808.0, 9223372036854775807.0)), 0, 0);
        check_close(lt::cast<float>(t), h, 0, 0);
        check_close(lt::cast<double>(t), h, 0, 0);
        check_close(t.cast<float>() * 2.0f, map(h, [](double x) { return 2 * x; }), 0, 0);

        // To half: rounded to nearest even, overflow to infinity.
        const Ref d{{6}, {1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40), 65519.0, 65520.0, -1e-9, 0.1, 3.0}};
        check_half_exact(lt::cast<half>(make_tensor<double>(d)), d);
        const Ref f{{6}, {1.0 + std::ldexp(1.0, -11), 1.0 + std::ldexp(3.0, -11), 70000.0, std::ldexp(3.0, -25), -0.3f, 1e-3f}};
        check_half_exact(lt::cast<half>(make_tensor<float>(f)), f);
        const Ref i{{5}, {0, -3, 2049, 65519, 2147483647}};
        check_half_exact(lt::cast<half>(make_tensor<std::int32_t>(i)), i);
        check_half_exact(lt::cast<half>(make_tensor<std::int64_t>(i)), i);
        const Ref u{{3}, {0, 7, 255}};
        check_half_exact(lt::cast<half>(make_tensor<std::uint8_t>(u)), u);
        const Ref b{{2}, {1, 0}};
        check_half_exact(lt::cast<half>(make_tensor<bool>(b)), b);

        // Arithmetic after a cast to half sees the rounded value (all in one kernel).
        const Ref x = random_ref<float>({1000}, 31, -3, 3);
        lt::Tensor<float> tx = make_tensor<float>(x);
        lt::Tensor<float> err = lt::cast<float>(lt::cast<half>(tx)) - tx;
        check_close(err, map(x, [](double v) { return static_cast<double>(static_cast<float>(ref_round(v) - v)); }), 0, 0);
        check_half_exact(lt::cast<half>(tx) * half(4.0f) - 1.0, map(x, [](double v) { return ref_round(v) * 4 - 1; }));
    });
}

TEST_CASE("half element-wise arithmetic and functions with broadcasting and views") {
    for_each_device([](lt::Device) {
        for (const lt::Shape& shape : std::vector<lt::Shape>{{}, {0}, {7}, {3, 5}, {1031}, {64, 36}, {300, 401}}) {
            INFO("shape " << shape);
            const Ref a = half_ref(shape, 11), b = half_ref(shape, 12, 0.25, 4);
            lt::Tensor<half> ta = half_tensor(a), tb = half_tensor(b);
            // + - * / of two halfs in float, then rounded, are exactly the correctly rounded results.
            check_half_exact(ta + tb, zip(a, b, [](double x, double y) { return x + y; }));
            check_half_exact(ta - tb, zip(a, b, [](double x, double y) { return x - y; }));
            check_half_exact(ta * tb, zip(a, b, [](double x, double y) { return x * y; }));
            check_half_exact(ta / tb, zip(a, b, [](double x, double y) { return x / y; }));
            check_half_exact(-ta, map(a, [](double x) { return -x; }));
            check_half_exact(lt::abs(ta), map(a, [](double x) { return std::fabs(x); }));
            check_half_exact(lt::maximum(ta, tb), zip(a, b, [](double x, double y) { return std::max(x, y); }));
            check_half_exact(lt::sqrt(tb), map(b, [](double x) { return std::sqrt(x); }));
            check_close(ta < tb, zip(a, b, [](double x, double y) { return x < y ? 1.0 : 0.0; }), 0, 0);
            // Functions and fused chains: float evaluation, one half ulp from the double reference.
            check_half_near(lt::exp(ta), map(a, [](double x) { return std::exp(x); }));
            check_half_near(lt::tanh(ta), map(a, [](double x) { return std::tanh(x); }));
            check_half_near(lt::sigmoid(ta * tb) + 1.0, zip(a, b, [](double x, double y) { return 1 + 1 / (1 + std::exp(-x * y)); }));
            check_half_near(lt::where(ta > 0.0, ta * tb, ta / tb),
                            zip(a, b, [](double x, double y) { return x > 0 ? x * y : x / y; }));
        }
        // Broadcasting, and operands that are views (transposed, permuted, expanded).
        const Ref a = half_ref({6, 4}, 21), row = half_ref({4}, 22), c = half_ref({4, 6}, 23), p = half_ref({4, 3, 2}, 24);
        lt::Tensor<half> ta = half_tensor(a), trow = half_tensor(row), tc = half_tensor(c), tp = half_tensor(p);
        check_half_exact(ta + trow, zip(a, row, [](double x, double y) { return x + y; }));
        check_half_exact(ta * tc.t(), zip(a, permute(c, {1, 0}), [](double x, double y) { return x * y; }));
        check_half_exact(tc.t() - trow, zip(permute(c, {1, 0}), row, [](double x, double y) { return x - y; }));
        check_half_exact(tp.permute({2, 0, 1}) * 2.0, map(permute(p, {2, 0, 1}), [](double x) { return 2 * x; }));
        check_half_exact(trow.reshape({4, 1}).expand({4, 6}) + tc,
                         zip(broadcast(Ref{{4, 1}, row.v}, {4, 6}), c, [](double x, double y) { return x + y; }));
        // A half operand mixed with a float one: the float result of the widened half.
        const Ref f = random_ref<float>({6, 4}, 25);
        check_close(lt::cast<float>(tc.t()) * make_tensor<float>(f) + ta,
                    zip(zip(permute(c, {1, 0}), f, [](double x, double y) { return double(float(x * y)); }), a,
                        [](double x, double y) { return double(float(x + y)); }),
                    0, 0);
    });
}

TEST_CASE("half reductions: sum, max, min, mean accumulate in float") {
    for_each_device([](lt::Device) {
        const lt::Shape shapes[] = {{37, 129}, {129, 37}, {5, 8, 64}, {100000}};
        for (const lt::Shape& shape : shapes) {
            INFO("shape " << shape);
            const Ref x = half_ref(shape, 41, 0, 0.5);
            lt::Tensor<half> t = half_tensor(x);
            auto plus = [](double a, double b) { return a + b; };
            check_half_near(t.sum(), reduce(x, {}, false, 0.0, plus));
            check_half_near(t.sum(-1), reduce(x, {-1}, false, 0.0, plus));
            check_half_near(t.sum(0, true), reduce(x, {0}, true, 0.0, plus));
            check_half_exact(t.max(-1), reduce(x, {-1}, false, -INFINITY, ref_max));
            check_half_exact(t.min(), reduce(x, {}, false, INFINITY, ref_min));
            const auto count = static_cast<double>(shape[0]);
            check_half_near(t.mean(0), map(reduce(x, {0}, false, 0.0, plus), [&](double s) { return s / count; }));
            check_half_near(t.mean(), map(reduce(x, {}, false, 0.0, plus), [&](double s) { return s / static_cast<double>(x.size()); }));
            // Softmax-like: a reduction fused with the element-wise code around it.
            check_half_near(t - t.max(-1, true), zip(x, reduce(x, {-1}, true, -INFINITY, ref_max), [](double a, double m) { return a - m; }));
        }
        // NaN propagates through max; a sum that overflows half is infinity.
        lt::Tensor<half> n = lt::tensor<half>({half(1.0f), half::from_bits(0x7e00), half(3.0f)});
        CHECK(std::isnan(static_cast<float>(n.max().item())));
        CHECK(lt::full<half>({3}, half(40000.0f)).sum().item().bits == 0x7c00);
    });
}

TEST_CASE("half matmul multiplies in float and rounds once") {
    for_each_device([](lt::Device) {
        const Ref a = half_ref({2, 17, 9}, 51, -1, 1), b = half_ref({9, 5}, 52, -1, 1), v = half_ref({9}, 53, -1, 1);
        lt::Tensor<half> ta = half_tensor(a), tb = half_tensor(b), tv = half_tensor(v);
        auto matmul_ref = [](const Ref& x, const Ref& y) {  // [batch, m, k] x [k, n]
            const std::int64_t batch = x.shape[0], m = x.shape[1], k = x.shape[2], n = y.shape[1];
            Ref out{{batch, m, n}, std::vector<double>(static_cast<std::size_t>(batch * m * n), 0.0)};
            for (std::int64_t q = 0; q < batch; ++q)
                for (std::int64_t i = 0; i < m; ++i)
                    for (std::int64_t j = 0; j < n; ++j) {
                        double s = 0;
                        for (std::int64_t l = 0; l < k; ++l) s += x.at({q, i, l}) * y.at({l, j});
                        out.v[static_cast<std::size_t>((q * m + i) * n + j)] = s;
                    }
            return out;
        };
        lt::Tensor<half> c = lt::matmul(ta, tb);
        check_half_near(c, matmul_ref(a, b));
        lt::Tensor<half> cv = lt::matmul(ta, tv);
        Ref vcol = v;
        vcol.shape = {9, 1};
        Ref want = matmul_ref(a, vcol);
        want.shape = {2, 17};
        check_half_near(cv, want);
        // Operands as views: b.t().t() and a transposed batch.
        check_half_near(lt::matmul(ta.mT().mT(), tb.t().t()), matmul_ref(a, b));
        // The product itself runs in float (a matmul item), rounded to half by a kernel after it.
        const auto items = lt::schedule(lt::matmul(ta, tb) * 2.0);
        bool has_matmul = false;
        for (const auto& item : items) has_matmul = has_matmul || item.kind == lt::ScheduleItem::Kind::Matmul;
        CHECK(has_matmul == lt::detail::graph::runs_as_gemm(lt::DType::Float32, lt::default_device()));
    });
}

TEST_CASE("half results are the same on every device") {
    // Ops whose float result is correctly rounded give the same bits everywhere; the summed
    // values are multiples of 2^-8, so that float sums are exact in any order.
    const Ref a = half_ref({33, 260}, 61), b = half_ref({33, 260}, 62, 0.5, 3), f = random_ref<float>({260}, 63);
    const Ref s = map(half_ref({33, 260}, 64), [](double x) { return std::round(x * 256) / 256; });
    auto compute = [&](lt::Device d) {
        lt::Tensor<half> ta = half_tensor(a, d), tb = half_tensor(b, d), ts = half_tensor(s, d);
        lt::Tensor<float> tf = make_tensor<float>(f, d);
        lt::Tensor<half> r = lt::where(ta > tb, ta * tb, ta / tb) - lt::cast<half>(tf) + lt::maximum(ts, -ts * 0.5).sum(-1, true);
        return r.to_vector();
    };
    const std::vector<half> host = compute(lt::Device::host());
    // Against the reference first, so that this test can fail on the host alone.
    Ref want = zip(zip(a, b, [](double x, double y) { return x > y ? x * y : x / y; }),
                   map(f, [](double x) { return ref_round(x); }), [](double x, double y) { return x - y; });
    const Ref m = reduce(map(s, [](double x) { return std::max(x, -x * 0.5); }), {-1}, true, 0.0,
                         [](double acc, double x) { return acc + x; });
    want = zip(want, m, [](double x, double y) { return x + y; });
    lt::Tensor<half> host_tensor = lt::tensor<half>(host, a.shape, lt::Device::host());
    check_half_near(host_tensor, want);
    for_each_device([&](lt::Device d) {
        const std::vector<half> got = compute(d);
        CHECK(bits_of(got) == bits_of(host));
    });
}

TEST_CASE("half var and std over more than 65504 elements compute in float32 (the count is no half)") {
    for_each_device([](lt::Device d) {
        const std::int64_t n = 70000;
        std::vector<lt::half> data(static_cast<std::size_t>(n));
        for (std::int64_t i = 0; i < n; ++i) data[static_cast<std::size_t>(i)] = lt::half(i % 2 ? 1.0f : -1.0f);
        lt::Tensor<lt::half> x = lt::tensor<lt::half>(data, {n}, d);
        // Mean 0, every squared deviation 1: var = n / (n - 1) with correction 1, 1 without.
        CHECK(static_cast<float>(x.var(0, false, 0).item()) == 1.0f);
        CHECK(static_cast<float>(x.std(0, false, 1).item()) == static_cast<float>(lt::half(std::sqrt(70000.0f / 69999.0f))));
    });
}
