#!/usr/bin/env bash
# Builds calc from scratch with warnings as errors and runs every test: the doctest unit and CLI
# tests, then every chapter claim (`calc check scenarios`). Exit code non-zero on any failure.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCALC_WERROR=ON
cmake --build build
build/calc_tests
build/calc check scenarios
(cd build && ctest --output-on-failure)
# An installed calc finds its models and GPU catalogue relative to itself (no source tree).
prefix="$(mktemp -d)"
cmake --install build --prefix "$prefix" >/dev/null
(cd / && env -u CALC_MODELS "$prefix/bin/calc" report --model qwen3-8b --gpu H100-SXM --length 8K >/dev/null)
(cd / && env -u CALC_MODELS "$prefix/bin/calc" models --format json | grep -q "\"folder\": \"$prefix/share/calc/models\"")
rm -rf "$prefix"
# The GPU device script's dry run (tests/gpu/run.sh): reuses build/, runs the CPU side of every
# CUDA kernel case and writes the rows a device run would (GPU rows marked skipped), so its
# failures show here before device time is spent.
bash tests/gpu/run.sh --dry-run build/gpu-dry-run

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
