// SPDX-License-Identifier: MIT
// Automatic differentiation: every rule against central finite differences of the function in
// double precision, on every test device; vjp, grad and value_and_grad, stop_gradient,
// gradients of gradients, PyTorch's choices at non-differentiable points, kernel counts of the
// backward passes, memory, and bad input.
#include "common.hpp"

#include <functional>

namespace {

using Tensors = std::vector<lt::Tensor<double>>;
using Fn = std::function<lt::Tensor<double>(const Tensors&)>;

Tensors tensors_of(const std::vector<Ref>& refs) {
    Tensors out;
    for (const Ref& r : refs) out.push_back(make_tensor<double>(r));
    return out;
}

/// sum(f(inputs) * c), computed in double on the host from f's realized value.
double weighted_value(const Fn& f, const std::vector<Ref>& inputs, const Ref& c) {
    const std::vector<double> y = f(tensors_of(inputs)).to_vector();
    REQUIRE(y.size() == c.v.size());
    double s = 0;
    for (std::size_t i = 0; i < y.size(); ++i) s += y[i] * c.v[i];
    return s;
}

/// Checks lt::vjp of f (cotangent c, random) against central differences of sum(f * c) in every
/// element of every input, within tol * (1 + |difference|).
void check_gradients(const Fn& f, const std::vector<Ref>& inputs, double tol = 1e-6, unsigned seed = 99) {
    Tensors xs = tensors_of(inputs);
    lt::Tensor<double> y = f(xs);
    const Ref c = random_ref<double>(y.shape(), seed, 0.5, 1.5);
    const std::vector<lt::Tensor<double>> grads = lt::vjp({y}, xs, {make_tensor<double>(c)});
    REQUIRE(grads.size() == inputs.size());
    std::vector<lt::TensorRef> all{y};
    for (const auto& g : grads) all.emplace_back(g);
    lt::realize(all);
    const double h = 1e-6;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        CHECK(grads[i].shape() == inputs[i].shape);
        const std::vector<double> analytic = grads[i].to_vector();
        for (std::size_t j = 0; j < inputs[i].v.size(); ++j) {
            std::vector<Ref> plus = inputs, minus = inputs;
            plus[i].v[j] += h;
            minus[i].v[j] -= h;
            const double fd = (weighted_value(f, plus, c) - weighted_value(f, minus, c)) / (2 * h);
            INFO("input " << i << ", element " << j << ": analytic " << analytic[j] << ", finite difference " << fd);
            CHECK(std::fabs(analytic[j] - fd) <= tol * (1 + std::fabs(fd)));
        }
    }
}

struct UnaryCase {
    const char* name;
    std::function<lt::Tensor<double>(const lt::Tensor<double>&)> f;
    double lo, hi;  // a domain where the function is smooth
};

}  // namespace

