// SPDX-License-Identifier: MIT
// Uses the library through whichever way CMake found it, on every device it has.
#include <iostream>
#include <lazytensor.hpp>

namespace lt = lazytensor;

int main() {
    std::cout << "lazytensor " << lt::version() << ", OpenCL backend " << (LAZYTENSOR_OPENCL ? "on" : "off")
              << ", CLBlast " << (LAZYTENSOR_CLBLAST ? "on" : "off") << "\n";
    bool ok = true;
    for (const lt::DeviceInfo& d : lt::devices()) {
        lt::Tensor<float> x = lt::arange<float>(6, d.device).reshape({2, 3});
        float total = lt::sum(lt::relu(x - 1.0f) * 2.0f).item();  // 2 * (0+0+1+2+3+4) = 20
        lt::Tensor<float> p = lt::matmul(x, x.t());               // [[5, 14], [14, 50]]
        std::vector<float> pv = p.to_vector();
        bool right = total == 20.0f && pv == std::vector<float>{5, 14, 14, 50};
        std::cout << d.device << ": sum " << total << ", matmul " << p << (right ? " ok" : " WRONG") << "\n";
        ok = ok && right;
    }
    return ok ? 0 : 1;
}
