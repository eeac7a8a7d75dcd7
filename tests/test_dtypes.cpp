// SPDX-License-Identifier: MIT
// The integer dtypes int8, int16, uint16, uint32 and uint64 (docs/dtypes.md): wrap-around
// arithmetic at the limits, comparisons, division and shifts of unsigned types, views,
// promotion, casts to and from every dtype, reductions, sort, printing and .npy files; the
// lazytensor::bfloat16 value type's rounding, and bfloat16 tensors (element-wise ops, sums,
// casts, sort, cumsum, promotion, printing, random numbers, .npy; matrix products are in
// test_matmul.cpp). Expected values are
// written out by hand (bit patterns for bfloat16) or computed in C++ from the C++ types' own
// conversions (for bfloat16: float arithmetic rounded once by the value type).
#include "common.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <random>
#include <sstream>
#include <type_traits>

namespace {

template <class T>
using dt_limits = std::numeric_limits<T>;

/// The C++ value of v converted to U as lazytensor defines casts: integers wrap (modulo 2^bits),
/// floating to integer truncates and saturates (NaN: 0), anything to bool is v != 0.
template <class U, class V>
U dt_expected_cast(V v) {
    if constexpr (std::is_same_v<U, bool>) {
        return v != V(0);
    } else if constexpr (std::is_floating_point_v<V> && std::is_integral_v<U>) {
        if (v != v) return U(0);
        if (v <= static_cast<V>(dt_limits<U>::min())) return dt_limits<U>::min();
        if (v >= static_cast<V>(dt_limits<U>::max())) return dt_limits<U>::max();
        return static_cast<U>(v);
    } else if constexpr (std::is_integral_v<V> && std::is_integral_v<U>) {
        return static_cast<U>(static_cast<std::uint64_t>(v));  // modulo 2^64, then modulo 2^bits of U
    } else {
        return static_cast<U>(v);
    }
}

template <class T>
bool is_nan_value(T v) {
    if constexpr (std::is_floating_point_v<T>) return v != v;
    else return false;
}

/// Element-wise equality that prints the first differences (values as numbers, not chars).
template <class T>
void dt_check(const lt::Tensor<T>& t, const std::vector<T>& expected) {
    const std::vector<T> got = t.to_vector();
    REQUIRE(got.size() == expected.size());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        const bool nan = is_nan_value(expected[i]);
        if (nan ? is_nan_value(got[i]) : got[i] == expected[i]) continue;
        if (wrong++ < 5) FAIL_CHECK("element " << i << ": got " << +got[i] << ", expected " << +expected[i]);
    }
    CHECK(wrong == 0);
}

/// A 1-D tensor of `values`.
template <class T>
lt::Tensor<T> dt_tensor(const std::vector<T>& values) {
    return lt::tensor<T>(values, {static_cast<std::int64_t>(values.size())});
}

/// Three values at each end of T's range and some in the middle.
template <class T>
std::vector<T> dt_edges() {
    std::vector<T> v = {dt_limits<T>::min(), static_cast<T>(dt_limits<T>::min() + 1), T(0), T(1), T(2), T(100),
                        static_cast<T>(dt_limits<T>::max() - 1), dt_limits<T>::max()};
    if constexpr (std::is_signed_v<T>) v.push_back(T(-1)), v.push_back(T(-100));
    return v;
}

}  // namespace

#define LAZYTENSOR_NEW_INTS std::int8_t, std::int16_t, std::uint16_t, std::uint32_t, std::uint64_t

TEST_CASE("new integer dtypes wrap at their limits (int8 127 + 1, uint16 0 - 1, uint64's maximum)") {
    for_each_device([](lt::Device) {
        dt_check<std::int8_t>(lt::tensor<std::int8_t>({127, -128, 5}) + std::int8_t(1), {-128, -127, 6});
        dt_check<std::int8_t>(lt::tensor<std::int8_t>({-128, 100}) * std::int8_t(-1), {-128, -100});
        dt_check<std::int8_t>(-lt::tensor<std::int8_t>({-128, 127}), {-128, -127});
        dt_check<std::int8_t>(lt::tensor<std::int8_t>({100}) * lt::tensor<std::int8_t>({3}), {44});  // 300 - 256
        dt_check<std::int16_t>(lt::tensor<std::int16_t>({32767, -32768}) + std::int16_t(1), {-32768, -32767});
        dt_check<std::int16_t>(lt::tensor<std::int16_t>({300}) * lt::tensor<std::int16_t>({300}), {24464});  // 90000 - 65536
        dt_check<std::uint16_t>(lt::tensor<std::uint16_t>({0, 1}) - std::uint16_t(1), {65535, 0});
        dt_check<std::uint16_t>(lt::tensor<std::uint16_t>({65535}) * lt::tensor<std::uint16_t>({65535}), {1});
        dt_check<std::uint16_t>(-lt::tensor<std::uint16_t>({1, 0}), {65535, 0});
        dt_check<std::uint32_t>(lt::tensor<std::uint32_t>({0xFFFFFFFFu, 0u}) + 1, {0u, 1u});
        dt_check<std::uint32_t>(lt::tensor<std::uint32_t>({0xFFFFFFFFu}) * lt::tensor<std::uint32_t>({0xFFFFFFFFu}), {1u});
        const std::uint64_t top = dt_limits<std::uint64_t>::max();
        dt_check<std::uint64_t>(lt::tensor<std::uint64_t>({top, 0}) + std::uint64_t(1), {0, 1});
        dt_check<std::uint64_t>(lt::tensor<std::uint64_t>({0}) - lt::tensor<std::uint64_t>({1}), {top});
        // A uint64 scalar past INT64_MAX keeps its value.
        dt_check<std::uint64_t>(lt::tensor<std::uint64_t>({0, 1}) + top, {top, 0});
        dt_check<std::uint64_t>(lt::tensor<std::uint64_t>({std::uint64_t(1) << 63}) * std::uint64_t(2), {0});
    });
}

