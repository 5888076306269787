// Hugging Face's own tokenizers (the npm binding of the Rust crate) on the same
// text as tokenizer_bench: see README.md in this folder.
//
//   node hf_encode.js TEXT_FILE TOKENIZER_JSON [ITERATIONS] [whole|lines|paragraphs]
//
// "whole" encodes the text as one string; "lines" line by line (each line with
// its newline) and "paragraphs" in runs of 64 lines, one call after another.
const path = require('path');
const fs = require('fs');
const { performance } = require('perf_hooks');

const hfDir = process.env.HF_TOKENIZERS_DIR || '/work/ext/hf-tok';
const { Tokenizer } = require(path.join(hfDir, 'node_modules', 'tokenizers'));

function cpuMs() {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1000;
}

(async () => {
    const [textFile, tokenizerFile, iterArg, modeArg] = process.argv.slice(2);
    const text = fs.readFileSync(textFile, 'utf8');
    const iterations = Number(iterArg || 20);
    const mode = modeArg || 'whole';
    const lines = text.split(/(?<=\n)/);
    const pieces = mode === 'whole' ? [text] : [];
    const per = mode === 'lines' ? 1 : 64;
    if (mode !== 'whole')
        for (let i = 0; i < lines.length; i += per) pieces.push(lines.slice(i, i + per).join(''));
    const encodeAll = async () => {
        let n = 0;
        for (const p of pieces) n += (await tok.encode(p, null, { addSpecialTokens: false })).getIds().length;
        return n;
    };

    let t0 = performance.now();
    const tok = Tokenizer.fromFile(tokenizerFile);
    const loadMs = performance.now() - t0;

    const nTokens = await encodeAll();  // also fills the word cache
    t0 = performance.now();
    const c0 = cpuMs();
    for (let i = 0; i < iterations; ++i) await encodeAll();
    const wallMs = (performance.now() - t0) / iterations;
    const cpu = (cpuMs() - c0) / iterations;
    const mib = Buffer.byteLength(text, 'utf8') / (1 << 20);
    console.log(JSON.stringify({
        tokenizer: tokenizerFile, mode, tokens: nTokens, load_ms: +loadMs.toFixed(1),
        encode_ms_wall: +wallMs.toFixed(2), encode_ms_cpu: +cpu.toFixed(2),
        mib_per_s_wall: +(mib / (wallMs / 1000)).toFixed(2),
        mib_per_s_cpu: +(mib / (cpu / 1000)).toFixed(2)}));
})();
