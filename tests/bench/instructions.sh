#!/usr/bin/env bash
# Instructions each whole-process command of issue 10 executes, counted by valgrind's callgrind:
# the same count on a loaded machine as on an idle one (docs/performance.md), where wall and CPU
# time are not. Not a test. Usage: tests/bench/instructions.sh [build folder]
set -euo pipefail
build="${1:-build}"
command -v valgrind >/dev/null || { echo "instructions.sh: valgrind is not installed" >&2; exit 2; }
commands=(
  "--version"
  "state --model qwen3-8b --length 8192"
  "check scenarios"
  "request --model qwen3-8b --prompt 8 --generate 1000000"
  "request --model deepseek-v4.1-flash --prompt 8 --generate 1000000"
)
for c in "${commands[@]}"; do
  # shellcheck disable=SC2086  # the command line splits into words on purpose
  n=$(valgrind --tool=callgrind --callgrind-out-file=/dev/null "$build/calc" $c 2>&1 >/dev/null |
      sed -n 's/.*Collected : \([0-9]*\).*/\1/p')
  printf '%12s  calc %s\n' "$n" "$c"
done
