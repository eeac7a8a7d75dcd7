// SPDX-License-Identifier: MIT
// The backends' FFT (Backend::fft: the host engine on the host, VkFFT on OpenCL where the build
// has it, host staging otherwise) through fft nodes (detail::graph::fft) realized on every test
// device: C2C both ways, R2C and C2R, along 1 to 3 axes in several orders, a middle axis, lengths
// 8, 12, 7 (prime) and 1, float and double, scales 1, 1/n and 1/sqrt(n); layouts VkFFT cannot
// express (a real axis that is not the innermost, four dimensions) fall back and must agree too.
// On OpenCL the cases force VkFFT (CPU devices such as PoCL run the host engine by default); more
// cases check the plan cache's bound, the choice (LAZYTENSOR_OPENCL_FFT), a VkFFT failure (a lost
// queue) and a transposed lazy operand.
//
// The reference is a direct O(n^2) DFT in double along each transformed axis in turn (the
// transforms are separable), written here: C2R keeps NumPy's irfftn semantics, the inverse
// complex transforms first, then the real one, which ignores the imaginary parts of bins 0 and
// n/2. Error bound, relative to the largest reference magnitude: 1e-5 for float, 1e-12 for double.
#include <doctest/doctest.h>

#include "common.hpp"

#if LAZYTENSOR_OPENCL && !LAZYTENSOR_ENGINE_DEFINITIONS  // else lazytensor.hpp holds the backend
#include <lazytensor/backend/opencl/opencl_backend.hpp>
#endif

#include <cmath>
#include <complex>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace {

using lazytensor::detail::FftKind;
using cplx = std::complex<double>;

struct FftCase {
    const char* name;
    FftKind kind;
    bool inverse;
    std::vector<std::int64_t> shape;  // real space (ir::Fft::shape)
    std::vector<int> axes;
    int scale;  // 0: 1, 1: 1/n, 2: 1/sqrt(n), n the product of the transformed lengths
    bool vkfft;  // whether VkFFT runs it (in a build that has it)
};

const FftCase kCases[] = {
    {"c2c 1-D, 8, batch of 3", FftKind::C2C, false, {3, 8}, {1}, 0, true},
    {"c2c inverse 1-D, 12, 1/n", FftKind::C2C, true, {2, 12}, {1}, 1, true},
    {"c2c 1-D, 7 (prime), 1/sqrt(n)", FftKind::C2C, false, {7}, {0}, 2, true},
    {"c2c middle axis", FftKind::C2C, false, {4, 6, 5}, {1}, 0, true},
    {"c2c inverse, outer and inner axes, 1/n", FftKind::C2C, true, {4, 6, 5}, {0, 2}, 1, true},
    {"c2c two axes in reverse order, moved ones between", FftKind::C2C, false, {2, 3, 4, 5}, {3, 1}, 1, true},
    {"c2c three axes", FftKind::C2C, false, {3, 4, 5}, {2, 0, 1}, 2, true},
    {"c2c with a transformed axis of 1", FftKind::C2C, false, {3, 1, 8}, {1, 2}, 0, true},
    {"c2c of length 1 only", FftKind::C2C, true, {5, 1}, {1}, 2, false},
    {"c2c making four dimensions", FftKind::C2C, false, {2, 3, 4, 5}, {0, 2}, 0, false},
    {"r2c 1-D, 8", FftKind::R2C, false, {3, 8}, {1}, 0, true},
    {"r2c 1-D, 7, 1/sqrt(n)", FftKind::R2C, false, {2, 7}, {1}, 2, true},
    {"r2c 2-D", FftKind::R2C, false, {4, 6}, {0, 1}, 1, true},
    {"r2c along an outer axis", FftKind::R2C, false, {6, 4}, {1, 0}, 0, false},
    {"r2c outer and inner axes, a moved one between", FftKind::R2C, false, {4, 3, 8}, {0, 2}, 2, true},
    {"c2r 1-D, 8, 1/n", FftKind::C2R, true, {3, 8}, {1}, 1, true},
    {"c2r 1-D, 7", FftKind::C2R, true, {2, 7}, {1}, 0, true},
    {"c2r 2-D, even batch, 1/n", FftKind::C2R, true, {2, 4, 6}, {1, 2}, 1, true},
    {"c2r 3-D, 1/sqrt(n)", FftKind::C2R, true, {2, 3, 4}, {0, 1, 2}, 2, true},
    {"c2r along a middle axis", FftKind::C2R, true, {4, 6, 3}, {1}, 0, false},
};

