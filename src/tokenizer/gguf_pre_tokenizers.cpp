#include "tokenizer/gguf_pre_tokenizers.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <vector>

namespace anelm {

namespace {

using ordered_json = nlohmann::ordered_json;

// GPT-2's pattern as llama.cpp writes it; Hugging Face's adds "|\s+", which
// changes nothing when the gaps between matches are kept as pieces.
constexpr const char* gpt2_regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S))";
// Llama 3's and Qwen2's patterns as their tokenizer.json files hold them
// (llama.cpp spells the case-insensitive contractions out, to the same effect).
constexpr const char* llama3_regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr const char* qwen2_regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// llama.cpp cuts with each regex in turn, keeping matches and the text between
// them as pieces: Hugging Face's Split with "Isolated".
ordered_json split(const char* regex) {
    return {{"type", "Split"},
            {"pattern", {{"Regex", regex}}},
            {"behavior", "Isolated"},
            {"invert", false}};
}

ordered_json byte_level(bool trim_offsets, bool use_regex) {
    return {{"type", "ByteLevel"},
            {"add_prefix_space", false},
            {"trim_offsets", trim_offsets},
            {"use_regex", use_regex}};
}

ordered_json sequence(std::vector<ordered_json> parts) {
    return {{"type", "Sequence"}, {"pretokenizers", std::move(parts)}};
}

struct Named {
    std::vector<std::string_view> names;
    GgufPreTokenizer (*make)();
};

const Named known[] = {
    {{"default"},
     [] {
         GgufPreTokenizer p;
         p.pre_tokenizer =
             sequence({split(R"([\p{P}\$\+<=>\^~\|]+)"), split(gpt2_regex), split(R"(\p{N}+)"),
                       split("[0-9][0-9][0-9]"), byte_level(true, false)});
         return p;
     }},
    {{"gpt-2"},
     [] {
         GgufPreTokenizer p;
         p.pre_tokenizer = byte_level(true, true);
         return p;
     }},
    {{"llama3", "llama-v3", "llama-bpe", "lfm2"},
     [] {
         GgufPreTokenizer p;
         p.pre_tokenizer = sequence({split(llama3_regex), byte_level(true, false)});
         p.ignore_merges = true;
         p.add_bos = true;
         return p;
     }},
    {{"qwen2", "deepseek-r1-qwen"},
     [] {
         GgufPreTokenizer p;
         // Hugging Face's Qwen files compose Unicode first; llama.cpp does not.
         p.normalizer = {{"type", "NFC"}};
         p.pre_tokenizer = sequence({split(qwen2_regex), byte_level(false, false)});
         p.clean_spaces = false;
         return p;
     }},
    {{"smollm"},
     [] {
         GgufPreTokenizer p;
         // Every digit alone, then GPT-2's pattern.
         p.pre_tokenizer = sequence({split(R"(\p{N})"), byte_level(true, true)});
         p.clean_spaces = false;
         return p;
     }},
};

}  // namespace

std::optional<GgufPreTokenizer> gguf_pre_tokenizer(std::string_view name) {
    if (name.empty()) name = "default";
    for (const Named& n : known)
        for (std::string_view alias : n.names)
            if (alias == name) return n.make();
    return std::nullopt;
}

std::string gguf_pre_tokenizer_names() {
    std::vector<std::string_view> all;
    for (const Named& n : known) all.insert(all.end(), n.names.begin(), n.names.end());
    return fmt::format("{}", fmt::join(all, ", "));
}

}  // namespace anelm
