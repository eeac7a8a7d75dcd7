#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Compile times of one file at a time, wall clock (issue: compile the engine once). Prints one
# line per case, best of N runs. Run on a quiet machine:
#   tools/compile_time.sh [runs=3] [compiler=g++]
# Flags: -O2 -march=native (what RelWithDebInfo-style builds use), OpenCL and CLBlast on, as the
# project's own build compiles them. Cases:
#   quickstart, header-only           examples/quickstart.cpp, default mode
#   quickstart, separate runtime      the same file with LAZYTENSOR_SEPARATE_RUNTIME
#   implementation unit               src/lazytensor_runtime.cpp (the engine, compiled once)
#   expressions only, separate        a file that builds expressions and calls realize()
#   test_nn, separate / header-only   tests/test_nn.cpp, a test area
#   Eigen peer                        element-wise, a reduction and a product with Eigen 3
set -euo pipefail
runs=${1:-3}
cxx=${2:-g++}
root=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
flags=(-std=c++17 -O2 -march=native -DCL_TARGET_OPENCL_VERSION=120 -DLAZYTENSOR_OPENCL=1 -DLAZYTENSOR_CLBLAST=1
       -I"$root/include" -w)

cat > "$work/expressions.cpp" <<'CPP'
#include <lazytensor.hpp>
namespace lt = lazytensor;
float run(const lt::Tensor<float>& a, const lt::Tensor<float>& b) {
    lt::Tensor<float> c = lt::exp(a) * b + a * 0.5f - lt::tanh(b);
    c.realize();
    return lt::sum(c).item();
}
CPP
cat > "$work/eigen_peer.cpp" <<'CPP'
#include <Eigen/Dense>
#include <iostream>
int main() {
    Eigen::MatrixXf a = Eigen::MatrixXf::Random(64, 64), b = Eigen::MatrixXf::Random(64, 64);
    Eigen::MatrixXf c = (a.array().exp() * b.array() + 1.0f).matrix();
    float s = c.sum();
    Eigen::MatrixXf p = a * b;
    std::cout << s << " " << c.rowwise().sum().transpose() << " " << p(0, 0) << "\n";
}
CPP

best() {  # best wall time of $runs compilations of "$@"
    local best_s="" t
    for ((i = 0; i < runs; ++i)); do
        local start=$(date +%s.%N)
        "$@" -c -o "$work/out.o"
        t=$(echo "$(date +%s.%N) - $start" | bc)
        if [ -z "$best_s" ] || [ "$(echo "$t < $best_s" | bc)" = 1 ]; then best_s=$t; fi
    done
    printf "%.1f" "$best_s"
}

echo "compile time, best of $runs, one file at a time ($cxx $($cxx -dumpfullversion), ${flags[*]:0:3}; $(nproc) cores; $(date -u +%Y-%m-%d))"
printf "  %-42s %6s s\n" "quickstart.cpp, header-only" "$(best "$cxx" "${flags[@]}" "$root/examples/quickstart.cpp")"
printf "  %-42s %6s s\n" "quickstart.cpp, separate runtime" "$(best "$cxx" "${flags[@]}" -DLAZYTENSOR_SEPARATE_RUNTIME "$root/examples/quickstart.cpp")"
printf "  %-42s %6s s\n" "implementation unit (the engine, once)" "$(best "$cxx" "${flags[@]}" "$root/src/lazytensor_runtime.cpp")"
printf "  %-42s %6s s\n" "expressions + realize(), separate runtime" "$(best "$cxx" "${flags[@]}" -DLAZYTENSOR_SEPARATE_RUNTIME "$work/expressions.cpp")"
printf "  %-42s %6s s\n" "tests/test_nn.cpp, separate runtime" "$(best "$cxx" "${flags[@]}" -DLAZYTENSOR_SEPARATE_RUNTIME "$root/tests/test_nn.cpp")"
printf "  %-42s %6s s\n" "tests/test_nn.cpp, header-only" "$(best "$cxx" "${flags[@]}" "$root/tests/test_nn.cpp")"
if [ -d /usr/include/eigen3 ]; then
    printf "  %-42s %6s s\n" "Eigen peer (element-wise, sum, product)" "$(best "$cxx" -std=c++17 -O2 -march=native -I/usr/include/eigen3 -w "$work/eigen_peer.cpp")"
fi
