// SPDX-License-Identifier: MIT
// Gradients exist for floating tensors only: asking for one of an integer tensor must not compile.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    auto w = lt::tensor<std::int32_t>({1, 2}, {2});
    auto g = lt::grad(lt::sum(w * w), w);
    (void)g;
}
