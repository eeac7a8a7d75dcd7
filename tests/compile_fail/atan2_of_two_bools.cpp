// SPDX-License-Identifier: MIT
// Must not compile: a floating function of two bool tensors (as arithmetic on them).
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<bool> a = lt::full<bool>({3}, true);
    auto e = lt::atan2(a, a);
    (void)e;
}
