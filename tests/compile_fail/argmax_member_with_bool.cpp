// SPDX-License-Identifier: MIT
// Must not compile: x.argmax(true) would take the bool for axis 1; the members reject a
// floating or bool axis as the free functions do.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> x = lt::full<float>({3, 2}, 1.0f);
    x.argmax(true);
}
