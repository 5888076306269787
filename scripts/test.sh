#!/usr/bin/env bash
# Builds everything and runs the whole test suite; then the loaders' tests again
# under AddressSanitizer and UBSan, and every reader under libFuzzer for a while
# (FUZZ_SECONDS each, 15 by default here; 0 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || sysctl -n hw.ncpu)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=Debug -DANELM_SANITIZE=ON -DANELM_BUILD_BENCH=OFF
cmake --build build-asan -j "$jobs" --target test_io
ctest --test-dir build-asan --output-on-failure -j "$jobs" -R '^(Safetensors|Config|Llama2c|WeightStore|ModelLoader)'

if [ "${FUZZ_SECONDS:-15}" != 0 ]; then
  FUZZ_SECONDS="${FUZZ_SECONDS:-15}" scripts/fuzz.sh
fi
