#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The own GEMM kernel's parameter sets under device build options, on the GPU machine: builds
# gemm_kernel_binary and times each set with each option string on a row-major N^3 product
# (device time, median of 15), with the compiler's register and spill report where the driver
# gives one (NVIDIA: -cl-nv-verbose). For questions the engine's parameters cannot answer, e.g.
# whether a register cap (-cl-nv-maxrregcount) lets two work-groups share a multiprocessor.
# DIRECTIVES (optional) are PTX performance directives to rebuild each kernel with
# (gemm_kernel_binary --ptx-directive); an empty one stands for the kernel as compiled.
#
#   bash bench/run_gemm_kernel_options_gpu.sh N "SET;SET;..." "OPTIONS;OPTIONS;..." [";.maxnreg 128;..."]
set -o pipefail
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh
n=${1:-4096}
IFS=';' read -r -a sets <<<"${2:-16,16,8,16,8,4,4,1,1,1}"
IFS=';' read -r -a options <<<"${3:--cl-nv-verbose}"
IFS=';' read -r -a directives <<<"${4:-}"
[ ${#directives[@]} -gt 0 ] || directives=("")
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>&1 | tee "$OUT/device.txt"
cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF \
    -DLAZYTENSOR_SANITIZER_TESTS=OFF >"$OUT/build.txt" 2>&1
cmake --build /tmp/b -j16 --target gemm_kernel_binary >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }
status=0
for set in "${sets[@]}"; do
    for opt in "${options[@]}"; do
        for directive in "${directives[@]}"; do
            extra=()
            [ -z "$directive" ] || extra=(--ptx-directive "$directive")
            if /tmp/b/bench/gemm_kernel_binary "$set" --options "$opt" --time "$n" "${extra[@]}" 2>"$OUT/log.txt" |
                tee -a "$OUT/times.txt"; then
                grep -hE "registers|spill" "$OUT/log.txt" | sed 's/^/    /' | tee -a "$OUT/times.txt"
            else  # a failed build, launch or check: say so, with what the tool printed
                { echo "FAILED: $set with '$opt' '$directive'"; tail -n 20 "$OUT/log.txt"; } | tee -a "$OUT/times.txt"
                status=1
            fi
        done
    done
done
exit $status
