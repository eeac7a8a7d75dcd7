// SPDX-License-Identifier: MIT
// The renderer: kernel IR -> OpenCL C 1.2 source and the launch geometry to run it with.
//
// Two shapes of kernel:
//   - element-wise (no reduce phase): one work-item per W consecutive elements of the domain's
//     last axis. Accesses that are contiguous and aligned along it become one vector load or
//     store (float4, ...); broadcast ones one scalar load; others a load per lane.
//   - reducing: a work-group is LX outer indices x LY reduce lanes. Each lane folds a strided
//     share of the reduced space (W consecutive elements at a time when the last axis is
//     reduced and contiguous: "row" kernels; lanes over the outer index otherwise: "column"
//     kernels), the LY lanes combine in local memory, and every lane reads the slot, so later
//     phases (softmax's store, a variance's second pass) run in the same work-group. A kernel
//     with one reduce phase and few outputs is split along the reduced space into G work-groups
//     per outer index whose partials a second, small kernel folds before the outer store phase.
//
// Semantics follow the host interpreter (simd/simd_ops.hpp): integer arithmetic wraps
// (done in unsigned types), floating max/min propagate NaN, float-to-integer casts saturate
// (convert_*_sat), bool is stored as one byte. float16 is storage only, as on the host: buffers
// of `half` are read with vload_half(N) and written with vstore_half(N)_rte (core OpenCL 1.2,
// no cl_khr_fp16), values in between are float, and a cast to float16 rounds through half.
// bfloat16 likewise: buffers of `ushort` (its bits) widened with lt_bf16_load and written with
// lt_bf16_store, the host's rounding in OpenCL C (cl_bfloat16_functions).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/error.hpp"
#include "../../ir/kernel.hpp"
#include "op_spellings.hpp"

namespace lazytensor::detail::opencl {

/// What the renderer needs to know of a device.
struct DeviceTraits {
    std::size_t max_work_group = 256;  // of the device, capped by what our kernels use
    std::int64_t compute_units = 1;
    std::size_t local_memory = 32768;  // bytes of __local memory a work-group may use
    bool gpu = true;
};

/// One NDRange launch of a rendered program.
struct Stage {
    std::string name;
    std::size_t global[2] = {1, 1};
    std::size_t local[2] = {1, 1};
    // The count of work-items along the first axis (an element-wise kernel's elements, a
    // reduction's outer indices), passed as the last argument (an int, or a long where
    // `long_units`) rather than written into the source, so that lengths share a program.
    // -1: no such argument.
    std::int64_t units = -1;
    bool long_units = false;
};

struct RenderedKernel {
    std::string source;  // the whole program: program_source(header, helpers, functions)
    // Its parts, so that several kernels can be built as one program (helpers shared):
    std::vector<std::string> helpers;  // helper function definitions, each once
    std::string functions;             // the __kernel functions
    std::vector<Stage> stages;  // empty when the domain is empty: nothing to run
    // Two-stage reductions: partial results, one per (outer index, split), passed to both
    // stages after the kernel's own parameters.
    std::int64_t scratch_elems = 0;
    DType scratch_dtype = DType::Float32;
    bool uses_fp64 = false;
};

// ------------------------------------------------------------------------------ type spellings

/// The OpenCL C type of a scalar kernel argument of `t`: bool is not a valid argument type (a
/// byte instead), and a float16 value is passed as the float it is computed in.
inline const char* cl_scalar_arg_type(DType t) { return t == DType::Bool ? "uchar" : cl_value_type(t); }

inline std::string cl_literal(const Scalar& s, DType t) {
    const Scalar v = s.dtype == t ? s : s.cast(t);
    char buf[64];
    switch (t) {
        case DType::Bool: return v.i ? "true" : "false";
        case DType::UInt8: return "(uchar)" + std::to_string(v.i);
        case DType::Int8: return "(char)" + (v.i < 0 ? "(" + std::to_string(v.i) + ")" : std::to_string(v.i));
        case DType::Int16: return "(short)" + (v.i < 0 ? "(" + std::to_string(v.i) + ")" : std::to_string(v.i));
        case DType::UInt16: return "(ushort)" + std::to_string(v.i);
        case DType::Int32:
            return v.i == INT32_MIN ? "(-2147483647 - 1)" : std::to_string(v.i);
        case DType::UInt32: return std::to_string(v.i) + "u";
        case DType::Int64:
            return v.i == INT64_MIN ? "(-9223372036854775807L - 1L)" : std::to_string(v.i) + "L";
        case DType::UInt64: return std::to_string(static_cast<std::uint64_t>(v.i)) + "UL";
        case DType::Float16:  // the value, rounded to half (bfloat16) by the cast above, as a float
        case DType::BFloat16:
        case DType::Float32:
        case DType::Float64: {
            const bool f32 = t != DType::Float64;
            if (std::isnan(v.f)) return f32 ? "NAN" : "((double)NAN)";
            if (std::isinf(v.f)) return std::string(v.f < 0 ? "-" : "") + (f32 ? "INFINITY" : "((double)INFINITY)");
            // Hexadecimal literals are exact.
            std::snprintf(buf, sizeof buf, "%a", f32 ? static_cast<double>(static_cast<float>(v.f)) : v.f);
            return std::string("(") + buf + (f32 ? "f)" : ")");
        }
        case DType::Complex64:
        case DType::Complex128: complex_dtype_inside(t);
    }
    return "0";
}

inline std::string cl_cast(DType to, DType from, const std::string& x) {
    if (to == DType::Float16) {  // rounds to half precision (lt_round_half*, see cl_half_functions)
        if (from == DType::Float64) return "lt_round_half_d(" + x + ")";
        return "lt_round_half(" + (is_floating(from) ? x : "(float)" + x) + ")";
    }
    if (to == DType::BFloat16) {  // rounds to bfloat16 precision (lt_round_bf16*, cl_bfloat16_functions)
        if (from == DType::Float64) return "lt_round_bf16_d(" + x + ")";
        if (from == DType::UInt64) return "lt_round_bf16_ul(" + x + ")";
        // 32- and 64-bit integers may have more bits than a float (16-bit ones and bool do not)
        if (is_integral(from) && dtype_bits(from) >= 32) return "lt_round_bf16_l((long)" + x + ")";
        return "lt_round_bf16(" + (is_floating(from) ? x : "(float)" + x) + ")";
    }
    if (to == from) return x;
    if (to == DType::Bool) return "(" + x + " != 0)";
    // NaN gives 0 as on the host; NVIDIA's convert_long_sat(NaN) gives the minimum.
    if (is_floating(from) && !is_floating(to))
        return std::string("(isnan(") + x + ") ? (" + cl_value_type(to) + ")0 : convert_" + cl_value_type(to) + "_sat(" + x + "))";
    return std::string("((") + cl_value_type(to) + ")" + x + ")";
}

inline std::string cl_reduce_identity(ReduceOp op, DType t) {
    if (t == DType::Bool) return op == ReduceOp::Min || op == ReduceOp::Prod ? "true" : "false";
    switch (op) {
        case ReduceOp::Sum: return cl_literal(Scalar::of<std::int64_t>(0), t);
        case ReduceOp::Prod: return std::string("((") + cl_value_type(t) + ")1)";
        case ReduceOp::Max:  // the type's lowest value
            if (is_floating(t)) return t != DType::Float64 ? "(-INFINITY)" : "(-(double)INFINITY)";
            return detail::visit_dtype(t, [&](auto tag) {
                return cl_literal(Scalar::of(std::numeric_limits<typename decltype(tag)::type>::lowest()), t);
            });
        case ReduceOp::Min:  // the type's highest value
            if (is_floating(t)) return t != DType::Float64 ? "INFINITY" : "((double)INFINITY)";
            return detail::visit_dtype(t, [&](auto tag) {
                return cl_literal(Scalar::of(std::numeric_limits<typename decltype(tag)::type>::max()), t);
            });
    }
    return "0";
}

inline std::string cl_reduce_fold(ReduceOp op, DType t, const std::string& acc, const std::string& v) {
    if (t == DType::Bool)
        return op == ReduceOp::Min || op == ReduceOp::Prod ? "(" + acc + " && " + v + ")" : "(" + acc + " || " + v + ")";
    switch (op) {
        case ReduceOp::Sum: return cl_binary(BinaryOp::Add, t, acc, v);
        case ReduceOp::Prod: return cl_binary(BinaryOp::Mul, t, acc, v);
        case ReduceOp::Max: return cl_binary(BinaryOp::Maximum, t, acc, v);
        case ReduceOp::Min: return cl_binary(BinaryOp::Minimum, t, acc, v);
    }
    return acc;
}

/// Rounding a private float (or double) to half precision, through a private half slot
/// (vstore_half_rte rounds to nearest even; no cl_khr_fp16 needed).
inline void cl_half_functions(bool from_double, std::vector<std::string>& defs) {
    defs.push_back("inline float lt_round_half(float x) {\n"
                   "    ushort h;\n    vstore_half_rte(x, 0, (half*)&h);\n    return vload_half(0, (const half*)&h);\n}\n");
    if (from_double)
        defs.push_back("inline float lt_round_half_d(double x) {\n"
                       "    ushort h;\n    vstore_half_rte(x, 0, (half*)&h);\n    return vload_half(0, (const half*)&h);\n}\n");
}

/// The source of a program: the pragmas every kernel needs (each operation rounds on its own, as
/// on the host: no multiply-add contracted into an FMA, which NVIDIA's compiler does by
/// default, so results agree across devices), helper functions, then kernel functions.
inline std::string program_source(bool fp64, const std::vector<std::string>& helpers, const std::string& functions) {
    std::string s = "#pragma OPENCL FP_CONTRACT OFF\n";
    if (fp64) s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    for (const std::string& h : helpers) s += h;
    return s + functions;
}

// ------------------------------------------------------------------------------------ renderer

class Renderer {
public:
    Renderer(const ir::Kernel& kernel, const DeviceTraits& device, std::string name)
        : k_(kernel), dev_(device), name_(std::move(name)) {}

