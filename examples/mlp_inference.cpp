// SPDX-License-Identifier: MIT
// Inference with a 3-layer perceptron (784 -> 512 -> 256 -> 10) on a batch: three matrix
// products (each run by the backend's GEMM: packed SIMD on the host, CLBlast on OpenCL) with the
// bias, relu and the final softmax fused into one kernel after each. The weights are random but
// deterministic (a seed per layer), so every device computes the same network.
//
//   ./mlp_inference [batch] [repeats]    (LAZYTENSOR_DEVICE=opencl:0 runs it on an OpenCL device)
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <lazytensor.hpp>
#include <vector>

namespace lt = lazytensor;

struct Layer {
    lt::Tensor<float> weight;  // [in, out]
    lt::Tensor<float> bias;    // [out]
};

// He initialization: normal values scaled by sqrt(2 / fan_in), realized once like loaded weights.
Layer make_layer(std::int64_t in, std::int64_t out, std::uint64_t seed, lt::Device device) {
    Layer layer{lt::randn<float>({in, out}, seed, device) * std::sqrt(2.0f / float(in)),
                lt::rand<float>({out}, seed + 1000, device) * 0.1f - 0.05f};
    lt::realize({layer.weight, layer.bias});
    return layer;
}

struct Mlp {
    Layer l1, l2, l3;
    explicit Mlp(lt::Device device)
        : l1(make_layer(784, 512, 1, device)), l2(make_layer(512, 256, 2, device)), l3(make_layer(256, 10, 3, device)) {}

    // The forward pass is one lazy expression; nothing runs until it is realized.
    lt::Tensor<float> operator()(const lt::Tensor<float>& x) const {
        lt::Tensor<float> h1 = lt::relu(lt::matmul(x, l1.weight) + l1.bias);
        lt::Tensor<float> h2 = lt::relu(lt::matmul(h1, l2.weight) + l2.bias);
        return lt::softmax(lt::matmul(h2, l3.weight) + l3.bias, /*axis=*/1);
    }
};

int main(int argc, char** argv) {
    const std::int64_t batch = argc > 1 ? std::atoll(argv[1]) : 256;
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 20;
    const lt::Device device = lt::default_device();
    const Mlp model(device);
    lt::Tensor<float> x = lt::rand<float>({batch, 784}, /*seed=*/7, device);  // a batch of "images"
    x.realize();

    lt::Tensor<float> probs = model(x);
    std::vector<lt::ScheduleItem> items = lt::schedule(probs);
    std::printf("forward pass of a batch of %lld on %s: %zu matmuls, %zu kernels\n", static_cast<long long>(batch),
                device.str().c_str(), items.size() - lt::kernel_count(items), lt::kernel_count(items));
    for (const lt::ScheduleItem& item : items) {
        std::printf("  %s:", lt::to_string(item.kind));
        for (const std::string& op : item.ops) std::printf(" %s", op.c_str());
        std::printf(" -> %s\n", item.output.c_str());
    }
    const std::vector<float> p = probs.to_vector();  // the first run compiles the kernels

    // Throughput: realize the forward pass of the same batch again and again (each realize
    // reuses the cached plan and kernels; to_vector waits for the device).
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < repeats; ++r) model(x).realize();
    lt::synchronize(device);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    const double flops = 2.0 * double(batch) * (784.0 * 512 + 512.0 * 256 + 256.0 * 10) * repeats;
    std::printf("throughput: %.0f samples/s, %.1f GFLOP/s (%d repeats, %.2f ms per batch)\n",
                double(batch) * repeats / seconds, flops / seconds * 1e-9, repeats, seconds / repeats * 1e3);

    // Check: each row of probabilities sums to 1; on another device, compare with the host.
    double worst_sum = 0;
    std::vector<int> votes(10, 0);
    for (std::int64_t r = 0; r < batch; ++r) {
        const float* row = p.data() + r * 10;
        double s = 0;
        for (int c = 0; c < 10; ++c) s += row[c];
        worst_sum = std::max(worst_sum, std::fabs(s - 1.0));
        ++votes[static_cast<std::size_t>(std::max_element(row, row + 10) - row)];
    }
    std::printf("predicted classes:");
    for (int v : votes) std::printf(" %d", v);
    std::printf("\nprobabilities sum to 1: %s (largest error %.1e)\n", worst_sum < 1e-5 ? "yes" : "no", worst_sum);
    bool same = true;
    if (device != lt::Device::host()) {
        const Mlp host_model(lt::Device::host());
        const std::vector<float> q = host_model(x.to(lt::Device::host())).to_vector();
        double diff = 0;
        for (std::size_t i = 0; i < p.size(); ++i) diff = std::max(diff, double(std::fabs(p[i] - q[i])));
        same = diff < 1e-4;
        std::printf("largest difference to the host: %.1e; matches the host: %s\n", diff, same ? "yes" : "no");
    }
    return worst_sum < 1e-5 && same ? 0 : 1;
}
