// SPDX-License-Identifier: MIT
// Must not compile: sign of a bool tensor (a composite keeps the rule of the op it was).
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<bool> mask = lt::full<bool>({3}, true);
    auto e = lt::sign(mask);
    (void)e;
}