    RenderedKernel render() {
        analyze();
        RenderedKernel out;
        if (outer_ == 0) return out;  // an empty output: nothing to compute
        // (An empty reduced space still runs: every output is the reduction's identity.)
        out.helpers = helpers();
        if (reducing_)
            render_reducing(out);
        else
            render_elementwise(out);
        out.functions = src_.str();
        out.uses_fp64 = fp64_;
        out.source = program_source(fp64_, out.helpers, out.functions);
        return out;
    }

    /// The kernel (ir::fits_as_epilogue) as code applied to one element of a product in its
    /// store: statements that compute the stored value at the domain coordinates `coord` (long
    /// expressions) from `value`, the product's element (parameter `product_param`, which is not
    /// read), and assign it to `result` (of the output's value type; may be `value`).
    /// Parameters other than the product and the output keep their names (p<i>, s<i>) and are
    /// declared in `parameters`, each after a comma.
    struct Epilogue {
        std::vector<std::string> helpers;
        std::string parameters;
        std::string code;
        bool uses_fp64 = false;
    };
    Epilogue render_epilogue(int product_param, const std::vector<std::string>& coord, const std::string& value,
                             const std::string& result, const std::string& ind) {
        analyze();
        substitute_param_ = product_param;
        substitute_value_ = value;
        Epilogue e;
        e.helpers = helpers();
        const ir::Phase& phase = k_.phases.at(0);
        const auto names = body(phase, 1, coord, ind);
        src_ << ind << result << " = " << names[static_cast<std::size_t>(phase.stores.at(0).value)][0] << ";\n";
        e.code = src_.str();
        for (std::size_t p = 0; p + 1 < k_.params.size(); ++p)
            if (static_cast<int>(p) != product_param)
                e.parameters += std::string(", __global const ") + cl_storage_type(k_.params[p].dtype) + "* restrict p" +
                                std::to_string(p);
        for (std::size_t i = 0; i < k_.scalars.size(); ++i)
            e.parameters += std::string(", const ") + cl_scalar_arg_type(k_.scalars[i]) + " s" + std::to_string(i);
        e.uses_fp64 = fp64_;
        return e;
    }

private:
    int substitute_param_ = -1;   // render_epilogue: the parameter whose loads are substitute_value_
    std::string substitute_value_;
    const ir::Kernel& k_;
    DeviceTraits dev_;
    std::string name_;  // of the kernel function (a second stage adds "_fold"); see renamed()
    std::ostringstream src_;
    std::size_t n_ = 0;  // domain rank
    std::int64_t numel_ = 0, outer_ = 1, reduced_ = 1;
    std::vector<int> outer_axes_, reduced_axes_;
    bool reducing_ = false;
    bool fp64_ = false;
    std::string idx_;  // index type: "int", or "long" where an address may pass 2^31
    int width_ = 1;    // W: consecutive elements of the last axis per lane
    // Reducing kernels: whether the W lanes are W neighbouring outputs (the last axis is kept:
    // "column" kernels, one accumulator per lane) or W neighbouring elements of the reduced
    // space (the last axis is reduced: "row" kernels, folded into one accumulator).
    bool lanes_outer_ = false;
    int reduce_width_ = 1;  // elements of the reduced space per loop step
    // Row cache: when a lane's share of the reduced space is a few steps and several phases
    // walk it (softmax), the steps are unrolled and values loaded by one phase are kept in
    // registers for the next, instead of being read again.
    int unrolled_steps_ = 0;  // 0: loops
    int step_ = -1;           // the unrolled step being rendered
    std::map<std::string, std::vector<std::string>> row_cache_;
    std::string row_decls_;

