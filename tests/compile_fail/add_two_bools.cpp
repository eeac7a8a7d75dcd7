// SPDX-License-Identifier: MIT
// Must not compile: arithmetic on two bool tensors.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<bool> a = lt::full<bool>({3}, true);
    auto e = a + a;
    (void)e;
}
