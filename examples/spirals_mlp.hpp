// SPDX-License-Identifier: MIT
// What train_mlp.cpp and train_mlp_dp.cpp share: the two-spirals data set, the perceptron and
// Adam written in lazytensor ops.
#pragma once

#include <cmath>
#include <cstdint>
#include <lazytensor.hpp>
#include <vector>

namespace lt = lazytensor;

struct Data {
    lt::Tensor<float> points;          // [n, 2]
    lt::Tensor<std::int64_t> labels;   // [n]: 0 or 1, the spiral each point lies on
};

// Two spirals of two turns: along each, the angle t runs over [0.5, 4.5] pi and the radius
// grows with it; the second is the first turned by pi. A little noise is added to each point.
inline Data spirals(std::int64_t n, lt::Device device) {
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

// w1 [2, 64], b1 [64], w2 [64, 64], b2 [64], w3 [64, 2], b3 [2]; He initialization (the same
// on every device and every process: the seeds decide).
inline std::vector<lt::Tensor<float>> initial_params(lt::Device device) {
    std::vector<lt::Tensor<float>> params;
    const std::int64_t sizes[] = {2, 64, 64, 2};
    for (int l = 0; l < 3; ++l) {
        params.push_back(lt::randn<float>({sizes[l], sizes[l + 1]}, 100 + l, device) * std::sqrt(2.0f / float(sizes[l])));
        params.push_back(lt::zeros<float>({sizes[l + 1]}, device));
    }
    return params;
}

inline lt::Tensor<float> logits_of(const std::vector<lt::Tensor<float>>& p, const lt::Tensor<float>& x) {
    lt::Tensor<float> h = lt::relu(x.matmul(p[0]) + p[1]);
    h = lt::relu(h.matmul(p[2]) + p[3]);
    return lt::Tensor<float>(h.matmul(p[4]) + p[5]);
}