    static std::int64_t pow2_ceil(std::int64_t x) {
        std::int64_t p = 1;
        while (p < x) p <<= 1;
        return p;
    }
    static std::int64_t pow2_floor(std::int64_t x) {
        std::int64_t p = 1;
        while (p * 2 <= x) p <<= 1;
        return p;
    }
    // Enough work-items to fill the device: 2048 resident per GPU compute unit; on a CPU, a few
    // work-groups per core so that a reduction with few outputs still uses every core.
    std::int64_t target_threads() const { return dev_.compute_units * (dev_.gpu ? 2048 : 1024); }
    std::int64_t max_group() const { return std::min<std::int64_t>(static_cast<std::int64_t>(dev_.max_work_group), 256); }

    void analyze() {
        n_ = k_.domain.size();
        numel_ = numel(k_.domain);
        for (std::size_t j = 0; j < n_; ++j) {
            if (k_.reduced[j]) {
                reduced_axes_.push_back(static_cast<int>(j));
                reduced_ *= k_.domain[j];
            } else {
                outer_axes_.push_back(static_cast<int>(j));
                outer_ *= k_.domain[j];
            }
        }
        for (auto& ph : k_.phases) reducing_ = reducing_ || ph.kind == ir::Phase::Kind::Reduce;
        // 64-bit index math when any index or address could pass 2^31 (with room for a loop
        // counter to step past the end).
        std::int64_t reach = numel_;
        auto widen = [&](const Access& a, std::int64_t dynamic = 0) {
            std::int64_t hi = std::abs(a.offset) + dynamic;
            for (std::size_t j = 0; j < n_; ++j) hi += (k_.domain[j] - 1) * std::abs(a.strides[j]);
            reach = std::max(reach, hi);
        };
        for (auto& ph : k_.phases) {
            for (auto& in : ph.instrs) {
                if (in.op == ir::Op::Load || in.op == ir::Op::Index)
                    widen(in.access, in.b >= 0 ? (in.dyn_extent - 1) * std::abs(in.dyn_stride) : 0);
                fp64_ = fp64_ || in.dtype == DType::Float64;
            }
            for (auto& st : ph.stores) widen(st.access);
        }
        for (auto& p : k_.params) fp64_ = fp64_ || p.dtype == DType::Float64;
        for (DType t : k_.scalars) fp64_ = fp64_ || t == DType::Float64;
        idx_ = reach >= (std::int64_t(1) << 30) ? "long" : "int";
    }

    /// The helper functions the kernel's ops call, each once, in order of first use.
    std::vector<std::string> helpers() const {
        std::vector<std::string> defs;
        for (auto& ph : k_.phases)
            for (auto& in : ph.instrs)
                if (in.op == ir::Op::Unary)
                    cl_op_functions(in.unary, ph.instrs[static_cast<std::size_t>(in.a)].dtype, defs);
                else if (in.op == ir::Op::Binary)
                    cl_op_functions(in.binary, ph.instrs[static_cast<std::size_t>(in.a)].dtype, defs);
        bool round_half = false, round_half_d = false;
        for (auto& ph : k_.phases)
            for (auto& in : ph.instrs)
                if (in.op == ir::Op::Cast && in.dtype == DType::Float16) {
                    round_half = true;
                    round_half_d = round_half_d || ph.instrs[static_cast<std::size_t>(in.a)].dtype == DType::Float64;
                }
        if (round_half) cl_half_functions(round_half_d, defs);
        // bfloat16: loads and stores of its buffers, casts to it
        bool bf16 = false, bf16_d = false;
        for (const ir::Param& p : k_.params) bf16 = bf16 || p.dtype == DType::BFloat16;
        for (auto& ph : k_.phases)
            for (auto& in : ph.instrs)
                if (in.op == ir::Op::Cast && in.dtype == DType::BFloat16) {
                    bf16 = true;
                    bf16_d = bf16_d || ph.instrs[static_cast<std::size_t>(in.a)].dtype == DType::Float64;
                }
        if (bf16) cl_bfloat16_functions(bf16_d, defs);
        std::vector<std::string> once;
        for (std::string& d : defs)
            if (std::find(once.begin(), once.end(), d) == once.end()) once.push_back(std::move(d));
        return once;
    }

