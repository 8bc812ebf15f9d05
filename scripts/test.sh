#!/usr/bin/env bash
# Installs what is missing, builds truepeak with its tests (warnings are errors) and runs ctest.
# GPU tests skip without a GPU. Usage: scripts/test.sh [build dir, default build-test]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/common.sh"
build_dir=${1:-$root/build-test}

"$root/scripts/setup.sh" chromium python3
mkdir -p "$build_dir"
truepeak_build "$build_dir" -DTRUEPEAK_ENABLE_TESTS=ON -DTRUEPEAK_ENABLE_BENCH=ON -DTRUEPEAK_WERROR=ON
cd "$build_dir"
ctest --output-on-failure -j "$(nproc)" --timeout 600
