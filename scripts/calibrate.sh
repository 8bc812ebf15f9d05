#!/usr/bin/env bash
# Calibrates this machine: installs what is missing, builds truepeak (Release), runs
# `truepeak calibrate` (all devices by default), writes profiles/<label>.json (git-ignored) and prints the summary.
# Extra arguments go to `truepeak calibrate` (e.g. --quick, --label NAME, --price-per-hour 1.20).
# With --runtime and no --python, the frameworks those runtimes need go into the project's venv
# first (scripts/setup-venv.sh: PyPI's torch and torchvision for torch-eager, torch-compile and
# torch-cudagraph, onnxruntime for onnxruntime); a plain calibration downloads nothing.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/common.sh"

"$root/scripts/setup.sh"
mkdir -p "$root/build"
truepeak_build "$root/build" -DTRUEPEAK_ENABLE_TESTS=OFF -DTRUEPEAK_ENABLE_BENCH=OFF >&2

# The runtimes asked for, and whether an interpreter was named.
runtimes="" python_given=0
args=("$@")
for ((i = 0; i < ${#args[@]}; i++)); do
  case "${args[i]}" in
    --runtime) runtimes+=",${args[i + 1]:-}" ;;
    --runtime=*) runtimes+=",${args[i]#--runtime=}" ;;
    --python | --python=*) python_given=1 ;;
  esac
done
if [ -n "$runtimes" ] && [ "$python_given" = 0 ]; then
  frameworks=()
  case ",$runtimes" in *,torch-eager* | *,torch-compile* | *,torch-cudagraph*) frameworks+=(torch) ;; esac
  case ",$runtimes" in *,onnxruntime*) frameworks+=(onnxruntime) ;; esac
  if ((${#frameworks[@]})); then
    "$root/scripts/setup-venv.sh" "${frameworks[@]}" >&2
  fi
fi

cd "$root"
exec "$root/build/truepeak" calibrate "$@"