    std::string params(bool scratch, DType scratch_dtype) const {
        std::string s;
        for (std::size_t p = 0; p < k_.params.size(); ++p) {
            s += p ? ", " : "";
            s += std::string("__global ") + (k_.params[p].output ? "" : "const ") + cl_storage_type(k_.params[p].dtype) +
                 (k_.in_place ? "* p" : "* restrict p") + std::to_string(p);
        }
        if (scratch) s += std::string(", __global ") + cl_storage_type(scratch_dtype) + "* restrict scratch";
        for (std::size_t i = 0; i < k_.scalars.size(); ++i)
            s += std::string(", const ") + cl_scalar_arg_type(k_.scalars[i]) + " s" + std::to_string(i);
        return s;
    }

    // ------------------------------------------------------------------ vector width, addresses

    /// Whether an access can be one aligned vector load/store of W elements along the last axis.
    bool vectorizable(const Access& a, int w) const {
        if (a.strides[n_ - 1] != 1 || a.offset % w) return false;
        for (std::size_t j = 0; j + 1 < n_; ++j)
            if (a.strides[j] % w) return false;
        return true;
    }

    /// W = 4 when the last axis splits into groups of 4 and some access is contiguous along it.
    int choose_width(bool include_outer_phases) const {
        constexpr int w = 4;
        if (n_ == 0 || k_.domain[n_ - 1] % w) return 1;
        bool any = false;
        for (auto& ph : k_.phases) {
            if (ph.outer && !include_outer_phases) continue;
            for (auto& in : ph.instrs)
                if (in.plain_load()) any = any || vectorizable(in.access, w);
            for (auto& st : ph.stores) any = any || vectorizable(st.access, w);
        }
        return any ? w : 1;
    }

    std::string address(const Access& a, const std::vector<std::string>& coord) const {
        std::string s = std::to_string(a.offset);
        for (std::size_t j = 0; j < n_; ++j) {
            if (a.strides[j] == 0 || coord[j] == "0") continue;
            s += " + " + coord[j] + (a.strides[j] == 1 ? "" : " * " + paren(a.strides[j]));
        }
        return s;
    }
    static std::string paren(std::int64_t v) { return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v); }

    /// Emits `const idx c<j> = ...` for `axes`, decomposing the flat index `flat` (row-major).
    void decompose(const std::string& ind, const std::vector<int>& axes, const std::string& flat,
                   std::vector<std::string>& coord) {
        if (axes.empty()) return;
        if (axes.size() == 1) {
            const int j = axes[0];
            src_ << ind << "const " << idx_ << " c" << j << " = " << flat << ";\n";
            coord[static_cast<std::size_t>(j)] = "c" + std::to_string(j);
            return;
        }
        src_ << ind << idx_ << " rest = " << flat << ";\n";
        for (std::size_t q = axes.size(); q-- > 0;) {
            const int j = axes[q];
            const std::string c = "c" + std::to_string(j);
            if (q == 0) {
                src_ << ind << "const " << idx_ << " " << c << " = rest;\n";
            } else {
                src_ << ind << "const " << idx_ << " " << c << " = rest % " << k_.domain[static_cast<std::size_t>(j)]
                     << "; rest /= " << k_.domain[static_cast<std::size_t>(j)] << ";\n";
            }
            coord[static_cast<std::size_t>(j)] = c;
        }
    }

    // ----------------------------------------------------------------------------- phase bodies

