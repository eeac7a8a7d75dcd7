// SPDX-License-Identifier: MIT
// Shared test helpers: the device loop, random data, and a plain double-precision reference
// (no scheduler, no fusion) that results are compared against.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <lazytensor.hpp>
#if !LAZYTENSOR_ENGINE_DEFINITIONS
// Built against the compiled runtime, lazytensor.hpp declares only the seam: the engine's
// internals that tests inspect (backends, caches, check mode's hook) come from their headers.
#include <lazytensor/runtime/check.hpp>
#include <lazytensor/runtime/plan.hpp>
#endif
#include <random>
#include <sstream>
#include <string>
#include <vector>

namespace lt = lazytensor;

/// The devices tests run on: all that lt::devices() lists, or LAZYTENSOR_TEST_DEVICES
/// (a comma-separated list such as "host,opencl:0").
inline std::vector<lt::Device> test_devices() {
    std::vector<lt::Device> out;
    if (const char* env = std::getenv("LAZYTENSOR_TEST_DEVICES")) {
        std::stringstream s(env);
        for (std::string item; std::getline(s, item, ',');)
            out.push_back(lt::detail::parse_device(item));
        return out;
    }
    for (const auto& info : lt::devices()) out.push_back(info.device);
    return out;
}

/// Whether the test devices include a kind of device; a case that has nothing to test without
/// one is marked `* doctest::skip(!has_test_device(...))`, so it says it was skipped.
inline bool has_test_device(lt::Device::Kind kind) {
    for (lt::Device d : test_devices())
        if (d.kind == kind) return true;
    return false;
}

/// Runs body(device) once per test device, with that device as the default.
template <class F>
void for_each_device(F&& body) {
    for (lt::Device d : test_devices()) {
        lt::set_default_device(d);
        INFO("device: " << d.str());
        body(d);
    }
    lt::set_default_device(lt::Device::host());
}

// ------------------------------------------------------------------------------ reference arrays

/// A row-major array of doubles: the reference every result is checked against.
struct Ref {
    lt::Shape shape;
    std::vector<double> v;

    std::int64_t size() const { return lt::numel(shape); }
    double at(const std::vector<std::int64_t>& index) const {
        std::int64_t linear = 0;
        for (std::size_t k = 0; k < shape.size(); ++k) linear = linear * shape[k] + index[k];
        return v[static_cast<std::size_t>(linear)];
    }
};

inline std::vector<std::int64_t> unravel(std::int64_t linear, const lt::Shape& shape) {
    std::vector<std::int64_t> index(shape.size());
    for (std::size_t k = shape.size(); k-- > 0;) {
        index[k] = linear % shape[k];
        linear /= shape[k];
    }
    return index;
}

/// Random values in [lo, hi] (integers for integer element types), never all zero.
template <class T>
Ref random_ref(const lt::Shape& shape, unsigned seed, double lo = -2.0, double hi = 2.0) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<double> dist(lo, hi);
    Ref r{shape, std::vector<double>(static_cast<std::size_t>(lt::numel(shape)))};
    for (auto& x : r.v) {
        x = dist(gen);
        if constexpr (std::is_same_v<T, bool>) x = x > (lo + hi) / 2 ? 1.0 : 0.0;
        else if constexpr (std::is_integral_v<T>) x = std::round(x);
        else x = static_cast<double>(static_cast<T>(x));  // exactly representable in T
    }
    bool all_zero = true;
    for (double x : r.v) all_zero = all_zero && x == 0;
    if (all_zero && !r.v.empty()) r.v[0] = 1;
    return r;
}

template <class T>
lt::Tensor<T> make_tensor(const Ref& r, lt::Device device = lt::default_device()) {
    std::vector<T> data(r.v.size());
    for (std::size_t i = 0; i < data.size(); ++i) data[i] = static_cast<T>(r.v[i]);
    return lt::tensor<T>(data, r.shape, device);
}

/// A one-dimensional reference holding exactly these values.
inline Ref ref_of(const std::vector<double>& v) { return Ref{{static_cast<std::int64_t>(v.size())}, v}; }