std::int64_t count_of(const std::vector<std::int64_t>& shape) {
    std::int64_t n = 1;
    for (std::int64_t s : shape) n *= s;
    return n;
}

/// Row-major strides of `shape`.
std::vector<std::int64_t> strides_of(const std::vector<std::int64_t>& shape) {
    std::vector<std::int64_t> st(shape.size(), 1);
    for (std::size_t k = shape.size(); k-- > 1;) st[k - 1] = st[k] * shape[k];
    return st;
}

/// The direct DFT of `a` (complex, shape `shape`) along `axis`, sign -1 forward, +1 inverse.
void dft_along(std::vector<cplx>& a, const std::vector<std::int64_t>& shape, int axis, double sign) {
    const std::int64_t n = shape[static_cast<std::size_t>(axis)], step = strides_of(shape)[static_cast<std::size_t>(axis)];
    std::vector<cplx> out(a.size());
    for (std::int64_t i = 0; i < static_cast<std::int64_t>(a.size()); ++i) {
        const std::int64_t k = (i / step) % n, base = i - k * step;
        cplx acc = 0;
        for (std::int64_t j = 0; j < n; ++j)
            acc += a[static_cast<std::size_t>(base + j * step)] * std::polar(1.0, sign * 2 * M_PI * double((j * k) % n) / double(n));
        out[static_cast<std::size_t>(i)] = acc;
    }
    a = out;
}

/// The reference output (interleaved complex, or real for C2R) of a case on `input`.
std::vector<double> reference(const FftCase& c, const std::vector<double>& input, double scale) {
    const std::vector<std::int64_t>& shape = c.shape;
    std::vector<std::int64_t> cshape = shape;
    const int last = c.axes.back();
    if (c.kind != FftKind::C2C) cshape[static_cast<std::size_t>(last)] = shape[static_cast<std::size_t>(last)] / 2 + 1;
    std::vector<double> out;
    if (c.kind == FftKind::C2R) {
        std::vector<cplx> a(static_cast<std::size_t>(count_of(cshape)));
        for (std::size_t i = 0; i < a.size(); ++i) a[i] = {input[2 * i], input[2 * i + 1]};
        for (int axis : c.axes)
            if (axis != last) dft_along(a, cshape, axis, +1);
        const std::int64_t n = shape[static_cast<std::size_t>(last)], m = cshape[static_cast<std::size_t>(last)];
        const std::int64_t step = strides_of(shape)[static_cast<std::size_t>(last)], cstep = strides_of(cshape)[static_cast<std::size_t>(last)];
        out.resize(static_cast<std::size_t>(count_of(shape)));
        for (std::int64_t i = 0; i < count_of(shape); ++i) {
            const std::int64_t j = (i / step) % n, outer = i / (step * n), inner = i % step;
            double acc = 0;
            for (std::int64_t k = 0; k < n; ++k) {
                const std::int64_t bin = k < m ? k : n - k;  // Hermitian: X[n - k] = conj(X[k])
                cplx v = a[static_cast<std::size_t>(outer * m * cstep + bin * cstep + inner)];
                if (k != bin) v = std::conj(v);
                if (bin == 0 || 2 * bin == n) v = v.real();  // irfft ignores their imaginary parts
                acc += (v * std::polar(1.0, 2 * M_PI * double((j * k) % n) / double(n))).real();
            }
            out[static_cast<std::size_t>(i)] = acc * scale;
        }
        return out;
    }
    std::vector<cplx> a(static_cast<std::size_t>(count_of(shape)));
    for (std::size_t i = 0; i < a.size(); ++i)
        a[i] = c.kind == FftKind::R2C ? cplx(input[i], 0) : cplx(input[2 * i], input[2 * i + 1]);
    for (int axis : c.axes) dft_along(a, shape, axis, c.kind == FftKind::C2C && c.inverse ? +1 : -1);
    // R2C keeps bins 0 to n/2 of the last axis.
    const std::int64_t n = shape[static_cast<std::size_t>(last)], m = cshape[static_cast<std::size_t>(last)];
    const std::int64_t step = strides_of(shape)[static_cast<std::size_t>(last)];
    for (std::int64_t i = 0; i < count_of(shape); ++i) {
        const std::int64_t k = (i / step) % n;
        if (k >= m) continue;
        out.push_back(a[static_cast<std::size_t>(i)].real() * scale);
        out.push_back(a[static_cast<std::size_t>(i)].imag() * scale);
    }
    return out;
}

