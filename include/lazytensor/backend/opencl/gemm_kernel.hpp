// SPDX-License-Identifier: MIT
// lazytensor's own OpenCL GEMM kernel: C = A x B over an ir::Gemm, float32 or float64.
//
// A and B are read in place through their strides (any layout: row- or column-major, or
// neither); C is contiguous [batch, m, n]. Sizes, strides and offsets are kernel arguments, so
// one program serves every shape of a layout class. The tiles of C are the first NDRange
// dimension (one index for rows and columns of tiles: some devices allow only 65535 work-groups
// along the others), the batch the third, launched in chunks of at most 65535 matrices; each
// matrix starts at a constant batch stride, or at the offsets of a per-matrix table (2 longs per
// matrix: A's, then B's) where the batch has several axes.
//
// Each work-group computes a BM x BN tile of C (BM = tm * wm, BN = tn * wn) with tm x tn
// work-items, each holding a wm x wn register tile; a work-item owns runs of v consecutive rows
// (and columns) strided by tm * v (tn * v), so that local-memory reads are aligned v-wide vector
// loads that are broadcasts or consecutive across the work-items, and the stores coalesce. Tiles of A (BM x bk) and B (bk x bn) are staged in local memory, k-major; the next
// tile's global loads are issued before the current tile is multiplied (register prefetch), so
// their latency hides behind the FMAs. Loads of a tile map consecutive work-items along the
// operand's unit-stride axis (the layout class), so they coalesce whatever the transposes.
// Edges are guarded inside the kernel: out-of-range loads read 0, out-of-range stores are
// skipped; there are no padding or transpose kernels. Where every tile is whole and every vector
// access aligned (GemmLayoutClass::whole_tiles), a variant without those checks runs.
//
// An epilogue (FusedEpilogue) is code applied to each result before its store, with its row,
// column and batch index in scope, and extra kernel parameters after the fixed ones.
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "../../core/dtype.hpp"
#include "../../core/env.hpp"
#include "../../core/error.hpp"
#include "../../ir/gemm.hpp"
#include "fused_code.hpp"
#include "op_spellings.hpp"

namespace lazytensor::detail::opencl {

/// The shape of the kernel: work-items per group along m and n, outputs per work-item along m
/// and n, and the depth of a k tile.
struct GemmKernelParams {
    int tm = 16, tn = 16;
    int wm = 8, wn = 8;
    int bk = 16;
    int v = 1;             // width of the local-memory reads and of the runs of rows and columns a work-item owns
    int gv = 1;            // width of the global loads along an operand's unit-stride axis (where aligned)
    bool prefetch = true;  // issue the next tile's global loads before multiplying this one
    bool double_buffer = false;  // two local tiles (needs prefetch): one barrier per k step, not two
    bool fragments = false;      // read the next k step's runs from local memory before this step's products
    // NVIDIA: registers a work-item may use (the PTX directive .maxnreg, which NVIDIA's OpenCL C
    // compiler has no option for; -cl-nv-maxrregcount is ignored), so that two work-groups fit a
    // multiprocessor; 0: the compiler's choice. Other devices ignore it.
    int max_registers = 0;

