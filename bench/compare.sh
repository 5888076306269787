#!/usr/bin/env bash
# Speed of `anelm bench` beside llama.cpp's `llama-bench` on the same model shapes, same sitting.
#
#   bench/compare.sh LLAMA_BUILD WORK
#
# LLAMA_BUILD is an existing llama.cpp build folder (bin/llama-bench, bin/llama-quantize); this
# script never builds llama.cpp. WORK receives the random-weight models (several GiB); files
# already there are reused. Settings from the environment:
#   ANELM    anelm program             (default: build/anelm beside this script's repository)
#   LLAMA_CPP llama.cpp checkout, for gguf-py (default: the source folder of LLAMA_BUILD)
#   PRESETS  anelm synth presets        (default: "qwen3-0.6b llama-3.2-1b")
#   QUANTS   llama-quantize types       (default: "Q8_0 Q4_0"; F16 is always measured)
#   ANELM_QUANTS anelm --quant specs     (default: "int8 lut4"; quantized at load)
#   THREADS, N_PROMPT, N_GEN, REPS      (default: 2, 512, 128, 3)
#   PYTHON   with numpy                 (default: /usr/bin/python3)
# Prints each tool's own table to stderr, then one markdown table of tokens per second.
set -euo pipefail

if [[ $# -ne 2 ]]; then
    sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//' >&2
    exit 2
fi
llama_build=$(realpath "$1")
work=$2
here=$(dirname "$(realpath "$0")")
anelm=${ANELM:-$here/../build/anelm}
presets=${PRESETS:-qwen3-0.6b llama-3.2-1b}
quants=${QUANTS-Q8_0 Q4_0}
anelm_quants=${ANELM_QUANTS-int8 lut4}
threads=${THREADS:-2}
n_prompt=${N_PROMPT:-512}
n_gen=${N_GEN:-128}
reps=${REPS:-3}
python=${PYTHON:-/usr/bin/python3}
llama_cpp=${LLAMA_CPP:-$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$llama_build/CMakeCache.txt")}

for tool in "$llama_build/bin/llama-bench" "$llama_build/bin/llama-quantize" "$anelm"; do
    [[ -x $tool ]] || { echo "compare.sh: $tool: not found or not executable" >&2; exit 1; }
done
mkdir -p "$work"
results=$work/results.jsonl
: > "$results"

# Appends {"model", "weights", "engine", "pp", "tg"} lines (tokens per second, mean and sd).
record_llama() {  # preset weights gguf
    "$llama_build/bin/llama-bench" -m "$3" -p "$n_prompt" -n "$n_gen" -t "$threads" -r "$reps" \
        -o json -oe md |
        "$python" -c '
import json, sys
runs = json.load(sys.stdin)
row = {"model": sys.argv[1], "weights": sys.argv[2], "engine": "llama.cpp"}
for r in runs:
    key = "pp" if r["n_gen"] == 0 else "tg"
    row[key] = [r["avg_ts"], r["stddev_ts"]]
print(json.dumps(row))' "$1" "$2" >> "$results"
}

record_anelm() {  # preset folder weights [--quant SPEC]
    "$anelm" bench "$2" -p "$n_prompt" -n "$n_gen" -t "$threads" -r "$reps" --json "${@:4}" |
        "$python" -c '
import json, sys
r = json.load(sys.stdin)
print(json.dumps({"model": sys.argv[1], "weights": sys.argv[2], "engine": "anelm",
                  "pp": [r["pp_tok_s"], r["pp_tok_s_sd"]], "tg": [r["tg_tok_s"], r["tg_tok_s_sd"]]}))
' "$1" "$3" >> "$results"
}

for preset in $presets; do
    folder=$work/$preset
    f16=$work/$preset-F16.gguf
    [[ -d $folder ]] || "$anelm" synth "$preset" -o "$folder" --dtype f16
    [[ -f $f16 ]] || "$python" "$here/make_gguf.py" "$folder" -o "$f16" --llama-cpp "$llama_cpp"
    for q in $quants; do
        out=$work/$preset-$q.gguf
        if [[ ! -f $out ]]; then
            "$llama_build/bin/llama-quantize" "$f16" "$out.tmp" "$q" > "$out.log" 2>&1
            mv "$out.tmp" "$out"
        fi
    done
    record_llama "$preset" F16 "$f16"
    record_anelm "$preset" "$folder" F16
    for q in $quants; do record_llama "$preset" "$q" "$work/$preset-$q.gguf"; done
    for q in $anelm_quants; do record_anelm "$preset" "$folder" "$q" --quant "$q"; done
done

"$python" - "$results" "$n_prompt" "$n_gen" "$threads" <<'EOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1])]
pp, tg, threads = f"pp{sys.argv[2]}", f"tg{sys.argv[3]}", sys.argv[4]
print(f"\n| model | weights | engine | threads | {pp} tok/s | {tg} tok/s |")
print("| --- | --- | --- | ---: | ---: | ---: |")
for r in rows:
    cell = lambda v: f"{v[0]:.2f} ± {v[1]:.2f}"
    print(f"| {r['model']} | {r['weights']} | {r['engine']} | {threads} "
          f"| {cell(r['pp'])} | {cell(r['tg'])} |")
EOF
