// SPDX-License-Identifier: MIT
// Must not compile: a shift of two bool tensors.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<bool> m = lt::full<bool>({3}, true);
    auto e = lt::right_shift(m, m);
    (void)e;
}
