// lazytensor's own OpenCL GEMM kernel: C = A x B over an ir::Gemm, float32 or float64.
//
// A and B are read in place through their strides (any layout: row- or column-major, or
// neither); C is contiguous [batch, m, n]. Sizes, strides and offsets are kernel arguments, so
// one program serves every shape of a layout class. A batch is the third NDRange dimension:
// each matrix starts at a constant batch stride, or at the offsets of a per-matrix table
// (2 longs per matrix: A's, then B's) where the batch has several axes.
//
// Each work-group computes a BM x BN tile of C (BM = tm * wm, BN = tn * wn) with tm x tn
// work-items, each holding a wm x wn register tile; a work-item owns runs of v consecutive rows
// (and columns) strided by tm * v (tn * v), so that local-memory reads are v-wide vector loads
// that are broadcasts or consecutive across the work-items, and the stores coalesce. Tiles of A (BM x bk) and B (bk x bn) are staged in local memory, k-major; the next
// tile's global loads are issued before the current tile is multiplied (register prefetch), so
// their latency hides behind the FMAs. Loads of a tile map consecutive work-items along the
// operand's unit-stride axis (the layout class), so they coalesce whatever the transposes.
// Edges are guarded inside the kernel: out-of-range loads read 0, out-of-range stores are
// skipped; there are no padding or transpose kernels.
//
// An epilogue (GemmEpilogue) is code applied to each result before its store, with its row,
// column and batch index in scope, and extra kernel parameters after the fixed ones.
#pragma once

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "../../core/dtype.hpp"
#include "../../core/env.hpp"
#include "../../core/error.hpp"
#include "../../ir/gemm.hpp"

namespace lazytensor::detail::opencl {

/// The shape of the kernel: work-items per group along m and n, outputs per work-item along m
/// and n, and the depth of a k tile.
struct GemmKernelParams {
    int tm = 16, tn = 16;
    int wm = 8, wn = 8;
    int bk = 16;
    int v = 1;             // width of the local-memory reads and of the runs of rows and columns a work-item owns
    bool prefetch = true;  // issue the next tile's global loads before multiplying this one

    int block_m() const { return tm * wm; }
    int block_n() const { return tn * wn; }
    int threads() const { return tm * tn; }
    bool operator==(const GemmKernelParams& o) const {
        return tm == o.tm && tn == o.tn && wm == o.wm && wn == o.wn && bk == o.bk && v == o.v && prefetch == o.prefetch;
    }
};

/// Which axis of each operand the tile loads walk with consecutive work-items: the unit-stride
/// one where there is one, so that the loads coalesce.
struct GemmLayoutClass {
    bool a_k_fast = true;   // A's column (k) stride is 1 (row-major A); else walk m
    bool b_n_fast = true;   // B's column (n) stride is 1 (row-major B); else walk k
    bool wide_index = false;  // element offsets within a matrix need 64 bits
};

/// Code applied to each result before its store: `code` may read and assign `v` (the value, in
/// the product's type) and read `row`, `col` (int or long) and `batch` (long); `parameters` are
/// extra kernel parameter declarations (", __global const float* bias"), passed after the fixed
/// ones. Empty: the product is stored as it is.
struct GemmEpilogue {
    std::string parameters;
    std::string code;
};

/// Which GEMM runs OpenCL matrix products: per shape (Auto), the own kernel, or CLBlast.
enum class GemmChoice { Auto, Own, CLBlast };

/// LAZYTENSOR_OPENCL_GEMM: auto (default), own or clblast; anything else is a ValueError.
inline GemmChoice gemm_choice_from_env() {
    const char* v = env("LAZYTENSOR_OPENCL_GEMM");
    if (!v) return GemmChoice::Auto;
    std::string s(v);
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s == "auto") return GemmChoice::Auto;
    if (s == "own") return GemmChoice::Own;
    if (s == "clblast") return GemmChoice::CLBlast;
    fail<ValueError>("LAZYTENSOR_OPENCL_GEMM=", v, " is not a GEMM choice: use auto, own (lazytensor's kernel) or clblast");
}

