// SPDX-License-Identifier: MIT
// The rest of the element-wise op set (sign, exp2, log2, rsqrt, reciprocal, tan, gelu, silu,
// rounding, integer division and remainders, bitwise and logical ops, shifts, predicates),
// clamp, and the prod/any/all reductions: against double-precision references written here,
// on every device, in every dtype each op allows, with broadcast and non-contiguous inputs, and
// at the edges NumPy documents (signs of remainders, division by zero, ties, NaN and Inf).
#include <cstring>
#include <limits>

#include "common.hpp"

namespace {

// A scalar, empty, a tail shorter than a SIMD batch, several blocks, threads.
const std::vector<lt::Shape> kShapes = {{}, {0}, {7}, {3, 5}, {1031}, {300, 401}};

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// op(x) against ref(x) on random data in [lo, hi], for every shape and a permuted view.
template <class T, class Op>
void check_unary(Op&& op, const std::function<double(double)>& ref, double lo, double hi, unsigned seed,
                 double rtol = tol<T>(), double atol = tol<T>()) {
    for (const lt::Shape& shape : kShapes) {
        INFO("shape " << shape);
        Ref x = random_ref<T>(shape, seed, lo, hi);
        check_close(op(make_tensor<T>(x)), map(x, ref), rtol, atol);
    }
    INFO("permuted view");
    Ref x = random_ref<T>({5, 7, 3}, seed + 1, lo, hi);
    check_close(op(make_tensor<T>(x).permute({2, 0, 1})), map(permute(x, {2, 0, 1}), ref), rtol, atol);
}

/// op(a, b) against ref: broadcast shapes, a transposed operand, a scalar on either side.
template <class T, class Op>
void check_binary(Op&& op, const std::function<double(double, double)>& ref, double lo_a, double hi_a, double lo_b,
                  double hi_b, unsigned seed, double rtol = 0, double atol = 0) {
    const std::vector<std::pair<lt::Shape, lt::Shape>> pairs = {
        {{}, {}}, {{3, 4}, {3, 4}}, {{3, 1}, {1, 4}}, {{5, 1, 3}, {4, 1}}, {{257, 129}, {129}}};
    for (const auto& pair : pairs) {
        // (Named references, not a structured binding: INFO captures them in a lambda, which C++17
        // does not allow for a structured binding; GCC accepts it, Clang does not.)
        const lt::Shape &sa = pair.first, &sb = pair.second;
        INFO("shapes " << sa << " and " << sb);
        Ref a = random_ref<T>(sa, ++seed, lo_a, hi_a), b = random_ref<T>(sb, ++seed, lo_b, hi_b);
        check_close(op(make_tensor<T>(a), make_tensor<T>(b)), zip(a, b, ref), rtol, atol);
    }
    {
        INFO("a transposed operand");
        Ref a = random_ref<T>({6, 5}, ++seed, lo_a, hi_a), b = random_ref<T>({5, 6}, ++seed, lo_b, hi_b);
        check_close(op(make_tensor<T>(a).t(), make_tensor<T>(b)), zip(permute(a, {1, 0}), b, ref), rtol, atol);
    }
    {
        INFO("scalars on either side");
        Ref a = random_ref<T>({37}, ++seed, lo_a, hi_a), b = random_ref<T>({37}, ++seed, lo_b, hi_b);
        const T sa = static_cast<T>(a.v[3]), sb = static_cast<T>(b.v[5]);
        check_close(op(make_tensor<T>(a), sb), map(a, [&](double x) { return ref(x, static_cast<double>(sb)); }), rtol, atol);
        check_close(op(sa, make_tensor<T>(b)), map(b, [&](double y) { return ref(static_cast<double>(sa), y); }), rtol, atol);
    }
}

/// Exactly these values, in T.
template <class T>
lt::Tensor<T> values(const std::vector<double>& v) {
    return make_tensor<T>(Ref{{static_cast<std::int64_t>(v.size())}, v});
}

/// Halves: random multiples of 0.5 (rounding ties), in T.
template <class T>
Ref halves(const lt::Shape& shape, unsigned seed) {
    return map(random_ref<std::int32_t>(shape, seed, -20, 20), [](double v) { return v / 2; });
}

/// A reference value as T would hold it (overflow to inf, underflow to 0).
template <class T>
double as(double v) {
    return static_cast<double>(static_cast<T>(v));
}

// Double-precision references, from the definitions (not from the library's formulas).
double gelu_ref(double x) { return std::isinf(x) ? (x > 0 ? x : 0.0) : 0.5 * x * std::erfc(-x / std::sqrt(2.0)); }
double silu_ref(double x) { return std::isinf(x) ? (x > 0 ? x : 0.0) : x / (1 + std::exp(-x)); }
double sign_ref(double x) { return std::isnan(x) ? x : x > 0 ? 1 : x < 0 ? -1 : 0; }
// Integers: division by zero gives 0 (NumPy).
double floordiv_int(double a, double b) { return b == 0 ? 0 : std::floor(a / b); }
double remainder_int(double a, double b) { return b == 0 ? 0 : a - b * std::floor(a / b); }
double fmod_int(double a, double b) { return b == 0 ? 0 : std::fmod(a, b); }
// Floats: NumPy's remainder is a - b * floor(a / b) computed exactly (fmod is exact), with the
// divisor's sign; zero takes the divisor's sign too.
double remainder_float(double a, double b) {
    if (b == 0 || std::isnan(a) || std::isnan(b) || std::isinf(a)) return kNan;
    if (std::isinf(b)) return (a == 0 || (a > 0) == (b > 0)) ? (a == 0 ? std::copysign(0.0, b) : a) : b;
    double r = std::fmod(a, b);
    if (r != 0 && (r < 0) != (b < 0)) r += b;
    return r == 0 ? std::copysign(0.0, b) : r;
}

template <class T>
constexpr int bits() {
    return 8 * static_cast<int>(sizeof(T));
}
/// a << n: a times 2^n, wrapped to T; 0 for counts outside [0, bits).
template <class T>
double shl_ref(double a, double n) {
    if (n < 0 || n >= bits<T>()) return 0;
    const auto wrapped = static_cast<std::uint64_t>(static_cast<std::int64_t>(a)) * (std::uint64_t(1) << static_cast<int>(n));
    return static_cast<double>(static_cast<T>(wrapped));
}
/// a >> n: floor(a / 2^n); the sign (0 or -1) for counts outside [0, bits).
template <class T>
double shr_ref(double a, double n) {
    if (n < 0 || n >= bits<T>()) return a < 0 ? -1 : 0;
    return std::floor(a / std::ldexp(1.0, static_cast<int>(n)));
}

}  // namespace

// ------------------------------------------------------------------------------------- unary ops

TEST_CASE_TEMPLATE("floating unary functions: exp2 log2 rsqrt reciprocal tan gelu silu", T, float, double) {
    for_each_device([](lt::Device) {
        check_unary<T>([](const auto& x) { return lt::exp2(x); }, [](double v) { return std::exp2(v); }, -20, 20, 1);
        check_unary<T>([](const auto& x) { return lt::log2(x); }, [](double v) { return std::log2(v); }, 0.001, 1e4, 2);
        check_unary<T>([](const auto& x) { return lt::rsqrt(x); }, [](double v) { return 1 / std::sqrt(v); }, 0.001, 1e4, 3);
        check_unary<T>([](const auto& x) { return lt::reciprocal(x); }, [](double v) { return 1 / v; }, -50, 50, 4);
        check_unary<T>([](const auto& x) { return lt::tan(x); }, [](double v) { return std::tan(v); }, -3, 3, 5);
        check_unary<T>([](const auto& x) { return lt::gelu(x); }, gelu_ref, -8, 8, 6);
        check_unary<T>([](const auto& x) { return lt::silu(x); }, silu_ref, -30, 30, 7);
    });
}

TEST_CASE_TEMPLATE("floating unary functions at special values", T, float, double) {
    for_each_device([](lt::Device) {
        const double big = std::is_same_v<T, float> ? 1e30 : 1e300, tiny = std::numeric_limits<T>::denorm_min();
        const std::vector<double> v = {0.0, -0.0, 1, -1, 0.5, -2.5, tiny, -tiny, big, -big, kInf, -kInf, kNan};
        const Ref x = ref_of(v);
        const lt::Tensor<T> t = values<T>(v);
        auto ref = [&](double (*f)(double)) { return map(x, [&](double a) { return as<T>(f(a)); }); };
        check_close(lt::exp2(t), ref([](double a) { return std::exp2(a); }), tol<T>(), 0);
        check_close(lt::log2(t), ref([](double a) { return std::log2(a); }), tol<T>(), 0);
        check_close(lt::rsqrt(t), ref([](double a) { return 1 / std::sqrt(a); }), 2 * tol<T>(), 0);
        check_close(lt::reciprocal(t), ref([](double a) { return 1 / a; }), tol<T>(), 0);
        check_close(lt::tan(lt::where(lt::abs(t) < T(2), t, T(0))),
                    ref([](double a) { return std::fabs(a) < 2 ? std::tan(a) : 0.0; }), tol<T>(), 0);
        check_close(lt::tan(values<T>({kInf, -kInf, kNan})), ref_of({kNan, kNan, kNan}));
        check_close(lt::gelu(t), ref(gelu_ref), tol<T>(), 1e-300);
        check_close(lt::silu(t), ref(silu_ref), tol<T>(), 1e-300);
        check_close(lt::sign(t), ref(sign_ref), 0, 0);
        // The ends of exp2's range: overflow exactly where T does, subnormal results kept.
        const double top = std::is_same_v<T, float> ? 127.99 : 1023.99, bottom = std::is_same_v<T, float> ? -148.5 : -1073.5;
        const std::vector<double> ends = {top, top + 0.02, bottom, bottom - 2, std::is_same_v<T, float> ? -127.25 : -1023.25};
        std::vector<T> got = lt::exp2(values<T>(ends)).to_vector();
        for (std::size_t i = 0; i < ends.size(); ++i) {
            INFO("exp2(" << ends[i] << ")");
            const double want = as<T>(std::exp2(static_cast<double>(static_cast<T>(ends[i]))));
            if (std::isinf(want) || want == 0) CHECK(got[i] == want);
            else CHECK(got[i] == doctest::Approx(want).epsilon(std::fabs(want) < std::numeric_limits<T>::min() ? 1e-2 : 1e-5));
        }
        // log2 of subnormals (xsimd gets these wrong for double) and of exact powers of two.
        std::vector<T> l = lt::log2(values<T>({tiny, 4 * tiny, 0.25, 1024})).to_vector();
        const double lt_ = std::log2(tiny);
        CHECK(l[0] == doctest::Approx(lt_).epsilon(1e-6));
        CHECK(l[1] == doctest::Approx(lt_ + 2).epsilon(1e-6));
        CHECK(l[2] == -2);
        CHECK(l[3] == 10);
    });
}

