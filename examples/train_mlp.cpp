// SPDX-License-Identifier: MIT
// Training a small classifier from scratch: two interleaved spirals (made with lt::rand), a
// 2 -> 64 -> 64 -> 2 perceptron, cross-entropy loss, and Adam written in lazytensor ops. Each
// step is one lazy graph (forward, lt::grad's backward, the Adam update) realized in one call;
// its scalars (the step's bias corrections) are kernel parameters, so after the first step
// nothing is compiled again.
//
//   ./train_mlp [steps]      (LAZYTENSOR_DEVICE=opencl:0 trains on an OpenCL device, and then on
//                             the host as well, to check that both give the same result)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "spirals_mlp.hpp"

struct Result {
    float loss = 0, accuracy = 0;
    std::size_t compiled_first = 0, compiled_later = 0;  // kernels compiled in steps 0 and 1, and after them
};

Result train(lt::Device device, int steps, bool verbose) {
    const Data train_set = spirals(2048, device);
    std::vector<lt::Tensor<float>> params = initial_params(device);
    Adam adam;
    Result r;
    lt::reset_compile_stats(device);
    for (int step = 0; step < steps; ++step) {
        // Steps 0 and 1 compile (step 0's moments are zeros, constants folded into its kernels);
        // every later step has their structure and only new scalar values.
        if (step == 2) {
            r.compiled_first = lt::compile_stats(device).kernels_compiled;
            lt::reset_compile_stats(device);
        }
        // Forward, backward and update, realized in one schedule.
        auto [loss, grads] = lt::value_and_grad(
            [&](const std::vector<lt::Tensor<float>>& p) { return lt::cross_entropy(logits_of(p, train_set.points), train_set.labels); },
            params);
        params = adam.update(params, grads);
        std::vector<lt::TensorRef> outputs{loss};
        for (std::size_t i = 0; i < params.size(); ++i) {
            outputs.emplace_back(params[i]);
            outputs.emplace_back(adam.m[i]);
            outputs.emplace_back(adam.v[i]);
        }
        lt::realize(outputs);
        if (verbose && step % 100 == 0) std::printf("  step %4d: loss %.4f\n", step, loss.item());
    }
    r.compiled_later = lt::compile_stats(device).kernels_compiled;
    const lt::Tensor<float> logits = logits_of(params, train_set.points);
    r.loss = lt::cross_entropy(logits, train_set.labels).item();
    const auto predicted = lt::argmax(logits, 1);
    r.accuracy = lt::cast<float>(predicted == train_set.labels).mean().item();
    return r;
}

int main(int argc, char** argv) {
    const int steps = argc > 1 ? std::atoi(argv[1]) : 400;
    const lt::Device device = lt::default_device();
    std::printf("training a 2-64-64-2 perceptron on two spirals (2048 points) with Adam, %d steps, on %s\n", steps,
                device.str().c_str());
    const Result r = train(device, steps, true);
    std::printf("final loss %.4f, accuracy %.1f%%; kernels compiled: %zu in the first two steps, %zu in the %d after them\n",
                r.loss, r.accuracy * 100, r.compiled_first, r.compiled_later, steps - 2);
    bool ok = r.loss < 0.1f && r.accuracy >= 0.95f && r.compiled_later == 0;
    if (device != lt::Device::host()) {
        const Result host = train(lt::Device::host(), steps, false);
        const bool same = std::fabs(host.loss - r.loss) <= 0.01f && std::fabs(host.accuracy - r.accuracy) <= 0.01f;
        std::printf("on the host: final loss %.4f, accuracy %.1f%%: %s\n", host.loss, host.accuracy * 100,
                    same ? "the same within tolerance" : "DIFFERENT");
        ok = ok && same;
    }
    std::printf("check: %s\n", ok ? "passed" : "FAILED");
    return ok ? 0 : 1;
}