TEST_CASE("unsigned division, remainder, floor division, shifts and bit operations") {
    for_each_device([](lt::Device) {
        const std::uint64_t top = dt_limits<std::uint64_t>::max();
        lt::Tensor<std::uint64_t> a = lt::tensor<std::uint64_t>({top, 7, 7, 0});
        lt::Tensor<std::uint64_t> b = lt::tensor<std::uint64_t>({2, 2, 0, 5});
        // Division by 0 gives 0 (NumPy's value; it only warns).
        dt_check<std::uint64_t>(lt::floor_divide(a, b), {top / 2, 3, 0, 0});
        dt_check<std::uint64_t>(lt::remainder(a, b), {1, 1, 0, 0});
        dt_check<std::uint64_t>(lt::fmod(a, b), {1, 1, 0, 0});
        dt_check<std::uint32_t>(lt::floor_divide(lt::tensor<std::uint32_t>({0xFFFFFFFFu, 10u}), std::uint32_t(3)),
                                    {0x55555555u, 3u});
        dt_check<std::uint16_t>(lt::remainder(lt::tensor<std::uint16_t>({65535, 9}), std::uint16_t(10)), {5, 9});
        // Signed: floor division and NumPy's remainder take the divisor's sign; -128 // -1 wraps.
        dt_check<std::int8_t>(lt::floor_divide(lt::tensor<std::int8_t>({-7, 7, -128, -128}), lt::tensor<std::int8_t>({2, -2, -1, 3})),
                                  {-4, -4, -128, -43});
        dt_check<std::int8_t>(lt::remainder(lt::tensor<std::int8_t>({-7, 7, -128}), lt::tensor<std::int8_t>({2, -2, 3})), {1, -1, 1});
        dt_check<std::int16_t>(lt::floor_divide(lt::tensor<std::int16_t>({-32768, 5}), std::int16_t(-1)), {-32768, -5});
        // Shifts: counts past the width give 0 (or -1 for >> of a negative value).
        dt_check<std::uint16_t>(lt::tensor<std::uint16_t>({1, 1, 0xFFFF, 0x8000}) << lt::tensor<std::uint16_t>({15, 16, 4, 1}),
                                    {0x8000, 0, 0xFFF0, 0});
        dt_check<std::uint16_t>(lt::tensor<std::uint16_t>({0x8000, 0xFFFF}) >> lt::tensor<std::uint16_t>({15, 20}), {1, 0});
        dt_check<std::int8_t>(lt::tensor<std::int8_t>({-128, -128, 64, 1}) >> lt::tensor<std::int8_t>({1, 9, 6, 0}), {-64, -1, 1, 1});
        dt_check<std::int8_t>(lt::tensor<std::int8_t>({1, 1}) << lt::tensor<std::int8_t>({7, 8}), {-128, 0});
        dt_check<std::uint64_t>(lt::tensor<std::uint64_t>({1, top}) << lt::tensor<std::uint64_t>({63, 63}),
                                    {std::uint64_t(1) << 63, std::uint64_t(1) << 63});
        dt_check<std::uint64_t>(lt::tensor<std::uint64_t>({top}) >> lt::tensor<std::uint64_t>({60}), {15});
        dt_check<std::uint32_t>(lt::tensor<std::uint32_t>({0x80000000u}) >> lt::tensor<std::uint32_t>({31}), {1u});
        dt_check<std::uint16_t>(~lt::tensor<std::uint16_t>({0, 0x00FF}), {0xFFFF, 0xFF00});
        dt_check<std::int8_t>(~lt::tensor<std::int8_t>({0, -128}), {-1, 127});
        dt_check<std::uint32_t>(lt::tensor<std::uint32_t>({0xF0F0F0F0u}) ^ lt::tensor<std::uint32_t>({0xFFFFFFFFu}), {0x0F0F0F0Fu});
        dt_check<std::int16_t>(lt::tensor<std::int16_t>({-1}) & lt::tensor<std::int16_t>({0x7F00}), {0x7F00});
        dt_check<std::uint64_t>(lt::tensor<std::uint64_t>({top - 1}) | lt::tensor<std::uint64_t>({1}), {top});
        // abs, sign and pow of unsigned values.
        dt_check<std::uint32_t>(lt::abs(lt::tensor<std::uint32_t>({0xFFFFFFFFu, 3})), {0xFFFFFFFFu, 3});
        dt_check<std::int8_t>(lt::abs(lt::tensor<std::int8_t>({-128, -5, 5})), {-128, 5, 5});
        dt_check<std::uint16_t>(lt::sign(lt::tensor<std::uint16_t>({0, 65535})), {0, 1});
        dt_check<std::int8_t>(lt::sign(lt::tensor<std::int8_t>({-128, 0, 127})), {-1, 0, 1});
        dt_check<std::uint16_t>(lt::pow(lt::tensor<std::uint16_t>({2, 3, 256}), lt::tensor<std::uint16_t>({15, 2, 2})), {32768, 9, 0});
        // True division of integers gives float32.
        dt_check<float>(lt::tensor<std::uint64_t>({top}) / lt::tensor<std::uint64_t>({1}), {18446744073709551616.0f});
        dt_check<float>(lt::tensor<std::int8_t>({-7}) / lt::tensor<std::int8_t>({2}), {-3.5f});
    });
}

TEST_CASE_TEMPLATE("comparisons, maximum and minimum of new integer dtypes order by value", T, LAZYTENSOR_NEW_INTS) {
    for_each_device([](lt::Device) {
        const std::vector<T> v = dt_edges<T>();
        std::vector<T> w(v.rbegin(), v.rend());  // each value against another
        lt::Tensor<T> a = dt_tensor<T>(v), b = dt_tensor<T>(w);
        std::vector<bool> lt_, eq_;
        std::vector<T> mx, mn;
        for (std::size_t i = 0; i < v.size(); ++i) {
            lt_.push_back(v[i] < w[i]), eq_.push_back(v[i] == w[i]);
            mx.push_back(v[i] < w[i] ? w[i] : v[i]), mn.push_back(v[i] < w[i] ? v[i] : w[i]);
        }
        dt_check<bool>(a < b, {lt_.begin(), lt_.end()});
        dt_check<bool>(a == b, {eq_.begin(), eq_.end()});
        dt_check<T>(lt::maximum(a, b), mx);
        dt_check<T>(lt::where(a < b, a, b), mn);  // the minimum
        // The maximum is above 1 however it is stored (uint64's past INT64_MAX too).
        CHECK((lt::tensor<T>({dt_limits<T>::max(), dt_limits<T>::min()}) > T(1)).to_vector() == std::vector<bool>{true, false});
    });
}

TEST_CASE("views of new integer dtypes: transposes, strided slices, broadcasts, lazy and realized, empty") {
    for_each_device([](lt::Device) {
        // [[0, 1, 2], [3, 4, 5]] * 1000 - 2500 in int16; its transpose read column by column (a
        // strided read of 2-byte elements), lazy and realized.
        lt::Tensor<std::int16_t> m = lt::tensor<std::int16_t>({-2500, -1500, -500, 500, 1500, 2500}, {2, 3});
        lt::Tensor<std::int16_t> lazy = m * std::int16_t(10);  // to 25000 and -25000
        dt_check<std::int16_t>(lt::contiguous(lazy.permute({1, 0})) + std::int16_t(1),
                               {-24999, 5001, -14999, 15001, -4999, 25001});
        lazy.realize();
        dt_check<std::int16_t>(lt::contiguous(lazy.permute({1, 0})) - std::int16_t(1),
                               {-25001, 4999, -15001, 14999, -5001, 24999});
        // Every other element of a uint16 row, reversed; a uint32 column broadcast over a row.
        lt::Tensor<std::uint16_t> row = lt::tensor<std::uint16_t>({65535, 1, 65534, 2, 65533, 3, 65532});
        dt_check<std::uint16_t>(row.slice(0, 6, std::nullopt, -2) + std::uint16_t(1), {65533, 65534, 65535, 0});
        lt::Tensor<std::uint32_t> col = lt::tensor<std::uint32_t>({1, 0xFFFFFFFFu}, {2, 1});
        lt::Tensor<std::uint32_t> wide = lt::tensor<std::uint32_t>({0, 1, 2}, {1, 3});
        dt_check<std::uint32_t>(lt::contiguous(col + wide).reshape({6}), {1, 2, 3, 0xFFFFFFFFu, 0, 1});
        // Empty tensors: sums are 0; an int8 maximum over an empty axis is a ValueError.
        lt::Tensor<std::int8_t> empty = lt::zeros<std::int8_t>({0, 3});
        dt_check<std::int64_t>(lt::sum(empty, 0), {0, 0, 0});
        CHECK(lt::sum(lt::zeros<std::uint64_t>({0})).item() == 0u);
        CHECK_THROWS_AS((void)lt::max(empty, 0).to_vector(), lt::ValueError);
    });
}