/// Auto's choice where CLBlast is built: whether the own kernel measured faster than CLBlast
/// for products like `g` on this device class.
inline bool own_gemm_faster(const ir::Gemm& g, bool gpu, const std::string& device_name) {
    (void)g, (void)gpu, (void)device_name;
    return false;
}

/// The parameter set for a device class: NVIDIA-class GPUs get the set tuned on the H100, any
/// other device (CPUs through PoCL, unknown GPUs) a small conservative one.
inline GemmKernelParams gemm_params_for(DType dtype, bool gpu, const std::string& device_name,
                                        std::size_t max_work_group, std::size_t local_memory) {
    GemmKernelParams p;
    if (gpu && device_name.find("NVIDIA") != std::string::npos) {
        p = dtype == DType::Float64 ? GemmKernelParams{16, 16, 4, 4, 16, 2, true} : GemmKernelParams{16, 16, 8, 8, 16, 4, true};
    } else if (gpu) {
        p = GemmKernelParams{16, 16, 4, 4, 16, 1, true};
    } else {
        p = GemmKernelParams{8, 8, 4, 4, 8, 1, false};
    }
    // Fit the device: halve the work-group, then the k depth, while either is too large.
    const std::size_t elem = dtype_size(dtype);
    auto local_bytes = [&] { return std::size_t(p.bk) * std::size_t(p.block_m() + 1 + p.block_n()) * elem; };
    while (std::size_t(p.threads()) > max_work_group && p.tm > 1) p.tm /= 2, p.wm *= 2;
    while (local_bytes() > local_memory && p.bk > 1) p.bk /= 2;
    return p;
}

