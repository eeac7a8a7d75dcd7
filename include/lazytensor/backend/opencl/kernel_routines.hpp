// SPDX-License-Identifier: MIT
// The kernels of the IR (element-wise and reducing) on an OpenCL device: rendered to OpenCL C
// (renderer.hpp), built alone or several as one program, and launched stage by stage.
//
// A kernel is rendered once per cache miss: the rendering is kept with the compiled kernel
// (kernel_source shows it), and a kernel built with others takes its rendering under another
// name (renamed) rather than a second rendering. It is rendered again only for a smaller
// work-group, where the built kernel cannot run the one it was rendered for.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "../../core/device.hpp"
#include "../../core/error.hpp"
#include "../../ir/kernel.hpp"
#include "../backend.hpp"
#include "cl_api.hpp"
#include "launch.hpp"
#include "programs.hpp"
#include "renderer.hpp"
#include "routine_context.hpp"

namespace lazytensor::detail::opencl {

/// A kernel ready to launch: its program, one cl_kernel per stage, and how to launch them.
class OpenCLKernel final : public CompiledKernel {
public:
    RenderedKernel rendered;
    std::shared_ptr<ProgramOwner> program;
    std::vector<KernelOwner> kernels;  // per stage
    std::vector<DType> scalars;        // the kernel's scalar parameters, passed after its buffers
    std::size_t fits = 0;              // (while compiling: a smaller work-group it must be rendered for)
};

class KernelRoutines {
public:
    explicit KernelRoutines(RoutineContext context) : c_(context) {}

    /// Backend::compile.
    std::shared_ptr<CompiledKernel> compile(const ir::Kernel& kernel, CompileOutcome& outcome) {
        return compile_rendered(kernel, render(kernel, c_.device.traits()), outcome);
    }

    /// Backend::compile_batch. A program of several kernels builds faster than as many programs
    /// (NVIDIA's driver builds one program at a time in a process, whatever the threads or
    /// contexts: bench/README.md), so the kernels one realize needs are built as one program
    /// (functions named apart, helpers shared).
    std::vector<std::shared_ptr<CompiledKernel>> compile_batch(const std::vector<const ir::Kernel*>& kernels,
                                                               std::vector<CompileOutcome>& outcomes) {
        std::vector<std::shared_ptr<CompiledKernel>> out(kernels.size());
        std::vector<RenderedKernel> alone(kernels.size());  // each kernel as a program of its own
        std::vector<std::size_t> together;
        for (std::size_t i = 0; i < kernels.size(); ++i) {
            alone[i] = render(*kernels[i], c_.device.traits());
            if (alone[i].stages.empty()) continue;
            require_fp64(alone[i]);
            // A kernel whose own program is in memory already (built alone before) uses it.
            if (c_.programs.find(alone[i].source)) continue;
            together.push_back(i);
        }
        if (together.size() >= 2) {
            bool fp64 = false;
            std::vector<std::string> helpers;
            std::string functions;
            std::vector<RenderedKernel> named;
            for (std::size_t i : together) {
                named.push_back(renamed(alone[i], "lt_kernel" + std::to_string(i)));
                fp64 = fp64 || named.back().uses_fp64;
                for (const std::string& h : named.back().helpers)
                    if (std::find(helpers.begin(), helpers.end(), h) == helpers.end()) helpers.push_back(h);
                functions += named.back().functions;
            }
            std::shared_ptr<ProgramOwner> program;
            ProgramSource from = ProgramSource::Memory;
            try {
                program = c_.programs.build(program_source(fp64, helpers, functions), &from, 0, {}, true);
            } catch (const BackendError&) {
                // Built one by one below: the kernel that fails reports its own log and source.
            }
            for (std::size_t n = 0; n < together.size() && program; ++n) {
                const std::size_t i = together[n];
                auto k = with_program(*kernels[i], std::move(named[n]), program, c_.device.traits());
                if (k->kernels.size() != k->rendered.stages.size()) continue;  // too big a work-group: alone below
                outcomes[i].built_from_source = from == ProgramSource::Compiler;
                outcomes[i].from_disk = from == ProgramSource::Disk;
                out[i] = std::move(k);
            }
        }
        for (std::size_t i = 0; i < kernels.size(); ++i)
            if (!out[i]) out[i] = compile_rendered(*kernels[i], std::move(alone[i]), outcomes[i]);
        return out;
    }

