#!/usr/bin/env bash
# Starts a calibration, sends SIGINT after a few seconds, and checks that the profile it writes is
# valid JSON marked "complete": false, that `show` reads it, and that no temp file is left.
set -u
tp=$1
out=$2
rm -f "$out"
"$tp" calibrate --device cpu --quick --label interrupted --out "$out" >/dev/null 2>"$out.log" &
pid=$!
sleep 4
kill -INT "$pid"
wait "$pid"
status=$?
[ "$status" -eq 0 ] || { echo "FAIL: exit status $status after SIGINT"; cat "$out.log"; exit 1; }
[ -f "$out" ] || { echo "FAIL: no profile written"; cat "$out.log"; exit 1; }
grep -q '"complete": false' "$out" || { echo "FAIL: profile not marked incomplete"; exit 1; }
"$tp" show "$out" >/dev/null || { echo "FAIL: show cannot read the interrupted profile"; exit 1; }
ls "$(dirname "$out")" | grep -q "$(basename "$out").tmp" && { echo "FAIL: temp file left behind"; exit 1; }
grep -q "interrupted" "$out.log" || { echo "FAIL: no note on stderr"; exit 1; }
echo "ok: interrupted calibration wrote a valid incomplete profile"
