// SPDX-License-Identifier: MIT
// Running scans (cumsum, cumprod) on an OpenCL device: the kernels of scan.hpp chosen, sized
// and launched for an ir::Scan, with or without the element-wise kernels fused into it.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "../../core/device.hpp"
#include "../../core/error.hpp"
#include "../../ir/scan.hpp"
#include "../backend.hpp"
#include "cl_api.hpp"
#include "launch.hpp"
#include "look_back.hpp"
#include "programs.hpp"
#include "routine_context.hpp"
#include "scan.hpp"

namespace lazytensor::detail::opencl {

class ScanRoutines {
public:
    explicit ScanRoutines(RoutineContext context) : c_(context) {}

    void run(const ir::Scan& s, const Buffer& in, Buffer& out) {
        if (s.dtype == DType::Float64 && !c_.device.fp64())
            fail<DeviceError>(c_.device.describe(), " does not compute float64 (no cl_khr_fp64): cannot scan (cumsum, cumprod) a float64 tensor there");
        if (s.numel() == 0) return;
        const auto program = c_.programs.build(scan_program(s.dtype, s.op));
        scan_with(*program, *program, s, in, out, {});
    }

    /// Backend::scan_fused.
    void run_fused(const ir::Scan& s, const FusedKernels& fusion, const Buffer& in, const std::vector<Buffer*>& params,
                   const std::vector<Scalar>& scalars) {
        if (s.numel() == 0) return;
        const FusedCode code = code_of(s, fusion);
        const FusedArgs args = fused_args(fusion, 1, params, scalars);
        const auto plain = c_.programs.build(scan_program(s.dtype, s.op));
        const auto data = c_.programs.build(program_with(s, code));
        scan_with(*plain, *data, s, in, *params.back(), args);
    }

    /// The program run_fused runs `s` with.
    std::string fused_source(const ir::Scan& s, const FusedKernels& fusion) { return program_with(s, code_of(s, fusion)); }

    /// Whether kernel `k` can run fused into `s` (in float64 only where the device computes it).
    bool can_fuse(const ir::Scan& s, const ir::Kernel& k) const { return c_.device.computes(s.dtype) && c_.device.computes(k); }

private:
    static std::string program_with(const ir::Scan& s, const FusedCode& code) {
        return scan_program(s.dtype, s.op, *code.prologue[0], *code.epilogue);
    }
    FusedCode code_of(const ir::Scan& s, const FusedKernels& fusion) {
        return c_.fused_code.for_scan(s, fusion, c_.device.traits(), c_.backend.cache_capacity());
    }

