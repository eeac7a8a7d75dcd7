// SPDX-License-Identifier: MIT
// Must not compile: lt::norm(x, 2, true) would be the norm along axis 1 (the bool converts to an
// int axis); keepdim is the fourth argument.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> x = lt::full<float>({2, 3}, 1.0f);
    auto n = lt::norm(x, 2, true);
    (void)n;
}