    /// Evaluates a phase's instructions for W lanes (consecutive along the last axis when
    /// `lanes` > 1); names[i][lane] is the expression holding instruction i's value.
    std::vector<std::vector<std::string>> body(const ir::Phase& ph, int lanes, const std::vector<std::string>& coord,
                                               const std::string& ind) {
        std::vector<std::vector<std::string>> name(ph.instrs.size());
        for (std::size_t i = 0; i < ph.instrs.size(); ++i) {
            const ir::Instr& in = ph.instrs[i];
            const std::string T = cl_value_type(in.dtype);
            const std::string v = "v" + std::to_string(i);
            auto& out = name[i];
            auto lane_name = [&](int l) { return lanes == 1 ? v : v + "_" + std::to_string(l); };
            auto invariant = [&](std::int32_t op) { return op < 0 || name[static_cast<std::size_t>(op)].size() == 1; };
            auto arg = [&](std::int32_t op, int l) {
                const auto& n = name[static_cast<std::size_t>(op)];
                return n.size() == 1 ? n[0] : n[static_cast<std::size_t>(l)];
            };
            switch (in.op) {
                case ir::Op::Const: out.push_back(cl_literal(in.value, in.dtype)); continue;
                case ir::Op::Param:
                    out.push_back(in.dtype == DType::Bool ? "(s" + std::to_string(in.arg) + " != 0)" : "s" + std::to_string(in.arg));
                    continue;
                case ir::Op::Slot:
                    for (const std::string& l : (lanes > 1 ? lane_suffixes() : std::vector<std::string>{""}))
                        out.push_back("slot" + std::to_string(in.arg) + l);
                    continue;
                case ir::Op::Index: {
                    const std::string addr = address(in.access, coord);
                    const std::int64_t inner = n_ ? in.access.strides[n_ - 1] : 0;
                    const bool one = lanes == 1 || inner == 0;
                    for (int l = 0; l < (one ? 1 : lanes); ++l) {
                        const std::string nm = one ? v : lane_name(l);
                        src_ << ind << "const long " << nm << " = (long)(" << addr << ")"
                             << (l ? " + " + std::to_string(l * inner) : "") << ";\n";
                        out.push_back(nm);
                    }
                    continue;
                }
                case ir::Op::Load: {
                    if (in.arg == substitute_param_) {
                        out.push_back(substitute_value_);
                        continue;
                    }
                    const std::string p = "p" + std::to_string(in.arg);
                    const std::string addr = address(in.access, coord);
                    const bool is_bool = in.dtype == DType::Bool, is_half = in.dtype == DType::Float16;
                    const bool is_bf16 = in.dtype == DType::BFloat16;
                    // The element at address `a`, as a value (half and bfloat16 widen to float).
                    auto elem = [&](const std::string& a) {
                        if (is_half) return "vload_half(" + a + ", " + p + ")";
                        if (is_bf16) return "lt_bf16_load(" + p + "[" + a + "])";
                        return is_bool ? "(" + p + "[" + a + "] != 0)" : p + "[" + a + "]";
                    };
                    const std::int64_t inner = n_ ? in.access.strides[n_ - 1] : 0;
                    if (!in.plain_load()) {  // gathered (clamped index) or gated (nothing read outside)
                        const bool one = lanes == 1 || (inner == 0 && invariant(in.b) && invariant(in.c));
                        for (int l = 0; l < (one ? 1 : lanes); ++l) {
                            std::string a = addr + (l ? " + " + std::to_string(l * inner) : "");
                            if (in.b >= 0)
                                a += " + (" + idx_ + ")clamp(" + arg(in.b, l) + ", 0L, " + std::to_string(in.dyn_extent - 1) +
                                     "L) * " + paren(in.dyn_stride);
                            std::string e = elem(a);
                            if (in.c >= 0) e = "(" + arg(in.c, l) + " ? " + e + " : (" + T + ")0)";
                            const std::string nm = one ? v : lane_name(l);
                            src_ << ind << "const " << T << " " << nm << " = " << e << ";\n";
                            out.push_back(nm);
                        }
                        continue;
                    }
                    // In an unrolled step, a value loaded by an earlier phase is reused; a new one
                    // is kept in a variable declared at kernel scope for later phases.
                    const std::string cache_key = std::to_string(step_) + "|" + p + "|" + addr;
                    if (step_ >= 0) {
                        if (auto hit = row_cache_.find(cache_key); hit != row_cache_.end()) {
                            out = hit->second;
                            continue;
                        }
                    }
                    const std::string var = step_ >= 0 ? "rc" + std::to_string(row_cache_.size()) : v;
                    auto define = [&](const std::string& type, const std::string& name, const std::string& value) {
                        if (step_ >= 0) {
                            row_decls_ += "    " + type + " " + name + ";\n";
                            src_ << ind << name << " = " << value << ";\n";
                        } else {
                            src_ << ind << "const " << type << " " << name << " = " << value << ";\n";
                        }
                    };
                    if (lanes == 1 || inner == 0) {
                        define(T, var, elem(addr));
                        out.push_back(var);
                    } else if (vectorizable(in.access, lanes)) {
                        if (is_half) {
                            define("float" + std::to_string(lanes), var,
                                   "vload_half" + std::to_string(lanes) + "(0, " + p + " + " + addr + ")");
                        } else {
                            const std::string V = std::string(cl_storage_type(in.dtype)) + std::to_string(lanes);
                            define(V, var, "*(__global const " + V + "*)(" + p + " + " + addr + ")");
                        }
                        for (int l = 0; l < lanes; ++l) {
                            const std::string e = var + ".s" + std::to_string(l);
                            out.push_back(is_bool ? "(" + e + " != 0)" : is_bf16 ? "lt_bf16_load(" + e + ")" : e);
                        }
                    } else {
                        for (int l = 0; l < lanes; ++l) {
                            const std::string name = var + "_" + std::to_string(l);
                            define(T, name, elem(addr + " + " + std::to_string(l * inner)));
                            out.push_back(name);
                        }
                    }
                    if (step_ >= 0) row_cache_[cache_key] = out;
                    continue;
                }
                default: break;
            }
            const bool same = invariant(in.a) && invariant(in.b) && invariant(in.c);
            for (int l = 0; l < (same ? 1 : lanes); ++l) {
                std::string e;
                switch (in.op) {
                    case ir::Op::Unary:
                        e = cl_unary(in.unary, ph.instrs[static_cast<std::size_t>(in.a)].dtype, arg(in.a, l));
                        break;
                    case ir::Op::Binary: {
                        const DType operand = ph.instrs[static_cast<std::size_t>(in.a)].dtype;
                        e = cl_binary(in.binary, operand, arg(in.a, l), arg(in.b, l));
                        // x <= x of integers (the fuzzer's, or a user's): its value, since clang warns of
                        // a self-comparison and PoCL prints "1 warning generated." (floats keep NaN's answer)
                        if (!is_floating(operand) && arg(in.a, l) == arg(in.b, l)) {
                            const BinaryOp op = in.binary;
                            if (op == BinaryOp::Le || op == BinaryOp::Ge || op == BinaryOp::Eq) e = "true";
                            if (op == BinaryOp::Lt || op == BinaryOp::Gt || op == BinaryOp::Ne) e = "false";
                        }
                        break;
                    }
                    case ir::Op::Where: e = "(" + arg(in.a, l) + " ? " + arg(in.b, l) + " : " + arg(in.c, l) + ")"; break;
                    case ir::Op::Cast: e = cl_cast(in.dtype, ph.instrs[static_cast<std::size_t>(in.a)].dtype, arg(in.a, l)); break;
                    default: break;
                }
                const std::string nm = same ? v : lane_name(l);
                src_ << ind << "const " << T << " " << nm << " = " << e << ";\n";
                out.push_back(nm);
            }
        }
        return name;
    }