template <class T>
void check_case(const FftCase& c, lt::Device device) {
    namespace g = lt::detail::graph;
    double n = 1;
    for (int a : c.axes) n *= double(c.shape[static_cast<std::size_t>(a)]);
    const double scale = c.scale == 0 ? 1 : c.scale == 1 ? 1 / n : 1 / std::sqrt(n);
    // The input: real space for R2C, else complex [..., 2] (C2R: the half spectrum).
    lt::Shape in_shape(c.shape.begin(), c.shape.end());
    if (c.kind == FftKind::C2R) in_shape[static_cast<std::size_t>(c.axes.back())] = in_shape[static_cast<std::size_t>(c.axes.back())] / 2 + 1;
    if (c.kind != FftKind::R2C) in_shape.push_back(2);
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> value(-1, 1);
    std::vector<T> data(static_cast<std::size_t>(lt::numel(in_shape)));
    std::vector<double> exact(data.size());
    for (std::size_t i = 0; i < data.size(); ++i) exact[i] = data[i] = static_cast<T>(value(gen));
    const std::vector<double> want = reference(c, exact, scale);

    const lt::Tensor<T> x = lt::tensor<T>(data, in_shape, device).realize();
    const std::int64_t real_n = c.shape[static_cast<std::size_t>(c.axes.back())];
    const lt::detail::NodePtr node = g::fft(x.build(), c.kind, c.inverse, c.axes, real_n, scale);
    const lazytensor::detail::ir::Fft call = g::fft_call(*node);  // before realizing, which makes the node a buffer
    const std::vector<T> got = lt::Tensor<T>(node).to_vector();
    REQUIRE(got.size() == want.size());
    double largest = 0, error = 0;
    for (std::size_t i = 0; i < got.size(); ++i) {
        largest = std::max(largest, std::abs(want[i]));
        error = std::max(error, std::abs(double(got[i]) - want[i]));
    }
    CHECK(error <= (sizeof(T) == 4 ? 1e-5 : 1e-12) * largest);
    CHECK(x.to_vector() == data);  // the operand is read, never written

#if LAZYTENSOR_OPENCL
    if (device.kind == lt::Device::Kind::OpenCL) {
        // Which path it took: VkFFT where its configuration expresses the layout (in a build
        // with VkFFT, and the device has float64 for double), else through host memory.
        auto& backend = lt::detail::opencl::opencl_backend(device.index);
        const std::string routine = backend.fft_routine(call);
        INFO(routine);
        CHECK((routine.rfind("VkFFT ", 0) == 0) == (c.vkfft && backend.fft_has_vkfft()));
        if (!c.vkfft || !backend.fft_has_vkfft()) CHECK(routine.rfind("the host FFT engine", 0) == 0);
    }
#endif
}

}  // namespace

#if LAZYTENSOR_OPENCL
/// VkFFT on an OpenCL device while it lives, whatever the device's kind (CPU devices such as
/// PoCL run the host engine by default), where the build has VkFFT.
struct ForceVkfft {
    lazytensor::detail::opencl::OpenCLBackend* backend = nullptr;
    lazytensor::detail::opencl::FftChoice old{};
    explicit ForceVkfft(lt::Device d) {
        if (d.kind != lt::Device::Kind::OpenCL || !lazytensor::detail::opencl::OpenCLBackend::fft_has_vkfft()) return;
        backend = &lazytensor::detail::opencl::opencl_backend(d.index);
        old = backend->fft_choice();
        backend->set_fft_choice(lazytensor::detail::opencl::FftChoice::VkFFT);
    }
    ForceVkfft(const ForceVkfft&) = delete;
    ForceVkfft& operator=(const ForceVkfft&) = delete;
    ~ForceVkfft() {
        if (backend) backend->set_fft_choice(old);
    }
};
#else
struct ForceVkfft {
    explicit ForceVkfft(lt::Device) {}
};
#endif

