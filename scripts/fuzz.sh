#!/usr/bin/env bash
# Runs every reader's fuzz target (tests/fuzz) under libFuzzer with ASan and
# UBSan for FUZZ_SECONDS each (default 20), starting from the committed corpus
# with the format's dictionary (tests/fuzz/dict/TARGET.dict).
# New inputs stay in a scratch folder; an input that crashes a reader is saved
# as build-san/crash-TARGET-* and fails the run: fix the reader and commit the
# input to tests/fuzz/corpus/TARGET, where the suite replays it.
# Usage: scripts/fuzz.sh [TARGET...]
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || sysctl -n hw.ncpu)
seconds="${FUZZ_SECONDS:-20}"

scripts/configure-sanitized.sh
cmake --build build-san -j "$jobs" --target anelm_fuzz

targets=("$@")
if [ ${#targets[@]} -eq 0 ]; then
  targets=($(ls tests/fuzz/corpus))
fi
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
status=0
for t in "${targets[@]}"; do
  mkdir -p "$scratch/$t"
  dict=()
  if [ -f "tests/fuzz/dict/$t.dict" ]; then dict=(-dict="tests/fuzz/dict/$t.dict"); fi
  echo "fuzz $t: ${seconds} s"
  if ! ANELM_FUZZ_TARGET="$t" build-san/tests/anelm_fuzz "$scratch/$t" "tests/fuzz/corpus/$t" \
      -max_total_time="$seconds" -max_len=65536 -rss_limit_mb=4096 -timeout=10 \
      -artifact_prefix="build-san/crash-$t-" -print_final_stats=1 ${dict[@]+"${dict[@]}"} > "$scratch/$t.log" 2>&1; then
    tail -n 40 "$scratch/$t.log"
    echo "fuzz $t: FAILED (the input is build-san/crash-$t-*)"
    status=1
  else
    grep -E "^stat::number_of_executed_units|^stat::new_units_added" "$scratch/$t.log" | tr '\n' ' '
    echo
  fi
done
exit $status