    void stores(const ir::Phase& ph, const std::vector<std::vector<std::string>>& name, int lanes,
                const std::vector<std::string>& coord, const std::string& ind) {
        for (const ir::Store& st : ph.stores) {
            const DType t = k_.params[static_cast<std::size_t>(st.param)].dtype;
            const std::string p = "p" + std::to_string(st.param);
            const std::string addr = address(st.access, coord);
            const auto& v = name[static_cast<std::size_t>(st.value)];
            auto value = [&](int l) {
                const std::string& e = v.size() == 1 ? v[0] : v[static_cast<std::size_t>(l)];
                return t == DType::Bool ? "(uchar)" + e : t == DType::BFloat16 ? "lt_bf16_store(" + e + ")" : e;
            };
            const bool is_half = t == DType::Float16;  // float values, rounded to nearest even
            if (lanes > 1 && vectorizable(st.access, lanes)) {
                const std::string n = std::to_string(lanes);
                const std::string V = is_half ? "float" + n : std::string(cl_storage_type(t)) + n;
                if (is_half)
                    src_ << ind << "vstore_half" << n << "_rte((" << V << ")(";
                else
                    src_ << ind << "*(__global " << V << "*)(" << p << " + " << addr << ") = (" << V << ")(";
                for (int l = 0; l < lanes; ++l) src_ << (l ? ", " : "") << value(l);
                src_ << (is_half ? "), 0, " + p + " + " + addr + ");\n" : std::string(");\n"));
            } else {
                const std::int64_t inner = n_ ? st.access.strides[n_ - 1] : 0;
                for (int l = 0; l < lanes; ++l) {
                    const std::string a = addr + (l ? " + " + std::to_string(l * inner) : "");
                    if (is_half)
                        src_ << ind << "vstore_half_rte(" << value(l) << ", " << a << ", " << p << ");\n";
                    else
                        src_ << ind << p << "[" << a << "] = " << value(l) << ";\n";
                }
            }
        }
    }

    // ----------------------------------------------------------------------------- element-wise

    void render_elementwise(RenderedKernel& out) {
        width_ = choose_width(true);
        const std::int64_t units = numel_ / width_;
        // Neither the count nor the work-group depends on the length (nor does the code of a
        // one-axis domain, or a broadcast's outer axis): a new length reuses the program.
        const std::int64_t local = max_group();
        src_ << "__kernel __attribute__((reqd_work_group_size(" << local << ", 1, 1)))\n"
             << "void " << name_ << "(" << params(false, DType::Float32) << ", const " << idx_ << " units) {\n";
        src_ << "    const " << idx_ << " unit = (" << idx_ << ")get_global_id(0);\n";
        src_ << "    if (unit >= units) return;\n";
        std::vector<int> all(n_);
        for (std::size_t j = 0; j < n_; ++j) all[j] = static_cast<int>(j);
        std::vector<std::string> coord(n_, "0");
        decompose("    ", all, width_ == 1 ? std::string("unit") : "unit * " + std::to_string(width_), coord);
        for (const ir::Phase& ph : k_.phases) {
            src_ << "    {\n";
            auto names = body(ph, width_, coord, "        ");
            stores(ph, names, width_, coord, "        ");
            src_ << "    }\n";
        }
        src_ << "}\n";
        Stage s;
        s.name = name_;
        s.local[0] = static_cast<std::size_t>(local);
        s.global[0] = static_cast<std::size_t>((units + local - 1) / local * local);
        s.units = units;
        s.long_units = idx_ == "long";
        out.stages.push_back(s);
    }

    // --------------------------------------------------------------------------------- reducing

    struct Geometry {
        std::int64_t lx = 1, ly = 1, groups_x = 1, split = 1;  // split: G work-groups per outer tile
    };

    bool splittable() const {
        // One reduce phase, then only the outer store phase: partials can be folded elsewhere.
        if (k_.phases.size() != 2 || k_.phases[0].kind != ir::Phase::Kind::Reduce) return false;
        return k_.phases[1].kind == ir::Phase::Kind::Store && k_.phases[1].outer;
    }

    Geometry geometry(std::int64_t reduce_units, std::int64_t outer_units) const {
        Geometry g;
        const std::int64_t maxg = max_group(), target = target_threads();
        const bool row = n_ > 0 && k_.reduced[n_ - 1];
        if (row) {
            g.ly = std::min(pow2_ceil(reduce_units), maxg);
            g.lx = std::min(maxg / g.ly, pow2_ceil(outer_units));
        } else {
            g.lx = std::min(pow2_ceil(outer_units), outer_units >= target ? maxg : std::min<std::int64_t>(64, maxg));
            const std::int64_t tiles = (outer_units + g.lx - 1) / g.lx;
            const std::int64_t want = std::max<std::int64_t>(1, target / (tiles * g.lx));
            g.ly = std::min({maxg / g.lx, pow2_ceil(reduce_units), pow2_floor(want)});
        }
        g.groups_x = (outer_units + g.lx - 1) / g.lx;
        const std::int64_t threads = g.groups_x * g.lx * g.ly;
        if (splittable() && threads * 2 < target) {
            const std::int64_t by_work = reduce_units / (g.ly * 64);  // >= 64 units per lane
            g.split = std::max<std::int64_t>(1, std::min((target + threads - 1) / threads, by_work));
        }
        return g;
    }