TEST_CASE("floating functions of integers compute in float32") {
    for_each_device([](lt::Device) {
        Ref x = random_ref<std::int32_t>({50}, 10, -10, 10);
        static_assert(std::is_same_v<decltype(lt::exp2(lt::Tensor<std::int32_t>()))::value_type, float>);
        check_close(lt::exp2(make_tensor<std::int32_t>(x)), map(x, [](double v) { return std::exp2(v); }), 1e-6, 0);
        Ref u = random_ref<std::uint8_t>({50}, 11, 1, 250);
        check_close(lt::log2(make_tensor<std::uint8_t>(u)), map(u, [](double v) { return std::log2(v); }), 1e-6, 1e-6);
        check_close(lt::reciprocal(make_tensor<std::uint8_t>(u)), map(u, [](double v) { return 1 / v; }), 1e-6, 0);
        check_close(lt::gelu(make_tensor<std::int64_t>(x)), map(x, gelu_ref), 1e-5, 1e-6);
    });
}

TEST_CASE_TEMPLATE("rounding: floor ceil trunc and round half to even", T, float, double) {
    for_each_device([](lt::Device) {
        for (const lt::Shape& shape : {lt::Shape{7}, lt::Shape{33, 17}}) {
            INFO("shape " << shape);
            const Ref x = halves<T>(shape, 20);  // every other value a tie
            const lt::Tensor<T> t = make_tensor<T>(x);
            check_close(lt::floor(t), map(x, [](double v) { return std::floor(v); }), 0, 0);
            check_close(lt::ceil(t), map(x, [](double v) { return std::ceil(v); }), 0, 0);
            check_close(lt::trunc(t), map(x, [](double v) { return std::trunc(v); }), 0, 0);
            check_close(lt::round(t), map(x, [](double v) {
                            const double f = std::floor(v), d = v - f;  // ties go to the even neighbour
                            return d < 0.5 ? f : d > 0.5 ? f + 1 : (std::fmod(f, 2) == 0 ? f : f + 1);
                        }), 0, 0);
        }
        check_unary<T>([](const auto& x) { return lt::floor(x); }, [](double v) { return std::floor(v); }, -1e3, 1e3, 21, 0, 0);
        check_unary<T>([](const auto& x) { return lt::ceil(x); }, [](double v) { return std::ceil(v); }, -1e3, 1e3, 22, 0, 0);
        check_unary<T>([](const auto& x) { return lt::trunc(x); }, [](double v) { return std::trunc(v); }, -1e3, 1e3, 23, 0, 0);
        check_unary<T>([](const auto& x) { return lt::sign(x); }, sign_ref, -3, 3, 24, 0, 0);
        // NumPy: round([0.5, 1.5, 2.5, -0.5, -1.5]) == [0, 2, 2, -0, -2]; 0.49999997 is not a tie.
        const double below_half = std::nextafter(static_cast<T>(0.5), T(0));
        const std::vector<double> edge = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.5, below_half, -below_half, 1e15 + 0.5 * !std::is_same_v<T, float>,
                                          kInf, -kInf, kNan, -0.0};
        const std::vector<double> want = {0, 2, 2, -0.0, -2, -2, 4, 0, -0.0, as<T>(1e15), kInf, -kInf, kNan, -0.0};
        std::vector<T> got = lt::round(values<T>(edge)).to_vector();
        check_close(lt::round(values<T>(edge)), ref_of(want), 0, 0);
        CHECK(std::signbit(got[3]));  // -0.5 rounds to -0
        CHECK(std::signbit(got[13]));
        check_close(lt::floor(values<T>({-0.5, 0.5, kInf, -kInf, kNan})), ref_of({-1, 0, kInf, -kInf, kNan}), 0, 0);
        check_close(lt::ceil(values<T>({-0.5, 0.5, kInf, -kInf, kNan})), ref_of({-0.0, 1, kInf, -kInf, kNan}), 0, 0);
        check_close(lt::trunc(values<T>({-1.5, 1.5, kInf, -kInf, kNan})), ref_of({-1, 1, kInf, -kInf, kNan}), 0, 0);
    });
}

TEST_CASE_TEMPLATE("integer sign and rounding (rounding is the identity on integers)", T, std::uint8_t, std::int32_t, std::int64_t) {
    for_each_device([](lt::Device) {
        const double lo = std::is_unsigned_v<T> ? 0 : -100;
        static_assert(std::is_same_v<typename decltype(lt::floor(lt::Tensor<T>()))::value_type, T>);
        check_unary<T>([](const auto& x) { return lt::sign(x); }, sign_ref, lo, 100, 30, 0, 0);
        check_unary<T>([](const auto& x) { return lt::floor(x); }, [](double v) { return v; }, lo, 100, 31, 0, 0);
        check_unary<T>([](const auto& x) { return lt::ceil(x); }, [](double v) { return v; }, lo, 100, 32, 0, 0);
        check_unary<T>([](const auto& x) { return lt::round(x); }, [](double v) { return v; }, lo, 100, 33, 0, 0);
        check_unary<T>([](const auto& x) { return lt::trunc(x); }, [](double v) { return v; }, lo, 100, 34, 0, 0);
    });
}

TEST_CASE_TEMPLATE("bitwise not and logical not", T, std::uint8_t, std::int32_t, std::int64_t) {
    for_each_device([](lt::Device) {
        const double lo = std::is_unsigned_v<T> ? 0 : -1000, hi = std::is_unsigned_v<T> ? 255 : 1000;
        // ~x == -x - 1 in two's complement; 255 - x for uint8.
        check_unary<T>([](const auto& x) { return ~x; }, [](double v) { return std::is_unsigned_v<T> ? 255 - v : -v - 1; }, lo, hi,
                       40, 0, 0);
        check_unary<T>([](const auto& x) { return lt::bitwise_not(x); },
                       [](double v) { return std::is_unsigned_v<T> ? 255 - v : -v - 1; }, lo, hi, 41, 0, 0);
        check_unary<T>([](const auto& x) { return !x; }, [](double v) { return v == 0 ? 1.0 : 0.0; }, -3 * (lo < 0), 3, 42, 0, 0);
        const T top = std::numeric_limits<T>::max(), bottom = std::numeric_limits<T>::min();
        CHECK(lt::Tensor<T>(~lt::tensor<T>({top, bottom})).to_vector() == std::vector<T>{bottom, top});
    });
}

TEST_CASE("bitwise and logical not of bool, logical not of floats") {
    for_each_device([](lt::Device) {
        const lt::Tensor<bool> m = lt::tensor<bool>({true, false, true});
        static_assert(std::is_same_v<decltype(~m)::value_type, bool>);
        CHECK(lt::Tensor<bool>(~m).to_vector() == std::vector<bool>{false, true, false});
        CHECK(lt::Tensor<bool>(!m).to_vector() == std::vector<bool>{false, true, false});
        check_unary<bool>([](const auto& x) { return ~x; }, [](double v) { return 1 - v; }, 0, 1, 43, 0, 0);
        // NumPy: logical_not(nan) is False; -0.0 is zero.
        check_close(!values<float>({0.0, -0.0, 1, kNan, kInf, -2}), ref_of({1, 1, 0, 0, 0, 0}), 0, 0);
        check_close(lt::logical_not(values<double>({0.0, -0.0, 1, kNan})), ref_of({1, 1, 0, 0}), 0, 0);
        check_unary<float>([](const auto& x) { return !lt::round(x); }, [](double v) { return std::nearbyint(v) == 0; }, -2, 2, 44, 0, 0);
    });
}

TEST_CASE_TEMPLATE("isnan and isinf", T, float, double) {
    for_each_device([](lt::Device) {
        const std::vector<double> v = {0, -1, kNan, kInf, -kInf, 1e30, -kNan, std::numeric_limits<T>::max()};
        static_assert(std::is_same_v<typename decltype(lt::isnan(lt::Tensor<T>()))::value_type, bool>);
        check_close(lt::isnan(values<T>(v)), ref_of({0, 0, 1, 0, 0, 0, 1, 0}), 0, 0);
        check_close(lt::isinf(values<T>(v)), ref_of({0, 0, 0, 1, 1, double(as<T>(1e30) == kInf), 0, 0}), 0, 0);
        // Random data with NaN and Inf sprinkled in, through a permuted view.
        Ref x = random_ref<T>({6, 4, 5}, 50);
        for (std::size_t i = 0; i < x.v.size(); i += 7) x.v[i] = (i % 3 == 0) ? kNan : (i % 3 == 1) ? kInf : -kInf;
        const lt::Tensor<T> t = make_tensor<T>(x).permute({1, 2, 0});
        const Ref px = permute(x, {1, 2, 0});
        check_close(lt::isnan(t), map(px, [](double a) { return double(std::isnan(a)); }), 0, 0);
        check_close(lt::isinf(t), map(px, [](double a) { return double(std::isinf(a)); }), 0, 0);
    });
}

TEST_CASE_TEMPLATE("isnan and isinf of integers and bool are false", T, bool, std::uint8_t, std::int32_t, std::int64_t) {
    for_each_device([](lt::Device) {
        const lt::Tensor<T> t = lt::tensor<T>({T(0), T(1), std::numeric_limits<T>::max(), std::numeric_limits<T>::min()});
        CHECK(lt::Tensor<bool>(lt::isnan(t)).to_vector() == std::vector<bool>(4, false));
        CHECK(lt::Tensor<bool>(lt::isinf(t)).to_vector() == std::vector<bool>(4, false));
    });
}

// ------------------------------------------------------------------------------------ binary ops

TEST_CASE_TEMPLATE("integer floor_divide, remainder (%) and fmod on random data, zeros included", T, std::int32_t,
                   std::int64_t, std::uint8_t) {
    for_each_device([](lt::Device) {
        const double lo = std::is_unsigned_v<T> ? 0 : -50, hi = 50, blo = std::is_unsigned_v<T> ? 0 : -9;
        check_binary<T>([](const auto& a, const auto& b) { return lt::floor_divide(a, b); }, floordiv_int, lo, hi, blo, 9, 60);
        check_binary<T>([](const auto& a, const auto& b) { return a % b; }, remainder_int, lo, hi, blo, 9, 70);
        check_binary<T>([](const auto& a, const auto& b) { return lt::remainder(a, b); }, remainder_int, lo, hi, blo, 9, 80);
        check_binary<T>([](const auto& a, const auto& b) { return lt::fmod(a, b); }, fmod_int, lo, hi, blo, 9, 90);
    });
}

