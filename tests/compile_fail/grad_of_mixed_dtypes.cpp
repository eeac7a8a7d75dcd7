// SPDX-License-Identifier: MIT
// Must not compile: lt::grad with parameters of two dtypes in one list (a list has one element
// type); the message says to take the gradients once per dtype.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> a = lt::ones<float>({2});
    lt::Tensor<double> b = lt::ones<double>({2});
    auto loss = lt::sum(a * b);
    auto g = lt::grad(loss, {a, b});
    (void)g;
}
