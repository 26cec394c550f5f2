#!/usr/bin/env bash
# The GPU check, run ON the GPU machine (within 7 minutes on an H200):
#   bash tests/gpu/run.sh OUTPUT_DIR
# Unpacks the carried Debian packages (tests/gpu/prepare.sh), builds calc with CUDA for sm_90a,
# runs every CUDA kernel against its CPU twin, measures the ceilings and times the kernel sweep
# (calc validate --device cuda), validates every bundled model on the CPU twins, and writes
# OUTPUT_DIR/report.md, OUTPUT_DIR/validate-cuda.json and OUTPUT_DIR/log.
set -uo pipefail
out=${1:?usage: run.sh OUTPUT_DIR}
mkdir -p "$out"
cd "$(dirname "$0")/../.."
exec > >(tee "$out/log") 2>&1
start=$(date +%s)

deps=$PWD/.gpu-deps/root
if [ -d .gpu-deps/debs ]; then
  mkdir -p "$deps"
  for f in .gpu-deps/debs/*.deb; do dpkg-deb -x "$f" "$deps"; done
fi
export CMAKE_PREFIX_PATH="$deps/usr:$deps/usr/lib/x86_64-linux-gnu/cmake:$deps/usr/share/cmake:${CMAKE_PREFIX_PATH:-}"
export LD_LIBRARY_PATH="$deps/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}"
export CPATH="$deps/usr/include:$deps/usr/include/eigen3:${CPATH:-}"

nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv || true
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -Dyaml-cpp_DIR="$deps/usr/lib/x86_64-linux-gnu/cmake/yaml-cpp" \
  -Dfmt_DIR="$deps/usr/lib/x86_64-linux-gnu/cmake/fmt" \
  -DCLI11_DIR="$deps/usr/share/cmake/CLI11" \
  -Dnlohmann_json_DIR="$deps/usr/share/cmake/nlohmann_json" \
  -DEigen3_DIR="$deps/usr/share/eigen3/cmake" \
  -Ddoctest_DIR="$deps/usr/lib/cmake/doctest" || exit 1
cmake --build build-gpu -j "$(nproc)" --target calc || exit 1
echo "build: $(( $(date +%s) - start )) s"

# Kernels vs CPU twins, ceilings and the timed sweep.
build-gpu/calc validate --model qwen3-8b --scale 16 --length 160 --decode-steps 2 --device cuda \
  --format json > "$out/validate-cuda.json"
status=$?
echo "validate --device cuda: exit $status, $(( $(date +%s) - start )) s"

# Every bundled model on the CPU twins (the same list CI runs).
{
  echo "# GPU check: $(date -u +%F) on $(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)"
  echo
  build-gpu/calc validate --model qwen3-8b --scale 16 --length 160 --decode-steps 2 --device cuda
  echo
  echo "## CPU validation of every bundled model"
  echo
  echo "| model | scale | exit |"
  echo "|---|---|---|"
  grep -E '^[a-z]' tests/validate-models.txt | while read -r model scale; do
    build-gpu/calc validate --model "$model" --scale "$scale" --length 160 --decode-steps 2 > /dev/null
    echo "| $model | $scale | $? |"
  done
} > "$out/report.md"
echo "total: $(( $(date +%s) - start )) s"
exit $status
