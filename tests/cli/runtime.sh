#!/usr/bin/env bash
# calibrate --runtime --add-to, show, estimate --runtime and compare through the real executable,
# with a fake interpreter (tests/data/runtimes/fake_python.sh) and fake probes
# (tests/data/runtimes/fake_tree/runtimes) in place of Python and the real probes.
# Usage: runtime.sh TRUEPEAK DATA_DIR TMP_DIR PYTHON3
set -u
tp=$1
data=$2
tmp=$3/runtime_cli
python=$4
rm -rf "$tmp" && mkdir -p "$tmp"
fail() {
  echo "FAIL: $*"
  exit 1
}
with_runtime=$data/runtimes/profile_with_runtime.json
export TRUEPEAK_RUNTIMES_DIR=$data/runtimes/fake_tree
export PYTHONDONTWRITEBYTECODE=1

# show: a section per runtime.
"$tp" show "$with_runtime" >"$tmp/show.txt" || fail "show exited $?"
grep -q "torch-jit on cpu: torch 1.13.1, 2 threads, f32" "$tmp/show.txt" || fail "show: no runtime line: $(cat "$tmp/show.txt")"

# estimate: the table's header and the JSON name the runtime; flags override its figures.
"$tp" estimate --profile "$with_runtime" --model resnet50 --runtime torch-jit >"$tmp/table.txt" ||
  fail "estimate --runtime exited $?"
head -1 "$tmp/table.txt" | grep -q ", runtime torch-jit, batch 1" || fail "table header: $(head -1 "$tmp/table.txt")"
for variant in plain runtime flag; do
  case $variant in
    plain) extra=() ;;
    runtime) extra=(--runtime torch-jit) ;;
    flag) extra=(--runtime torch-jit --kind-overhead-us elementwise:relu=70 --op-overhead-us 50) ;;
  esac
  "$tp" estimate --profile "$with_runtime" --model resnet50 --format json "${extra[@]}" >"$tmp/$variant.json" ||
    fail "estimate $variant exited $?"
done
"$python" - "$tmp" <<'PY' || fail "estimate JSON"
import json, sys
d = sys.argv[1]
plain, runtime, flag = (json.load(open(f"{d}/{v}.json")) for v in ("plain", "runtime", "flag"))
assert plain["runtime"] is None, plain["runtime"]
assert runtime["runtime"] == "torch-jit", runtime["runtime"]
relu = lambda e: [o for o in e["ops"] if o["name"].startswith("relu") or "relu" in o["kind"]]
assert relu(runtime) and all(abs(o["overhead_s"] - 3e-6) < 1e-12 for o in relu(runtime)), relu(runtime)[:1]
assert all(abs(o["overhead_s"] - 7e-5) < 1e-12 for o in relu(flag)), relu(flag)[:1]
pools = [o for o in flag["ops"] if o["kind"].startswith("pool")]
assert pools and all(abs(o["overhead_s"] - 5e-5) < 1e-12 for o in pools), pools[:1]
assert runtime["latency_s"] != plain["latency_s"]
PY

# compare: a line per runtime key.
"$tp" compare "$with_runtime" "$data/../estimate/data/fixture_cpu.json" >"$tmp/compare.txt" || fail "compare exited $?"
grep -q "runtime torch-jit op" "$tmp/compare.txt" || fail "compare: no runtime line"

# calibrate --add-to: the runtimes only, written back into the profile.
profile=$tmp/profile.json
cp "$data/../estimate/data/fixture_cpu.json" "$profile"
"$tp" calibrate --quick --runtime torch-jit:fake --python "$data/runtimes/fake_python.sh" --add-to "$profile" \
  >"$tmp/add.txt" 2>"$tmp/add.log" || fail "calibrate --add-to exited $?: $(cat "$tmp/add.log")"
grep -q "fake probes: -m runtimes --runtime torch-jit --device cpu --threads 2 --quick" "$tmp/add.log" ||
  fail "the probes' stderr is not passed through: $(cat "$tmp/add.log")"
grep -q '"torch-jit:fake"' "$profile" || fail "no record in the profile"
# The record is in this truepeak's format: the 1.0 profile takes its schema version.
grep -q '"schema_version": "1.0"' "$profile" && fail "schema version kept: $(grep schema_version "$profile")"
"$tp" estimate --profile "$profile" --model resnet50 --runtime torch-jit:fake >/dev/null || fail "estimate of the added record"
ls "$tmp" | grep -q "profile.json.tmp" && fail "temp file left behind"

# The real protocol: an interpreter running `-m runtimes` from TRUEPEAK_RUNTIMES_DIR.
"$tp" calibrate --runtime onnxruntime --python "$python" --add-to "$profile" >/dev/null 2>"$tmp/real.log" ||
  fail "calibrate with $python exited $?: $(cat "$tmp/real.log")"
grep -q '"python": "'"$python"'"' "$profile" || fail "the interpreter is not recorded"

# A missing framework: one line, exit 2; anything else: exit 1; the profile stays as it was.
cp "$profile" "$tmp/before.json"
TRUEPEAK_FAKE_PROBE=missing "$tp" calibrate --runtime torch-jit --python "$data/runtimes/fake_python.sh" \
  --add-to "$profile" >/dev/null 2>"$tmp/missing.log"
status=$?
[ "$status" -eq 2 ] || fail "missing framework: exit $status"
tail -1 "$tmp/missing.log" | grep -q "^truepeak: --runtime torch-jit on cpu: torch is not installed here" ||
  fail "missing framework: $(tail -1 "$tmp/missing.log")"
TRUEPEAK_FAKE_PROBE=invalid "$tp" calibrate --runtime torch-jit --python "$data/runtimes/fake_python.sh" \
  --add-to "$profile" >/dev/null 2>"$tmp/invalid.log"
status=$?
[ "$status" -eq 1 ] || fail "invalid record: exit $status"
tail -1 "$tmp/invalid.log" | grep -q "the record fails the profile schema: /op_s" || fail "invalid: $(tail -1 "$tmp/invalid.log")"
cmp -s "$profile" "$tmp/before.json" || fail "a failed probe changed the profile"

# Ctrl-C while a probe runs: the probe ends, calibrate exits 0 and says so, the profile stays.
TRUEPEAK_FAKE_PROBE=hang "$tp" calibrate --runtime torch-jit --python "$data/runtimes/fake_python.sh" \
  --add-to "$profile" >/dev/null 2>"$tmp/interrupted.log" &
pid=$!
sleep 2
kill -INT "$pid"
wait "$pid"
status=$?
[ "$status" -eq 0 ] || fail "interrupted: exit $status: $(cat "$tmp/interrupted.log")"
grep -q "interrupted: .* is unchanged" "$tmp/interrupted.log" || fail "interrupted: $(cat "$tmp/interrupted.log")"
cmp -s "$profile" "$tmp/before.json" || fail "an interrupted probe changed the profile"
echo "ok: calibrate --runtime, show, estimate --runtime and compare"
