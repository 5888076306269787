// What `anelm convert` writes, named and split the way ANEMLL's converter does
// so that its Python and Swift runners load the result unchanged
// (../shared/docs/research/anemll.md §1, §2, §10): file names, the layer
// chunks, the LM head's pieces.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "quant/quant_spec.h"

namespace anelm::anemll {

// The version of ANEMLL's output contract we follow; meta.yaml's
// model_info.version (Swift's runner switches to a legacy mode for 0.1.1).
inline constexpr std::string_view anemll_contract_version = "0.3.5";

struct ConvertLayout {
    std::string prefix = "llama";        // file name prefix
    std::string architecture = "llama";  // config.json's model_type, lower-case
    int64_t context_length = 512;        // KV cache length and causal mask width
    int64_t batch_size = 64;             // tokens per prefill call
    int n_chunks = 1;                    // transformer layer chunks (monolithic: 1)
    // Per component: none, or a LUT with its group size. ANEMLL has no name
    // for integer quantization, so only these two methods are accepted.
    quant::QuantChoice lut_embed, lut_ffn, lut_head;
    bool argmax_in_model = false;  // the LM head returns argmax_idx/argmax_val
    int split_lm_head = 8;         // LM head pieces, each of lm_head_chunk_sizes[0] rows
    int64_t vocab_size = 0;
    std::vector<int64_t> lm_head_chunk_sizes;  // ids per piece, summing to vocab_size
    bool monolithic = false;     // one {prefix}_monolithic_full package instead of the split
    float fp16_scale = 1;        // residual stream scale folded into the weights; 1: none
    int64_t sliding_window = 0;  // keys a sliding-window layer sees; 0: no such layers
    bool single_cache = false;   // sliding-window model with one KV cache
    int64_t verify_tokens = 0;   // tokens of every package's verify function; 0: none
    // Gemma 4's per-layer table beside the packages, at 16 or 8 bits (the
    // embeddings take its rows as an input); 0: none, or inside the embeddings.
    int per_layer_bits = 0;

    bool operator==(const ConvertLayout&) const = default;

    // Stems, without extension: append ".mlpackage" or ".mlmodelc".
    std::string embeddings_stem() const;          // {prefix}_embeddings[_lutN]
    std::string lm_head_stem() const;             // {prefix}_lm_head[_lutN]
    std::string ffn_chunk_stem(int chunk) const;  // {prefix}_FFN_PF[_lutN]_chunk_XXofYY, 1-based
    std::string monolithic_stem() const;          // {prefix}_monolithic_full[_lutN] (FFN's LUT)
    // {prefix}_per_layer_embeddings_{f16,int8}.bin (per_layer_bits > 0).
    std::string per_layer_table_file() const;
    // Every package, in the order a runner uses them (embeddings, chunks, LM
    // head; or the monolithic one).
    std::vector<std::string> package_stems() const;
    // The chunks' (or monolithic model's) functions: infer and prefill, with
    // their rotate variants when the context is longer than the sliding window
    // (the runners call them from the window's length on), and verify.
    std::vector<std::string> function_names() const;
    bool rotates() const { return sliding_window > 0 && context_length > sliding_window; }

    // Throws Error "{what}: field: ..." for values the runners cannot use.
    void check(std::string_view what) const;
};

// A verify function's tokens: 0 (none), or 2 up to the context.
inline bool valid_verify_tokens(int64_t tokens, int64_t context_length) {
    return tokens == 0 || (tokens >= 2 && tokens <= context_length);
}

inline std::string package_name(std::string_view stem) {
    return std::string(stem) + ".mlpackage";
}
inline std::string compiled_name(std::string_view stem) {
    return std::string(stem) + ".mlmodelc";
}

// "_lut4" for a LUT, "" for none (file names carry the bits only).
std::string lut_suffix(const quant::QuantChoice& lut);

// ANEMLL's default prefix per model_type: qwen25 for qwen2, qwen for other
// qwen*, gemma3 for gemma3*, llama otherwise.
std::string default_prefix(std::string_view model_type);
// LM head pieces: 16 for qwen* and gemma*, 8 otherwise.
int lm_head_split(std::string_view model_type);
// The vocabulary ids each piece holds: ceil(vocab / n) for every piece but the
// last, which holds the rest. Every piece's output has ceil(vocab / n) rows (the
// last one padded with logits that never win), because AnemllCore maps a
// piece's index i to piece * rows + i. Rows are rounded up to a multiple of
// `align` (the head's LUT group, so that every piece starts a group). Fewer
// than n pieces when n does not fit (a vocabulary of 17 in 16 pieces of 2 is 9
// pieces). ANEMLL's LLaMA path uses vocab / 8 for every piece and so drops a
// non-divisible tail; we never drop one.
std::vector<int64_t> lm_head_chunk_sizes(int64_t vocab, int n, int64_t align = 1);
// Rows of every piece's output: ceil(vocab / n), rounded up to a multiple of align.
int64_t lm_head_piece_rows(int64_t vocab, int n, int64_t align = 1);

// A layout with ANEMLL's defaults for this model: prefix, split and pieces, the
// pieces' rows a multiple of the head's LUT group (lut_head is kept in the layout).
ConvertLayout default_layout(std::string_view model_type, int64_t vocab,
                             const quant::QuantChoice& lut_head = {});

struct LayerRange {
    int64_t begin = 0, end = 0;  // layers [begin, end)
    bool operator==(const LayerRange&) const = default;
};
// Balanced: every chunk gets n_layer / n_chunks layers, the first
// n_layer % n_chunks one more.
std::vector<LayerRange> layer_ranges(int64_t n_layer, int n_chunks);

// The smallest chunk count whose largest chunk fits max_chunk_bytes, with the
// chunks split as layer_ranges does; the first and last chunks carry extra
// bytes (both, when there is one chunk). Throws Error when even one layer per
// chunk does not fit.
int auto_chunk_count(std::span<const uint64_t> layer_bytes, uint64_t first_chunk_extra_bytes,
                     uint64_t last_chunk_extra_bytes, uint64_t max_chunk_bytes);

}  // namespace anelm::anemll
