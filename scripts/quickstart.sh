#!/usr/bin/env bash
# Installs what is missing, builds anelm, and shows the whole job on the
# built-in model, stories260K (models/stories260K: real trained weights, 1 MB):
# text on the CPU, then convert -> lint -> plan -> the converted packages run
# here. Then the speed of a real-size shape (Qwen3-0.6B's, random weights), and
# the commands for a model of your own.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(getconf _NPROCESSORS_ONLN 2>/dev/null || sysctl -n hw.ncpu)

scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j "$jobs" --target anelm

anelm=./build/anelm
stories=models/stories260K
demo=build/demo
mkdir -p "$demo"
# Prints a title and the command (arguments with spaces quoted), then runs it.
step() {
  printf '\n== %s\n$ anelm' "$1"
  for arg in "${@:2}"; do
    if [[ $arg == *" "* ]]; then printf ' "%s"' "$arg"; else printf ' %s' "$arg"; fi
  done
  printf '\n'
  "$anelm" "${@:2}"
}

step "A real model on the CPU (stories260K: 260K parameters, trained on children's stories)" \
  generate "$stories/stories260K.bin" --tokenizer "$stories/tok512.bin" -p "Once upon a time" -n 80
step "Convert it to Core ML packages for the Neural Engine (ANEMLL's layout, LUT4 layers)" \
  convert "$stories/stories260K.bin" --tokenizer "$stories/tok512.bin" -o "$demo/stories260K-ane" --force
step "Check the packages against the Neural Engine's rules before a Mac compiles them" \
  lint "$demo/stories260K-ane"
step "Predict speed, memory and energy on an Apple chip (Qwen3-0.6B's shapes, LUT4; --chip all lists every chip)" \
  plan qwen3-0.6b --quant lut4 --chip M4
step "Run the converted packages here, as ANEMLL's runners run them on a Mac (LUT4 weights: a model this small loses some fluency)" \
  generate "$demo/stories260K-ane" -p "Once upon a time" -n 60

if [ ! -d "$demo/qwen3-0.6b" ]; then
  "$anelm" synth qwen3-0.6b -o "$demo/qwen3-0.6b" --dtype f16
fi
step "Speed on Qwen3-0.6B's exact shapes (random weights: its text would be noise, the speed is real)" \
  bench "$demo/qwen3-0.6b" -p 64 -n 16 -r 1 --quant lut4

cat <<'NEXT'

== Next: a model of your own (a Hugging Face folder, or a GGUF file)
  ./build/anelm generate PATH/TO/Qwen3-0.6B -p "Why is the sky blue?" --chat
  ./build/anelm convert PATH/TO/Qwen3-0.6B -o qwen3-ane && ./build/anelm lint qwen3-ane
  ./build/anelm serve PATH/TO/model.gguf --quant lut4    # OpenAI-compatible API and a chat page
NEXT
