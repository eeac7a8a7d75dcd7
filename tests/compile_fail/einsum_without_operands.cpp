// SPDX-License-Identifier: MIT
// Must not compile: einsum with subscripts and no operand.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    auto t = lt::einsum("ii");
    (void)t;
}
