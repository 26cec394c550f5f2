#!/usr/bin/env bash
# Whole-process figures of issue 10 (docs/performance.md): the median over RUNS runs of wall
# time, CPU time (user + sys) and peak resident memory, from GNU time. Not a test.
# Usage: tests/bench/measure.sh [build folder] [runs]   (default: build 20)
set -euo pipefail
build=${1:-build}
runs=${2:-20}
calc="$build/calc"
timer=/usr/bin/time
[[ -x $timer ]] || { echo "measure.sh: needs GNU time at /usr/bin/time" >&2; exit 2; }

# median of the numbers on stdin
median() { sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }

measure() {
  local label=$1
  shift
  local walls=() cpus=() rss=()
  for ((i = 0; i < runs; i++)); do
    local line
    line=$({ $timer -f '%e %U %S %M' "$@" >/dev/null 2>/dev/null; } 2>&1 | tail -1)
    read -r wall user sys kib <<<"$line"
    walls+=("$wall")
    cpus+=("$(awk -v u="$user" -v s="$sys" 'BEGIN {print u + s}')")
    rss+=("$kib")
  done
  printf '%-58s wall %6.1f ms  cpu %6.1f ms  peak %6.1f MiB\n' "$label" \
    "$(printf '%s\n' "${walls[@]}" | median | awk '{print $1 * 1000}')" \
    "$(printf '%s\n' "${cpus[@]}" | median | awk '{print $1 * 1000}')" \
    "$(printf '%s\n' "${rss[@]}" | median | awk '{print $1 / 1024}')"
}

echo "calc: $calc ($(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)), medians of $runs runs"
if ldd "$calc" | grep -qi cuda; then echo "links CUDA: $(ldd "$calc" | grep -ci cuda) libraries"; fi
measure "calc state --model qwen3-8b --length 8192" "$calc" state --model qwen3-8b --length 8192
measure "calc check scenarios" "$calc" check scenarios
measure "calc request --model qwen3-8b --prompt 8 --generate 1000000" \
  "$calc" request --model qwen3-8b --prompt 8 --generate 1000000
measure "calc request --model deepseek-v4.1-flash --prompt 8 --generate 1000000" \
  "$calc" request --model deepseek-v4.1-flash --prompt 8 --generate 1000000
measure "calc sweep --model deepseek-v4.1-flash --lengths 1:1000000:+1 -f csv" \
  "$calc" sweep --model deepseek-v4.1-flash --lengths 1:1000000:+1 --format csv
