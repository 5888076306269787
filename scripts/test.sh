#!/usr/bin/env bash
# Builds everything and runs the whole test suite; the kernel tests for arm64
# under emulation; then the whole suite again under AddressSanitizer and UBSan, and every reader under libFuzzer for a while
# (FUZZ_SECONDS each, 20 by default; 0 skips them).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || sysctl -n hw.ncpu)

cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs"
ctest --test-dir build --output-on-failure -j "$jobs"

# The NEON leaves against the scalar references, under qemu-user on x86 hosts.
scripts/neon-check.sh

# The whole suite again under AddressSanitizer and UBSan. The server's fault
# test skips its memory check there (the sanitizers hold freed memory back).
scripts/configure-sanitized.sh
cmake --build build-san -j "$jobs"
ANELM_SANITIZED=1 ctest --test-dir build-san --output-on-failure -j "$jobs"

if [ "${FUZZ_SECONDS:-20}" != 0 ]; then
  FUZZ_SECONDS="${FUZZ_SECONDS:-20}" scripts/fuzz.sh
fi
