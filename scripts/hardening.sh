#!/usr/bin/env bash
# Issue 11's sanitizer build and fuzz runs: two more builds of their own (build-asan, build-fuzz),
# run by scripts/test.sh after everything else; also runnable alone.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
# ---- hardening (issue 11): sanitizers and fuzzing ---------------------------------------------
# The unit and CLI tests and every claim again under ASan + UBSan with every report fatal, in a
# build folder of their own (CUDA off: the kernels have no GPU to run on here anyway).
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCALC_WERROR=ON \
      -DCALC_SANITIZE=ON -DCALC_CUDA=OFF
cmake --build build-asan --target calc calc_tests
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1
build-asan/calc_tests
build-asan/calc check scenarios
unset ASAN_OPTIONS UBSAN_OPTIONS
# libFuzzer (clang): the model reader + graph + tallies, and the command line with --set, 60 s
# each from the seed corpus (scripts/fuzz.sh; tests/fuzz/README.md for longer runs).
bash scripts/fuzz.sh 60
