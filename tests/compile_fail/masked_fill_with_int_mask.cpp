// SPDX-License-Identifier: MIT
// Must not compile: masked_fill with a mask that is not bool.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> x = lt::zeros<float>({3});
    lt::Tensor<int> m = lt::ones<int>({3});
    auto e = lt::masked_fill(x, m, 1.0f);
    (void)e;
}
