// SPDX-License-Identifier: MIT
// The README example: build lazy expressions, realize them, read the results.
#include <iostream>
#include <lazytensor.hpp>

namespace lt = lazytensor;

int main() {
    lt::Tensor<float> a = lt::tensor<float>({1, 2, 3, 4, 5, 6}, {2, 3});  // data + shape
    lt::Tensor<float> b = lt::full<float>({2, 3}, 0.5f);
    auto e = lt::exp(a) * b + 1.0f;  // an expression (its C++ type is the tree); nothing runs
    lt::Tensor<float> c = e;         // still lazy: a graph node
    c.realize();                     // schedule, compile, run on the default device

    std::vector<float> v = c.to_vector();          // the values, row-major
    float s = lt::sum(c).item();                   // a 0-d result
    lt::Tensor<float> r = c.sum(1, /*keepdim=*/true) / 3.0f;

    std::cout << "c = " << c << "\n";
    std::cout << "v[5] = " << v[5] << ", sum(c) = " << s << "\n";
    std::cout << "row means = " << r << "\n";

    // One kernel: the whole softmax of each row (max, subtract, exp, sum, divide) is fused.
    lt::Tensor<float> x = lt::arange<float>(12).reshape({3, 4});
    lt::Tensor<float> z = lt::exp(x - x.max(1, true));
    lt::Tensor<float> softmax = z / z.sum(1, true);
    std::cout << "softmax kernels: " << lt::kernel_count(lt::schedule(softmax)) << "\n";
    std::cout << "softmax = " << softmax << "\n";

    // Devices: the host always; then every OpenCL device (a GPU, PoCL on the CPU, ...).
    for (const lt::DeviceInfo& d : lt::devices()) std::cout << "device " << d.device << ": " << d.name << "\n";
    for (const lt::DeviceInfo& d : lt::devices()) {
        if (d.device.kind != lt::Device::Kind::OpenCL) continue;
        lt::Tensor<float> xd = x.to(d.device);  // a copy on the device; the same code runs there
        lt::Tensor<float> zd = lt::exp(xd - xd.max(1, true));
        lt::Tensor<float> softmax_d = zd / zd.sum(1, true);  // one generated OpenCL kernel
        std::cout << "softmax on " << d.device << " = " << softmax_d << "\n";
        break;
    }
    return 0;
}
