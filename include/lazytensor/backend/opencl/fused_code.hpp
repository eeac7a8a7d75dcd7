// SPDX-License-Identifier: MIT
// Element-wise kernels fused into a matrix product or a scan (ir/fusion.hpp), as the code that
// the own GEMM kernel and the scan kernels splice into their loads and stores
// (gemm_epilogue.hpp makes it).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../../core/dtype.hpp"

namespace lazytensor::detail::opencl {

/// Code applied to each result before its store: `code` may read and assign `v` (the value, in
/// the product's or scan's type) and read the coordinates the kernel puts in scope (the GEMM:
/// `row`, `col` (int or long), `batch` (long), `m` and `n`; a scan: lt_o, lt_i, lt_j, lt_at);
/// `parameters` are extra kernel parameter declarations (", __global const float* bias"),
/// passed after the fixed ones; `helpers` are functions it calls. Empty: the result is stored
/// as it is.
struct FusedEpilogue {
    std::string parameters;
    std::string code;
    // The output's dtype when it is not the product's or scan's (a cast): the code then leaves
    // its result in a variable of that dtype's value type (the GEMM's `o`, a scan's `lt_r`)
    // instead of in `v`.
    std::optional<DType> output;
    std::vector<std::string> helpers;
    bool fp64 = false;  // the code computes in double
};

/// Code applied to each element of an operand as it is loaded (a scale, a cast): the operand's
/// buffer holds `storage` elements (float16 is read with vload_half); `function` defines
/// `name`(x, scalars...), which returns the element in the product's or scan's type;
/// `parameters` declare the scalars as kernel parameters (after the epilogue's), `arguments`
/// pass them on. Empty (no name): the element as it is.
struct FusedPrologue {
    DType storage = DType::Float32;
    std::string name, function, parameters, arguments;
    std::vector<std::string> helpers;
    bool fp64 = false;
};

}  // namespace lazytensor::detail::opencl
