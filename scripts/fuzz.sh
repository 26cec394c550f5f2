#!/usr/bin/env bash
# Builds the libFuzzer targets of tests/fuzz with clang (ASan + UBSan, CUDA off) in build-fuzz/
# and runs each for SECONDS seconds (default 60), from a seed corpus: the bundled models for
# fuzz_model, tests/fuzz/corpus-options for fuzz_options. Exit code non-zero on any finding
# (the crashing input is left in build-fuzz/findings/). Usage: scripts/fuzz.sh [SECONDS] [TARGET]
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
only="${2:-}"
cmake -S . -B build-fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
      -DCALC_FUZZ=ON -DCALC_CUDA=OFF ${CALC_FUZZ_CMAKE_ARGS:-}
cmake --build build-fuzz --target fuzz_model fuzz_options
mkdir -p build-fuzz/findings build-fuzz/corpus-model build-fuzz/corpus-options
cp models/*.yaml models/examples/*.yaml build-fuzz/corpus-model/ 2>/dev/null || true
cp tests/fuzz/corpus-options/* build-fuzz/corpus-options/
export CALC_MODELS="$PWD/models"
status=0
for target in fuzz_model fuzz_options; do
  [ -n "$only" ] && [ "$only" != "$target" ] && continue
  corpus="build-fuzz/corpus-${target#fuzz_}"
  # -timeout: an input slower than 10 s is a hang; -rss_limit_mb: more than 2 GiB is a blow-up.
  build-fuzz/$target "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=16384 -print_final_stats=1 -artifact_prefix=build-fuzz/findings/$target- \
      || status=1
done
exit $status
