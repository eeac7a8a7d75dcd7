// SPDX-License-Identifier: MIT
// Running row sorts (lt::sort, argsort, topk) on an OpenCL device: which of the programs of
// sort.hpp runs (a selection for small k, a radix sort for one long row, a bitonic sort
// otherwise), and its launches. The radix sort of rows is onesweep, and so is that of one row
// below 2^30 elements where look-backs are asked for (use_look_back: off by default).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>

#include "../../core/device.hpp"
#include "../../core/error.hpp"
#include "cl_api.hpp"
#include "launch.hpp"
#include "look_back.hpp"
#include "programs.hpp"
#include "routine_context.hpp"
#include "sort.hpp"

namespace lazytensor::detail::opencl {

/// Rows at least this long sort by the (segmented) radix sort, shorter ones by the bitonic sort,
/// whose local blocks hold rows of up to 2048 (a tuning knob for the GPU).
inline constexpr std::int64_t kRadixRowsMin = 4096;

class SortRoutines {
public:
    explicit SortRoutines(RoutineContext context) : c_(context) {}

    /// Backend::sort_rows.
    void run(const Buffer& in, std::int64_t rows, std::int64_t n, std::int64_t k, bool descending, Buffer& values,
             Buffer& indices) {
        const DType t = in.dtype();
        if (t == DType::Float64 && !c_.device.fp64())
            fail<DeviceError>(c_.device.describe(), " does not compute float64 (no cl_khr_fp64): cannot sort a float64 tensor there");
        if (n > std::int64_t(UINT32_MAX))
            fail<ValueError>("sorting rows of ", n, " elements on ", c_.device.describe(), ": at most 2^32 - 1 per row");
        const DeviceTraits& traits = c_.device.traits();
        std::int64_t P = 1;
        while (P < n) P <<= 1;
        const bool select = k <= 16 && k < n;  // topk_program: one read of each row
        // radix_program: one long row, or rows longer than the bitonic sort's local blocks (each
        // row sorted on its own by the onesweep passes, its keys below 2^30 in all).
        const bool radix = !select && ((rows == 1 && n >= (std::int64_t(1) << 16)) ||
                                       (rows > 1 && n >= kRadixRowsMin && rows * n < (std::int64_t(1) << 30)));
        const RadixShape shape = radix_shape(t, traits.max_work_group, traits.local_memory);
        const std::shared_ptr<ProgramOwner> program =
            c_.programs.build(select ? topk_program(t, k) : radix ? radix_program(t, shape) : sort_program(t));
        // Pairs of 12 bytes: a block of 2 L of them in local memory, at most 24 KiB (OpenCL 1.2
        // devices have at least 32).
        std::int64_t L = std::max<std::int64_t>(1, std::min<std::int64_t>(P / 2, 1024));
        while (L > 1 && std::size_t(L) > traits.max_work_group) L >>= 1;
        const std::int64_t B = 2 * L;
        auto kernel = [&](const char* name) { return c_.programs.make_kernel(*program, name); };
        Launcher& launcher = c_.launcher;
        const cl_long n_l = n, P_l = P, k_l = k;
        if (select) {
            std::size_t group = 256;
            while (group > 1 && group > traits.max_work_group) group >>= 1;
            launcher.run(kernel("lt_topk_rows"), "lt_topk_rows", std::size_t(rows) * group, group, in, values, indices, n_l,
                         cl_int(descending), LocalBytes{group * sizeof(cl_ulong)}, LocalBytes{group * sizeof(cl_uint)},
                         LocalBytes{group * sizeof(cl_uint)});
            return;
        }
        if (radix) {
            // Keys of 1-byte types have 8 significant bits, of 2- and 4-byte types 32 (half and
            // bfloat16 sort by their float), others 64.
            const int bits = dtype_size(t) == 1 ? 8 : dtype_size(t) <= 4 ? 32 : 64;
            const std::int64_t tiles = (n + shape.tile() - 1) / shape.tile();
            const std::size_t group = std::size_t(shape.group);
            const DType key_type = bits == 64 ? DType::Int64 : DType::Int32;
            Backend& backend = c_.backend;
            BufferPtr keys[2] = {backend.allocate(key_type, rows * n), backend.allocate(key_type, rows * n)};
            BufferPtr places[2] = {backend.allocate(DType::Int32, rows * n), backend.allocate(DType::Int32, rows * n)};
            // Onesweep where counts and slots fit a status word's 30 bits: rows (each of few tiles:
            // short look-backs) always, one row where look-backs are asked for (use_look_back).
            if (rows * n < (std::int64_t(1) << 30) && (rows > 1 || use_look_back())) {
                radix_onesweep(*program, in, rows, n, k, descending, bits, tiles, shape, keys, places, values, indices);
                return;
            }
            // Else a histogram of each tile per pass, scanned, then the scatter.
            BufferPtr counts = backend.allocate(DType::Int32, 256 * tiles), totals = backend.allocate(DType::Int32, 256);
            const cl_long tiles_l = tiles;
            KernelOwner count = kernel("lt_radix_count"), scan = kernel("lt_radix_scan"), digits = kernel("lt_radix_digits"),
                        scatter = kernel("lt_radix_scatter");
            for (int shift = 0, from = 0; shift < bits; shift += 8, from ^= 1) {
                const Buffer& key_in = *keys[from];
                const Buffer& pos_in = *places[from];
                const Buffer& key_out = *keys[from ^ 1];
                const Buffer& pos_out = *places[from ^ 1];
                const cl_int first = shift == 0, last = shift + 8 == bits;
                launcher.run(count, "lt_radix_count", std::size_t(tiles) * group, group, in, key_in, n_l, cl_int(shift), first,
                             cl_int(descending), *counts);
                launcher.run(scan, "lt_radix_scan", 256 * group, group, *counts, tiles_l, *totals);
                launcher.run(digits, "lt_radix_digits", group, group, *totals);
                launcher.run(scatter, "lt_radix_scatter", std::size_t(tiles) * group, group, in, key_in, pos_in, key_out,
                             pos_out, values, indices, n_l, k_l, cl_int(shift), first, last, cl_int(descending), *counts,
                             *totals);
            }
            return;
        }
        BufferPtr key = c_.backend.allocate(DType::Int64, rows * P), pos = c_.backend.allocate(DType::Int32, rows * P);
        KernelOwner keys = kernel("lt_sort_keys"), local = kernel("lt_sort_local"), global = kernel("lt_sort_global"),
                    gather = kernel("lt_sort_gather");
        launcher.run(keys, "lt_sort_keys", std::size_t(rows * P), 0, in, *key, *pos, n_l, P_l, cl_int(descending));
        if (P > 1) {
            const std::size_t pairs = std::size_t(rows * P / 2);
            const LocalBytes lk{std::size_t(B) * sizeof(cl_ulong)}, lp{std::size_t(B) * sizeof(cl_uint)};
            launcher.run(local, "lt_sort_local", pairs, std::size_t(L), *key, *pos, P_l, cl_long(2), cl_long(std::min(B, P)),
                         cl_long(1), lk, lp);
            for (std::int64_t kk = 2 * B; kk <= P; kk <<= 1) {
                for (std::int64_t j = kk / 2; j >= B; j >>= 1)
                    launcher.run(global, "lt_sort_global", pairs, 0, *key, *pos, P_l, cl_long(kk), cl_long(j));
                launcher.run(local, "lt_sort_local", pairs, std::size_t(L), *key, *pos, P_l, cl_long(kk), cl_long(kk),
                             cl_long(B / 2), lk, lp);
            }
        }
        launcher.run(gather, "lt_sort_gather", std::size_t(rows * k), 0, in, *pos, values, indices, n_l, P_l, k_l);
    }

private:
    /// The onesweep radix sort of `rows` rows of n (radix_program's lt_radix_onesweep), each
    /// of `tiles` tiles: one histogram of every pass's digits per row, then a pass per digit that
    /// reads the keys once.
    void radix_onesweep(const ProgramOwner& program, const Buffer& in, std::int64_t rows, std::int64_t n, std::int64_t k,
                        bool descending, int bits, std::int64_t tiles, const RadixShape& shape, BufferPtr (&keys)[2],
                        BufferPtr (&places)[2], Buffer& values, Buffer& indices) {
        const DeviceTraits& traits = c_.device.traits();
        const std::size_t group = std::size_t(shape.group);
        const int passes = bits / 8;
        // counts: the passes' digit counts (then first slots), then per pass a ticket and a status
        // word per (tile, digit), all zeroed by one launch.
        const std::int64_t starts = rows * passes * 256, per_pass = 1 + rows * tiles * 256, words = starts + passes * per_pass;
        BufferPtr counts = c_.backend.allocate(DType::Int32, words);
        auto kernel = [&](const char* name) { return c_.programs.make_kernel(program, name); };
        Launcher& launcher = c_.launcher;
        launcher.run(kernel("lt_radix_clear"), "lt_radix_clear", std::size_t((words + shape.group - 1) / shape.group) * group, group,
                     *counts, cl_long(words));
        // One row: work-groups enough to fill the device share it; rows: a work-group each.
        const std::int64_t per_row = rows > 1 ? 1 : std::min<std::int64_t>(tiles, 4 * std::int64_t(traits.compute_units));
        launcher.run(kernel("lt_radix_histogram"), "lt_radix_histogram", std::size_t(rows * per_row) * group, group, in,
                     cl_long(n), cl_long(per_row), cl_int(passes), cl_int(descending), *counts);
        launcher.run(kernel("lt_radix_digits"), "lt_radix_digits", std::size_t(rows * passes) * group, group, *counts);
        KernelOwner sweep = kernel("lt_radix_onesweep");
        for (int pass = 0, from = 0; pass < passes; ++pass, from ^= 1) {
            const cl_int first = pass == 0, last = pass + 1 == passes;
            launcher.run(sweep, "lt_radix_onesweep", std::size_t(rows * tiles) * group, group, in, *keys[from], *places[from],
                         *keys[from ^ 1], *places[from ^ 1], values, indices, cl_long(n), cl_long(k), cl_int(8 * pass), first,
                         last, cl_int(descending), *counts, cl_long(256 * pass), cl_long(passes * 256), cl_long(tiles),
                         cl_long(starts + pass * per_pass));
        }
    }

    RoutineContext c_;
};

}  // namespace lazytensor::detail::opencl
