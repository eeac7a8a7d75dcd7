#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Issue 22 (correctness sweep) on the GPU machine: builds every test area, the fuzzer and the
# sweep's benchmarks, runs each area on opencl:0 (the GPU), the fuzzer for FUZZ_GRAPHS graphs on
# the GPU (FUZZ_JOBS processes over disjoint seed ranges: NVIDIA builds one program at a time
# per process), the ulp table's OpenCL column, std::tanh before and after realizes on this
# machine's CPU, and bench_params (a cached realize, now with an event per launch). Run from the
# repository root there; results land in $OUT.
#
#   FUZZ_GRAPHS=5000 FUZZ_JOBS=12 FUZZ_SEED=7100000 bash bench/run_sweep_gpu.sh
set -x
set -o pipefail

cd "$(dirname "$0")/.." || exit 2
: "${OUT:=/tmp/out}" "${FUZZ_GRAPHS:=5000}" "${FUZZ_JOBS:=12}" "${FUZZ_SEED:=7100000}" "${SKIP_TESTS:=0}"
mkdir -p "$OUT"

# shellcheck disable=SC1091
source .device/opencl-env.sh

{ clinfo -l; nvidia-smi --query-gpu=name,driver_version --format=csv; lscpu | grep -E "Model name|Flags" | cut -c1-200; nproc; date -u; } 2>&1 | tee "$OUT/machine.txt"

cmake -S . -B /tmp/b -DCMAKE_BUILD_TYPE=Release -DLAZYTENSOR_BUILD_BENCH=ON -DLAZYTENSOR_BUILD_TESTS=ON -DLAZYTENSOR_PACKAGE_TESTS=OFF >"$OUT/build.txt" 2>&1
areas="core elementwise reduce views schedule matmul ops nn reliability opencl"
targets="test_fuzz bench_scalar_after_realize bench_params ulp_error"
for a in $areas; do targets="$targets test_$a"; done
# shellcheck disable=SC2086
cmake --build /tmp/b -j16 --target $targets >>"$OUT/build.txt" 2>&1 || { tail -n 60 "$OUT/build.txt"; exit 1; }

export LAZYTENSOR_CACHE_DIR=/tmp/lt-cache
/tmp/b/bench/bench_scalar_after_realize --devices host,opencl:0 2>&1 | tee "$OUT/scalar_after_realize.txt"

# The fuzzer in the background while the areas run (both mostly wait for NVIDIA's compiler).
per=$(( (FUZZ_GRAPHS + FUZZ_JOBS - 1) / FUZZ_JOBS ))
for ((j = 0; j < FUZZ_JOBS; ++j)); do
    LAZYTENSOR_TEST_DEVICES=opencl:0 timeout 480 /tmp/b/tests/test_fuzz --fuzz-count "$per" --fuzz-seconds "${FUZZ_SECONDS:-380}" \
        --fuzz-seed $((FUZZ_SEED + j * per)) --fuzz-devices opencl:0 >"$OUT/fuzz_$j.txt" 2>&1 &
done

if [ "$SKIP_TESTS" = 0 ]; then
    # The areas in parallel too: each process builds its own programs.
    for a in $areas; do
        ( LAZYTENSOR_TEST_DEVICES=opencl:0 timeout "${AREA_SECONDS:-400}" "/tmp/b/tests/test_$a" >"$OUT/test_$a.txt" 2>&1
          echo "test_$a exit $?" >>"$OUT/test_$a.txt" ) &
    done
    # The no-float64 path on a real GPU, and check mode over two whole areas.
    ( LAZYTENSOR_OPENCL_FP64=off LAZYTENSOR_TEST_DEVICES=opencl:0 /tmp/b/tests/test_reduce "--test-case=*without float64*" >"$OUT/no_fp64.txt" 2>&1
      echo "no-fp64 exit $?" >>"$OUT/no_fp64.txt" ) &
    for a in nn ops; do
        ( LAZYTENSOR_CHECK=1 LAZYTENSOR_TEST_DEVICES=opencl:0 timeout "${AREA_SECONDS:-400}" "/tmp/b/tests/test_$a" >"$OUT/check_$a.txt" 2>&1
          echo "check mode test_$a exit $?" >>"$OUT/check_$a.txt" ) &
    done
    /tmp/b/bench/ulp_error --paths opencl:0 2>&1 | tail -n 25 | tee "$OUT/ulp_gpu.txt"
fi
wait
for ((j = 0; j < FUZZ_JOBS; ++j)); do echo "job $j: $(tail -n 3 "$OUT/fuzz_$j.txt" | tr '\n' ' ')"; done | tee "$OUT/fuzz_summary.txt"
timeout 60 /tmp/b/bench/bench_params --device opencl:0 2>&1 | tail -n 30 | tee "$OUT/bench_params_gpu.txt"
for f in "$OUT"/test_*.txt "$OUT"/check_*.txt "$OUT"/no_fp64.txt; do echo "== $f"; tail -n 4 "$f"; done
# The device tool brings back a few files only: everything in one archive.
tar czf /tmp/sweep.tgz -C "$OUT" . && find "$OUT" -mindepth 1 -delete && mv /tmp/sweep.tgz "$OUT/"
