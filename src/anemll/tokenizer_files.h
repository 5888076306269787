// The tokenizer files a runner of a converted directory needs, copied from the
// Hugging Face model folder: ANEMLL's runners load the tokenizer from the
// folder of meta.yaml (swift-transformers also reads config.json there).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace anelm::anemll {

// The names copied when present, in this order.
std::span<const std::string_view> tokenizer_file_names();

// The vocab.json and merges.txt of a slow (Python) byte-level BPE tokenizer, as
// Hugging Face writes them: model.vocab as a JSON object in id order, and
// "#version: 0.2" then one "left right" line per merge in rank order.
struct BpeVocabFiles {
    std::string vocab_json, merges_txt;
};

// Those files from a tokenizer.json whose model is BPE with a ByteLevel
// pre-tokenizer or decoder (Qwen, Llama 3); nullopt for any other tokenizer.
// Throws Error naming the file for bad JSON or a merge a line cannot hold.
std::optional<BpeVocabFiles> byte_level_bpe_files(const std::string& tokenizer_json);

// Throws Error naming model_dir when it has neither tokenizer.json nor
// tokenizer.model, one of which a runner of the converted folder needs.
void check_tokenizer_source(const std::string& model_dir);

// Copies every present one of tokenizer_file_names() from model_dir into
// dest_dir (which must exist), replacing files of the same name. When
// vocab.json or merges.txt is absent and tokenizer.json is a byte-level BPE,
// writes the absent ones from it: ANEMLL's chat.py asks for a slow tokenizer,
// which reads those two. Returns the names written, in the order of
// tokenizer_file_names(). Throws Error as check_tokenizer_source does, and
// naming the file when a copy fails.
std::vector<std::string> copy_tokenizer_files(const std::string& model_dir,
                                              const std::string& dest_dir);

}  // namespace anelm::anemll
