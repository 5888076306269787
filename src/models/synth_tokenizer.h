// What differs between families in the files a synth preset writes around its
// weights: special tokens and where they sit, the pre-tokenizer split, the chat
// template, the end-of-sequence tokens and the suggested sampling settings.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace anelm {

struct SynthSpecialToken {
    std::string content;  // empty: a reserved slot, named by the writer
    bool special = true;
};

struct SynthTokenizer {
    // The family's tokens at ids n_vocab_bpe, n_vocab_bpe + 1, ...; every later id
    // up to n_vocab is a reserved special token.
    std::vector<SynthSpecialToken> specials;
    std::string split_regex;                  // the Split pre-tokenizer's pattern
    bool nfc = false;                         // NFC normaliser
    bool add_bos = false;                     // the post-processor prepends bos
    bool ignore_merges = false;               // a piece found whole in the vocabulary is one token
    std::string config_bos;                   // config.json bos_token_id
    std::string bos;                          // tokenizer_config's bos_token; empty: none
    std::string eos;                          // tokenizer_config's eos_token
    std::string pad;                          // empty: none
    std::vector<std::string> config_eos;      // config.json eos_token_id
    std::vector<std::string> generation_eos;  // generation_config.json eos_token_id
    std::string chat_template;
    std::string tokenizer_class;
    // generation_config.json's sampling settings; 0 leaves top_k out, 1 repetition_penalty.
    double temperature = 1.0;
    double top_p = 1.0;
    int top_k = 0;
    double repetition_penalty = 1.0;
};

// The Llama 3 tokenizer's split pattern, which Gemma's and LFM2's synthetic
// tokenizers use too. Qwen2's differs in how many digits make one piece.
inline constexpr std::string_view llama3_split =
    R"re((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)re";

// The tokenizers other families build on or reuse: Qwen2.5's (Qwen3's adds to
// it), Qwen3's (Qwen3.5) and Gemma 3's (Gemma 4).
const SynthTokenizer& qwen2_synth_tokenizer();
const SynthTokenizer& qwen3_synth_tokenizer();
const SynthTokenizer& gemma3_synth_tokenizer();

}  // namespace anelm