/// The reference array whose element at index i is f(i).
inline Ref ref_of(const lt::Shape& shape, const std::function<double(const std::vector<std::int64_t>&)>& f) {
    Ref out{shape, std::vector<double>(static_cast<std::size_t>(lt::numel(shape)))};
    for (std::int64_t i = 0; i < out.size(); ++i) out.v[static_cast<std::size_t>(i)] = f(unravel(i, shape));
    return out;
}

/// Broadcasts a reference array to `shape` (NumPy rules).
inline Ref broadcast(const Ref& a, const lt::Shape& shape) {
    Ref out{shape, std::vector<double>(static_cast<std::size_t>(lt::numel(shape)))};
    const std::size_t lead = shape.size() - a.shape.size();
    for (std::int64_t i = 0; i < out.size(); ++i) {
        auto idx = unravel(i, shape);
        std::vector<std::int64_t> src(a.shape.size());
        for (std::size_t k = 0; k < a.shape.size(); ++k) src[k] = a.shape[k] == 1 ? 0 : idx[k + lead];
        out.v[static_cast<std::size_t>(i)] = a.at(src);
    }
    return out;
}

inline Ref map(const Ref& a, const std::function<double(double)>& f) {
    Ref out = a;
    for (auto& x : out.v) x = f(x);
    return out;
}

inline Ref zip(const Ref& a, const Ref& b, const std::function<double(double, double)>& f) {
    const lt::Shape shape = lt::detail::broadcast_shapes(a.shape, b.shape, "reference");
    Ref x = broadcast(a, shape), y = broadcast(b, shape);
    for (std::size_t i = 0; i < x.v.size(); ++i) x.v[i] = f(x.v[i], y.v[i]);
    return x;
}

/// Folds `f` over `axes` (all when empty), starting from `init`.
inline Ref reduce(const Ref& a, std::vector<int> axes, bool keepdim, double init,
                  const std::function<double(double, double)>& f) {
    const std::size_t n = a.shape.size();
    if (axes.empty())
        for (std::size_t k = 0; k < n; ++k) axes.push_back(static_cast<int>(k));
    std::vector<bool> reduced(n, false);
    for (int ax : axes) reduced[static_cast<std::size_t>(ax < 0 ? ax + static_cast<int>(n) : ax)] = true;
    lt::Shape keep;
    for (std::size_t k = 0; k < n; ++k) keep.push_back(reduced[k] ? 1 : a.shape[k]);
    Ref out{keep, std::vector<double>(static_cast<std::size_t>(lt::numel(keep)), init)};
    for (std::int64_t i = 0; i < a.size(); ++i) {
        auto idx = unravel(i, a.shape);
        std::int64_t linear = 0;
        for (std::size_t k = 0; k < n; ++k) linear = linear * keep[k] + (reduced[k] ? 0 : idx[k]);
        double& acc = out.v[static_cast<std::size_t>(linear)];
        acc = f(acc, a.v[static_cast<std::size_t>(i)]);
    }
    if (!keepdim) {
        lt::Shape squeezed;
        for (std::size_t k = 0; k < n; ++k)
            if (!reduced[k]) squeezed.push_back(a.shape[k]);
        out.shape = squeezed;
    }
    return out;
}

inline Ref permute(const Ref& a, const std::vector<int>& perm) {
    lt::Shape shape;
    for (int p : perm) shape.push_back(a.shape[static_cast<std::size_t>(p)]);
    Ref out{shape, std::vector<double>(a.v.size())};
    for (std::int64_t i = 0; i < out.size(); ++i) {
        auto idx = unravel(i, shape);
        std::vector<std::int64_t> src(perm.size());
        for (std::size_t k = 0; k < perm.size(); ++k) src[static_cast<std::size_t>(perm[k])] = idx[k];
        out.v[static_cast<std::size_t>(i)] = a.at(src);
    }
    return out;
}

inline double ref_max(double a, double b) { return (a > b || std::isnan(a)) ? a : (std::isnan(b) ? b : b); }
inline double ref_min(double a, double b) { return (a < b || std::isnan(a)) ? a : b; }
inline double ref_add(double a, double b) { return a + b; }

