#!/usr/bin/env bash
# The device check, in one command that fits a 300-second budget on the GPU machine (16 cores,
# H200), build included:
#   bash tests/gpu/run.sh OUT             on the GPU machine (carry: [".gpu-deps"], see prepare.sh)
#   bash tests/gpu/run.sh --dry-run OUT   here, and in CI: everything that needs no GPU
# Steps, each under its own time limit (and the budget left), each writing as it goes so an
# interrupted run still leaves its rows:
#   0. (device run) preflight: nvcc, cuBLAS beside it and compute-sanitizer on PATH, or one
#      line and exit 2 before anything is built;
#   1. build calc and the CUDA module (build-gpu/, Release; the dry run reuses build/);
#   2. (dry run) the module checks (tests/gpu/check_module.sh);
#   3. the measuring run first: one `validate --device cuda`: device facts, clocks before/after,
#      ceilings, every check, the timed cases -> OUT/cuda.jsonl, and OUT/report.md rendered
#      from the same rows (dry run: the CPU side of every case, GPU rows skipped);
#   4. then `validate --device cuda --correctness-only` under compute-sanitizer memcheck and
#      racecheck -> OUT/sanitizer.jsonl, each tool's own report kept as OUT/<tool>.log
#      (dry run: the same checks on the CPU, sanitizer rows skipped);
#   5. (dry run) the first bundled model on the CPU twins -> OUT/cpu.jsonl (CI's ctest validates
#      the rest; a device run validates no model on the CPU);
#   6. OUT/summary.md (a short table, printed last), also written if the run is interrupted.
# A device run leaves at most 7 files: log, summary.md, cuda.jsonl, report.md,
# sanitizer.jsonl, memcheck.log, racecheck.log.
set -uo pipefail
dry=0
if [ "${1:-}" = "--dry-run" ]; then dry=1; shift; fi
out=${1:?usage: run.sh [--dry-run] OUT}

# 0. Preflight (device run): what the run needs, in seconds, one line each way it can fail.
if [ $dry = 0 ]; then
  nvcc=$(command -v nvcc) || { echo "run.sh: nvcc not found on PATH (the CUDA toolkit builds the module)" >&2; exit 2; }
  cuda_root=$(dirname "$(dirname "$(readlink -f "$nvcc")")")
  cublas=$(ls "$cuda_root"/lib64/libcublas.so* "$cuda_root"/targets/*/lib/libcublas.so* 2>/dev/null | head -1)
  [ -n "$cublas" ] || { echo "run.sh: cuBLAS not found beside nvcc (looked in $cuda_root/lib64 and $cuda_root/targets/*/lib)" >&2; exit 2; }
  command -v compute-sanitizer > /dev/null || { echo "run.sh: compute-sanitizer not found on PATH (the run ends with memcheck and racecheck)" >&2; exit 2; }
fi

mkdir -p "$out" && out=$(cd "$out" && pwd)  # absolute before any cd
cd "$(dirname "$0")/../.." || exit 1
root=$PWD
start=$(date +%s)
: > "$out/log"
exec > >(tee -a "$out/log") 2>&1
elapsed() { echo $(( $(date +%s) - start )); }
status=0
summary() {
  {
    echo "# GPU check $( [ $dry = 1 ] && echo '(dry run) ')$(date -u +%FT%TZ)"
    echo
    echo "| step | result |"
    echo "|---|---|"
    printf '%s' "${steps:-}"
    for f in cuda sanitizer cpu; do
      [ -f "$out/$f.jsonl" ] || continue
      rows=$(wc -l < "$out/$f.jsonl")
      bad=$(grep -cE '"verdict":"(FAIL|MISMATCH)"' "$out/$f.jsonl")
      skipped=$(grep -c '"skipped"' "$out/$f.jsonl")
      slow=$(grep -c '"verdict":"slow kernel' "$out/$f.jsonl")
      echo "| $f.jsonl | $rows rows, $bad failing, $slow slow kernels, $skipped skipped |"
    done
    echo "| total | $(elapsed) s, exit $status |"
  } > "$out/summary.md"
  cat "$out/summary.md"
}
trap 'status=${status:-1}; summary' EXIT
trap 'echo "interrupted after $(elapsed) s"; status=130; exit 130' INT TERM
steps=""
budget=${CALC_GPU_BUDGET_S:-300}  # the whole script, build included
step() {  # step NAME LIMIT_S COMMAND...: runs under min(limit, budget left), records the outcome
  local name=$1 limit=$2; shift 2
  local t0; t0=$(date +%s)
  local left=$(( budget - $(elapsed) ))
  if [ $left -lt 15 ]; then
    echo "== $name: skipped, ${left}s of the budget left"
    steps+="| $name | skipped: budget spent |"$'\n'
    status=1
    return 1
  fi
  [ $limit -gt $left ] && limit=$left
  echo "== $name (limit ${limit}s, at $(elapsed) s)"
  timeout --kill-after=10 "$limit" "$@"
  local rc=$?
  [ $rc = 124 ] && echo "== $name: timed out after ${limit}s"
  steps+="| $name | exit $rc, $(( $(date +%s) - t0 )) s |"$'\n'
  [ $rc = 0 ] || status=1
  return $rc
}

