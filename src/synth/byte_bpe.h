// A small byte-level BPE vocabulary (GPT-2 / Qwen / Llama 3 style) learnt from
// built-in English text, for the tokenizer.json of synthetic models.
#pragma once

#include <array>
#include <string>
#include <string_view>
#include <vector>

namespace anelm::synth {

// The UTF-8 of GPT-2's printable stand-in for each byte (a space is "Ġ", U+0120).
const std::array<std::string, 256>& byte_chars();

// A byte string in those stand-ins.
std::string to_byte_chars(std::string_view bytes);

// Pieces as the Qwen2 / Llama 3 split pattern cuts ASCII text: words with their
// leading space, contractions, digits, punctuation runs and whitespace.
std::vector<std::string> split_pieces(std::string_view text);

struct BpeMerges {
    std::vector<std::pair<std::string, std::string>> merges;  // in rank order
    std::vector<std::string> tokens;  // the new tokens, in the order they were made
};

// Learns merges from text until max_tokens new tokens exist or no pair occurs twice.
// Ties go to the pair whose strings sort first, so the result is the same everywhere.
BpeMerges learn_merges(std::string_view text, size_t max_tokens);

std::string_view builtin_corpus();

}  // namespace anelm::synth