/// Checks that a parameter set makes a kernel: every work-item loads whole shares of a tile.
inline void check_gemm_params(const GemmKernelParams& p) {
    const bool positive = p.tm > 0 && p.tn > 0 && p.wm > 0 && p.wn > 0 && p.bk > 0;
    const bool vector = (p.v == 1 || p.v == 2 || p.v == 4) && p.wm % p.v == 0 && p.wn % p.v == 0;
    if (!positive || !vector || (p.block_m() * p.bk) % p.threads() != 0 || (p.block_n() * p.bk) % p.threads() != 0)
        fail<ValueError>("OpenCL GEMM kernel parameters tm ", p.tm, ", tn ", p.tn, ", wm ", p.wm, ", wn ", p.wn, ", bk ",
                         p.bk, ", v ", p.v, ": each tile of A (tm*wm x bk) and of B (bk x tn*wn) must split evenly over "
                         "the tm*tn work-items, and v (1, 2 or 4) divide wm and wn");
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

/// The name of the kernel in every program gemm_kernel_source makes.
inline const char* gemm_kernel_name() { return "lt_gemm"; }

/// The OpenCL C source of lt_gemm for `dtype`, a layout class and a parameter set.
///
/// Arguments: C, A, B, the offset table (any buffer when unused), then (int or long as the
/// layout class says) m, n, k, A's row and column strides, B's row and column strides; then the
/// longs A's offset, A's batch stride, B's offset, B's batch stride, and an int that is nonzero
/// when the offset table holds each matrix's offsets; then the epilogue's parameters.
/// NDRange: (ceil(n / BN) * tn, ceil(m / BM) * tm, batch count), work-groups (tn, tm, 1).
inline std::string gemm_kernel_source(DType dtype, const GemmLayoutClass& layout, const GemmKernelParams& p,
                                      const GemmEpilogue& epilogue = {}) {
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

    std::string s;
    if (dtype == DType::Float64) s += "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n";
    s += "// lazytensor GEMM: tm " + n(p.tm) + ", tn " + n(p.tn) + ", wm " + n(p.wm) + ", wn " + n(p.wn) + ", bk " +
         n(p.bk) + ", v " + n(V) + (p.prefetch ? ", prefetch" : "") + "; A " + (layout.a_k_fast ? "k" : "m") +
         "-fast, B " + (layout.b_n_fast ? "n" : "k") + "-fast\n";
    s += "#define T " + T + "\n#define I " + I + "\n";
    s += "#define TM " + n(p.tm) + "\n#define TN " + n(p.tn) + "\n#define WM " + n(p.wm) + "\n#define WN " + n(p.wn) +
         "\n#define BK " + n(p.bk) + "\n#define BM " + n(BM) + "\n#define BN " + n(BN) + "\n#define NT " + n(NT) +
         "\n#define V " + n(V) + "\n#define LDA " + n(LDA) + "\n#define LDB " + n(LDB) + "\n#define LA " + n(LA) +
         "\n#define LB " + n(LB) + "\n";
    // Element e of this work-item's share of a tile: its (row, k) in A's tile and (k, col) in B's.
    s += layout.a_k_fast ? "#define A_ROW(x) ((x) / BK)\n#define A_K(x) ((x) % BK)\n"
                         : "#define A_ROW(x) ((x) % BM)\n#define A_K(x) ((x) / BM)\n";
    s += layout.b_n_fast ? "#define B_COL(x) ((x) % BN)\n#define B_K(x) ((x) / BN)\n"
                         : "#define B_COL(x) ((x) / BK)\n#define B_K(x) ((x) % BK)\n";
    // The tile row (column) of a work-item's i-th row (j-th column): runs of V, strided by TM*V.
    s += "#define OWN_ROW(i) (ty * V + ((i) / V) * (TM * V) + (i) % V)\n"
         "#define OWN_COL(j) (tx * V + ((j) / V) * (TN * V) + (j) % V)\n";
    s += R"CL(
__kernel __attribute__((reqd_work_group_size(TN, TM, 1)))
void lt_gemm(__global T* restrict C, __global const T* restrict A, __global const T* restrict B,
             __global const long* restrict offsets, const I m, const I n, const I k,
             const I a_rs, const I a_cs, const I b_rs, const I b_cs,
             const long a_offset, const long a_batch_stride, const long b_offset, const long b_batch_stride,
             const int per_matrix_offsets)CL" +
         epilogue.parameters + R"CL() {
    __local T As[BK * LDA];
    __local T Bs[BK * LDB];
    const int tx = get_local_id(0), ty = get_local_id(1), lid = ty * TN + tx;
    const I row0 = (I)get_group_id(1) * BM, col0 = (I)get_group_id(0) * BN;
    const long batch = get_group_id(2);
    long a_base = a_offset + batch * a_batch_stride, b_base = b_offset + batch * b_batch_stride;
    if (per_matrix_offsets) {
        a_base = offsets[2 * batch];
        b_base = offsets[2 * batch + 1];
    }
    A += a_base;
    B += b_base;
    C += batch * (long)m * (long)n;

    T acc[WM][WN];
    #pragma unroll
    for (int i = 0; i < WM; ++i)
        #pragma unroll
        for (int j = 0; j < WN; ++j) acc[i][j] = 0;
    T ra[LA], rb[LB];
)CL";
    // Global -> registers: this work-item's share of the tiles at k0, zero outside the
    // matrices (unrolled here, so that ra and rb stay in registers).
    auto load_tiles = [&](const std::string& k0, const std::string& indent) {
        std::string r;
        for (int e = 0; e < LA; ++e)
            r += indent + "{ const int x = lid + " + n(e * NT) + "; const I r = row0 + A_ROW(x), c = " + k0 +
                 " + A_K(x); ra[" + n(e) + "] = (r < m && c < k) ? A[r * a_rs + c * a_cs] : (T)0; }\n";
        for (int e = 0; e < LB; ++e)
            r += indent + "{ const int x = lid + " + n(e * NT) + "; const I r = " + k0 +
                 " + B_K(x), c = col0 + B_COL(x); rb[" + n(e) + "] = (r < k && c < n) ? B[r * b_rs + c * b_cs] : (T)0; }\n";
        return r;
    };
    // Registers -> local memory, k-major.
    auto store_tiles = [&](const std::string& indent) {
        std::string r;
        for (int e = 0; e < LA; ++e)
            r += indent + "{ const int x = lid + " + n(e * NT) + "; As[A_K(x) * LDA + A_ROW(x)] = ra[" + n(e) + "]; }\n";
        for (int e = 0; e < LB; ++e)
            r += indent + "{ const int x = lid + " + n(e * NT) + "; Bs[B_K(x) * LDB + B_COL(x)] = rb[" + n(e) + "]; }\n";
        return r;
    };
    s += load_tiles("0", "    ") + store_tiles("    ");
    s += R"CL(
    barrier(CLK_LOCAL_MEM_FENCE);
    for (I k0 = 0; k0 < k; k0 += BK) {
        const bool more = k0 + BK < k;
)CL";
    if (p.prefetch) s += "        if (more) {\n" + load_tiles("k0 + BK", "            ") + "        }\n";
    s += R"CL(        #pragma unroll
        for (int kk = 0; kk < BK; ++kk) {
            T a[WM], b[WN];
)CL";
    // Reads of this k step's runs from local memory.
    auto reads = [&](const char* dst, const char* src, const char* ld, const char* own, int count) {
        std::string r;
        for (int i = 0; i < count; i += V) {
            const std::string at = std::string(src) + " + kk * " + ld + " + " + own + "(" + n(i) + ")";
            if (V == 1) {
                r += "            " + std::string(dst) + "[" + n(i) + "] = *(" + at + ");\n";
            } else {
                r += "            { const " + VT + " w = vload" + n(V) + "(0, " + at + ");";
                const char* lane[] = {".s0", ".s1", ".s2", ".s3"};
                for (int l = 0; l < V; ++l) r += " " + std::string(dst) + "[" + n(i + l) + "] = w" + lane[l] + ";";
                r += " }\n";
            }
        }
        return r;
    };
    s += reads("a", "As", "LDA", "OWN_ROW", p.wm);
    s += reads("b", "Bs", "LDB", "OWN_COL", p.wn);
    s += R"CL(            #pragma unroll
            for (int i = 0; i < WM; ++i)
                #pragma unroll
                for (int j = 0; j < WN; ++j) acc[i][j] = fma(a[i], b[j], acc[i][j]);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (more) {
)CL";
    if (!p.prefetch) s += load_tiles("k0 + BK", "            ");
    s += store_tiles("            ");
    s += R"CL(        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }

)CL";
    // Stores: each run of V columns as one vector store where it is whole and aligned (n a
    // multiple of V), else element by element.
    s += "    #pragma unroll\n    for (int i = 0; i < WM; ++i) {\n"
         "        const I row = row0 + OWN_ROW(i);\n        if (row >= m) continue;\n"
         "        __global T* out = C + row * n;\n";
    auto element = [&](int j, const std::string& col, const std::string& target) {
        std::string e = "            { const I col = " + col + "; T v = acc[i][" + n(j) + "];";
        if (!epilogue.code.empty()) e += "\n                {\n" + epilogue.code + "\n                }\n           ";
        return e + " " + target + " = v; }\n";
    };
    for (int j = 0; j < p.wn; j += V) {
        const std::string run = "col0 + OWN_COL(" + n(j) + ")";
        if (V > 1) {
            s += "        if (n % V == 0 && " + run + " + V <= n) {\n            " + VT + " w;\n";
            const char* lane[] = {"s0", "s1", "s2", "s3"};
            for (int l = 0; l < V; ++l) s += element(j + l, run + " + " + n(l), std::string("w.") + lane[l]);
            s += "            vstore" + n(V) + "(w, 0, out + " + run + ");\n        } else\n";
        }
        s += "        {\n";
        for (int l = 0; l < V; ++l) {
            s += "          if (" + run + " + " + n(l) + " < n)\n";
            s += element(j + l, run + " + " + n(l), "out[col]");
        }
        s += "        }\n";
    }
    s += "    }\n}\n";
    return s;
}

}  // namespace lazytensor::detail::opencl
