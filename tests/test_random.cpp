// SPDX-License-Identifier: MIT
// Random keys (lt::Key, split, fold_in) and the functions that take them: the documented
// derivation recomputed here from the Philox block function (which test_nn.cpp checks against
// the published known-answer vectors), independence of split keys' streams (correlation and a
// chi-squared test of 2^20 pairs), the distributions (bernoulli, permutation, multinomial,
// dropout, normal, uniform) against their probabilities, the old seeds' streams, bad input.
#include <algorithm>
#include <array>
#include <limits>
#include <numeric>
#include <set>

#include "common.hpp"

// (A namespace of its own: the area's sources are compiled as one unity translation unit.)
namespace random_keys_tests {
namespace {

// ------------------------------------------------------------------- an independent reference

/// The four-letter tags of docs/random.md as counter words: "SPLT" is 0x53504C54.
constexpr std::uint32_t tag(const char (&s)[5]) {
    return (std::uint32_t(static_cast<unsigned char>(s[0])) << 24) | (std::uint32_t(static_cast<unsigned char>(s[1])) << 16) |
           (std::uint32_t(static_cast<unsigned char>(s[2])) << 8) | std::uint32_t(static_cast<unsigned char>(s[3]));
}

/// The first two output words of the Philox 4x32-10 block (c0, c1, c2, c3) under `key`, low first.
std::uint64_t block(std::uint64_t key, std::uint64_t low, std::uint32_t c2, std::uint32_t c3) {
    std::uint32_t c[4] = {static_cast<std::uint32_t>(low), static_cast<std::uint32_t>(low >> 32), c2, c3};
    lt::detail::philox4x32_10(c, static_cast<std::uint32_t>(key), static_cast<std::uint32_t>(key >> 32));
    return std::uint64_t(c[0]) | (std::uint64_t(c[1]) << 32);
}

// What each function draws for (docs/random.md: the counter word c2 of a draw's key).
enum Use : std::uint32_t { Uniform = 1, Normal = 2, Integers = 3, Bernoulli = 4, Permutation = 5, Multinomial = 6, Distinct = 7, Dropout = 8 };

/// The seed whose stream a draw of `count` elements for `use` from key `k` reads.
std::uint64_t draw_seed(lt::Key k, Use use, std::uint64_t count) { return block(k.value(), count, use, tag("DRAW")); }

/// Element i of a stream: 64 bits.
std::uint64_t bits(std::uint64_t seed, std::uint64_t i) { return block(seed, i, 0, 0); }

/// Element i of rand<float> and rand<double> on a stream.
double uniform24(std::uint64_t seed, std::uint64_t i) { return std::ldexp(static_cast<double>(bits(seed, i) >> 40), -24); }
double uniform53(std::uint64_t seed, std::uint64_t i) { return std::ldexp(static_cast<double>(bits(seed, i) >> 11), -53); }

/// Element i of randn on a stream: Box-Muller (in double here) on `width` bits from bit 32 and
/// from bit 0 (24 for float and half, 32 for double).
double normal_ref(std::uint64_t seed, std::uint64_t i, int width = 24) {
    const std::uint64_t b = bits(seed, i), mask = (std::uint64_t(1) << width) - 1;
    const double u1 = std::ldexp(static_cast<double>(((b >> 32) & mask) + 1), -width), u2 = std::ldexp(static_cast<double>(b & mask), -width);
    return std::sqrt(-2 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

/// An upper quantile of the chi-squared distribution with `dof` degrees of freedom (Wilson and
/// Hilferty's cube approximation, accurate to a fraction of a percent here); z = 3.719 is the
/// standard normal's 0.9999 quantile. Tests use fixed keys, so a statistic is below it or not
/// for good; a sound generator is below it at all but 1 key in 10^4.
double chi2_bound(int dof, double z = 3.719) {
    const double a = 2.0 / (9.0 * dof);
    return dof * std::pow(1 - a + z * std::sqrt(a), 3);
}

/// Pearson's chi-squared statistic of observed counts against expected ones.
double chi2(const std::vector<double>& observed, const std::vector<double>& expected) {
    double s = 0;
    for (std::size_t i = 0; i < observed.size(); ++i) s += (observed[i] - expected[i]) * (observed[i] - expected[i]) / expected[i];
    return s;
}

/// Pearson's correlation coefficient.
double correlation(const std::vector<float>& a, const std::vector<float>& b) {
    const double n = static_cast<double>(a.size());
    double ma = 0, mb = 0;
    for (std::size_t i = 0; i < a.size(); ++i) ma += a[i], mb += b[i];
    ma /= n, mb /= n;
    double sab = 0, saa = 0, sbb = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        sab += (a[i] - ma) * (b[i] - mb);
        saa += (a[i] - ma) * (a[i] - ma);
        sbb += (b[i] - mb) * (b[i] - mb);
    }
    return sab / std::sqrt(saa * sbb);
}

/// The chi-squared statistic of the pairs (a[i], b[i]) in a bins x bins grid on [0, 1)^2
/// against the uniform grid (what independent uniform a and b give).
double pair_chi2(const std::vector<float>& a, const std::vector<float>& b, int bins) {
    std::vector<double> counts(static_cast<std::size_t>(bins * bins), 0.0);
    for (std::size_t i = 0; i < a.size(); ++i)
        counts[static_cast<std::size_t>(static_cast<int>(a[i] * static_cast<float>(bins)) * bins + static_cast<int>(b[i] * static_cast<float>(bins)))] += 1;
    return chi2(counts, std::vector<double>(counts.size(), static_cast<double>(a.size()) / (bins * bins)));
}

std::vector<std::uint8_t> bytes(const lt::Tensor<bool>& b) { return lt::cast<std::uint8_t>(b).to_vector(); }

}  // namespace

// ------------------------------------------------------------------------------------ keys

TEST_CASE("keys: a value type; split and fold_in are deterministic, distinct and the documented Philox blocks") {
    const lt::Key k(0x0123456789abcdefULL);
    CHECK(k.value() == 0x0123456789abcdefULL);
    CHECK(k.words() == std::array<std::uint32_t, 2>{0x89abcdefu, 0x01234567u});
    CHECK(lt::Key() == lt::Key(0));
    CHECK(lt::Key(1) != lt::Key(2));
    CHECK(lt::Key(1) < lt::Key(2));
    CHECK(lt::Key(3) >= lt::Key(3));
    std::ostringstream printed;
    printed << lt::Key(42);
    CHECK(printed.str() == "Key(0x000000000000002a)");
    CHECK(std::hash<lt::Key>()(lt::Key(42)) == std::hash<std::uint64_t>()(42));

    // split: child i is the block of the counter (i, 0, 0, "SPLT") under the key.
    const auto [k1, k2] = lt::split(k);
    CHECK(k1.value() == block(k.value(), 0, 0, tag("SPLT")));
    CHECK(k2.value() == block(k.value(), 1, 0, tag("SPLT")));
    CHECK(k1 != k2);
    CHECK(k1 != k);
    CHECK(k2 != k);
    CHECK(lt::split(k) == std::array<lt::Key, 2>{k1, k2});  // deterministic
    const std::vector<lt::Key> five = lt::split(k, 5);
    REQUIRE(five.size() == 5);
    CHECK(five[0] == k1);  // split(k, n) begins with split(k, m), m < n
    CHECK(five[1] == k2);
    CHECK(std::set<lt::Key>(five.begin(), five.end()).size() == 5);
    for (std::uint64_t i = 0; i < 5; ++i) CHECK(five[i].value() == block(k.value(), i, 0, tag("SPLT")));
    CHECK(lt::split(k, 0).empty());
    // Neighbouring seeds give unrelated children (no shared words).
    CHECK(lt::split(lt::Key(0))[0] != lt::split(lt::Key(1))[0]);

    // fold_in: the block of (data, 0, "FOLD").
    CHECK(lt::fold_in(k, 7).value() == block(k.value(), 7, 0, tag("FOLD")));
    CHECK(lt::fold_in(k, 7) == lt::fold_in(k, 7));
    CHECK(lt::fold_in(k, 7) != lt::fold_in(k, 8));
    CHECK(lt::fold_in(k, 0) != lt::split(k)[0]);
    CHECK(lt::fold_in(k, ~std::uint64_t(0)).value() == block(k.value(), ~std::uint64_t(0), 0, tag("FOLD")));

    const std::string message = message_of<lt::ValueError>([&] { (void)lt::split(k, -3); });
    CHECK(message.find("split") != std::string::npos);
    CHECK(message.find("-3") != std::string::npos);
}

TEST_CASE("rand, randn, randint from a key: the documented streams, no prefix, no bits shared between functions") {
    for_each_device([](lt::Device) {
        const lt::Key k(2024);
        // rand<float>({8}, k): the stream of the key's Uniform draw of 8 elements.
        const std::uint64_t u8 = draw_seed(k, Uniform, 8), u4 = draw_seed(k, Uniform, 4);
        const std::vector<float> r8 = lt::rand<float>({8}, k).to_vector(), r4 = lt::rand<float>({4}, k).to_vector();
        for (std::uint64_t i = 0; i < 8; ++i) CHECK(r8[i] == static_cast<float>(uniform24(u8, i)));
        for (std::uint64_t i = 0; i < 4; ++i) {
            CHECK(r4[i] == static_cast<float>(uniform24(u4, i)));
            CHECK(r4[i] != r8[i]);  // not a prefix: every element differs
        }
        // One size, one stream: a {2, 4} draw is the {8} draw reshaped.
        CHECK(lt::rand<float>({2, 4}, k).to_vector() == r8);
        CHECK(lt::rand_like(lt::zeros<float>({2, 4}), k).to_vector() == r8);
        const std::vector<double> d = lt::rand<double>({8}, k).to_vector();
        for (std::uint64_t i = 0; i < 8; ++i) CHECK(d[i] == uniform53(u8, i));
        const std::vector<lt::half> h = lt::rand<lt::half>({8}, k).to_vector();
        for (std::uint64_t i = 0; i < 8; ++i)
            CHECK(static_cast<double>(h[i]) == std::ldexp(static_cast<double>(bits(u8, i) >> 53), -11));

        // randn reads its own stream, not rand's: its Box-Muller inputs are not rand's bits.
        const std::uint64_t n_seed = draw_seed(k, Normal, 1000), u_seed = draw_seed(k, Uniform, 1000);
        const std::vector<float> n = lt::randn<float>({1000}, k).to_vector();
        const std::vector<float> u = lt::rand<float>({1000}, k).to_vector();
        int same_bits = 0, like_rand = 0;
        for (std::uint64_t i = 0; i < 1000; ++i) {
            REQUIRE(n[i] == doctest::Approx(normal_ref(n_seed, i)).epsilon(1e-5).scale(1));
            REQUIRE(u[i] == static_cast<float>(uniform24(u_seed, i)));
            same_bits += (bits(n_seed, i) >> 40) == (bits(u_seed, i) >> 40);
            like_rand += std::fabs(n[i] - normal_ref(u_seed, i)) < 1e-3;
        }
        CHECK(same_bits == 0);
        CHECK(like_rand < 5);  // (agreement to 1e-3 by chance: about 1 in 2500)
        CHECK(lt::randn_like(lt::zeros<float>({1000}), k).to_vector() == n);

        const std::uint64_t i_seed = draw_seed(k, Integers, 1000);
        const std::vector<std::int32_t> ints = lt::randint<std::int32_t>(-5, 7, {1000}, k).to_vector();
        for (std::uint64_t i = 0; i < 1000; ++i)
            REQUIRE(ints[i] == static_cast<std::int32_t>(-5 + static_cast<std::int64_t>((bits(i_seed, i) >> 1) % 12)));

        // Split keys differ; the same key repeats; an empty draw is empty.
        const auto [a, b] = lt::split(k);
        CHECK(lt::rand<float>({16}, a).to_vector() != lt::rand<float>({16}, b).to_vector());
        CHECK(lt::rand<float>({16}, a).to_vector() == lt::rand<float>({16}, a).to_vector());
        CHECK(lt::rand<float>({0, 3}, a).numel() == 0);
        CHECK_THROWS_AS(lt::rand<float>({-1}, a), lt::ShapeError);
        CHECK_THROWS_AS(lt::randint<std::int32_t>(3, 3, {2}, a), lt::ValueError);
    });
}

TEST_CASE("split keys draw independent streams: correlation and a chi-squared test of 2^20 pairs") {
    for_each_device([](lt::Device) {
        const std::size_t n = std::size_t(1) << 20;
        const auto [k1, k2] = lt::split(lt::Key(7));
        const std::vector<float> a = lt::rand<float>({static_cast<std::int64_t>(n)}, k1).to_vector();
        const std::vector<float> b = lt::rand<float>({static_cast<std::int64_t>(n)}, k2).to_vector();
        REQUIRE(a.size() == n);
        CHECK(std::fabs(correlation(a, b)) < 5 / std::sqrt(static_cast<double>(n)));
        // A 16 x 16 histogram of the pairs: 255 degrees of freedom.
        const double bound = chi2_bound(16 * 16 - 1);
        CHECK(pair_chi2(a, b, 16) < bound);
        // The test has power: pairs of one stream with itself are far above the bound.
        CHECK(pair_chi2(a, a, 16) > 100 * bound);
        // Each key's own stream is uniform too (64 bins, 63 degrees of freedom).
        std::vector<double> counts(64, 0.0);
        for (float v : b) counts[static_cast<std::size_t>(v * 64.0f)] += 1;
        CHECK(chi2(counts, std::vector<double>(64, static_cast<double>(n) / 64)) < chi2_bound(63));
    });
}

// ------------------------------------------------------------------------------ distributions

TEST_CASE("normal and uniform: randn and rand moved and scaled; their moments and ranges") {
    for_each_device([](lt::Device) {
        const lt::Key k(31);
        const std::uint64_t n_seed = draw_seed(k, Normal, 8), u_seed = draw_seed(k, Uniform, 8);
        const std::vector<double> z = lt::normal<double>({8}, 3.0, 2.0, k).to_vector();
        const std::vector<double> v = lt::uniform<double>({8}, -2.0, 5.0, k).to_vector();
        for (std::uint64_t i = 0; i < 8; ++i) {
            CHECK(z[i] == doctest::Approx(3.0 + 2.0 * normal_ref(n_seed, i, 32)).epsilon(1e-12));
            CHECK(v[i] == doctest::Approx(-2.0 + 7.0 * uniform53(u_seed, i)).epsilon(1e-12));
        }
        // Moments on the host (reductions on the device would only add kernels to compile).
        const std::int64_t m = 1 << 16;
        const std::vector<float> big = lt::normal<float>({m}, -1.5, 2.0, k).to_vector();
        double sum = 0, sum2 = 0;
        for (float x : big) sum += x, sum2 += static_cast<double>(x) * x;
        const double mean = sum / m, sd = std::sqrt(sum2 / m - mean * mean);
        CHECK(std::fabs(mean + 1.5) < 5 * 2.0 / 256);  // 5 standard errors
        CHECK(sd == doctest::Approx(2.0).epsilon(0.02));
        const std::vector<float> flat = lt::uniform<float>({m}, -2.0, 5.0, k).to_vector();
        CHECK(*std::min_element(flat.begin(), flat.end()) >= -2.0f);
        CHECK(*std::max_element(flat.begin(), flat.end()) < 5.0f);
        CHECK(std::fabs(std::accumulate(flat.begin(), flat.end(), 0.0) / m - 1.5) < 5 * 7.0 / std::sqrt(12.0) / 256);
        // In half, 1 + (1 - 2^-11) rounds to 2: such a value is `low` instead (the draw has two).
        const std::uint64_t h_seed = draw_seed(k, Uniform, 4096);
        int at_top = 0;
        for (std::uint64_t i = 0; i < 4096; ++i) at_top += (bits(h_seed, i) >> 53) == 0x7FF;
        REQUIRE(at_top > 0);
        for (lt::half v : lt::uniform<lt::half>({4096}, 1.0, 2.0, k).to_vector()) {
            REQUIRE(static_cast<double>(v) >= 1.0);
            REQUIRE(static_cast<double>(v) < 2.0);
        }
        CHECK(lt::uniform<float>({m}, 4.0, 4.0, k).to_vector() == std::vector<float>(static_cast<std::size_t>(m), 4.0f));
        CHECK(lt::normal<float>({m}, 4.0, 0.0, k).to_vector() == std::vector<float>(static_cast<std::size_t>(m), 4.0f));

        const double nan = std::numeric_limits<double>::quiet_NaN(), inf = std::numeric_limits<double>::infinity();
        CHECK(message_of<lt::ValueError>([&] { (void)lt::normal<float>({2}, 0.0, -1.0, k); }).find("-1") != std::string::npos);
        CHECK_THROWS_AS(lt::normal<float>({2}, 0.0, nan, k), lt::ValueError);
        CHECK_THROWS_AS(lt::normal<float>({2}, inf, 1.0, k), lt::ValueError);
        CHECK(message_of<lt::ValueError>([&] { (void)lt::uniform<float>({2}, 3.0, 1.0, k); }).find("[3, 1)") != std::string::npos);
        CHECK_THROWS_AS(lt::uniform<float>({2}, 0.0, inf, k), lt::ValueError);
        CHECK_THROWS_AS(lt::uniform<float>({2}, -3e38, 3e38, k), lt::ValueError);  // the width overflows float
        CHECK_THROWS_AS(lt::uniform<lt::half>({2}, 0.0, 70000.0, k), lt::ValueError);
        CHECK_THROWS_AS(lt::uniform<float>({2}, 1e39, 1e39, k), lt::ValueError);  // no width, but not a float
        CHECK_THROWS_AS(lt::normal<lt::half>({2}, 1e5, 1.0, k), lt::ValueError);
        CHECK_THROWS_AS(lt::normal<float>({2}, 0.0, 1e39, k), lt::ValueError);
        for (double x : lt::uniform<double>({8}, -3e38, 3e38, k).to_vector()) CHECK(std::fabs(x) < 3e38);
    });
}

TEST_CASE("bernoulli: the documented draw, its mean, probability tensors of any floating type and view") {
    for_each_device([](lt::Device) {
        const lt::Key k(5);
        // Scalar p: rand<double> of the Bernoulli stream below p.
        const std::uint64_t seed = draw_seed(k, Bernoulli, 64);
        const std::vector<std::uint8_t> exact = bytes(lt::bernoulli(0.4, {64}, k));
        for (std::uint64_t i = 0; i < 64; ++i) CHECK(exact[i] == (uniform53(seed, i) < 0.4));
        const std::int64_t m = 1 << 16;
        const std::vector<std::uint8_t> many = bytes(lt::bernoulli(0.3, {m}, k));
        const double mean = std::accumulate(many.begin(), many.end(), 0.0) / static_cast<double>(m);
        CHECK(std::fabs(mean - 0.3) < 5 * std::sqrt(0.3 * 0.7 / static_cast<double>(m)));
        // A tensor of probabilities, one per row, through a lazy broadcast view: 0 never, 1
        // always, NaN never.
        const float nan = std::numeric_limits<float>::quiet_NaN();
        lt::Tensor<float> p = lt::tensor<float>({0.0f, 0.25f, 1.0f, nan}, {4, 1}).expand({4, 4096});
        const std::vector<std::uint8_t> drawn = bytes(lt::bernoulli(p, k));
        std::vector<double> rows(4, 0.0);
        for (std::size_t i = 0; i < drawn.size(); ++i) rows[i / 4096] += drawn[i];
        CHECK(rows[0] == 0);
        CHECK(std::fabs(rows[1] / 4096 - 0.25) < 5 * std::sqrt(0.25 * 0.75 / 4096));
        CHECK(rows[2] == 4096);
        CHECK(rows[3] == 0);
        // float probabilities draw rand<float> of the same stream; half and double work too.
        const std::vector<std::uint8_t> from_float = bytes(lt::bernoulli(lt::full<float>({64}, 0.4f), k));
        for (std::uint64_t i = 0; i < 64; ++i) CHECK(from_float[i] == (uniform24(seed, i) < static_cast<double>(0.4f)));
        const lt::Tensor<double> pd = lt::rand<double>({3, 5}, lt::Key(9)).t();
        const std::vector<double> pdv = pd.to_vector();
        const std::vector<std::uint8_t> from_double = bytes(lt::bernoulli(pd, k));
        const std::uint64_t seed15 = draw_seed(k, Bernoulli, 15);
        for (std::uint64_t i = 0; i < 15; ++i) CHECK(from_double[i] == (uniform53(seed15, i) < pdv[i]));
        CHECK(bytes(lt::bernoulli(lt::full<lt::half>({8}, lt::half(1.0f)), k)) == std::vector<std::uint8_t>(8, 1));
        CHECK(bytes(lt::bernoulli(0.0, {64}, k)) == std::vector<std::uint8_t>(64, 0));
        CHECK(bytes(lt::bernoulli(1.0, {64}, k)) == std::vector<std::uint8_t>(64, 1));
        CHECK(message_of<lt::ValueError>([&] { (void)lt::bernoulli(1.5, {2}, k); }).find("1.5") != std::string::npos);
        CHECK_THROWS_AS(lt::bernoulli(-0.1, {2}, k), lt::ValueError);
        CHECK_THROWS_AS(lt::bernoulli(std::numeric_limits<double>::quiet_NaN(), {2}, k), lt::ValueError);
    });
}

TEST_CASE("permutation: a permutation, the argsort of the documented 63-bit draws; shuffling a tensor") {
    for_each_device([](lt::Device) {
        const lt::Key k(77);
        const std::int64_t n = 1000;
        const std::vector<std::int64_t> p = lt::permutation(n, k).to_vector();
        std::vector<std::int64_t> sorted = p;
        std::sort(sorted.begin(), sorted.end());
        std::vector<std::int64_t> iota(static_cast<std::size_t>(n));
        std::iota(iota.begin(), iota.end(), 0);
        CHECK(sorted == iota);
        CHECK(p != iota);
        // The positions that sort the draws (reference: std::stable_sort).
        const std::uint64_t seed = draw_seed(k, Permutation, static_cast<std::uint64_t>(n));
        std::vector<std::int64_t> want = iota;
        std::stable_sort(want.begin(), want.end(), [&](std::int64_t a, std::int64_t b) {
            return (bits(seed, static_cast<std::uint64_t>(a)) >> 1) < (bits(seed, static_cast<std::uint64_t>(b)) >> 1);
        });
        CHECK(p == want);
        CHECK(lt::permutation(n, lt::split(k)[0]).to_vector() != p);
        CHECK(lt::permutation(0, k).numel() == 0);
        CHECK(lt::permutation(1, k).to_vector() == std::vector<std::int64_t>{0});
        CHECK(message_of<lt::ValueError>([&] { (void)lt::permutation(-2, k); }).find("-2") != std::string::npos);
        // A tensor shuffled along an axis: its slices in the order permutation(extent, key),
        // through a transposed view too, and differentiable.
        const std::vector<std::int64_t> p4 = lt::permutation(4, k).to_vector();
        lt::Tensor<float> x = lt::arange<float>(12).reshape({3, 4});
        const std::vector<float> along1 = lt::permutation(x, k, 1).to_vector(), along0t = lt::permutation(x.t(), k).to_vector();
        std::vector<float> want1, want0t, want_grad(12);
        for (std::int64_t i = 0; i < 3; ++i)
            for (std::int64_t j = 0; j < 4; ++j) want1.push_back(static_cast<float>(4 * i + p4[static_cast<std::size_t>(j)]));
        for (std::int64_t j = 0; j < 4; ++j)
            for (std::int64_t i = 0; i < 3; ++i) want0t.push_back(static_cast<float>(4 * i + p4[static_cast<std::size_t>(j)]));
        CHECK(along1 == want1);
        CHECK(lt::permutation(x, k, -1).to_vector() == want1);
        CHECK(along0t == want0t);
        // d/dx of sum(permutation(x) * j) along axis 1: column p4[j] of x receives j.
        for (std::int64_t i = 0; i < 3; ++i)
            for (std::int64_t j = 0; j < 4; ++j) want_grad[static_cast<std::size_t>(4 * i + p4[static_cast<std::size_t>(j)])] = static_cast<float>(j);
        CHECK(lt::grad(lt::sum(lt::permutation(x, k, 1) * lt::arange<float>(4)), x).to_vector() == want_grad);
        CHECK(lt::permutation(lt::zeros<float>({0, 2}), k).numel() == 0);
        CHECK_THROWS_AS(lt::permutation(lt::ones<float>(lt::Shape{}), k), lt::AxisError);
        CHECK(message_of<lt::AxisError>([&] { (void)lt::permutation(x, k, 2); }).find("axis 2") != std::string::npos);
    });
}

TEST_CASE("multinomial with replacement: inverse CDF, frequencies match the probabilities") {
    for_each_device([](lt::Device) {
        const lt::Key k(11);
        // Weights whose running sums are exact in float: sample j is the number of running sums
        // (the last left out) at or below u_j.
        lt::Tensor<float> exact_probs = lt::tensor<float>({0.125f, 0.25f, 0.5f, 0.125f}, {4});
        const std::vector<std::int64_t> s = lt::multinomial(exact_probs, 1000, true, k).to_vector();
        REQUIRE(s.size() == 1000);
        const std::uint64_t seed = draw_seed(k, Multinomial, 1000);
        const double cdf[3] = {0.125, 0.375, 0.875};
        for (std::uint64_t j = 0; j < 1000; ++j) {
            const double u = uniform24(seed, j);
            REQUIRE(s[j] == (cdf[0] <= u) + (cdf[1] <= u) + (cdf[2] <= u));
        }
        // Frequencies: rows of weights that need not sum to 1, zero weights never drawn.
        const std::int64_t m = 1 << 15;
        lt::Tensor<double> probs = lt::tensor<double>({1, 2, 3, 4, 0, 0, 0, 5, 0, 0, 0, 2, 6, 0, 0}, {3, 5});
        const lt::Tensor<std::int64_t> draws = lt::multinomial(probs, m, true, k);
        CHECK(draws.shape() == lt::Shape{3, m});
        const std::vector<std::int64_t> all = draws.to_vector();
        std::vector<std::vector<double>> counts(3, std::vector<double>(5, 0.0));
        for (std::size_t i = 0; i < all.size(); ++i) counts[i / static_cast<std::size_t>(m)][static_cast<std::size_t>(all[i])] += 1;
        CHECK(counts[0][4] == 0);
        CHECK(chi2({counts[0][0], counts[0][1], counts[0][2], counts[0][3]}, {0.1 * m, 0.2 * m, 0.3 * m, 0.4 * m}) < chi2_bound(3));
        CHECK(counts[1][2] == m);  // one category of positive weight
        CHECK(counts[2][0] + counts[2][3] + counts[2][4] == 0);
        CHECK(chi2({counts[2][1], counts[2][2]}, {0.25 * m, 0.75 * m}) < chi2_bound(1));
        // float and half weights through a transposed view ([2, 3] of a [3, 2] tensor).
        lt::Tensor<lt::half> ph = lt::tensor<lt::half>({lt::half(0.0f), lt::half(1.0f), lt::half(1.0f), lt::half(0.0f),
                                                       lt::half(0.0f), lt::half(0.0f)}, {3, 2}).t();
        const std::vector<std::int64_t> hs = lt::multinomial(ph, 8, true, k).to_vector();
        CHECK(hs == std::vector<std::int64_t>{1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0});
        CHECK(lt::multinomial(exact_probs, 0, true, k).numel() == 0);
        CHECK(lt::multinomial(exact_probs, 6, true, k).numel() == 6);  // more samples than categories
    });
}

TEST_CASE("multinomial without replacement: distinct samples in the order of sequential drawing") {
    for_each_device([](lt::Device) {
        const lt::Key k(13);
        // Every row of a full draw is a permutation of its categories.
        lt::Tensor<float> w = lt::rand<float>({64, 6}, lt::Key(1)) + 0.01f;
        const std::vector<std::int64_t> full = lt::multinomial(w, 6, false, k).to_vector();
        for (std::size_t r = 0; r < 64; ++r) {
            std::set<std::int64_t> row(full.begin() + static_cast<std::ptrdiff_t>(6 * r), full.begin() + static_cast<std::ptrdiff_t>(6 * r + 6));
            REQUIRE(row == std::set<std::int64_t>{0, 1, 2, 3, 4, 5});
        }
        // The first sample is drawn with probability p_i; the second, j != i, with probability
        // sum_i p_i p_j / (1 - p_i) (sequential drawing without replacement).
        const double p[4] = {0.1, 0.2, 0.3, 0.4};
        const std::int64_t rows = 1 << 14;
        lt::Tensor<float> probs = lt::tensor<float>({0.1f, 0.2f, 0.3f, 0.4f}, {1, 4}).expand({rows, 4});
        const std::vector<std::int64_t> two = lt::multinomial(probs, 2, false, k).to_vector();
        std::vector<double> first(4, 0.0), second(4, 0.0), want_second(4, 0.0);
        for (std::size_t r = 0; r < static_cast<std::size_t>(rows); ++r) {
            REQUIRE(two[2 * r] != two[2 * r + 1]);
            first[static_cast<std::size_t>(two[2 * r])] += 1;
            second[static_cast<std::size_t>(two[2 * r + 1])] += 1;
        }
        for (int j = 0; j < 4; ++j)
            for (int i = 0; i < 4; ++i)
                if (i != j) want_second[static_cast<std::size_t>(j)] += rows * p[i] * p[j] / (1 - p[i]);
        CHECK(chi2(first, {0.1 * rows, 0.2 * rows, 0.3 * rows, 0.4 * rows}) < chi2_bound(3));
        CHECK(chi2(second, want_second) < chi2_bound(3));
        // Zero weights come last, in index order; a 1-d row gives a 1-d result.
        const lt::Tensor<double> zeros_inside = lt::tensor<double>({0.5, 0.0, 0.5, 0.0}, {4});
        const std::vector<std::int64_t> z = lt::multinomial(zeros_inside, 4, false, k).to_vector();
        CHECK(std::set<std::int64_t>(z.begin(), z.begin() + 2) == std::set<std::int64_t>{0, 2});
        CHECK(z[2] == 1);
        CHECK(z[3] == 3);
    });
}

TEST_CASE("multinomial: bad shapes and sample counts name the value; the tensors stay usable") {
    const lt::Key k(3);
    lt::Tensor<float> p = lt::ones<float>({2, 4});
    CHECK(message_of<lt::ShapeError>([&] { (void)lt::multinomial(lt::ones<float>({2, 2, 4}), 1, true, k); }).find("[2, 2, 4]") != std::string::npos);
    CHECK_THROWS_AS(lt::multinomial(lt::ones<float>(lt::Shape{}), 1, true, k), lt::ShapeError);
    CHECK(message_of<lt::ValueError>([&] { (void)lt::multinomial(lt::ones<float>({3, 0}), 1, true, k); }).find("no categories") != std::string::npos);
    CHECK(message_of<lt::ValueError>([&] { (void)lt::multinomial(p, -1, true, k); }).find("-1") != std::string::npos);
    const std::string more = message_of<lt::ValueError>([&] { (void)lt::multinomial(p, 5, false, k); });
    CHECK(more.find("num_samples = 5") != std::string::npos);
    CHECK(more.find("4 categories") != std::string::npos);
    CHECK(lt::multinomial(p, 4, false, k).shape() == lt::Shape{2, 4});
    CHECK(p.sum().item() == 8.0f);
}

// ------------------------------------------------------------------------------------ dropout

TEST_CASE("dropout with a key: keeps about 1 - p, scales by 1 / (1 - p), a mask of its own") {
    for_each_device([](lt::Device) {
        const lt::Key k(17);
        const std::int64_t m = 1 << 16;
        const std::vector<float> y = lt::dropout(lt::ones<float>({m}), 0.25, k).to_vector();
        const std::uint64_t seed = draw_seed(k, Dropout, static_cast<std::uint64_t>(m));
        const std::uint64_t u_seed = draw_seed(k, Uniform, static_cast<std::uint64_t>(m));
        double kept = 0;
        int like_rand = 0;
        for (std::uint64_t i = 0; i < static_cast<std::uint64_t>(m); ++i) {
            const bool keep = uniform24(seed, i) >= 0.25;  // the element's own uniform
            REQUIRE(y[i] == (keep ? static_cast<float>(1.0 / 0.75) : 0.0f));
            kept += keep;
            like_rand += keep == (uniform24(u_seed, i) >= 0.25);
        }
        CHECK(std::fabs(kept / m - 0.75) < 5 * std::sqrt(0.25 * 0.75 / m));
        // Not rand's mask: agreement with it is chance (0.75^2 + 0.25^2 = 0.625 of elements).
        CHECK(std::fabs(like_rand / static_cast<double>(m) - 0.625) < 0.02);
        // Other dtypes, views, and the modes that leave x alone.
        lt::Tensor<double> x = lt::rand<double>({6, 5}, lt::Key(2)).t();
        CHECK(lt::dropout(x, 0.5, k, false).to_vector() == x.to_vector());
        CHECK(lt::dropout(x, 0.0, k).to_vector() == x.to_vector());
        CHECK(lt::dropout(x, 1.0, k).to_vector() == std::vector<double>(30, 0.0));
        const std::vector<double> xd = x.to_vector(), yd = lt::dropout(x, 0.5, k).to_vector();
        const std::uint64_t seed30 = draw_seed(k, Dropout, 30);
        for (std::uint64_t i = 0; i < 30; ++i) CHECK(yd[i] == (uniform24(seed30, i) >= 0.5 ? xd[i] * 2.0 : 0.0));
        // Differentiable like the seed's dropout: the gradient of sum(dropout(x)) is the mask, scaled.
        lt::Tensor<float> ones = lt::ones<float>({64});
        CHECK(lt::grad(lt::sum(lt::dropout(ones, 0.5, k)), ones).to_vector() == lt::dropout(ones, 0.5, k).to_vector());
        const std::vector<lt::half> yh = lt::dropout(lt::ones<lt::half>({8}), 0.5, k).to_vector();
        for (lt::half v : yh) CHECK((static_cast<float>(v) == 0.0f || static_cast<float>(v) == 2.0f));
        CHECK(message_of<lt::ValueError>([&] { (void)lt::dropout(x, 1.5, k); }).find("1.5") != std::string::npos);
        CHECK_THROWS_AS(lt::dropout(x, -0.5, k), lt::ValueError);
    });
}

// -------------------------------------------------------------------------------------- seeds

TEST_CASE("seeds keep their streams: element i is philox(i, seed), and a seed is not its Key") {
    for_each_device([](lt::Device) {
        // The published Philox 4x32-10 vector for counter 0 and key 0 is 0x6627e8d5, 0xe169c58d,
        // ...: element 0 of seed 0 holds those two words (the high one first).
        CHECK(lt::rand<float>({1}, 0).item() == static_cast<float>(std::ldexp(0xe169c5, -24)));
        CHECK(lt::rand<double>({1}, 0).item() == std::ldexp(static_cast<double>(0xe169c58d6627e8d5ULL >> 11), -53));
        // rand({4}, s) is a prefix of rand({8}, s), as it always was.
        const std::vector<float> r8 = lt::rand<float>({8}, 99).to_vector(), r4 = lt::rand<float>({4}, 99).to_vector();
        CHECK(std::vector<float>(r8.begin(), r8.begin() + 4) == r4);
        for (std::uint64_t i = 0; i < 8; ++i) CHECK(r8[i] == static_cast<float>(uniform24(99, i)));
        // dropout with a seed: kept where rand<float>(shape, seed) >= p.
        const std::vector<float> y = lt::dropout(lt::ones<float>({64}), 0.5, 99).to_vector();
        for (std::uint64_t i = 0; i < 64; ++i) CHECK(y[i] == (uniform24(99, i) >= 0.5 ? 2.0f : 0.0f));
        // A key made from a seed draws a stream of its own.
        CHECK(lt::rand<float>({8}, lt::Key(99)).to_vector() != r8);
    });
}

}  // namespace random_keys_tests
