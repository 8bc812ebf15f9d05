#!/usr/bin/env bash
# On a machine with an NVIDIA GPU: build truepeak for this GPU (architecture "native"), run the
# GPU tests, run a quick calibration of cuda:0, show it, and print the headline figures against
# the bars (bf16 GEMM vs datasheet, HBM triad vs 4.8 TB/s, pinned H2D vs the PCIe link, launch
# overhead) and, where PyTorch is installed, against the same operations through PyTorch
# (scripts/peers/torch_gpu.py, run after the calibration). OUTDIR holds at most eight files, as the tools that fetch it may return no more:
#   <label>.json  gpu-check.log (steps, machine, summary)  table.txt  show.txt
#   build.log (configure + build)  cuda-tests.log  calibrate.log (stdout + stderr)  nvidia-smi-q.txt
# Everything else (the test XML, the table script) stays in the build directory.
# Sized for under 5 minutes on one H200 with 16 cores.
#
# Where an interpreter with PyTorch is found, the runtimes torch-eager and torch-cudagraph are then
# calibrated into the same profile (`calibrate --runtime ... --add-to`; its last lines go to gpu-check.log), as a user
# of that PyTorch would calibrate them.
#
# Usage: scripts/gpu-check.sh OUTDIR [--prebuilt BUILD_DIR]
#   --prebuilt: a build directory to fall back to when the build here fails.
# Dependencies the machine lacks come from .deps/root (scripts/gpu-deps.sh, run beforehand where
# there is network access). Reads the GPU's state only; never changes clocks or settings.
set -uo pipefail

usage() { echo "usage: $0 OUTDIR [--prebuilt BUILD_DIR]" >&2; exit 2; }
[ $# -ge 1 ] || usage
out=$1
shift
prebuilt=""
while [ $# -gt 0 ]; do
  case $1 in
    --prebuilt) [ $# -ge 2 ] || usage; prebuilt=$2; shift 2 ;;
    *) usage ;;
  esac
done
# PyTorch finds its own cuDNN; the build's library path (another cuDNN) must not reach it.
saved_library_path=${LD_LIBRARY_PATH:-}

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
mkdir -p "$out"
out=$(cd "$out" && pwd)
build=$root/build-gpu
scratch=$root/build-gpu-check  # files that do not belong in OUTDIR
mkdir -p "$scratch"
start_s=$(date +%s)
budget_s=${TRUEPEAK_GPU_CHECK_BUDGET_S:-400}
status_lines=()
failed=0  # exit status: 1 when a step failed

log() { echo "gpu-check [$(( $(date +%s) - start_s ))s] $*" | tee -a "$out/gpu-check.log" >&2; }
note() { status_lines+=("$1"); log "$1"; }
# Seconds left of the budget, at most $1 and at least $2.
left() {
  local rest=$(( budget_s - ($(date +%s) - start_s) ))
  [ "$rest" -gt "$1" ] && rest=$1
  [ "$rest" -lt "$2" ] && rest=$2
  echo "$rest"
}

: >"$out/gpu-check.log"
log "output in $out"

# --- the machine, read-only ---------------------------------------------------------------
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi -q >"$out/nvidia-smi-q.txt" 2>&1 || true
  nvidia-smi 2>&1 | sed 's/^/nvidia-smi: /' >>"$out/gpu-check.log" || true
  gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader -i 0 2>/dev/null | head -1)
  gpu_cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader -i 0 2>/dev/null | head -1)
else
  log "warning: nvidia-smi not found"
  gpu_name=""
  gpu_cc=""
fi
gpu_name=${gpu_name:-unknown-gpu}
label=$(echo "$gpu_name" | tr '[:upper:]' '[:lower:]' | sed -e 's/[^a-z0-9]\+/-/g' -e 's/^-//' -e 's/-$//')
log "GPU 0: $gpu_name (compute capability ${gpu_cc:-?}), label $label"
{
  echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
  echo "host: $(hostname)"
  echo "cpus: $(nproc)"
  (nvcc --version || /usr/local/cuda/bin/nvcc --version) 2>&1 | tail -2
  cmake --version 2>&1 | head -1
  c++ --version 2>&1 | head -1
  echo "git: $(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null)"
} 2>&1 | sed 's/^/env: /' >>"$out/gpu-check.log"