/// The double reference of an [m, k] x [k, n] matrix product.
inline Ref ref_matmul_2d(const Ref& a, const Ref& b) {
    const std::int64_t m = a.shape[0], k = a.shape[1], n = b.shape[1];
    Ref out{{m, n}, std::vector<double>(static_cast<std::size_t>(m * n), 0.0)};
    for (std::int64_t i = 0; i < m; ++i)
        for (std::int64_t j = 0; j < n; ++j) {
            double acc = 0;
            for (std::int64_t p = 0; p < k; ++p)
                acc += a.v[static_cast<std::size_t>(i * k + p)] * b.v[static_cast<std::size_t>(p * n + j)];
            out.v[static_cast<std::size_t>(i * n + j)] = acc;
        }
    return out;
}

/// Checks shape and every element against the reference, within rtol * |ref| + atol.
/// NaN must match NaN, infinities must match exactly.
template <class E>
void check_close(const E& actual, const Ref& expected, double rtol = 1e-5, double atol = 1e-6) {
    using T = typename E::value_type;
    lt::Tensor<T> t = actual;
    REQUIRE(t.shape() == expected.shape);
    const std::vector<T> got = t.to_vector();
    REQUIRE(got.size() == expected.v.size());
    int failures = 0;
    for (std::size_t i = 0; i < got.size() && failures < 5; ++i) {
        const double g = static_cast<double>(got[i]);
        const double e = expected.v[i];
        bool ok;
        if (std::isnan(e)) ok = std::isnan(g);
        else if (std::isinf(e)) ok = g == e;
        else ok = std::fabs(g - e) <= rtol * std::fabs(e) + atol;
        if (!ok) {
            ++failures;
            FAIL_CHECK("element " << i << " of shape " << expected.shape << ": got " << g << ", expected " << e);
        }
    }
}

/// The tolerance to use for a floating type.
template <class T>
constexpr double tol() {
    return std::is_same_v<T, float> ? 2e-5 : 1e-12;
}

/// What realize() prints to std::cerr while f runs at a debug level.
template <class F>
std::string debug_output(int level, F&& f) {
    std::ostringstream captured;
    std::streambuf* old = std::cerr.rdbuf(captured.rdbuf());
    const int before = lt::debug_level();
    lt::set_debug_level(level);
    try {
        f();
    } catch (...) {
        std::cerr.rdbuf(old);
        lt::set_debug_level(before);
        throw;
    }
    std::cerr.rdbuf(old);
    lt::set_debug_level(before);
    return captured.str();
}

/// Realizes `make()` with compiled loops on and off; both must agree bit for bit.
template <class F>
void check_compiled_matches_interpreted(F&& make, bool expect_compiled) {
    const bool before = lt::static_kernels_enabled();
    lt::set_static_kernels_enabled(true);
    auto compiled_expr = make();
    auto items = lt::schedule(compiled_expr);
    REQUIRE(items.size() == 1);
    // (compiled loops run on the host only; elsewhere the schedule never names one)
    CHECK(items[0].compiled_loop == (expect_compiled && lt::default_device().kind == lt::Device::Kind::Host));
    auto with_loop = compiled_expr.to_vector();
    lt::set_static_kernels_enabled(false);
    auto interpreted_expr = make();
    CHECK_FALSE(lt::schedule(interpreted_expr)[0].compiled_loop);
    auto without = interpreted_expr.to_vector();
    lt::set_static_kernels_enabled(before);
    REQUIRE(with_loop.size() == without.size());
    for (std::size_t i = 0; i < with_loop.size(); ++i) {
        // NaN payloads and signs are not specified by IEEE; every other bit must match.
        const bool same = std::memcmp(&with_loop[i], &without[i], sizeof(with_loop[i])) == 0 ||
                          (std::isnan(with_loop[i]) && std::isnan(without[i]));
        if (!same) FAIL_CHECK("element " << i << ": compiled " << with_loop[i] << ", interpreted " << without[i]);
    }
}

