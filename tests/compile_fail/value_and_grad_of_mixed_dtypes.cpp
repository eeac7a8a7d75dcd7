// SPDX-License-Identifier: MIT
// Must not compile: lt::value_and_grad with parameters of two dtypes in one list.
#include <lazytensor.hpp>
namespace lt = lazytensor;
int main() {
    lt::Tensor<float> a = lt::ones<float>({2});
    lt::Tensor<double> b = lt::ones<double>({2});
    auto [loss, g] = lt::value_and_grad([&] { return lt::sum(a * b); }, {a, b});
    (void)loss;
    (void)g;
}