# --- dependencies -------------------------------------------------------------------------
if [ -z "${CUDACXX:-}" ] && ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  export CUDACXX=/usr/local/cuda/bin/nvcc
fi
cmake_args=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DTRUEPEAK_ENABLE_CUDA=ON -DTRUEPEAK_ENABLE_TESTS=ON
            -DTRUEPEAK_ENABLE_BENCH=OFF -DTRUEPEAK_ENABLE_ONNX=OFF)
lib_path=""
if [ -d "$root/.deps/root/usr" ]; then
  cmake_args+=("-DCMAKE_PREFIX_PATH=$root/.deps/root/usr")
  lib_path=$root/.deps/root/usr/lib/x86_64-linux-gnu
  log "using packages from .deps/root ($(tr '\n' ' ' <"$root/.deps/packages.txt" 2>/dev/null))"
fi

# cuDNN: CUDNN_ROOT, the system, the CUDA toolkit, or the nvidia-cudnn Python package.
cudnn_lib=""
cudnn_include=""
find_cudnn_in() {  # $1: a directory holding lib*/libcudnn.so* (and maybe include/cudnn.h)
  local dir=$1 lib
  [ -d "$dir" ] || return 1
  for lib in "$dir"/lib/libcudnn.so "$dir"/lib/libcudnn.so.9 "$dir"/lib64/libcudnn.so "$dir"/lib64/libcudnn.so.9 \
             "$dir"/lib/x86_64-linux-gnu/libcudnn.so.9; do
    if [ -e "$lib" ]; then
      cudnn_lib=$lib
      [ -f "$dir/include/cudnn.h" ] && cudnn_include=$dir/include
      return 0
    fi
  done
  return 1
}
for candidate in "${CUDNN_ROOT:-/nonexistent}" /usr/local/cuda /usr; do
  find_cudnn_in "$candidate" && break
done
if [ -z "$cudnn_lib" ]; then
  for py in python3 /opt/torch/.venv/bin/python3 /usr/bin/python3; do
    command -v "$py" >/dev/null 2>&1 || continue
    dir=$("$py" -c 'import nvidia.cudnn as m, os; print(list(m.__path__)[0])' 2>/dev/null) || continue
    find_cudnn_in "$dir" && break
  done
fi
if [ -z "$cudnn_lib" ]; then
  for dir in /opt/torch/.venv/lib/python3*/site-packages/nvidia/cudnn /usr/local/lib/python3*/dist-packages/nvidia/cudnn; do
    find_cudnn_in "$dir" && break
  done
fi
if [ -n "$cudnn_lib" ] && [ -z "$cudnn_include" ] && [ -f "$root/.deps/root/cudnn/include/cudnn.h" ]; then
  cudnn_include=$root/.deps/root/cudnn/include
fi
if [ -n "$cudnn_lib" ] && [ -n "$cudnn_include" ]; then
  cmake_args+=("-DTRUEPEAK_CUDNN_LIBRARY=$cudnn_lib" "-DTRUEPEAK_CUDNN_INCLUDE_DIR=$cudnn_include")
  lib_path=$lib_path:$(dirname "$cudnn_lib")
  log "cuDNN: $cudnn_lib (headers $cudnn_include)"
else
  note "cuDNN: not found (library '${cudnn_lib:-none}', headers '${cudnn_include:-none}'): convolutions will be skipped"