TEST_CASE("grad: every floating unary op against finite differences") {
    using T = lt::Tensor<double>;
    const std::vector<UnaryCase> cases = {
        {"neg", [](const T& x) { return T(-x); }, -2, 2},
        {"abs", [](const T& x) { return T(lt::abs(x)); }, 0.1, 2},
        {"abs (negative)", [](const T& x) { return T(lt::abs(x)); }, -2, -0.1},
        {"relu", [](const T& x) { return T(lt::relu(x)); }, 0.1, 2},
        {"relu (negative)", [](const T& x) { return T(lt::relu(x)); }, -2, -0.1},
        {"exp", [](const T& x) { return T(lt::exp(x)); }, -2, 2},
        {"log", [](const T& x) { return T(lt::log(x)); }, 0.2, 3},
        {"sqrt", [](const T& x) { return T(lt::sqrt(x)); }, 0.2, 3},
        {"sin", [](const T& x) { return T(lt::sin(x)); }, -3, 3},
        {"cos", [](const T& x) { return T(lt::cos(x)); }, -3, 3},
        {"tanh", [](const T& x) { return T(lt::tanh(x)); }, -2, 2},
        {"sigmoid", [](const T& x) { return T(lt::sigmoid(x)); }, -4, 4},
        {"exp2", [](const T& x) { return T(lt::exp2(x)); }, -2, 2},
        {"log2", [](const T& x) { return T(lt::log2(x)); }, 0.2, 3},
        {"rsqrt", [](const T& x) { return T(lt::rsqrt(x)); }, 0.2, 3},
        {"reciprocal", [](const T& x) { return T(lt::reciprocal(x)); }, 0.2, 3},
        {"tan", [](const T& x) { return T(lt::tan(x)); }, -1.2, 1.2},
        {"gelu", [](const T& x) { return T(lt::gelu(x)); }, -4, 4},
        {"silu", [](const T& x) { return T(lt::silu(x)); }, -4, 4},
        {"log1p", [](const T& x) { return T(lt::log1p(x)); }, -0.8, 3},
        {"expm1", [](const T& x) { return T(lt::expm1(x)); }, -2, 2},
        {"erf", [](const T& x) { return T(lt::erf(x)); }, -2, 2},
        {"erfc", [](const T& x) { return T(lt::erfc(x)); }, -2, 2},
        {"asin", [](const T& x) { return T(lt::asin(x)); }, -0.9, 0.9},
        {"acos", [](const T& x) { return T(lt::acos(x)); }, -0.9, 0.9},
        {"atan", [](const T& x) { return T(lt::atan(x)); }, -3, 3},
        {"sinh", [](const T& x) { return T(lt::sinh(x)); }, -2, 2},
        {"cosh", [](const T& x) { return T(lt::cosh(x)); }, -2, 2},
        {"asinh", [](const T& x) { return T(lt::asinh(x)); }, -3, 3},
        {"acosh", [](const T& x) { return T(lt::acosh(x)); }, 1.2, 4},
        {"atanh", [](const T& x) { return T(lt::atanh(x)); }, -0.9, 0.9},
        {"floor", [](const T& x) { return T(lt::floor(x) + x * 0.0); }, 0.1, 0.9},
        {"softplus", [](const T& x) { return T(lt::softplus(x)); }, -4, 4},
        {"leaky_relu", [](const T& x) { return T(lt::leaky_relu(x, 0.1)); }, -2, 2},
        {"elu", [](const T& x) { return T(lt::elu(x)); }, -2, 2},
        {"clamp", [](const T& x) { return T(lt::clamp(x, -1.0, 1.0)); }, -2, 2},
        {"pow by a scalar", [](const T& x) { return T(lt::pow(x, 2.5)); }, 0.2, 3},
        {"a scalar to the power", [](const T& x) { return T(lt::pow(1.7, x)); }, -2, 2},
    };
    for_each_device([&](lt::Device) {
        for (const UnaryCase& c : cases) {
            INFO("op: " << c.name);
            Ref x = random_ref<double>({2, 3}, 11, c.lo, c.hi);
            if (std::string(c.name).find("relu") != std::string::npos || std::string(c.name) == "elu" ||
                std::string(c.name) == "clamp")
                for (double& v : x.v)
                    if (std::fabs(v) < 0.05 || std::fabs(std::fabs(v) - 1) < 0.05) v += 0.2;  // away from kinks
            check_gradients([&](const Tensors& in) { return c.f(in[0]); }, {x});
        }
    });
}

TEST_CASE("grad: every floating binary op, with broadcasting, against finite differences") {
    using T = lt::Tensor<double>;
    struct BinaryCase {
        const char* name;
        std::function<T(const T&, const T&)> f;
        double lo, hi;
    };
    const std::vector<BinaryCase> cases = {
        {"add", [](const T& a, const T& b) { return T(a + b); }, -2, 2},
        {"sub", [](const T& a, const T& b) { return T(a - b); }, -2, 2},
        {"mul", [](const T& a, const T& b) { return T(a * b); }, -2, 2},
        {"div", [](const T& a, const T& b) { return T(a / b); }, 0.5, 2},
        {"pow", [](const T& a, const T& b) { return T(lt::pow(a, b)); }, 0.3, 2},
        {"maximum", [](const T& a, const T& b) { return T(lt::maximum(a, b)); }, -2, 2},
        {"minimum", [](const T& a, const T& b) { return T(lt::minimum(a, b)); }, -2, 2},
        {"fmod", [](const T& a, const T& b) { return T(lt::fmod(a, b)); }, 0.3, 2},
        {"remainder", [](const T& a, const T& b) { return T(lt::remainder(a, b)); }, -2, -0.3},
        {"atan2", [](const T& a, const T& b) { return T(lt::atan2(a, b)); }, -2, 2},
        {"hypot", [](const T& a, const T& b) { return T(lt::hypot(a, b)); }, -2, 2},
        {"copysign", [](const T& a, const T& b) { return T(lt::copysign(a, b)); }, -2, 2},
    };
    for_each_device([&](lt::Device) {
        for (const BinaryCase& c : cases) {
            INFO("op: " << c.name);
            Ref a = random_ref<double>({2, 1, 3}, 21, c.lo, c.hi), b = random_ref<double>({4, 3}, 22, c.lo, c.hi);
            if (std::string(c.name) == "fmod" || std::string(c.name) == "remainder") {
                // Away from the quotient's integer steps, where the function jumps.
                for (double& v : b.v) v = c.lo < 0 ? -0.7 : 0.7;
                for (double& v : a.v) v = std::floor(v / 0.7) * 0.7 + 0.35;
            }
            check_gradients([&](const Tensors& in) { return c.f(in[0], in[1]); }, {a, b});
        }
    });
}