if [ $dry = 1 ]; then
  build=${CALC_BUILD:-build}
  jobs=${CALC_JOBS:-2}
  type=RelWithDebInfo
else
  build=${CALC_BUILD:-build-gpu}
  jobs=$(nproc)
  type=Release
  nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,clocks.sm,temperature.gpu --format=csv || true
  deps=$root/.gpu-deps/root
  if [ -d .gpu-deps/debs ]; then
    mkdir -p "$deps"
    for f in .gpu-deps/debs/*.deb; do dpkg-deb -x "$f" "$deps"; done
  fi
  export CMAKE_PREFIX_PATH="$deps/usr:$deps/usr/lib/x86_64-linux-gnu/cmake:$deps/usr/share/cmake:${CMAKE_PREFIX_PATH:-}"
  export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
  export CPATH="$deps/usr/include:$deps/usr/include/eigen3:${CPATH:-}"
  depflags=(-Dyaml-cpp_DIR="$deps/usr/lib/x86_64-linux-gnu/cmake/yaml-cpp"
            -Dfmt_DIR="$deps/usr/lib/x86_64-linux-gnu/cmake/fmt"
            -DCLI11_DIR="$deps/usr/share/cmake/CLI11"
            -Dnlohmann_json_DIR="$deps/usr/share/cmake/nlohmann_json"
            -DEigen3_DIR="$deps/usr/share/eigen3/cmake"
            -Ddoctest_DIR="$deps/usr/lib/cmake/doctest")
fi

# 1. Build: calc and the module only (the unit tests run in CI).
configure=(cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE="$type" ${depflags[@]+"${depflags[@]}"})
[ -f "$build/build.ninja" ] || step configure 60 "${configure[@]}" || exit 1
step build 180 cmake --build "$build" -j "$jobs" --target calc || exit 1
calc=$root/$build/calc
module_built=0
[ -f "$build/libcalc_cuda.so" ] && module_built=1
if [ $dry = 0 ] && [ $module_built = 0 ]; then echo "no CUDA module was built"; status=1; exit 1; fi

# 2. Plain commands load no GPU library; the module's one-line failures.
if [ $dry = 1 ]; then step module-checks 120 bash tests/gpu/check_module.sh "$calc" $module_built; fi

# 3. The measuring run first; the report is rendered from the same rows.
validate=("$calc" validate --model qwen3-8b --device cuda)
if [ $dry = 1 ]; then
  step cuda-dry 120 "${validate[@]}" --dry-run --jsonl "$out/cuda.jsonl" > "$out/report.md"
else
  step cuda 120 "${validate[@]}" --jsonl "$out/cuda.jsonl" > "$out/report.md"
fi

# 4. Correctness only, under compute-sanitizer (memcheck, racecheck), after the measurements.
if [ $dry = 1 ]; then
  step correctness-dry 120 "${validate[@]}" --correctness-only --dry-run \
    --jsonl "$out/sanitizer.jsonl" > /dev/null
  echo '{"row":"sanitizer","tool":"memcheck, racecheck","gpu":"skipped","verdict":"skipped"}' \
    >> "$out/sanitizer.jsonl"
else
  for tool in memcheck racecheck; do
    step "sanitizer-$tool" 60 compute-sanitizer --tool "$tool" --error-exitcode 3 \
      --log-file "$out/$tool.log" "${validate[@]}" --correctness-only \
      --jsonl "$out/sanitizer.jsonl" > /dev/null
    rc=$?
    errors=$(grep -cE '^========= (Invalid|Race|Error|Uninitialized|Leaked|Program hit)' "$out/$tool.log" 2>/dev/null)
    echo "{\"row\":\"sanitizer\",\"tool\":\"$tool\",\"exit\":$rc,\"findings\":${errors:-0},\"log\":\"$tool.log\",\"verdict\":\"$([ $rc = 0 ] && echo pass || echo FAIL)\"}" \
      >> "$out/sanitizer.jsonl"
  done
fi

# 5. The first bundled model on the CPU twins (dry run only; ctest validates the rest).
if [ $dry = 1 ]; then
  : > "$out/cpu.jsonl"
  read -r model scale < <(grep -E '^[a-z]' tests/validate-models.txt)
  t0=$(date +%s)
  step cpu-model 90 "$calc" validate --model "$model" --scale "$scale" --length 160 \
    --decode-steps 2 > /dev/null
  rc=$?
  echo "{\"row\":\"cpu_validate\",\"model\":\"$model\",\"scale\":$scale,\"exit\":$rc,\"seconds\":$(( $(date +%s) - t0 )),\"verdict\":\"$([ $rc = 0 ] && echo pass || echo FAIL)\"}" \
    >> "$out/cpu.jsonl"
fi
exit $status
