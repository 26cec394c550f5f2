#!/usr/bin/env bash
# Issue 11's hardening, in ONE build of its own (build-san/, clang, CUDA off; issue 19 item 9):
# the unit and CLI tests and every claim under ASan + UBSan with every report fatal, then each
# libFuzzer target from its seed corpus, linked from the same sanitized objects. Run by
# scripts/test.sh after everything else; also runnable alone.
# Usage: scripts/hardening.sh [FUZZ_SECONDS]   (default 60 per target; 0 skips the fuzzers)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
bash scripts/install.sh
bash scripts/fuzz.sh --build-only
# Every sanitizer report is fatal: -fno-sanitize-recover=all makes UBSan stop at its first
# report, ASan always does; abort_on_error makes both exit non-zero, leaks included.
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1:halt_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The latency gates refit the calibration a hundred times over (cross-validation, each fold
# searching its expert-popularity exponent): minutes of arithmetic that the g++ run in
# scripts/test.sh already gates, and that the smaller calibration and serve tests drive through
# the same code under the sanitizers here. Skipping them keeps CI inside its time budget.
build-san/calc_tests -tce="latency gate*"
build-san/calc check scenarios
unset ASAN_OPTIONS UBSAN_OPTIONS
# The fuzzers, both at once (one per core), SECONDS each from the seed corpus.
[ "$seconds" = 0 ] || bash scripts/fuzz.sh "$seconds"