    /// Backend::launch.
    void launch(CompiledKernel& compiled, const std::vector<Buffer*>& params, const std::vector<Scalar>& scalars) {
        auto& k = static_cast<OpenCLKernel&>(compiled);
        if (scalars.size() != k.scalars.size())
            fail<Error>("lazytensor internal error: a kernel with ", k.scalars.size(), " scalar parameters launched with ",
                        scalars.size());
        if (k.rendered.stages.empty()) return;
        BufferPtr scratch;
        if (k.rendered.scratch_elems) scratch = c_.backend.allocate(k.rendered.scratch_dtype, k.rendered.scratch_elems);
        const bool timed = c_.launcher.record_times();
        double ms = 0;
        for (std::size_t s = 0; s < k.rendered.stages.size(); ++s) {
            const Stage& st = k.rendered.stages[s];
            cl_kernel kernel = k.kernels[s].kernel;
            KernelArgs args(kernel, params);
            if (scratch) args.add(*scratch);
            for (std::size_t i = 0; i < scalars.size(); ++i) args.add(ScalarArg(scalars[i], k.scalars[i]));
            if (st.units >= 0) {
                if (st.long_units) args.add(static_cast<cl_long>(st.units));
                else args.add(static_cast<cl_int>(st.units));
            }
            ms += c_.launcher.enqueue(kernel, st.name, 2, st.global, st.local, timed);
        }
        if (timed) c_.launcher.record_time(ms);
    }

private:
    /// The kernel of `rendered` (a rendering of `kernel` for the device's work-groups), built.
    std::shared_ptr<OpenCLKernel> compile_rendered(const ir::Kernel& kernel, RenderedKernel rendered,
                                                   CompileOutcome& outcome) {
        DeviceTraits traits = c_.device.traits();
        for (;;) {
            if (rendered.stages.empty()) return with_program(kernel, std::move(rendered), nullptr, traits);
            require_fp64(rendered);
            ProgramSource from = ProgramSource::Memory;
            std::shared_ptr<ProgramOwner> program = c_.programs.build(rendered.source, &from, 0, {}, true);  // (the batch is reported)
            outcome.built_from_source = outcome.built_from_source || from == ProgramSource::Compiler;
            outcome.from_disk = outcome.from_disk || from == ProgramSource::Disk;
            auto k = with_program(kernel, std::move(rendered), std::move(program), traits);
            if (k->kernels.size() == k->rendered.stages.size()) return k;
            // The compiled kernel needs too many registers for its work-group: render it for
            // smaller work-groups.
            traits.max_work_group = k->fits;
            rendered = render(kernel, traits);
        }
    }

    void require_fp64(const RenderedKernel& rendered) const {
        if (rendered.uses_fp64 && !c_.device.fp64())
            fail<DeviceError>(c_.device.describe(), " does not support float64 (the device lacks cl_khr_fp64); "
                              "use float32 tensors, or run this on the host");
    }

    /// The kernel of `rendered` in `program`: a cl_kernel per stage. When a stage needs a
    /// smaller work-group than it was rendered for, the result has no cl_kernels and `fits`
    /// says the largest work-group that can run.
    std::shared_ptr<OpenCLKernel> with_program(const ir::Kernel& kernel, RenderedKernel rendered,
                                               std::shared_ptr<ProgramOwner> program, const DeviceTraits& traits) {
        auto k = std::make_shared<OpenCLKernel>();
        k->rendered = std::move(rendered);
        k->scalars = kernel.scalars;
        k->program = std::move(program);
        std::size_t fits = traits.max_work_group;
        std::vector<KernelOwner> made;
        for (const Stage& st : k->rendered.stages) {
            made.push_back(c_.programs.make_kernel(*k->program, st.name.c_str()));
            std::size_t most = 0;
            check(clGetKernelWorkGroupInfo(made.back().kernel, c_.device.id(), CL_KERNEL_WORK_GROUP_SIZE, sizeof most, &most,
                                           nullptr),
                  "clGetKernelWorkGroupInfo");
            if (st.local[0] * st.local[1] > most) fits = std::min(fits, most);
        }
        if (fits == traits.max_work_group) {
            k->kernels = std::move(made);
            return k;
        }
        std::size_t p = 1;
        while (p * 2 <= fits) p *= 2;
        if (p >= traits.max_work_group || p == 0)
            fail<BackendError>("OpenCL: ", c_.device.describe(), " cannot run the kernel with any work-group size");
        k->fits = p;
        return k;
    }

    RoutineContext c_;
};

}  // namespace lazytensor::detail::opencl