TEST_CASE("promotion of the new integer dtypes follows NumPy (docs/dtypes.md)") {
    using lt::DType;
    // Integer with integer: the smallest type holding both; uint64 with a signed type: float64.
    static_assert(lt::promote(DType::Int8, DType::UInt8) == DType::Int16);
    static_assert(lt::promote(DType::UInt8, DType::Int16) == DType::Int16);
    static_assert(lt::promote(DType::Int16, DType::UInt16) == DType::Int32);
    static_assert(lt::promote(DType::Int8, DType::UInt16) == DType::Int32);
    static_assert(lt::promote(DType::UInt32, DType::Int32) == DType::Int64);
    static_assert(lt::promote(DType::UInt32, DType::Int8) == DType::Int64);
    static_assert(lt::promote(DType::UInt16, DType::Int64) == DType::Int64);
    static_assert(lt::promote(DType::UInt64, DType::Int64) == DType::Float64);
    static_assert(lt::promote(DType::Int8, DType::UInt64) == DType::Float64);
    static_assert(lt::promote(DType::UInt8, DType::UInt64) == DType::UInt64);
    static_assert(lt::promote(DType::UInt16, DType::UInt32) == DType::UInt32);
    static_assert(lt::promote(DType::Int8, DType::Int16) == DType::Int16);
    static_assert(lt::promote(DType::Int16, DType::Int32) == DType::Int32);
    static_assert(lt::promote(DType::UInt8, DType::Int32) == DType::Int32);  // as before
    // bool with anything: the other; an integer with a floating type: the floating type.
    static_assert(lt::promote(DType::Bool, DType::UInt16) == DType::UInt16);
    static_assert(lt::promote(DType::UInt64, DType::Float16) == DType::Float16);
    static_assert(lt::promote(DType::Int16, DType::Float32) == DType::Float32);
    static_assert(std::is_same_v<lt::promote_t<std::int8_t, std::uint8_t>, std::int16_t>);
    static_assert(std::is_same_v<lt::promote_t<std::uint64_t, std::int32_t>, double>);
    // A scalar of the tensor's category does not widen it; a floating one makes float32.
    static_assert(std::is_same_v<lt::scalar_promote_t<std::int8_t, std::int64_t>, std::int8_t>);
    static_assert(std::is_same_v<lt::scalar_promote_t<std::uint16_t, double>, float>);
    static_assert(std::is_same_v<lt::scalar_promote_t<bool, std::int64_t>, std::int64_t>);
    for_each_device([](lt::Device) {
        // Values meet exactly: -1 + 255 is 254 in int16, not 254 - 256 in int8.
        auto s = lt::tensor<std::int8_t>({-1, -128}) + lt::tensor<std::uint8_t>({255, 255});
        static_assert(std::is_same_v<typename decltype(s)::value_type, std::int16_t>);
        dt_check<std::int16_t>(s, {254, 127});
        auto u = lt::tensor<std::uint32_t>({0xFFFFFFFFu}) - lt::tensor<std::int32_t>({-1});
        static_assert(std::is_same_v<typename decltype(u)::value_type, std::int64_t>);
        dt_check<std::int64_t>(u, {4294967296});
        auto f = lt::tensor<std::uint64_t>({std::uint64_t(1) << 63}) + lt::tensor<std::int64_t>({2048});
        static_assert(std::is_same_v<typename decltype(f)::value_type, double>);
        dt_check<double>(f, {9223372036854777856.0});  // 2^63 + 2048, exact in float64
        auto h = lt::tensor<std::int16_t>({300}) * lt::tensor<lt::half>({lt::half(0.5f)});
        static_assert(std::is_same_v<typename decltype(h)::value_type, lt::half>);
        CHECK(static_cast<float>(h.to_vector()[0]) == 150.0f);
        // Scalars: an int8 tensor stays int8 with an int scalar that fits it; one that does not
        // fit is a ValueError naming the range; a float scalar gives float32.
        dt_check<std::int8_t>(lt::tensor<std::int8_t>({1}) + 126, {127});
        dt_check<float>(lt::tensor<std::uint16_t>({3}) * 0.5, {1.5f});
        lt::Tensor<std::int8_t> small = lt::tensor<std::int8_t>({1});
        CHECK_THROWS_WITH_AS((void)lt::Tensor<std::int8_t>(small + 200),
                             doctest::Contains("the scalar 200 does not fit int8 (-128 to 127)"), lt::ValueError);
        lt::Tensor<std::uint16_t> word = lt::tensor<std::uint16_t>({1});
        CHECK_THROWS_WITH_AS((void)lt::Tensor<std::uint16_t>(word - (-1)),
                             doctest::Contains("the scalar -1 does not fit uint16 (0 to 65535)"), lt::ValueError);
        lt::Tensor<std::int64_t> wide = lt::tensor<std::int64_t>({1});
        CHECK_THROWS_WITH_AS((void)lt::Tensor<std::int64_t>(wide + dt_limits<std::uint64_t>::max()),
                             doctest::Contains("the scalar 18446744073709551615 does not fit int64"), lt::ValueError);
        dt_check<std::int8_t>(small, {1});  // usable after the failed call
    });
}

namespace {

/// Casts `values` of From to U and checks the result against dt_expected_cast.
template <class U, class From>
void dt_check_cast(const lt::Tensor<From>& x, const std::vector<From>& values) {
    INFO("from " << lt::dtype_of<From>() << " to " << lt::dtype_of<U>());
    std::vector<U> want;
    for (From v : values) want.push_back(dt_expected_cast<U>(v));
    dt_check<U>(lt::cast<U>(x), want);
}

/// Casts `values` of From to each new integer dtype, and with `all`, to every other dtype but
/// float16 (whose rounding has tests of its own).
template <class From>
void dt_check_casts_from(const std::vector<From>& values, bool all) {
    const lt::Tensor<From> x = dt_tensor<From>(values);
    dt_check_cast<std::int8_t>(x, values), dt_check_cast<std::int16_t>(x, values), dt_check_cast<std::uint16_t>(x, values);
    dt_check_cast<std::uint32_t>(x, values), dt_check_cast<std::uint64_t>(x, values);
    if (!all) return;
    dt_check_cast<bool>(x, values), dt_check_cast<std::uint8_t>(x, values), dt_check_cast<std::int32_t>(x, values);
    dt_check_cast<std::int64_t>(x, values), dt_check_cast<float>(x, values), dt_check_cast<double>(x, values);
}

}  // namespace

TEST_CASE_TEMPLATE("casts from a new integer dtype to every dtype wrap, round or test != 0", T, LAZYTENSOR_NEW_INTS) {
    for_each_device([](lt::Device) {
        dt_check_casts_from<T>(dt_edges<T>(), true);
        // To float16: 127 exactly, int16's 32767 rounds to 32768, anything past 65519 is inf.
        lt::Tensor<lt::half> h = lt::cast<lt::half>(lt::tensor<T>({T(127), dt_limits<T>::max()}));
        const std::vector<lt::half> got = h.to_vector();
        CHECK(static_cast<float>(got[0]) == 127.0f);
        const float top = sizeof(T) == 1 ? 127.0f : std::is_same_v<T, std::int16_t> ? 32768.0f : std::numeric_limits<float>::infinity();
        CHECK(static_cast<float>(got[1]) == top);
    });
}

TEST_CASE("casts to the new integer dtypes from every dtype: integers wrap, floating values truncate and saturate") {
    for_each_device([](lt::Device) {
        dt_check_casts_from<bool>({true, false}, false);
        dt_check_casts_from<std::uint8_t>({0, 1, 127, 128, 255}, false);
        dt_check_casts_from<std::int32_t>({dt_limits<std::int32_t>::min(), -65537, -129, -1, 0, 255, 32768, 65536, dt_limits<std::int32_t>::max()}, false);
        dt_check_casts_from<std::int64_t>({dt_limits<std::int64_t>::min(), -(std::int64_t(1) << 32) - 1, -1, 0, (std::int64_t(1) << 40) + 300,
                                        dt_limits<std::int64_t>::max()}, false);
        // Floating to integer truncates toward 0, saturates at the type's ends and gives 0 for
        // NaN (NumPy leaves these undefined; OpenCL's convert_*_sat does the same).
        const float nan = std::numeric_limits<float>::quiet_NaN(), inf = std::numeric_limits<float>::infinity();
        dt_check_casts_from<float>({-1.9f, -0.5f, 0.0f, 2.7f, 127.5f, 128.0f, -129.0f, 300.0f, 70000.0f, -70000.0f, 5e9f, -5e9f, 3e19f,
                                 nan, inf, -inf}, false);
        dt_check_casts_from<double>({-1.9, 2.7, 255.9, 65535.5, 65536.0, 4294967295.9, 4294967296.0, 1e19, 2e19, double(nan), -double(inf)}, false);
        // Some by hand, against dt_expected_cast's own reading (these run on the host only).
        CHECK(dt_expected_cast<std::int8_t>(-1.9f) == -1);
        CHECK(dt_expected_cast<std::int8_t>(-300.0f) == -128);
        CHECK(dt_expected_cast<std::uint16_t>(65535.9f) == 65535);
        CHECK(dt_expected_cast<std::uint16_t>(-5.0f) == 0);
        CHECK(dt_expected_cast<std::uint64_t>(2e19) == dt_limits<std::uint64_t>::max());
        CHECK(dt_expected_cast<std::uint64_t>(1e19) == 10000000000000000000u);
        CHECK(dt_expected_cast<std::int16_t>(std::int32_t(65535)) == -1);
        CHECK(dt_expected_cast<std::int16_t>(std::int32_t(32768)) == -32768);
        // From float16: 65504 saturates int8, fits uint16.
        lt::Tensor<lt::half> h = lt::tensor<lt::half>({lt::half(65504.0f), lt::half(-2.5f)});
        dt_check<std::int8_t>(lt::cast<std::int8_t>(h), {127, -2});
        dt_check<std::uint16_t>(lt::cast<std::uint16_t>(h), {65504, 0});
    });
}

