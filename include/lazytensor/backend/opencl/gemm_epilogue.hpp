// Kernels fused into the own GEMM kernel (schedule/fuse_products.hpp), rendered as code:
//   - a product's element-wise consumer (ir::fits_as_epilogue) as its epilogue, applied to
//     each result in the GEMM's stores at the domain coordinates of that result, so that
//     relu(x @ w + b) is one kernel and the product never reaches memory. The epilogue's
//     results go to C (its output buffer, of the product's dtype or, after a cast, another);
//     a `product` buffer also gets the product itself when store_product is nonzero (a tensor
//     outside the graph holds it);
//   - an operand's producer (ir::fits_as_prologue) as a function applied to each element of
//     its input as the GEMM loads it (a scale, a cast from float16).
#pragma once

#include <string>
#include <vector>

#include "../../ir/gemm.hpp"
#include "gemm_kernel.hpp"
#include "renderer.hpp"

namespace lazytensor::detail::opencl {

/// The epilogue of `g` computing kernel `k`, which reads the product as parameter
/// `product_param`. Its parameters, after the GEMM's: `product` (C's type), the kernel's other
/// inputs in parameter order, its scalars, then the int store_product.
inline GemmEpilogue gemm_epilogue_code(const ir::Gemm& g, const ir::Kernel& k, int product_param, const DeviceTraits& device) {
    // The result at (batch, row, col) is element (batch * m + row) * n + col of the domain in
    // row-major order; its coordinates, without divisions where the domain's axes are the
    // product's (the last one n, the others its rows, or the batch and m).
    const Shape& d = k.domain;
    const std::size_t rank = d.size();
    const std::string ind = "                    ";
    const std::string rows = "(batch * (long)m + row)";
    std::vector<std::string> coord(rank);
    std::string code;
    auto decompose = [&](const std::string& flat, std::size_t axes) {
        code += ind + "long rest = " + flat + ";\n";
        for (std::size_t j = axes; j-- > 0;) {
            coord[j] = "e" + std::to_string(j);
            code += ind + "const long " + coord[j] + " = " + (j ? "rest % " + std::to_string(d[j]) : std::string("rest")) + ";\n";
            if (j) code += ind + "rest /= " + std::to_string(d[j]) + ";\n";
        }
    };
    if (rank > 0 && d[rank - 1] == g.n) {
        coord[rank - 1] = "(long)col";
        if (rank == 2) coord[0] = rows;
        else if (rank == 3 && d[0] == g.batch_count() && d[1] == g.m) coord[0] = "batch", coord[1] = "(long)row";
        else if (rank > 1) decompose(rows, rank - 1);
    } else if (rank > 0) {
        decompose(rows + " * n + col", rank);
    }
    GemmEpilogue out;
    const DType result = k.params.back().dtype;
    if (result != g.dtype) out.output = result;  // a cast: the result goes to `o`, of its type
    Renderer::Epilogue e = Renderer(k, device, "lt_gemm").render_epilogue(product_param, coord, "v", out.output ? "o" : "v", ind);
    out.parameters = ", __global T* product" + e.parameters + ", const int store_product";
    out.code = ind + "if (store_product) product[" + rows + " * n + col] = v;\n" + code + e.code;
    out.helpers = e.helpers;
    out.fp64 = e.uses_fp64;
    return out;
}

/// The prologue of operand `which` (0: A, 1: B) computing kernel `k` (ir::fits_as_prologue)
/// from each element of its input as it is loaded: a function of the element and the kernel's
/// scalars, whose kernel parameters are named pa_s<i> (pb_s<i>).
inline GemmPrologue gemm_prologue_code(const ir::Kernel& k, int which, const DeviceTraits& device) {
    const std::string tag = which ? "b" : "a";
    Renderer::Epilogue e = Renderer(k, device, "lt_gemm").render_epilogue(0, {}, "x", "x", "    ");
    GemmPrologue out;
    out.storage = k.params[0].dtype;
    out.name = "lt_prologue_" + tag;
    out.function = std::string(cl_value_type(k.params[1].dtype)) + " " + out.name + "(" + cl_value_type(out.storage) + " x" +
                   e.parameters + ") {\n" + e.code + "    return x;\n}\n";
    for (std::size_t i = 0; i < k.scalars.size(); ++i) {
        out.parameters += std::string(", const ") + cl_scalar_arg_type(k.scalars[i]) + " p" + tag + "_s" + std::to_string(i);
        out.arguments += ", p" + tag + "_s" + std::to_string(i);
    }
    out.helpers = e.helpers;
    out.fp64 = e.uses_fp64;
    return out;
}

}  // namespace lazytensor::detail::opencl