TEST_CASE("grad: where, casts, reductions, var, std, logsumexp, cumsum") {
    using T = lt::Tensor<double>;
    for_each_device([&](lt::Device) {
        const Ref x = random_ref<double>({3, 4}, 31), y = random_ref<double>({4}, 32);
        check_gradients([](const Tensors& in) { return T(lt::where(in[0] > 0.0, in[0] * 2.0, in[1])); }, {x, y});
        // Through float32 and back (finite differences in float are too coarse: exact values).
        auto xd = make_tensor<double>(x);
        CHECK(lt::grad(lt::sum(lt::cast<double>(lt::cast<float>(xd) * 3.0f)), xd).to_vector() == std::vector<double>(12, 3.0));
        auto xf = lt::cast<float>(xd);
        lt::Tensor<float> xs = xf;
        auto gf = lt::grad(lt::sum(lt::cast<double>(xs) * 0.25), xs);
        static_assert(std::is_same_v<decltype(gf), lt::Tensor<float>>);
        CHECK(gf.to_vector() == std::vector<float>(12, 0.25f));
        check_gradients([](const Tensors& in) { return T(in[0].sum()); }, {x});
        check_gradients([](const Tensors& in) { return T(in[0].sum(0)); }, {x});
        check_gradients([](const Tensors& in) { return T(in[0].sum(1, true)); }, {x});
        check_gradients([](const Tensors& in) { return T(in[0].mean(1)); }, {x});
        check_gradients([](const Tensors& in) { return T(in[0].max(1)); }, {x});
        check_gradients([](const Tensors& in) { return T(in[0].min()); }, {x});
        check_gradients([](const Tensors& in) { return T(in[0].prod(0)); }, {x});
        check_gradients([](const Tensors& in) { return T(in[0].var(1)); }, {x});
        check_gradients([](const Tensors& in) { return T(in[0].std({0, 1}, false, 0)); }, {x});
        check_gradients([](const Tensors& in) { return T(lt::logsumexp(in[0], 1)); }, {x});
        check_gradients([](const Tensors& in) { return T(lt::cumsum(in[0], 1)); }, {x});
        check_gradients([](const Tensors& in) { return T(lt::cumsum(in[0], 0)); }, {x});
        check_gradients([](const Tensors& in) { return T(lt::cumprod(in[0], 1)); }, {x});
        check_gradients([](const Tensors& in) { return T(lt::cumprod(in[0].transpose(0, 1), 0)); }, {x});
    });
}

TEST_CASE("grad: cumprod through zeros (the product of the others), second order of cumsum") {
    for_each_device([&](lt::Device d) {
        // Rows: no zero; one zero; two zeros. y[j] = x[0] * ... * x[j]; L = sum_j w[j] y[j].
        const std::vector<double> xs{2, 3, 4, 5, 2, 0, 3, 4, 0, 3, 0, 5};
        const std::vector<double> ws{1, -1, 2, 0.5, 1, 2, -1, 3, 2, 1, -1, 1};
        auto x = lt::tensor<double>(xs, {3, 4}, d);
        auto w = lt::tensor<double>(ws, {3, 4}, d);
        auto g = lt::grad((lt::cumprod(x, 1) * w).sum(), x);
        // By hand: dL/dx[i] = sum_{j >= i} w[j] * prod_{t <= j, t != i} x[t].
        std::vector<double> want(12, 0.0);
        for (int r = 0; r < 3; ++r)
            for (int i = 0; i < 4; ++i)
                for (int j = i; j < 4; ++j) {
                    double p = 1;
                    for (int t = 0; t <= j; ++t)
                        if (t != i) p *= xs[static_cast<std::size_t>(4 * r + t)];
                    want[static_cast<std::size_t>(4 * r + i)] += ws[static_cast<std::size_t>(4 * r + j)] * p;
                }
        CHECK(g.to_vector() == want);
        // cumsum is linear: its gradient is a reverse cumsum of the weights, exact.
        auto gs = lt::grad((lt::cumsum(x, 1) * w).sum(), x).to_vector();
        for (int r = 0; r < 3; ++r)
            for (int i = 0; i < 4; ++i) {
                double tail = 0;
                for (int j = i; j < 4; ++j) tail += ws[static_cast<std::size_t>(4 * r + j)];
                CHECK(gs[static_cast<std::size_t>(4 * r + i)] == tail);
            }
    });
}

