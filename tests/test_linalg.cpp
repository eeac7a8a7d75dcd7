// SPDX-License-Identifier: MIT
// lt::norm and lt::einsum on every test device, against references written out plainly here:
// norms accumulated in long double (no scaling: long double holds the squares of any double of
// these tests), and an einsum that loops over every assignment of its letters.
#include <algorithm>
#include <array>
#include <limits>
#include <map>

#include "common.hpp"

namespace linalg_tests {

// ---------------------------------------------------------------------------------- references

/// The p-norm of x over `axes` (all when empty), in long double: max/min of |x| for +-inf, the
/// count of non-zeros for 0, else (sum |x|^p)^(1/p). NaN anywhere makes NaN (but for p = 0).
Ref ref_norm(const Ref& x, double p, std::vector<int> axes, bool keepdim) {
    const std::size_t n = x.shape.size();
    if (axes.empty())
        for (std::size_t k = 0; k < n; ++k) axes.push_back(static_cast<int>(k));
    std::vector<bool> reduced(n, false);
    for (int a : axes) reduced[static_cast<std::size_t>(a < 0 ? a + static_cast<int>(n) : a)] = true;
    lt::Shape keep, squeezed;
    for (std::size_t k = 0; k < n; ++k) {
        keep.push_back(reduced[k] ? 1 : x.shape[k]);
        if (!reduced[k]) squeezed.push_back(x.shape[k]);
    }
    const std::size_t groups = static_cast<std::size_t>(lt::numel(keep));
    const long double start = p == std::numeric_limits<double>::infinity() ? 0.0L
                              : p == -std::numeric_limits<double>::infinity() ? std::numeric_limits<long double>::infinity()
                                                                              : 0.0L;
    std::vector<long double> acc(groups, start);
    std::vector<bool> nan(groups, false);
    for (std::int64_t i = 0; i < x.size(); ++i) {
        const auto idx = unravel(i, x.shape);
        std::int64_t g = 0;
        for (std::size_t k = 0; k < n; ++k) g = g * keep[k] + (reduced[k] ? 0 : idx[k]);
        const long double v = x.v[static_cast<std::size_t>(i)], a = std::fabs(v);
        long double& s = acc[static_cast<std::size_t>(g)];
        if (std::isnan(v)) nan[static_cast<std::size_t>(g)] = true;
        if (p == std::numeric_limits<double>::infinity()) s = std::max(s, a);
        else if (p == -std::numeric_limits<double>::infinity()) s = std::min(s, a);
        else if (p == 0) s += v != 0;
        else s += std::pow(a, static_cast<long double>(p));
    }
    Ref out{keepdim ? keep : squeezed, {}};
    for (std::size_t g = 0; g < groups; ++g) {
        long double r = acc[g];
        if (p != 0 && nan[g]) r = std::numeric_limits<long double>::quiet_NaN();
        else if (p != 0 && !std::isinf(p)) r = std::pow(r, 1.0L / p);
        out.v.push_back(static_cast<double>(r));
    }
    return out;
}

/// A reference einsum of explicit subscripts made of letters only ("ij,jk->ik"): every
/// assignment of the letters visited, extents of 1 broadcast. `magnitude` gets the sum of
/// |products| per output element (the scale of a float result's rounding).
Ref ref_einsum(const std::string& spec, const std::vector<Ref>& ops, Ref* magnitude = nullptr) {
    const std::size_t arrow = spec.find("->");
    REQUIRE(arrow != std::string::npos);
    std::vector<std::string> terms;
    std::string lhs = spec.substr(0, arrow);
    for (std::size_t start = 0;;) {
        const std::size_t comma = lhs.find(',', start);
        terms.push_back(lhs.substr(start, comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
    }
    const std::string out = spec.substr(arrow + 2);
    REQUIRE(terms.size() == ops.size());
    std::map<char, std::int64_t> extent;
    for (std::size_t i = 0; i < ops.size(); ++i) {
        REQUIRE(terms[i].size() == ops[i].shape.size());
        for (std::size_t k = 0; k < terms[i].size(); ++k) {
            std::int64_t& e = extent.emplace(terms[i][k], 1).first->second;
            if (ops[i].shape[k] != 1) e = ops[i].shape[k];
        }
        for (std::size_t k = 0; k < terms[i].size(); ++k)
            if (ops[i].shape[k] == 0) extent[terms[i][k]] = 0;
    }
    std::vector<char> letters;
    lt::Shape extents;
    for (auto& [c, e] : extent) letters.push_back(c), extents.push_back(e);
    lt::Shape out_shape;
    for (char c : out) out_shape.push_back(extent.at(c));
    Ref result{out_shape, std::vector<double>(static_cast<std::size_t>(lt::numel(out_shape)), 0.0)};
    Ref mag = result;
    auto value_of = [&](const std::vector<std::int64_t>& at, char c) {
        return at[static_cast<std::size_t>(std::find(letters.begin(), letters.end(), c) - letters.begin())];
    };
    for (std::int64_t i = 0; i < lt::numel(extents); ++i) {
        const auto at = unravel(i, extents);
        double product = 1;
        for (std::size_t o = 0; o < ops.size(); ++o) {
            std::vector<std::int64_t> idx;
            for (std::size_t k = 0; k < terms[o].size(); ++k)
                idx.push_back(ops[o].shape[k] == 1 ? 0 : value_of(at, terms[o][k]));
            product *= ops[o].at(idx);
        }
        std::int64_t linear = 0;
        for (std::size_t k = 0; k < out.size(); ++k) linear = linear * out_shape[k] + value_of(at, out[k]);
        result.v[static_cast<std::size_t>(linear)] += product;
        mag.v[static_cast<std::size_t>(linear)] += std::fabs(product);
    }
    if (magnitude) *magnitude = mag;
    return result;
}

/// Checks a floating einsum against the reference, within the rounding of its sums.
template <class T>
void check_einsum_close(const lt::Tensor<T>& got_tensor, const Ref& expected, const Ref& magnitude) {
    REQUIRE(got_tensor.shape() == expected.shape);
    const std::vector<T> got = got_tensor.to_vector();
    const double eps = std::is_same_v<T, lt::half> ? 1e-3 : static_cast<double>(std::numeric_limits<T>::epsilon());
    int failures = 0;
    for (std::size_t i = 0; i < got.size() && failures < 5; ++i) {
        const double bound = 64 * eps * magnitude.v[i] + 1e-30;
        const double diff = std::fabs(static_cast<double>(got[i]) - expected.v[i]);
        if (!(diff <= bound)) {
            ++failures;
            FAIL_CHECK("element " << i << " of shape " << expected.shape << ": got " << static_cast<double>(got[i])
                                  << ", expected " << expected.v[i] << " (bound " << bound << ")");
        }
    }
}

/// The extent each letter gets in the reference einsum cases (distinct, so that a mixed-up
/// axis shows as a shape error or a wrong value).
std::int64_t letter_extent(char c) {
    static const std::map<char, std::int64_t> extents{{'a', 3}, {'b', 2}, {'c', 4}, {'d', 5}, {'i', 3}, {'j', 4},
                                                      {'k', 5}, {'l', 2}, {'m', 3}, {'n', 4}, {'A', 2}, {'C', 3}};
    return extents.at(c);
}

/// Operands for `spec`'s terms: random values of T, each of its letters' extents.
template <class T>
std::vector<Ref> einsum_operands(const std::string& spec, unsigned seed) {
    std::vector<Ref> ops;
    const std::string lhs = spec.substr(0, spec.find("->"));
    std::string term;
    for (char c : lhs + ",") {
        if (c != ',') {
            term += c;
            continue;
        }
        lt::Shape shape;
        for (char l : term) shape.push_back(letter_extent(l));
        ops.push_back(random_ref<T>(shape, seed++));
        term.clear();
    }
    return ops;
}

template <class T, std::size_t... I>
lt::Tensor<T> einsum_of(const std::string& spec, const std::vector<lt::Tensor<T>>& t, std::index_sequence<I...>) {
    return lt::einsum(spec, t[I]...);
}

/// lt::einsum(spec, operands...) through the variadic form (up to four operands), and through
/// the std::vector form.
template <class T>
std::pair<lt::Tensor<T>, lt::Tensor<T>> run_einsum(const std::string& spec, const std::vector<Ref>& ops) {
    std::vector<lt::Tensor<T>> t;
    for (const Ref& r : ops) t.push_back(make_tensor<T>(r));
    lt::Tensor<T> variadic;
    switch (t.size()) {
        case 1: variadic = einsum_of(spec, t, std::make_index_sequence<1>()); break;
        case 2: variadic = einsum_of(spec, t, std::make_index_sequence<2>()); break;
        case 3: variadic = einsum_of(spec, t, std::make_index_sequence<3>()); break;
        default: variadic = einsum_of(spec, t, std::make_index_sequence<4>()); break;
    }
    return {variadic, lt::einsum(spec, t)};
}

template <class T>
void check_einsum(const std::string& spec, const std::string& ref_spec, const std::vector<Ref>& ops) {
    INFO("einsum \"" << spec << "\"");
    Ref magnitude;
    const Ref expected = ref_einsum(ref_spec, ops, &magnitude);
    const auto [variadic, listed] = run_einsum<T>(spec, ops);
    check_einsum_close(variadic, expected, magnitude);
    check_einsum_close(listed, expected, magnitude);
}

/// check_einsum of float operands of these shapes, random values from seed on.
void check_float_einsum(const std::string& spec, const std::string& ref_spec, std::initializer_list<lt::Shape> shapes,
                        unsigned& seed) {
    std::vector<Ref> ops;
    for (const lt::Shape& s : shapes) ops.push_back(random_ref<float>(s, seed++));
    check_einsum<float>(spec, ref_spec, ops);
}

template <class E>
std::string error_of(E&& f) {
    try {
        f();
    } catch (const lt::Error& e) {
        return e.what();
    }
    return "no error";
}

std::size_t count_kind(const std::vector<lt::ScheduleItem>& items, lt::ScheduleItem::Kind kind) {
    return static_cast<std::size_t>(std::count_if(items.begin(), items.end(), [&](auto& i) { return i.kind == kind; }));
}

constexpr double kInf = std::numeric_limits<double>::infinity();
const double kNaN = std::numeric_limits<double>::quiet_NaN();

// --------------------------------------------------------------------------------------- norm

TEST_CASE_TEMPLATE("norm: every order over all axes, one axis or several, against a long double reference", T, float, double) {
    for_each_device([](lt::Device) {
        Ref x = random_ref<T>({5, 7}, 1);
        x.v[3] = 0, x.v[17] = 0, x.v[20] = 0;  // zeros, for p = 0 and the negative orders
        Ref nonzero = random_ref<T>({5, 7}, 2);
        for (double& v : nonzero.v) v = v == 0 ? 0.5 : v;
        const auto X = make_tensor<T>(x), NZ = make_tensor<T>(nonzero);
        const double rtol = std::is_same_v<T, float> ? 1e-5 : 1e-13;
        // Every axis list for float; for double (its kernels are float's with another type), two.
        const bool all = std::is_same_v<T, float>;
        const std::vector<std::vector<int>> axis_lists =
            all ? std::vector<std::vector<int>>{{}, {0}, {1}, {-1}, {0, 1}} : std::vector<std::vector<int>>{{}, {1}};
        for (double p : {2.0, 1.0, kInf, -kInf, 0.0, 3.0, 0.5, -1.0, -2.5}) {
            INFO("p = " << p);
            for (const std::vector<int>& axes : axis_lists) {
                INFO("axes " << lt::Axes(axes));
                for (bool keepdim : {false, all}) {
                    check_close(lt::norm(X, p, lt::Axes(axes), keepdim), ref_norm(x, p, axes, keepdim), rtol, 0);
                    check_close(lt::norm(NZ, p, lt::Axes(axes), keepdim), ref_norm(nonzero, p, axes, keepdim), rtol, 0);
                }
            }
        }
        // The default is the 2-norm of all elements (Frobenius); "fro" is the same.
        check_close(lt::norm(X), ref_norm(x, 2, {}, false), rtol, 0);
        check_close(lt::norm(X, "fro"), ref_norm(x, 2, {}, false), rtol, 0);
        check_close(lt::norm(X, "fro", {0, 1}, true), ref_norm(x, 2, {}, true), rtol, 0);
        check_close(lt::norm(X, "fro", 1), ref_norm(x, 2, {1}, false), rtol, 0);
    });
}

TEST_CASE("norm: spellings of the order and the axes") {
    for_each_device([](lt::Device) {
        const Ref x = random_ref<float>({4, 6}, 3);
        const auto X = make_tensor<float>(x);
        check_close(lt::norm(X, 2, {0, 1}), ref_norm(x, 2, {}, false), 1e-5, 0);
        check_close(lt::norm(X, 2, {}), ref_norm(x, 2, {}, false), 1e-5, 0);  // {} is all axes, not axis 0
        check_close(lt::norm(X, 2, {0}), ref_norm(x, 2, {0}, false), 1e-5, 0);
        check_close(lt::norm(X, lt::inf, 1, true), ref_norm(x, kInf, {1}, true), 0, 0);
        check_close(lt::norm(X, -lt::inf, std::int64_t{-1}), ref_norm(x, -kInf, {1}, false), 0, 0);
        check_close(lt::norm(X, std::numeric_limits<double>::infinity()), ref_norm(x, kInf, {}, false), 0, 0);
        check_close(lt::norm(X * 2.0f - 1.0f, 1, 0), ref_norm(map(x, [](double v) { return v * 2 - 1; }), 1, {0}, false),
                    1e-5, 0);                                                                     // a lazy operand
        check_close(lt::norm(X.t(), 3, 0), ref_norm(x, 3, {1}, false), 1e-5, 0);                  // a transposed view
        check_close(lt::norm(lt::full<float>({}, -3.0f)), Ref{{}, {3.0}}, 0, 0);                  // 0-d: |x|
        check_close(lt::norm(lt::full<float>({}, -3.0f), 0), Ref{{}, {1.0}}, 0, 0);
        CHECK(lt::norm(X, 2, {1}, true).shape() == lt::Shape{4, 1});
        CHECK(lt::norm(X, lt::inf, {0, 1}, true).shape() == lt::Shape{1, 1});
    });
}

TEST_CASE_TEMPLATE("norm: no overflow or underflow of the powers near the ends of the range", T, float, double) {
    for_each_device([](lt::Device) {
        const double big = std::is_same_v<T, float> ? 1e30 : 1e200, tiny = std::is_same_v<T, float> ? 1e-30 : 1e-200;
        // Rows: large values (squares overflow T), tiny ones (squares underflow), mixed, ordinary.
        Ref x{{4, 5}, {}};
        for (double v : {1.0, -2.0, 3.0, 4.0, 0.5}) x.v.push_back(static_cast<double>(static_cast<T>(v * big)));
        for (double v : {1.0, 2.0, -3.0, 0.0, 0.25}) x.v.push_back(static_cast<double>(static_cast<T>(v * tiny)));
        for (double v : {1.0, -1.0, 0.0, 0.0, 2.0}) x.v.push_back(static_cast<double>(static_cast<T>(v * big)));
        for (double v : {1.0, 2.0, 2.0, 0.0, 4.0}) x.v.push_back(v);
        const auto X = make_tensor<T>(x);
        const double rtol = std::is_same_v<T, float> ? 2e-6 : 1e-14;
        for (double p : {2.0, 3.0, 0.5, 1.0, kInf}) {
            INFO("p = " << p);
            check_close(lt::norm(X, p, {1}), ref_norm(x, p, {1}, false), rtol, 0);
        }
        // Negative orders: their large terms are the small |x|, scaled by the smallest.
        Ref y{{2, 3}, {}};
        for (double v : {1.0, 2.0, 4.0}) y.v.push_back(static_cast<double>(static_cast<T>(v * tiny)));
        for (double v : {1.0, -3.0, 2.0}) y.v.push_back(static_cast<double>(static_cast<T>(v * big)));
        for (double p : {-1.0, -2.0, -kInf}) {
            INFO("p = " << p);
            check_close(lt::norm(make_tensor<T>(y), p, {1}), ref_norm(y, p, {1}, false), rtol, 0);
        }
        // The 2-norm of the largest finite values: sqrt(2) * max overflows the type, as it should.
        const T top = std::numeric_limits<T>::max();
        CHECK(std::isinf(lt::norm(lt::full<T>({2}, top)).item()));
        CHECK(lt::norm(lt::full<T>({1}, top)).item() == top);
    });
}

TEST_CASE("norm: zeros, infinities and NaN") {
    for_each_device([](lt::Device) {
        // Rows: all zero; an infinity; a NaN; an infinity and a NaN; -inf and zeros.
        const Ref x{{5, 3}, {0, 0, 0, 1, kInf, 2, 1, kNaN, 2, kInf, kNaN, 1, -kInf, 0, 0}};
        const auto X = make_tensor<float>(x);
        for (double p : {2.0, 1.0, kInf, -kInf, 0.0, 3.0, 0.5, -1.0}) {
            INFO("p = " << p);
            check_close(lt::norm(X, p, {1}), ref_norm(x, p, {1}, false), 1e-6, 0);
        }
        CHECK(lt::norm(X, 2, {1}).to_vector()[0] == 0.0f);  // 0, not NaN (0 / 0)
        CHECK(lt::norm(lt::zeros<double>({3, 4})).item() == 0.0);
        CHECK(lt::norm(lt::zeros<float>({3, 4}), -2).item() == 0.0f);
    });
}

TEST_CASE("norm: element types") {
    for_each_device([](lt::Device) {
        // Integers compute in float32, like mean.
        auto i = lt::norm(lt::tensor<int32_t>({3, -4}, {2}));
        static_assert(std::is_same_v<decltype(i), lt::Tensor<float>>);
        CHECK(i.item() == 5.0f);
        auto big = lt::norm(lt::tensor<int64_t>({3'000'000'000'000'000'000LL, 4'000'000'000'000'000'000LL, 0, 0}, {4}));
        CHECK(big.item() == doctest::Approx(5e18).epsilon(1e-6));
        CHECK(lt::norm(lt::tensor<uint8_t>({255, 0, 3}, {3}), 0).item() == 2.0f);
        CHECK(lt::norm(lt::tensor<uint8_t>({200, 100}, {2}), 1).item() == 300.0f);
        // half keeps its type; the squares are taken in float32 (30000^2 is past half's range).
        auto h = lt::norm(lt::tensor<lt::half>({lt::half(30000.0f), lt::half(40000.0f)}, {2}));
        static_assert(std::is_same_v<decltype(h), lt::Tensor<lt::half>>);
        CHECK(static_cast<float>(h.item()) == static_cast<float>(lt::half(50000.0f)));  // 49984: ties to even
        const Ref hx = random_ref<lt::half>({3, 8}, 4);
        check_close(lt::norm(make_tensor<lt::half>(hx), 2, {1}), ref_norm(hx, 2, {1}, false), 1e-3, 0);
        static_assert(std::is_same_v<decltype(lt::norm(lt::ones<double>({2}))), lt::Tensor<double>>);
    });
}

TEST_CASE("norm: empty axes") {
    for_each_device([](lt::Device) {
        const auto e = lt::zeros<float>({0, 3});
        check_close(lt::norm(e, 2, {0}), Ref{{3}, {0, 0, 0}}, 0, 0);
        check_close(lt::norm(e), Ref{{}, {0}}, 0, 0);
        check_close(lt::norm(e, 3, {0}), Ref{{3}, {0, 0, 0}}, 0, 0);
        check_close(lt::norm(e, 0, {0}), Ref{{3}, {0, 0, 0}}, 0, 0);
        check_close(lt::norm(e, -1, {0}), Ref{{3}, {kInf, kInf, kInf}}, 0, 0);
        check_close(lt::norm(e, 2, {1}), Ref{{0}, {}}, 0, 0);  // no rows
        const std::string m = error_of([&] { lt::norm(e, lt::inf, {0}); });
        CHECK(m.find("lt::norm: cannot reduce over axis 0 of extent 0") != std::string::npos);
        CHECK_THROWS_AS(lt::norm(e, -lt::inf), lt::ValueError);
    });
}

TEST_CASE("norm: a 2-norm over rows is one kernel") {
    for_each_device([](lt::Device) {
        const Ref x = random_ref<float>({64, 100}, 5);
        const auto X = make_tensor<float>(x);
        for (double p : {2.0, 3.0, -1.0}) {
            INFO("p = " << p);
            const auto n = lt::norm(X, p, {1});
            CHECK(lt::kernel_count(lt::schedule(n)) == 1);
            check_close(n, ref_norm(x, p, {1}, false), 1e-5, 0);
        }
        // The element-wise code around it fuses too.
        const auto scaled = lt::norm(X * 0.5f, 2, {1}, true) + 1.0f;
        CHECK(lt::kernel_count(lt::schedule(scaled)) == 1);
        check_close(scaled, map(ref_norm(x, 2, {1}, true), [](double v) { return v * 0.5 + 1; }), 1e-5, 0);
    });
}

TEST_CASE("norm: errors") {
    const auto x = lt::ones<float>({2, 3});
    CHECK(error_of([&] { lt::norm(x, std::nan("")); }).find("the order p must be a number") != std::string::npos);
    CHECK_THROWS_AS(lt::norm(x, std::nan("")), lt::ValueError);
    const std::string nuc = error_of([&] { lt::norm(x, "nuc"); });
    CHECK(nuc.find("\"nuc\"") != std::string::npos);
    CHECK(nuc.find("singular value") != std::string::npos);
    CHECK_THROWS_AS(lt::norm(x, "nuc"), lt::ValueError);
    CHECK(error_of([&] { lt::norm(x, "max"); }).find("unknown ord \"max\"") != std::string::npos);
    CHECK_THROWS_AS(lt::norm(x, 2, 2), lt::AxisError);
    CHECK_THROWS_AS(lt::norm(x, 2, {0, -2}), lt::AxisError);
    CHECK(error_of([&] { lt::norm(x, 2, {2}); }).find("lt::norm: axis 2 is out of range") != std::string::npos);
}

// ------------------------------------------------------------------------------------- einsum

/// The reference cases: (subscripts, the reference's explicit form).
const std::vector<std::pair<std::string, std::string>> kEinsumCases{
    {"ij->ji", "ij->ji"}, {"ij->i", "ij->i"}, {"ij->j", "ij->j"}, {"ij->", "ij->"}, {"i->", "i->"}, {"i->i", "i->i"},
    {"ii->i", "ii->i"}, {"ii->", "ii->"}, {"iii->i", "iii->i"}, {"iij->ji", "iij->ji"}, {"ijk->kij", "ijk->kij"},
    {"ijk->jk", "ijk->jk"}, {"iji->j", "iji->j"}, {"i,j->ij", "i,j->ij"}, {"i,i->", "i,i->"}, {"i,i->i", "i,i->i"},
    {"ij,jk->ik", "ij,jk->ik"}, {"ij,kj->ik", "ij,kj->ik"}, {"ji,jk->ki", "ji,jk->ki"}, {"ij,jk->", "ij,jk->"},
    {"ij,ij->ij", "ij,ij->ij"}, {"ij,ij->", "ij,ij->"}, {"ij,ji->", "ij,ji->"}, {"ij,j->i", "ij,j->i"},
    {"j,ij->i", "j,ij->i"}, {"bij,bjk->bik", "bij,bjk->bik"}, {"bij,bkj->bki", "bij,bkj->bki"},
    {"bji,bjk->ibk", "bji,bjk->ibk"}, {"bi,bi->b", "bi,bi->b"}, {"ijk,jl->ilk", "ijk,jl->ilk"},
    {"abc,cd->abd", "abc,cd->abd"}, {"ijk,ikl->jl", "ijk,ikl->jl"}, {"i,ij,j->", "i,ij,j->"},
    {"ab,bc,cd->ad", "ab,bc,cd->ad"}, {"i,i,i->i", "i,i,i->i"}, {"bn,anm,bm->ba", "bn,anm,bm->ba"},
    {"ij,kl->ijkl", "ij,kl->ijkl"}, {"ij,kl->ljki", "ij,kl->ljki"}, {"iij,jk->ik", "iij,jk->ik"},
    {"ab,cd->", "ab,cd->"}, {"ij,jk,kl,lm->mi", "ij,jk,kl,lm->mi"}, {"Ab,bC->CA", "Ab,bC->CA"}, {"ab,ab,ab->", "ab,ab,ab->"},
    // Implicit outputs: the letters used once, in ASCII order (upper case first).
    {"ij,jk", "ij,jk->ik"}, {"ba", "ba->ab"}, {"ii", "ii->"}, {"i,i", "i,i->"}, {"ij", "ij->ij"}, {"bA", "bA->Ab"},
    {"ij,jk,kl", "ij,jk,kl->il"}, {"iij", "iij->j"}, {"kj,ji", "kj,ji->ik"},
    // Spaces are ignored.
    {" i j , j k -> i k ", "ij,jk->ik"}};

/// Checks each case on random operands of T whose extents are letter_extent's.
template <class T>
void check_einsum_cases(const std::vector<std::pair<std::string, std::string>>& cases) {
    for_each_device([&](lt::Device) {
        unsigned seed = 10;
        for (const auto& [spec, ref] : cases) {
            std::string letters;
            for (char c : spec)
                if (c != ' ') letters += c;
            check_einsum<T>(spec, ref, einsum_operands<T>(letters, seed += 5));
        }
    });
}

TEST_CASE("einsum: transposes, sums, diagonals and contractions against a loop reference") {
    check_einsum_cases<float>(kEinsumCases);
}

TEST_CASE("einsum: double, a case of each kind") {
    check_einsum_cases<double>({{"ij,jk->ik", "ij,jk->ik"}, {"bij,bkj->bki", "bij,bkj->bki"}, {"ijk,ikl->jl", "ijk,ikl->jl"},
                                {"ab,bc,cd->ad", "ab,bc,cd->ad"}, {"ii->", "ii->"}, {"iij,jk->ik", "iij,jk->ik"},
                                {"i,j->ij", "i,j->ij"}, {"bi,bi->b", "bi,bi->b"}, {"ijk->kij", "ijk->kij"}});
}

TEST_CASE("einsum: extents of 0 and 1, 0-d operands") {
    for_each_device([](lt::Device) {
        unsigned seed = 100;
        check_float_einsum("ij,jk->ik", "ij,jk->ik", {{3, 0}, {0, 4}}, seed);  // nothing to sum: zeros
        check_float_einsum("ij,jk->ik", "ij,jk->ik", {{0, 2}, {2, 4}}, seed);  // no rows
        check_float_einsum("ii->i", "ii->i", {{0, 0}}, seed);
        check_float_einsum("ii->", "ii->", {{0, 0}}, seed);
        check_float_einsum("ii->i", "ii->i", {{1, 1}}, seed);
        check_float_einsum("iii->", "iii->", {{1, 1, 1}}, seed);
        check_float_einsum("ij->i", "ij->i", {{3, 0}}, seed);
        check_float_einsum("iij->ij", "iij->ij", {{2, 2, 0}}, seed);
        const auto huge_empty = lt::zeros<float>({0, 3'000'000, 3'000'000, 3'000'000});  // n^3 past 64 bits
        CHECK(lt::einsum("jiii->ij", huge_empty).shape() == lt::Shape{3'000'000, 0});
        CHECK(lt::einsum("jiii->ij", huge_empty).to_vector().empty());
        CHECK(lt::einsum("jabc,kabc->jk", huge_empty, huge_empty).shape() == lt::Shape{0, 0});
        check_close(lt::einsum("jabc,kabc->k", lt::zeros<float>({2, 0, 3'000'000, 3'000'000}), huge_empty.reshape({0, 0, 3'000'000, 3'000'000})),
                    Ref{{0}, {}}, 0, 0);
        check_close(lt::einsum("jabc,jabc->j", lt::ones<float>({2, 0, 3'000'000, 3'000'000}), lt::ones<float>({2, 0, 3'000'000, 3'000'000})),
                    Ref{{2}, {0, 0}}, 0, 0);  // sums over nothing
        // An extent of 1 broadcasts against the letter's other extents (NumPy, PyTorch).
        check_float_einsum("ij,jk->ik", "ij,jk->ik", {{3, 1}, {4, 5}}, seed);
        check_float_einsum("ij,ij->ij", "ij,ij->ij", {{3, 1}, {1, 4}}, seed);
        check_float_einsum("bij,bjk->bik", "bij,bjk->bik", {{1, 2, 3}, {4, 3, 2}}, seed);
        check_float_einsum("ii,i->i", "ii,i->i", {{1, 1}, {3}}, seed);
        // 0-d operands: an empty subscript.
        check_float_einsum(",ij->ij", ",ij->ij", {{}, {2, 3}}, seed);
        check_float_einsum("->", "->", {{}}, seed);
        check_float_einsum("i,->", "i,->", {{4}, {}}, seed);
    });
}

TEST_CASE("einsum: ellipses broadcast like NumPy's") {
    for_each_device([](lt::Device) {
        unsigned seed = 200;
        check_float_einsum("...ij,...jk->...ik", "xyij,yjk->xyik", {{2, 1, 3, 4}, {5, 4, 2}}, seed);
        check_float_einsum("...ij,...jk", "bij,bjk->bik", {{2, 3, 4}, {2, 4, 5}}, seed);  // implicit: ... first
        check_float_einsum("...ii->...i", "aii->ai", {{2, 3, 3}}, seed);
        check_float_einsum("i...->...", "iab->ab", {{3, 2, 4}}, seed);
        check_float_einsum("...,...->...", "ab,b->ab", {{3, 1}, {4}}, seed);
        check_float_einsum("i...j,j...->...i", "iabj,jab->abi", {{2, 3, 4, 5}, {5, 3, 4}}, seed);
        check_float_einsum("...ij->...ji", "ij->ji", {{3, 4}}, seed);  // ... covering nothing
        check_float_einsum("ij...,jk->ik...", "ijx,jk->ikx", {{2, 3, 4}, {3, 2}}, seed);
        check_float_einsum("ij,jk->...ik", "ij,jk->ik", {{2, 3}, {3, 2}}, seed);  // ... in the output only
    });
}

TEST_CASE("einsum: non-contiguous and lazy operands") {
    for_each_device([](lt::Device) {
        const Ref a = random_ref<float>({4, 4}, 300), b = random_ref<float>({4, 3}, 301), c = random_ref<float>({3, 4, 4}, 302);
        const auto A = make_tensor<float>(a), B = make_tensor<float>(b), C = make_tensor<float>(c);
        const Ref at = permute(a, {1, 0}), ct = permute(c, {2, 0, 1});
        Ref mag;
        Ref expected = ref_einsum("ii->i", {at}, &mag);
        check_einsum_close(lt::einsum("ii->i", A.t()), expected, mag);
        expected = ref_einsum("ii->i", {map(a, [](double v) { return v * 2 + 1; })}, &mag);
        check_einsum_close(lt::einsum("ii->i", A * 2.0f + 1.0f), expected, mag);
        expected = ref_einsum("kbj,ji->bik", {ct, at}, &mag);
        check_einsum_close(lt::einsum("kbj,ji->bik", C.permute({2, 0, 1}), A.t()), expected, mag);
        expected = ref_einsum("aii,ij->aj", {c, b}, &mag);
        check_einsum_close(lt::einsum("aii,ij->aj", C, B), expected, mag);
        expected = ref_einsum("aij,ai->j", {c, ref_einsum("aii->ai", {c})}, &mag);
        check_einsum_close(lt::einsum("aij,ai->j", C, lt::einsum("aii->ai", C)), expected, mag);
        const Ref v = random_ref<float>({4}, 303);
        expected = ref_einsum("ii->i", {broadcast(Ref{{1, 4}, v.v}, {4, 4})}, &mag);
        check_einsum_close(lt::einsum("ii->i", make_tensor<float>(v).reshape({1, 4}).expand({4, 4})), expected, mag);
        const lt::Tensor<float> realized_transpose = A.t().realize();
        expected = ref_einsum("ii->i", {at}, &mag);
        check_einsum_close(lt::einsum("ii->i", realized_transpose), expected, mag);
        // Rows 1..3 with the columns reversed: a window with a negative stride.
        const auto window = B.slice(0, 1, 4).slice(1, {}, {}, -1);
        const Ref w = ref_of({3, 3}, [&](const std::vector<std::int64_t>& i) { return b.at({i[0] + 1, 2 - i[1]}); });
        expected = ref_einsum("ij->ji", {w}, &mag);
        check_einsum_close(lt::einsum("ij->ji", window), expected, mag);
        expected = ref_einsum("ii->", {w}, &mag);
        check_einsum_close(lt::einsum("ii->", window), expected, mag);
    });
}

TEST_CASE_TEMPLATE("einsum: integer products are exact and wrap in their type; bool is or-of-ands", T, int32_t, int64_t,
                   uint8_t, bool) {
    for_each_device([](lt::Device) {
        unsigned seed = 400;
        for (const std::string spec : {"ij,jk->ik", "bij,bjk->bik", "ii->", "ij->j", "i,j->ij", "ij,ij->i", "ij,j->i",
                                       "ab,bc,cd->ad", "iij,jk->ik"}) {
            INFO("einsum \"" << spec << "\"");
            std::vector<Ref> ops;
            for (const Ref& r : einsum_operands<float>(spec, seed += 5)) ops.push_back(random_ref<T>(r.shape, seed++, 0, 9));
            Ref expected = ref_einsum(spec, ops);
            for (double& e : expected.v) {
                if constexpr (std::is_same_v<T, bool>) e = e != 0;
                else if constexpr (std::is_same_v<T, uint8_t>) e = static_cast<double>(static_cast<std::uint8_t>(static_cast<std::int64_t>(e)));
            }
            const auto [variadic, listed] = run_einsum<T>(spec, ops);
            check_close(variadic, expected, 0, 0);
            check_close(listed, expected, 0, 0);
        }
    });
}

TEST_CASE("einsum: operands meet in their promoted type; half computes in float") {
    for_each_device([](lt::Device) {
        const Ref a = random_ref<int32_t>({3, 4}, 500), b = random_ref<float>({4, 2}, 501), c = random_ref<double>({2}, 502);
        Ref mag;
        const Ref ab = ref_einsum("ij,jk->ik", {a, b}, &mag);
        auto p = lt::einsum("ij,jk->ik", make_tensor<int32_t>(a), make_tensor<float>(b));
        static_assert(std::is_same_v<decltype(p), lt::Tensor<float>>);
        check_einsum_close(p, ab, mag);
        auto q = lt::einsum("ij,jk,k->i", make_tensor<int32_t>(a), make_tensor<float>(b), make_tensor<double>(c));
        static_assert(std::is_same_v<decltype(q), lt::Tensor<double>>);
        const Ref abc = ref_einsum("ij,jk,k->i", {a, b, c}, &mag);
        check_einsum_close(q, abc, mag);
        auto r = lt::einsum("ij,j->i", make_tensor<uint8_t>(random_ref<uint8_t>({2, 3}, 503, 0, 9)), make_tensor<bool>(random_ref<bool>({3}, 504)));
        static_assert(std::is_same_v<decltype(r), lt::Tensor<uint8_t>>);
        const Ref h1 = random_ref<lt::half>({5, 6}, 505), h2 = random_ref<lt::half>({6, 3}, 506);
        auto h = lt::einsum("ij,jk->ki", make_tensor<lt::half>(h1), make_tensor<lt::half>(h2));
        static_assert(std::is_same_v<decltype(h), lt::Tensor<lt::half>>);
        check_einsum_close(h, ref_einsum("ij,jk->ki", {h1, h2}, &mag), mag);
        check_einsum_close(lt::einsum("ii->", make_tensor<lt::half>(random_ref<lt::half>({4, 4}, 507))),
                           ref_einsum("ii->", {random_ref<lt::half>({4, 4}, 507)}, &mag), mag);
    });
}

TEST_CASE("einsum: what it schedules") {
    for_each_device([](lt::Device) {
        const auto a = make_tensor<float>(random_ref<float>({4, 5, 6}, 600));
        const auto b = make_tensor<float>(random_ref<float>({4, 6, 3}, 601));
        // A batched product is exactly matmul: one GEMM reading both operands in place.
        const auto bmm = lt::schedule(lt::einsum("bij,bjk->bik", a, b));
        CHECK(count_kind(bmm, lt::ScheduleItem::Kind::Matmul) == 1);
        CHECK(lt::kernel_count(bmm) == 0);
        // Operands transposed in the subscripts are read through strides.
        CHECK(lt::kernel_count(lt::schedule(lt::einsum("bji,bjk->bik", a.permute({0, 2, 1}), b))) == 0);
        CHECK(count_kind(lt::schedule(lt::einsum("bij,bjk->bki", a, b)), lt::ScheduleItem::Kind::Matmul) == 1);
        // A transpose is a view; a sum, a trace or an element-wise product one kernel.
        CHECK(lt::kernel_count(lt::schedule(lt::einsum("bij->jbi", a))) == 0);
        CHECK(lt::kernel_count(lt::schedule(lt::einsum("bij->b", a))) == 1);
        CHECK(lt::kernel_count(lt::schedule(lt::einsum("bii->", b.slice(1, 0, 3)))) == 1);
        // A diagonal: a view of a buffer, also of a transposed one (einsum takes the transpose
        // into its subscripts), fused into the kernel of a lazy one; gathered in place from a
        // strided buffer (no copy first).
        const auto square = make_tensor<float>(random_ref<float>({5, 5}, 602));
        CHECK(lt::kernel_count(lt::schedule(lt::einsum("ii->i", square))) == 0);
        CHECK(lt::kernel_count(lt::schedule(lt::einsum("ii->i", square.t()))) == 0);
        CHECK(lt::kernel_count(lt::schedule(lt::einsum("ii", (square * 2.0f).t()))) == 1);
        const lt::Tensor<float> realized_transpose = square.t().realize();  // a buffer with strides (1, 5)
        const lt::Tensor<float> gathered[] = {lt::einsum("ii->i", realized_transpose), lt::einsum("ii", realized_transpose),
                                              lt::einsum("jii->j", a.slice(1, 0, 3).slice(2, 3, 6).permute({0, 2, 1})),
                                              lt::einsum("ii->i", square.slice(1, {}, {}, -1))};
        for (const auto& g : gathered) {
            const auto items = lt::schedule(g);
            REQUIRE(lt::kernel_count(items) == 1);
            CHECK(items[0].ops[0] == "gather");  // no copy first
        }
        const auto mul = lt::schedule(lt::einsum("bij,bij->bij", a, a * 2.0f));
        CHECK(count_kind(mul, lt::ScheduleItem::Kind::Matmul) == 0);
        CHECK(lt::kernel_count(mul) == 1);
        // A dot product per batch element is a product and a sum: one kernel, no GEMM.
        const lt::Tensor<float> doubled = a * 2.0f, reversed = a.permute({2, 1, 0});
        for (const auto& c : {std::pair{"bij,bij->ij", doubled}, {"bij,bij->", doubled}, {"bij,jib->b", reversed}}) {
            const char* dots = c.first;  // (not a structured binding: INFO's lambda captures it)
            const lt::Tensor<float>& other = c.second;
            INFO(dots);
            const auto items = lt::schedule(lt::einsum(dots, a, other));
            CHECK(count_kind(items, lt::ScheduleItem::Kind::Matmul) == 0);
            CHECK(lt::kernel_count(items) == 1);
        }
    });
}

TEST_CASE("einsum: errors name the subscripts, the operand and the extents") {
    const auto m23 = lt::ones<float>({2, 3}), m45 = lt::ones<float>({4, 5}), m33 = lt::ones<float>({3, 3});
    std::string e = error_of([&] { lt::einsum("ij,jk->ik", m23); });
    CHECK(e == "einsum: \"ij,jk->ik\" has subscripts for 2 operands but 1 was given");
    CHECK_THROWS_AS(lt::einsum("ij,jk->ik", m23), lt::ValueError);
    CHECK_THROWS_AS(lt::einsum("ij", m23, m23), lt::ValueError);
    e = error_of([&] { lt::einsum("ij,jk->ik", m23, m45); });
    CHECK(e == "einsum: subscript 'j' has extent 3 in operand 0 (shape [2, 3]) but 4 in operand 1 (shape [4, 5]) in "
               "\"ij,jk->ik\"");
    CHECK_THROWS_AS(lt::einsum("ij,jk->ik", m23, m45), lt::ShapeError);
    e = error_of([&] { lt::einsum("ij->k", m23); });
    CHECK(e == "einsum: the output \"k\" names subscript 'k', which no operand has, in \"ij->k\"");
    e = error_of([&] { lt::einsum("ij->ii", m23); });
    CHECK(e == "einsum: subscript 'i' appears twice in the output \"ii\" of \"ij->ii\"");
    e = error_of([&] { lt::einsum("i1,j", m23, m23); });
    CHECK(e.find("einsum: invalid character '1' in the subscript of operand 0 of \"i1,j\"") == 0);
    CHECK_THROWS_AS(lt::einsum("i_j", m23), lt::ValueError);
    e = error_of([&] { lt::einsum("ijk->i", m23); });
    CHECK(e == "einsum: operand 0 has 2 dimensions (shape [2, 3]) but its subscript \"ijk\" names 3 in \"ijk->i\"");
    CHECK_THROWS_AS(lt::einsum("ijk->i", m23), lt::ShapeError);
    CHECK_THROWS_AS(lt::einsum("i->i", m23), lt::ShapeError);
    e = error_of([&] { lt::einsum("ij...k->i", m23); });
    CHECK(e.find("names at least 3") != std::string::npos);
    e = error_of([&] { lt::einsum("ii", m23); });
    CHECK(e == "einsum: subscript 'i' is repeated in operand 0 (shape [2, 3]) over extents 2 and 3; a repeated "
               "subscript takes a diagonal, which needs equal extents (in \"ii\")");
    CHECK_THROWS_AS(lt::einsum("ii", m23), lt::ShapeError);
    e = error_of([&] { lt::einsum("i..j->ij", m23); });
    CHECK(e.find("a '.' that is not part of an ellipsis (...)") != std::string::npos);
    e = error_of([&] { lt::einsum("...i...->i", m23); });
    CHECK(e.find("more than one ellipsis") != std::string::npos);
    e = error_of([&] { lt::einsum("...j->j", m23); });
    CHECK(e == "einsum: the operands' ... covers 1 dimension but the output \"j\" has no ...; write ... in the output "
               "(sum those axes afterwards if they are not wanted) in \"...j->j\"");
    e = error_of([&] { lt::einsum("...i,...i->...i", m23, lt::ones<float>({4, 3})); });
    CHECK(e.find("the dimensions that ... covers do not broadcast: extent 2 in operand 0 (shape [2, 3]) vs 4 in "
                 "operand 1 (shape [4, 3])") != std::string::npos);
    e = error_of([&] { lt::einsum("i->i->i", lt::ones<float>({2})); });
    CHECK(e.find("more than one ->") != std::string::npos);
    e = error_of([&] { lt::einsum("ij-ij", m23); });
    CHECK(e.find("invalid character '-'") != std::string::npos);
    CHECK(error_of([&] { lt::einsum("ij,jk", std::vector<lt::Tensor<float>>{}); }).find("needs at least one operand") !=
          std::string::npos);
    CHECK_NOTHROW(lt::einsum("ij,jk->ik", m33, m33));
    for (lt::Device d : test_devices())
        if (d != lt::Device::host())
            CHECK_THROWS_AS(lt::einsum("ij,jk", m33, lt::ones<float>({3, 3}, d)), lt::DeviceError);
}

TEST_CASE("README: norm and einsum as written there") {
    for_each_device([](lt::Device) {
        const Ref xr = random_ref<float>({8, 16}, 700), ar = random_ref<float>({4, 8, 16}, 701), br = random_ref<float>({4, 16, 2}, 702);
        const lt::Tensor<float> x = make_tensor<float>(xr), a = make_tensor<float>(ar), b = make_tensor<float>(br);
        lt::Tensor<float> rows = lt::norm(x, 2, {1});               // one kernel
        lt::Tensor<float> largest = lt::norm(x, lt::inf);           // max |x|
        lt::Tensor<float> bmm = lt::einsum("bij,bjk->bik", a, b);   // one GEMM
        lt::Tensor<float> trace = lt::einsum("ii", lt::matmul(x, x.t()));
        check_close(rows, ref_norm(xr, 2, {1}, false), 1e-5, 0);
        check_close(largest, ref_norm(xr, kInf, {}, false), 0, 0);
        Ref mag;
        const Ref expected = ref_einsum("bij,bjk->bik", {ar, br}, &mag);
        check_einsum_close(bmm, expected, mag);
        check_einsum_close(lt::einsum("bij,bjk->bik", {a, b}), expected, mag);  // a braced list
        const Ref tr = ref_einsum("ij,ij->", {xr, xr}, &mag);
        check_einsum_close(trace, tr, mag);
    });
}

}  // namespace linalg_tests
