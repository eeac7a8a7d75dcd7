// SPDX-License-Identifier: MIT
// Must not compile: lt::max(x, 0.5f) would reduce along axis 0 (the float converts to an int
// axis); the element-wise maximum with a scalar is lt::maximum.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> x = lt::full<float>({3}, 1.0f);
    auto m = lt::max(x, 0.5f);
    (void)m;
}
