// The tokenizer.* metadata of a GGUF file, read and checked: the vocabulary,
// its token types, scores or merges, the special ids and the flags, with
// llama.cpp's defaults for what is absent. Errors are one line naming the file
// and the key.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "io/gguf.h"
#include "tokenizer/gguf_pre_tokenizers.h"

namespace anelm {

// tokenizer.ggml.token_type values, numbered as llama.cpp numbers them.
enum class GgufTokenType : int32_t {
    undefined = 0,
    normal = 1,
    unknown = 2,
    control = 3,
    user_defined = 4,
    unused = 5,
    byte = 6,
};

struct GgufVocab {
    bool byte_level = false;  // "gpt2" (byte-level BPE); else "llama" (SentencePiece)
    std::vector<std::string> tokens;
    std::vector<GgufTokenType> types;
    std::vector<float> scores;  // "llama" only
    // "gpt2" only: merges in rank order, halves as they are in tokens.
    std::vector<std::pair<std::string_view, std::string_view>> merges;
    GgufPreTokenizer pre;  // "gpt2" only
    // Ids, -1 when there is none.
    int32_t bos = -1, eos = -1, unk = -1, pad = -1, eot = -1, eom = -1;
    bool add_bos = false, add_eos = false;
    // "llama" only: a space before the text at the start and after a token cut out of it.
    bool add_space_prefix = true;
};

// The merges' halves point into gguf's mapping, which must outlive the result.
GgufVocab read_gguf_vocab(const GgufFile& gguf);

}  // namespace anelm