TEST_CASE_TEMPLATE("integer division edges: signs, division by zero, the most negative value by -1", T, std::int32_t, std::int64_t) {
    for_each_device([](lt::Device) {
        const T lowest = std::numeric_limits<T>::min(), top = std::numeric_limits<T>::max();
        // NumPy: -7 // 2 == -4, -7 % 2 == 1, 7 % -2 == -1, fmod(-7, 2) == -1, x // 0 == x % 0 == 0.
        const lt::Tensor<T> a = lt::tensor<T>({-7, 7, -7, 7, -1, 5, -5, 0, lowest, lowest, lowest, top, top});
        const lt::Tensor<T> b = lt::tensor<T>({2, -2, -2, 2, 2, 0, 0, 0, -1, 1, 0, -1, lowest});
        CHECK(lt::Tensor<T>(lt::floor_divide(a, b)).to_vector() ==
              std::vector<T>{-4, -4, 3, 3, -1, 0, 0, 0, lowest, lowest, 0, T(-top), -1});
        CHECK(lt::Tensor<T>(a % b).to_vector() == std::vector<T>{1, -1, -1, 1, 1, 0, 0, 0, 0, 0, 0, 0, T(-1)});
        CHECK(lt::Tensor<T>(lt::fmod(a, b)).to_vector() == std::vector<T>{-1, 1, -1, 1, -1, 0, 0, 0, 0, 0, 0, 0, top});
        // Scalars: a divisor of 0 and of -1.
        CHECK(lt::Tensor<T>(lt::floor_divide(a, 0)).to_vector() == std::vector<T>(13, 0));
        CHECK(lt::Tensor<T>(a % -1).to_vector() == std::vector<T>(13, 0));
        CHECK(lt::Tensor<T>(lt::floor_divide(lt::tensor<T>({lowest, 6}), T(-1))).to_vector() == std::vector<T>{lowest, -6});
    });
}

TEST_CASE("uint8 division edges") {
    for_each_device([](lt::Device) {
        const lt::Tensor<std::uint8_t> a = lt::tensor<std::uint8_t>({200, 7, 255, 0});
        const lt::Tensor<std::uint8_t> b = lt::tensor<std::uint8_t>({7, 0, 16, 0});
        CHECK(lt::Tensor<std::uint8_t>(lt::floor_divide(a, b)).to_vector() == std::vector<std::uint8_t>{28, 0, 15, 0});
        CHECK(lt::Tensor<std::uint8_t>(a % b).to_vector() == std::vector<std::uint8_t>{4, 0, 15, 0});
        CHECK(lt::Tensor<std::uint8_t>(lt::fmod(a, b)).to_vector() == std::vector<std::uint8_t>{4, 0, 15, 0});
    });
}

TEST_CASE_TEMPLATE("floating floor_divide, remainder (%) and fmod on random data", T, float, double) {
    for_each_device([](lt::Device) {
        // floor_divide is the floor of the exact quotient (long double holds it closely enough).
        auto floordiv = [](double a, double b) { return static_cast<double>(std::floor(static_cast<long double>(a) / b)); };
        check_binary<T>([](const auto& a, const auto& b) { return lt::floor_divide(a, b); }, floordiv, -20, 20, -4, 4, 100);
        // Remainders are exact in T (fmod is; remainder adds b to a result of the other sign).
        check_binary<T>([](const auto& a, const auto& b) { return a % b; }, remainder_float, -20, 20, -4, 4, 110,
                        std::is_same_v<T, float> ? 1e-6 : 1e-15, 1e-6);
        check_binary<T>([](const auto& a, const auto& b) { return lt::fmod(a, b); }, [](double a, double b) { return std::fmod(a, b); },
                        -20, 20, -4, 4, 120);
    });
}

TEST_CASE_TEMPLATE("floating division edges: signs, zero divisors, NaN and Inf", T, float, double) {
    for_each_device([](lt::Device) {
        // NumPy: remainder(-7.5, 2) == 0.5, remainder(7.5, -2) == -0.5, fmod(-7.5, 2) == -1.5,
        // floor_divide(-7.5, 2) == -4, x % 0 and fmod(x, 0) are NaN, 1 // 0 == inf, 0 // 0 and
        // inf // 2 are NaN, -1 // inf == -1, remainder(-1, inf) == inf, remainder(0, -2) == -0.
        const std::vector<double> a = {-7.5, 7.5, -7.5, 7.5, 1, -1, 0, -1, 5, kInf, kNan, 0, 3};
        const std::vector<double> b = {2, -2, -2, 2, 0, 0, 0, kInf, kInf, 2, 2, -2, kNan};
        const lt::Tensor<T> ta = values<T>(a), tb = values<T>(b);
        check_close(ta % tb, ref_of({0.5, -0.5, -1.5, 1.5, kNan, kNan, kNan, kInf, 5, kNan, kNan, -0.0, kNan}), 0, 0);
        check_close(lt::fmod(ta, tb), ref_of({-1.5, 1.5, -1.5, 1.5, kNan, kNan, kNan, -1, 5, kNan, kNan, 0, kNan}), 0, 0);
        check_close(lt::floor_divide(ta, tb), ref_of({-4, -4, 3, 3, kInf, -kInf, kNan, -1, 0, kNan, kNan, -0.0, kNan}), 0, 0);
        std::vector<T> r = lt::Tensor<T>(ta % tb).to_vector();
        CHECK(std::signbit(r[11]));  // the divisor's sign, also for 0
        CHECK(std::signbit(lt::Tensor<T>(lt::floor_divide(ta, tb)).to_vector()[11]));
        // The floor of the exact quotient, not of the rounded one: 1 / 0.1 rounds to 10, 1 // 0.1 is 9.
        CHECK(lt::Tensor<T>(lt::floor_divide(values<T>({1, -1}), T(0.1))).to_vector() == std::vector<T>{9, -10});
        CHECK(!std::signbit(lt::Tensor<T>(values<T>({-4}) % T(2)).item()));
    });
}

TEST_CASE_TEMPLATE("bitwise and, or, xor", T, std::uint8_t, std::int32_t, std::int64_t) {
    for_each_device([](lt::Device) {
        const double lo = std::is_unsigned_v<T> ? 0 : -1000, hi = std::is_unsigned_v<T> ? 255 : 1000;
        // The reference works on the bits of the two's complement int64 values.
        auto bitwise = [](auto f) {
            return [f](double a, double b) {
                return static_cast<double>(static_cast<T>(f(static_cast<std::int64_t>(a), static_cast<std::int64_t>(b))));
            };
        };
        check_binary<T>([](const auto& a, const auto& b) { return a & b; }, bitwise([](auto x, auto y) { return x & y; }), lo, hi, lo, hi, 130);
        check_binary<T>([](const auto& a, const auto& b) { return a | b; }, bitwise([](auto x, auto y) { return x | y; }), lo, hi, lo, hi, 140);
        check_binary<T>([](const auto& a, const auto& b) { return a ^ b; }, bitwise([](auto x, auto y) { return x ^ y; }), lo, hi, lo, hi, 150);
        check_binary<T>([](const auto& a, const auto& b) { return lt::bitwise_xor(a, b); },
                        bitwise([](auto x, auto y) { return x ^ y; }), lo, hi, lo, hi, 160);
    });
}

TEST_CASE("bitwise ops of bool are logical; bool with an integer promotes") {
    for_each_device([](lt::Device) {
        check_binary<bool>([](const auto& a, const auto& b) { return a & b; }, [](double a, double b) { return double(a && b); }, 0, 1, 0, 1, 170);
        check_binary<bool>([](const auto& a, const auto& b) { return a | b; }, [](double a, double b) { return double(a || b); }, 0, 1, 0, 1, 180);
        check_binary<bool>([](const auto& a, const auto& b) { return a ^ b; }, [](double a, double b) { return double(a != b); }, 0, 1, 0, 1, 190);
        const lt::Tensor<bool> m = lt::tensor<bool>({true, false, true});
        const lt::Tensor<std::int32_t> i = lt::tensor<std::int32_t>({6, 6, -1});
        static_assert(std::is_same_v<decltype(m & i)::value_type, std::int32_t>);
        CHECK(lt::Tensor<std::int32_t>(m | i).to_vector() == std::vector<std::int32_t>{7, 6, -1});
        CHECK(lt::Tensor<std::int32_t>(i & m).to_vector() == std::vector<std::int32_t>{0, 0, 1});
    });
}

TEST_CASE_TEMPLATE("shifts, in range and out of range", T, std::uint8_t, std::int32_t, std::int64_t) {
    for_each_device([](lt::Device) {
        const double lo = std::is_unsigned_v<T> ? 0 : -1000, hi = std::is_unsigned_v<T> ? 255 : 1000;
        const double clo = std::is_unsigned_v<T> ? 0 : -3, chi = bits<T>() + 3;  // counts outside [0, bits) too
        check_binary<T>([](const auto& a, const auto& b) { return a << b; }, shl_ref<T>, lo, hi, clo, chi, 200);
        check_binary<T>([](const auto& a, const auto& b) { return a >> b; }, shr_ref<T>, lo, hi, clo, chi, 210);
        check_binary<T>([](const auto& a, const auto& b) { return lt::left_shift(a, b); }, shl_ref<T>, lo, hi, clo, chi, 220);
        check_binary<T>([](const auto& a, const auto& b) { return lt::right_shift(a, b); }, shr_ref<T>, lo, hi, clo, chi, 230);
        const T lowest = std::numeric_limits<T>::min(), top = std::numeric_limits<T>::max();
        const T b = static_cast<T>(bits<T>());
        // 1 << (bits - 1) is the sign bit; shifting by bits or more gives 0, or -1 for >> of a
        // negative value (as if shifting one bit at a time).
        const lt::Tensor<T> x = lt::tensor<T>({1, 1, 1, top, lowest, top, T(b - 1)});
        const lt::Tensor<T> n = lt::tensor<T>({T(b - 1), b, T(b + 7), 1, T(b - 1), b, 1});
        const T sign_bit = std::is_unsigned_v<T> ? T(128) : lowest;
        CHECK(lt::Tensor<T>(x << n).to_vector() == std::vector<T>{sign_bit, 0, 0, T(std::is_unsigned_v<T> ? 254 : -2), 0, 0, T(2 * (b - 1))});
        CHECK(lt::Tensor<T>(x >> n).to_vector() ==
              std::vector<T>{0, 0, 0, T(top / 2), T(std::is_unsigned_v<T> ? 0 : -1), 0, T((b - 1) / 2)});
        if constexpr (std::is_signed_v<T>) {
            const lt::Tensor<T> neg = lt::tensor<T>({-8, -1, -1, -7, 5});
            const lt::Tensor<T> cnt = lt::tensor<T>({1, 70, -1, 100, -2});
            CHECK(lt::Tensor<T>(neg >> cnt).to_vector() == std::vector<T>{-4, -1, -1, -1, 0});
            CHECK(lt::Tensor<T>(neg << cnt).to_vector() == std::vector<T>{-16, 0, 0, 0, 0});
        }
    });
}

TEST_CASE("logical and, or: any dtypes, bool results, NaN is true") {
    for_each_device([](lt::Device) {
        auto land = [](double a, double b) { return double(a != 0 && b != 0); };
        auto lor = [](double a, double b) { return double(a != 0 || b != 0); };
        check_binary<std::int32_t>([](const auto& a, const auto& b) { return a && b; }, land, -2, 2, -2, 2, 240);
        check_binary<std::int32_t>([](const auto& a, const auto& b) { return a || b; }, lor, -2, 2, -2, 2, 250);
        check_binary<bool>([](const auto& a, const auto& b) { return lt::logical_and(a, b); }, land, 0, 1, 0, 1, 260);
        check_binary<std::uint8_t>([](const auto& a, const auto& b) { return lt::logical_or(a, b); }, lor, 0, 2, 0, 2, 270);
        const lt::Tensor<float> f = values<float>({0.0, -0.0, kNan, kInf, 2, 0});
        const lt::Tensor<std::uint8_t> u = lt::tensor<std::uint8_t>({1, 1, 1, 0, 0, 0});
        static_assert(std::is_same_v<decltype(f && u)::value_type, bool>);
        check_close(f && u, ref_of({0, 0, 1, 0, 0, 0}), 0, 0);
        check_close(f || u, ref_of({1, 1, 1, 1, 1, 0}), 0, 0);
        check_close(lt::logical_and(f, true), ref_of({0, 0, 1, 1, 1, 0}), 0, 0);
        check_close((f > 1.0f) || (f < -1.0f), ref_of({0, 0, 0, 1, 1, 0}), 0, 0);
    });
}