TEST_CASE("reductions of the new integer dtypes: sums in int64 (uint64 in uint64), identities, argmax") {
    for_each_device([](lt::Device) {
        auto s8 = lt::sum(lt::tensor<std::int8_t>({127, 127, 1, -128}));
        static_assert(std::is_same_v<typename decltype(s8)::value_type, std::int64_t>);
        CHECK(s8.item() == 127);
        auto s16 = lt::sum(lt::tensor<std::uint16_t>({65535, 65535, 2}));
        static_assert(std::is_same_v<typename decltype(s16)::value_type, std::int64_t>);
        CHECK(s16.item() == 131072);
        CHECK(lt::sum(lt::tensor<std::uint32_t>({0xFFFFFFFFu, 0xFFFFFFFFu})).item() == 8589934590);
        auto s64 = lt::sum(lt::tensor<std::uint64_t>({dt_limits<std::uint64_t>::max(), 2}));  // wraps in uint64
        static_assert(std::is_same_v<typename decltype(s64)::value_type, std::uint64_t>);
        CHECK(s64.item() == 1u);
        CHECK(lt::prod(lt::tensor<std::int16_t>({-300, 300, 2})).item() == -180000);
        // Maxima and minima over rows long enough for a device's partial results: rows that are
        // all the type's lowest (or highest) value, where a wrong identity would show.
        const std::int64_t n = 3000;
        lt::Tensor<std::int8_t> low = lt::full<std::int8_t>({2, n}, std::int8_t(-128));
        dt_check<std::int8_t>(lt::max(low, 1), {-128, -128});
        lt::Tensor<std::uint64_t> high = lt::full<std::uint64_t>({n}, dt_limits<std::uint64_t>::max());
        CHECK(lt::min(high).item() == dt_limits<std::uint64_t>::max());
        CHECK(lt::max(lt::zeros<std::uint32_t>({n})).item() == 0u);
        CHECK(lt::min(lt::full<std::int16_t>({n}, std::int16_t(32767))).item() == 32767);
        CHECK(lt::max(lt::full<std::uint16_t>({n}, std::uint16_t(65535))).item() == 65535);
        // argmax/argmin: the first position of the extreme, uint64 ordered as unsigned.
        CHECK(lt::argmax(lt::tensor<std::int8_t>({-5, 100, -128, 100}), 0).item() == 1);
        CHECK(lt::argmin(lt::tensor<std::int8_t>({-5, 100, -128, 100}), 0).item() == 2);
        CHECK(lt::argmax(lt::tensor<std::uint64_t>({5, dt_limits<std::uint64_t>::max(), 0}), 0).item() == 1);
        CHECK(lt::argmin(lt::tensor<std::uint32_t>({0xFFFFFFFFu, 7, 0x80000000u}), 0).item() == 1);
        // mean in float32; cumsum promotes as sum.
        CHECK(lt::mean(lt::tensor<std::uint16_t>({65535, 65533})).item() == 65534.0f);
        dt_check<std::int64_t>(lt::cumsum(lt::tensor<std::int8_t>({127, 127, -128}), 0), {127, 254, 126});
        dt_check<std::uint64_t>(lt::cumsum(lt::tensor<std::uint64_t>({dt_limits<std::uint64_t>::max(), 1, 5}), 0),
                                    {dt_limits<std::uint64_t>::max(), 0, 5});
    });
}

TEST_CASE_TEMPLATE("sort and topk of new integer dtypes order by value", T, LAZYTENSOR_NEW_INTS) {
    for_each_device([](lt::Device) {
        // The type's edge values in a row of 4500 from a fixed generator.
        std::vector<T> values = dt_edges<T>();
        std::mt19937_64 rng(7);
        while (values.size() < 4500) values.push_back(static_cast<T>(rng()));
        std::vector<T> ascending = values;
        std::sort(ascending.begin(), ascending.end());
        lt::Tensor<T> x = dt_tensor<T>(values);
        dt_check<T>(lt::sort(x).values, ascending);
        if constexpr (std::is_same_v<T, std::uint64_t>)  // topk's selection: one type (its keys are sort's)
            dt_check<T>(lt::topk(x, 3).values, std::vector<T>(ascending.rbegin(), ascending.rbegin() + 3));
    });
}

TEST_CASE("a row of 2^16 int8 values sorts by value (a device may sort one long row another way)") {
    for_each_device([](lt::Device) {
        std::vector<std::int8_t> values;
        std::mt19937_64 rng(8);
        for (int i = 0; i < (1 << 16); ++i) values.push_back(static_cast<std::int8_t>(rng()));
        std::vector<std::int8_t> ascending = values;
        std::sort(ascending.begin(), ascending.end());
        dt_check<std::int8_t>(lt::sort(dt_tensor<std::int8_t>(values)).values, ascending);
        std::vector<std::int8_t> descending(ascending.rbegin(), ascending.rend());
        dt_check<std::int8_t>(lt::sort(dt_tensor<std::int8_t>(values), -1, true).values, descending);
    });
}

TEST_CASE("new integer dtypes print as numbers and come from randint within range") {
    std::ostringstream out;
    lt::set_default_device(lt::Device::host());
    out << lt::tensor<std::int8_t>({-128, 7}) << "\n" << lt::tensor<std::uint64_t>({dt_limits<std::uint64_t>::max()});
    CHECK(out.str().find("[-128,    7]") != std::string::npos);
    CHECK(out.str().find("dtype=int8") != std::string::npos);
    CHECK(out.str().find("18446744073709551615") != std::string::npos);
    CHECK(out.str().find("dtype=uint64") != std::string::npos);
    for_each_device([](lt::Device) {
        const std::vector<std::int8_t> r8 = lt::randint<std::int8_t>(-128, 128, {200}, 3).to_vector();
        CHECK(*std::min_element(r8.begin(), r8.end()) < -100);  // spread over the range (200 draws)
        CHECK(*std::max_element(r8.begin(), r8.end()) > 100);
        const std::vector<std::uint64_t> r64 =
            lt::randint<std::uint64_t>(std::int64_t(1) << 62, dt_limits<std::int64_t>::max(), {50}, 4).to_vector();
        for (std::uint64_t x : r64) CHECK(x >= (std::uint64_t(1) << 62));
    });
    CHECK_THROWS_WITH_AS(lt::randint<std::uint16_t>(-1, 5, {2}, 1), doctest::Contains("does not fit uint16"), lt::ValueError);
    CHECK_THROWS_WITH_AS(lt::randint<std::int8_t>(0, 129, {2}, 1), doctest::Contains("does not fit int8"), lt::ValueError);
}

// ------------------------------------------------------------------------------------ .npy files

namespace {

std::string dt_read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE(in);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

/// A version 1.0 .npy file of a 1-D array of `n` elements (n < 10), written out by hand as NumPy
/// lays it out: magic, version, header length, the dict with room for the extent to grow to 21
/// digits, spaces and a newline to a multiple of 64 bytes, then the little-endian data.
std::string dt_npy_1d(const std::string& descr, int n, const std::string& data) {
    std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': (" + std::to_string(n) + ",), }";
    header += std::string(20, ' ');
    while ((10 + header.size() + 1) % 64 != 0) header += ' ';
    header += '\n';
    return std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(header.size() & 0xff) +
           static_cast<char>(header.size() >> 8) + header + data;
}

template <class T>
std::string dt_bytes(const std::vector<T>& values) {
    std::string out;
    for (const T& v : values) out.append(reinterpret_cast<const char*>(&v), sizeof(T));
    return out;
}

/// Saves `values` as a tensor of T and checks the bytes against `expected`, then loads the file
/// back and a NumPy-written fixture (when `fixture` is not empty) holding the same values.
template <class T>
void dt_npy_round_trip(const std::string& path, lt::Tensor<T> t, const std::vector<T>& values, const std::string& expected,
                       const std::string& fixture) {
    INFO(lt::dtype_of<T>());
    lt::save_npy(path, t);
    CHECK(dt_read_file(path) == expected);
    dt_check<T>(lt::load_npy<T>(path).reshape({static_cast<std::int64_t>(values.size())}), values);
    if (fixture.empty()) return;
    const std::string file = std::string(LAZYTENSOR_TEST_FIXTURES) + "/" + fixture;
    CHECK(dt_read_file(file) == dt_read_file(path));  // NumPy's bytes are ours
    const lt::Tensor<T> loaded = lt::load_npy<T>(file);
    CHECK(loaded.shape() == t.shape());
    dt_check<T>(loaded.reshape({static_cast<std::int64_t>(values.size())}), values);
}

}  // namespace

