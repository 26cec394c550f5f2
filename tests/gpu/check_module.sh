#!/usr/bin/env bash
# ctest `cuda-module` (issue 10): plain commands load no GPU library, and `validate --device
# cuda` fails in one clear line where the module or a GPU is missing.
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

if [ "$built" = 1 ]; then
  # 3. The module is beside the executable and carries the CUDA libraries itself.
  [ -f "$dir/libcalc_cuda.so" ] || fail "no $dir/libcalc_cuda.so"
  [[ $(ldd "$dir/libcalc_cuda.so") == *libcublas* ]] || fail "the module does not link libcublas"
  # 4. Here (no GPU, no driver) the module loads and says why it cannot run, in one line.
  if ! command -v nvidia-smi > /dev/null || ! nvidia-smi > /dev/null 2>&1; then
    err=$("$calc" validate --model qwen3-8b --device cuda 2>&1 >/dev/null); code=$?
    [ "$code" = 2 ] || fail "no GPU: exit $code, want 2"
    [ "$(printf '%s\n' "$err" | wc -l)" = 1 ] || fail "no GPU: more than one line: $err"
    case "$err" in
      "--device cuda: no usable CUDA device: "* | "--device cuda: no CUDA device on this machine") ;;
      *) fail "no GPU: got '$err'" ;;
    esac
  fi
else
  err=$("$calc" validate --model qwen3-8b --device cuda 2>&1 >/dev/null); code=$?
  [ "$code" = 2 ] || fail "no module: exit $code, want 2"
  case "$err" in "--device cuda: no CUDA module (looked for "*"); build calc where nvcc exists") ;;
    *) fail "no module: got '$err'" ;; esac
fi
echo "cuda-module: ok"
