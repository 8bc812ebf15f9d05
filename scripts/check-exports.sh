#!/usr/bin/env bash
# Loads truepeak's exports into the tools they are written for and checks what those tools make of
# them against truepeak's own figures (docs/exports.md):
#   - promtool (Debian's prometheus) checks the Prometheus export of every committed profile;
#   - llm-analysis (PyPI, in the project's venv) reads the llm-analysis export of the committed GPU
#     profile from its gpu_configs/ and runs an inference at --tp_size 1 and 2 and a training at
#     --tp_size 2: the device memory it counts is the profile's, the FLOP rate it applies is the
#     best measured GEMM's, the interconnect it charges is the measured host link, and its
#     Llama-2-7B prefill and decode step lie within stated factors of `truepeak estimate`'s.
# Calculon is not on PyPI; tests/report/ check its export against its documented format.
# Installs what is missing first (idempotent). Exits 1 with one line naming the failed check.
# Usage: scripts/check-exports.sh TRUEPEAK_BINARY
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if (($# != 1)) || [ ! -x "$1" ]; then
  echo "usage: scripts/check-exports.sh TRUEPEAK_BINARY" >&2
  exit 2
fi
truepeak=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
gpu_profile=$root/results/nvidia-h200/nvidia-h200-default.json

"$root/scripts/setup.sh" prometheus
"$root/scripts/setup-venv.sh" llm-analysis
python=$root/.venv/bin/python

fail() {
  echo "check-exports: $*" >&2
  exit 1
}
start=$SECONDS
work=$(mktemp -d)
gpu_configs=$("$python" -c 'import llm_analysis, os; print(os.path.dirname(llm_analysis.__file__))')/gpu_configs
config=""
cleanup() {
  rm -rf "$work"
  if [ -n "$config" ]; then rm -f "$config"; fi
}
trap cleanup EXIT

# Prometheus: every committed profile (a file with a devices list), each device.
profiles=$(grep -l '"devices":' "$root"/results/*/*.json) || fail "no committed profile under results/"
for profile in $profiles; do
  "$truepeak" export --to prometheus "$profile" -o "$work/metrics.prom" 2>"$work/export.log" ||
    fail "export --to prometheus $profile: $(tail -n 1 "$work/export.log")"
  promtool check metrics <"$work/metrics.prom" >"$work/promtool.log" 2>&1 ||
    fail "promtool check metrics rejects the export of $profile: $(head -n 1 "$work/promtool.log")"
done

# llm-analysis: the export installed as one of its GPU configs, under the name it carries.
"$truepeak" export --to llm-analysis "$gpu_profile" -o "$work/gpu.json" 2>"$work/notes.txt" ||
  fail "export --to llm-analysis $gpu_profile: $(tail -n 1 "$work/notes.txt")"
name=$("$python" -c 'import json, sys; print(json.load(open(sys.argv[1]))["name"])' "$work/gpu.json")
config=$gpu_configs/$name.json
cp "$work/gpu.json" "$config"
"$truepeak" estimate --profile "$gpu_profile" --model llama2_7b --dtype bf16 --format json \
  >"$work/estimate.json" 2>"$work/estimate.log" ||
  fail "truepeak estimate llama2_7b: $(tail -n 1 "$work/estimate.log")"

# The efficiencies llm-analysis is to apply, as the export's notes print them.
flops_efficiency=$(sed -n 's/^ *bf16 *--flops_efficiency \([0-9.]*\).*/\1/p' "$work/notes.txt")
hbm_efficiency=$(sed -n 's/^ *--hbm_memory_efficiency \([0-9.]*\).*/\1/p' "$work/notes.txt")
[ -n "$flops_efficiency" ] && [ -n "$hbm_efficiency" ] ||
  fail "the llm-analysis export's notes give no bf16 --flops_efficiency or --hbm_memory_efficiency"

llm_analysis() {
  local out=$1
  shift
  "$python" -m llm_analysis.analysis "$@" --model_name NousResearch_Llama-2-7b-hf \
    --gpu_name "$name" --dtype_name w16a16e16 --seq_len 2048 --batch_size_per_gpu 1 \
    --flops_efficiency "$flops_efficiency" --hbm_memory_efficiency "$hbm_efficiency" \
    --log_level ERROR >"$work/$out.json" 2>"$work/$out.log" ||
    fail "llm-analysis $* on the export: $(grep -v '^\s*$' "$work/$out.log" | tail -n 1)"
}
llm_analysis infer1 infer --tp_size 1 --num_tokens_to_generate 1
llm_analysis infer2 infer --tp_size 2 --num_tokens_to_generate 1
llm_analysis train2 train --tp_size 2 --total_num_gpus 2 --activation_recomputation 2

# Its own output against truepeak's figures. Bounds on the latencies: llm-analysis charges no
# per-op cost and streams every weight at one HBM efficiency, so its decode step is shorter than
# truepeak's, by up to half; its prefill is compute-bound in both and lies within 1.5x either way.
"$python" - "$work" "$gpu_profile" <<'EOF' || exit 1
import json, os, sys

work, profile_path = sys.argv[1], sys.argv[2]
load = lambda name: json.load(open(os.path.join(work, name)))
config, estimate = load("gpu.json"), load("estimate.json")
infer1, infer2, train2 = load("infer1.json"), load("infer2.json"), load("train2.json")
device = next(d for d in json.load(open(profile_path))["devices"] if d["kind"] == "gpu")


def check(ok, what):
    if not ok:
        print(f"check-exports: llm-analysis: {what}", file=sys.stderr)
        sys.exit(1)


def near(a, b, rel):
    return abs(a - b) <= rel * abs(b)


memory = train2["(weight+op_state+grad+act)_memory_per_gpu"] + train2["memory_left_per_gpu"]
check(near(memory, device["memory_bytes"], 1e-6),
      f"counts {memory:.6g} bytes per GPU, the profile {device['memory_bytes']:.6g}")
best_bf16 = device["peaks"]["flops_per_s"]["bf16"] / 1e12
check(near(train2["achieved_flops"], best_bf16, 2e-3),
      f"applies {train2['achieved_flops']:.4g} TFLOP/s, the best bf16 GEMM measured {best_bf16:.4g}")
for run, key in ((infer2, "decode_latency_fwd_tp_comm"), (train2, "latency_fwd_tp_comm")):
    check(run[key] > 0, f"{key} is {run[key]} at --tp_size 2: the intra-node link was not read")
check(infer1["decode_latency_fwd_tp_comm"] == 0, "charges communication at --tp_size 1")
for phase, ours, low, high in (("decode", estimate["decode"]["time_s"], 0.5, 1.0),
                               ("prefill", estimate["forward"]["time_s"], 0.67, 1.5)):
    theirs = infer1[f"{phase}_latency"]
    check(low <= theirs / ours <= high,
          f"Llama-2-7B {phase} {theirs * 1e3:.3g} ms, truepeak estimate {ours * 1e3:.3g} ms: "
          f"ratio {theirs / ours:.2f} outside [{low}, {high}]")
print(f"llm-analysis on the export: decode {infer1['decode_latency'] * 1e3:.3g} ms "
      f"(truepeak {estimate['decode']['time_s'] * 1e3:.3g}), prefill "
      f"{infer1['prefill_latency'] * 1e3:.3g} ms (truepeak {estimate['forward']['time_s'] * 1e3:.3g}), "
      f"{memory:.6g} bytes per GPU, {train2['achieved_flops']:.4g} TFLOP/s applied")
EOF
echo "check-exports: $(echo "$profiles" | wc -w) Prometheus exports pass promtool; llm-analysis agrees ($((SECONDS - start)) s)"