TEST_CASE(".npy files of the new integer dtypes hold what NumPy writes (|i1, <i2, <u2, <u4, <u8) and load back") {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("lazytensor_test_dtypes_" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "x.npy").string();
    for_each_device([&](lt::Device) {
        const std::vector<std::int8_t> i8 = {-128, -43, 42, 127};
        dt_npy_round_trip<std::int8_t>(path, dt_tensor(i8), i8, dt_npy_1d("|i1", 4, "\x80\xd5\x2a\x7f"), "int8_4.npy");
        const std::vector<std::uint16_t> u16 = {0, 21845, 43690, 65535};
        dt_npy_round_trip<std::uint16_t>(path, dt_tensor(u16), u16,
                                         dt_npy_1d("<u2", 4, std::string("\x00\x00\x55\x55\xaa\xaa\xff\xff", 8)), "uint16_4.npy");
        const std::vector<std::uint32_t> u32 = {0, 1431655765, 2863311530u, 4294967295u};
        dt_npy_round_trip<std::uint32_t>(path, dt_tensor(u32), u32, dt_npy_1d("<u4", 4, dt_bytes(u32)), "uint32_4.npy");
        const std::vector<std::uint64_t> u64 = {0, 6148914691236517205u, 12297829382473034410u, 18446744073709551615u};
        dt_npy_round_trip<std::uint64_t>(path, dt_tensor(u64), u64,
                                         dt_npy_1d("<u8", 4, std::string(8, '\x00') + std::string(8, '\x55') +
                                                                 std::string(8, '\xaa') + std::string(8, '\xff')),
                                         "uint64_4.npy");
        // A 2-D int16 tensor: NumPy's file only (the hand-written header above is 1-D).
        const std::vector<std::int16_t> i16 = {-32768, -19661, -6554, 6553, 19660, 32767};
        lt::save_npy(path, lt::tensor<std::int16_t>(i16, {2, 3}));
        CHECK(dt_read_file(path) == dt_read_file(std::string(LAZYTENSOR_TEST_FIXTURES) + "/int16_2x3.npy"));
        lt::Tensor<std::int16_t> loaded = lt::load_npy<std::int16_t>(std::string(LAZYTENSOR_TEST_FIXTURES) + "/int16_2x3.npy");
        CHECK(loaded.shape() == lt::Shape{2, 3});
        dt_check<std::int16_t>(loaded.reshape({6}), i16);
        // Big-endian files are swapped as they load; a file of another dtype names the right one.
        std::ofstream(path, std::ios::binary | std::ios::trunc) << dt_npy_1d(">u2", 2, std::string("\x12\x34\xff\x00", 4));
        dt_check<std::uint16_t>(lt::load_npy<std::uint16_t>(path), {0x1234, 0xff00});
        CHECK_THROWS_WITH_AS(lt::load_npy<std::int16_t>(path),
                             doctest::Contains("holds uint16 values (descr '>u2'), not int16; load it with lt::load_npy<uint16_t>"),
                             lt::DTypeError);
    });
    std::filesystem::remove_all(dir);
}

// -------------------------------------------------------------------------- the bfloat16 value

namespace {

std::uint16_t dt_bf16_of_float_bits(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return lt::bfloat16(f).bits;
}

}  // namespace

TEST_CASE("bfloat16 rounds to nearest even by bit pattern: ties, NaN, infinities, subnormals, doubles") {
    // Exact values keep their top 16 bits.
    CHECK(dt_bf16_of_float_bits(0x3f800000u) == 0x3f80);  // 1
    CHECK(dt_bf16_of_float_bits(0x80000000u) == 0x8000);  // -0
    CHECK(dt_bf16_of_float_bits(0xc0490000u) == 0xc049);  // -3.140625
    // Ties go to the even neighbour; anything past the tie rounds up, anything below down.
    CHECK(dt_bf16_of_float_bits(0x3f808000u) == 0x3f80);  // 1 + 2^-8: between 0x3f80 and 0x3f81
    CHECK(dt_bf16_of_float_bits(0x3f818000u) == 0x3f82);  // between 0x3f81 and 0x3f82
    CHECK(dt_bf16_of_float_bits(0x3f808001u) == 0x3f81);
    CHECK(dt_bf16_of_float_bits(0x3f807fffu) == 0x3f80);
    CHECK(dt_bf16_of_float_bits(0xbf818000u) == 0xbf82);  // the same for negative values
    CHECK(dt_bf16_of_float_bits(0x3fffffffu) == 0x4000);  // a carry into the exponent: 2
    // Infinities stay; the largest float is past the last tie below infinity, so it overflows;
    // a float just below that tie does not.
    CHECK(dt_bf16_of_float_bits(0x7f800000u) == 0x7f80);
    CHECK(dt_bf16_of_float_bits(0xff800000u) == 0xff80);
    CHECK(dt_bf16_of_float_bits(0x7f7fffffu) == 0x7f80);
    CHECK(dt_bf16_of_float_bits(0x7f7f7fffu) == 0x7f7f);
    CHECK(dt_bf16_of_float_bits(0x7f7f8000u) == 0x7f80);  // the tie itself: to even, which is infinity
    // NaN stays NaN, quiet, with its sign and top payload bits (a signalling NaN whose payload is
    // all below bit 16 becomes the quiet NaN).
    CHECK(dt_bf16_of_float_bits(0x7fc00001u) == 0x7fc0);
    CHECK(dt_bf16_of_float_bits(0x7f800001u) == 0x7fc0);
    CHECK(dt_bf16_of_float_bits(0xffa50000u) == 0xffe5);
    CHECK(dt_bf16_of_float_bits(0x7fffffffu) == 0x7fff);  // no carry out of a NaN
    // Subnormals: units of 2^-133 (float bits 0x00010000); ties to even there too.
    CHECK(dt_bf16_of_float_bits(0x00010000u) == 0x0001);
    CHECK(dt_bf16_of_float_bits(0x00008000u) == 0x0000);  // 2^-134: half the smallest, to even 0
    CHECK(dt_bf16_of_float_bits(0x00008001u) == 0x0001);
    CHECK(dt_bf16_of_float_bits(0x00018000u) == 0x0002);
    CHECK(dt_bf16_of_float_bits(0x807f8000u) == 0x8080);  // -(largest subnormal float) rounds to -2^-126
    // To float: the bits shifted up, exactly.
    CHECK(float(lt::bfloat16::from_bits(0x3f81)) == 1.0078125f);
    CHECK(float(lt::bfloat16::from_bits(0x0001)) == std::ldexp(1.0f, -133));
    CHECK(std::isnan(float(lt::bfloat16::from_bits(0xffc1))));
    CHECK(std::isinf(float(lt::bfloat16::from_bits(0xff80))));
    // A double rounds once: 1 + 2^-8 + 2^-40 is past the tie, though its nearest float is the tie.
    CHECK(lt::bfloat16(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40)).bits == 0x3f81);
    CHECK(lt::bfloat16(1.0 + std::ldexp(1.0, -8)).bits == 0x3f80);
    CHECK(lt::bfloat16(-(1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40))).bits == 0xbf81);
    CHECK(lt::bfloat16(1e39).bits == 0x7f80);  // past float's range
    CHECK(lt::bfloat16(-1e39).bits == 0xff80);
    CHECK(lt::bfloat16(3.4e38).bits == 0x7f80);   // past the last tie (3.3961775e38)
    CHECK(lt::bfloat16(3.39e38).bits == 0x7f7f);  // below it: the largest, 3.3895314e38
    CHECK(lt::bfloat16(-1e-50).bits == 0x8000);
    CHECK(lt::bfloat16(std::ldexp(1.0, -133) * 1.5).bits == 0x0002);  // a subnormal tie, to even
    CHECK(lt::bfloat16(std::numeric_limits<double>::quiet_NaN()).bits == 0x7fc0);
    // Integers: 257 and 259 are ties (8 significant bits), to even.
    CHECK(lt::bfloat16(257).bits == 0x4380);  // 256
    CHECK(lt::bfloat16(259).bits == 0x4382);  // 260
    CHECK(lt::bfloat16(true).bits == 0x3f80);
    // Arithmetic in float, rounded back; negation flips the sign bit, of NaN too.
    CHECK((lt::bfloat16(1.0f) + lt::bfloat16(std::ldexp(1.0f, -8))).bits == 0x3f80);
    CHECK((-lt::bfloat16::from_bits(0x7fc0)).bits == 0xffc0);
    CHECK(lt::bfloat16(2.0f) > lt::bfloat16(1.0f));
    CHECK(lt::bfloat16::from_bits(0x7fc0) != lt::bfloat16::from_bits(0x7fc0));
}

