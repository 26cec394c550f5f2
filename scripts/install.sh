#!/usr/bin/env bash
# Installs the Debian packages calc builds with, where missing (no network but the Debian mirror).
set -euo pipefail
packages=(g++ cmake ninja-build libcli11-dev nlohmann-json3-dev libyaml-cpp-dev libfmt-dev
          libeigen3-dev doctest-dev
          # the hardening build (scripts/hardening.sh, build-san/): clang, with libFuzzer and the
          # ASan/UBSan runtimes in libclang-rt-dev
          clang libclang-rt-dev)
packages+=(gnuplot-nox)  # `calc report --plot-dir` draws its SVG charts with gnuplot
packages+=(zsh)  # tests check `calc completion zsh` with `zsh -n` and load it under compinit
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install: all build packages present"
  exit 0
fi
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