TEST_CASE("fft nodes: C2C, R2C and C2R on every device against a direct DFT") {
    for_each_device([](lt::Device device) {
        const ForceVkfft vkfft(device);
        for (const FftCase& c : kCases) {
            INFO(std::string(c.name) << " (float)");
            check_case<float>(c, device);
        }
        // Double on a selection (each new VkFFT plan compiles kernels: on PoCL 0.1 to 0.6 s).
        for (int i : {0, 4, 12, 17}) {
            INFO(std::string(kCases[i].name) << " (double)");
#if LAZYTENSOR_OPENCL
            if (device.kind == lt::Device::Kind::OpenCL && !lt::detail::opencl::opencl_backend(device.index).supports_float64()) {
                MESSAGE("no float64 on " << device.str() << ": double left out");
                continue;
            }
#endif
            check_case<double>(kCases[i], device);
        }
    });
}

#if LAZYTENSOR_OPENCL
TEST_CASE("fft nodes: OpenCL keeps as many VkFFT plans as kernels" * doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for (lt::Device device : test_devices()) {
        if (device.kind != lt::Device::Kind::OpenCL) continue;
        INFO("device: " << device.str());
        const ForceVkfft vkfft(device);
        auto& backend = lt::detail::opencl::opencl_backend(device.index);
        const std::size_t capacity = backend.cache_capacity();
        backend.set_cache_capacity(2);
        for (std::int64_t n : {4, 6, 10, 10}) {
            const lt::Tensor<float> x = lt::zeros<float>({n, 2}, device).realize();
            const std::vector<float> y =
                lt::Tensor<float>(lt::detail::graph::fft(x.build(), FftKind::C2C, false, {0}, n, 1)).to_vector();
            CHECK(y == std::vector<float>(static_cast<std::size_t>(2 * n), 0.0f));
            // A build without VkFFT keeps no plans at all.
            CHECK(backend.cached_fft_plans() <= 2);
        }
        CHECK(backend.cached_fft_plans() == (backend.fft_has_vkfft() ? 2u : 0u));
        backend.clear_kernel_cache();
        CHECK(backend.cached_fft_plans() == 0);
        backend.set_cache_capacity(capacity);
    }
}
#endif

#if LAZYTENSOR_OPENCL
TEST_CASE("fft nodes: LAZYTENSOR_OPENCL_FFT=host and the auto choice on OpenCL" * doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    namespace ocl = lazytensor::detail::opencl;
    for (lt::Device device : test_devices()) {
        if (device.kind != lt::Device::Kind::OpenCL) continue;
        INFO("device: " << device.str());
        auto& backend = ocl::opencl_backend(device.index);
        const ocl::FftChoice old = backend.fft_choice();
        const lazytensor::detail::ir::Fft call{FftKind::C2C, false, lt::DType::Float32, {8}, {0}, 1};
        backend.set_fft_choice(ocl::FftChoice::Host);
        CHECK(backend.fft_routine(call).rfind("the host FFT engine", 0) == 0);
        // Auto: VkFFT except on CPU devices (where the build has it).
        backend.set_fft_choice(ocl::FftChoice::Auto);
        CHECK((backend.fft_routine(call).rfind("VkFFT ", 0) == 0) == (backend.fft_has_vkfft() && backend.kind() != "cpu"));
        if (!backend.fft_has_vkfft()) CHECK_THROWS_AS(backend.set_fft_choice(ocl::FftChoice::VkFFT), lt::DeviceError);
        backend.set_fft_choice(old);
        // The host path gives the same transform: [1, 0, 0, 0] -> all ones.
        backend.set_fft_choice(ocl::FftChoice::Host);
        const lt::Tensor<float> x = lt::tensor<float>({1, 0, 0, 0, 0, 0, 0, 0}, device).reshape({4, 2}).realize();
        const std::vector<float> y = lt::Tensor<float>(lazytensor::detail::graph::fft(x.build(), FftKind::C2C, false, {0}, 4, 1)).to_vector();
        backend.set_fft_choice(old);
        CHECK(y == std::vector<float>{1, 0, 1, 0, 1, 0, 1, 0});
    }
}
#endif

