#!/bin/sh
# Stands in for a Python interpreter running `-m runtimes --runtime NAME --device DEV ...` in the
# tests of calibrate --runtime. TRUEPEAK_FAKE_PROBE says what it does (default: print the record
# beside it, with its command line, PYTHONPATH and working directory under settings).
here=$(dirname "$0")
echo "fake probes: $*" >&2
case "${TRUEPEAK_FAKE_PROBE:-ok}" in
  ok)
    echo "fake probes: done" >&2
    sed -e "s|\"settings\": {|\"settings\": {\"argv\": \"$*\", \"pythonpath\": \"$PYTHONPATH\", \"cwd\": \"$(pwd)\", |" \
      "$here/torch_jit_record.json"
    ;;
  missing)
    echo "torch is not installed here: pip install 'torch>=2'" >&2
    exit 3
    ;;
  garbage)
    echo "probe 1 of 3"
    ;;
  invalid)
    sed -e 's/"op_s": 9.4e-6/"op_s": -1/' "$here/torch_jit_record.json"
    ;;
  fail)
    echo "Traceback (most recent call last):" >&2
    echo "RuntimeError: boom" >&2
    exit 1
    ;;
  hang)
    sleep 30
    ;;
esac
