// SPDX-License-Identifier: MIT
// Fast Fourier transforms as one node kind (NodeKind::Fft) and one kind of schedule item
// (items/fft_item.hpp), run by the backend's FFT (the host engine, backend/host/fft.hpp; VkFFT on
// OpenCL): what a transform is, defined here once.
//
// Complex arrays are real arrays with a trailing axis of 2 (real, imaginary: interleaved, as
// std::complex lies in memory); the front end's complex tensors are two real planes that meet
// here (frontend/complex.hpp). A node transforms its operand along up to three axes at once:
//   - C2C: complex [s..., 2] -> complex [s..., 2]; forward exp(-2 pi i jk/n), inverse exp(+...).
//   - R2C: real [s...] -> complex [s with axes.back() n/2 + 1, 2] (NumPy's rfftn: the real
//     transform along the last axis given, then forward complex ones along the others).
//   - C2R: complex [s with axes.back() n/2 + 1, 2] -> real [s...] (irfftn; the inverse complex
//     transforms first, the real one last; the imaginary parts of the bins that must be real,
//     0 and n/2, are ignored).
// Every output element is multiplied by `scale` (the norm's factor). Operands and results are
// row-major, contiguous and start at offset 0 of their buffers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "../core/dtype.hpp"
#include "../core/shape.hpp"
#include "graph.hpp"

namespace lazytensor::detail {

enum class FftKind : std::uint8_t { C2C, R2C, C2R };

inline const char* fft_kind_name(FftKind k) {
    switch (k) {
        case FftKind::C2C: return "c2c";
        case FftKind::R2C: return "r2c";
        case FftKind::C2R: return "c2r";
    }
    return "?";
}

/// Most axes one node transforms (VkFFT's limit; the front end chains nodes for more).
inline constexpr int kFftMaxAxes = 3;

namespace ir {

/// One transform item. `shape` is the real-space shape: C2C's complex array (input and output),
/// R2C's real input, C2R's real output; the complex side of R2C and C2R has axes.back() at
/// shape[axes.back()] / 2 + 1. Buffers are contiguous; complex elements are (re, im) pairs of
/// `dtype`.
struct Fft {
    FftKind kind = FftKind::C2C;
    bool inverse = false;          // C2C only (R2C is forward, C2R inverse)
    DType dtype = DType::Float32;  // the real numbers': float32 or float64
    Shape shape;
    std::vector<int> axes;  // 1 to kFftMaxAxes distinct axes of shape, in the order transformed
    double scale = 1;

    /// The complex side's shape (without the trailing 2).
    Shape complex_shape() const {
        Shape s = shape;
        if (kind != FftKind::C2C) s[static_cast<std::size_t>(axes.back())] = s[static_cast<std::size_t>(axes.back())] / 2 + 1;
        return s;
    }
    /// Real numbers in the input and in the output buffer.
    std::int64_t input_count() const { return kind == FftKind::R2C ? numel(shape) : 2 * numel(complex_shape()); }
    std::int64_t output_count() const { return kind == FftKind::C2R ? numel(shape) : 2 * numel(complex_shape()); }
    /// Whether the transform runs in the forward direction (exp(-2 pi i jk/n)).
    bool forward() const { return kind == FftKind::R2C || (kind == FftKind::C2C && !inverse); }
};

inline std::string to_string(const Fft& f) {
    std::string axes;
    for (int a : f.axes) axes += concat(axes.empty() ? "" : ", ", a);
    return concat("    fft ", fft_kind_name(f.kind), f.kind == FftKind::C2C ? (f.inverse ? " inverse" : " forward") : "", " of ",
                  f.dtype, ", shape ", f.shape, ", axes (", axes, "), scale ", f.scale, "\n");
}

}  // namespace ir

namespace graph {

/// A transform node (see above) of x along `axes` (normalized, distinct, 1 to kFftMaxAxes of
/// them, of the real-space shape), scaled by `scale`. C2R needs `n`, the real length along
/// axes.back() (ignored otherwise). x: float32 or float64 ([..., 2] for C2C and C2R); the front
/// end has checked what users give, so a mismatch here is an internal error.
LAZYTENSOR_ENGINE_API NodePtr fft(const NodePtr& x, FftKind kind, bool inverse, const std::vector<int>& axes, std::int64_t n,
                                  double scale);

/// The item's description of an fft node.
LAZYTENSOR_ENGINE_API ir::Fft fft_call(const Node& node);

}  // namespace graph
}  // namespace lazytensor::detail

#if LAZYTENSOR_ENGINE_DEFINITIONS
#include "fft_definitions.hpp"
#endif
