// SPDX-License-Identifier: MIT
// Must not compile: cross_entropy with floating class labels (they must be integers).
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> logits = lt::zeros<float>({2, 3});
    lt::Tensor<float> labels = lt::tensor<float>({0.0f, 2.0f});
    auto loss = lt::cross_entropy(logits, labels);
    (void)loss;
}