#if LAZYTENSOR_OPENCL
TEST_CASE("fft nodes: a VkFFT failure is a BackendError naming the call and the device, and loses nothing" *
          doctest::skip(!has_test_device(lt::Device::Kind::OpenCL))) {
    for (lt::Device device : test_devices()) {
        if (device.kind != lt::Device::Kind::OpenCL) continue;
        INFO("device: " << device.str());
        const ForceVkfft vkfft(device);
        auto& backend = lt::detail::opencl::opencl_backend(device.index);
        const lt::Tensor<float> x = lt::tensor<float>({0, 0, 1, 0, 0, 0}, device).reshape({3, 2}).realize();
        lt::Tensor<float> y(lazytensor::detail::graph::fft(x.build(), FftKind::C2C, true, {0}, 3, 1));
        lt::synchronize(device);
        // A lost device (a null queue): VkFFT's launch fails.
        cl_command_queue queue = backend.exchange_queue(nullptr);
        struct Restore {
            lazytensor::detail::opencl::OpenCLBackend& b;
            cl_command_queue q;
            ~Restore() { b.exchange_queue(q); }
        } restore{backend, queue};
        std::string message;
        try {
            y.realize();
        } catch (const lt::BackendError& e) {
            message = e.what();
        }
        INFO(message);
        if (backend.fft_has_vkfft()) {
            CHECK(message.find("VkFFT") != std::string::npos);
            CHECK(message.find("VKFFT_ERROR") != std::string::npos);
            CHECK(message.find("fft c2c inverse of float32, shape [3]") != std::string::npos);
        }
        CHECK(message.find(device.str()) != std::string::npos);
        CHECK_FALSE(y.is_realized());
        backend.exchange_queue(queue);
        restore.q = queue;
        // Back: the transform runs. The inverse DFT of [0, 1, 0] is exp(2 pi i k / 3).
        const std::vector<float> got = y.to_vector();
        const double c = std::cos(2 * M_PI / 3), s = std::sin(2 * M_PI / 3);
        const std::vector<double> want{1, 0, c, s, c, -s};
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-6));
        CHECK(x.to_vector() == std::vector<float>{0, 0, 1, 0, 0, 0});
    }
}
#endif

TEST_CASE("fft nodes: a transposed lazy operand is materialized for the device's FFT") {
    for_each_device([](lt::Device device) {
        const ForceVkfft vkfft(device);
        // x[j][b] = j + 10 b (real parts; imaginary 0), j < 4, b < 3; the operand is 2 x^T,
        // [3, 4, 2], a lazy expression over a transposed view, transformed along its axis 1.
        std::vector<float> data;
        for (int j = 0; j < 4; ++j)
            for (int b = 0; b < 3; ++b) data.insert(data.end(), {float(j + 10 * b), 0.0f});
        const lt::Tensor<float> x = lt::tensor<float>(data, lt::Shape{4, 3, 2}, device).realize();
        const lt::Tensor<float> operand = x.transpose(0, 1) * 2.0f;
        const std::vector<float> got =
            lt::Tensor<float>(lazytensor::detail::graph::fft(operand.build(), FftKind::C2C, false, {1}, 4, 1)).to_vector();
        // DFT of 2 (j + 10 b), j = 0..3: bin 0 = 2 (6 + 40 b), bin k > 0 = 2 * sum_j j w^jk =
        // 2 * (-2 + 2i, -2, -2 - 2i) for k = 1, 2, 3 (w = exp(-2 pi i / 4)).
        std::vector<float> want;
        for (int b = 0; b < 3; ++b) want.insert(want.end(), {float(2 * (6 + 40 * b)), 0, -4, 4, -4, 0, -4, -4});
        REQUIRE(got.size() == want.size());
        for (std::size_t i = 0; i < want.size(); ++i) CHECK(got[i] == doctest::Approx(want[i]).epsilon(1e-5));
    });
}

TEST_CASE("fft nodes: a real round trip of 2^20 (transforms of several stages)") {
    for_each_device([](lt::Device device) {
        const ForceVkfft vkfft(device);
        const std::int64_t n = std::int64_t(1) << 20;
        std::vector<float> data(static_cast<std::size_t>(n));
        std::mt19937 gen(11);
        std::uniform_real_distribution<float> value(-1, 1);
        for (float& v : data) v = value(gen);
        const lt::Tensor<float> x = lt::tensor<float>(data, lt::Shape{n}, device).realize();
        namespace g = lazytensor::detail::graph;
        const lazytensor::detail::NodePtr spectrum = g::fft(x.build(), FftKind::R2C, false, {0}, n, 1);
        const std::vector<float> back = lt::Tensor<float>(g::fft(spectrum, FftKind::C2R, true, {0}, n, 1.0 / double(n))).to_vector();
        REQUIRE(back.size() == data.size());
        // Two transforms of float: a few times 1e-7 log2(n) of the largest value (1).
        double error = 0;
        for (std::size_t i = 0; i < data.size(); ++i) error = std::max(error, std::abs(double(back[i]) - double(data[i])));
        CHECK(error <= 1e-5);
    });
}