TEST_CASE("compound assignment with the new operators") {
    for_each_device([](lt::Device) {
        lt::Tensor<std::int32_t> x = lt::tensor<std::int32_t>({-7, 12, 5});
        x %= 5;   // 3 2 0
        x <<= 2;  // 12 8 0
        x |= 1;   // 13 9 1
        x ^= 3;   // 14 10 2
        x &= 6;   // 6 2 2
        x >>= 1;  // 3 1 1
        CHECK(x.to_vector() == std::vector<std::int32_t>{3, 1, 1});
    });
}

// ----------------------------------------------------------------------------------------- clamp

TEST_CASE_TEMPLATE("clamp with scalar and tensor bounds; NaN propagates", T, float, double, std::int32_t) {
    for_each_device([](lt::Device) {
        Ref x = random_ref<T>({9, 8}, 280, -10, 10);
        const lt::Tensor<T> t = make_tensor<T>(x);
        check_close(lt::clamp(t, T(-3), T(4)), map(x, [](double v) { return std::min(std::max(v, -3.0), 4.0); }), 0, 0);
        // Tensor bounds, broadcast: a lower bound per column, an upper bound per row.
        Ref lo = random_ref<T>({8}, 281, -6, 0), hi = random_ref<T>({9, 1}, 282, 1, 6);
        Ref want = zip(zip(x, lo, [](double v, double l) { return std::max(v, l); }), hi, [](double v, double h) { return std::min(v, h); });
        check_close(lt::clamp(t, make_tensor<T>(lo), make_tensor<T>(hi)), want, 0, 0);
        check_close(lt::clamp(t.t(), T(0), make_tensor<T>(hi).reshape({9})),
                    zip(map(permute(x, {1, 0}), [](double v) { return std::max(v, 0.0); }), ref_of(hi.v), [](double v, double h) { return std::min(v, h); }), 0, 0);
        if constexpr (std::is_floating_point_v<T>) {
            check_close(lt::clamp(values<T>({kNan, 5, -5, kInf, -kInf, 0}), T(-1), T(1)), ref_of({kNan, 1, -1, 1, -1, 0}), 0, 0);
            check_close(lt::clamp(values<T>({0, 2}), values<T>({kNan, 0}), T(1)), ref_of({kNan, 1}), 0, 0);
            check_close(lt::clamp(values<T>({0, 2}), T(0), values<T>({1, kNan})), ref_of({0, kNan}), 0, 0);
        }
    });
}

// ------------------------------------------------------------------------------------ reductions

TEST_CASE_TEMPLATE("prod over all axes and over axis lists", T, float, double, std::int32_t, std::int64_t, std::uint8_t, bool) {
    for_each_device([](lt::Device) {
        using R = std::conditional_t<std::is_floating_point_v<T>, T, std::int64_t>;
        static_assert(std::is_same_v<decltype(lt::Tensor<T>().prod()), lt::Tensor<R>>);
        const bool fp = std::is_floating_point_v<T>;
        // Values near 1 for floats (long products stay in range); small integers, zeros included.
        const double lo = fp ? 0.8 : std::is_signed_v<T> ? -3 : 0, hi = fp ? 1.25 : 3;
        const double rtol = std::is_same_v<T, float> ? 2e-5 : std::is_same_v<T, double> ? 1e-12 : 0;
        auto mul = [](double a, double b) { return a * b; };
        const std::vector<std::pair<lt::Shape, std::vector<int>>> cases = {
            {{}, {}}, {{7}, {}}, {{4, 5}, {1}}, {{4, 5}, {0}}, {{3, 4, 5}, {0, 2}}, {{2, 3, 4}, {-1}}};
        unsigned seed = 300;
        for (const auto& c : cases) {
            const lt::Shape& shape = c.first;  // (not a structured binding: INFO's lambda captures it)
            const std::vector<int>& axes = c.second;
            for (bool keepdim : {false, true}) {
                INFO("shape " << shape << " axes " << lt::Axes(axes.begin(), axes.end()) << " keepdim " << keepdim);
                Ref x = random_ref<T>(shape, ++seed, lo, hi);
                const lt::Tensor<T> t = make_tensor<T>(x);
                if (axes.empty()) {
                    check_close(t.prod(), reduce(x, {}, false, 1.0, mul), rtol, 0);
                    check_close(lt::prod(t), reduce(x, {}, false, 1.0, mul), rtol, 0);
                } else {
                    const lt::Axes ax(axes.begin(), axes.end());
                    check_close(t.prod(ax, keepdim), reduce(x, axes, keepdim, 1.0, mul), rtol, 0);
                    check_close(lt::prod(t, ax, keepdim), reduce(x, axes, keepdim, 1.0, mul), rtol, 0);
                }
            }
        }
        // Through a permuted view, a long row (several blocks), a long column, a single axis.
        Ref x = random_ref<T>({6, 5, 4}, 320, lo, hi);
        check_close(make_tensor<T>(x).permute({2, 0, 1}).prod({1, 2}), reduce(permute(x, {2, 0, 1}), {1, 2}, false, 1.0, mul), rtol, 0);
        if constexpr (fp) {
            Ref row = random_ref<T>({3, 5000}, 321, 0.99, 1.01), col = random_ref<T>({5000, 3}, 322, 0.99, 1.01);
            check_close(make_tensor<T>(row).prod(1), reduce(row, {1}, false, 1.0, mul), 50 * rtol, 0);
            check_close(make_tensor<T>(col).prod(0), reduce(col, {0}, false, 1.0, mul), 50 * rtol, 0);
            check_close(lt::prod(make_tensor<T>(row), 0, true), reduce(row, {0}, true, 1.0, mul), rtol, 0);
        }
    });
}

TEST_CASE("prod: NaN and Inf, integer products wrap in int64, fused producers") {
    for_each_device([](lt::Device) {
        check_close(values<float>({2, kNan, 3}).prod(), Ref{{}, {kNan}}, 0, 0);
        check_close(values<double>({kInf, 0}).prod(), Ref{{}, {kNan}}, 0, 0);
        check_close(values<double>({-kInf, 2}).prod(), Ref{{}, {-kInf}}, 0, 0);
        // 3^50 and 7^30 * -1 wrap modulo 2^64, as int64 multiplication does (NumPy).
        std::vector<std::int64_t> threes(50, 3), sevens(30, 7);
        sevens[4] = -7;
        std::uint64_t want3 = 1, want7 = 1;
        for (auto v : threes) want3 *= static_cast<std::uint64_t>(v);
        for (auto v : sevens) want7 *= static_cast<std::uint64_t>(v);
        CHECK(lt::tensor<std::int64_t>(threes, {50}).prod().item() == static_cast<std::int64_t>(want3));
        CHECK(lt::tensor<std::int64_t>(sevens, {5, 6}).prod().item() == static_cast<std::int64_t>(want7));
        std::vector<std::int32_t> big(40, 100000);  // int32 values accumulate in int64, wrapping there
        std::uint64_t want_big = 1;
        for (auto v : big) want_big *= static_cast<std::uint64_t>(v);
        CHECK(lt::tensor<std::int32_t>(big, {40}).prod().item() == static_cast<std::int64_t>(want_big));
        // A producer fuses into the reduction: one kernel.
        Ref x = random_ref<float>({6, 9}, 330, -1, 1);
        auto e = (lt::abs(make_tensor<float>(x)) + 0.5f).prod(1);
        CHECK(lt::kernel_count(lt::schedule(e)) == 1);
        check_close(e, reduce(map(x, [](double v) { return std::fabs(v) + 0.5; }), {1}, false, 1.0,
                              [](double a, double b) { return a * b; }), 2e-5, 0);
    });
}

TEST_CASE_TEMPLATE("any and all", T, float, double, std::int32_t, std::uint8_t, bool) {
    for_each_device([](lt::Device) {
        static_assert(std::is_same_v<decltype(lt::Tensor<T>().any()), lt::Tensor<bool>>);
        static_assert(std::is_same_v<decltype(lt::all(lt::Tensor<T>(), 0)), lt::Tensor<bool>>);
        auto any = [](double a, double b) { return double(a != 0 || b != 0); };
        auto all = [](double a, double b) { return double(a != 0 && b != 0); };
        // Mostly zeros for any, mostly non-zeros for all, so that both answers occur per row.
        auto sparse = [](const Ref& r) { return map(r, [](double v) { return v > 0.8 ? 1.0 : 0.0; }); };
        auto dense = [](const Ref& r) { return map(r, [](double v) { return v < -0.8 ? 0.0 : 1.0; }); };
        unsigned seed = 340;
        for (const lt::Shape& shape : {lt::Shape{6}, lt::Shape{7, 5}, lt::Shape{3, 4, 5}}) {
            for (const std::vector<int>& axes : {std::vector<int>{}, std::vector<int>{0}, std::vector<int>{-1}}) {
                for (bool keepdim : {false, true}) {
                    INFO("shape " << shape << " axes " << lt::Axes(axes.begin(), axes.end()) << " keepdim " << keepdim);
                    Ref raw = random_ref<double>(shape, ++seed, -1, 1);
                    Ref s = sparse(raw), d = dense(raw);
                    const lt::Tensor<T> ts = make_tensor<T>(s), td = make_tensor<T>(d);
                    if (axes.empty()) {
                        check_close(ts.any(), reduce(s, {}, false, 0.0, any), 0, 0);
                        check_close(lt::all(td), reduce(d, {}, false, 1.0, all), 0, 0);
                    } else {
                        const lt::Axes ax(axes.begin(), axes.end());
                        check_close(ts.any(ax, keepdim), reduce(s, axes, keepdim, 0.0, any), 0, 0);
                        check_close(lt::any(ts, ax, keepdim), reduce(s, axes, keepdim, 0.0, any), 0, 0);
                        check_close(td.all(ax, keepdim), reduce(d, axes, keepdim, 1.0, all), 0, 0);
                        check_close(lt::all(td, ax[0], keepdim), reduce(d, axes, keepdim, 1.0, all), 0, 0);
                    }
                }
            }
        }
        // A permuted view, reduced over two axes.
        Ref d = dense(random_ref<double>({4, 6, 5}, 360, -1, 1));
        check_close(make_tensor<T>(d).permute({1, 2, 0}).all({0, 2}), reduce(permute(d, {1, 2, 0}), {0, 2}, false, 1.0, all), 0, 0);
        if constexpr (std::is_floating_point_v<T>) {  // NaN is non-zero, -0 is zero
            CHECK(values<T>({0, kNan}).any().item());
            CHECK(values<T>({kNan, 1}).all().item());
            CHECK_FALSE(values<T>({-0.0, 0}).any().item());
        }
    });
}