// ------------------------------------------------------------------------- bfloat16 tensors

namespace {

using bf16 = lt::bfloat16;

/// Each value rounded to bfloat16 by the value type (tested above against hand values).
std::vector<bf16> dt_bf16s(const std::vector<float>& values) {
    std::vector<bf16> out;
    for (float v : values) out.push_back(bf16(v));
    return out;
}

std::vector<bf16> dt_bf16_bits(const std::vector<std::uint16_t>& bits) {
    std::vector<bf16> out;
    for (std::uint16_t b : bits) out.push_back(bf16::from_bits(b));
    return out;
}

std::string dt_hex(std::uint16_t bits) {
    std::ostringstream s;
    s << "0x" << std::hex << bits;
    return s.str();
}

/// Bit-for-bit equality of bfloat16 results (NaN included), printing the first differences.
void dt_check_bits(const lt::Tensor<bf16>& t, const std::vector<bf16>& expected) {
    CHECK(t.dtype() == lt::DType::BFloat16);
    const std::vector<bf16> got = t.to_vector();
    REQUIRE(got.size() == expected.size());
    std::size_t wrong = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        if (got[i].bits == expected[i].bits) continue;
        if (wrong++ < 5)
            FAIL_CHECK("element " << i << ": got " << float(got[i]) << " (" << dt_hex(got[i].bits) << "), expected "
                                  << float(expected[i]) << " (" << dt_hex(expected[i].bits) << ")");
    }
    CHECK(wrong == 0);
}

/// `cast`, a cast of bfloat16 `values` to U, against dt_expected_cast of their floats.
template <class U>
void dt_check_bf16_cast(const lt::Tensor<U>& cast, const std::vector<bf16>& values) {
    INFO("from bfloat16 to " << lt::dtype_of<U>());
    std::vector<U> want;
    for (bf16 v : values) want.push_back(dt_expected_cast<U>(float(v)));
    dt_check<U>(cast, want);
}

/// f of the elements' floats, rounded once to bfloat16: what a kernel computing in float32 stores.
template <class F>
std::vector<bf16> dt_bf16_expect(std::size_t n, F f) {
    std::vector<bf16> out;
    for (std::size_t i = 0; i < n; ++i) out.push_back(bf16(f(i)));
    return out;
}

}  // namespace

TEST_CASE("bfloat16 tensors compute element-wise in float32 and round once as they store") {
    // a * b + c at element 0 is 0.04736328125 (exact in bfloat16); rounding a * b first would
    // give 0.046875. Values near 1, past float16's range, negative, zero and a subnormal.
    const std::vector<bf16> a = dt_bf16_bits({0x3f83, 0xc020, 0x7e80, 0x3dcd, 0x0005, 0x40e0, 0x8000, 0x4396});
    const std::vector<bf16> b = dt_bf16_bits({0x3f83, 0x3f00, 0x4000, 0xbdcd, 0x3f00, 0x4110, 0x3f80, 0x3c23});
    const std::vector<bf16> c = dt_bf16_bits({0xbf80, 0x4040, 0x0000, 0x3f80, 0x0000, 0xc2c6, 0x3f80, 0x3f80});
    const std::size_t n = a.size();
    auto fa = [&](std::size_t i) { return float(a[i]); };
    auto fb = [&](std::size_t i) { return float(b[i]); };
    auto fc = [&](std::size_t i) { return float(c[i]); };
    const std::vector<bf16> fused = dt_bf16_expect(n, [&](std::size_t i) { return fa(i) * fb(i) + fc(i); });
    CHECK(fused[0].bits == 0x3d42);                                        // 0.04736328125, by hand
    CHECK(bf16(float(bf16(fa(0) * fb(0))) + fc(0)).bits == 0x3d40);  // rounded twice: 0.046875
    for_each_device([&](lt::Device) {
        const lt::Tensor<bf16> ta = dt_tensor(a), tb = dt_tensor(b), tc = dt_tensor(c);
        // A scalar does not widen the tensor: bfloat16 * 2.5 is bfloat16.
        auto scaled = ta * 2.5;
        static_assert(std::is_same_v<typename decltype(scaled)::value_type, bf16>);
        // Views: a realized [2, 4] tensor transposed, and a strided slice of a lazy expression.
        const lt::Tensor<bf16> m = lt::tensor<bf16>(a, {2, 4});
        const lt::Tensor<bf16> r[] = {ta * tb + tc, ta - tb, tc / 4, lt::maximum(ta, tb), -lt::abs(ta), lt::where(ta < tb, ta, tc),
                                      scaled, m.t() * m.t(), (ta + tb).slice(0, 1, 8, 3), lt::zeros<bf16>({0}) + bf16(1.0f)};
        const lt::Tensor<bool> less = ta < tb;
        lt::realize({r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], less});  // one program on OpenCL
        dt_check_bits(r[0], fused);
        dt_check_bits(r[1], dt_bf16_expect(n, [&](std::size_t i) { return fa(i) - fb(i); }));
        dt_check_bits(r[2], dt_bf16_expect(n, [&](std::size_t i) { return fc(i) / 4; }));  // exact quotients
        dt_check_bits(r[3], dt_bf16_expect(n, [&](std::size_t i) { return std::max(fa(i), fb(i)); }));
        dt_check_bits(r[4], dt_bf16_expect(n, [&](std::size_t i) { return -std::fabs(fa(i)); }));
        dt_check_bits(r[5], dt_bf16_expect(n, [&](std::size_t i) { return fa(i) < fb(i) ? fa(i) : fc(i); }));
        dt_check_bits(r[6], dt_bf16_expect(n, [&](std::size_t i) { return fa(i) * 2.5f; }));
        dt_check_bits(r[7].reshape({8}), dt_bf16_expect(n, [&](std::size_t i) { return fa(i % 2 * 4 + i / 2) * fa(i % 2 * 4 + i / 2); }));
        dt_check_bits(r[8], dt_bf16_expect(3, [&](std::size_t i) { return fa(1 + 3 * i) + fb(1 + 3 * i); }));
        dt_check_bits(r[9], {});  // empty
        const std::vector<bool> got_less = less.to_vector();
        for (std::size_t i = 0; i < n; ++i) CHECK(got_less[i] == (fa(i) < fb(i)));
    });
}

