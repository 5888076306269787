#!/usr/bin/env bash
# Configures build-san/: clang with AddressSanitizer, UBSan and libFuzzer's
# coverage in every library, so one build runs the whole suite under the
# sanitizers (scripts/test.sh) and every reader under libFuzzer (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

# libFuzzer comes with LLVM's clang (Debian's clang; Homebrew's llvm, not Apple's).
cc=clang
cxx=clang++
if command -v brew >/dev/null 2>&1 && [ -x "$(brew --prefix llvm 2>/dev/null)/bin/clang++" ]; then
  cc="$(brew --prefix llvm)/bin/clang"
  cxx="$(brew --prefix llvm)/bin/clang++"
fi
# -O1 with line tables: quick to build on two cores, fast enough to test, and
# sanitizer reports name the line.
CC="$cc" CXX="$cxx" cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=Sanitized \
  -DCMAKE_C_FLAGS_SANITIZED="-O1 -gline-tables-only" \
  -DCMAKE_CXX_FLAGS_SANITIZED="-O1 -gline-tables-only" \
  -DANELM_SANITIZE=ON -DANELM_FUZZ=ON -DANELM_BUILD_BENCH=OFF > /dev/null
