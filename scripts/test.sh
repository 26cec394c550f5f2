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
# The GPU device script's dry run (tests/gpu/run.sh): reuses build/, runs the CPU side of every
# CUDA kernel case and writes the rows a device run would (GPU rows marked skipped), so its
# failures show here before device time is spent.
bash tests/gpu/run.sh --dry-run build/gpu-dry-run