TEST_CASE("bfloat16 sums and means accumulate in float32, rounded once; max, argmax, var") {
    // 256 and sixteen 1s: 272 in float32; a bfloat16 accumulator would stay at 256 (257 rounds
    // to even).
    std::vector<float> ones(17, 1.0f);
    ones[0] = 256.0f;
    const std::vector<bf16> x = dt_bf16s(ones);
    bf16 in_bf16(0.0f);
    for (bf16 v : x) in_bf16 += v;
    CHECK(float(in_bf16) == 256.0f);
    for_each_device([&](lt::Device) {
        const lt::Tensor<bf16> t = dt_tensor(x);
        auto s = lt::sum(t);
        static_assert(std::is_same_v<typename decltype(s)::value_type, bf16>);
        // Along an axis of a transposed lazy expression, with keepdim; the variance of 1..4.
        const lt::Tensor<bf16> m = lt::tensor<bf16>(dt_bf16s({1, 2, 3, 4, 5, 6}), {2, 3});
        const lt::Tensor<bf16> r[] = {s, lt::mean(t), lt::max(t), lt::sum((m * bf16(2.0f)).t(), 1, true),
                                      m.reshape({6}).slice(0, 0, 4).var(), lt::mean(lt::zeros<bf16>({0}))};
        const lt::Tensor<std::int64_t> arg = t.argmax(0);
        lt::realize({r[0], r[1], r[2], r[3], r[4], r[5], arg});
        CHECK(r[0].item().bits == 0x4388);  // 272
        CHECK(r[1].item().bits == 0x4180);  // 16
        CHECK(float(r[2].item()) == 256.0f);
        dt_check_bits(r[3].reshape({3}), dt_bf16s({10, 14, 18}));
        CHECK(r[4].item().bits == bf16(5.0f / 3.0f).bits);  // 5/3 in float32, rounded once: 1.6640625
        CHECK(std::isnan(float(r[5].item())));               // 0 / 0
        CHECK(arg.item() == 0);
    });
}

TEST_CASE("bfloat16 casts to and from every dtype: NaN, infinities, subnormals, values past the range, ties") {
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const auto float_of = [](std::uint32_t u) {
        float f;
        std::memcpy(&f, &u, sizeof f);
        return f;
    };
    // Float bit patterns and the bfloat16 each rounds to (by hand, as in the value type's test).
    const std::vector<std::uint32_t> from_bits = {0x3f800000u, 0x80000000u, 0x3f808000u, 0x3f818000u, 0x3f808001u,
                                                  0x7f800000u, 0xff800000u, 0x7f7fffffu, 0x7f7f7fffu, 0x7fc00001u,
                                                  0xffa50000u, 0x00010000u, 0x00008000u, 0x00018000u, 0x807f8000u};
    const std::vector<std::uint16_t> to_bits = {0x3f80, 0x8000, 0x3f80, 0x3f82, 0x3f81, 0x7f80, 0xff80, 0x7f80,
                                                0x7f7f, 0x7fc0, 0xffe5, 0x0001, 0x0000, 0x0002, 0x8080};
    std::vector<float> floats;
    for (std::uint32_t u : from_bits) floats.push_back(float_of(u));
    // bfloat16 values to cast out: NaN, infinities, -3.5, 300, -0, a subnormal, the largest.
    const std::vector<bf16> out = dt_bf16_bits({0x7fc0, 0x7f80, 0xff80, 0xc060, 0x4396, 0x8000, 0x000b, 0x7f7f});
    for_each_device([&](lt::Device d) {
        // Into bfloat16, all in one schedule (one program on OpenCL). Integers round once
        // (2^30 + 2^22 + 1 is just past a tie, though its nearest float is the tie), saturate
        // nowhere (float's range) and keep 16-bit values' top 8 bits; float16's largest, 65504,
        // is a tie between 65280 and 65536: to even, 65536.
        const bool f64 = lt::detail::supports_float64(d);
        const lt::Tensor<bf16> in[] = {
            lt::cast<bf16>(dt_tensor(floats)),
            lt::cast<bf16>(lt::tensor<std::int32_t>({257, 259, -1, 0, (1 << 30) + (1 << 22) + 1, (1 << 30) + (1 << 22),
                                                      dt_limits<std::int32_t>::max(), dt_limits<std::int32_t>::min()})),
            lt::cast<bf16>(lt::tensor<std::int64_t>({dt_limits<std::int64_t>::max(), (std::int64_t(1) << 53) + 1,
                                                      -(std::int64_t(1) << 40) - (std::int64_t(1) << 32) - 1})),
            lt::cast<bf16>(lt::tensor<std::uint64_t>({dt_limits<std::uint64_t>::max(), 0x8080000000000001u})),
            lt::cast<bf16>(lt::tensor<std::uint8_t>({255, 0})),
            lt::cast<bf16>(lt::tensor<bool>({true, false})),
            lt::cast<bf16>(lt::tensor<lt::half>({lt::half(65504.0f), lt::half(-0.5f)})),
            // a double rounds once too (where the device has float64)
            f64 ? lt::cast<bf16>(lt::tensor<double>({1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40), 1.0 + std::ldexp(1.0, -8), 1e39,
                                                     -1e39, 3.39e38, -1e-50, std::ldexp(1.5, -133), double(nan)}))
                : lt::zeros<bf16>({0})};
        lt::realize({in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7]});
        dt_check_bits(in[0], dt_bf16_bits(to_bits));
        dt_check_bits(in[1], dt_bf16_bits({0x4380, 0x4382, 0xbf80, 0x0000, 0x4e81, 0x4e80, 0x4f00, 0xcf00}));
        dt_check_bits(in[2], dt_bf16_bits({0x5f00, 0x5a00, 0xd381}));
        dt_check_bits(in[3], dt_bf16_bits({0x5f80, 0x5f01}));
        dt_check_bits(in[4], dt_bf16_bits({0x437f, 0x0000}));
        dt_check_bits(in[5], dt_bf16_bits({0x3f80, 0x0000}));
        dt_check_bits(in[6], dt_bf16_bits({0x4780, 0xbf00}));
        if (f64) dt_check_bits(in[7], dt_bf16_bits({0x3f81, 0x3f80, 0x7f80, 0xff80, 0x7f7f, 0x8000, 0x0002, 0x7fc0}));

        // Out of bfloat16: to float and double exactly, to integers truncated and saturated
        // (NaN: 0), to bool != 0, to float16 rounded (the largest bfloat16 is past float16's
        // range, the subnormal below it).
        const lt::Tensor<bf16> t = dt_tensor(out);
        const lt::Tensor<float> to_float = lt::cast<float>(t);
        const lt::Tensor<double> to_double = f64 ? lt::cast<double>(t) : lt::zeros<double>({0});
        const lt::Tensor<std::int32_t> to_i32 = lt::cast<std::int32_t>(t);
        const lt::Tensor<std::int64_t> to_i64 = lt::cast<std::int64_t>(t);
        const lt::Tensor<std::uint8_t> to_u8 = lt::cast<std::uint8_t>(t);
        const lt::Tensor<std::int8_t> to_i8 = lt::cast<std::int8_t>(t);
        const lt::Tensor<std::uint64_t> to_u64 = lt::cast<std::uint64_t>(t);
        const lt::Tensor<bool> to_bool = lt::cast<bool>(t);
        const lt::Tensor<lt::half> to_half = lt::cast<lt::half>(t);
        lt::realize({to_float, to_double, to_i32, to_i64, to_u8, to_i8, to_u64, to_bool, to_half});
        const std::vector<float> f = to_float.to_vector();
        for (std::size_t i = 0; i < out.size(); ++i) {
            std::uint32_t u;
            std::memcpy(&u, &f[i], sizeof u);
            CHECK(u == std::uint32_t(out[i].bits) << 16);
        }
        if (f64) {
            const std::vector<double> wide = to_double.to_vector();
            for (std::size_t i = 1; i < out.size(); ++i) CHECK(wide[i] == double(float(out[i])));
            CHECK(std::isnan(wide[0]));
        }
        dt_check_bf16_cast(to_i32, out), dt_check_bf16_cast(to_i64, out), dt_check_bf16_cast(to_u8, out);
        dt_check_bf16_cast(to_i8, out), dt_check_bf16_cast(to_u64, out);
        CHECK(dt_expected_cast<std::int32_t>(float(out[1])) == dt_limits<std::int32_t>::max());  // inf saturates
        dt_check<bool>(to_bool, {true, true, true, true, true, false, true, true});
        const std::vector<lt::half> h = to_half.to_vector();
        const std::vector<std::uint16_t> half_bits = {0x7e00, 0x7c00, 0xfc00, 0xc300, 0x5cb0, 0x8000, 0x0000, 0x7c00};
        CHECK(std::isnan(float(h[0])));
        for (std::size_t i = 1; i < h.size(); ++i) CHECK(h[i].bits == half_bits[i]);
    });
}

