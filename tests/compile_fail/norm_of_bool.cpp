// SPDX-License-Identifier: MIT
// Must not compile: a norm of bool values (PyTorch rejects it too); cast first.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<bool> x = lt::full<bool>({3}, true);
    auto n = lt::norm(x);
    (void)n;
}