    void render_reducing(RenderedKernel& out) {
        const bool row = n_ > 0 && k_.reduced[n_ - 1];
        width_ = n_ == 0 ? 1 : choose_width(!row);
        lanes_outer_ = !row && width_ > 1;
        reduce_width_ = row ? width_ : 1;
        const std::int64_t reduce_units = reduced_ / reduce_width_;
        const std::int64_t outer_units = outer_ / (lanes_outer_ ? width_ : 1);
        const Geometry g = geometry(reduce_units, outer_units);
        const bool split = g.split > 1;
        const ir::Phase& first = k_.phases[0];
        // (float16 and bfloat16 accumulate in float: the scratch partials are float too.)
        const DType acc_t =
            first.instrs.empty() ? DType::Float32 : value_dtype(first.instrs[static_cast<std::size_t>(first.reduce_value)].dtype);

        // Stage 1: every phase (or, split, the reduce phase into partials).
        src_ << "__kernel __attribute__((reqd_work_group_size(" << g.lx << ", " << g.ly << ", 1)))\n"
             << "void " << name_ << "(" << params(split, acc_t) << ", const " << idx_ << " units) {\n";
        reduce_prologue(g.lx, g.ly);
        if (split) src_ << "    const " << idx_ << " split = (" << idx_ << ")get_group_id(1);\n";
        std::vector<std::string> coord(n_, "0");
        decompose("    ", outer_axes_, lanes_outer_ ? "o * " + std::to_string(width_) : std::string("o"), coord);
        int walks = 0;  // phases that walk the reduced space
        for (const ir::Phase& ph : k_.phases) walks += !ph.outer;
        const std::int64_t steps = (reduce_units + g.ly - 1) / g.ly;
        unrolled_steps_ = !split && walks >= 2 && steps >= 1 && steps <= 8 ? static_cast<int>(steps) : 0;
        const std::string head = src_.str();  // row-cache variables are declared after it
        src_.str("");
        for (std::size_t p = 0; p < k_.phases.size(); ++p) {
            const ir::Phase& ph = k_.phases[p];
            if (split && p > 0) break;
            if (ph.kind == ir::Phase::Kind::Reduce) {
                const std::string first_unit = split ? "split * " + std::to_string(g.ly) + " + ly" : std::string("ly");
                reduce_phase(p, g.lx, g.ly, reduce_units, first_unit, g.ly * g.split, coord);
            } else {
                store_phase(ph, g.ly, reduce_units, coord);
            }
        }
        if (split)
            for (const std::string& l : lane_suffixes())
                src_ << "    if (active && ly == 0) scratch[(o" << (l.empty() ? "" : " * " + std::to_string(width_) + " + " + l.substr(1))
                     << ") * " << g.split << " + split] = slot0" << l << ";\n";
        src_ << "}\n";
        const std::string phases = src_.str();
        src_.str("");
        src_ << head << row_decls_ << phases;
        unrolled_steps_ = 0;
        Stage s1;
        s1.name = name_;
        s1.local[0] = static_cast<std::size_t>(g.lx);
        s1.local[1] = static_cast<std::size_t>(g.ly);
        s1.global[0] = static_cast<std::size_t>(g.groups_x * g.lx);
        s1.global[1] = static_cast<std::size_t>(g.split * g.ly);
        s1.units = outer_units;
        s1.long_units = idx_ == "long";
        out.stages.push_back(s1);
        if (!split) return;

        // Stage 2: fold the G partials of each output, then the outer store phase (one output
        // per work-item).
        lanes_outer_ = false;
        width_ = reduce_width_ = 1;
        out.scratch_elems = outer_ * g.split;
        out.scratch_dtype = acc_t;
        const std::int64_t ly2 = std::min(pow2_ceil(g.split), max_group());
        const std::int64_t lx2 = std::min(max_group() / ly2, pow2_ceil(outer_));
        src_ << "\n__kernel __attribute__((reqd_work_group_size(" << lx2 << ", " << ly2 << ", 1)))\n"
             << "void " << name_ << "_fold(" << params(true, acc_t) << ", const " << idx_ << " units) {\n";
        reduce_prologue(lx2, ly2);
        std::vector<std::string> coord2(n_, "0");
        decompose("    ", outer_axes_, "o", coord2);
        const std::string T = cl_value_type(acc_t);
        src_ << "    " << T << " acc0 = " << cl_reduce_identity(first.reduce_op, acc_t) << ";\n"
             << "    if (active)\n"
             << "        for (" << idx_ << " u = ly; u < " << g.split << "; u += " << ly2 << ")\n"
             << "            acc0 = " << cl_reduce_fold(first.reduce_op, acc_t, "acc0", "scratch[o * " + std::to_string(g.split) + " + u]")
             << ";\n";
        combine(0, first.reduce_op, acc_t, lx2, ly2);
        store_phase(k_.phases[1], ly2, 0, coord2);
        src_ << "}\n";
        Stage s2;
        s2.name = name_ + "_fold";
        s2.local[0] = static_cast<std::size_t>(lx2);
        s2.local[1] = static_cast<std::size_t>(ly2);
        s2.global[0] = static_cast<std::size_t>((outer_ + lx2 - 1) / lx2 * lx2);
        s2.global[1] = static_cast<std::size_t>(ly2);
        s2.units = outer_;
        s2.long_units = idx_ == "long";
        out.stages.push_back(s2);
    }

    /// "" for one accumulator per reduce phase; "_0" ... "_{W-1}" for one per output lane.
    std::vector<std::string> lane_suffixes() const {
        if (!lanes_outer_) return {""};
        std::vector<std::string> out;
        for (int l = 0; l < width_; ++l) out.push_back("_" + std::to_string(l));
        return out;
    }

    /// The count of outer indices (`units`) is an argument: where the geometry does not depend
    /// on it (rows of a batch once it fills a work-group), any batch reuses the program.
    void reduce_prologue(std::int64_t lx, std::int64_t ly) {
        // Local arrays must be declared at kernel scope; one per reduce phase (and lane).
        if (ly > 1)
            for (std::size_t p = 0; p < k_.phases.size(); ++p)
                if (k_.phases[p].kind == ir::Phase::Kind::Reduce) {
                    const ir::Phase& ph = k_.phases[p];
                    for (const std::string& l : lane_suffixes())
                        src_ << "    __local " << cl_value_type(ph.instrs[static_cast<std::size_t>(ph.reduce_value)].dtype)
                             << " red" << p << l << "[" << lx * ly << "];\n";
                }
        src_ << "    const " << idx_ << " lx = (" << idx_ << ")get_local_id(0), ly = (" << idx_ << ")get_local_id(1);\n"
             << "    const " << idx_ << " o = (" << idx_ << ")get_group_id(0) * " << lx << " + lx;\n"
             << "    const bool active = o < units;\n";
    }