// (bfloat16 matrix products are tested in test_matmul.cpp, whose area builds CLBlast's kernels
// anyway: they take seconds on PoCL.)
TEST_CASE("bfloat16 sort, topk, argsort and cumsum order and add as float") {
    // Sorting: NaN last (first when descending), -0 and +0 equal (stably kept in order), ties.
    const std::vector<bf16> s = dt_bf16_bits({0x4040, 0x7fc0, 0xff80, 0x8000, 0x0000, 0x7149, 0xc020, 0x7f80, 0x4040});
    std::vector<std::int64_t> order(s.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = std::int64_t(i);
    std::stable_sort(order.begin(), order.end(), [&](std::int64_t x, std::int64_t y) {
        const float fx = float(s[std::size_t(x)]), fy = float(s[std::size_t(y)]);
        return !std::isnan(fx) && (std::isnan(fy) || fx < fy);
    });
    std::vector<bf16> sorted;
    for (std::int64_t i : order) sorted.push_back(s[std::size_t(i)]);
    // cumsum: partial sums in float32, each rounded once (257 and 261 are ties, to even).
    const std::vector<bf16> c = dt_bf16s({256, 1, 1, 1, 1, 1});
    std::vector<bf16> partial;
    float running = 0;
    for (bf16 v : c) partial.push_back(bf16(running += float(v)));
    CHECK(partial[2].bits == 0x4381);  // 258, where a bfloat16 running sum stays at 256
    for_each_device([&](lt::Device) {
        const lt::Tensor<bf16> ts = dt_tensor(s);
        const lt::SortResult<bf16> r = lt::sort(ts), top = lt::topk(ts, 3);
        const lt::Tensor<std::int64_t> args = lt::argsort(ts);
        auto cs = lt::cumsum(dt_tensor(c), 0);
        static_assert(std::is_same_v<typename decltype(cs)::value_type, bf16>);
        const lt::Tensor<bf16> cs_t = cs;
        lt::realize({r.values, r.indices, top.values, top.indices, args, cs_t});
        dt_check_bits(r.values, sorted);
        CHECK(r.indices.to_vector() == order);
        CHECK(args.to_vector() == order);
        dt_check_bits(top.values, dt_bf16_bits({0x7fc0, 0x7f80, 0x7149}));
        CHECK(top.indices.to_vector() == std::vector<std::int64_t>{1, 7, 5});
        dt_check_bits(cs_t, partial);
    });
}

TEST_CASE("bfloat16 promotion (float16 with bfloat16 is float32), names, printing and random numbers") {
    using DType = lt::DType;
    static_assert(lt::promote(DType::BFloat16, DType::Float16) == DType::Float32);
    static_assert(lt::promote(DType::Float16, DType::BFloat16) == DType::Float32);
    static_assert(lt::promote(DType::BFloat16, DType::BFloat16) == DType::BFloat16);
    static_assert(lt::promote(DType::BFloat16, DType::Float32) == DType::Float32);
    static_assert(lt::promote(DType::Float64, DType::BFloat16) == DType::Float64);
    static_assert(lt::promote(DType::Int64, DType::BFloat16) == DType::BFloat16);
    static_assert(lt::promote(DType::BFloat16, DType::UInt64) == DType::BFloat16);
    static_assert(lt::promote(DType::Bool, DType::BFloat16) == DType::BFloat16);
    static_assert(std::is_same_v<lt::promote_t<bf16, lt::half>, float>);
    static_assert(std::is_same_v<lt::promote_t<std::int32_t, bf16>, bf16>);
    static_assert(std::is_same_v<lt::scalar_promote_t<bf16, double>, bf16>);      // a scalar does not widen it
    static_assert(std::is_same_v<lt::scalar_promote_t<std::int32_t, bf16>, float>);  // a floating scalar: float32
    static_assert(lt::dtype_of<bf16>() == DType::BFloat16 && lt::value_dtype(DType::BFloat16) == DType::Float32);
    static_assert(lt::is_floating(DType::BFloat16) && lt::dtype_bits(DType::BFloat16) == 16);
    CHECK(std::string(lt::dtype_name(DType::BFloat16)) == "bfloat16");
    CHECK(lt::dtype_size(DType::BFloat16) == 2);
    for_each_device([](lt::Device) {
        const lt::Tensor<bf16> x = lt::tensor<bf16>({bf16(1.0078125f), bf16(-3.0f)});
        auto sum = x + lt::tensor<lt::half>({lt::half(0.5f), lt::half(0.25f)});
        static_assert(std::is_same_v<typename decltype(sum)::value_type, float>);
        CHECK(sum.dtype() == DType::Float32);
        CHECK(sum.to_vector() == std::vector<float>{1.5078125f, -2.75f});
        CHECK((x + std::int64_t(1)).dtype() == DType::BFloat16);
        CHECK((x + lt::tensor<std::int32_t>({1, 2})).dtype() == DType::BFloat16);

        std::ostringstream s;
        s << lt::tensor<bf16>({bf16(1.5f), bf16(-0.25f)});
        CHECK(s.str().find("[ 1.5000, -0.2500]") != std::string::npos);
        CHECK(s.str().find("dtype=bfloat16") != std::string::npos);

        // rand: the top 8 of the bits whose top 24 make rand<float>'s number, so floor(u * 256) / 256
        // of it; randn finite.
        const lt::Tensor<bf16> r = lt::rand<bf16>({64}, 5), rn = lt::randn<bf16>({64}, 5);
        const lt::Tensor<float> rf = lt::rand<float>({64}, 5);
        lt::realize({r, rn, rf});
        const std::vector<bf16> rv = r.to_vector();
        const std::vector<float> rfv = rf.to_vector();
        for (std::size_t i = 0; i < rv.size(); ++i) CHECK(float(rv[i]) == std::floor(rfv[i] * 256.0f) / 256.0f);
        for (bf16 v : rn.to_vector()) CHECK(std::isfinite(float(v)));
    });
}

TEST_CASE("bfloat16 and .npy: save_npy refuses it (NumPy has none); load_npy<bfloat16> rounds a float32 file") {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("lazytensor_test_bf16_" + std::to_string(std::random_device{}()));
    std::filesystem::create_directories(dir);
    const std::string path = (dir / "x.npy").string();
    for_each_device([&](lt::Device) {
        const std::vector<bf16> values = dt_bf16_bits({0x3f81, 0xc049, 0x7f80});
        const lt::Tensor<bf16> t = dt_tensor(values) * bf16(1.0f);  // lazy
        std::filesystem::remove(path);  // an earlier device's file
        const std::string refusal = "lt::save_npy: " + path + ": NumPy has no bfloat16 dtype (tensor of shape [3]); cast to float32 first";
        CHECK_THROWS_WITH_AS(lt::save_npy(path, t), doctest::Contains(refusal.c_str()), lt::DTypeError);
        CHECK(!std::filesystem::exists(path));
        dt_check_bits(t, values);  // usable after the refusal
        // Saved as float32 (exact), the file NumPy would write; loaded back as bfloat16: the same.
        lt::save_npy(path, lt::cast<float>(t));
        std::vector<float> floats;
        for (bf16 v : values) floats.push_back(float(v));
        CHECK(dt_read_file(path) == dt_npy_1d("<f4", 3, dt_bytes(floats)));
        dt_check_bits(lt::load_npy<bf16>(path), values);
        // A float32 file of other values rounds each once, to nearest even.
        const float tie = 1.0f + std::ldexp(1.0f, -8), past = tie + std::ldexp(1.0f, -20);
        std::ofstream(path, std::ios::binary | std::ios::trunc) << dt_npy_1d("<f4", 4, dt_bytes(std::vector<float>{tie, past, 3.4e38f, -1e-45f}));
        dt_check_bits(lt::load_npy<bf16>(path), dt_bf16_bits({0x3f80, 0x3f81, 0x7f80, 0x8000}));
        // Another dtype: DTypeError naming it and the way.
        std::ofstream(path, std::ios::binary | std::ios::trunc) << dt_npy_1d("<f8", 1, std::string(8, '\0'));
        CHECK_THROWS_WITH_AS(lt::load_npy<bf16>(path),
                             doctest::Contains("holds float64 values (descr '<f8'), not float32: NumPy has no bfloat16"), lt::DTypeError);
    });
    std::filesystem::remove_all(dir);
}
