#!/usr/bin/env bash
# Runs a command and checks its exit status, that stderr matches a pattern, and that stderr is
# one line when the status is 2 (bad input gets one clear line).
# Usage: expect.sh STATUS STDERR_REGEX COMMAND [ARGS...]
set -u
want_status=$1
want_stderr=$2
shift 2
stderr_file=$(mktemp)
"$@" >/dev/null 2>"$stderr_file"
status=$?
stderr=$(cat "$stderr_file")
rm -f "$stderr_file"
fail() {
  echo "FAIL: $*"
  echo "command: $*"
  echo "stderr: $stderr"
  exit 1
}
[ "$status" -eq "$want_status" ] || fail "exit status $status, expected $want_status"
echo "$stderr" | grep -Eq -- "$want_stderr" || fail "stderr does not match '$want_stderr'"
if [ "$want_status" -eq 2 ] && [ "$(printf '%s\n' "$stderr" | wc -l)" -ne 1 ]; then
  fail "expected one line on stderr"
fi
echo "ok: status $status, stderr: $stderr"