TEST_CASE("grad: prod with zeros, max and min ties, relu and abs at 0 (PyTorch's choices)") {
    for_each_device([&](lt::Device d) {
        // prod: the product of the others; with two zeros every gradient is 0.
        auto x = lt::tensor<double>({2, 0, 3, 4, 0, 0}, {2, 3}, d);
        auto g = lt::grad(x.prod(1).sum(), x);
        CHECK(g.to_vector() == std::vector<double>{0, 6, 0, 0, 0, 0});
        // max and min ties split the gradient evenly; relu'(0) = 0, abs'(0) = 0.
        auto t = lt::tensor<double>({1, 3, 3, 0}, {4}, d);
        CHECK(lt::grad(t.max(), t).to_vector() == std::vector<double>{0, 0.5, 0.5, 0});
        CHECK(lt::grad(t.min(), t).to_vector() == std::vector<double>{0, 0, 0, 1});
        CHECK(lt::grad(lt::sum(lt::relu(t - 3.0)), t).to_vector() == std::vector<double>{0, 0, 0, 0});
        CHECK(lt::grad(lt::sum(lt::abs(t - 3.0)), t).to_vector() == std::vector<double>{-1, 0, 0, -1});
        // maximum of two equal operands: half each.
        auto a = lt::tensor<double>({1, 2}, {2}, d), b = lt::tensor<double>({1, 5}, {2}, d);
        auto gab = lt::grad(lt::sum(lt::maximum(a, b)), {a, b});
        CHECK(gab[0].to_vector() == std::vector<double>{0.5, 0});
        CHECK(gab[1].to_vector() == std::vector<double>{0.5, 1});
        // pow at a zero base: d/db 0^b = 0 for b >= 0, d/da a^0 = 0.
        auto base = lt::tensor<double>({0, 0}, {2}, d), expo = lt::tensor<double>({2, 0}, {2}, d);
        auto gp = lt::grad(lt::sum(lt::pow(base, expo)), {base, expo});
        CHECK(gp[0].to_vector() == std::vector<double>{0, 0});
        CHECK(gp[1].to_vector() == std::vector<double>{0, 0});
    });
}

TEST_CASE("grad: the composites that were ops, at 0 and at their extremes, against their derivatives") {
    // sigmoid, silu, gelu, remainder, floor_divide and sign have no rules of their own: their
    // gradients come from their primitives (rsqrt, an op again, has one). The derivatives by hand,
    // in long double.
    using LD = long double;
    auto sig = [](LD x) { return 1 / (1 + std::exp(-x)); };
    auto dsigmoid = [](LD x) {  // e / (1 + e)^2, e = exp(-|x|): s (1 - s) would cancel for large x
        const LD e = std::exp(-std::fabs(x));
        return e / ((1 + e) * (1 + e));
    };
    auto dsilu = [&](LD x) { return sig(x) * (1 + x * (1 - sig(x))); };
    auto dgelu = [](LD x) { return 0.5L * std::erfc(-x / std::sqrt(2.0L)) + x * std::exp(-x * x / 2) / std::sqrt(2 * 3.14159265358979323846L); };
    // Within 1e-12 relative, or a few of double's smallest subnormals.
    auto close = [](double got, LD want) {
        return std::fabs(static_cast<LD>(got) - want) <= 1e-12L * std::fabs(want) + 8 * std::numeric_limits<double>::denorm_min();
    };
    for_each_device([&](lt::Device d) {
        // 0: sigmoid'(0) = 1/4 (built on -|x| as a where: abs' is 0 at 0); the tails: subnormal
        // derivatives (sigmoid'(-720) = 1.9e-313).
        const std::vector<double> xs{0.0, -0.0, 0.5, -0.5, 3.0, -3.0, -30.0, 30.0, -200.0, -720.0};
        const auto n = static_cast<std::int64_t>(xs.size());
        const lt::Tensor<double> x = lt::tensor<double>(xs, {n}, d);
        const std::vector<double> gs = lt::grad(lt::sum(lt::sigmoid(x)), x).to_vector();
        const std::vector<double> gsi = lt::grad(lt::sum(lt::silu(x)), x).to_vector();
        const std::vector<double> gg = lt::grad(lt::sum(lt::gelu(x)), x).to_vector();
        for (std::size_t i = 0; i < xs.size(); ++i) {
            INFO("x = " << xs[i] << ": sigmoid' " << gs[i] << ", silu' " << gsi[i] << ", gelu' " << gg[i]);
            CHECK(close(gs[i], dsigmoid(xs[i])));
            CHECK(close(gsi[i], dsilu(xs[i])));
            CHECK(close(gg[i], dgelu(xs[i])));
        }
        CHECK(gs[9] > 0);  // 1.9e-313, not 0
        // Float: gelu on the host computes in double; the gradient is float.
        const lt::Tensor<float> xf = lt::tensor<float>({0.0f, -2.0f, 1.5f}, {3}, d);
        const std::vector<float> ggf = lt::grad(lt::sum(lt::gelu(xf)), xf).to_vector();
        for (std::size_t i = 0; i < 3; ++i) CHECK(ggf[i] == doctest::Approx(double(dgelu(xf.to_vector()[i]))).epsilon(1e-6));
        // rsqrt' = -x^-1.5 / 2.
        const lt::Tensor<double> r = lt::tensor<double>({0.25, 2.0, 1e6}, {3}, d);
        const std::vector<double> gr = lt::grad(lt::sum(lt::rsqrt(r)), r).to_vector();
        for (std::size_t i = 0; i < 3; ++i) CHECK(close(gr[i], -0.5L * std::pow(static_cast<LD>(r.to_vector()[i]), -1.5L)));
        // remainder: d/da 1, d/db -floor(a / b) (away from the steps); floor_divide and sign: 0,
        // at a zero divisor and at 0 too (they pass none).
        const lt::Tensor<double> a = lt::tensor<double>({5.5, -5.5, 1.0, 0.0}, {4}, d), b = lt::tensor<double>({2.0, 2.0, 0.0, -0.5}, {4}, d);
        const auto gm = lt::grad(lt::sum(lt::remainder(a.slice(0, 0, 2), b.slice(0, 0, 2))), {a, b});
        CHECK(gm[0].to_vector() == std::vector<double>{1, 1, 0, 0});
        CHECK(gm[1].to_vector() == std::vector<double>{-2, 3, 0, 0});
        const auto gq = lt::grad(lt::sum(lt::floor_divide(a, b) + lt::sign(a) * b), {a, b});
        CHECK(gq[0].to_vector() == std::vector<double>{0, 0, 0, 0});
        CHECK(gq[1].to_vector() == std::vector<double>{1, -1, 1, 0});
    });
}

