// SPDX-License-Identifier: MIT
// Must not compile: where with a floating condition (compare it first: where(c > 0, ...)).
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> c = lt::tensor<float>({0.0f, 0.5f, -1.0f});
    lt::Tensor<float> x = lt::ones<float>({3});
    auto e = lt::where(c, x, 0.0f);
    (void)e;
}
