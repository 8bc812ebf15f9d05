#!/usr/bin/env bash
# Calibrates this machine: installs what is missing, builds truepeak (Release), runs
# `truepeak calibrate` (all devices by default), writes profiles/<label>.json (git-ignored) and prints the summary.
# Extra arguments go to `truepeak calibrate` (e.g. --quick, --label NAME, --price-per-hour 1.20).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/common.sh"

"$root/scripts/setup.sh"
mkdir -p "$root/build"
truepeak_build "$root/build" -DTRUEPEAK_ENABLE_TESTS=OFF -DTRUEPEAK_ENABLE_BENCH=OFF >&2
cd "$root"
exec "$root/build/truepeak" calibrate "$@"
