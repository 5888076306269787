#!/usr/bin/env bash
# Installs what is missing, builds anelm, and runs it on a built-in model: the
# qwen3-0.6b preset (Qwen3-0.6B's exact shapes, random weights, so the text is
# noise but the speed is real), and on stories260K, a real tiny Llama, when the
# shared test data is beside the checkout.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || sysctl -n hw.ncpu)

scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs" --target anelm

demo=build/demo/qwen3-0.6b
[ -d "$demo" ] || ./build/anelm synth qwen3-0.6b -o "$demo" --dtype f16
./build/anelm info "$demo"
./build/anelm generate "$demo" -p "The Neural Engine" -n 24 --temp 0.8 --seed 1
./build/anelm bench "$demo" -p 64 -n 16 -r 1

stories=../shared/models/stories260K
if [ -f "$stories/stories260K.bin" ]; then
  ./build/anelm generate "$stories/stories260K.bin" --tokenizer "$stories/tok512.bin" \
    -p "Once upon a time" -n 256 --temp 0
fi
