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
