#!/usr/bin/env bash
# Runs the default calibration twice in a row and prints every headline figure of both runs with
# their difference: GEMM per dtype, best convolution layer per dtype, vector FMA, main memory, of
# the first device (the CPU), and the core clock each run measured. The bar: within 3% on every
# figure; the exit status is 1 when a figure misses it. Nothing else should run on the machine
# meanwhile.
#
# Usage: scripts/repeatability.sh [TRUEPEAK] [OUT_DIR]
#   TRUEPEAK  the truepeak executable (default build/truepeak)
#   OUT_DIR   keeps both profiles there (default: a temporary folder, removed at the end)
# Extra calibrate options go in CALIBRATE_ARGS, e.g. CALIBRATE_ARGS="--threads 2".
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
truepeak=${1:-$root/build/truepeak}
out=${2:-}
[[ -x $truepeak ]] || { echo "repeatability: $truepeak is not an executable (build first, or pass its path)" >&2; exit 2; }
command -v python3 >/dev/null || { echo "repeatability: python3 is needed" >&2; exit 2; }
if [[ -z $out ]]; then
  out=$(mktemp -d)
  trap 'rm -rf "$out"' EXIT
fi
mkdir -p "$out"

for run in 1 2; do
  echo "repeatability: calibration $run of 2" >&2
  # shellcheck disable=SC2086  # CALIBRATE_ARGS is a list of options
  "$truepeak" calibrate ${CALIBRATE_ARGS:-} --out "$out/run$run.json" >/dev/null
done

python3 - "$out/run1.json" "$out/run2.json" <<'EOF'
import json
import sys


def headlines(path):
    device = json.load(open(path))["devices"][0]
    figures = {}
    for dtype, rate in device["peaks"].get("flops_per_s", {}).items():
        figures[f"GEMM {dtype}"] = (rate / 1e9, "GFLOP/s")
    for point in device.get("conv", []):
        if point.get("cold_weights"):
            continue
        key = f"conv {point['dtype']} (best layer)"
        rate = point["flops_per_s"] / 1e9
        if rate > figures.get(key, (0, ""))[0]:
            figures[key] = (rate, "GFLOP/s")
    for dtype, rate in device["peaks"].get("vector_flops_per_s", {}).items():
        figures[f"vector FMA {dtype}"] = (rate / 1e9, "GFLOP/s")
    if device["peaks"].get("memory_Bps"):
        figures["main memory triad"] = (device["peaks"]["memory_Bps"] / 1e9, "GB/s")
    conditions = device.get("conditions", {})
    sentinel = conditions.get("sentinel", {})
    busy = (sentinel.get("slow_probes"), sentinel.get("probes"))
    return figures, conditions.get("elapsed_s"), busy, device.get("properties", {}).get("measured_frequency_mhz")


(first, t1, busy1, clock1), (second, t2, busy2, clock2) = headlines(sys.argv[1]), headlines(sys.argv[2])
print(f"{'figure':<26} {'run 1':>10} {'run 2':>10} {'unit':<8} {'difference':>10}")
worst = 0.0
for key, (a, unit) in first.items():
    if key not in second:
        print(f"{key:<26} {a:>10.1f} {'-':>10} {unit:<8}")
        continue
    b = second[key][0]
    diff = abs(a - b) / min(a, b) * 100
    worst = max(worst, diff)
    print(f"{key:<26} {a:>10.1f} {b:>10.1f} {unit:<8} {diff:>9.1f}%")
print(f"largest difference: {worst:.1f}% (bar: 3%); calibrations took {t1:.0f} s and {t2:.0f} s")
if None not in busy1 + busy2:
    # How busy the host was: probes slower than the recent quiet time by the threshold.
    print(f"slow sentinel probes: {busy1[0]} of {busy1[1]} in run 1, {busy2[0]} of {busy2[1]} in run 2")
if clock1 and clock2:
    # The compute figures follow the core clock, which a shared host's other tenants move.
    print(f"core clock (fastest dependent-add chain): {clock1:.0f} and {clock2:.0f} MHz "
          f"({abs(clock1 - clock2) / min(clock1, clock2) * 100:.1f}% apart)")
sys.exit(1 if worst > 3 else 0)
EOF
