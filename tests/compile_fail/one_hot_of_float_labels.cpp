// SPDX-License-Identifier: MIT
// Must not compile: one_hot of floating labels (positions must be integers).
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> labels = lt::tensor<float>({0.0f, 2.0f, 1.0f});
    auto h = lt::one_hot(labels, 3);
    (void)h;
}
