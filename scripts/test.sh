#!/usr/bin/env bash
# Installs what is missing, builds truepeak with its tests (warnings are errors) and runs ctest;
# then the sanitizer stage: the debug preset (AddressSanitizer and UndefinedBehaviorSanitizer),
# built with clang so that the same build holds the libFuzzer targets, runs the unit tests and
# every fuzz target's seeds, then each fuzz target for a bounded time (TRUEPEAK_FUZZ_SECONDS,
# default 25). Between the two, scripts/check-exports.sh loads the exports into promtool and
# llm-analysis. GPU tests skip without a GPU.
# Usage: scripts/test.sh [build dir, default build-test]
#   TRUEPEAK_SANITIZER_STAGE=1 runs the sanitizer stage, 0 leaves it out; unset, it runs when the
#   time the first build and its tests took leaves room for it within TRUEPEAK_TEST_BUDGET_S
#   (default 1700 s, docs/testing.md).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
source "$root/scripts/common.sh"
build_dir=${1:-$root/build-test}

# clang 19 for the sanitizer stage (scripts/fuzz.sh says why not Debian 12's default clang).
clang_version=${TRUEPEAK_CLANG_VERSION:-19}
"$root/scripts/setup.sh" chromium python3 "clang-$clang_version" "libclang-rt-$clang_version-dev" \
  "libomp-$clang_version-dev"
mkdir -p "$build_dir"
build_start=$SECONDS
truepeak_build "$build_dir" -DTRUEPEAK_ENABLE_TESTS=ON -DTRUEPEAK_ENABLE_BENCH=ON -DTRUEPEAK_WERROR=ON
(cd "$build_dir" && ctest --output-on-failure -j "$(nproc)" --timeout 600)
build_and_tests=$((SECONDS - build_start))
# The exports, loaded into the tools they are written for (promtool, llm-analysis).
"$root/scripts/check-exports.sh" "$build_dir/truepeak"

case ${TRUEPEAK_SANITIZER_STAGE:-auto} in
  0) exit 0 ;;
  1) ;;
  *)
    # The stage (an instrumented build, its tests, the fuzzers) takes about as long as the first
    # build and its tests on the same machine (docs/testing.md); where 1.2 times that would pass
    # the budget, as on a much slower machine, it is left out, and says so, rather than run out
    # of time.
    budget=${TRUEPEAK_TEST_BUDGET_S:-1700}
    expected=$((SECONDS + build_and_tests * 12 / 10))
    if ((expected > budget)); then
      echo "truepeak: sanitizer stage left out: with it, this run would take about ${expected} s," \
        "over the ${budget} s budget (TRUEPEAK_SANITIZER_STAGE=1 runs it)" >&2
      exit 0
    fi
    ;;
esac
stage_start=$SECONDS
debug_dir=$root/build-debug
mkdir -p "$debug_dir"
# Unoptimized: with the sanitizers, the build takes 1.8 times as long at -O1 as at -O0, and -O1
# saves the tests less than it costs the build (docs/testing.md).
cmake -S "$root" -B "$debug_dir" --preset debug \
  -DCMAKE_C_COMPILER="clang-$clang_version" -DCMAKE_CXX_COMPILER="clang++-$clang_version" \
  -DTRUEPEAK_ENABLE_TESTS=ON -DTRUEPEAK_ENABLE_BENCH=OFF -DTRUEPEAK_ENABLE_FUZZ=ON -DTRUEPEAK_WERROR=OFF \
  "-DCMAKE_CXX_FLAGS_DEBUG=-O0 -gline-tables-only" \
  >"$debug_dir/configure.log" 2>&1 || {
  cat "$debug_dir/configure.log" >&2
  echo "truepeak: sanitizer configure failed (log above)" >&2
  exit 1
}
cmake --build "$debug_dir" -j "$(nproc)"
export ASAN_OPTIONS=detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
# The C++ tests and the executable's exit codes; the Python tests (scripts, runtimes, docs) ran in
# the first stage, and the code they exercise is the same.
(cd "$debug_dir" && ctest --output-on-failure -j "$(nproc)" --timeout 900 -E '^(scripts|runtimes|docs)\.')
for target in onnx model_json profile cli; do
  [ -x "$debug_dir/fuzz/fuzz_$target" ] || continue
  "$root/scripts/fuzz.sh" "$target" "${TRUEPEAK_FUZZ_SECONDS:-25}" "$debug_dir" 2>"$debug_dir/fuzz-$target.log" || {
    tail -n 60 "$debug_dir/fuzz-$target.log" >&2
    echo "truepeak: fuzz target $target failed (log: $debug_dir/fuzz-$target.log)" >&2
    exit 1
  }
  grep -E "^stat::number_of_executed_units" "$debug_dir/fuzz-$target.log" | sed "s/^/fuzz $target: /" >&2 || true
done
echo "truepeak: sanitizer stage took $((SECONDS - stage_start)) s" >&2
