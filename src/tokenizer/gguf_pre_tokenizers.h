// The pre-tokenizers that GGUF's tokenizer.ggml.pre names for byte-level BPE
// vocabularies ("gpt2" model), as the tokenizer.json parts that do the same
// (Hugging Face's own where a model family has one). The regexes and flags are
// those of llama.cpp's src/llama-vocab.cpp for each name.
#pragma once

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <string_view>

namespace anelm {

struct GgufPreTokenizer {
    nlohmann::ordered_json normalizer;     // null: none
    nlohmann::ordered_json pre_tokenizer;  // ends with ByteLevel
    bool ignore_merges = false;            // a word that is a whole token is that token
    bool add_bos = false;      // llama.cpp's default when tokenizer.ggml.add_bos_token is absent
    bool clean_spaces = true;  // transformers' clean_up_tokenization_spaces
};

// The pre-tokenizer of a tokenizer.ggml.pre value (empty: llama.cpp's
// "default"); nullopt when anelm does not know the name.
std::optional<GgufPreTokenizer> gguf_pre_tokenizer(std::string_view name);

// The names gguf_pre_tokenizer knows, for error messages.
std::string gguf_pre_tokenizer_names();

}  // namespace anelm
