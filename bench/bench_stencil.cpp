// SPDX-License-Identifier: MIT
// Stencils iterated lazily (issue 54): a 1-D three-point stencil with pad, realized only at the
// end after 10 and 40 steps and realized every step, and the 2-D heat equation on 2048^2 for 200
// steps, written with pad (realized at the end, and every step) and with assign into the interior.
// Each row is the wall clock of building, realizing and synchronizing the whole loop: median of
// 15 runs (1-D) or 3 (2-D) after a warm-up run. bench/stencil_peer.py runs the same rows in
// NumPy (--numpy) or PyTorch, in the same order, for bench/print_ratios.py.
//
//   bench_stencil [--device host|opencl:N] [--steps2d 200]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <lazytensor.hpp>
#include <lazytensor/core/device.hpp>
#include <string>
#include <thread>
#include <vector>

#include "median_ms.hpp"

namespace lt = lazytensor;

namespace {

lt::Tensor<float> stencil_1d(lt::Tensor<float> u) {
    return lt::pad(u.slice(0, 0, -2) + u.slice(0, 2, {}), {{1, 1}}, 0.0f);
}

// The five-point Laplacian of u's interior.
lt::Tensor<float> laplacian(const lt::Tensor<float>& u) {
    return u.slice(0, 0, -2).slice(1, 1, -1) + u.slice(0, 2, {}).slice(1, 1, -1) + u.slice(0, 1, -1).slice(1, 0, -2) +
           u.slice(0, 1, -1).slice(1, 2, {}) - 4.0f * u.slice(0, 1, -1).slice(1, 1, -1);
}

lt::Tensor<float> heat_pad(const lt::Tensor<float>& u, float c) { return u + lt::pad(c * laplacian(u), {{1, 1}, {1, 1}}, 0.0f); }

lt::Tensor<float> interior_update(const lt::Tensor<float>& u, float c) { return u.slice(0, 1, -1).slice(1, 1, -1) + c * laplacian(u); }

}  // namespace

int main(int argc, char** argv) {
    lt::Device device = lt::Device::host();
    int steps2d = 200;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--device") && i + 1 < argc) device = lt::detail::parse_device(argv[++i]);
        else if (!std::strcmp(argv[i], "--steps2d") && i + 1 < argc) steps2d = std::atoi(argv[++i]);
    }
    lt::set_default_device(device);
    std::string name = device.str();
    for (const auto& info : lt::devices())
        if (info.device == device) name = info.name;
    std::printf("bench_stencil on %s (%u hardware threads)\n", name.c_str(), std::thread::hardware_concurrency());

    lt::Tensor<float> u1 = lt::rand<float>({1 << 16}, 1);
    u1.realize();
    float check1 = 0;
    auto lazy_1d = [&](int k) {
        lt::Tensor<float> u = u1;
        for (int i = 0; i < k; ++i) u = stencil_1d(u);
        check1 = lt::sum(u * 1e-12f).item();
    };
    auto eager_1d = [&](int k) {
        lt::Tensor<float> u = u1;
        for (int i = 0; i < k; ++i) {
            u = stencil_1d(u);
            u.realize();
        }
        check1 = lt::sum(u * 1e-12f).item();
    };
    const double l10 = median_ms(device, [&] { lazy_1d(10); });
    const double l40 = median_ms(device, [&] { lazy_1d(40); });
    const float lazy_check = check1;
    const double e40 = median_ms(device, [&] { eager_1d(40); });
    std::printf("1-D stencil 2^16, 10 steps, realized at the end  %.3f ms\n", l10);
    std::printf("1-D stencil 2^16, 40 steps, realized at the end  %.3f ms\n", l40);
    std::printf("1-D stencil 2^16, 40 steps, realized every step  %.3f ms\n", e40);
    std::printf("  40 / 10 steps lazily: %.2f (linear: 4); lazy / every step: %.2f; checksums %.6g %.6g\n", l40 / l10,
                l40 / e40, lazy_check, check1);

    const float c = 0.1f;
    lt::Tensor<float> u0 = lt::rand<float>({2048, 2048}, 2);
    u0.realize();
    float sum_lazy = 0, sum_each = 0, sum_assign = 0;
    const double pad_lazy = median_ms(device, [&] {
        lt::Tensor<float> u = u0;
        for (int i = 0; i < steps2d; ++i) u = heat_pad(u, c);
        u.realize();
        sum_lazy = lt::sum(u).item();
    }, 3);
    const double pad_each = median_ms(device, [&] {
        lt::Tensor<float> u = u0;
        for (int i = 0; i < steps2d; ++i) {
            u = heat_pad(u, c);
            u.realize();
        }
        sum_each = lt::sum(u).item();
    }, 3);
    const double assign = median_ms(device, [&] {
        lt::Tensor<float> u = u0 + 0.0f, v = u0 + 0.0f;  // copies: the steps write into them
        lt::realize({u, v});
        for (int i = 0; i < steps2d; ++i) {
            v.slice(0, 1, -1).slice(1, 1, -1).assign(interior_update(u, c));
            std::swap(u, v);
        }
        sum_assign = lt::sum(u).item();
    }, 3);
    std::printf("heat 2048^2, %d steps, pad, realized at the end  %.3f ms\n", steps2d, pad_lazy);
    std::printf("heat 2048^2, %d steps, pad, realized every step  %.3f ms\n", steps2d, pad_each);
    std::printf("heat 2048^2, %d steps, assign into the interior  %.3f ms\n", steps2d, assign);
    std::printf("  checksums %.7g %.7g %.7g\n", sum_lazy, sum_each, sum_assign);
    return 0;
}