TEST_CASE("reductions over an empty axis: prod 1, any false, all true; max and min stay errors") {
    for_each_device([](lt::Device) {
        const lt::Tensor<float> empty = lt::zeros<float>({0, 4});
        CHECK(empty.prod().item() == 1.0f);
        CHECK(empty.prod(0).to_vector() == std::vector<float>(4, 1.0f));
        CHECK(empty.prod(1).shape() == lt::Shape{0});
        CHECK(lt::zeros<std::int32_t>({3, 0}).prod(1).to_vector() == std::vector<std::int64_t>(3, 1));
        CHECK_FALSE(empty.any().item());
        CHECK(empty.all().item());
        CHECK(empty.any(0).to_vector() == std::vector<bool>(4, false));
        CHECK(empty.all(0, true).to_vector() == std::vector<bool>(4, true));
        CHECK(lt::zeros<bool>({2, 0, 3}).all(1).to_vector() == std::vector<bool>(6, true));
        CHECK_THROWS_AS(empty.max(0), lt::ValueError);
        CHECK_THROWS_AS(lt::zeros<bool>({0}).max(), lt::ValueError);
        CHECK_THROWS_AS(lt::zeros<bool>({0}).min(), lt::ValueError);
    });
}

// ------------------------------------------------------------------------------- fusion, loops

TEST_CASE("a chain of the new element-wise ops over views is one kernel") {
    for_each_device([](lt::Device) {
        Ref rx = random_ref<float>({6, 4}, 400, -3, 3), ry = random_ref<float>({4, 6}, 401, -3, 3);
        const lt::Tensor<float> x = make_tensor<float>(rx), y = make_tensor<float>(ry);
        auto e = lt::clamp(lt::floor_divide(lt::round(x.t() * 3.0f), 2.0f) + lt::fmod(y, 1.5f) * lt::sign(y) -
                               lt::gelu(lt::silu(x.t())) % 0.75f + lt::trunc(lt::exp2(y)) * lt::ceil(lt::reciprocal(y)),
                           -2.0f, 2.0f);
        CHECK(lt::kernel_count(lt::schedule(e)) == 1);
        const Ref xt = permute(rx, {1, 0});
        Ref want = ry;
        for (std::size_t i = 0; i < want.v.size(); ++i) {
            const double a = xt.v[i], b = ry.v[i];
            const double v = std::floor(std::nearbyint(static_cast<float>(a * 3)) / 2) + std::fmod(b, 1.5) * sign_ref(b) -
                             remainder_float(static_cast<float>(gelu_ref(static_cast<float>(silu_ref(a)))), 0.75) +
                             std::trunc(std::exp2(b)) * std::ceil(static_cast<float>(1 / b));
            want.v[i] = std::min(std::max(v, -2.0), 2.0);
        }
        check_close(e, want, 1e-5, 1e-5);

        Ref ri = random_ref<std::int32_t>({5, 3}, 402, -100, 100), rj = random_ref<std::int32_t>({3}, 403, -100, 100);
        const lt::Tensor<std::int32_t> i = make_tensor<std::int32_t>(ri), j = make_tensor<std::int32_t>(rj);
        auto k = lt::floor_divide((((i.t() << 2) ^ j.reshape({3, 1})) & 0x3c) | ((~j.reshape({3, 1}) % 5) >> 1), 3);
        CHECK(lt::kernel_count(lt::schedule(k)) == 1);
        Ref want_k{{3, 5}, {}};
        for (int r = 0; r < 3; ++r)
            for (int c = 0; c < 5; ++c) {
                const auto a = static_cast<std::int64_t>(ri.v[static_cast<std::size_t>(c * 3 + r)]);
                const auto b = static_cast<std::int64_t>(rj.v[static_cast<std::size_t>(r)]);
                const std::int64_t v = (((a * 4) ^ b) & 0x3c) | (static_cast<std::int64_t>(remainder_int(double(-b - 1), 5)) >> 1);
                want_k.v.push_back(std::floor(static_cast<double>(v) / 3));
            }
        check_close(k, want_k, 0, 0);

        auto p = lt::where(lt::isnan(x) || lt::isinf(x) || !(x > 0.0f), 0.0f, lt::log2(x));
        CHECK(lt::kernel_count(lt::schedule(p)) == 1);
        check_close(p, map(rx, [](double v) { return v > 0 ? std::log2(v) : 0.0; }), 1e-5, 1e-6);
        CHECK(lt::kernel_count(lt::schedule((x.t() > y).any(1))) == 1);
    });
}


TEST_CASE("compiled loops of the new float ops agree bit for bit with the interpreter") {
    for_each_device([](lt::Device) {
        Ref ra = random_ref<float>({67, 131}, 410, -4, 4), rb = random_ref<float>({131}, 411, -4, 4);
        ra.v[3] = static_cast<double>(NAN);
        ra.v[7] = kInf;
        ra.v[9] = -kInf;
        const lt::Tensor<float> a = make_tensor<float>(ra), b = make_tensor<float>(rb);
        const lt::Tensor<double> d = make_tensor<double>(random_ref<double>({1000}, 412, -4, 4));
        check_compiled_matches_interpreted([&] { return lt::erfc(a) + lt::expm1(b) * lt::tan(a) - lt::exp2(b) / lt::sqrt(lt::abs(a)); }, true);
        check_compiled_matches_interpreted([&] { return lt::floor(a) + lt::ceil(b) * lt::round(a) - lt::trunc(b) + lt::copysign(a, b); }, true);
        check_compiled_matches_interpreted([&] { return lt::fmod(a, b) + lt::fmod(b, 0.3f) + lt::log2(lt::abs(b)); }, true);
        check_compiled_matches_interpreted([&] { return lt::where(lt::isnan(a) | lt::isinf(a), 1.0f, lt::reciprocal(a)); }, true);
        check_compiled_matches_interpreted([&] { return lt::where((a > 0.0f) && !b, a, lt::clamp(b, -1.0f, 0.5f)); }, true);
        check_compiled_matches_interpreted([&] { return lt::erf(d) - lt::fmod(lt::round(d * 2.0), 3.0) + lt::where(lt::isnan(d), 0.0, d); }, true);
        // The composites that were ops (gelu, silu, sign, %, floor_divide) are graph builders,
        // which no compiled loop matches: one interpreted kernel either way.
        check_compiled_matches_interpreted([&] { return lt::gelu(a) + lt::silu(b) * lt::tan(a) - lt::exp2(b) / lt::rsqrt(lt::abs(a)); }, false);
        check_compiled_matches_interpreted([&] { return lt::floor(a) + lt::sign(a) + a % b - lt::floor_divide(a, 0.3f); }, false);
        check_compiled_matches_interpreted([&] { return lt::gelu(d) - lt::round(d * 2.0) % 3.0 + lt::sigmoid(d); }, false);
    });
}

// ------------------------------------------------------------------------------------------ errors

TEST_CASE("dtype errors of the untyped graph builders name the op and the dtypes") {
    namespace g = lt::detail::graph;
    auto message_of = [](auto&& f) -> std::string {
        try {
            f();
        } catch (const lt::ValueError& e) {
            return e.what();
        }
        return "(no ValueError)";
    };
    const lt::Tensor<float> f = lt::tensor<float>({1.5f, 2.0f});
    const lt::Tensor<std::int32_t> i = lt::tensor<std::int32_t>({1, 2});
    const lt::Tensor<bool> m = lt::tensor<bool>({true, false});
    std::string msg = message_of([&] { g::binary(lt::BinaryOp::Shl, f.build(), i.build()); });
    CHECK(msg.find("left_shift") != std::string::npos);
    CHECK(msg.find("float32") != std::string::npos);
    CHECK(msg.find("integer operands") != std::string::npos);
    msg = message_of([&] { g::binary(lt::BinaryOp::Shr, m.build(), m.build()); });
    CHECK(msg.find("right_shift") != std::string::npos);
    CHECK(msg.find("bool") != std::string::npos);
    msg = message_of([&] { g::binary(lt::BinaryOp::BitAnd, i.build(), lt::Scalar::of(2.5)); });
    CHECK(msg.find("bitwise_and") != std::string::npos);
    CHECK(msg.find("float64 scalar") != std::string::npos);
    msg = message_of([&] { g::unary(lt::UnaryOp::BitwiseNot, f.build()); });
    CHECK(msg.find("bitwise_not") != std::string::npos);
    CHECK(msg.find("float32") != std::string::npos);
    msg = message_of([&] { g::unary(lt::UnaryOp::Floor, m.build()); });
    CHECK(msg.find("floor") != std::string::npos);
    CHECK(msg.find("bool") != std::string::npos);
    msg = message_of([&] { g::remainder(m.build(), m.build()); });
    CHECK(msg.find("remainder") != std::string::npos);
    CHECK(msg.find("two bool operands") != std::string::npos);
    // What the rules do accept, untyped too.
    CHECK(g::unary(lt::UnaryOp::IsNan, m.build())->dtype == lt::DType::Bool);
    CHECK(g::binary(lt::BinaryOp::LogicalOr, f.build(), m.build())->dtype == lt::DType::Bool);
    CHECK(g::binary(lt::BinaryOp::BitXor, m.build(), m.build())->dtype == lt::DType::Bool);
    CHECK(g::binary(lt::BinaryOp::Shl, m.build(), i.build())->dtype == lt::DType::Int32);
}

TEST_CASE("sigmoid and silu are exact where their results are tiny or subnormal") {
    for_each_device([](lt::Device) {
        // Within 2 ulp of the double result rounded to float (subnormals: 2 steps of 2^-149).
        const std::vector<float> xs{-20.0f, -79.0f, -81.0f, -87.5f, -90.0f, -98.0f, -100.0f, -105.0f, -150.0f, 30.0f, 100.0f};
        lt::Tensor<float> x = lt::tensor<float>(xs, {static_cast<std::int64_t>(xs.size())});
        const std::vector<float> s = lt::sigmoid(x).to_vector(), si = lt::silu(x).to_vector();
        auto close = [](float got, double want) {
            const float w = static_cast<float>(want);
            const double step = std::max<double>(std::nextafter(std::fabs(w), INFINITY) - std::fabs(w), std::ldexp(1.0, -149));
            return std::fabs(static_cast<double>(got) - static_cast<double>(w)) <= 2 * step;
        };
        for (std::size_t i = 0; i < xs.size(); ++i) {
            const double v = xs[i], sig = 1 / (1 + std::exp(-v));
            INFO("x = " << v << ": sigmoid " << s[i] << " (want " << sig << "), silu " << si[i] << " (want " << v * sig << ")");
            CHECK(close(s[i], sig));
            CHECK(close(si[i], v * sig));
        }
        CHECK(si[7] < 0.0f);  // silu(-105) = -2.66e-44: a subnormal, not -0
        CHECK(s[6] > 0.0f);   // sigmoid(-100) = 3.72e-44
        // double: the same at double's ends.
        lt::Tensor<double> d = lt::tensor<double>({-720.0, -740.0, -30.0}, {3});
        const std::vector<double> sd = lt::silu(d).to_vector();
        CHECK(sd[0] < 0.0);
        CHECK(sd[1] < 0.0);
        CHECK(sd[0] == doctest::Approx(-720.0 * std::exp(-720.0)).epsilon(1e-6));
        CHECK(sd[2] == doctest::Approx(-30.0 / (1 + std::exp(30.0))).epsilon(1e-14));
    });
}

