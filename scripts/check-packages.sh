#!/usr/bin/env bash
# Converts a matrix of tiny models and options with `anelm convert`, checks
# every package with Apple's coremltools (the validator in
# ../shared/tools/coreml-validator, built outside the repository), and runs
# every converted folder with `anelm generate OUT` against the source model.
#
#   scripts/check-packages.sh [--quick] WORK
#
# WORK receives the models and converted folders (emptied first).
# The matrix: tiny Llama, Qwen2, Qwen3 and Gemma 3 models (and stories260K when
# ../shared has it) x chunks 1/2/3 x argmax off/on, monolithic x argmax off/on,
# (where the model has that many layers), Gemma 3 with a context at and above
# its sliding window, and LUT 2/4/6/8 bits
# with group sizes, per channel and per tensor, and verify functions (--verify 8),
# split and monolithic. fp16 conversions must generate the source model's exact
# greedy text (--precision ane); LUT ones must run; with a verify function,
# generate OUT --lookup 2 must print what generate OUT prints.
# --quick: one chunk count and two LUTs.
#
# Environment: ANELM (default build/anelm), VALIDATOR (validate-mlpackage.sh;
# without it, packages are not validated and the script says so).
# Prints one line per conversion and closes with "N passed, M failed".
set -uo pipefail

quick=0
if [[ ${1:-} == --quick ]]; then quick=1; shift; fi
if [[ $# -ne 1 ]]; then
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
root=$(cd "$(dirname "$0")/.." && pwd)
anelm=${ANELM:-$root/build/anelm}
validator=${VALIDATOR:-}
work=$1
[[ -x $anelm ]] || { echo "check-packages.sh: $anelm: not built" >&2; exit 2; }
if [[ -n $validator && ! -x $validator ]]; then
    echo "check-packages.sh: $validator: not executable" >&2
    exit 2
fi
[[ -n $validator ]] || echo "check-packages.sh: no VALIDATOR given: packages are not validated" >&2
rm -rf "$work"
mkdir -p "$work/models" "$work/out"

# What generate runs: prompt and token count (prompt included), within the context.
prompt="the quick brown fox jumps over the lazy dog and then it runs"
n_tokens=60
passed=0 failed=0

# model name -> the arguments that name it to anelm
declare -A model_args
for preset in tiny-llama tiny-qwen2 tiny-qwen3 tiny-gemma3; do
    "$anelm" synth "$preset" -o "$work/models/$preset" --seed 3 > /dev/null 2>&1 || exit 2
    model_args[$preset]="$work/models/$preset"
done
stories=$root/../shared/models/stories260K
if [[ -f $stories/stories260K.bin ]]; then
    model_args[stories260K]="$stories/stories260K.bin --tokenizer $stories/tok512.bin"
fi

# check NAME MODEL EXACT CONVERT_ARGS...: convert, validate each package, generate.
check() {
    local name=$1 model=$2 exact=$3
    shift 3
    local out=$work/out/$name verdict="" log=$work/out/$name.log
    # shellcheck disable=SC2086
    if ! "$anelm" convert ${model_args[$model]} -o "$out" -t 2 "$@" > "$log" 2>&1; then
        verdict="convert failed: $(tail -1 "$log")"
    fi
    if [[ -z $verdict && -n $validator ]]; then
        for pkg in "$out"/*.mlpackage; do
            if ! "$validator" "$pkg" >> "$log" 2>&1; then
                verdict="invalid $(basename "$pkg"): $(grep -m1 'error' "$log")"
                break
            fi
        done
    fi
    if [[ -z $verdict ]]; then
        local want got
        # shellcheck disable=SC2086
        got=$("$anelm" generate "$out" -p "$prompt" --steps $n_tokens --temp 0 \
            --precision ane 2>> "$log") ||
            verdict="generate OUT failed: $(tail -1 "$log")"
        if [[ -z $verdict && " $* " == *" --verify "* ]]; then
            local drafted
            # shellcheck disable=SC2086
            drafted=$("$anelm" generate "$out" -p "$prompt" --steps $n_tokens --temp 0 \
                --precision ane --lookup 2 2>> "$log") || verdict="generate OUT --lookup failed"
            [[ -n $verdict || $drafted == "$got" ]] || verdict="--lookup changes the text"
        fi
        if [[ -z $verdict && $exact == exact ]]; then
            # shellcheck disable=SC2086
            want=$("$anelm" generate ${model_args[$model]} -p "$prompt" --steps $n_tokens \
                --temp 0 --precision ane 2>> "$log") || verdict="generate MODEL failed"
            [[ -n $verdict || $got == "$want" ]] || verdict="text differs from the source model"
        fi
    fi
    if [[ -z $verdict ]]; then
        passed=$((passed + 1))
        printf 'ok    %-44s %s\n' "$name" "$*"
    else
        failed=$((failed + 1))
        printf 'FAIL  %-44s %s: %s\n' "$name" "$*" "$verdict"
    fi
}

fp16=(--lut-embed none --lut-ffn none --lut-head none)
chunk_counts=(1 2 3)
luts=("2,8" "4,8" "4,1" "6,4" "8,0")
if ((quick)); then chunk_counts=(2); luts=("4,8" "6,0"); fi

for model in "${!model_args[@]}"; do
    ctx=64
    n_layer=$("$anelm" info "${model_args[$model]%% *}" --json | grep -o '"n_layer": *[0-9]*' |
        grep -o '[0-9]*$')
    for chunks in "${chunk_counts[@]}"; do
        if ((chunks > n_layer)); then
            printf 'skip  %-44s %s\n' "$model-c$chunks" "$n_layer layers"
            continue
        fi
        check "$model-c$chunks" "$model" exact "${fp16[@]}" --ctx $ctx --batch 16 --chunks "$chunks"
        check "$model-c$chunks-argmax" "$model" exact "${fp16[@]}" --ctx $ctx --batch 16 \
            --chunks "$chunks" --argmax
    done
    check "$model-mono" "$model" exact "${fp16[@]}" --ctx $ctx --batch 16 --monolithic
    check "$model-mono-argmax" "$model" exact "${fp16[@]}" --ctx $ctx --batch 16 --monolithic \
        --argmax
    check "$model-c2-verify" "$model" exact "${fp16[@]}" --ctx $ctx --batch 16 --chunks 2 \
        --verify 8
    check "$model-mono-argmax-verify" "$model" exact "${fp16[@]}" --ctx $ctx --batch 16 \
        --monolithic --argmax --verify 8
    for lut in "${luts[@]}"; do
        check "$model-lut${lut/,/g}" "$model" runs --lut-ffn "$lut" --lut-head "$lut" --ctx $ctx \
            --batch 16 --chunks 2
    done
done
# Gemma 3 (window 8 in the tiny model): a context at the window needs no rotate functions.
prompt="the fox"
n_tokens=8
check "tiny-gemma3-ctx8" tiny-gemma3 exact "${fp16[@]}" --ctx 8 --batch 8 --chunks 2
check "tiny-gemma3-ctx8-mono" tiny-gemma3 exact "${fp16[@]}" --ctx 8 --batch 8 --monolithic

echo "$passed passed, $failed failed"
((failed == 0))
