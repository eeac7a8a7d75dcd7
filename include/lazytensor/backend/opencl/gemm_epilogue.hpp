// SPDX-License-Identifier: MIT
// Kernels fused into the own GEMM kernel and the scan kernels (schedule/fuse_products.hpp),
// rendered as code (fused_code.hpp):
//   - a product's or scan's element-wise consumer (ir::fits_as_epilogue) as its epilogue,
//     applied to each result in the item's stores at the domain coordinates of that result, so
//     that relu(x @ w + b) is one kernel and the product never reaches memory. The epilogue's
//     results go to the item's output buffer (of the product's dtype or, after a cast, another);
//     a `product` (`scanned`) buffer also gets the product (scan) itself when store_product
//     (store_scanned) is nonzero (a tensor outside the graph holds it);
//   - an operand's producer (ir::fits_as_prologue) as a function applied to each element of
//     its input as the item loads it (a scale, a cast from float16).
#pragma once

#include <string>
#include <vector>

#include "../../ir/gemm.hpp"
#include "../../ir/scan.hpp"
#include "gemm_kernel.hpp"
#include "renderer.hpp"

namespace lazytensor::detail::opencl {

/// Code that splits `flat`, a row-major index over axes [from, to) of domain `d`, into their
/// coordinates: coord[j] names axis j's (e<j>, or `(flat)` itself for a single axis), declared
/// by the returned lines (indented by `ind`).
inline std::string coordinates_code(const Shape& d, const std::string& flat, std::size_t from, std::size_t to,
                                    std::vector<std::string>& coord, const std::string& ind) {
    if (to == from + 1) coord[from] = "(" + flat + ")";
    if (to <= from + 1) return "";
    const std::string rest = "rest_" + std::to_string(from);
    std::string code = ind + "long " + rest + " = " + flat + ";\n";
    for (std::size_t j = to; j-- > from;) {
        coord[j] = "e" + std::to_string(j);
        code += ind + "const long " + coord[j] + " = " + (j > from ? rest + " % " + std::to_string(d[j]) : rest) + ";\n";
        if (j > from) code += ind + rest + " /= " + std::to_string(d[j]) + ";\n";
    }
    return code;
}

/// The epilogue of `g` computing kernel `k`, which reads the product as parameter
/// `product_param`. Its parameters, after the GEMM's: `product` (C's type), the kernel's other
/// inputs in parameter order, its scalars, then the int store_product.
inline FusedEpilogue gemm_epilogue_code(const ir::Gemm& g, const ir::Kernel& k, int product_param, const DeviceTraits& device) {
    // The result at (batch, row, col) is element (batch * m + row) * n + col of the domain in
    // row-major order; its coordinates, without divisions where the domain's axes are the
    // product's (the last one n, the others its rows, or the batch and m).
    const Shape& d = k.domain;
    const std::size_t rank = d.size();
    const std::string ind = "                    ";
    const std::string rows = "(batch * (long)m + row)";
    std::vector<std::string> coord(rank);
    std::string code;
    if (rank > 0 && d[rank - 1] == g.n) {
        coord[rank - 1] = "(long)col";
        if (rank == 2) coord[0] = rows;
        else if (rank == 3 && d[0] == g.batch_count() && d[1] == g.m) coord[0] = "batch", coord[1] = "(long)row";
        else if (rank > 1) code = coordinates_code(d, rows, 0, rank - 1, coord, ind);
    } else if (rank > 0) {
        code = coordinates_code(d, rows + " * n + col", 0, rank, coord, ind);
    }
    FusedEpilogue out;
    const DType result = k.params.back().dtype;
    if (result != g.dtype) out.output = result;  // a cast: the result goes to `o`, of its type
    Renderer::Epilogue e = Renderer(k, device, "lt_gemm").render_epilogue(product_param, coord, "v", out.output ? "o" : "v", ind);
    out.parameters = ", __global T* product" + e.parameters + ", const int store_product";
    out.code = ind + "if (store_product) product[" + rows + " * n + col] = v;\n" + code + e.code;
    out.helpers = e.helpers;
    out.fp64 = e.uses_fp64;
    return out;
}

/// A producer (ir::fits_as_prologue) computing kernel `k` from each element of its input as it
/// is loaded: a function lt_prologue_<tag> of the element and the kernel's scalars, whose
/// kernel parameters are named p<tag>_s<i>.
inline FusedPrologue prologue_code(const ir::Kernel& k, const std::string& tag, const DeviceTraits& device) {
    // The result has a variable of its own: x is of the input's type (float where it returns double).
    Renderer::Epilogue e = Renderer(k, device, "lt_prologue_" + tag).render_epilogue(0, {}, "x", "lt_r", "    ");
    FusedPrologue out;
    out.storage = k.params[0].dtype;
    out.name = "lt_prologue_" + tag;
    const std::string result = cl_value_type(k.params[1].dtype);
    out.function = result + " " + out.name + "(" + cl_value_type(out.storage) + " x" + e.parameters + ") {\n    " + result +
                   " lt_r;\n" + e.code + "    return lt_r;\n}\n";
    for (std::size_t i = 0; i < k.scalars.size(); ++i) {
        out.parameters += std::string(", const ") + cl_scalar_arg_type(k.scalars[i]) + " p" + tag + "_s" + std::to_string(i);
        out.arguments += ", p" + tag + "_s" + std::to_string(i);
    }
    out.helpers = e.helpers;
    out.fp64 = e.uses_fp64;
    return out;
}

/// The prologue of operand `which` (0: A, 1: B) of a product computing kernel `k`.
inline FusedPrologue gemm_prologue_code(const ir::Kernel& k, int which, const DeviceTraits& device) {
    return prologue_code(k, which ? "b" : "a", device);
}

/// The epilogue of scan `s` computing kernel `k`, which reads the scan as parameter
/// `scan_param`. Its parameters, after the scan kernels' own: `scanned` (the scan's type), the
/// kernel's other inputs in parameter order, its scalars, then the int store_scanned.
inline FusedEpilogue scan_epilogue_code(const ir::Scan& s, const ir::Kernel& k, int scan_param, const DeviceTraits& device) {
    // The result at (lt_o, lt_i, lt_j) of [outer, length, inner] is element lt_at of the domain
    // in row-major order; its coordinates, from those three where the domain's axes split as
    // the scan's (its own shape), else from lt_at.
    const Shape& d = k.domain;
    const std::size_t rank = d.size();
    const std::string ind = "            ";
    std::vector<std::string> coord(rank);
    auto product = [&](std::size_t from, std::size_t to) {
        std::int64_t p = 1;
        for (std::size_t j = from; j < to; ++j) p *= d[j];
        return p;
    };
    std::size_t split = rank;
    for (std::size_t a = 0; a < rank && split == rank; ++a)
        if (product(0, a) == s.outer && d[a] == s.length && product(a + 1, rank) == s.inner) split = a;
    std::string code;
    if (split < rank) {
        code = coordinates_code(d, "lt_o", 0, split, coord, ind);
        coord[split] = "lt_i";
        code += coordinates_code(d, "lt_j", split + 1, rank, coord, ind);
    } else {
        code = coordinates_code(d, "lt_at", 0, rank, coord, ind);
    }
    FusedEpilogue out;
    const DType result = k.params.back().dtype;
    if (result != s.dtype) out.output = result;  // a cast: the result goes to lt_r, of its type
    Renderer::Epilogue e = Renderer(k, device, "lt_scan").render_epilogue(scan_param, coord, "v", out.output ? "lt_r" : "v", ind);
    out.parameters = ", __global T* scanned" + e.parameters + ", const int store_scanned";
    out.code = ind + "if (store_scanned) scanned[lt_at] = v;\n" + code + e.code;
    out.helpers = e.helpers;
    out.fp64 = e.uses_fp64;
    return out;
}

}  // namespace lazytensor::detail::opencl