TEST_CASE("grad: every view, concat, stack, gather, index_select") {
    using T = lt::Tensor<double>;
    for_each_device([&](lt::Device d) {
        const Ref x = random_ref<double>({3, 4}, 41), y = random_ref<double>({3, 2}, 42);
        check_gradients([](const Tensors& in) { return T(in[0].reshape({2, 6}) * 1.5); }, {x});
        check_gradients([](const Tensors& in) { return T(in[0].permute({1, 0}) * in[0].t()); }, {x});
        check_gradients([](const Tensors& in) { return T(in[0].reshape({3, 1, 4}).expand({3, 2, 4}) * 2.0); }, {x});
        check_gradients([](const Tensors& in) { return in[0].slice(1, 1, 4, 2); }, {x});
        check_gradients([](const Tensors& in) { return in[0].slice(1, 3, 0, -2); }, {x});
        check_gradients([](const Tensors& in) { return in[0].slice(0, -1, std::nullopt, -1); }, {x});
        check_gradients([](const Tensors& in) { return in[0].slice(1, 1, 2).slice(0, 0, 3, 2); }, {x});
        check_gradients([](const Tensors& in) { return in[0].flip({0, 1}); }, {x});
        check_gradients([](const Tensors& in) { return in[0].pad({{1, 0}, {2, 1}}, 7.0); }, {x});
        check_gradients([](const Tensors& in) { return lt::concat({in[0], in[1]}, 1); }, {x, y});
        check_gradients([](const Tensors& in) { return lt::stack<double>({in[0], in[0] * 2.0}, 1); }, {x});
        check_gradients([](const Tensors& in) { return in[0].tile({2, 1}); }, {x});
        check_gradients([](const Tensors& in) { return in[0].select(1, 2); }, {x});
        auto idx = lt::tensor<std::int64_t>({0, 2, 2, 1, 3, 0}, {3, 2}, d);
        check_gradients([&](const Tensors& in) { return lt::gather(in[0], 1, idx); }, {x});
        auto rows = lt::tensor<std::int64_t>({2, 0, 2, 2}, {4}, d);
        check_gradients([&](const Tensors& in) { return lt::index_select(in[0], 0, rows); }, {x});
    });
}

TEST_CASE("grad: matmul (2-D, batched with broadcasting, 1-D operands)") {
    using T = lt::Tensor<double>;
    for_each_device([&](lt::Device) {
        const Ref a = random_ref<double>({3, 4}, 51), b = random_ref<double>({4, 2}, 52);
        check_gradients([](const Tensors& in) { return T(in[0].matmul(in[1])); }, {a, b});
        const Ref ba = random_ref<double>({2, 1, 3, 4}, 53), bb = random_ref<double>({3, 4, 2}, 54);
        check_gradients([](const Tensors& in) { return T(lt::matmul(in[0], in[1])); }, {ba, bb});
        const Ref v = random_ref<double>({4}, 55), w = random_ref<double>({4}, 56);
        check_gradients([](const Tensors& in) { return T(lt::matmul(in[0], in[1])); }, {v, w});
        check_gradients([](const Tensors& in) { return T(lt::matmul(in[0], in[1])); }, {v, b});
        check_gradients([](const Tensors& in) { return T(lt::matmul(in[1], in[0])); }, {v, a});
        // A product with a transposed view: its gradient is one of the transposed operand.
        check_gradients([](const Tensors& in) { return T(in[0].t().matmul(in[1])); }, {a, random_ref<double>({3, 2}, 57)});
    });
}

