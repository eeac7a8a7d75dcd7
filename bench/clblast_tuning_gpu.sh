#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# How the CLBlast tuning in include/lazytensor/backend/opencl/clblast_tuning.hpp was found and
# checked, on the GPU machine (after bench/run_gpu.sh has built into /tmp/b):
#
#   TUNE=1 bash bench/clblast_tuning_gpu.sh   # run CLBlast's Xgemm tuner (about 10 minutes; needs
#                                             # clblast-utils' clblast_tuner_xgemm on PATH)
#   bash bench/clblast_tuning_gpu.sh "CANDIDATE PARAMS" "min-indirect 256" ...
#                              # compare shipped, default and candidates (Xgemm parameters, or
#                              # CLBlast's XGEMM_MIN_INDIRECT_SIZE on top of the shipped tuning)
#
# Results land in $OUT: tuner.log (every configuration, its GFLOPS), gemm_default.txt (CLBlast's
# own parameters), gemm_shipped.txt (lazytensor's tuning), gemm_candidate_N.txt, gemm_cold.txt.
set -x
cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}"
mkdir -p "$OUT"
# shellcheck disable=SC1091
source .device/opencl-env.sh

if [ "${TUNE:-0}" = 1 ]; then
    (cd "$OUT" && timeout 560 clblast_tuner_xgemm -platform 0 -device 0 -precision 32 -m 2048 -n 2048 -k 2048 \
        -fraction 0.02 -runs 2 >tuner.log 2>&1)
    # The fastest configurations, whatever stage the timeout stopped in:
    sed 's/\x1b\[[0-9;]*m//g' "$OUT/tuner.log" | awk -F'|' '/results match/ {print $9, "|", $4}' | sort -g -r | head -20
    exit 0
fi

bench=/tmp/b/bench/bench_gemm_opencl
# A cold first use: NVIDIA's compute cache off, so CLBlast's kernels are really compiled.
CUDA_CACHE_DISABLE=1 "$bench" --sizes 1024 --rounds 1 2>&1 | tee "$OUT/gemm_cold.txt"
LAZYTENSOR_CLBLAST_TUNING=off "$bench" 2>&1 | tee "$OUT/gemm_default.txt"
"$bench" 2>&1 | tee "$OUT/gemm_shipped.txt"
n=0
for params in "$@"; do  # Xgemm parameters, or "min-indirect N" for CLBlast's direct/indirect switch
    n=$((n + 1))
    case "$params" in
        min-indirect*) "$bench" --min-indirect "${params#min-indirect }" 2>&1 | tee "$OUT/gemm_candidate_$n.txt" ;;
        *) "$bench" --xgemm-params "$params" 2>&1 | tee "$OUT/gemm_candidate_$n.txt" ;;
    esac
done