// ------------------------------------------------------------------ tiny and huge results

/// Whether got is within n units of the last place of want rounded to T (in the subnormals,
/// n steps of the smallest subnormal); infinities must match.
template <class T, class R>
bool within_ulps(T got, R want, double n) {
    const T w = static_cast<T>(want);
    if (std::isinf(w) || std::isinf(got)) return got == w;
    const T a = std::fabs(w);
    const double step = std::max<double>(std::nextafter(a, std::numeric_limits<T>::infinity()) - a,
                                         std::numeric_limits<T>::denorm_min());
    return std::fabs(static_cast<double>(got) - static_cast<double>(w)) <= n * step;
}

/// ulps(d) bounds per device: the host's, or OpenCL's (its built-ins' bounds in the spec).
double bound(lt::Device d, double host, double opencl) { return d.kind == lt::Device::Kind::Host ? host : opencl; }

TEST_CASE("pow is exact down into the subnormals and up to the largest finite values") {
    for_each_device([](lt::Device d) {
        // Float: the host computes exp(b log a) in double (within 1 ulp); OpenCL allows 16 ulp.
        const std::vector<float> a{0.1f, 0.1f, 0.5f, 2.0f, 2.0f, 1e-40f, 1e-45f, 0.9999f, 36.6f, 10.0f, 1.0001f, 3e38f, 7.0f};
        const std::vector<float> b{40.0f, 44.0f, 149.5f, -149.0f, 127.99f, 0.75f, 0.99f, 890000.0f, 24.7f, 38.5f, 880000.0f, 0.75f, -3.1f};
        const auto n = static_cast<std::int64_t>(a.size());
        const std::vector<float> p = lt::pow(lt::tensor<float>(a, {n}), lt::tensor<float>(b, {n})).to_vector();
        for (std::size_t i = 0; i < a.size(); ++i) {
            const double want = std::pow(static_cast<double>(a[i]), static_cast<double>(b[i]));
            INFO("pow(" << a[i] << ", " << b[i] << ") = " << p[i] << ", want " << want);
            CHECK(within_ulps(p[i], want, bound(d, 1, 16)));
        }
        CHECK(p[0] > 0.0f);               // pow(0.1f, 40) = 1e-40, a subnormal, not 0
        CHECK(std::isfinite(p[4]));       // pow(2, 127.99) = 3.38e38, not inf
        // Double: exp(b log a) on the host, whose error grows with |b log a| (up to ~700 ulp for
        // results near the ends of double's range); what must hold is C's range and subnormals.
        const std::vector<double> ad{0.1, 2.0, 0.5, 1e-310, 10.0, 27.0, 1e-300};
        const std::vector<double> bd{320.0, -1074.0, 1074.5, 0.9, 308.25, 215.3, 1.03};
        const auto nd = static_cast<std::int64_t>(ad.size());
        const std::vector<double> pd = lt::pow(lt::tensor<double>(ad, {nd}), lt::tensor<double>(bd, {nd})).to_vector();
        for (std::size_t i = 0; i < ad.size(); ++i) {
            const double want = std::pow(ad[i], bd[i]);
            INFO("pow(" << ad[i] << ", " << bd[i] << ") = " << pd[i] << ", want " << want);
            CHECK(within_ulps(pd[i], want, std::max(16.0, 2 * std::fabs(bd[i] * std::log(ad[i])))));
        }
    });
}

TEST_CASE("exp and exp2 are exact down into the subnormals and up to overflow") {
    for_each_device([](lt::Device d) {
        // 3 ulp: OpenCL's bound for exp and exp2 (the host's is 2).
        const double n = bound(d, 2, 3);
        const std::vector<float> xs{-87.2f, -87.5f, -90.0f, -100.0f, -103.0f, -103.9f, -110.0f, 88.5f, 88.72f, 89.0f};
        const std::vector<float> x2{-126.5f, -130.0f, -140.0f, -149.0f, -149.4f, -151.0f, 127.5f, 127.99f, 128.0f};
        const std::vector<float> e = lt::exp(lt::tensor<float>(xs, {static_cast<std::int64_t>(xs.size())})).to_vector();
        const std::vector<float> e2 = lt::exp2(lt::tensor<float>(x2, {static_cast<std::int64_t>(x2.size())})).to_vector();
        for (std::size_t i = 0; i < xs.size(); ++i) {
            INFO("exp(" << xs[i] << ") = " << e[i] << ", want " << std::exp(static_cast<double>(xs[i])));
            CHECK(within_ulps(e[i], std::exp(static_cast<double>(xs[i])), n));
        }
        for (std::size_t i = 0; i < x2.size(); ++i) {
            INFO("exp2(" << x2[i] << ") = " << e2[i] << ", want " << std::exp2(static_cast<double>(x2[i])));
            CHECK(within_ulps(e2[i], std::exp2(static_cast<double>(x2[i])), n));
        }
        CHECK(e[5] > 0.0f);  // exp(-103.9f) = 8.4e-46, the smallest subnormal's 0.6
        const std::vector<double> xd{-708.5, -720.0, -740.0, -745.0, 709.0, 709.7, 710.0};
        const std::vector<double> x2d{-1022.5, -1050.0, -1074.0, -1075.5, 1023.5, 1023.99, 1024.0};
        const std::vector<double> ed = lt::exp(lt::tensor<double>(xd, {static_cast<std::int64_t>(xd.size())})).to_vector();
        const std::vector<double> e2d = lt::exp2(lt::tensor<double>(x2d, {static_cast<std::int64_t>(x2d.size())})).to_vector();
        for (std::size_t i = 0; i < xd.size(); ++i) {
            INFO("exp(" << xd[i] << ") = " << ed[i] << ", want " << std::exp(static_cast<long double>(xd[i])));
            CHECK(within_ulps(ed[i], std::exp(static_cast<long double>(xd[i])), n));
        }
        for (std::size_t i = 0; i < x2d.size(); ++i) {
            INFO("exp2(" << x2d[i] << ") = " << e2d[i] << ", want " << std::exp2(static_cast<long double>(x2d[i])));
            CHECK(within_ulps(e2d[i], std::exp2(static_cast<long double>(x2d[i])), n));
        }
    });
}

TEST_CASE("gelu is exact where its result is tiny or subnormal") {
    for_each_device([](lt::Device d) {
        // 0.5 x erfc(-x / sqrt(2)) in double (long double for double results: the rounding of
        // x / sqrt(2) costs 2 z^2 ulp where erfc(z) is steep). OpenCL's erfc may be 16 ulp off.
        const std::vector<float> xs{3.0f, -0.7f, -1.5f, -3.0f, -5.9f, -7.8f, -9.9f, -10.5f, -13.0f, -13.5f, -14.0f, -14.4f, -20.0f, -1e30f};
        const std::vector<float> g = lt::gelu(lt::tensor<float>(xs, {static_cast<std::int64_t>(xs.size())})).to_vector();
        for (std::size_t i = 0; i < xs.size(); ++i) {
            const double x = xs[i], want = 0.5 * x * std::erfc(-x / std::sqrt(2.0));
            INFO("gelu(" << x << ") = " << g[i] << ", want " << want);
            CHECK(within_ulps(g[i], want, bound(d, 4, 18)));
        }
        CHECK(g[5] < 0.0f);   // gelu(-7.8f) = -2.8e-14, not -0 (1 + erf cancels)
        CHECK(g[10] < 0.0f);  // gelu(-14.0f) = -1.1e-43, a subnormal
        const std::vector<double> xd{-1.5, -5.0, -20.0, -30.0, -36.9, -37.1, -37.5, -38.0, -38.5, -39.0, -60.0};
        const std::vector<double> gd = lt::gelu(lt::tensor<double>(xd, {static_cast<std::int64_t>(xd.size())})).to_vector();
        for (std::size_t i = 0; i < xd.size(); ++i) {
            const long double x = xd[i], want = 0.5L * x * std::erfc(-x / std::sqrt(2.0L));
            INFO("gelu(" << xd[i] << ") = " << gd[i] << ", want " << static_cast<double>(want));
            CHECK(within_ulps(gd[i], want, bound(d, 6, 18)));
        }
        CHECK(gd[8] < 0.0);  // gelu(-38.5) = -2.4e-321, a subnormal
    });
}

TEST_CASE("tanh, sin, tan and reciprocal keep subnormal results; tanh is +-1 at the ends") {
    for_each_device([](lt::Device) {
        const std::vector<float> xs{1e-40f, -3e-39f, 1.4e-45f, 1e-38f, -2e-30f, 20.0f, -50.0f, 3e38f};
        const lt::Tensor<float> x = lt::tensor<float>(xs, {static_cast<std::int64_t>(xs.size())});
        const std::vector<float> th = lt::tanh(x).to_vector(), s = lt::sin(x).to_vector(), t = lt::tan(x).to_vector();
        for (std::size_t i = 0; i < 5; ++i) {  // f(x) = x (within an ulp) for these tiny x
            INFO("x = " << xs[i] << ": tanh " << th[i] << ", sin " << s[i] << ", tan " << t[i]);
            CHECK(within_ulps(th[i], std::tanh(static_cast<double>(xs[i])), 1));
            CHECK(within_ulps(s[i], std::sin(static_cast<double>(xs[i])), 1));
            CHECK(within_ulps(t[i], std::tan(static_cast<double>(xs[i])), 1));
        }
        CHECK(th[5] == 1.0f);
        CHECK(th[6] == -1.0f);
        CHECK(th[7] == 1.0f);
        const std::vector<float> r = lt::reciprocal(lt::tensor<float>({3e38f, -1e38f, 1e-45f}, {3})).to_vector();
        CHECK(within_ulps(r[0], 1 / 3e38, 1));  // 3.3e-39, a subnormal
        CHECK(within_ulps(r[1], 1 / static_cast<double>(-1e38f), 1));  // -1e-38, a subnormal
        CHECK(std::isinf(r[2]));
        const std::vector<double> xd{1e-310, -4e-320, 1e-300, 30.0, -400.0, 1e308};
        const std::vector<double> thd = lt::tanh(lt::tensor<double>(xd, {static_cast<std::int64_t>(xd.size())})).to_vector();
        for (std::size_t i = 0; i < 3; ++i) CHECK(within_ulps(thd[i], std::tanh(xd[i]), 1));
        CHECK(thd[3] == 1.0);
        CHECK(thd[4] == -1.0);
        CHECK(thd[5] == 1.0);
    });
}

// --------------------------------------------------------- log1p, erf, atan2, ... (issue 21)

