// SPDX-License-Identifier: MIT
// The matrix-product item: a matmul node run by the backend's GEMM (the host's packed GEMM,
// CLBlast or the OpenCL backend's own kernel), with the element-wise producers of its operands
// and its consumer fused into its loads and stores where the backend can (core_fusion.hpp).
//
// Lowering follows each operand through its views to a buffer, so a transposed, sliced or
// batch-broadcast operand is read in place (transpose flags, leading dimensions, zero batch
// strides). An operand that is not in a buffer yet (a constant, a reshape the index math cannot
// follow) must be materialized first. Layouts BLAS cannot read (no unit stride) are the
// backend's business: the host GEMM packs any strides, the CLBlast path copies.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "../ir/gemm.hpp"
#include "../schedule/schedule.hpp"
#include "core_fusion.hpp"

namespace lazytensor::detail {

struct GemmItem : ItemDefaults {
    static constexpr ScheduleItem::Kind kind = ScheduleItem::Kind::Matmul;
    ir::Gemm gemm;
    CoreFusion fusion;

    /// Lowers group g (its root a matmul node): fills g.gemm, g.inputs (A's and B's buffers)
    /// and g.ops, or says which operand must be in a buffer first.
    static std::optional<Materialize> lower(const Schedule& s, Group& g) {
        Node* product = g.root;
        ir::Gemm& gemm = g.gemm;
        gemm.dtype = product->dtype;
        const std::size_t rank = product->shape.size();
        gemm.batch = Shape(product->shape.begin(), product->shape.end() - 2);
        gemm.m = product->shape[rank - 2];
        gemm.n = product->shape[rank - 1];
        gemm.k = product->src[0]->shape[rank - 1];
        g.inputs.clear();
        for (int i = 0; i < 2; ++i) {
            Node* operand = product->src[static_cast<std::size_t>(i)].get();
            Reached r = walk_views(s, &g, operand, IndexMap::identity(operand->shape));
            if (!r.load) {
                // A permuted operand is computed in its own layout and read permuted (GEMMs take
                // strided operands), so that its copy walks its sources in order: a weight
                // gradient's transposed im2col columns are the columns, read transposed.
                Node* m = operand;
                while (m->kind == NodeKind::Permute && !m->realized()) m = m->src[0].get();
                return Materialize{m, "operand of a matrix product, not yet in a buffer"};
            }
            ir::MatrixLayout& layout = i == 0 ? gemm.a : gemm.b;
            layout.offset = r.access.offset;
            layout.row_stride = r.access.strides[rank - 2];
            layout.col_stride = r.access.strides[rank - 1];
            layout.batch_strides = Strides(r.access.strides.begin(), r.access.strides.end() - 2);
            g.inputs.push_back(r.node);
        }
        // CLBlast reads BLAS layouts only; the fold must not turn a readable layout into another.
        ir::normalize(gemm, product->device.kind != Device::Kind::Host);
        g.ops = {"matmul"};
        return std::nullopt;
    }

    std::int64_t count() const { return gemm.batch_count() * gemm.m * gemm.n; }
    SmallVector<int, 3> fused_away() const { return fusion.fused_away(); }
    void allocate_results(Backend& backend, const SmallVector<char, 32>& kept, std::vector<BufferPtr>& produced) const {
        fusion.allocate_results(backend, kept, produced, gemm.dtype, count());
    }
    void describe(ScheduleItem& item, Device) const { item.ir = ir::to_string(gemm) + fusion.describe("product", true); }
    std::string routine(Backend& backend) const {
        const std::string fused = fusion.routine(true);
        return backend.gemm_routine(gemm) + (fused.empty() ? "" : ", ") + fused;
    }
    void prepare(Backend& backend) const { backend.prepare_gemm(gemm, fusion.kernels()); }
    std::string source(Backend& backend, const CompiledKernel*) const {
        return fusion.any() ? backend.gemm_fused_source(gemm, fusion.kernels()) : std::string();
    }
    void run(const ItemRun& r) const {
        if (!fusion.any()) return r.backend.gemm(gemm, *r.params[0], *r.params[1], r.out());
        fusion.run_kept_producers(r);
        r.backend.gemm_fused(gemm, fusion.kernels(), *r.params[0], *r.params[1],
                             std::vector<Buffer*>(r.params.begin() + 2, r.params.end()), r.scalars);
    }
    double flops() const { return 2.0 * static_cast<double>(count()) * static_cast<double>(gemm.k); }

    /// A fused product rounds in its own dtype whatever the epilogue casts it to.
    void widen_tolerance(CheckTolerance& tol, DType out) const {
        const CheckTolerance product = check_tolerance(gemm.dtype);
        if (fusion.any() && is_floating(out) && product.rtol > tol.rtol) tol.rtol = product.rtol, tol.atol = product.atol;
    }
    /// The host's packed GEMM (and the fused kernels on the interpreter); magnitudes: |A| @ |B|.
    const char* reference(const HostRun& h) const {
        std::vector<Buffer*> params = h.params;
        BufferPtr absolute[2];
        for (std::size_t o = 0; o < 2 && h.magnitudes; ++o) {
            absolute[o] = absolute_copy(h.host, *params[o]);
            params[o] = absolute[o].get();
        }
        fusion.run_on_host(HostRun{h.host, params, h.scalars, h.magnitudes}, 2, gemm.dtype, count(),
                           [&](Buffer* const* operand, Buffer& out) { h.host.gemm(gemm, *operand[0], *operand[1], out); });
        return fusion.any() ? "the host's packed GEMM and interpreter" : "the host's packed GEMM";
    }
    std::string listing() const { return "--- matmul ---\n" + ir::to_string(gemm) + fusion.listing("product", true); }
};

}  // namespace lazytensor::detail
