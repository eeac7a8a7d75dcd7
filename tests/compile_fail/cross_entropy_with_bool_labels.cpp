// SPDX-License-Identifier: MIT
// Must not compile: cross_entropy with bool class labels (they must be integers, e.g. int64).
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> logits = lt::zeros<float>({2, 2});
    lt::Tensor<bool> labels = lt::tensor<float>({0.0f, 1.0f}) > 0.5f;
    auto loss = lt::cross_entropy(logits, labels, lt::Reduction::None);
    (void)loss;
}
