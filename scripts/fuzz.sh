#!/usr/bin/env bash
# Builds the hardening build (build-san/: clang, ASan + UBSan + libFuzzer coverage, CUDA off;
# the same folder scripts/hardening.sh tests in) and runs each libFuzzer target of tests/fuzz for
# SECONDS seconds (default 60), the targets at once, from a seed corpus: the bundled models for
# fuzz_model, tests/fuzz/corpus-options for fuzz_options. Exit code non-zero on any finding (the
# crashing input is left in build-san/findings/).
# Usage: scripts/fuzz.sh [SECONDS] [TARGET]   or   scripts/fuzz.sh --build-only
set -euo pipefail
cd "$(dirname "$0")/.."
build=build-san
# calc, calc_tests and the fuzz targets share every object of calc_core.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
      -DCALC_FUZZ=ON -DCALC_CUDA=OFF ${CALC_FUZZ_CMAKE_ARGS:-}
cmake --build "$build" --target calc calc_tests fuzz_model fuzz_options
[ "${1:-}" = "--build-only" ] && exit 0
seconds="${1:-60}"
only="${2:-}"
mkdir -p $build/findings $build/corpus-model $build/corpus-options
cp models/*.yaml models/examples/*.yaml $build/corpus-model/ 2>/dev/null || true
cp tests/fuzz/corpus-options/* $build/corpus-options/
export CALC_MODELS="$PWD/models"
pids=()
for target in fuzz_model fuzz_options; do
  [ -n "$only" ] && [ "$only" != "$target" ] && continue
  corpus="$build/corpus-${target#fuzz_}"
  # -timeout: an input slower than 10 s is a hang; -rss_limit_mb: more than 2 GiB is a blow-up.
  # Each writes its own log; it is printed if the run finds something.
  $build/$target "$corpus" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 \
      -max_len=16384 -print_final_stats=1 -artifact_prefix=$build/findings/$target- \
      > $build/$target.log 2>&1 &
  pids+=("$!:$target")
done
status=0
for entry in "${pids[@]}"; do
  pid=${entry%%:*} target=${entry#*:}
  if wait "$pid"; then
    echo "fuzz: $target: no finding ($(grep -m1 -o 'stat::number_of_executed_units: *[0-9]*' $build/$target.log | grep -o '[0-9]*$') runs in ${seconds} s)"
  else
    echo "fuzz: $target: FINDING (log below; input in $build/findings/)"
    cat $build/$target.log
    status=1
  fi
done
exit $status
