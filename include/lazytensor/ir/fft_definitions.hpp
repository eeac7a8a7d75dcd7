// SPDX-License-Identifier: MIT
// The definitions of ir/fft.hpp's builders (documented there), compiled where the engine is.
#pragma once

#include <cstring>
#include <vector>

#include "fft.hpp"

#if !LAZYTENSOR_ENGINE_DEFINITIONS
#error "lazytensor: ir/fft_definitions.hpp holds definitions of the runtime; a LAZYTENSOR_SEPARATE_RUNTIME unit must not include it"
#endif

namespace lazytensor::detail::graph {

LAZYTENSOR_ENGINE_API NodePtr fft(const NodePtr& x, FftKind kind, bool inverse, const std::vector<int>& axes, std::int64_t n,
                                  double scale) {
    const char* what = "fft node";
    if (x->dtype != DType::Float32 && x->dtype != DType::Float64)
        fail<DTypeError>(what, ": the operand must be float32 or float64, got ", x->dtype);
    const bool complex_in = kind != FftKind::R2C;
    Shape space = x->shape;  // the real-space shape
    if (complex_in) {
        if (space.empty() || space.back() != 2)
            fail<ShapeError>(what, ": a complex operand has a last axis of 2, got shape ", x->shape);
        space.pop_back();
    }
    if (axes.empty() || static_cast<int>(axes.size()) > kFftMaxAxes)
        fail<ValueError>(what, ": transforms 1 to ", kFftMaxAxes, " axes, got ", axes.size());
    for (std::size_t i = 0; i < axes.size(); ++i) {
        if (axes[i] < 0 || axes[i] >= static_cast<int>(space.size()))
            fail<AxisError>(what, ": axis ", axes[i], " is out of range for shape ", space);
        for (std::size_t j = 0; j < i; ++j)
            if (axes[j] == axes[i]) fail<AxisError>(what, ": axis ", axes[i], " is repeated");
    }
    const auto last = static_cast<std::size_t>(axes.back());
    if (kind == FftKind::C2R) {
        if (n < 1 || space[last] != n / 2 + 1)
            fail<ShapeError>(what, ": a real length of ", n, " needs ", n / 2 + 1, " bins along axis ", axes.back(), ", got ",
                             space[last]);
        space[last] = n;
    }
    for (int a : axes)
        if (space[static_cast<std::size_t>(a)] < 1)
            fail<ValueError>(what, ": the transform length along axis ", a, " must be at least 1, got ", space[static_cast<std::size_t>(a)]);
    Shape out = space;
    if (kind != FftKind::C2R) {
        if (kind == FftKind::R2C) out[last] = out[last] / 2 + 1;
        out.push_back(2);
    }
    NodePtr node = with_sources(make(NodeKind::Fft, x->dtype, x->device, out), {x});
    // The scale is part of the node's structure (plans are cached by structure; a Const's
    // value is not): its bits go into params.
    std::int64_t scale_bits = 0;
    std::memcpy(&scale_bits, &scale, sizeof scale);
    node->params = {static_cast<std::int64_t>(kind), inverse ? 1 : 0, kind == FftKind::C2R ? n : 0, scale_bits};
    for (int a : axes) node->params.push_back(a);
    return node;
}

LAZYTENSOR_ENGINE_API ir::Fft fft_call(const Node& node) {
    ir::Fft f;
    f.kind = static_cast<FftKind>(node.params[0]);
    f.inverse = node.params[1] != 0;
    f.dtype = node.dtype;
    std::memcpy(&f.scale, &node.params[3], sizeof f.scale);
    for (std::size_t i = 4; i < node.params.size(); ++i) f.axes.push_back(static_cast<int>(node.params[i]));
    f.shape = node.shape;
    if (f.kind != FftKind::C2R) f.shape.pop_back();
    if (f.kind == FftKind::R2C) f.shape = node.src[0]->shape;
    return f;
}

}  // namespace lazytensor::detail::graph
