// SPDX-License-Identifier: MIT
// Must not compile: exp of a bool tensor.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<bool> mask = lt::full<bool>({3}, true);
    auto e = lt::exp(mask);
    (void)e;
}
