// SPDX-License-Identifier: MIT
// The FFT item: an fft node (ir/fft.hpp) run by the backend's FFT, from contiguous memory into a
// buffer of its own. Where the operand is not contiguous from offset 0 of a buffer (a lazy
// expression, a transposed view, a view the user realized), the item first computes it into
// contiguous memory with a kernel of its own, lowered like any other, so what produces the
// operand (the interleaving of a complex tensor's planes, a scale) runs in that kernel; what
// reads the result (a magnitude, a product of spectra) fuses into the next kernel.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "../codegen/lower.hpp"
#include "../ir/fft.hpp"
#include "../schedule/schedule.hpp"
#include "item.hpp"

namespace lazytensor::detail {

struct FftItem : ItemDefaults {
    static constexpr ScheduleItem::Kind kind = ScheduleItem::Kind::Fft;
    ir::Fft call;
    ir::Kernel operand;  // computes the operand into contiguous memory first (no phases: read in place)

    /// Lowers group g (its root an fft node): g.kernel computes the operand into contiguous
    /// memory unless it is in a buffer as such (then g.kernel has no phases and g.inputs is it).
    static std::optional<Materialize> lower(const Schedule& s, Group& g) { return lower_contiguous_operand(s, g, "fft"); }
    static FftItem of(const Group& g) {
        FftItem item;
        item.call = graph::fft_call(*g.root);
        item.operand = g.kernel;
        return item;
    }

    const ir::Kernel* own_kernel() const { return operand.phases.empty() ? nullptr : &operand; }
    void describe(ScheduleItem& item, Device) const {
        item.ir = (own_kernel() ? "    operand computed into contiguous memory:\n" + ir::to_string(operand) : std::string()) +
                  ir::to_string(call);
    }
    std::string source(Backend& backend, const CompiledKernel* compiled) const {
        return compiled ? backend.kernel_source(*compiled) : std::string();
    }
    std::string routine(Backend& backend) const { return backend.fft_routine(call); }
    double flops() const {
        double n = 1;
        for (int a : call.axes) n *= static_cast<double>(call.shape[static_cast<std::size_t>(a)]);
        const double lines = static_cast<double>(numel(call.shape)) / n;
        return (call.kind == FftKind::C2C ? 5.0 : 2.5) * lines * n * std::log2(n > 1 ? n : 2);
    }
    void run(const ItemRun& r) const { fft_on(r.backend, r.compiled, r.params, r.scalars); }
    /// The host's transform; magnitudes: each output element's bound, the scale times the sum of
    /// the absolute values of the elements of its transform block (an FFT's output is a sum of
    /// the inputs times unit roots).
    const char* reference(const HostRun& h) const {
        const std::shared_ptr<CompiledKernel> host_operand = own_kernel() ? h.host.get_kernel(on_interpreter()) : nullptr;
        if (!h.magnitudes) {
            fft_on(h.host, host_operand.get(), h.params, h.scalars);
            return own_kernel() ? "the host interpreter and the host's FFT" : "the host's FFT";
        }
        const BufferPtr contiguous = operand_on(h.host, host_operand.get(), h.params, h.scalars);
        const Buffer& in = contiguous ? *contiguous : *h.params[0];
        visit_dtype(call.dtype, [&](auto tag) {
            using T = typename decltype(tag)::type;
            if constexpr (std::is_same_v<T, float> || std::is_same_v<T, double>)
                magnitudes(static_cast<const T*>(in.handle()), static_cast<T*>(h.params.back()->handle()));
        });
        return own_kernel() ? "the host interpreter and the host's FFT" : "the host's FFT";
    }
    /// The FFT computes sums in another order on a device, with other twiddles: ~log2 n ulps.
    void widen_tolerance(CheckTolerance& t, DType) const {
        double n = 1;
        for (int a : call.axes) n *= static_cast<double>(call.shape[static_cast<std::size_t>(a)]);
        t.atol *= 4 * std::log2(n > 2 ? n : 2);
    }
    std::string listing() const {
        return "--- fft ---\n" + ir::to_string(call) + (own_kernel() ? ir::to_string(operand) : std::string());
    }

private:
    /// The operand's kernel on the interpreter (check mode's reference, not a compiled loop).
    ir::Kernel on_interpreter() const {
        ir::Kernel kernel = operand;
        kernel.candidate = nullptr;
        return kernel;
    }
    /// The operand computed into contiguous memory by its kernel (null: params[0] is it).
    BufferPtr operand_on(Backend& backend, CompiledKernel* compiled, const std::vector<Buffer*>& params,
                         const std::vector<Scalar>& scalars) const {
        if (!compiled) return nullptr;
        BufferPtr contiguous = backend.allocate(call.dtype, call.input_count());
        std::vector<Buffer*> buffers(params.begin(), params.end() - 1);
        buffers.push_back(contiguous.get());
        backend.launch(*compiled, buffers, scalars);
        return contiguous;
    }
    /// params: the operand's buffer (or its kernel's inputs), then the result's.
    void fft_on(Backend& backend, CompiledKernel* compiled, const std::vector<Buffer*>& params,
                const std::vector<Scalar>& scalars) const {
        if (call.output_count() == 0) return;
        const BufferPtr contiguous = operand_on(backend, compiled, params, scalars);
        backend.fft(call, contiguous ? *contiguous : *params[0], *params.back());
    }

    /// out[e] = |scale| * sum over e's block of |in| (complex elements: |re| + |im|; C2R counts
    /// the bins it mirrors twice).
    template <class T>
    void magnitudes(const T* in, T* out) const {
        const Shape in_shape = call.kind == FftKind::R2C ? call.shape : call.complex_shape();
        const Shape out_shape = call.kind == FftKind::C2R ? call.shape : call.complex_shape();
        const int pair_in = call.kind == FftKind::R2C ? 1 : 2, pair_out = call.kind == FftKind::C2R ? 1 : 2;
        const std::size_t rank = in_shape.size();
        std::vector<bool> transformed(rank, false);
        for (int a : call.axes) transformed[static_cast<std::size_t>(a)] = true;
        // Blocks are numbered by the indices along the axes not transformed (row-major).
        auto block_of = [&](std::int64_t flat, const Shape& shape) {
            std::int64_t block = 0, stride = 1;
            for (std::size_t d = rank; d-- > 0;) {
                const std::int64_t i = flat % shape[d];
                flat /= shape[d];
                if (!transformed[d]) {
                    block += i * stride;
                    stride *= shape[d];
                }
            }
            return block;
        };
        std::int64_t blocks = 1;
        for (std::size_t d = 0; d < rank; ++d)
            if (!transformed[d]) blocks *= in_shape[d];
        std::vector<double> sum(static_cast<std::size_t>(blocks), 0.0);
        const double factor = call.kind == FftKind::C2R ? 2 : 1;
        for (std::int64_t e = 0; e < numel(in_shape); ++e) {
            double m = 0;
            for (int p = 0; p < pair_in; ++p) m += std::fabs(static_cast<double>(in[e * pair_in + p]));
            sum[static_cast<std::size_t>(block_of(e, in_shape))] += m;
        }
        for (std::int64_t e = 0; e < numel(out_shape); ++e)
            for (int p = 0; p < pair_out; ++p)
                out[e * pair_out + p] = static_cast<T>(factor * std::fabs(call.scale) * sum[static_cast<std::size_t>(block_of(e, out_shape))]);
    }
};

}  // namespace lazytensor::detail
