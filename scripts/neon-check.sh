#!/usr/bin/env bash
# Builds the CPU kernels' tests for arm64 and runs them under qemu-user, so the
# NEON leaves are checked against the scalar references on an x86 machine
# (correctness only: emulated timings mean nothing). Needs Debian's
# g++-aarch64-linux-gnu, qemu-user and googletest's sources (libgtest-dev);
# without them, or on an arm64 host (where the native suite runs the NEON
# leaves), it says so and exits 0. Output goes to build-neon/.
set -euo pipefail
cd "$(dirname "$0")/.."

if [ "$(uname -m)" = aarch64 ] || [ "$(uname -m)" = arm64 ]; then
  echo "neon-check: this host runs the NEON leaves natively; nothing to emulate"
  exit 0
fi
cxx=aarch64-linux-gnu-g++
gtest=/usr/src/googletest/googletest
for need in "$cxx" qemu-aarch64; do
  if ! command -v "$need" >/dev/null 2>&1; then
    echo "neon-check: skipped, $need not found (scripts/install-deps.sh installs it on Debian/Ubuntu)"
    exit 0
  fi
done
if [ ! -f "$gtest/src/gtest-all.cc" ] || [ ! -d /usr/include/fmt ]; then
  echo "neon-check: skipped, googletest sources ($gtest) or fmt headers missing"
  exit 0
fi

out=build-neon
rm -rf "$out"
mkdir -p "$out/obj" "$out/include"
# fmt alone from the host's headers (header-only, the same on every target):
# the rest of /usr/include is the host's and must not be seen.
ln -s /usr/include/fmt "$out/include/fmt"

sources=(
  src/kernels/*.cpp src/kernels/arm/*.cpp
  src/base/thread_pool.cpp src/base/dtype.cpp src/io/ggml_types.cpp
  src/base/bit_packing.cpp src/quant/quantized_matrix.cpp src/quant/int8_dot_parts.cpp
  tests/kernels/*_test.cpp tests/quant/quant_kernels_test.cpp tests/quant/int8_dot_test.cpp
  "$gtest/src/gtest-all.cc" "$gtest/src/gtest_main.cc"
)
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || echo 2)

# Twice: the baseline arm64 target (products by SMULL / SADALP) and one with
# the dot product instructions Apple silicon has (SDOT).
for march in armv8-a armv8.2-a+dotprod; do
  echo "neon-check: -march=$march"
  flags=(-std=c++20 -O2 -march="$march" -Wall -Wextra -Wno-unused-parameter -DFMT_HEADER_ONLY
         -DANELM_HAVE_ARM_KERNELS=1 -Isrc -Itests -isystem "$out/include"
         -isystem "$gtest/include" -isystem "$gtest")
  rm -f "$out"/obj/*.o
  running=0
  for src in "${sources[@]}"; do
    "$cxx" "${flags[@]}" -c "$src" -o "$out/obj/$(echo "$src" | tr / _).o" &
    running=$((running + 1))
    if [ "$running" -ge "$jobs" ]; then wait -n; running=$((running - 1)); fi
  done
  while [ "$running" -gt 0 ]; do wait -n; running=$((running - 1)); done
  "$cxx" "$out"/obj/*.o -static -pthread -o "$out/kernel_tests"
  qemu-aarch64 -cpu max "$out/kernel_tests" --gtest_brief=1
done
