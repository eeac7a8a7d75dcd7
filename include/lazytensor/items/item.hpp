// SPDX-License-Identifier: MIT
// What every kind of schedule item is given and answers. A schedule item is one of a closed set
// of kinds (items/items.hpp: a generated kernel, a matrix product, a scan, attention, a sort, a
// LAPACK routine, a collective, a zero-copy view), each in a header of its own holding everything about that
// kind: its data, how it is lowered from a schedule group, how it runs on a backend, how check
// mode computes it on the host, and how lt::schedule and LAZYTENSOR_DEBUG describe it. Planning, realize and
// check mode (runtime/) only loop over items and call these.
//
// A kind is a struct deriving from ItemDefaults, which answers for a kind that has nothing to
// say; a kind hides the members it has more to say about. Nodes are named by their position in
// the plan's graph order (ints), buffers are passed in parameter order: the item's input
// buffers, then its output.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "../backend/backend.hpp"
#include "../core/small_vector.hpp"
#include "reference.hpp"

namespace lazytensor::detail {

/// Work an item started that completes after its run() returns (a collective in flight).
/// Realize finishes it before the first item that reads the item's result, and before it
/// commits; meanwhile it calls test() between items, which lets the transport progress.
struct Deferred {
    std::function<bool()> test;    // advances it; true once done
    std::function<void()> finish;  // waits for it, then completes it (copies the result in place)
    // Where it waits for something before it is issued (an OpenCL operand's copy to the host):
    // whether it has been issued, and issuing it (waiting first). Collectives must be issued in
    // item order on every rank, so a later one is never issued before an earlier one.
    std::function<bool()> issued;
    std::function<void()> issue;
    int node = -1;                 // the result it completes (set by realize)
    std::vector<BufferPtr> hold;   // the item's buffers, kept until then (set by realize)
};

/// What realize gives an item to run it.
struct ItemRun {
    Backend& backend;
    const std::vector<Buffer*>& params;  // the inputs' buffers, then the output's
    const std::vector<Scalar>& scalars;  // the values of its scalar parameters
    CompiledKernel* compiled;            // its own kernel (ItemDefaults::own_kernel), compiled
    const SmallVector<char, 32>& kept;   // per node: whether its result is committed
    std::vector<BufferPtr>& produced;    // per node: the buffers results are computed into
    std::vector<Deferred>* deferred = nullptr;  // where work may be left to complete later (null: complete it now)

    Buffer& out() const { return *params.back(); }
    bool keeps(int node) const { return node >= 0 && kept[static_cast<std::size_t>(node)]; }
};

/// What check mode gives an item to compute its reference on the host: host copies of its
/// buffers (`params`, as ItemRun's) and its scalars. With `magnitudes`, the item computes the
/// magnitude of each output element instead (reference.hpp: a bound on what rounding moves).
struct HostRun {
    Backend& host;
    const std::vector<Buffer*>& params;
    const std::vector<Scalar>& scalars;
    bool magnitudes = false;
};

/// The memory an item aliases instead of computing: node `base`'s buffer at this layout.
struct Aliasing {
    int base = -1;
    std::int64_t offset = 0;
    Strides strides;
};

/// The answers of a kind that has nothing to say.
struct ItemDefaults {
    /// The kernel the item runs itself (null: none): compiled with the others of the plan
    /// before anything runs, and passed to run() as ItemRun::compiled.
    const ir::Kernel* own_kernel() const { return nullptr; }
    /// Whether the item computes anything (a view aliases memory instead).
    bool computes() const { return true; }
    /// The memory it aliases, where it computes nothing.
    const Aliasing* aliasing() const { return nullptr; }
    /// The nodes whose results the item computes on the way (fused into it): they are committed
    /// where a tensor outside the graph holds them.
    SmallVector<int, 3> fused_away() const { return {}; }
    /// Called before the item's buffers are gathered: gives results computed on the way their
    /// buffers where the item's own parameters or later items read them (a kept fused product, a
    /// sort's values).
    void allocate_results(Backend&, const SmallVector<char, 32>&, std::vector<BufferPtr>&) const {}
    /// Builds ahead what run() will need beyond own_kernel() (lt::warmup), without running
    /// anything: a kind whose backend routine builds programs of its own says so here.
    void prepare(Backend&) const {}
    /// How the backend runs it (LAZYTENSOR_DEBUG=1), e.g. "CLBlast GemmStridedBatched".
    std::string routine(Backend&) const { return {}; }
    /// The generated source it runs, where the backend has one (LAZYTENSOR_DEBUG=2, check mode).
    std::string source(Backend&, const CompiledKernel*) const { return {}; }
    /// Floating-point operations it performs, for LAZYTENSOR_DEBUG=3's rate (0: report bandwidth).
    double flops() const { return 0; }
    /// Whether check mode compares it with a second implementation on `backend` (on OpenCL: the
    /// host's; on the host, only a kind with a second host implementation).
    bool checked_on(const Backend& backend) const { return backend.device().kind != Device::Kind::Host; }
    /// Loosens check mode's bound for an output of dtype `out` where the kind rounds more.
    void widen_tolerance(CheckTolerance&, DType /*out*/) const {}
};

}  // namespace lazytensor::detail
