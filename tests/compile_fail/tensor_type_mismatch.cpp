// SPDX-License-Identifier: MIT
// Must not compile: a float expression assigned to a Tensor<int32_t> without a cast.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> a = lt::full<float>({3}, 1.5f);
    lt::Tensor<int32_t> b = a * 2.0f;
    (void)b;
}
