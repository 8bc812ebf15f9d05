#!/usr/bin/env bash
# Sizes an ONNX graph computes from its data are taken from --data-dependent-size, capped by what
# the op's inputs allow, and named: under the table's header (not again on stderr) and in JSON's
# `assumptions`.
# Usage: onnx_assumptions.sh TRUEPEAK MODEL.onnx
set -euo pipefail
tp=$1
model=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() {
  echo "FAIL: $*"
  exit 1
}

"$tp" estimate --model "$model" --data-dependent-size 7 >"$dir/table" 2>"$dir/err"
grep -q "^assumed: NonMaxSuppression 'nms': .*assumed 7 (--data-dependent-size)" "$dir/table" ||
  fail "no NonMaxSuppression assumption under the table: $(cat "$dir/table")"
grep -q "^assumed: NonZero 'nonzero': " "$dir/table" || fail "no NonZero assumption under the table"
if grep -q "assumed 7" "$dir/err"; then fail "assumptions repeated on stderr: $(cat "$dir/err")"; fi

# JSON: each record as the table's line says; above what the input allows, the size is capped.
for size in 7 100000; do
  "$tp" estimate --model "$model" --data-dependent-size "$size" --format json >"$dir/json" 2>/dev/null
  python3 - "$dir/json" "$size" <<'PY' || fail "assumptions in JSON, --data-dependent-size $size"
import json, math, sys
doc = json.load(open(sys.argv[1]))
size = int(sys.argv[2])
by_op = {a["op_type"]: a for a in doc["assumptions"]}
assert set(by_op) == {"NonZero", "NonMaxSuppression", "If"}, by_op
for op in ("NonZero", "NonMaxSuppression"):
    a = by_op[op]
    assert a["at_most"] is not None and a["assumed"] == min(size, a["at_most"]), a
    assert a["text"] and a["node"] and a["what"], a
assert by_op["If"]["what"] == "branch", by_op["If"]
assert math.isfinite(doc["latency_s"]) and doc["latency_s"] > 0, doc["latency_s"]
PY
done

# A larger size costs more: the assumption reaches the estimate.
small=$("$tp" estimate --model "$model" --data-dependent-size 1 --format json 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["forward"]["bytes"])')
large=$("$tp" estimate --model "$model" --data-dependent-size 400 --format json 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["forward"]["bytes"])')
python3 -c "import sys; sys.exit(0 if float('$large') > float('$small') else 1)" ||
  fail "bytes at size 400 ($large) not above size 1 ($small)"
echo "ok: assumptions named and applied"
