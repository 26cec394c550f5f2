#!/usr/bin/env bash
# ctest `cuda-module` (issue 10): plain commands load no GPU library, `validate --device cuda`
# fails in one clear line where the module or a GPU is missing, and the device script
# (run.sh) fails in one line before building where nvcc, cuBLAS or compute-sanitizer is missing.
#   check_module.sh CALC_BINARY MODULE_BUILT(0|1)
set -uo pipefail
calc=${1:?usage: check_module.sh CALC MODULE_BUILT}
built=${2:?}
dir=$(dirname "$calc")
fail() { echo "FAIL: $*"; exit 1; }

# 1. The executable names no CUDA library, whether or not the module was built.
if ldd "$calc" | grep -Ei 'libcudart|libcublas|libcuda\.so'; then
  fail "$calc links a CUDA library"
fi
# A plain command runs (and so loads no GPU library: none is linked and nothing dlopens one).
"$calc" state --model qwen3-8b --length 8192 --format json > /dev/null || fail "calc state failed"
if LD_DEBUG=libs "$calc" state --model qwen3-8b --length 8192 2>&1 >/dev/null |
   grep -E 'libcudart|libcublas|libcalc_cuda'; then
  fail "calc state loaded a CUDA library"
fi

# 2. With the module missing (an override pointing nowhere): exit 2 and exactly this line.
err=$(CALC_CUDA_MODULE=/nonexistent/libcalc_cuda.so "$calc" validate --model qwen3-8b \
      --device cuda 2>&1 >/dev/null); code=$?
want="--device cuda: no CUDA module (looked for /nonexistent/libcalc_cuda.so); build calc where nvcc exists"
[ "$code" = 2 ] || fail "missing module: exit $code, want 2"
[ "$err" = "$want" ] || fail "missing module: got '$err', want '$want'"

# 3. A file that is not a shared library: exit 2 and the loader's reason, in one line.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
echo garbage > "$tmp/libcalc_cuda.so"
err=$(CALC_CUDA_MODULE="$tmp/libcalc_cuda.so" "$calc" validate --model qwen3-8b --device cuda \
      2>&1 >/dev/null); code=$?
want="--device cuda: cannot load $tmp/libcalc_cuda.so: $tmp/libcalc_cuda.so: file too short"
[ "$code" = 2 ] || fail "bad module: exit $code, want 2"
[ "$err" = "$want" ] || fail "bad module: got '$err', want '$want'"

# 4. The device script's preflight, before any build: each missing tool is one line and exit 2,
#    in seconds (the stand-in toolkits below are empty files: nothing is built or run).
run_sh=$(cd "$(dirname "$0")" && pwd)/run.sh
preflight() {  # preflight PATH WANT: run.sh under PATH must exit 2 with exactly WANT
  local err code
  err=$(PATH=$1 timeout 20 bash "$run_sh" "$tmp/out" 2>&1); code=$?
  [ "$code" = 2 ] || fail "preflight: exit $code, want 2 ($err)"
  [ "$err" = "$2" ] || fail "preflight: got '$err', want '$2'"
  [ ! -e "$tmp/out" ] || fail "preflight: wrote $tmp/out before failing"
}
if ! PATH=/usr/bin:/bin command -v nvcc > /dev/null; then
  preflight /usr/bin:/bin "run.sh: nvcc not found on PATH (the CUDA toolkit builds the module)"
fi
mkdir -p "$tmp/nocublas/bin" "$tmp/cuda/bin" "$tmp/cuda/lib64"
printf '#!/bin/sh\nexit 0\n' > "$tmp/nocublas/bin/nvcc"; chmod +x "$tmp/nocublas/bin/nvcc"
cp "$tmp/nocublas/bin/nvcc" "$tmp/cuda/bin/nvcc"; : > "$tmp/cuda/lib64/libcublas.so.13"
preflight "$tmp/nocublas/bin:/usr/bin:/bin" "run.sh: cuBLAS not found beside nvcc (looked in \
$tmp/nocublas/lib64 and $tmp/nocublas/targets/*/lib)"
if ! PATH=/usr/bin:/bin command -v compute-sanitizer > /dev/null; then
  preflight "$tmp/cuda/bin:/usr/bin:/bin" \
    "run.sh: compute-sanitizer not found on PATH (the run ends with memcheck and racecheck)"
fi

if [ "$built" = 1 ]; then
  # 5. The module is beside the executable and carries the CUDA libraries itself.
  [ -f "$dir/libcalc_cuda.so" ] || fail "no $dir/libcalc_cuda.so"
  [[ $(ldd "$dir/libcalc_cuda.so") == *libcublas* ]] || fail "the module does not link libcublas"
  # 6. Here (no GPU, no driver) the module loads and says why it cannot run, in one line, from
  #    a build folder and from an installed tree (<prefix>/bin/calc, <prefix>/lib/calc/).
  mkdir -p "$tmp/bin" "$tmp/lib/calc"
  cp "$calc" "$tmp/bin/calc" && cp "$dir/libcalc_cuda.so" "$tmp/lib/calc/"
  if ! command -v nvidia-smi > /dev/null || ! nvidia-smi > /dev/null 2>&1; then
    for exe in "$calc" "$tmp/bin/calc"; do
      err=$("$exe" validate --model qwen3-8b --device cuda 2>&1 >/dev/null); code=$?
      [ "$code" = 2 ] || fail "no GPU ($exe): exit $code, want 2"
      [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail "no GPU: more than one line: $err"
      case "$err" in
        "--device cuda: no usable CUDA device: "* | "--device cuda: no CUDA device on this machine") ;;
        *) fail "no GPU ($exe): got '$err'" ;;
      esac
    done
  fi
else
  err=$("$calc" validate --model qwen3-8b --device cuda 2>&1 >/dev/null); code=$?
  [ "$code" = 2 ] || fail "no module: exit $code, want 2"
  case "$err" in "--device cuda: no CUDA module (looked for "*"); build calc where nvcc exists") ;;
    *) fail "no module: got '$err'" ;; esac
fi
echo "cuda-module: ok"