TEST_CASE_TEMPLATE("log1p, expm1, erf, erfc, inverse trigonometric and hyperbolic functions", T, float, double) {
    for_each_device([](lt::Device) {
        const double r = std::is_same_v<T, float> ? 1e-5 : 1e-13;
        check_unary<T>([](const auto& x) { return lt::log1p(x); }, [](double v) { return std::log1p(v); }, -0.99, 5, 101, r, 0);
        check_unary<T>([](const auto& x) { return lt::expm1(x); }, [](double v) { return std::expm1(v); }, -5, 5, 103, r, 0);
        check_unary<T>([](const auto& x) { return lt::erf(x); }, [](double v) { return std::erf(v); }, -3, 3, 105, r, 0);
        check_unary<T>([](const auto& x) { return lt::erfc(x); }, [](double v) { return std::erfc(v); }, -3, 5, 107, r, 0);
        check_unary<T>([](const auto& x) { return lt::asin(x); }, [](double v) { return std::asin(v); }, -1, 1, 109, r, 0);
        check_unary<T>([](const auto& x) { return lt::acos(x); }, [](double v) { return std::acos(v); }, -1, 1, 111, r, 0);
        check_unary<T>([](const auto& x) { return lt::atan(x); }, [](double v) { return std::atan(v); }, -10, 10, 113, r, 0);
        check_unary<T>([](const auto& x) { return lt::sinh(x); }, [](double v) { return std::sinh(v); }, -8, 8, 115, r, 0);
        check_unary<T>([](const auto& x) { return lt::cosh(x); }, [](double v) { return std::cosh(v); }, -8, 8, 117, r, 0);
        check_unary<T>([](const auto& x) { return lt::asinh(x); }, [](double v) { return std::asinh(v); }, -50, 50, 119, r, 0);
        check_unary<T>([](const auto& x) { return lt::acosh(x); }, [](double v) { return std::acosh(v); }, 1, 50, 121, r, 0);
        check_unary<T>([](const auto& x) { return lt::atanh(x); }, [](double v) { return std::atanh(v); }, -0.99, 0.99, 123, r, 0);
        // C's values at the ends of the domains, and the sign of zero kept.
        const T big = std::numeric_limits<T>::max();
        check_close(lt::log1p(values<T>({-1, -2, kInf, kNan})), ref_of({-kInf, kNan, kInf, kNan}), 0, 0);
        check_close(lt::expm1(values<T>({-kInf, kInf, 80, std::is_same_v<T, float> ? 89 : 710})),
                    ref_of({-1, kInf, as<T>(std::expm1(80.0)), kInf}), r, 0);
        check_close(lt::erf(values<T>({kInf, -kInf, 7, -7})), ref_of({1, -1, 1, -1}), 0, 0);
        check_close(lt::erfc(values<T>({kInf, -kInf, -7, 30})), ref_of({0, 2, 2, 0}), 0, 0);
        check_close(lt::asin(values<T>({1.5, -1.5})), ref_of({kNan, kNan}), 0, 0);
        check_close(lt::acosh(values<T>({0.5, -3, 1})), ref_of({kNan, kNan, 0}), 0, 0);
        check_close(lt::atanh(values<T>({1, -1, 2})), ref_of({kInf, -kInf, kNan}), 0, 0);
        check_close(lt::sinh(values<T>({kInf, -kInf, double(big)})), ref_of({kInf, -kInf, kInf}), 0, 0);
        check_close(lt::cosh(values<T>({-kInf, double(big)})), ref_of({kInf, kInf}), 0, 0);
        const std::vector<T> zeros = lt::log1p(values<T>({-0.0})).to_vector();
        CHECK(std::signbit(zeros[0]));
        CHECK(std::signbit(lt::expm1(values<T>({-0.0})).to_vector()[0]));
        CHECK(std::signbit(lt::atan(values<T>({-0.0})).to_vector()[0]));
    });
}

TEST_CASE_TEMPLATE("atan2, hypot and copysign, with C's special cases", T, float, double) {
    for_each_device([](lt::Device) {
        const double r = std::is_same_v<T, float> ? 1e-5 : 1e-13;
        check_binary<T>([](const auto& a, const auto& b) { return lt::atan2(a, b); }, [](double a, double b) { return std::atan2(a, b); },
                        -10, 10, -10, 10, 130, r, 1e-30);
        check_binary<T>([](const auto& a, const auto& b) { return lt::hypot(a, b); }, [](double a, double b) { return std::hypot(a, b); },
                        -10, 10, -10, 10, 140, r, 0);
        check_binary<T>([](const auto& a, const auto& b) { return lt::copysign(a, b); },
                        [](double a, double b) { return std::copysign(a, b); }, -10, 10, -10, 10, 150, 0, 0);
        const double pi = 3.14159265358979323846, big = double(std::numeric_limits<T>::max());
        check_close(lt::atan2(values<T>({0, 0, -0.0, 1, kInf, kInf, -kInf, 1}), values<T>({0, -0.0, -1, 0, kInf, 1, -kInf, kNan})),
                    ref_of({0, pi, -pi, pi / 2, pi / 4, pi / 2, -3 * pi / 4, kNan}), r, 0);
        // hypot: no overflow where the result is finite; inf wins over NaN (C's rule).
        check_close(lt::hypot(values<T>({big / 2, kInf, kNan, 3e-30}), values<T>({big / 2, kNan, -kInf, 4e-30})),
                    ref_of({as<T>(big / 2 * std::sqrt(2.0)), kInf, kInf, as<T>(5e-30)}), r, 0);
        const std::vector<T> s = lt::copysign(values<T>({1, kInf, 0, 2}), values<T>({-0.0, -1, -1, kNan})).to_vector();
        CHECK(s[0] == T(-1));
        CHECK(s[1] == -std::numeric_limits<T>::infinity());
        CHECK((s[2] == 0 && std::signbit(s[2])));
        CHECK(s[3] == T(2));  // a NaN with the sign bit clear
    });
}

TEST_CASE("the new functions take integers into float32 and reject bool at compile time") {
    for_each_device([](lt::Device) {
        auto i = lt::tensor<std::int32_t>({3, -4}, {2});
        auto j = lt::tensor<std::int64_t>({4, 3}, {2});
        static_assert(std::is_same_v<decltype(lt::atan2(i, j))::value_type, float>);
        static_assert(std::is_same_v<decltype(lt::log1p(i))::value_type, float>);
        check_close(lt::hypot(i, j), ref_of({5, 5}), 1e-6, 0);
        check_close(lt::atan2(i, j), ref_of({std::atan2(3.0, 4.0), std::atan2(-4.0, 3.0)}), 1e-6, 0);
        check_close(lt::erf(i), ref_of({std::erf(3.0), std::erf(-4.0)}), 1e-6, 0);
        check_close(lt::copysign(lt::tensor<lt::half>({lt::half(2.0f)}, {1}), -1.0), ref_of({-2}), 0, 0);
    });
}

// ------------------------------------------------------------------ composites (issue 21)

TEST_CASE_TEMPLATE("softplus, leaky_relu and elu, exact at the extremes", T, float, double) {
    for_each_device([](lt::Device) {
        const double r = std::is_same_v<T, float> ? 1e-5 : 1e-13;
        // log(1 + exp(x)) in long double: the definition (exp(-100) is 3.7e-44, a float subnormal).
        auto softplus_ref = [](double x) { return std::isinf(x) ? (x > 0 ? x : 0.0) : double(std::log1p(std::exp((long double)x))); };
        check_unary<T>([](const auto& x) { return lt::softplus(x); }, softplus_ref, -30, 30, 160, r, 0);
        const double tiny = std::is_same_v<T, float> ? -100 : -740;
        check_close(lt::softplus(values<T>({tiny, -20, 0, 20, 100, 1e30, kInf, -kInf, kNan})),
                    ref_of({as<T>(std::exp(tiny)), as<T>(softplus_ref(-20)), std::log(2.0), as<T>(softplus_ref(20)), 100, as<T>(1e30), kInf, 0, kNan}),
                    r, 2 * double(std::numeric_limits<T>::denorm_min()));  // PoCL's log1p: 1 subnormal step
        check_close(lt::softplus(values<T>({-1, 0.5, 40}), 2.0),
                    ref_of({std::log1p(std::exp(-2.0)) / 2, std::log1p(std::exp(1.0)) / 2, 40}), r, 0);
        CHECK_THROWS_AS(lt::softplus(values<T>({1}), 0.0), lt::ValueError);
        check_unary<T>([](const auto& x) { return lt::leaky_relu(x); }, [](double v) { return v > 0 ? v : 0.01 * v; }, -5, 5, 162, r, 0);
        check_close(lt::leaky_relu(values<T>({-2, 3, -kInf, kNan}), 0.2), ref_of({-0.4, 3, -kInf, kNan}), r, 0);
        check_unary<T>([](const auto& x) { return lt::elu(x); }, [](double v) { return v > 0 ? v : std::expm1(v); }, -5, 5, 164, r, 0);
        check_close(lt::elu(values<T>({-1e-10, -kInf, kInf, kNan}), 2.0), ref_of({2 * std::expm1(-1e-10), -2, kInf, kNan}), r, 0);
        // Over an expression: its value is computed once, in the same kernel.
        auto a = values<T>({-1, 2}), b = values<T>({3, 0.5});
        CHECK(lt::schedule(lt::softplus(a * b)).size() == 1);
        check_close(lt::softplus(a * b), ref_of({softplus_ref(-3), softplus_ref(1)}), r, 0);
    });
}

TEST_CASE("isfinite, nan_to_num and masked_fill") {
    for_each_device([](lt::Device) {
        auto x = values<float>({1, kNan, kInf, -kInf, -0.0, 3e38});
        check_close(lt::isfinite(x), ref_of({1, 0, 0, 0, 1, 1}), 0, 0);
        check_close(lt::isfinite(lt::tensor<std::int32_t>({1, -2}, {2})), ref_of({1, 1}), 0, 0);
        check_close(lt::isfinite(lt::tensor<lt::half>({lt::half(65504.0f), lt::half(-INFINITY)}, {2})), ref_of({1, 0}), 0, 0);
        const double fmax = std::numeric_limits<float>::max();
        const double big = double(3e38f);
        check_close(lt::nan_to_num(x), ref_of({1, 0, fmax, -fmax, 0, big}), 0, 0);
        check_close(lt::nan_to_num(x, 7, 8, -9), ref_of({1, 7, 8, -9, 0, big}), 0, 0);
        check_close(lt::nan_to_num(x.cast<double>(), -1), ref_of({1, -1, std::numeric_limits<double>::max(),
                                                                  std::numeric_limits<double>::lowest(), 0, big}), 0, 0);
        check_close(lt::nan_to_num(lt::tensor<lt::half>({lt::half(INFINITY)}, {1})), ref_of({65504}), 0, 0);
        check_close(lt::nan_to_num(lt::tensor<std::int32_t>({5, -5}, {2})), ref_of({5, -5}), 0, 0);
        CHECK_THROWS_AS(lt::nan_to_num(x, 0, 1e300), lt::ValueError);
        CHECK_THROWS_AS(lt::nan_to_num(lt::tensor<lt::half>({lt::half(1.0f)}, {1}), 1e5), lt::ValueError);

        auto m = lt::tensor<std::int32_t>({1, 2, 3, 4, 5, 6}, {2, 3});
        auto mask = lt::tensor<bool>({true, false, true}, {3});
        auto filled = lt::masked_fill(m, mask, -7);
        static_assert(std::is_same_v<decltype(filled)::value_type, std::int32_t>);
        check_close(filled, Ref{{2, 3}, {-7, 2, -7, -7, 5, -7}}, 0, 0);
        check_close(lt::masked_fill(x, x > 2.0f, 0.5), ref_of({1, kNan, 0.5, -kInf, -0.0, 0.5}), 0, 0);
        check_close(lt::masked_fill(m.t(), m.t() > 3, 0), Ref{{3, 2}, {1, 0, 2, 0, 3, 0}}, 0, 0);
        CHECK_THROWS_AS(lt::masked_fill(lt::tensor<std::uint8_t>({1}, {1}), lt::tensor<bool>({true}, {1}), 300), lt::ValueError);
        try {
            (void)lt::masked_fill(mask, lt::tensor<bool>({true, false, true, false, true, false}, {2, 3}), false);
            FAIL("a mask larger than the tensor must be a ShapeError");
        } catch (const lt::ShapeError& e) {
            CHECK(std::string(e.what()).find("[2, 3] does not broadcast to the tensor's shape [3]") != std::string::npos);
        }
    });
}

