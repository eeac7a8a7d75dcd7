// SPDX-License-Identifier: MIT
// Whether a long OpenCL scan or the radix sort of one long row runs single-pass with a
// decoupled look-back (each tile waits, spinning, for the totals of the tiles before it) or in
// passes that never wait on another work-group. The look-back reads its input once, but as it
// stands it measured slower everywhere: on an H200 (2026-11-29, bench/run_issue53_gpu.sh) the
// cumsum of 2^26 floats took 0.580 ms against the passes' 0.297 (0.293 with tiles four times
// as long) and the sort of 2^24 floats 1.724 ms against 1.541; on PoCL 1.5 to 2 times the
// passes' time (threads preempted while others spin on them). So it runs only when asked for.
// (Sorts of several rows of 4096 and more take the onesweep passes on every device: there each
// row's look-back is a few tiles long; argsort along the rows of 8192^2 floats took 4.97 ms on
// the H200, PyTorch's 5.05, where the bitonic sort took 12.1 on an H100.)
#pragma once

#include "../../core/env.hpp"

namespace lazytensor::detail::opencl {

/// LAZYTENSOR_OPENCL_LOOKBACK: off (default) or on; anything else is a ValueError. Read at each
/// scan or sort that could take it (tests turn it on).
inline bool use_look_back() {
    return env_choice("LAZYTENSOR_OPENCL_LOOKBACK", {"off", "on"}, 0, "off (the passes) or on (the single-pass look-back)") == 1;
}

}  // namespace lazytensor::detail::opencl
