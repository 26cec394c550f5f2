#!/usr/bin/env bash
# Run HERE (the CPU machine) before a device run: the GPU machine has CUDA, CMake and Ninja but
# none of calc's Debian -dev packages and cannot fetch any, so this downloads them into
# .gpu-deps/ (git-ignored) for the `run` tool to carry (carry: [".gpu-deps"]).
set -euo pipefail
cd "$(dirname "$0")/../.."
mkdir -p .gpu-deps/debs
# In a git worktree .git is a file: ask git where this checkout's exclude file lives.
exclude=$(git rev-parse --git-path info/exclude 2>/dev/null || echo .git/info/exclude)
mkdir -p "$(dirname "$exclude")"
grep -qx '/.gpu-deps/' "$exclude" 2>/dev/null || echo '/.gpu-deps/' >> "$exclude"
(cd .gpu-deps/debs && apt-get download libcli11-dev nlohmann-json3-dev libyaml-cpp-dev \
  libyaml-cpp0.7 libfmt-dev libfmt9 libeigen3-dev doctest-dev)
du -sh .gpu-deps
