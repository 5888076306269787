// The tokenizer of a GGUF file (llama.cpp's format) as the Hugging Face files
// that do the same: tokenizer.json, tokenizer_config.json and, for the ids
// that end generation, generation_config.json. anelm loads these texts, and
// `anelm convert X.gguf` writes them beside its packages.
//
// Read: tokenizer.ggml.model "gpt2" (byte-level BPE with the merges and the
// pre-tokenizer tokenizer.ggml.pre names, see gguf_pre_tokenizers.h) and
// "llama" (SentencePiece: pieces with scores and byte tokens, as a BPE with
// byte fallback whose merges come from the scores, see spm_merges.h). Token
// types: control and unknown tokens become special added tokens, user-defined
// ones added tokens that are not special (both are cut out of the raw text
// first, as llama.cpp does), unused ones are left out. Any other model, an
// unknown pre-tokenizer, or inconsistent metadata is an Error naming the file
// and the key.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "io/gguf.h"
#include "tokenizer/tokenizer.h"

namespace anelm {

struct GgufTokenizerFiles {
    std::string tokenizer_json;
    // BOS, EOS, UNK and PAD tokens, add_bos_token / add_eos_token, and
    // tokenizer.chat_template as chat_template when the file has one.
    std::string tokenizer_config_json;
    // bos_token_id, and eos_token_id: EOS with EOT and EOM (the ids that end a
    // turn). Empty when the file names none of them.
    std::string generation_config_json;
};

GgufTokenizerFiles gguf_tokenizer_files(const GgufFile& gguf);

// The tokenizer those files describe, loaded from memory.
std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& gguf);

// Writes tokenizer.json, tokenizer_config.json and (when not empty)
// generation_config.json into the existing folder dir; returns the names written.
std::vector<std::string> write_gguf_tokenizer_files(const GgufFile& gguf, const std::string& dir);

}  // namespace anelm
