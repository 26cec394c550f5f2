#!/usr/bin/env bash
# Builds calc from scratch with warnings as errors and runs every test: the doctest unit and CLI
# tests, every chapter claim (`calc check scenarios`), ctest, an installed calc, the GPU script's
# dry run, then the one hardening build (clang, ASan + UBSan + libFuzzer) with the same tests and
# the fuzzers (scripts/hardening.sh). Exit code non-zero on any failure. Two builds in all: this
# g++ one, with the CUDA module (its only compile), and build-san (docs/performance.md, "CI time").
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCALC_WERROR=ON
cmake --build build
build/calc_tests
build/calc check scenarios
# ctest's other tests (the unit and scenario tests just ran), two at a time: one per core.
(cd build && ctest --output-on-failure -j 2 -E '^(unit|scenarios)$')
# An installed calc finds its models and GPU catalogue relative to itself (no source tree).
prefix="$(mktemp -d)"
cmake --install build --prefix "$prefix" >/dev/null
(cd / && env -u CALC_MODELS "$prefix/bin/calc" report --model qwen3-8b --gpu H100-SXM --length 8K >/dev/null)
# (grep reads the whole listing: `grep -q` would stop at its match and, under pipefail, fail the
# step on calc's SIGPIPE once the listing outgrows the pipe.)
(cd / && env -u CALC_MODELS "$prefix/bin/calc" models --format json |
  grep "\"folder\": \"$prefix/share/calc/models\"" >/dev/null)
rm -rf "$prefix"
# The GPU device script's dry run (tests/gpu/run.sh): reuses build/, runs the CPU side of every
# CUDA kernel case and writes the rows a device run would (GPU rows marked skipped), so its
# failures show here before device time is spent.
bash tests/gpu/run.sh --dry-run build/gpu-dry-run
# Issue 11: the unit tests and every claim again under ASan + UBSan (every report fatal), then
# each libFuzzer target for 60 s from its seed corpus, in one clang build (scripts/hardening.sh).
bash scripts/hardening.sh
