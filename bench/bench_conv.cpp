// SPDX-License-Identifier: MIT
// Issue 46's convolution table: ResNet-18's layers (batch 32 on OpenCL, 8 on the host), the
// forward pass, and the backward pass (the input's and the weight's gradients from a given
// output gradient). Each timing is the wall clock of a realize and a synchronize, median of 15
// after a warm-up, on inputs already on the device. The last line is one training step of a
// small CNN (issue 46's train_cnn-sized model at batch 256). bench/conv_peer.py times PyTorch the same
// way (cuDNN, TF32 off; or the CPU); bench/run_conv_gpu.sh runs both and prints the ratios.
//
//   bench_conv [--device host|opencl:N] [--batch B] [--quick] [--items] [--winograd auto|on|off]
//
// --winograd: how the 3x3 stride-1 layers run (LAZYTENSOR_CONV_WINOGRAD): auto (the device
// decides; none chooses Winograd today), on (Winograd F(4x4, 3x3)), or off (im2col and a GEMM); the
// lines are the same either way, so that bench/print_ratios.py pairs each run with the peer's.
//
// --items: after each layer's timings, one more forward and backward with LAZYTENSOR_DEBUG=3,
// which lists every schedule item with its own time on stderr.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <lazytensor.hpp>
#include <string>
#include <vector>

#include "median_ms.hpp"

namespace lt = lazytensor;

struct Layer {
    const char* name;
    std::int64_t in, out, size, kernel, stride, groups;
};

int main(int argc, char** argv) {
    lt::Device d = lt::Device::host();
    std::int64_t batch = 0;
    bool quick = false, items = false;
    for (int i = 1; i < argc; ++i) {
        if (!std::strcmp(argv[i], "--device") && i + 1 < argc) d = lt::detail::parse_device(argv[++i]);
        else if (!std::strcmp(argv[i], "--batch") && i + 1 < argc) batch = std::atoll(argv[++i]);
        else if (!std::strcmp(argv[i], "--quick")) quick = true;
        else if (!std::strcmp(argv[i], "--items")) items = true;
        else if (!std::strcmp(argv[i], "--winograd") && i + 1 < argc) setenv("LAZYTENSOR_CONV_WINOGRAD", argv[++i], 1);
    }
    const char* winograd = std::getenv("LAZYTENSOR_CONV_WINOGRAD");
    const bool host = d == lt::Device::host();
    if (batch == 0) batch = quick ? 2 : host ? 8 : 32;
    for (const auto& info : lt::devices())
        if (info.device == d) std::printf("bench_conv on %s (%s), batch %lld, Winograd %s\n", d.str().c_str(), info.name.c_str(),
                        (long long)batch, winograd && *winograd ? winograd : "auto");
    const std::vector<Layer> layers = {
        {"64->64 56x56 3x3", 64, 64, 56, 3, 1, 1},       {"128->128 28x28 3x3", 128, 128, 28, 3, 1, 1},
        {"256->256 14x14 3x3", 256, 256, 14, 3, 1, 1},   {"512->512 7x7 3x3", 512, 512, 7, 3, 1, 1},
        {"64->128 56x56 3x3 stride 2", 64, 128, 56, 3, 2, 1}, {"1x1 64->256 56x56", 64, 256, 56, 1, 1, 1},
        {"depthwise 3x3 256 28x28", 256, 256, 28, 3, 1, 256},
    };
    unsigned seed = 1;
    for (const Layer& l : layers) {
        const std::int64_t pad = l.kernel / 2;
        const lt::Tensor<float> x = lt::randn<float>({batch, l.in, l.size, l.size}, seed++, d).realize();
        const lt::Tensor<float> w =
            (lt::randn<float>({l.out, l.in / l.groups, l.kernel, l.kernel}, seed++, d) * 0.05f).realize();
        lt::Tensor<float> y = lt::conv2d(x, w, std::nullopt, l.stride, pad, 1, l.groups).realize();
        const lt::Tensor<float> gy = lt::randn<float>(y.shape(), seed++, d).realize();
        std::printf("%-52s %9.3f ms\n", (std::string("forward ") + l.name).c_str(),
                    median_ms(d, [&] { y = lt::conv2d(x, w, std::nullopt, l.stride, pad, 1, l.groups).realize(); }));
        std::printf("%-52s %9.3f ms\n", (std::string("backward ") + l.name).c_str(), median_ms(d, [&] {
                        auto g = lt::vjp({lt::conv2d(x, w, std::nullopt, l.stride, pad, 1, l.groups)}, {x, w}, {gy});
                        lt::realize({g[0], g[1]});
                    }));
        if (items) {
            lt::set_debug_level(3);
            std::fprintf(stderr, "==== forward %s\n", l.name);
            y = lt::conv2d(x, w, std::nullopt, l.stride, pad, 1, l.groups).realize();
            std::fprintf(stderr, "==== backward %s\n", l.name);
            auto g = lt::vjp({lt::conv2d(x, w, std::nullopt, l.stride, pad, 1, l.groups)}, {x, w}, {gy});
            lt::realize({g[0], g[1]});
            lt::set_debug_level(0);
        }
    }
    // One training step of a small CNN on 8x8 images (examples/train_cnn.cpp's size: conv 1->8,
    // relu, max pool, conv 8->16, relu, max pool, linear 64->10, cross-entropy), batch 256:
    // forward, gradients and the SGD update of every parameter, realized together.
    const std::int64_t images = quick ? 16 : 256;
    const lt::Tensor<float> x = lt::rand<float>({images, 1, 8, 8}, seed++, d).realize();
    const lt::Tensor<std::int64_t> labels = lt::randint<std::int64_t>(0, 10, {images}, seed++, d).realize();
    std::vector<lt::Tensor<float>> params = {
        (lt::randn<float>({8, 1, 3, 3}, seed++, d) * 0.3f).realize(), lt::zeros<float>({8}, d).realize(),
        (lt::randn<float>({16, 8, 3, 3}, seed++, d) * 0.1f).realize(), lt::zeros<float>({16}, d).realize(),
        (lt::randn<float>({64, 10}, seed++, d) * 0.1f).realize(), lt::zeros<float>({10}, d).realize()};
    auto step = [&] {
        auto h = lt::max_pool2d(lt::relu(lt::conv2d(x, params[0], params[1], 1, 1)), 2);
        h = lt::max_pool2d(lt::relu(lt::conv2d(h, params[2], params[3], 1, 1)), 2);
        const lt::Tensor<float> logits = lt::matmul(h.reshape({images, 64}), params[4]) + params[5];
        const lt::Tensor<float> loss = lt::cross_entropy(logits, labels);
        const std::vector<lt::Tensor<float>> g = lt::grad(loss, params);
        std::vector<lt::TensorRef> out{loss};
        for (std::size_t i = 0; i < params.size(); ++i) {
            params[i] = params[i] - g[i] * 0.1f;
            out.push_back(params[i]);
        }
        lt::realize(out);
    };
    std::printf("%-52s %9.3f ms\n", (std::string("train step, small CNN, batch ") + std::to_string(images)).c_str(),
                median_ms(d, step));
}