TEST_CASE("grad: softmax, log_softmax, layer_norm, cross_entropy") {
    using T = lt::Tensor<double>;
    for_each_device([&](lt::Device d) {
        const Ref x = random_ref<double>({3, 5}, 61);
        check_gradients([](const Tensors& in) { return T(lt::softmax(in[0], 1)); }, {x});
        check_gradients([](const Tensors& in) { return T(lt::softmax(in[0], 0)); }, {x});
        check_gradients([](const Tensors& in) { return T(lt::log_softmax(in[0], -1)); }, {x});
        const Ref w = random_ref<double>({5}, 62), b = random_ref<double>({5}, 63);
        check_gradients(
            [](const Tensors& in) { return T(lt::layer_norm(in[0], lt::Axes{-1}, 1e-5, in[1], in[2])); }, {x, w, b});
        check_gradients([](const Tensors& in) { return T(lt::layer_norm(in[0], lt::Axes{}, 1e-3)); }, {x});
        auto labels = lt::tensor<std::int64_t>({4, 0, 2}, {3}, d);
        check_gradients([&](const Tensors& in) { return T(lt::cross_entropy(in[0], labels)); }, {x});
        check_gradients([&](const Tensors& in) { return T(lt::cross_entropy(in[0], labels, lt::Reduction::None)); }, {x});
    });
}

TEST_CASE("vjp with several outputs, an input used several times, unused inputs, stop_gradient") {
    for_each_device([&](lt::Device d) {
        auto x = lt::tensor<double>({0.5, -1, 2}, {3}, d), w = lt::tensor<double>({3, 4, 5}, {3}, d);
        auto unused = lt::tensor<double>({1, 2}, {2}, d);
        // Two outputs, cotangents [1, 2, 3] and 10: gradients add up over outputs and uses.
        lt::Tensor<double> y1 = x * x * w, y2 = lt::sum(lt::sin(x) * x);
        auto c1 = lt::tensor<double>({1, 2, 3}, {3}, d), c2 = lt::full<double>({}, 10.0, d);
        auto g = lt::vjp({y1, y2}, {x, w, unused}, {c1, c2});
        const std::vector<double> xs{0.5, -1, 2}, ws{3, 4, 5}, cs{1, 2, 3};
        const std::vector<double> gx = g[0].to_vector(), gw = g[1].to_vector();
        for (std::size_t i = 0; i < 3; ++i) {
            CHECK(gx[i] == doctest::Approx(cs[i] * 2 * xs[i] * ws[i] + 10 * (std::cos(xs[i]) * xs[i] + std::sin(xs[i]))));
            CHECK(gw[i] == doctest::Approx(cs[i] * xs[i] * xs[i]));
        }
        // An input the outputs do not depend on: zeros of its shape.
        CHECK(g[2].shape() == lt::Shape{2});
        CHECK(g[2].to_vector() == std::vector<double>{0, 0});
        // stop_gradient: the first factor is a constant, so the gradient is x, not 2x.
        CHECK(lt::grad(lt::sum(lt::stop_gradient(x) * x), x).to_vector() == std::vector<double>{0.5, -1, 2});
        // The gradient with respect to an intermediate tensor, and through it.
        lt::Tensor<double> h = x * 3.0;
        auto gh = lt::grad(lt::sum(h * h), {h, x});
        CHECK(gh[0].to_vector() == std::vector<double>{3, -6, 12});
        CHECK(gh[1].to_vector() == std::vector<double>{9, -18, 36});
    });
}

TEST_CASE("grad compiles and works for float and double, brace lists, value_and_grad") {
    for_each_device([&](lt::Device d) {
        auto w = lt::tensor<float>({1, 2, 3, 4}, {2, 2}, d);
        auto b = lt::tensor<float>({0.5f, -0.5f}, {2}, d);
        auto x = lt::tensor<float>({1, -1}, {1, 2}, d);
        auto loss = lt::sum(lt::relu(x.matmul(w) + b));
        auto g = lt::grad(loss, {w, b});
        static_assert(std::is_same_v<decltype(g), std::vector<lt::Tensor<float>>>);
        REQUIRE(g.size() == 2);
        CHECK(g[0].shape() == w.shape());
        CHECK(g[1].shape() == b.shape());
        // x @ w = [-2, -2]; + b = [-1.5, -2.5]: relu is 0 everywhere, so are the gradients.
        lt::realize({loss, g[0], g[1]});
        CHECK(g[0].to_vector() == std::vector<float>{0, 0, 0, 0});
        auto x2 = lt::tensor<float>({2, 1}, {1, 2}, d);  // x2 @ w = [5, 8]
        auto [value, grads] = lt::value_and_grad([&] { return lt::sum(lt::relu(x2.matmul(w) + b)); }, {w, b}).realize();
        CHECK(value.item() == doctest::Approx(13.0f));
        CHECK(grads[0].to_vector() == std::vector<float>{2, 2, 1, 1});
        CHECK(grads[1].to_vector() == std::vector<float>{1, 1});
        // A callable that takes the parameters.
        auto vg = lt::value_and_grad([](const std::vector<lt::Tensor<double>>& p) { return lt::sum(p[0] * p[0]); },
                                     {lt::tensor<double>({3, -2}, {2}, d)});
        CHECK(vg.grads[0].to_vector() == std::vector<double>{6, -4});
        CHECK(vg.value.item() == 13.0);
    });
}

