// The catalog of lint rules. Facts cite ../shared/docs/ane-llm-notes.txt by
// its section and topic, or a research note under ../shared/docs/research/.
#include <array>

#include "analysis/lint.h"
#include "base/error.h"

namespace anelm {

namespace {

using enum LintSeverity;

constexpr std::array<LintRule, 19> rules{{
    {"ANE001", error, "state dimension neither a power of two nor a multiple of 32",
     "pad the dimension to a power of two or a multiple of 32 (head_dim 80 -> 128, a context "
     "of 80 -> 96)",
     "ane-llm-notes.txt, 'Core ML compile errors and KV state': 'Unable to compute the "
     "prediction using ML Program' when a state dimension is not a power of two (80 padded to "
     "128)"},
    {"ANE002", error, "more than one state in a function",
     "concatenate the per-layer K and V caches into one state; carry any other state (conv "
     "windows, recurrent matrices) as function inputs and outputs",
     "ane-llm-notes.txt, 'Core ML compile errors and KV state': too many states, fixed by "
     "concatenating KV (56 -> 2); MLState error -14 on Gemma 4 E2B with two shapes, status 0x1d "
     "with two states on LFM2.5; research/ane-peers-2026.md section 4: LFM2.5's two MLStates "
     "failed at predict time, KV as the MLState with the conv state as I/O worked; "
     "research/anemll.md section 9: 3+ StateTypes per chunk fail at predict time"},
    {"ANE003", error, "per-block quantization (blocks smaller than the input dimension)",
     "quantize per channel or per tensor, or use LUT palettization (constexpr_lut_to_dense)",
     "ane-llm-notes.txt, 'ANEMLL conversion': the ANE has no block quantization; "
     "research/peers.md: per-block quantization is among the reasons ops fall back"},
    {"ANE004", error, "gelu op",
     "write GELU from primitive ops: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))",
     "ane-llm-notes.txt, 'FP16 numerics and silent failures': Orion direct-MIL, gelu rejected"},
    {"ANE005", error, "scaled_dot_product_attention with a mask",
     "write attention out: matmul, add the mask, softmax, matmul",
     "ane-llm-notes.txt, 'FP16 numerics and silent failures': Orion direct-MIL, the SDPA "
     "causal mask is silently ignored"},
    {"ANE006", warning, "concat beyond its limits",
     "keep each concatenated axis under 32768; update caches with slice_update, not by "
     "shifting them with concat",
     "ane-llm-notes.txt, 'FP16 numerics and silent failures': Orion direct-MIL, concat and "
     "32K-channel conv rejected; research/anemll.md section 9: shift-by-concat cache updates "
     "hit ANE compile error -14"},
    {"ANE007", error, "conv with 32768 or more input or output channels",
     "split the conv along its output channels (as the LM head is split into pieces)",
     "ane-llm-notes.txt, 'FP16 numerics and silent failures': Orion direct-MIL, 32K-channel "
     "conv rejected"},
    {"ANE008", error, "int64 tensor", "use int32 for indices, positions and shapes",
     "research/anemll.md section 9: int64 state indices break ANE placement; research/peers.md: "
     "int64 indices are among the reasons ops fall back"},
    {"ANE009", error, "dynamic shape",
     "give every dimension a fixed size, or enumerate the shapes an input may take",
     "ane-llm-notes.txt, 'Core AI': a static export shape runs on the ANE, a dynamic one on "
     "the GPU; research/coreml-format.md: dynamic reshapes push layers off the ANE"},
    {"ANE010", error, "weight file over the target's per-file limit",
     "convert with more chunks (--chunks) or a smaller LUT so each file fits",
     "ane-llm-notes.txt, 'ANEMLL conversion': iOS files over 1 GB may fail; "
     "research/anemll.md sections 4 and 7: about 1 GB on iOS, 2 GB on macOS, larger exports "
     "are non-functional"},
    {"ANE011", error, "pow on a possibly negative input",
     "square with mul(x, x), or take pow of abs(x)",
     "ane-llm-notes.txt, 'FP16 numerics and silent failures': Llama-3.2-1B emitted only "
     "newlines until the RMSNorm pow became mul(x, x)"},
    {"ANE012", error, "mask built from a type's lowest finite value",
     "mask with -inf (as ANEMLL's runners do) or a moderate value such as -1e4",
     "research/peers.md, FP16 overflow: finfo(float32).min mask sentinels turn into -inf and "
     "then NaN (coremltools PR #2669); a -1e9 mask overflows on the NPU; research/anemll.md "
     "section 9: -inf and -1e4 masks give identical softmax"},
    {"ANE013", error, "final norm outside the last chunk",
     "apply the final norm only in the chunk that holds the last layer",
     "ane-llm-notes.txt, 'ANEMLL conversion': Qwen3 multi-chunk garbage, the final RMSNorm "
     "must run only on the last chunk; research/anemll.md section 3"},
    {"ANE014", warning, "LUT on an embedding gather",
     "keep the embedding table fp16 (--lut-embed none)",
     "research/anemll.md section 2.1: LUT on the embeddings' gather produced constant output, "
     "so ANEMLL skips it"},
    {"ANE015", info, "op count and predicted dispatch overhead",
     "fewer layers per function (more chunks), fewer and larger ops (1x1 conv for linear "
     "layers)",
     "ane-llm-notes.txt, 'Bandwidth, SRAM, dispatch': dispatch ~0.095 ms per op (a 256x256 "
     "matmul takes 0.101 ms of which 0.006 compute)"},
    {"ANE016", error, "name that is not a MIL identifier",
     "rename it to match [A-Za-z_][A-Za-z0-9_@]* (model.model.kv_cache_0 -> "
     "model_model_kv_cache_0, as coremltools' sanitize_input_output_names does)",
     "research/coreml-format.md section 3.1: identifiers (function names, value names, "
     "attribute keys) must match [A-Za-z_][A-Za-z0-9_@]* (MIL.proto); Core ML's loader rejects "
     "the package otherwise"},
    {"ANE017", warning, "loaded ANE memory over the smallest device's budget",
     "load fewer functions at once, a smaller model, or a device with more memory; more chunks "
     "only help one chunk over the budget, not the total",
     "research/ane-peers-2026.md section 3 (Forge, FEEDBACK_ANE_MULTIFUNCTION_MEMORY.md): each "
     "loaded function of a multifunction package wires its own copy of the weights, a 0.69 GB "
     "chunk +1.05 GB with one function loaded and +2.09 GB with two (1.51x the weights per "
     "function); budget: anelm plan's for the target's smallest device (docs/plan.md)"},
    {"ANE018", error, "palettized or quantized weight on a depthwise conv",
     "keep the depthwise conv's taps fp16 (they are a few kilobytes)",
     "research/ane-peers-2026.md section 4 (LFM2.5): INT4 palettization of the depthwise conv "
     "fails on the ANE, and padding the conv to 16 taps produced garbage"},
    {"ANE019", warning, "context past the model's trained length",
     "convert with --ctx at most the trained length (meta.yaml's n_ctx_train), or use a model "
     "trained on the context you need",
     "the model's own config: max_position_embeddings (config.json), context_length (GGUF) or "
     "seq_len (llama2.c) is the longest sequence it was trained on; ane-llm-notes.txt, "
     "'Core AI': classic Core ML ANE models run 512-4K of context"},
}};

}  // namespace

std::string_view lint_severity_name(LintSeverity severity) {
    switch (severity) {
        case error:
            return "error";
        case warning:
            return "warning";
        case info:
            return "info";
    }
    return "?";
}

std::span<const LintRule> lint_rules() {
    return rules;
}

const LintRule& lint_rule(std::string_view id) {
    for (const LintRule& r : rules)
        if (r.id == id) return r;
    fail("lint: no rule {}", id);
}

LintTarget parse_lint_target(const std::string& text) {
    if (text == "macos15") return LintTarget::macos15;
    if (text == "ios18") return LintTarget::ios18;
    fail("--target: expected macos15 or ios18, got '{}'", text);
}

int lint_exit_code(std::span<const LintFinding> findings) {
    bool warned = false;
    for (const LintFinding& f : findings) {
        if (f.severity == error) return 1;
        if (f.severity == warning) warned = true;
    }
    return warned ? 3 : 0;
}

}  // namespace anelm