fi
export LD_LIBRARY_PATH=${lib_path#:}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

# --- build ----------------------------------------------------------------------------------
arch=native
if [ -n "$gpu_cc" ]; then arch_fallback=${gpu_cc/./}; else arch_fallback=90; fi
built=0
log "configure (CUDA architecture $arch)"
if ! cmake -S "$root" -B "$build" "${cmake_args[@]}" -DCMAKE_CUDA_ARCHITECTURES=$arch >"$out/build.log" 2>&1; then
  log "configure with 'native' failed; trying sm_$arch_fallback"
  rm -rf "$build"
  cmake -S "$root" -B "$build" "${cmake_args[@]}" -DCMAKE_CUDA_ARCHITECTURES="$arch_fallback" >>"$out/build.log" 2>&1 &&
    built=1
else
  built=1
fi
grep -E "^-- truepeak" "$out/build.log" | tee -a "$out/gpu-check.log" >&2
if [ $built = 1 ]; then
  log "build ($(nproc) jobs)"
  if timeout "$(left 200 30)" cmake --build "$build" -j "$(nproc)" --target truepeak truepeak_cuda_tests \
      >>"$out/build.log" 2>&1; then
    note "build: ok"
  else
    built=0
    failed=1
    note "build: FAILED (see build.log)"
    grep -E "error|FAILED" "$out/build.log" | head -20 >&2
  fi
else
  failed=1
  note "configure: FAILED (see build.log)"
fi
if [ $built = 0 ]; then
  if [ -n "$prebuilt" ] && [ -x "$prebuilt/truepeak" ]; then
    build=$(cd "$prebuilt" && pwd)
    note "using the prebuilt build in $build"
  else
    note "no build to run; stopping after the machine snapshot"
    { echo "summary:"; printf '  %s\n' "${status_lines[@]}"; } >>"$out/gpu-check.log"
    exit 1
  fi
fi

# --- GPU tests ------------------------------------------------------------------------------
if [ -x "$build/tests/truepeak_cuda_tests" ]; then
  log "GPU tests"
  if timeout "$(left 90 20)" "$build/tests/truepeak_cuda_tests" --gtest_output="xml:$scratch/cuda-tests.xml" \
      >"$out/cuda-tests.log" 2>&1; then
    note "GPU tests: $(grep -E '^\[  PASSED  \]' "$out/cuda-tests.log" | head -1)"
  else
    failed=1
    note "GPU tests: FAILED (see cuda-tests.log)"
    grep -E "^\[  FAILED  \]|Failure|error" "$out/cuda-tests.log" | head -20 >&2
  fi
else
  note "GPU tests: no test binary in $build/tests"
fi

# --- quick calibration ----------------------------------------------------------------------
profile=$out/$label.json
log "calibrate --device cuda:0 --quick (at most $(left 170 60) s)"
# SIGINT first: the calibration stops at the next point and still writes what it has.
timeout -s INT -k 15 "$(left 170 60)" "$build/truepeak" calibrate --device cuda:0 --quick --label "$label" \
  --out "$profile" >"$out/calibrate.log" 2>&1
rc=$?
[ $rc = 0 ] || failed=1
note "calibrate: exit $rc$([ $rc = 124 ] && echo ' (time limit: the profile is partial)')"
if [ -f "$profile" ]; then
  "$build/truepeak" show "$profile" >"$out/show.txt" 2>&1 || note "show: exit $?"
  cat "$out/show.txt"
else
  failed=1
  note "calibrate wrote no profile"
fi

# --- a peer: the same operations through PyTorch, when it is there ----------------------------
peers=$scratch/peers.json
rm -f "$peers"
if command -v python3 >/dev/null 2>&1 && python3 -c 'import torch' >/dev/null 2>&1; then
  log "peer: PyTorch on the same GPU (at most $(left 90 30) s)"
  if LD_LIBRARY_PATH=$saved_library_path timeout "$(left 90 30)" python3 "$root/scripts/peers/torch_gpu.py" --out "$peers" 2>&1 |
      sed 's/^/peer: /' | tee -a "$out/gpu-check.log" >&2; then
    :
  fi
  [ -f "$peers" ] || note "peer: PyTorch run failed (see gpu-check.log)"
else
  log "peer: no PyTorch here; the table has no peer column"
fi

# --- the runtimes: PyTorch's own costs on this GPU, into the same profile --------------------
torch_python=""
for py in "$root/.venv/bin/python" python3 /usr/bin/python3; do
  if command -v "$py" >/dev/null 2>&1 && LD_LIBRARY_PATH=$saved_library_path "$py" -c 'import torch' >/dev/null 2>&1; then
    torch_python=$(command -v "$py"); break
  fi
done
if [ -f "$profile" ] && [ -n "$torch_python" ]; then
  log "calibrate --runtime torch-eager,torch-cudagraph --quick with $torch_python (at most $(left 120 40) s)"
  LD_LIBRARY_PATH=$saved_library_path timeout -s INT -k 15 "$(left 120 40)" "$build/truepeak" calibrate \
    --device cuda:0 --quick --runtime torch-eager,torch-cudagraph --python "$torch_python" --add-to "$profile" \
    >"$scratch/runtimes.log" 2>&1
  rc=$?
  tail -20 "$scratch/runtimes.log" | sed 's/^/runtimes: /' >>"$out/gpu-check.log"
  [ $rc = 0 ] || failed=1
  note "runtimes: exit $rc"
  "$build/truepeak" show "$profile" 2>&1 | sed -n '/^runtime/,$p' | tee -a "$out/gpu-check.log" >&2
else
  note "runtimes: no profile or no interpreter with PyTorch; not calibrated"
fi

# --- headline figures -----------------------------------------------------------------------
if [ -f "$profile" ] && command -v python3 >/dev/null 2>&1; then
  cat >"$scratch/table.py" <<'PY'
import json, re, sys

profile = json.load(open(sys.argv[1]))
gpus = [d for d in profile.get("devices", []) if d.get("kind") == "gpu"]
if not gpus:
    sys.exit("no GPU device in the profile")
d = gpus[0]
props = d.get("properties", {})
rows = []

def ratio(measured, reference):
    return f"{measured / reference:6.1%}" if measured and reference else "   n/a"

def row(what, measured, reference, unit, scale, bar, ref_label):
    m = f"{measured / scale:9.2f} {unit}" if measured else "      n/a"
    r = f"{reference / scale:9.2f} {unit}" if reference else "      n/a"
    rows.append(f"{what:<34} {m:>16} {r:>16} {ratio(measured, reference):>7}  bar {bar:<8} ({ref_label})")

# bf16 GEMM: the best point vs the dense datasheet peak.
bf16 = max([g["flops_per_s"] for g in d.get("gemm", []) if g.get("dtype") == "bf16"] or [0])
best_gemm = max((g for g in d.get("gemm", []) if g.get("dtype") == "bf16"), key=lambda g: g["flops_per_s"], default=None)
shape = f"{best_gemm['m']}x{best_gemm['n']}x{best_gemm['k']}" if best_gemm else "-"
sheet = d.get("datasheet", {})
row("bf16 GEMM " + shape, bf16, sheet.get("flops_per_s", {}).get("bf16"), "TFLOP/s", 1e12, ">= 75%", "datasheet dense")

# HBM: triad past 4x L2 vs 4.8 TB/s (the H200's datasheet) or the device's datasheet figure.
l2 = props.get("l2_bytes") or 0
triad = max([p["Bps"] for p in d.get("memory", {}).get("sweep", []) if p.get("kernel") == "triad" and p["bytes"] >= 4 * l2] or [0])
mem_ref = 4.8e12 if "H200" in d.get("name", "") else sheet.get("memory_Bps")
row("memory triad (>= 4x L2)", triad, mem_ref, "TB/s", 1e12, ">= 80%", "4.8 TB/s" if mem_ref == 4.8e12 else "datasheet")
copy = max([p["Bps"] for p in d.get("memory", {}).get("sweep", []) if p.get("kernel") == "d2d_copy"] or [0])
row("device copy (cudaMemcpy)", copy, mem_ref, "TB/s", 1e12, "-", "same")

# Pinned H2D: the fitted bandwidth and the best single point vs the PCIe link.
link = props.get("pcie_link_Bps")
if not link:
    text = open(sys.argv[2]).read() if len(sys.argv) > 2 else ""
    gen = re.search(r"PCIe Generation\s*\n\s*Max\s*:\s*(\d+)", text)
    width = re.search(r"Link Width\s*\n\s*Max\s*:\s*(\d+)x", text)
    per_lane = {3: 0.985e9, 4: 1.969e9, 5: 3.938e9, 6: 7.563e9}
    if gen and width and int(gen.group(1)) in per_lane:
        link = per_lane[int(gen.group(1))] * int(width.group(1))
transfers = d.get("transfers", {})
for key in ("h2d_pinned", "d2h_pinned", "h2d_pageable"):
    fit = transfers.get(key) or {}
    points = fit.get("points") or []
    best = max([p["bytes"] / p["time_s"] for p in points if p.get("time_s")] or [0])
    row(f"{key} (best point)", best, link, "GB/s", 1e9, ">= 80%" if key == "h2d_pinned" else "-", "PCIe link")
    if key == "h2d_pinned":
        row(f"{key} (fit)", fit.get("Bps"), link, "GB/s", 1e9, "-", "PCIe link")
bidir = transfers.get("bidirectional_Bps")
row("bidirectional pinned", bidir, 2 * link if link else None, "GB/s", 1e9, "-", "2x link")

# Launch overhead: no reference figure, the bar is absolute.
overhead = d.get("overhead", {})
for key, label in (("op_s", "empty kernel launch"), ("graph_op_s", "launch in a CUDA graph")):
    v = overhead.get(key)
    rows.append(f"{label:<34} {(f'{v * 1e6:9.2f} us') if v else '      n/a':>16}" + ("  bar <= 5 us" if key == "op_s" else ""))

# The peer (scripts/peers/torch_gpu.py), measured after the calibration on the same GPU.
if len(sys.argv) > 3:
    try:
        peer = json.load(open(sys.argv[3]))
    except (OSError, ValueError):
        peer = None
    if peer:
        rows.append("")
        rows.append(f"{'against PyTorch ' + peer.get('torch', '?'):<34} {'truepeak':>16} {'PyTorch':>16} {'ratio':>7}")
        def peer_row(what, mine, theirs, unit, scale):
            m = f"{mine / scale:9.2f} {unit}" if mine else "      n/a"
            t = f"{theirs / scale:9.2f} {unit}" if theirs else "      n/a"
            rows.append(f"{what:<34} {m:>16} {t:>16} {ratio(mine, theirs):>7}")
        for g in peer.get("gemm", []):
            if g.get("layout") != "tn":
                continue
            mine = max([p["flops_per_s"] for p in d.get("gemm", []) if p.get("dtype") == g["dtype"]
                        and p.get("batch", 1) == 1 and (p["m"], p["n"], p["k"]) == (g["m"], g["n"], g["k"])] or [0])
            nn = next((x for x in peer["gemm"] if x["layout"] == "nn" and x["m"] == g["m"]), None)
            theirs = max(g["best_flops_per_s"], nn["best_flops_per_s"] if nn else 0)
            peer_row(f"{g['dtype']} GEMM {g['m']}^3", mine, theirs, "TFLOP/s", 1e12)
        for cv in peer.get("conv", []):
            keys = ("n", "c", "h", "w", "k", "r", "s", "stride", "pad", "groups")
            mine = max([p["flops_per_s"] for p in d.get("conv", []) if p.get("dtype") == cv["dtype"]
                        and p.get("layout") == cv["layout"] and all(p.get(key) == cv[key] for key in keys)] or [0])
            what = f"conv {cv['dtype']} {cv['layout']} {cv['c']}>{cv['k']} {cv['r']}x{cv['s']}/{cv['stride']}"
            peer_row(what + (f" g{cv['groups']}" if cv["groups"] > 1 else ""), mine, cv["best_flops_per_s"],
                     "TFLOP/s", 1e12)
        copy_peer = (peer.get("device_copy_Bps") or {}).get("best")
        peer_row("device copy 1 GiB", copy, copy_peer, "TB/s", 1e12)
        h2d = transfers.get("h2d_pinned") or {}
        mine = max([p["bytes"] / p["time_s"] for p in h2d.get("points") or [] if p.get("bytes") == (1 << 30)] or [0])
        peer_row("h2d pinned 1 GiB", mine, (peer.get("h2d_pinned_Bps") or {}).get("best"), "GB/s", 1e9)

print(f"{d.get('name')}  ({profile.get('machine', {}).get('label')}, complete={profile.get('complete')})")
print(f"{'':<34} {'measured':>16} {'reference':>16} {'ratio':>7}")
print("\n".join(rows))
skipped = d.get("skipped", [])
if skipped:
    print(f"skipped ({len(skipped)}):")
    for s in skipped:
        print(f"  {s.get('what')}: {s.get('reason')}")
PY
  if ! python3 "$scratch/table.py" "$profile" "$out/nvidia-smi-q.txt" "$peers" >"$out/table.txt" 2>&1; then
    note "summary table: python failed (see table.txt)"
  fi
  cat "$out/table.txt"
fi

log "done in $(( $(date +%s) - start_s )) s; summary:"
{ echo "summary:"; printf '  %s\n' "${status_lines[@]}"; } | tee -a "$out/gpu-check.log" >&2
files=$(find "$out" -type f | wc -l)
[ "$files" -le 8 ] || log "warning: $files files in $out (more than the 8 that may be fetched)"
exit $failed
