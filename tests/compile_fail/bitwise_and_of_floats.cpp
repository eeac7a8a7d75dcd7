// SPDX-License-Identifier: MIT
// Must not compile: bitwise and of float tensors.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> a = lt::full<float>({3}, 1.0f);
    lt::Tensor<std::int32_t> b = lt::full<std::int32_t>({3}, 1);
    auto e = a & b;
    (void)e;
}
