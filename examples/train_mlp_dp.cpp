// SPDX-License-Identifier: MIT
// train_mlp.cpp's perceptron trained data-parallel: every rank makes the same data and the same
// initial parameters (the seeds decide), trains on its own rows of the batch, and averages its
// gradients with the others' (lt::dist::average_gradients: bucketed all-reduces that start while
// the backward pass still runs). Forward, backward, averaging and the Adam update are one
// realize per step. With equal rows per rank the averaged gradient is the whole batch's, so the
// ranks train the model train_mlp does, and hold the same parameters at every step.
//
//   mpirun -np 2 ./train_mlp_dp [steps]     (alone, ./train_mlp_dp is a group of one)
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "spirals_mlp.hpp"

int main(int argc, char** argv) {
    const int steps = argc > 1 ? std::atoi(argv[1]) : 400;
    const lt::dist::Group world = lt::dist::init();
    const lt::Device device = lt::default_device();
    const std::int64_t rows = 2048 / world.size();
    if (world.rank() == 0)
        std::printf("training a 2-64-64-2 perceptron on two spirals (2048 points) with Adam, %d steps, on %d rank%s "
                    "(%s) of %lld rows each, on %s\n",
                    steps, world.size(), world.size() == 1 ? "" : "s", world.describe().c_str(),
                    static_cast<long long>(rows), device.str().c_str());
    const Data all = spirals(rows * world.size(), device);  // the same on every rank
    const lt::Tensor<float> x = all.points.slice(0, world.rank() * rows, (world.rank() + 1) * rows);
    const lt::Tensor<std::int64_t> y = all.labels.slice(0, world.rank() * rows, (world.rank() + 1) * rows);
    std::vector<lt::Tensor<float>> params = initial_params(device);
    Adam adam;
    std::size_t compiled_later = 0;
    for (int step = 0; step < steps; ++step) {
        if (step == 2) lt::reset_compile_stats(device);
        auto [loss, grads] = lt::value_and_grad(
            [&](const std::vector<lt::Tensor<float>>& p) { return lt::cross_entropy(logits_of(p, x), y); }, params);
        params = adam.update(params, lt::dist::average_gradients(grads, world));
        const lt::Tensor<float> mean_loss = lt::dist::all_mean(loss, world);
        std::vector<lt::TensorRef> outputs{mean_loss};
        for (std::size_t i = 0; i < params.size(); ++i) {
            outputs.emplace_back(params[i]);
            outputs.emplace_back(adam.m[i]);
            outputs.emplace_back(adam.v[i]);
        }
        lt::realize(outputs);  // every rank, every step: the same collectives
        if (world.rank() == 0 && step % 100 == 0) std::printf("  step %4d: loss %.4f\n", step, mean_loss.item());
    }
    compiled_later = lt::compile_stats(device).kernels_compiled;

    // The whole batch's loss and accuracy, from each rank's rows; and whether the ranks' parameters
    // are the same bits (their largest and smallest values over the ranks agree).
    const lt::Tensor<float> logits = logits_of(params, x);
    const lt::Tensor<float> loss = lt::dist::all_mean(lt::cross_entropy(logits, y), world);
    const lt::Tensor<float> accuracy = lt::dist::all_mean(lt::cast<float>(lt::argmax(logits, 1) == y).mean(), world);
    lt::Tensor<bool> same = lt::full<bool>({}, true, device);
    for (const lt::Tensor<float>& p : params) same = same & (lt::dist::all_max(p, world) == lt::dist::all_min(p, world)).all();
    lt::realize({loss, accuracy, same});
    const bool ok = loss.item() < 0.1f && accuracy.item() >= 0.95f && compiled_later == 0 && same.item();
    if (world.rank() == 0) {
        std::printf("final loss %.4f, accuracy %.1f%%; kernels compiled after the second step: %zu; the ranks' parameters "
                    "are %s\n",
                    loss.item(), accuracy.item() * 100, compiled_later, same.item() ? "identical" : "DIFFERENT");
        std::printf("check: %s\n", ok ? "passed" : "FAILED");
    }
    lt::dist::finalize();
    return ok ? 0 : 1;
}
