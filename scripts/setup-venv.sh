#!/usr/bin/env bash
# Creates the project's Python environment (.venv, from /usr/bin/python3, without the system's
# site packages) and installs into it what the named runtimes' probes need, only what is missing:
# running it again changes nothing. The probes (runtimes/, `truepeak calibrate --runtime`) use
# this venv by default where it has the framework.
#   onnxruntime: onnxruntime, onnx, numpy
#   torch:       torch, torchvision from PyPI (torch 2.x: torch-compile needs it); PIP_INDEX_URL
#                picks another index, e.g. https://download.pytorch.org/whl/cpu for CPU-only wheels
#   llm-analysis: llm-analysis from PyPI (scripts/check-exports.sh runs it on the export)
# Usage: scripts/setup-venv.sh onnxruntime|torch|llm-analysis [...]
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv="$root/.venv"
base_python=${TRUEPEAK_BASE_PYTHON:-/usr/bin/python3}

if (($# == 0)); then
  echo "usage: scripts/setup-venv.sh onnxruntime|torch|llm-analysis [...]" >&2
  exit 2
fi

# pip name and import name of each package, by runtime.
packages=()
for runtime in "$@"; do
  case "$runtime" in
    onnxruntime) packages+=(onnxruntime:onnxruntime onnx:onnx numpy:numpy) ;;
    torch) packages+=(torch:torch torchvision:torchvision) ;;
    llm-analysis) packages+=(llm-analysis:llm_analysis) ;;
    *)
      echo "setup-venv: unknown runtime '$runtime' (known: onnxruntime, torch, llm-analysis)" >&2
      exit 2
      ;;
  esac
done

if [ ! -x "$venv/bin/python" ]; then
  echo "setup-venv: creating $venv with $base_python" >&2
  "$base_python" -m venv "$venv"
fi

missing=()
for entry in "${packages[@]}"; do
  pip_name=${entry%%:*}
  module=${entry##*:}
  if ! "$venv/bin/python" -c "import $module" >/dev/null 2>&1; then
    missing+=("$pip_name")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "setup-venv: $venv has everything for: $*" >&2
  exit 0
fi
echo "setup-venv: installing ${missing[*]} into $venv" >&2
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "${missing[@]}" >&2
echo "setup-venv: done" >&2
