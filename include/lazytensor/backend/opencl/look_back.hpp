// SPDX-License-Identifier: MIT
// Whether a long OpenCL scan or sort runs single-pass with a decoupled look-back (each tile
// waits, spinning, for the totals of the tiles before it) or in passes that never wait on
// another work-group. The look-back reads its input once; but on a CPU device the OS may
// preempt the thread that runs a tile while its successors spin on it (PoCL measured 1.5 to 2
// times slower so, on a shared 2-core machine), so by default only GPUs take it.
#pragma once

#include <cctype>
#include <string>

#include "../../core/env.hpp"
#include "../../core/error.hpp"

namespace lazytensor::detail::opencl {

/// LAZYTENSOR_OPENCL_LOOKBACK: auto (default: on GPUs), on or off; anything else is a
/// ValueError. Read at each scan or sort that could take it (tests turn it on for CPU devices).
inline bool use_look_back(bool gpu) {
    const char* v = env("LAZYTENSOR_OPENCL_LOOKBACK");
    if (!v) return gpu;
    std::string s(v);
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (s == "auto") return gpu;
    if (s == "on") return true;
    if (s == "off") return false;
    fail<ValueError>("LAZYTENSOR_OPENCL_LOOKBACK=", v, " is not a choice: use auto (on GPUs), on or off");
}

}  // namespace lazytensor::detail::opencl
