// SPDX-License-Identifier: MIT
// Renders the Mandelbrot set into a PGM image with tensor expressions: a grid of complex
// numbers c, and z <- z^2 + c iterated with `where` freezing the points that have escaped.
// Every iteration is one fused kernel over the whole image.
//
//   ./mandelbrot [out.pgm] [width] [iterations]    (LAZYTENSOR_DEVICE=opencl:0 for an OpenCL device)
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <lazytensor.hpp>
#include <string>

namespace lt = lazytensor;

int main(int argc, char** argv) {
    const std::string path = argc > 1 ? argv[1] : "mandelbrot.pgm";
    const std::int64_t width = argc > 2 ? std::atoll(argv[2]) : 900;
    const int iterations = argc > 3 ? std::atoi(argv[3]) : 100;
    const std::int64_t height = width * 2 / 3;
    const double x0 = -2.25, x1 = 0.75, y0 = -1.0, y1 = 1.0;  // the region shown: 3 x 2
    const lt::Device device = lt::default_device();

    // c = cr + i ci on a width x height grid: a row of real parts and a column of imaginary
    // parts, broadcast against each other (expand is a view: nothing is copied).
    lt::Tensor<float> cr = (lt::arange<float>(width, device) * float((x1 - x0) / width) + float(x0)).reshape({1, width});
    lt::Tensor<float> ci = (lt::arange<float>(height, device) * float((y1 - y0) / height) + float(y0)).reshape({height, 1});
    cr = cr.expand({height, width});
    ci = ci.expand({height, width});

    lt::Tensor<float> zr = lt::zeros<float>({height, width}, device);
    lt::Tensor<float> zi = lt::zeros<float>({height, width}, device);
    lt::Tensor<std::int32_t> count = lt::zeros<std::int32_t>({height, width}, device);
    for (int i = 0; i < iterations; ++i) {
        // Points with |z| <= 2 iterate; the others keep their value (where picks per element).
        lt::Tensor<bool> alive = zr * zr + zi * zi <= 4.0f;
        lt::Tensor<float> next_r = lt::where(alive, zr * zr - zi * zi + cr, zr);
        lt::Tensor<float> next_i = lt::where(alive, 2.0f * zr * zi + ci, zi);
        count = count + lt::cast<std::int32_t>(alive);
        zr = next_r;
        zi = next_i;
        // One schedule for the three results, so `alive` is computed once for all of them.
        lt::realize({zr, zi, count});
    }

    // Points that never escaped are in the set (black); others are shaded by escape time.
    lt::Tensor<bool> in_set = count == iterations;
    lt::Tensor<std::uint8_t> pixels =
        lt::where(in_set, 0, lt::cast<std::uint8_t>(255.0f - lt::cast<float>(count) * (200.0f / iterations)));
    const std::vector<std::uint8_t> bytes = pixels.to_vector();
    std::ofstream out(path, std::ios::binary);
    out << "P5\n" << width << " " << height << "\n255\n";
    out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
        std::fprintf(stderr, "mandelbrot: cannot write %s\n", path.c_str());
        return 1;
    }

    // The set's area is about 1.5066; the fraction of grid points inside estimates it.
    const std::int64_t inside = lt::sum(in_set).item();
    const double area = double(inside) / double(width * height) * (x1 - x0) * (y1 - y0);
    std::printf("wrote %s: %lld x %lld pixels, %d iterations on %s\n", path.c_str(), static_cast<long long>(width),
                static_cast<long long>(height), iterations, device.str().c_str());
    std::printf("points in the set: %lld, area ~ %.3f (the true area is about 1.507)\n", static_cast<long long>(inside),
                area);
    return 0;
}