    /// Runs scan `s` from in into out (which may be in itself): `data` (scan_program, with the
    /// fused kernels whose arguments `fused` holds) reads `in` and writes `out`; `plain` (without
    /// them) scans the chunks' totals.
    void scan_with(const ProgramOwner& plain, const ProgramOwner& data, const ir::Scan& s, const Buffer& in, Buffer& out,
                   const FusedArgs& fused) {
        const DeviceTraits& traits = c_.device.traits();
        const std::size_t size = dtype_size(s.dtype);
        const cl_long offset = s.offset, outer_stride = s.outer_stride, stride = s.stride, inner_stride = s.inner_stride;
        const cl_long outer = s.outer, length = s.length, inner = s.inner;
        // Work-group size: a tile of G * kScanPerItem elements (and pads), the work-items' totals
        // and the look-back's window in local memory.
        std::size_t G = kScanGroup;
        while (G > 1 && (G > traits.max_work_group ||
                         (G * kScanPerItem * 33 / 32 + G + kLookBackWindow) * size + kLookBackWindow * 4 + 64 > traits.local_memory))
            G >>= 1;
        auto ceil_div = [](std::int64_t a, std::int64_t b) { return (a + b - 1) / b; };
        auto run = [&](const ProgramOwner& program, const char* name, std::size_t work, const auto&... args) {
            c_.launcher.run(c_.programs.make_kernel(program, name), name, work, G, args...);
        };
        if (s.inner == 1 && s.length >= std::int64_t(G)) {
            const std::int64_t tile = std::int64_t(G) * kScanPerItem, tiles = ceil_div(s.length, tile);
            const LocalBytes tile_bytes{std::size_t(tile + tile / 32) * size}, sum_bytes{G * size};
            const bool few = s.outer < kScanRowsPerUnit * std::int64_t(traits.compute_units) && tiles > 1;
            if (few && use_look_back()) {
                // A work-group per tile: the ticket, then per tile two slots of size / 2 status words.
                const std::int64_t words = 1 + s.outer * tiles * 2 * std::int64_t(size / 2);
                BufferPtr status = c_.backend.allocate(DType::Int32, words);
                run(plain, "lt_scan_clear", std::size_t(ceil_div(words, std::int64_t(G))) * G, *status, cl_long(words));
                run(data, "lt_scan_lookback", std::size_t(s.outer * tiles) * G, in, out, *status, offset, outer_stride, stride,
                    length, cl_long(tiles), tile_bytes, sum_bytes, fused);
                return;
            }
            // A work-group per (row, chunk): chunks enough to fill the device.
            std::int64_t chunks = few ? std::clamp<std::int64_t>(ceil_div(kScanRowsPerUnit * traits.compute_units, s.outer), 1, tiles) : 1;
            const cl_long chunk_length = ceil_div(tiles, chunks) * tile;
            chunks = ceil_div(s.length, chunk_length);
            const std::size_t work = std::size_t(s.outer * chunks) * G;
            BufferPtr totals;
            if (chunks > 1) {
                totals = c_.backend.allocate(s.dtype, s.outer * chunks);
                run(data, "lt_fold_rows", work, in, *totals, offset, outer_stride, stride, length, cl_long(chunks), chunk_length,
                    sum_bytes, fused);
                scan_with(plain, plain, ir::Scan{s.dtype, s.op, s.outer, chunks, 1, 0, chunks, 1, 0}, *totals, *totals, {});
            }
            const Buffer& carries = totals ? *totals : in;
            run(data, "lt_scan_rows", work, in, out, carries, cl_int(chunks > 1), offset, outer_stride, stride, length,
                cl_long(chunks), chunk_length, tile_bytes, sum_bytes, fused);
            return;
        }
        // Columns (or short rows): a work-item per (outer index, chunk, column), chunks of at
        // least 64 elements, enough work-items to fill the device.
        const std::int64_t lines = s.outer * s.inner, wanted = traits.compute_units * (traits.gpu ? 2048 : 64);
        std::int64_t chunks = std::clamp<std::int64_t>(ceil_div(wanted, lines), 1, std::max<std::int64_t>(1, s.length / 64));
        const cl_long chunk_length = ceil_div(s.length, chunks);
        chunks = ceil_div(s.length, chunk_length);
        const std::size_t work = std::size_t(ceil_div(lines * chunks, std::int64_t(G))) * G;
        BufferPtr totals;
        if (chunks > 1) {
            totals = c_.backend.allocate(s.dtype, lines * chunks);
            run(data, "lt_fold_columns", work, in, *totals, offset, outer_stride, stride, inner_stride, outer, length, inner,
                cl_long(chunks), chunk_length, fused);
            scan_with(plain, plain, ir::Scan{s.dtype, s.op, s.outer, chunks, s.inner, 0, chunks * s.inner, s.inner, 1},
                      *totals, *totals, {});
        }
        const Buffer& carries = totals ? *totals : in;
        run(data, "lt_scan_columns", work, in, out, carries, cl_int(chunks > 1), offset, outer_stride, stride, inner_stride,
            outer, length, inner, cl_long(chunks), chunk_length, fused);
    }

    RoutineContext c_;
};

}  // namespace lazytensor::detail::opencl