    /// Renders `emit(coord)` for this lane's share of the reduced space, W elements a step:
    /// unrolled (row cache), or a loop. On a GPU lanes interleave (neighbouring lanes read
    /// neighbouring addresses: coalesced); on a CPU each lane walks a contiguous chunk (a CPU
    /// runs a work-group's lanes one after another).
    template <class Emit>
    void for_each_share(const std::string& first_unit, std::int64_t step, std::int64_t units,
                        std::vector<std::string> coord, Emit&& emit) {
        const std::string flat = reduce_width_ == 1 ? std::string("u") : "u * " + std::to_string(reduce_width_);
        auto one_step = [&](int unrolled_step) {
            decompose("            ", reduced_axes_, flat, coord);
            step_ = unrolled_step;
            emit(coord);
            step_ = -1;
        };
        if (unrolled_steps_) {
            for (int j = 0; j < unrolled_steps_; ++j) {
                src_ << "        {\n            const " << idx_ << " u = " << first_unit << " + " << j * step << ";\n";
                const bool guard = (j + 1) * step > units;
                if (guard) src_ << "            if (u < " << units << ") {\n";
                one_step(j);
                src_ << (guard ? "            }\n" : "") << "        }\n";
            }
            return;
        }
        if (dev_.gpu) {
            src_ << "        for (" << idx_ << " u = " << first_unit << "; u < " << units << "; u += " << step << ") {\n";
        } else {
            const std::int64_t chunk = (units + step - 1) / std::max<std::int64_t>(step, 1);
            src_ << "        const " << idx_ << " u0 = (" << first_unit << ") * " << chunk << ";\n"
                 << "        const " << idx_ << " u1 = u0 + " << chunk << " < " << units << " ? u0 + " << chunk << " : "
                 << units << ";\n"
                 << "        for (" << idx_ << " u = u0; u < u1; ++u) {\n";
        }
        one_step(-1);
        src_ << "        }\n";
    }

    void reduce_phase(std::size_t p, std::int64_t lx, std::int64_t ly, std::int64_t units, const std::string& first_unit,
                      std::int64_t step, std::vector<std::string> coord) {
        const ir::Phase& ph = k_.phases[p];
        const DType t = ph.instrs[static_cast<std::size_t>(ph.reduce_value)].dtype;
        const std::string acc = "acc" + std::to_string(p);
        const std::vector<std::string> lanes = lane_suffixes();
        for (const std::string& l : lanes)
            src_ << "    " << cl_value_type(t) << " " << acc << l << " = " << cl_reduce_identity(ph.reduce_op, t) << ";\n";
        src_ << "    if (active) {\n";
        for_each_share(first_unit, step, units, std::move(coord), [&](const std::vector<std::string>& c) {
            auto names = body(ph, width_, c, "            ");
            const auto& v = names[static_cast<std::size_t>(ph.reduce_value)];
            for (int l = 0; l < width_; ++l) {
                const std::string a = acc + lanes[lanes.size() == 1 ? 0 : static_cast<std::size_t>(l)];
                src_ << "            " << a << " = "
                     << cl_reduce_fold(ph.reduce_op, t, a, v.size() == 1 ? v[0] : v[static_cast<std::size_t>(l)]) << ";\n";
            }
        });
        src_ << "    }\n";
        combine(p, ph.reduce_op, t, lx, ly);
    }

    /// Folds acc<p> across the LY lanes of each outer index; every lane gets slot<p>.
    void combine(std::size_t p, ReduceOp op, DType t, std::int64_t lx, std::int64_t ly) {
        const std::string acc = "acc" + std::to_string(p), red = "red" + std::to_string(p);
        const std::string T = cl_value_type(t);
        const std::vector<std::string> lanes = lane_suffixes();
        if (ly == 1) {
            for (const std::string& l : lanes) src_ << "    const " << T << " slot" << p << l << " = " << acc << l << ";\n";
            return;
        }
        for (const std::string& l : lanes) src_ << "    " << red << l << "[ly * " << lx << " + lx] = " << acc << l << ";\n";
        src_ << "    barrier(CLK_LOCAL_MEM_FENCE);\n";
        for (std::int64_t s = ly / 2; s > 0; s /= 2) {
            src_ << "    if (ly < " << s << ") {\n";
            for (const std::string& l : lanes) {
                const std::string a = red + l + "[ly * " + std::to_string(lx) + " + lx]";
                const std::string b = red + l + "[(ly + " + std::to_string(s) + ") * " + std::to_string(lx) + " + lx]";
                src_ << "        " << a << " = " << cl_reduce_fold(op, t, a, b) << ";\n";
            }
            src_ << "    }\n    barrier(CLK_LOCAL_MEM_FENCE);\n";
        }
        for (const std::string& l : lanes) src_ << "    const " << T << " slot" << p << l << " = " << red << l << "[lx];\n";
    }

    void store_phase(const ir::Phase& ph, std::int64_t ly, std::int64_t units, std::vector<std::string> coord) {
        if (ph.outer) {
            const int lanes = lanes_outer_ ? width_ : 1;
            src_ << "    if (active && ly == 0) {\n";
            auto names = body(ph, lanes, coord, "        ");
            stores(ph, names, lanes, coord, "        ");
            src_ << "    }\n";
            return;
        }
        src_ << "    if (active) {\n";
        for_each_share("ly", ly, units, std::move(coord), [&](const std::vector<std::string>& c) {
            auto names = body(ph, width_, c, "            ");
            stores(ph, names, width_, c, "            ");
        });
        src_ << "    }\n";
    }
};

/// The kernel as OpenCL C, its kernel function named `name`.
inline RenderedKernel render(const ir::Kernel& kernel, const DeviceTraits& device, const std::string& name = "lt_kernel") {
    return Renderer(kernel, device, name).render();
}

/// `kernel` as render would have made it with the name `name`, without rendering it again (so
/// that a kernel rendered as a program of its own can join a program of several): the name
/// appears only where each stage's function is declared, "void <stage name>(".
inline RenderedKernel renamed(RenderedKernel kernel, const std::string& name) {
    if (kernel.stages.empty()) return kernel;
    const std::size_t old_length = kernel.stages[0].name.size();  // the first stage is named `name`
    for (Stage& stage : kernel.stages) {
        const std::string to = name + stage.name.substr(old_length);
        const std::string declared = "void " + stage.name + "(";
        const std::size_t at = kernel.functions.find(declared);
        if (at == std::string::npos) fail<Error>("lazytensor internal error: no function ", stage.name, " to rename");
        kernel.functions.replace(at, declared.size(), "void " + to + "(");
        stage.name = to;
    }
    kernel.source = program_source(kernel.uses_fp64, kernel.helpers, kernel.functions);
    return kernel;
}

}  // namespace lazytensor::detail::opencl