// ------------------------------------------------------------ the composites that were ops
// sigmoid, silu, gelu, rsqrt, sign, remainder and floor_divide are rewrites into the primitives
// now (ir/graph.hpp); these pin what they promise where no case above does, against values
// computed here (long double, or by hand).

TEST_CASE("sign: NaN stays NaN, -0 gives +0, infinities and subnormals give +-1, on every dtype it takes") {
    for_each_device([](lt::Device) {
        auto check_floating = [](auto zero) {
            using T = decltype(zero);
            using L = std::numeric_limits<T>;
            const std::vector<T> x{T(0.0), T(-0.0), L::infinity(), -L::infinity(), L::denorm_min(), -L::denorm_min(),
                                   L::max(), L::lowest(), T(3), T(-0.5), L::quiet_NaN()};
            const std::vector<T> got = lt::Tensor<T>(lt::sign(lt::tensor<T>(x, {static_cast<std::int64_t>(x.size())}))).to_vector();
            const std::vector<double> want{0, 0, 1, -1, 1, -1, 1, -1, 1, -1};
            for (std::size_t i = 0; i < want.size(); ++i) {
                INFO("sign(" << double(x[i]) << ") = " << double(got[i]));
                CHECK(double(got[i]) == want[i]);
                CHECK(!std::signbit(double(got[i])) == (want[i] >= 0));  // +0 for both zeros
            }
            CHECK(std::isnan(double(got.back())));
        };
        check_floating(0.0f);
        check_floating(0.0);
        check_floating(lt::half(0.0f));
        const std::int32_t lo = std::numeric_limits<std::int32_t>::min(), hi = std::numeric_limits<std::int32_t>::max();
        auto si = lt::sign(lt::tensor<std::int32_t>({lo, -1, 0, 1, hi}));
        static_assert(std::is_same_v<decltype(si)::value_type, std::int32_t>);
        CHECK(si.to_vector() == std::vector<std::int32_t>{-1, -1, 0, 1, 1});
        CHECK(lt::sign(lt::tensor<std::int64_t>({std::numeric_limits<std::int64_t>::min(), 0, 7})).to_vector() ==
              std::vector<std::int64_t>{-1, 0, 1});
        CHECK(lt::sign(lt::tensor<std::uint8_t>({0, 1, 255})).to_vector() == std::vector<std::uint8_t>{0, 1, 1});
    });
}

TEST_CASE("the composites keep the types and errors of the ops they were") {
    // Result types, at compile time (bool arguments are compile errors: tests/compile_fail).
    lt::Tensor<std::int32_t> i = lt::tensor<std::int32_t>({-7, 7});
    lt::Tensor<lt::half> h = lt::tensor<lt::half>({lt::half(1.5f)});
    lt::Tensor<bool> m = lt::tensor<bool>({true, false});
    static_assert(std::is_same_v<decltype(lt::sigmoid(i))::value_type, float>);
    static_assert(std::is_same_v<decltype(lt::silu(i * 2))::value_type, float>);
    static_assert(std::is_same_v<decltype(lt::gelu(h))::value_type, lt::half>);
    static_assert(std::is_same_v<decltype(lt::rsqrt(lt::Tensor<std::uint8_t>()))::value_type, float>);
    static_assert(std::is_same_v<decltype(lt::sign(h))::value_type, lt::half>);
    static_assert(std::is_same_v<decltype(i % 2)::value_type, std::int32_t>);
    static_assert(std::is_same_v<decltype(i % 2.5)::value_type, float>);
    static_assert(std::is_same_v<decltype(5 % i)::value_type, std::int32_t>);
    static_assert(std::is_same_v<decltype(lt::floor_divide(m, i))::value_type, std::int32_t>);
    static_assert(std::is_same_v<decltype(lt::floor_divide(h, 2.0))::value_type, lt::half>);
    static_assert(std::is_same_v<decltype(lt::remainder(i, lt::Tensor<std::int64_t>()))::value_type, std::int64_t>);
    for_each_device([&](lt::Device d) {
        auto id = i.to(d);
        CHECK(lt::Tensor<float>(id % 2.5).to_vector() == std::vector<float>{0.5f, 2.0f});  // NumPy: -7 % 2.5 = 0.5
        CHECK(lt::Tensor<std::int32_t>(5 % id).to_vector() == std::vector<std::int32_t>{-2, 5});
        CHECK(lt::Tensor<std::int32_t>(lt::floor_divide(m.to(d), id)).to_vector() == std::vector<std::int32_t>{-1, 0});
        lt::Tensor<std::int32_t> acc = id;
        acc %= 3;
        CHECK(acc.to_vector() == std::vector<std::int32_t>{2, 1});
        lt::Tensor<float> f = lt::tensor<float>({-7.5f, 7.5f}, {2}, d);
        f %= lt::tensor<float>({2.0f, -2.0f}, {2}, d);
        CHECK(f.to_vector() == std::vector<float>{0.5f, -0.5f});
        // A scalar the computing dtype cannot hold, shapes that do not broadcast: the ops' errors.
        CHECK_THROWS_AS((void)(lt::tensor<std::uint8_t>({1}, {1}, d) % 300), lt::ValueError);
        CHECK_THROWS_AS((void)lt::floor_divide(lt::tensor<std::uint8_t>({1}, {1}, d), -1), lt::ValueError);
        CHECK_THROWS_AS((void)lt::remainder(id, lt::tensor<std::int32_t>({1, 2, 3}, {3}, d)), lt::ShapeError);
    });
    namespace g = lt::detail::graph;
    CHECK_THROWS_AS(g::sigmoid(m.build()), lt::ValueError);
    CHECK_THROWS_AS(g::sign(m.build()), lt::ValueError);
    CHECK_THROWS_AS(g::floor_divide(m.build(), m.build()), lt::ValueError);
    try {
        g::gelu(m.build());
        FAIL("gelu of bool must be a ValueError");
    } catch (const lt::ValueError& e) {
        CHECK(std::string(e.what()).find("gelu: not defined for bool") != std::string::npos);
    }
}

TEST_CASE("the composites of float16: computed in float, the result rounded once (every half value)") {
    for_each_device([](lt::Device d) {
        std::vector<lt::half> x;
        for (std::uint32_t bits = 0; bits < 65536; ++bits) {
            const auto b = static_cast<std::uint16_t>(bits);
            lt::half v;
            std::memcpy(&v, &b, sizeof v);
            x.push_back(v);
        }
        const std::vector<lt::half> y(x.rbegin(), x.rend());
        const lt::Tensor<lt::half> hx = lt::tensor<lt::half>(x, {65536}, d), hy = lt::tensor<lt::half>(y, {65536}, d);
        // Within 1 ulp of half of the exact value (a float result a few float ulps off may round
        // to the other neighbour); exact where the function is exact in float.
        auto check = [&](const char* name, const lt::Tensor<lt::half>& got, auto ref, bool exact) {
            const std::vector<lt::half> g = got.to_vector();
            std::size_t bad = 0;
            for (std::size_t i = 0; i < x.size(); ++i) {
                const long double want = ref(static_cast<long double>(float(x[i])), static_cast<long double>(float(y[i])));
                const double w = double(want), v = double(float(g[i]));
                if (std::isnan(w) || std::isnan(v)) {
                    bad += std::isnan(w) != std::isnan(v);
                    continue;
                }
                const double r = double(float(lt::half(w)));  // the correctly rounded result
                // One ulp of half at r: 2^-24 in the subnormals, 2^(e - 10) in binade e.
                const double step = std::fabs(r) < 0x1p-14 ? 0x1p-24 : std::ldexp(1.0, std::ilogb(r) - 10);
                const bool ok = std::isinf(v) || std::isinf(r) ? v == r
                                : exact                      ? v == r && std::signbit(v) == std::signbit(r)
                                                             : std::fabs(v - w) <= step;
                if (!ok && bad++ < 5) MESSAGE(name << "(" << float(x[i]) << ", " << float(y[i]) << ") = " << v << ", want " << w);
            }
            CHECK_MESSAGE(bad == 0, name << ": " << bad << " values off");
        };
        using LD = long double;
        check("sigmoid", lt::sigmoid(hx), [](LD a, LD) { return 1 / (1 + std::exp(-a)); }, false);
        check("silu", lt::silu(hx), [](LD a, LD) { return std::isinf(a) ? (a > 0 ? a : -0.0L) : a / (1 + std::exp(-a)); }, false);
        check("gelu", lt::gelu(hx), [](LD a, LD) { return std::isinf(a) ? (a > 0 ? a : -0.0L) : 0.5L * a * std::erfc(-a / std::sqrt(2.0L)); }, false);
        check("rsqrt", lt::rsqrt(hx), [](LD a, LD) { return 1 / std::sqrt(a); }, false);
        check("sign", lt::sign(hx), [](LD a, LD) { return std::isnan(a) ? a : a > 0 ? 1.0L : a < 0 ? -1.0L : 0.0L; }, true);
        check("remainder", hx % hy, [](LD a, LD b) -> LD {
            const LD r = std::fmod(a, b);
            if (b == 0) return r;
            if (r == 0) return std::copysign(0.0L, b);
            return (r < 0) != (b < 0) ? r + b : r;
        }, false);
        // The smallest results: sigmoid(-17) = 4.1e-8 is the smallest subnormal half, 6e-8, not 0.
        const std::vector<lt::half> tiny = lt::sigmoid(lt::tensor<lt::half>({lt::half(-17.0f), lt::half(-16.0f)}, {2}, d)).to_vector();
        CHECK(float(tiny[0]) == 5.9604645e-08f);
        CHECK(float(tiny[1]) == 1.1920929e-07f);
    });
}
