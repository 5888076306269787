// llama2.c's tokenizer.bin as the Hugging Face files ANEMLL's runners load
// (transformers' AutoTokenizer, swift-transformers): a Llama-2 style
// tokenizer.json and its tokenizer_config.json.
//
// The tokenizer.json is a SentencePiece-style BPE with byte fallback, as Hugging
// Face's own Llama-2 files: the vocabulary with run.c's spaces turned back into
// "▁", and one merge per split of a piece into two pieces, ranked by the merged
// piece's score (highest first; ties by id). Merging lowest rank first then
// picks the pair run.c picks (the highest-scoring concatenation). The two differ
// only where run.c breaks a tie between different pairs by position: equal
// scores of different pieces, or one piece reachable by two overlapping splits
// ("a"+"aa" and "aa"+"a"); trained vocabularies have neither in practice.
// Text that is not valid UTF-8 has no Hugging Face form at all.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace anelm {

struct Llama2cHfFiles {
    std::string tokenizer_json;
    std::string tokenizer_config_json;
};

// The two files' text for the tokenizer.bin at `path`. model_max_length goes
// into tokenizer_config.json. Throws Error naming the file and the token when
// the file has no Hugging Face form (byte tokens not at ids 3..258, a piece that
// is not UTF-8, two pieces alike once spaces are "▁").
Llama2cHfFiles llama2c_to_hf(const std::string& path, int64_t model_max_length);

// Writes tokenizer.json and tokenizer_config.json into the folder `dir` (which
// must exist) and returns those two names.
std::vector<std::string> write_llama2c_hf_files(const std::string& path, const std::string& dir,
                                                int64_t model_max_length);

}  // namespace anelm
