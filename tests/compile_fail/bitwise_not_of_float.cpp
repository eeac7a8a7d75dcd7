// SPDX-License-Identifier: MIT
// Must not compile: bitwise not of a float tensor.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> x = lt::full<float>({3}, 1.0f);
    auto e = ~x;
    (void)e;
}
