#!/usr/bin/env bash
# Installs what truepeak needs to build and test on Debian 12 (idempotent: installs only what is
# missing). Usage: scripts/setup.sh [extra Debian packages...]
set -euo pipefail

# ocl-icd-opencl-dev: Debian's oneDNN is built with its OpenCL GPU runtime, so its CMake config
# looks for OpenCL's headers and library even for a CPU-only build.
packages=(
  build-essential cmake ninja-build git pkg-config
  libdnnl-dev ocl-icd-opencl-dev libfmt-dev nlohmann-json3-dev libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  libonnx-dev libprotobuf-dev protobuf-compiler
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]})); then
  echo "truepeak setup: installing ${missing[*]}" >&2
  sudo_cmd=()
  if [ "$(id -u)" -ne 0 ]; then sudo_cmd=(sudo); fi
  "${sudo_cmd[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