TEST_CASE("gradients of gradients: element-wise and matmul") {
    for_each_device([&](lt::Device d) {
        auto x = lt::tensor<double>({0.5, -1, 2}, {3}, d);
        auto c = lt::tensor<double>({1, 2, 3}, {3}, d);
        auto g = lt::grad(lt::sum(x * x * x + lt::sin(x)), x);  // 3x^2 + cos x
        auto h = lt::grad(lt::sum(g * c), x);                     // c (6x - sin x)
        const std::vector<double> hv = h.to_vector(), xv{0.5, -1, 2}, cv{1, 2, 3};
        for (std::size_t i = 0; i < 3; ++i) CHECK(hv[i] == doctest::Approx(cv[i] * (6 * xv[i] - std::sin(xv[i]))));
        // f(W) = sum((A W)^2): grad 2 A^T A W; the gradient of sum(grad * C) is 2 A^T A C.
        const Ref ra = random_ref<double>({3, 2}, 71), rw = random_ref<double>({2, 2}, 72), rc = random_ref<double>({2, 2}, 73);
        auto A = make_tensor<double>(ra), W = make_tensor<double>(rw), C = make_tensor<double>(rc);
        auto AW = A.matmul(W);
        auto gw = lt::grad(lt::sum(AW * AW), W);
        auto hw = lt::grad(lt::sum(gw * C), W);
        const Ref ata = ref_matmul_2d(permute(ra, {1, 0}), ra);
        const Ref expected = map(ref_matmul_2d(ata, rc), [](double v) { return 2 * v; });
        check_close(hw, expected, 1e-12, 1e-12);
    });
}

TEST_CASE("grad: bad input is a clear error") {
    auto x = lt::tensor<double>({1, 2, 3}, {3});
    auto y = x * 2.0;
    CHECK_THROWS_WITH_AS(lt::grad(y, x), doctest::Contains("the loss must be a 0-d tensor, got shape [3]"), lt::ShapeError);
    auto wrong = lt::tensor<double>({1, 2}, {2});
    CHECK_THROWS_WITH_AS(lt::vjp({lt::Tensor<double>(y)}, {x}, {wrong}),
                         doctest::Contains("cotangent 0 has shape [2] but its output has shape [3]"), lt::ShapeError);
    CHECK_THROWS_WITH_AS(lt::vjp({lt::Tensor<double>(y)}, {x}, {}), doctest::Contains("1 output(s) but 0 cotangent(s)"),
                         lt::ValueError);
    // A loss realized before the gradient is taken is a constant: its graph is gone.
    lt::Tensor<double> loss = lt::sum(x * x);
    loss.realize();
    CHECK_THROWS_WITH_AS(lt::grad(loss, x), doctest::Contains("realize cuts the graph"), lt::ValueError);
    // A tensor realized inside the loss's graph after an input was made may hide it: an error.
    CHECK_THROWS_WITH_AS(lt::value_and_grad(
                             [&] {
                                 lt::Tensor<double> t = x * 2.0;
                                 t.realize();
                                 return lt::sum(t * t);
                             },
                             {x}),
                         doctest::Contains("realized after that input was made"), lt::ValueError);
    // Data realized before a parameter was made cannot depend on it: an unused parameter gets
    // zeros, the used one its gradient.
    auto data = (lt::rand<double>({3}, 5) * 2.0).realize();
    auto used = lt::tensor<double>({1, 1, 1}, {3}), unused = lt::tensor<double>({1, 2}, {2});
    auto gd = lt::grad(lt::sum(used * data), {used, unused});
    CHECK(gd[0].to_vector() == data.to_vector());
    CHECK(gd[1].to_vector() == std::vector<double>{0, 0});
    // Realizing after the gradient is built is fine, in either order.
    lt::Tensor<double> loss2 = lt::sum(x * x);
    auto g2 = lt::grad(loss2, x);
    loss2.realize();
    CHECK(g2.to_vector() == std::vector<double>{2, 4, 6});
    // Integer outputs have no gradient (the typed API refuses them at compile time).
    auto i = lt::tensor<std::int32_t>({1, 2}, {2});
    CHECK_THROWS_AS(lt::detail::vjp_nodes({i.build()}, {i.build()}, {x.build()}, "vjp"), lt::DTypeError);
}