    int block_m() const { return tm * wm; }
    int block_n() const { return tn * wn; }
    int threads() const { return tm * tn; }
    /// Every field, for keys and messages: a field left out of a key would let two kernels share it.
    std::string str() const {
        return std::to_string(tm) + ',' + std::to_string(tn) + ',' + std::to_string(wm) + ',' + std::to_string(wn) + ',' +
               std::to_string(bk) + ',' + std::to_string(v) + ',' + std::to_string(gv) + ',' + char('0' + prefetch) + ',' +
               char('0' + double_buffer) + ',' + char('0' + fragments) + ',' + std::to_string(max_registers);
    }
    bool operator==(const GemmKernelParams& o) const { return str() == o.str(); }
};

/// The form of GemmKernelParams::str() that the tools read (--params): the first eight fields
/// are required, the others default.
inline const char* gemm_params_form() { return "tm,tn,wm,wn,bk,v,gv,prefetch[,double_buffer[,fragments[,max_registers]]]"; }

/// A parameter set written in gemm_params_form(); nothing when `text` is not in that form.
inline std::optional<GemmKernelParams> parse_gemm_params(const std::string& text) {
    GemmKernelParams p;
    int flags[3] = {1, 0, 0}, end = 0;  // prefetch, double_buffer, fragments
    const int fields = std::sscanf(text.c_str(), "%d,%d,%d,%d,%d,%d,%d,%d%n,%d%n,%d%n,%d%n", &p.tm, &p.tn, &p.wm, &p.wn, &p.bk,
                                   &p.v, &p.gv, &flags[0], &end, &flags[1], &end, &flags[2], &end, &p.max_registers, &end);
    if (fields < 8 || std::size_t(end) != text.size()) return std::nullopt;
    p.prefetch = flags[0] != 0, p.double_buffer = flags[1] != 0, p.fragments = flags[2] != 0;
    return p;
}

/// Which axis of each operand the tile loads walk with consecutive work-items: the unit-stride
/// one where there is one, so that the loads coalesce.
struct GemmLayoutClass {
    bool a_k_fast = true;   // A's column (k) stride is 1 (row-major A); else walk m
    bool b_n_fast = true;   // B's column (n) stride is 1 (row-major B); else walk k
    bool wide_index = false;  // element offsets within a matrix need 64 bits
    // Every tile is whole (m, n and k are multiples of the tile), the unit strides are 1 and every
    // vector load is aligned: the kernel has no edge checks (fewer registers and instructions).
    bool whole_tiles = false;
    // C is a block of a larger row-major matrix: element (i, j) of matrix b at c_offset +
    // b * c_batch_stride + i * ldc + j, three more long arguments after first_matrix. Blocked linear algebra
    // (linalg_blocked.hpp) updates its matrix in place so, with an epilogue reading the old value.
    bool c_block = false;
};

/// Which GEMM runs OpenCL matrix products: per shape (Auto), the own kernel, or CLBlast.
enum class GemmChoice { Auto, Own, CLBlast };

/// LAZYTENSOR_OPENCL_GEMM: auto (default), own or clblast; anything else is a ValueError.
inline GemmChoice gemm_choice_from_env() {
    return static_cast<GemmChoice>(
        env_choice("LAZYTENSOR_OPENCL_GEMM", {"auto", "own", "clblast"}, 0, "auto, own (lazytensor's kernel) or clblast"));
}

/// Auto's choice where CLBlast is built: whether the own kernel measured faster than CLBlast
/// for products like `g` on this device class. On the H100 (bench_gemm_kernel, 2026-11-27) it
/// was for every float32 product of issue 18, 4096^3 included (3.1 ms against CLBlast's tuned
/// indirect kernel's 3.4). Elsewhere (float64, other devices) nothing was measured: CLBlast
/// stays.
inline bool own_gemm_faster(const ir::Gemm& g, bool gpu, const std::string& device_name) {
    return gpu && device_name.find("NVIDIA") != std::string::npos && g.dtype == DType::Float32;
}

/// The local memory a parameter set's tiles take, in bytes, for elements of `elem` bytes.
inline std::size_t gemm_local_bytes(const GemmKernelParams& p, std::size_t elem) {
    return std::size_t(p.double_buffer ? 2 : 1) * std::size_t(p.bk) * std::size_t(p.block_m() + p.block_n() + 2 * p.v) * elem;
}

/// Whether a parameter set makes a kernel: every work-item loads whole shares of a tile, in
/// vectors of gv, and v and gv divide what they split.
inline bool gemm_params_valid(const GemmKernelParams& p) {
    const bool positive = p.tm > 0 && p.tn > 0 && p.wm > 0 && p.wn > 0 && p.bk > 0;
    const bool vector = (p.v == 1 || p.v == 2 || p.v == 4) && p.wm % p.v == 0 && p.wn % p.v == 0;
    const bool global_vector = (p.gv == 1 || p.gv == 2 || p.gv == 4) && positive && p.bk % p.gv == 0 &&
                               p.block_m() % p.gv == 0 && p.block_n() % p.gv == 0;
    const int share = p.threads() * p.gv;
    const bool registers = p.max_registers == 0 || (p.max_registers >= 16 && p.max_registers <= 255);
    return positive && vector && global_vector && (p.block_m() * p.bk) % share == 0 && (p.block_n() * p.bk) % share == 0 &&
           (!p.double_buffer || p.prefetch) && registers;
}

/// ValueError unless the parameter set makes a kernel.
inline void check_gemm_params(const GemmKernelParams& p) {
    if (!gemm_params_valid(p))
        fail<ValueError>("OpenCL GEMM kernel parameters tm ", p.tm, ", tn ", p.tn, ", wm ", p.wm, ", wn ", p.wn, ", bk ",
                         p.bk, ", v ", p.v, ", gv ", p.gv, p.double_buffer ? ", double-buffered" : "",
                         p.max_registers ? concat(", at most ", p.max_registers, " registers") : std::string(),
                         ": each tile of A (tm*wm x bk) and of B (bk x tn*wn) must split evenly over the tm*tn "
                         "work-items in loads of gv, v and gv (1, 2 or 4) divide wm and wn, and bk and the tiles, "
                         "double buffering needs prefetch, and a register cap is 0 (none) or 16 to 255");
}

/// The layout class of a product (which of its operands' strides are 1, whether 32-bit element
/// offsets suffice within one matrix).
inline GemmLayoutClass gemm_layout_class(const ir::Gemm& g) {
    GemmLayoutClass c;
    c.a_k_fast = g.m == 1 || (g.k > 1 && std::abs(g.a.col_stride) <= std::abs(g.a.row_stride));
    c.b_n_fast = g.k == 1 || (g.n > 1 && std::abs(g.b.col_stride) <= std::abs(g.b.row_stride));
    const auto span = [](const ir::MatrixLayout& l, std::int64_t rows, std::int64_t cols) {
        return std::abs(l.row_stride) * std::max<std::int64_t>(rows - 1, 0) +
               std::abs(l.col_stride) * std::max<std::int64_t>(cols - 1, 0);
    };
    const std::int64_t most = std::max({span(g.a, g.m, g.k), span(g.b, g.k, g.n), g.m * g.n});
    c.wide_index = most >= (std::int64_t(1) << 31) - std::max<std::int64_t>(g.m, g.n) - 1;
    return c;
}

/// Whether a product may run a whole-tiles kernel with parameter set `p` (GemmLayoutClass::
/// whole_tiles): m, n and k (all > 0) are multiples of the tile, each operand's fast axis (as
/// `layout` says) has stride 1, and its other stride and every matrix's start are multiples of
/// the vector load's width.
inline bool gemm_whole_tiles(const ir::Gemm& g, const GemmLayoutClass& layout, const GemmKernelParams& p) {
    if (g.m <= 0 || g.n <= 0 || g.k <= 0 || g.m % p.block_m() != 0 || g.n % p.block_n() != 0 || g.k % p.bk != 0) return false;
    const auto aligned = [&](const ir::MatrixLayout& l, bool row_fast) {
        const std::int64_t unit = row_fast ? l.col_stride : l.row_stride, other = row_fast ? l.row_stride : l.col_stride;
        if (unit != 1 || other % p.gv != 0 || l.offset % p.gv != 0) return false;
        for (std::size_t t = 0; t < g.batch.size(); ++t)
            if (g.batch[t] > 1 && l.batch_strides[t] % p.gv != 0) return false;
        return true;
    };
    return aligned(g.a, layout.a_k_fast) && aligned(g.b, layout.b_n_fast);
}

/// The parameter set for a product on a device class. NVIDIA GPUs get sets measured on the H100
/// (bench_gemm_kernel --params, 2026-11-27/28), all with vector loads of 4 from global and local
/// memory: for one matrix with n >= 256 and at least 128 tiles of 128x128 (about a wave of the
/// H100's 132 SMs), 128x128 tiles of depth 8 from 16 x 16 work-items of 8x8 outputs, reading the
/// next k step early, capped at 128 registers so that two work-groups share a multiprocessor
/// (4096^3: 3.06 ms, 128x256 tiles uncapped 3.14; 8192x512x256: 0.073, 128x64 tiles 0.084);
/// batches with n >= 512, 64x128 tiles from 8 x 16 work-items of 8x8, double-buffered (32 x
/// 1024x64x1024: 0.145 ms); batches with 32 < n <= 128, 128x64 tiles from 16 x 8 work-items of 8x8
/// whose runs of rows and columns are 2 wide (32 x 1024x1024x64 on the H200, 2026-11-28: 0.123-0.130
/// ms against 0.146-0.152 for the last set below, whose runs are 4 wide); where n <= 32, 64x16 tiles
/// from 32 x 4 work-items of 2x4 (8192x256x10: 0.026 ms); else 128x64 tiles of depth 16 from 32 x 8 work-items of 4x8 outputs
/// (more work-groups for narrow or small products: 1024^3 0.085 ms). The capped 128x128 set goes
/// to depth 16 where its tiles are whole (no edge checks: 4096^3 2.876 ms against 2.913 at depth
/// 8 on the H200, 2026-11-28; with edge checks depth 16 was the slower). Other GPUs get a middle
/// set, CPUs (PoCL) a small one that builds fast.
inline GemmKernelParams gemm_params_for(const ir::Gemm& g, bool gpu, const std::string& device_name,
                                        std::size_t max_work_group, std::size_t local_memory) {
    //                  tm  tn  wm  wn  bk  v  gv  prefetch, double buffer, fragments, max registers
    GemmKernelParams p{8, 8, 4, 4, 8, 1, 1, false};
    if (gpu && device_name.find("NVIDIA") != std::string::npos) {
        auto tiles = [&](std::int64_t bm, std::int64_t bn) { return ((g.m + bm - 1) / bm) * ((g.n + bn - 1) / bn) * g.batch_count(); };
        if (g.dtype == DType::Float64) p = GemmKernelParams{16, 16, 4, 4, 16, 2, 1, true};
        else if (g.n <= 32) p = GemmKernelParams{32, 4, 2, 4, 16, 2, 2, true, true};
        else if (g.n >= 256 && g.batch_count() == 1 && tiles(128, 128) >= 128) {
            p = GemmKernelParams{16, 16, 8, 8, 8, 4, 4, true, false, true, 128};
            GemmKernelParams deep = p;  // depth 16 pays only without edge checks
            deep.bk = 16;
            if (gemm_whole_tiles(g, gemm_layout_class(g), deep)) p = deep;
        }
        else if (g.n >= 512 && g.batch_count() > 1) p = GemmKernelParams{8, 16, 8, 8, 16, 4, 4, true, true, true};
        else if (g.n <= 128 && g.batch_count() > 1) p = GemmKernelParams{16, 8, 8, 8, 16, 2, 4, true, true, true};
        else p = GemmKernelParams{32, 8, 4, 8, 16, 4, 4, true, true};
    } else if (gpu) {
        p = GemmKernelParams{16, 16, 4, 4, 16, 1, 1, true};
    }
    // Fit the device: halve the work-group, then the k depth, while either is too large.
    const std::size_t elem = dtype_size(g.dtype);
    auto local_bytes = [&] { return gemm_local_bytes(p, elem); };
    while (std::size_t(p.threads()) > max_work_group && p.tm > 1) p.tm /= 2, p.wm *= 2;
    while (local_bytes() > local_memory && p.bk > p.gv) p.bk /= 2;
    if (!gemm_params_valid(p) || std::size_t(p.threads()) > max_work_group || local_bytes() > local_memory)
        p = GemmKernelParams{1, 1, 1, 1, 1, 1, 1, false};  // a tiny device: one work-item per group, slow but right
    return p;
}

/// `ptx` (a program's PTX text, as NVIDIA's driver gives it) with `directive` (".maxnreg 128",
/// ".minnctapersm 2") among its kernel's performance directives, before the body. Nothing when
/// `ptx` is not PTX of one entry, or has that directive already.
inline std::optional<std::string> ptx_with_directive(const std::string& ptx, const std::string& directive) {
    const std::size_t entry = ptx.find(".entry ");
    if (entry == std::string::npos || ptx.find(".entry ", entry + 1) != std::string::npos ||
        ptx.find(directive.substr(0, directive.find(' '))) != std::string::npos)
        return std::nullopt;
    const std::size_t body = ptx.find("\n{", entry);
    if (body == std::string::npos) return std::nullopt;
    const std::size_t parameters_end = ptx.rfind(')', body);
    if (parameters_end == std::string::npos || parameters_end < entry) return std::nullopt;
    return ptx.substr(0, body + 1) + directive + "\n" + ptx.substr(body + 1);
}

/// `ptx` with its kernel capped at `registers` per work-item (`.maxnreg`).
inline std::optional<std::string> ptx_with_register_cap(const std::string& ptx, int registers) {
    return ptx_with_directive(ptx, ".maxnreg " + std::to_string(registers));
}

/// The name of the kernel in every program gemm_kernel_source makes.
inline const char* gemm_kernel_name() { return "lt_gemm"; }

/// The OpenCL C source of lt_gemm for `dtype`, a layout class and a parameter set.
///
/// Arguments: C, A, B, the offset table (any buffer when unused), then (int or long as the
/// layout class says) m, n, k, A's row and column strides, B's row and column strides; then the
/// longs A's offset, A's batch stride, B's offset, B's batch stride, an int that is nonzero
/// when the offset table holds each matrix's offsets, and a long, the first matrix of this
/// launch; then the epilogue's parameters. NDRange: (ceil(m / BM) * ceil(n / BN) * tn, tm,
/// matrices in this launch), work-groups (tn, tm, 1).
inline std::string gemm_kernel_source(DType dtype, const GemmLayoutClass& layout, const GemmKernelParams& p,
                                      const FusedEpilogue& epilogue = {}, const FusedPrologue& prologue_a = {},
                                      const FusedPrologue& prologue_b = {}) {
    check_gemm_params(p);
    if (dtype != DType::Float32 && dtype != DType::Float64)
        fail<DTypeError>("the OpenCL GEMM kernel computes float32 and float64 products, not ", dtype);
    const std::string T = dtype == DType::Float64 ? "double" : "float";
    const std::string I = layout.wide_index ? "long" : "int";
    const int BM = p.block_m(), BN = p.block_n(), NT = p.threads(), V = p.v;
    const int a_pad = layout.a_k_fast ? V : 0, b_pad = layout.b_n_fast ? 0 : V;  // spread k-fast stores over banks
    const int LDA = BM + a_pad, LDB = BN + b_pad;
    const int LA = BM * p.bk / NT, LB = BN * p.bk / NT;
    auto n = [](auto x) { return std::to_string(x); };
    const std::string VT = V == 1 ? T : T + n(V);  // the vector type of a run

    const FusedPrologue* prologue[2] = {&prologue_a, &prologue_b};
    // An operand without a prologue is stored in the product's type.
    auto storage = [&](const FusedPrologue& f) { return f.name.empty() ? dtype : f.storage; };
    std::string s;
    // Fused code rounds each operation on its own, as elsewhere (the product's FMAs are explicit).
    const bool fused = !epilogue.code.empty() || !prologue_a.name.empty() || !prologue_b.name.empty();
    if (fused) s += "#pragma OPENCL FP_CONTRACT OFF\n";
    bool fp64 = dtype == DType::Float64 || epilogue.fp64;
    for (const FusedPrologue* f : prologue) fp64 = fp64 || f->fp64 || storage(*f) == DType::Float64;
    if (fp64) s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    {  // helper functions, each once, then the prologues' functions (before the macros below)
        std::vector<std::string> helpers = epilogue.helpers;
        for (const FusedPrologue* f : prologue) helpers.insert(helpers.end(), f->helpers.begin(), f->helpers.end());
        std::vector<std::string> once;
        for (const std::string& h : helpers)
            if (std::find(once.begin(), once.end(), h) == once.end()) once.push_back(h), s += h;
        for (const FusedPrologue* f : prologue) s += f->function;
        if (storage(prologue_a) == DType::Float16 || storage(prologue_b) == DType::Float16)
            s += "float2 lt_halves2(uint bits) { return vload_half2(0, (const __private half*)&bits); }\n"
                 "float4 lt_halves4(uint2 bits) { return vload_half4(0, (const __private half*)&bits); }\n";
    }
    s += "// lazytensor GEMM: tm " + n(p.tm) + ", tn " + n(p.tn) + ", wm " + n(p.wm) + ", wn " + n(p.wn) + ", bk " +
         n(p.bk) + ", v " + n(V) + (p.prefetch ? ", prefetch" : "") + (p.double_buffer ? ", double-buffered" : "") +
         (p.fragments ? ", fragments" : "") + (p.max_registers ? ", at most " + n(p.max_registers) + " registers" : "") +
         "; A " + (layout.a_k_fast ? "k" : "m") +
         "-fast, B " + (layout.b_n_fast ? "n" : "k") + "-fast" + (layout.whole_tiles ? ", whole tiles" : "") +
         (layout.c_block ? ", C a block" : "") + "\n";
    s += "#define T " + T + "\n#define I " + I + "\n#define SA " + cl_storage_type(storage(prologue_a)) + "\n#define SB " +
         cl_storage_type(storage(prologue_b)) + "\n#define SC " + (epilogue.output ? cl_storage_type(*epilogue.output) : T) + "\n";
    s += "#define TM " + n(p.tm) + "\n#define TN " + n(p.tn) + "\n#define WM " + n(p.wm) + "\n#define WN " + n(p.wn) +
         "\n#define BK " + n(p.bk) + "\n#define BM " + n(BM) + "\n#define BN " + n(BN) + "\n#define NT " + n(NT) +
         "\n#define V " + n(V) + "\n#define LDA " + n(LDA) + "\n#define LDB " + n(LDB) + "\n#define LA " + n(LA) +
         "\n#define LB " + n(LB) + "\n#define BUFFERS " + n(p.double_buffer ? 2 : 1) + "\n";
    // Vector accesses to the local tiles are casts that assert their alignment, so that each is
    // one wide access (NVIDIA's compiler splits vloadN into element loads: 8192x784x512 took 0.21
    // ms so, 0.17 aligned). Every offset they use is a multiple of V (reads) or GV (stores), and
    // the tiles start at a multiple of both.
    const std::size_t elem = dtype_size(dtype);
    s += "#define LOCAL_ALIGN __attribute__((aligned(" + n(std::size_t(std::max(V, p.gv)) * elem) + ")))\n";
    // Element e of this work-item's share of a tile: its (row, k) in A's tile and (k, col) in B's.
    // A load is GV consecutive elements along the fast axis (A_DR, A_DC: its step in rows and k).
    s += "#define GV " + n(p.gv) + "\n";
    s += layout.a_k_fast ? "#define A_ROW(x) ((x) / (BK / GV))\n#define A_K(x) ((x) % (BK / GV) * GV)\n#define A_DR 0\n#define A_DC 1\n"
                         : "#define A_ROW(x) ((x) % (BM / GV) * GV)\n#define A_K(x) ((x) / (BM / GV))\n#define A_DR 1\n#define A_DC 0\n";
    s += layout.b_n_fast ? "#define B_COL(x) ((x) % (BN / GV) * GV)\n#define B_K(x) ((x) / (BN / GV))\n#define B_DR 0\n#define B_DC 1\n"
                         : "#define B_COL(x) ((x) / (BK / GV))\n#define B_K(x) ((x) % (BK / GV) * GV)\n#define B_DR 1\n#define B_DC 0\n";
    // The tile row (column) of a work-item's i-th row (j-th column): runs of V, strided by TM*V.
    s += "#define OWN_ROW(i) (ty * V + ((i) / V) * (TM * V) + (i) % V)\n"
         "#define OWN_COL(j) (tx * V + ((j) / V) * (TN * V) + (j) % V)\n";
    s += R"CL(
__kernel __attribute__((reqd_work_group_size(TN, TM, 1)))
void lt_gemm(__global SC* restrict C, __global const SA* restrict A, __global const SB* restrict B,
             __global const long* restrict offsets, const I m, const I n, const I k,
             const I a_rs, const I a_cs, const I b_rs, const I b_cs,
             const long a_offset, const long a_batch_stride, const long b_offset, const long b_batch_stride,
             const int per_matrix_offsets, const long first_matrix)CL" +
         std::string(layout.c_block ? ", const long c_offset, const long ldc, const long c_batch_stride" : "") + epilogue.parameters + prologue_a.parameters + prologue_b.parameters + R"CL() {
    __local T As[BUFFERS * BK * LDA] LOCAL_ALIGN;
    __local T Bs[BUFFERS * BK * LDB] LOCAL_ALIGN;
    __local T* a_tile = As;  // the tiles being multiplied
    __local T* b_tile = Bs;
    const int tx = get_local_id(0), ty = get_local_id(1), lid = ty * TN + tx;
    const I tiles_n = (n + BN - 1) / BN, tile = (I)get_group_id(0);
    const I row0 = tile / tiles_n * BM, col0 = tile % tiles_n * BN;
    const long batch = first_matrix + get_group_id(2);
    long a_base = a_offset + batch * a_batch_stride, b_base = b_offset + batch * b_batch_stride;
    if (per_matrix_offsets) {
        a_base = offsets[2 * batch];
        b_base = offsets[2 * batch + 1];
    }
    A += a_base;
    B += b_base;
    C += )CL" + std::string(layout.c_block ? "c_offset + batch * c_batch_stride" : "batch * (long)m * (long)n") + R"CL(;

    T acc[WM][WN];
    #pragma unroll
    for (int i = 0; i < WM; ++i)
        #pragma unroll
        for (int j = 0; j < WN; ++j) acc[i][j] = 0;
    T ra[LA], rb[LB];
)CL";
    // Global -> registers: this work-item's share of the tiles at k0, zero outside the
    // matrices (unrolled here, so that ra and rb stay in registers). With GV > 1, a load that is
    // whole and aligned is one vector load.
    auto load_share = [&](const std::string& k0, const std::string& indent, bool is_a) {
        const std::string X = is_a ? "A" : "B", reg = is_a ? "ra" : "rb";
        const int shares = (is_a ? LA : LB) / p.gv;
        // The operand's storage, how a vector of GV and one element of it are read, and its
        // prologue applied to what was read.
        const FusedPrologue& f = *prologue[is_a ? 0 : 1];
        const bool half = storage(f) == DType::Float16;
        const std::string ST = cl_storage_type(storage(f)), GT = half ? "float" + n(p.gv) : p.gv == 1 ? ST : ST + n(p.gv);
        // float16: the GV halves as one aligned load of bits (vload_halfN from global memory
        // was 4 loads on NVIDIA), converted from private memory.
        auto read_vector = [&](const std::string& at) {
            return half ? "lt_halves" + n(p.gv) + "(*(__global const " + (p.gv == 2 ? "uint" : "uint2") + "*)(" + X + " + " + at + "))"
                        : "*(__global const " + GT + "*)(" + X + " + " + at + ")";
        };
        auto read_element = [&](const std::string& at) { return half ? "vload_half(" + at + ", " + X + ")" : X + "[" + at + "]"; };
        auto apply = [&](const std::string& x) { return f.name.empty() ? x : f.name + "(" + x + f.arguments + ")"; };
        // Load e's GV elements at `at` as one vector, into its registers.
        auto vector_load = [&](int e, const std::string& at) {
            std::string v = "const " + GT + " w = " + read_vector(at) + ";";
            const char* lane[] = {"s0", "s1", "s2", "s3"};
            for (int l = 0; l < p.gv; ++l) v += " " + reg + "[" + n(e * p.gv + l) + "] = " + apply(std::string("w.") + lane[l]) + ";";
            return v;
        };
        const std::string first = is_a ? "const I r = row0 + A_ROW(x), c = " + k0 + " + A_K(x);"
                                       : "const I r = " + k0 + " + B_K(x), c = col0 + B_COL(x);";
        const std::string rows = is_a ? "m" : "k", cols = is_a ? "k" : "n", rs = is_a ? "a_rs" : "b_rs",
                          cs = is_a ? "a_cs" : "b_cs", DR = X + "_DR", DC = X + "_DC";
        std::string r;
        if (layout.whole_tiles) {  // in range and aligned: one load per vector, the unit stride a literal
            const bool row_unit = is_a ? !layout.a_k_fast : !layout.b_n_fast;
            const std::string at = row_unit ? "r + c * " + cs : "r * " + rs + " + c";
            for (int e = 0; e < shares; ++e) {
                r += indent + "{ const int x = lid + " + n(e * NT) + "; " + first;
                r += " " + (p.gv == 1 ? reg + "[" + n(e) + "] = " + apply(read_element(at)) + ";" : vector_load(e, at)) + " }\n";
            }
            return r;
        }
        for (int e = 0; e < shares; ++e) {
            r += indent + "{ const int x = lid + " + n(e * NT) + "; " + first + "\n";
            if (p.gv > 1) {
                r += indent + "  if (" + X + "_vec && r + " + DR + " * (GV - 1) < " + rows + " && c + " + DC + " * (GV - 1) < " +
                     cols + ") { " + vector_load(e, "r * " + rs + " + c * " + cs) + " } else {\n";
            }
            for (int l = 0; l < p.gv; ++l) {
                const std::string rl = "r + " + DR + " * " + n(l), cl = "c + " + DC + " * " + n(l);
                r += indent + "  " + reg + "[" + n(e * p.gv + l) + "] = (" + rl + " < " + rows + " && " + cl + " < " +
                     cols + ") ? " + apply(read_element("(" + rl + ") * " + rs + " + (" + cl + ") * " + cs)) + " : (T)0;\n";
            }
            if (p.gv > 1) r += indent + "  }\n";
            r += indent + "}\n";
        }
        return r;
    };
    auto load_tiles = [&](const std::string& k0, const std::string& indent) {
        return load_share(k0, indent, true) + load_share(k0, indent, false);
    };
    // Registers -> local memory, k-major.
    auto store_tiles = [&](const std::string& indent, const std::string& at_a, const std::string& at_b) {
        std::string r;
        // Lanes of a load that are consecutive in local memory too: one aligned vector store.
        auto vector_store = [&](const std::string& at, const char* reg, int e) {
            std::string lanes;
            for (int l = 0; l < p.gv; ++l) lanes += std::string(l ? ", " : "") + reg + "[" + n(e * p.gv + l) + "]";
            return indent + "{ const int x = lid + " + n(e * NT) + "; *(__local " + T + n(p.gv) + "*)(" + at + ") = (" + T +
                   n(p.gv) + ")(" + lanes + "); }\n";
        };
        const bool vector_a = p.gv > 1 && !layout.a_k_fast, vector_b = p.gv > 1 && layout.b_n_fast;
        for (int e = 0; vector_a && e < LA / p.gv; ++e) r += vector_store(at_a + " + A_K(x) * LDA + A_ROW(x)", "ra", e);
        for (int e = 0; vector_b && e < LB / p.gv; ++e) r += vector_store(at_b + " + B_K(x) * LDB + B_COL(x)", "rb", e);
        for (int e = 0; !vector_a && e < LA / p.gv; ++e)
            for (int l = 0; l < p.gv; ++l)
                r += indent + "{ const int x = lid + " + n(e * NT) + "; " + at_a + "[(A_K(x) + A_DC * " + n(l) + ") * LDA + A_ROW(x) + A_DR * " +
                     n(l) + "] = ra[" + n(e * p.gv + l) + "]; }\n";
        for (int e = 0; !vector_b && e < LB / p.gv; ++e)
            for (int l = 0; l < p.gv; ++l)
                r += indent + "{ const int x = lid + " + n(e * NT) + "; " + at_b + "[(B_K(x) + B_DR * " + n(l) + ") * LDB + B_COL(x) + B_DC * " +
                     n(l) + "] = rb[" + n(e * p.gv + l) + "]; }\n";
        return r;
    };
    if (p.gv > 1 && !layout.whole_tiles)  // whole loads along the unit-stride axis are aligned where the other stride and the base are
        s += std::string("    const bool A_vec = ") +
             (layout.a_k_fast ? "a_cs == 1 && a_rs % GV == 0" : "a_rs == 1 && a_cs % GV == 0") +
             " && a_base % GV == 0;\n    const bool B_vec = " +
             (layout.b_n_fast ? "b_cs == 1 && b_rs % GV == 0" : "b_rs == 1 && b_cs % GV == 0") + " && b_base % GV == 0;\n";
    s += load_tiles("0", "    ") + store_tiles("    ", "As", "Bs");
    s += R"CL(
    barrier(CLK_LOCAL_MEM_FENCE);
    for (I k0 = 0; k0 < k; k0 += BK) {
        const bool more = k0 + BK < k;
)CL";
    if (p.prefetch) s += "        if (more) {\n" + load_tiles("k0 + BK", "            ") + "        }\n";
    // Reads of k step `kk`'s runs from local memory.
    auto reads = [&](const std::string& dst, const char* src, const char* ld, const char* own, int count, const std::string& kk) {
        std::string r;
        for (int i = 0; i < count; i += V) {
            const std::string at = std::string(src) + " + " + kk + " * " + ld + " + " + own + "(" + n(i) + ")";
            if (V == 1) {
                r += "            " + dst + "[" + n(i) + "] = *(" + at + ");\n";
            } else {
                r += "            { const " + VT + " w = *(__local const " + VT + "*)(" + at + ");";
                const char* lane[] = {".s0", ".s1", ".s2", ".s3"};
                for (int l = 0; l < V; ++l) r += " " + dst + "[" + n(i + l) + "] = w" + lane[l] + ";";
                r += " }\n";
            }
        }
        return r;
    };
    auto products = [&](const std::string& a, const std::string& b) {
        return "            #pragma unroll\n            for (int i = 0; i < WM; ++i)\n                #pragma unroll\n"
               "                for (int j = 0; j < WN; ++j) acc[i][j] = fma(" + a + "[i], " + b + "[j], acc[i][j]);\n";
    };
    if (p.fragments) {
        // The next k step's runs are read into a second set of registers before this step's
        // products, so that their latency hides behind them.
        s += "        {\n            T a0[WM], b0[WN], a1[WM], b1[WN];\n";
        s += reads("a0", "a_tile", "LDA", "OWN_ROW", p.wm, "0") + reads("b0", "b_tile", "LDB", "OWN_COL", p.wn, "0");
        for (int kk = 0; kk < p.bk; ++kk) {
            const std::string cur = n(kk % 2), next = n((kk + 1) % 2);
            if (kk + 1 < p.bk)
                s += reads("a" + next, "a_tile", "LDA", "OWN_ROW", p.wm, n(kk + 1)) +
                     reads("b" + next, "b_tile", "LDB", "OWN_COL", p.wn, n(kk + 1));
            s += products("a" + cur, "b" + cur);
        }
        s += "        }\n";
    } else {
        s += "        #pragma unroll\n        for (int kk = 0; kk < BK; ++kk) {\n            T a[WM], b[WN];\n";
        s += reads("a", "a_tile", "LDA", "OWN_ROW", p.wm, "kk") + reads("b", "b_tile", "LDB", "OWN_COL", p.wn, "kk");
        s += products("a", "b") + "        }\n";
    }
    if (p.double_buffer) {
        // The other tiles were last read before the previous barrier: store the next ones there
        // while others may still multiply these, then one barrier.
        s += "        if (more) {\n"
             "            __local T* next_a = a_tile == As ? As + BK * LDA : As;\n"
             "            __local T* next_b = b_tile == Bs ? Bs + BK * LDB : Bs;\n" +
             store_tiles("            ", "next_a", "next_b") +
             "            a_tile = next_a;\n            b_tile = next_b;\n        }\n"
             "        barrier(CLK_LOCAL_MEM_FENCE);\n    }\n\n";
    } else {
        s += "        barrier(CLK_LOCAL_MEM_FENCE);\n        if (more) {\n";
        if (!p.prefetch) s += load_tiles("k0 + BK", "            ");
        s += store_tiles("            ", "As", "Bs");
        s += "        }\n        barrier(CLK_LOCAL_MEM_FENCE);\n    }\n\n";
    }
    // Stores: each run of V columns as one vector store where it is whole and aligned (n a
    // multiple of V), else element by element.
    // A cast epilogue stores `o`, of C's floating dtype (float16: vstore_half(N)_rte; bfloat16:
    // lt_bf16_store, whose helpers the epilogue's kernel brings, its output being bfloat16).
    const std::optional<DType> cast = epilogue.output;
    const bool half_out = cast == DType::Float16, bf16_out = cast == DType::BFloat16;
    s += std::string("    #pragma unroll\n    for (int i = 0; i < WM; ++i) {\n        const I row = row0 + OWN_ROW(i);\n") +
         (layout.whole_tiles ? "" : "        if (row >= m) continue;\n") + "        __global " + std::string(cast ? cl_storage_type(*cast) : "T") + "* out = C + row * " + (layout.c_block ? "ldc" : "n") + ";\n";
    auto element = [&](int j, const std::string& col, const std::string& target) {
        std::string e = "            { const I col = " + col + "; T v = acc[i][" + n(j) + "];";
        if (cast) e += std::string(" ") + cl_value_type(*cast) + " o;";
        if (!epilogue.code.empty()) e += "\n                {\n" + epilogue.code + "\n                }\n           ";
        if (half_out && target == "out[col]") return e + " vstore_half_rte(o, col, out); }\n";
        if (bf16_out && target == "out[col]") return e + " out[col] = lt_bf16_store(o); }\n";
        return e + " " + target + " = " + (cast ? "o" : "v") + "; }\n";
    };
    const std::string out_vector = cast ? cl_value_type(*cast) + n(V) : VT;
    for (int j = 0; j < p.wn; j += V) {
        const std::string run = "col0 + OWN_COL(" + n(j) + ")";
        if (V > 1) {
            s += std::string(layout.whole_tiles ? "        {" : std::string("        if (") + (layout.c_block ? "ldc % V == 0 && (c_offset + batch * c_batch_stride) % V == 0" : "n % V == 0") + " && " + run + " + V <= n) {") + "\n            " +
                 out_vector + " w;\n";
            const char* lane[] = {"s0", "s1", "s2", "s3"};
            for (int l = 0; l < V; ++l) s += element(j + l, run + " + " + n(l), std::string("w.") + lane[l]);
            // C and its rows start at multiples of V here: an aligned store.
            if (bf16_out) {
                s += "            *(__global ushort" + n(V) + "*)(out + " + run + ") = (ushort" + n(V) + ")(";
                for (int l = 0; l < V; ++l) s += std::string(l ? ", " : "") + "lt_bf16_store(w." + lane[l] + ")";
                s += ");\n        }";
            } else {
                s += half_out ? "            vstore_half" + n(V) + "_rte(w, 0, out + " + run + ");\n        }"
                              : "            *(__global " + out_vector + "*)(out + " + run + ") = w;\n        }";
            }
            if (layout.whole_tiles) {
                s += "\n";
                continue;
            }
            s += " else\n";
        }
        s += "        {\n";
        for (int l = 0; l < V; ++l) {
            if (!layout.whole_tiles) s += "          if (" + run + " + " + n(l) + " < n)\n";
            s += element(j + l, run + " + " + n(l), "out[col]");
        }
        s += "        }\n";
    }
    s += "    }\n}\n";
    return s;
}

}  // namespace lazytensor::detail::opencl
