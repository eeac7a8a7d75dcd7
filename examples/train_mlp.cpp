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
#include <lazytensor.hpp>
#include <vector>

namespace lt = lazytensor;

struct Data {
    lt::Tensor<float> points;          // [n, 2]
    lt::Tensor<std::int64_t> labels;   // [n]: 0 or 1, the spiral each point lies on
};

// Two spirals of two turns: along each, the angle t runs over [0.5, 4.5] pi and the radius
// grows with it; the second is the first turned by pi. A little noise is added to each point.
Data spirals(std::int64_t n, lt::Device device) {
    const float pi = 3.14159265f;
    lt::Tensor<float> t = (lt::rand<float>({n}, 11, device) * 4.0f + 0.5f) * pi;
    lt::Tensor<std::int64_t> label = lt::randint<std::int64_t>(0, 2, {n}, 12, device);
    lt::Tensor<float> angle = t + lt::cast<float>(label) * pi, radius = t / (4.5f * pi);
    lt::Tensor<float> x = radius * lt::cos(angle), y = radius * lt::sin(angle);
    Data d{lt::stack({x, y}, 1) + lt::randn<float>({n, 2}, 13, device) * 0.02f, label};
    lt::realize({d.points, d.labels});
    return d;
}

struct Adam {
    float lr = 0.01f, beta1 = 0.9f, beta2 = 0.999f, eps = 1e-8f;
    int step = 0;
    std::vector<lt::Tensor<float>> m, v;

    // The updated parameters (lazy), and the moments replaced by their updated (lazy) values.
    std::vector<lt::Tensor<float>> update(const std::vector<lt::Tensor<float>>& params,
                                          const std::vector<lt::Tensor<float>>& grads) {
        ++step;
        const float c1 = 1.0f - std::pow(beta1, float(step)), c2 = 1.0f - std::pow(beta2, float(step));
        std::vector<lt::Tensor<float>> out;
        for (std::size_t i = 0; i < params.size(); ++i) {
            if (m.size() <= i) {
                m.push_back(lt::zeros_like(params[i]));
                v.push_back(lt::zeros_like(params[i]));
            }
            m[i] = m[i] * beta1 + grads[i] * (1.0f - beta1);
            v[i] = v[i] * beta2 + grads[i] * grads[i] * (1.0f - beta2);
            out.push_back(params[i] - (m[i] / c1) * lr / (lt::sqrt(v[i] / c2) + eps));
        }
        return out;
    }
};

struct Result {
    float loss = 0, accuracy = 0;
    std::size_t compiled_first = 0, compiled_later = 0;  // kernels compiled in steps 0 and 1, and after them
};

Result train(lt::Device device, int steps, bool verbose) {
    const Data train_set = spirals(2048, device);
    // params: w1 [2, 64], b1 [64], w2 [64, 64], b2 [64], w3 [64, 2], b3 [2]; He initialization.
    std::vector<lt::Tensor<float>> params;
    const std::int64_t sizes[] = {2, 64, 64, 2};
    for (int l = 0; l < 3; ++l) {
        params.push_back(lt::randn<float>({sizes[l], sizes[l + 1]}, 100 + l, device) * std::sqrt(2.0f / float(sizes[l])));
        params.push_back(lt::zeros<float>({sizes[l + 1]}, device));
    }
    auto logits_of = [&](const std::vector<lt::Tensor<float>>& p, const lt::Tensor<float>& x) {
        lt::Tensor<float> h = lt::relu(x.matmul(p[0]) + p[1]);
        h = lt::relu(h.matmul(p[2]) + p[3]);
        return lt::Tensor<float>(h.matmul(p[4]) + p[5]);
    };
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