TEST_CASE("backward kernel counts: softmax, log_softmax, layer_norm, cross_entropy, a linear layer") {
    using K = lt::ScheduleItem::Kind;
    auto count = [](const std::vector<lt::ScheduleItem>& items, K kind) {
        int n = 0;
        for (const auto& it : items) n += it.kind == kind;
        return n;
    };
    for_each_device([&](lt::Device d) {
        auto x = lt::rand<float>({64, 128}, 1, d), y = lt::rand<float>({64, 128}, 2, d);
        auto labels = lt::tensor<std::int64_t>(std::vector<std::int64_t>(64, 3), {64}, d);
        lt::realize({x, y});
        // Each gradient alone is one kernel (it recomputes the forward's row statistics in its
        // phases). With the loss in the same schedule, the forward's shared parts are computed
        // once and read by both: 5, 6, 5 and 7 kernels, counting the loss's own (a row kernel,
        // then the sum over rows, for the first three).
        struct Case {
            const char* name;
            lt::Tensor<float> loss;
            int together;
        };
        const std::vector<Case> cases = {
            {"softmax", lt::sum(lt::softmax(x, 1) * y), 5},
            {"log_softmax", lt::sum(lt::log_softmax(x, 1) * y), 6},
            {"layer_norm", lt::sum(lt::layer_norm(x, 1) * y), 5},
            {"cross_entropy", lt::cross_entropy(x, labels), 7},
        };
        for (const Case& c : cases) {
            INFO(c.name);
            auto g = lt::grad(c.loss, x);
            CHECK(count(lt::schedule({g}), K::Kernel) == 1);
            CHECK(count(lt::schedule({c.loss, g}), K::Kernel) <= c.together);
        }
        // A linear layer's backward: two GEMMs that read transposed views (no copies), and one
        // kernel for relu's mask, which both read.
        auto w = lt::rand<float>({128, 32}, 3, d);
        w.realize();
        auto out = lt::sum(lt::relu(x.matmul(w)) * 0.5f);
        auto gw = lt::grad(out, {x, w});
        const auto items = lt::schedule({out, gw[0], gw[1]});
        if (lt::detail::gemm_available(lt::DType::Float32, d)) {
            CHECK(count(items, K::Matmul) == 3);
            CHECK(count(items, K::Kernel) == 2);
        }
        // And its values: dW = x^T (0.5 [x w > 0]), dx = (0.5 [x w > 0]) w^T.
        const Ref rx{{64, 128}, std::vector<double>()}, rw{{128, 32}, std::vector<double>()};
        Ref xr = rx, wr = rw;
        for (float v : x.to_vector()) xr.v.push_back(v);
        for (float v : w.to_vector()) wr.v.push_back(v);
        Ref mask = map(ref_matmul_2d(xr, wr), [](double v) { return v > 0 ? 0.5 : 0.0; });
        check_close(gw[1], ref_matmul_2d(permute(xr, {1, 0}), mask), 1e-4, 1e-4);
        check_close(gw[0], ref_matmul_2d(mask, permute(wr, {1, 0})), 1e-4, 1e-4);
    });
}

TEST_CASE("the backward of a 10-layer perceptron frees its intermediates after their last use") {
    for_each_device([&](lt::Device d) {
        const int layers = 10;
        const std::int64_t batch = 512, width = 256;
        std::vector<lt::Tensor<float>> ws;
        for (int l = 0; l < layers; ++l) ws.push_back(lt::randn<float>({width, width}, 500 + l, d) * 0.06f);
        auto x = lt::randn<float>({batch, width}, 499, d);
        for (auto& w : ws) w.realize();
        x.realize();
        lt::Tensor<float> h = x;
        for (int l = 0; l < layers; ++l) h = lt::relu(h.matmul(ws[l]));
        auto loss = lt::sum(h * h);
        auto g = lt::grad(loss, ws);
        std::vector<lt::TensorRef> all{loss};
        for (auto& t : g) all.emplace_back(t);
        // What the schedule's items produce: the peak if nothing were freed before the end.
        std::size_t produced = 0;
        for (const auto& item : lt::schedule(all)) {
            if (item.kind == lt::ScheduleItem::Kind::View) continue;
            REQUIRE(item.output.rfind("float32[", 0) == 0);
            std::size_t n = 1;
            std::stringstream extents(item.output.substr(8));
            for (std::size_t e; extents >> e;) {
                n *= e;
                extents.ignore(1);
            }
            produced += n * 4;
        }
        const std::size_t layer_bytes = static_cast<std::size_t>(batch * width * 4), weights = layers * static_cast<std::size_t>(width * width * 4);
        lt::synchronize(d);
        const std::size_t before = lt::memory_stats(d).live_bytes;
        lt::reset_peak_memory(d);
        lt::realize(all);
        lt::synchronize(d);
        const std::size_t peak = lt::memory_stats(d).peak_bytes - before;
        MESSAGE("peak above the inputs: " << peak / 1024 << " KiB; all items' outputs: " << produced / 1024 << " KiB");
        // The backward needs each layer's activation and relu mask (2 per layer) while it runs;
        // with the weights' gradients and two transients, that is the bound.
        CHECK(peak <= 2 * layers * layer_bytes + weights + 2 * layer_bytes);
        CHECK(peak < produced * 3 / 4);
        for (const auto& t : g) CHECK(t.is_realized());
    });
}
