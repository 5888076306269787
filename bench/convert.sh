#!/usr/bin/env bash
# Time and peak memory of `anelm convert` (LUT4 layers, LUT6 head, 2 chunks) on random-weight
# models of real shapes.
#
#   bench/convert.sh WORK
#
# WORK receives the synthesized models and the converted folders; models already there are
# reused. Settings from the environment:
#   ANELM    anelm program       (default: build/anelm beside this script's repository)
#   PRESETS  anelm synth presets (default: "qwen3-0.6b llama-3.2-1b")
#   ARGS     convert options     (default: "--chunks 2", i.e. --lut-ffn 4,8 --lut-head 6,8)
#   THREADS  (default: 2)
# Prints one markdown table: wall seconds, peak resident MiB, output MB.
set -euo pipefail

if [[ $# -ne 1 ]]; then
    sed -n '2,13p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
work=$1
here=$(dirname "$(realpath "$0")")
anelm=${ANELM:-$here/../build/anelm}
presets=${PRESETS:-qwen3-0.6b llama-3.2-1b}
args=${ARGS:---chunks 2}
threads=${THREADS:-2}
mkdir -p "$work"

echo "| model | convert options | wall s | peak RSS MiB | output MB |"
echo "| --- | --- | ---: | ---: | ---: |"
for preset in $presets; do
    model=$work/$preset
    [[ -f $model/config.json ]] || "$anelm" synth "$preset" -o "$model" >&2
    out=$work/$preset-converted
    rm -rf "$out"
    log=$(mktemp)
    # shellcheck disable=SC2086
    /usr/bin/time -v "$anelm" convert "$model" -o "$out" -t "$threads" $args >/dev/null 2>"$log"
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0;
                       for (i = 1; i <= n; i++) s = s * 60 + p[i]; printf "%.1f", s}' "$log")
    rss=$(awk -F': ' '/Maximum resident set size/ {printf "%.0f", $2 / 1024}' "$log")
    mb=$(du -sm "$out" | cut -f1)
    rm -f "$log"
    echo "| $preset | $args | $wall | $rss | $mb |"
done
