// SPDX-License-Identifier: MIT
// The separate-runtime mode: this unit and separate_part.cpp see only the seam's declarations
// (LAZYTENSOR_SEPARATE_RUNTIME, set by lazytensor::runtime); the engine comes compiled, from the
// library's one LAZYTENSOR_IMPLEMENTATION unit (or, on a plain compile line, separate_impl.cpp).
#include <iostream>
#include <lazytensor.hpp>

namespace lt = lazytensor;

#if LAZYTENSOR_ENGINE_DEFINITIONS
#error "separate_main.cpp must be built with LAZYTENSOR_SEPARATE_RUNTIME (and without LAZYTENSOR_IMPLEMENTATION)"
#endif

lt::Tensor<float> softmax_rows(const lt::Tensor<float>& x);  // separate_part.cpp

int main() {
    bool ok = true;
    for (const lt::DeviceInfo& d : lt::devices()) {
        lt::Tensor<float> x = lt::arange<float>(6, d.device).reshape({2, 3});
        lt::Tensor<float> s = softmax_rows(x);
        std::vector<float> v = lt::sum(s, {1}).to_vector();  // each row sums to 1
        lt::Tensor<float> p = lt::matmul(x, x.t());           // [[5, 14], [14, 50]]
        bool right = std::abs(v[0] - 1) < 1e-6f && std::abs(v[1] - 1) < 1e-6f &&
                     p.to_vector() == std::vector<float>{5, 14, 14, 50};
        std::cout << "separate " << d.device << ": row sums " << v[0] << " " << v[1] << ", matmul " << p
                  << (right ? " ok" : " WRONG") << "\n";
        ok = ok && right;
    }
    return ok ? 0 : 1;
}
