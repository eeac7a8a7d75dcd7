// SPDX-License-Identifier: MIT
// Must not compile: % of two bool tensors (a composite keeps the rule of the op it was).
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<bool> a = lt::full<bool>({3}, true);
    auto e = a % a;
    (void)e;
}
