#!/usr/bin/env bash
# Compares truepeak's CPU figures with plain reference programs, side by side in one run:
#   - f32 GEMM 2048^3: a plain timing loop around oneDNN matmul (scripts/peers/onednn_matmul_loop.cpp)
#     vs truepeak's GEMM (bench/truepeak_gemm_bench, best sample); bar: within 5%.
#   - DRAM triad: a McCalpin-STREAM-style program (scripts/peers/stream_triad.c, gcc -O3 -fopenmp,
#     static arrays of >= 4x the last-level cache each, best of 10) vs truepeak's triad at the same
#     total working set (bench/truepeak_stream_bench); bar: truepeak >= the reference.
# Each pair runs ROUNDS times alternately (the machine may be shared; the best of each side counts).
# If the truepeak CLI is built, the headline peaks of `truepeak calibrate --quick` are shown too,
# without a bar: they are measured after the rounds, and a shared host's memory can halve between.
#
# Usage: scripts/compare-peers.sh [BUILD_DIR]   (default build-cpu; ROUNDS=2 by default)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$root/build-cpu}
rounds=${ROUNDS:-2}
size=2048
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for tool in g++ gcc jq cmake; do
  command -v "$tool" >/dev/null || { echo "compare-peers: '$tool' is needed" >&2; exit 2; }
done

# Last-level cache of CPU 0 (largest cache index size), in bytes.
llc_bytes=0
for dir in /sys/devices/system/cpu/cpu0/cache/index*; do
  text=$(cat "$dir/size")
  case "$text" in
    *K) bytes=$(( ${text%K} * 1024 )) ;;
    *M) bytes=$(( ${text%M} * 1024 * 1024 )) ;;
    *) bytes=$text ;;
  esac
  (( bytes > llc_bytes )) && llc_bytes=$bytes
done
(( llc_bytes > 0 )) || llc_bytes=$(( 32 * 1024 * 1024 ))
# McCalpin's rule: each array at least 4x the cache.
array_elems=$(( (4 * llc_bytes + 7) / 8 + 1024 * 1024 ))
array_bytes=$(( array_elems * 8 ))
triad_total_bytes=$(( 3 * array_bytes ))

echo "== building (LLC $((llc_bytes / 1024 / 1024)) MiB; STREAM arrays $((array_bytes / 1024 / 1024)) MiB each)" >&2
g++ -O3 -std=c++17 "$root/scripts/peers/onednn_matmul_loop.cpp" -o "$work/onednn_matmul_loop" -ldnnl
gcc -O3 -fopenmp -mcmodel=medium -DSTREAM_ARRAY_SIZE="$array_elems" \
  "$root/scripts/peers/stream_triad.c" -o "$work/stream_triad" -lm
if [[ ! -f "$build/build.ninja" && ! -f "$build/Makefile" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DTRUEPEAK_ENABLE_CUDA=OFF >&2
fi
cmake --build "$build" --target truepeak_gemm_bench truepeak_stream_bench >&2

best() {  # best VALUE so far: prints the larger of $1 and $2 (either may be empty)
  if [[ -z "$1" ]]; then echo "$2"; elif [[ -z "$2" ]]; then echo "$1"; else
    awk -v a="$1" -v b="$2" 'BEGIN { print (a > b ? a : b) }'; fi
}

peer_gemm="" ours_gemm="" peer_triad="" ours_triad="" peer_impl="" ours_impl=""
for round in $(seq 1 "$rounds"); do
  echo "== round $round/$rounds: GEMM f32 ${size}^3" >&2
  out=$("$work/onednn_matmul_loop" "$size" 50)
  peer_gemm=$(best "$peer_gemm" "$(awk '/^best_flops_per_s/ {print $2}' <<<"$out")")
  peer_impl=$(awk '/^impl/ {print $2}' <<<"$out")
  json=$("$build/bench/truepeak_gemm_bench" "--benchmark_filter=^gemm/f32_b1m${size}n${size}k${size}/" \
    --benchmark_min_time=4 --benchmark_format=json 2>/dev/null)
  ours_gemm=$(best "$ours_gemm" "$(jq -r '.benchmarks[0].best_flops_per_s' <<<"$json")")
  ours_impl=$(jq -r '.benchmarks[0].label' <<<"$json")

  echo "== round $round/$rounds: STREAM triad, $((triad_total_bytes / 1024 / 1024)) MiB total" >&2
  out=$("$work/stream_triad")
  peer_triad=$(best "$peer_triad" "$(awk '/^triad_Bps/ {print $2}' <<<"$out")")
  json=$("$build/bench/truepeak_stream_bench" "--bytes=$triad_total_bytes" \
    "--benchmark_filter=^stream/triad/${triad_total_bytes}/" --benchmark_min_time=2 \
    --benchmark_format=json 2>/dev/null)
  ours_triad=$(best "$ours_triad" "$(jq -r '.benchmarks[0].best_Bps' <<<"$json")")
done

calib_gemm="" calib_triad=""
if [[ -x "$build/truepeak" ]]; then
  echo "== truepeak calibrate --quick" >&2
  if "$build/truepeak" calibrate --device cpu --quick --out "$work/quick.json" >&2; then
    calib_gemm=$(jq -r '.devices[0].peaks.flops_per_s.f32 // empty' "$work/quick.json")
    calib_triad=$(jq -r '.devices[0].peaks.memory_Bps // empty' "$work/quick.json")
  fi
fi

echo
echo "threads: ${OMP_NUM_THREADS:-all}; rounds: $rounds (best of each side)"
echo "reference GEMM impl: $peer_impl; truepeak GEMM impl: $ours_impl"
printf '%-34s %14s %14s %8s  %s\n' "figure" "reference" "truepeak" "ratio" "bar"
row() {  # name peer ours scale unit bar-kind
  awk -v name="$1" -v p="$2" -v o="$3" -v s="$4" -v u="$5" -v kind="$6" 'BEGIN {
    r = o / p
    if (kind == "within5") bar = (r >= 0.95 ? "PASS (>= 0.95)" : "FAIL (< 0.95)")
    else if (kind == "atleast") bar = (r >= 1.0 ? "PASS (>= 1.00)" : "FAIL (< 1.00)")
    else bar = "-  (after the rounds, not side by side)"
    printf "%-34s %10.1f %-3s %10.1f %-3s %8.3f  %s\n", name, p / s, u, o / s, u, r, bar }'
}
row "f32 GEMM ${size}^3 (best)" "$peer_gemm" "$ours_gemm" 1e9 GF/s within5
row "DRAM triad (best)" "$peer_triad" "$ours_triad" 1e9 GB/s atleast
if [[ -n "$calib_gemm" ]]; then
  row "f32 GEMM peak, calibrate --quick" "$peer_gemm" "$calib_gemm" 1e9 GF/s info
fi
if [[ -n "$calib_triad" ]]; then
  row "DRAM triad, calibrate --quick" "$peer_triad" "$calib_triad" 1e9 GB/s info
fi
