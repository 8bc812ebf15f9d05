#!/usr/bin/env bash
# Runs one libFuzzer target for a while, under AddressSanitizer and UndefinedBehaviorSanitizer.
# Usage: scripts/fuzz.sh TARGET SECONDS [BUILD_DIR]
#   TARGET: onnx, model_json, profile or cli (fuzz/*.cpp); BUILD_DIR: default build-debug, the
#   debug preset built with clang and TRUEPEAK_ENABLE_FUZZ (configured and built here; clang is
#   installed if missing).
# The run starts from the committed seeds (fuzz/corpus/TARGET, the test fixtures and the inputs
# that once crashed truepeak) and keeps what it learns in BUILD_DIR/fuzz-corpus/TARGET. A crash,
# leak, sanitizer report or hang ends it with a non-zero status and the input written to
# BUILD_DIR/fuzz-crashes/; add that input to fuzz/corpus/TARGET once fixed.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 2 ]; then
  echo "usage: scripts/fuzz.sh onnx|model_json|profile|cli SECONDS [BUILD_DIR]" >&2
  exit 2
fi
target=$1
seconds=$2
build_dir=${3:-$root/build-debug}

case $target in
  onnx) seeds=("$root/fuzz/corpus/onnx" "$root/tests/estimate/data/onnx" "$root/tests/data/hardening") ;;
  model_json) seeds=("$root/fuzz/corpus/model_json" "$root/models" "$root/tests/data/hardening") ;;
  profile) seeds=("$root/fuzz/corpus/profile" "$root/tests/data/cli" "$root/tests/data/schema"
                  "$root/tests/estimate/data" "$root/tests/report/data") ;;
  cli) seeds=("$root/fuzz/corpus/cli") ;;
  *) echo "scripts/fuzz.sh: unknown target '$target' (onnx, model_json, profile, cli)" >&2; exit 2 ;;
esac
# A seed folder with nothing committed in it is absent from a clone: libFuzzer stops on a missing
# folder, so only those present are passed.
present=()
for dir in "${seeds[@]}"; do
  [ -d "$dir" ] && present+=("$dir")
done
seeds=("${present[@]}")

# Debian 12's default clang (14) cannot compile lambdas that capture structured bindings (C++20),
# which truepeak's code uses; its clang 19 can, and ships libFuzzer. Warnings are not errors here:
# clang 19 warns inside Debian's libstdc++ 12 headers, and the release build (gcc) is the gate.
clang_version=${TRUEPEAK_CLANG_VERSION:-19}
if ! command -v "clang++-$clang_version" >/dev/null; then
  "$root/scripts/setup.sh" "clang-$clang_version" "libclang-rt-$clang_version-dev" "libomp-$clang_version-dev"
fi
mkdir -p "$build_dir"
cmake -S "$root" -B "$build_dir" --preset debug \
  -DCMAKE_C_COMPILER="clang-$clang_version" -DCMAKE_CXX_COMPILER="clang++-$clang_version" \
  -DTRUEPEAK_ENABLE_FUZZ=ON -DTRUEPEAK_ENABLE_BENCH=OFF -DTRUEPEAK_WERROR=OFF >"$build_dir/configure.log" 2>&1 || {
  cat "$build_dir/configure.log" >&2
  echo "scripts/fuzz.sh: configure failed (log above)" >&2
  exit 1
}
cmake --build "$build_dir" -j "$(nproc)" --target "fuzz_$target"

corpus=$build_dir/fuzz-corpus/$target
mkdir -p "$corpus" "$build_dir/fuzz-crashes"
options=()
[ -f "$root/fuzz/$target.dict" ] && options+=(-dict="$root/fuzz/$target.dict")
# A command line's seeds are short; room for a few paths and lists more.
[ "$target" = cli ] && options+=(-max_len=512)
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-halt_on_error=1:print_stacktrace=1}
# Paths in the seeds (the command line's) are relative to the repository.
cd "$root"
# -timeout: a hang, far above the slowest input the bounds allow (an ONNX graph of a few hundred
# nodes whose shapes come one a pass: tens of seconds in this unoptimized build).
exec "$build_dir/fuzz/fuzz_$target" -max_total_time="$seconds" -timeout=120 -rss_limit_mb=4096 \
  -print_final_stats=1 -artifact_prefix="$build_dir/fuzz-crashes/$target-" "${options[@]}" \
  "$corpus" "${seeds[@]}"
