// SPDX-License-Identifier: MIT
// CLBlast parameters for devices its own database lacks, found with CLBlast's tuner
// (clblast_tuner_xgemm) on the device itself and handed to CLBlast through OverrideParameters
// when the backend starts. LAZYTENSOR_CLBLAST_TUNING=off keeps CLBlast's defaults.
//
// How an entry was found (bench/README.md has the numbers): clblast_tuner_xgemm -precision 32
// -m 2048 -n 2048 -k 2048 -fraction 0.02 on the device; the fastest configurations were then
// compared at 1024..8192 through bench_gemm_opencl, and the best one kept.
#pragma once

#include "../../core/config.hpp"

#if LAZYTENSOR_OPENCL && LAZYTENSOR_CLBLAST

#include <clblast.h>

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <unordered_map>

namespace lazytensor::detail::opencl {

struct ClblastTuning {
    const char* device;  // CL_DEVICE_NAME, exactly
    clblast::Precision precision;
    const char* kernel;  // CLBlast's kernel family
    const char* parameters;
};

// Tuned on an NVIDIA H100 80GB HBM3 (driver 580.159.04, CLBlast 1.5.3) on 2026-11-21; the H200
// (same Hopper SM) measured the same gain with them (8192^3: 33.2 -> 44.8 TFLOP/s).
inline constexpr const char* kHopperXgemm =
    "GEMMK=0 MWG=128 NWG=64 KWG=32 MDIMC=16 NDIMC=8 MDIMA=8 NDIMB=32 KWI=2 VWM=4 VWN=2 STRM=1 STRN=1 SA=1 SB=1 KREG=1";

inline constexpr ClblastTuning kClblastTunings[] = {
    {"NVIDIA H100 80GB HBM3", clblast::Precision::kSingle, "Xgemm", kHopperXgemm},
    {"NVIDIA H200", clblast::Precision::kSingle, "Xgemm", kHopperXgemm},
};

/// "KEY=VALUE KEY=VALUE ..." (commas also separate) as CLBlast's parameter map.
inline std::unordered_map<std::string, std::size_t> parse_clblast_parameters(const std::string& text) {
    std::unordered_map<std::string, std::size_t> out;
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t end = std::min(text.find_first_of(" ,", at), text.size());
        const std::string item = text.substr(at, end - at);
        const std::size_t eq = item.find('=');
        if (eq != std::string::npos) out[item.substr(0, eq)] = std::strtoull(item.c_str() + eq + 1, nullptr, 10);
        at = end + 1;
    }
    return out;
}

/// Hands CLBlast the tuned parameters of this device, if there are any; returns what it did
/// ("" when nothing applies).
inline std::string apply_clblast_tuning(cl_device_id device, const std::string& device_name) {
    if (!env_flag("LAZYTENSOR_CLBLAST_TUNING", true)) return "";
    std::string applied;
    for (const ClblastTuning& t : kClblastTunings) {
        if (device_name != t.device) continue;
        const clblast::StatusCode status =
            clblast::OverrideParameters(device, t.kernel, t.precision, parse_clblast_parameters(t.parameters));
        if (status != clblast::StatusCode::kSuccess) {
            std::cerr << "[lazytensor] warning: CLBlast rejected the tuned " << t.kernel << " parameters for "
                      << device_name << " (status " << static_cast<int>(status) << "); using its defaults\n";
            continue;
        }
        applied += std::string(applied.empty() ? "" : ", ") + t.kernel;
    }
    return applied;
}

}  // namespace lazytensor::detail::opencl

#endif