/// The message of the E that f throws, or "(no exception)" if it throws none (another
/// exception propagates).
template <class E>
std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const E& e) {
        return e.what();
    }
    return "(no exception)";
}

// ------------------------------------------------------------------------ scoped settings

/// A device's kernel cache capacity for a scope, restored on exit (also when a test fails).
class KernelCacheCapacity {
public:
    KernelCacheCapacity(lt::Device d, std::size_t capacity)
        : backend_(lt::detail::backend_for(d)), before_(backend_.cache_capacity()) {
        backend_.set_cache_capacity(capacity);
    }
    KernelCacheCapacity(const KernelCacheCapacity&) = delete;
    KernelCacheCapacity& operator=(const KernelCacheCapacity&) = delete;
    ~KernelCacheCapacity() { backend_.set_cache_capacity(before_); }

private:
    lt::detail::Backend& backend_;
    std::size_t before_;
};

/// A memory limit on a device for a scope; removed (0) on exit, also when a test fails.
/// Sets an environment variable (or unsets it, for nullptr) for a scope; the old value comes
/// back even when a check fails half-way.
struct ScopedEnvVar {
    std::string name;
    bool had = false;
    std::string old;
    ScopedEnvVar(std::string n, const char* value) : name(std::move(n)) {
        if (const char* v = std::getenv(name.c_str())) had = true, old = v;
        if (value) ::setenv(name.c_str(), value, 1);
        else ::unsetenv(name.c_str());
    }
    ~ScopedEnvVar() {
        if (had) ::setenv(name.c_str(), old.c_str(), 1);
        else ::unsetenv(name.c_str());
    }
};

class MemoryLimit {
public:
    MemoryLimit(lt::Device d, std::size_t bytes) : device_(d) { lt::set_memory_limit(d, bytes); }
    MemoryLimit(const MemoryLimit&) = delete;
    MemoryLimit& operator=(const MemoryLimit&) = delete;
    ~MemoryLimit() { lt::set_memory_limit(device_, 0); }

private:
    lt::Device device_;
};

// ------------------------------------------------------------------- gradients by differences

/// A function of double tensors whose gradient a test checks.
using GradientFn = std::function<lt::Tensor<double>(const std::vector<lt::Tensor<double>>&)>;

/// sum(f(inputs) * c) in double on the host.
inline double weighted_output(const GradientFn& f, const std::vector<Ref>& inputs, const Ref& c) {
    std::vector<lt::Tensor<double>> xs;
    for (const Ref& r : inputs) xs.push_back(make_tensor<double>(r));
    const std::vector<double> y = f(xs).to_vector();
    REQUIRE(y.size() == c.v.size());
    double s = 0;
    for (std::size_t i = 0; i < y.size(); ++i) s += y[i] * c.v[i];
    return s;
}

/// lt::vjp of f against central differences of sum(f * c) (c random) in every element of every
/// input, within tol (relative).
inline void check_gradient_by_differences(const GradientFn& f, const std::vector<Ref>& inputs, double tol) {
    std::vector<lt::Tensor<double>> xs;
    for (const Ref& r : inputs) xs.push_back(make_tensor<double>(r));
    const lt::Tensor<double> y = f(xs);
    const Ref c = random_ref<double>(y.shape(), 7, 0.5, 1.5);
    const std::vector<lt::Tensor<double>> grads = lt::vjp({y}, xs, {make_tensor<double>(c)});
    REQUIRE(grads.size() == inputs.size());
    const double h = 1e-6;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
        REQUIRE(grads[i].shape() == inputs[i].shape);
        const std::vector<double> analytic = grads[i].to_vector();
        for (std::size_t j = 0; j < inputs[i].v.size(); ++j) {
            std::vector<Ref> plus = inputs, minus = inputs;
            plus[i].v[j] += h;
            minus[i].v[j] -= h;
            const double fd = (weighted_output(f, plus, c) - weighted_output(f, minus, c)) / (2 * h);
            INFO("input " << i << ", element " << j << ": analytic " << analytic[j] << ", finite difference " << fd);
            CHECK(std::fabs(analytic[j] - fd) <= tol * (1 + std::fabs(fd)));
        }
    }
}
