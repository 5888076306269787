// tokenizer.json (a byte-level BPE in the Hugging Face tokenizers format) and
// tokenizer_config.json.
#include <fmt/format.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "models/model_family.h"
#include "synth/byte_bpe.h"
#include "synth/hf_json.h"
#include "synth/special_tokens.h"

namespace anelm::synth {

namespace {

using nlohmann::json;
using nlohmann::ordered_json;

// The BPE part of the vocabulary, by id: the 256 byte tokens in code point order
// of their stand-ins (as GPT-2 numbers them), the learnt tokens, then unused
// entries up to n_vocab_bpe, which no merge reaches.
std::vector<std::string> bpe_vocab(int64_t n_vocab_bpe, const BpeMerges& bpe) {
    std::vector<std::string> vocab(byte_chars().begin(), byte_chars().end());
    std::sort(vocab.begin(), vocab.end(), [](const std::string& a, const std::string& b) {
        return a.size() != b.size() ? a.size() < b.size() : a < b;  // UTF-8: longer is higher
    });
    vocab.insert(vocab.end(), bpe.tokens.begin(), bpe.tokens.end());
    while (static_cast<int64_t>(vocab.size()) < n_vocab_bpe)
        vocab.push_back(fmt::format("<unused_{}>", vocab.size()));
    return vocab;
}

ordered_json byte_level(bool add_prefix_space, bool trim_offsets, bool use_regex) {
    return {{"type", "ByteLevel"},
            {"add_prefix_space", add_prefix_space},
            {"trim_offsets", trim_offsets},
            {"use_regex", use_regex}};
}

ordered_json post_processor(const SynthTokenizer& family, int32_t bos_id) {
    if (!family.add_bos) return byte_level(false, false, false);
    auto special = [&](int type_id) {
        return ordered_json{{"SpecialToken", {{"id", family.bos}, {"type_id", type_id}}}};
    };
    auto sequence = [](const char* id, int type_id) {
        return ordered_json{{"Sequence", {{"id", id}, {"type_id", type_id}}}};
    };
    ordered_json bos_entry = {{"id", family.bos}, {"ids", {bos_id}}, {"tokens", {family.bos}}};
    ordered_json templ = {
        {"type", "TemplateProcessing"},
        {"single", {special(0), sequence("A", 0)}},
        {"pair", {special(0), sequence("A", 0), special(1), sequence("B", 1)}},
        {"special_tokens", {{family.bos, bos_entry}}},
    };
    return {{"type", "Sequence"}, {"processors", {byte_level(true, false, true), templ}}};
}

// The vocabulary object written by hand: ordered_json's lookups are linear, and
// the real presets have over a hundred thousand entries.
std::string vocab_text(const std::vector<std::string>& vocab, const std::string& indent) {
    std::string out = "{";
    for (size_t id = 0; id < vocab.size(); ++id) {
        out += id == 0 ? "\n" : ",\n";
        out += fmt::format("{}  {}: {}", indent, json(vocab[id]).dump(), id);
    }
    out += "\n" + indent + "}";
    return out;
}

}  // namespace

std::string tokenizer_json(const SynthPreset& preset) {
    const SynthTokenizer& family = model_family(preset.spec.arch)->synth_tokenizer();
    const int64_t n_bpe = preset.n_vocab_bpe;
    const BpeMerges bpe = learn_merges(builtin_corpus(), static_cast<size_t>(n_bpe - 256));

    ordered_json added = ordered_json::array();
    const auto specials = special_tokens(family, preset.spec.n_vocab - n_bpe);
    for (size_t i = 0; i < specials.size(); ++i) {
        added.push_back({{"id", n_bpe + static_cast<int64_t>(i)},
                         {"content", specials[i].content},
                         {"single_word", false},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"special", specials[i].special}});
    }
    ordered_json merges = ordered_json::array();
    for (const auto& [a, b] : bpe.merges) merges.push_back(a + " " + b);

    const std::string placeholder = "@vocab@";
    ordered_json doc = {
        {"version", "1.0"},
        {"truncation", nullptr},
        {"padding", nullptr},
        {"added_tokens", added},
        {"normalizer", family.nfc ? ordered_json{{"type", "NFC"}} : ordered_json(nullptr)},
        {"pre_tokenizer",
         {{"type", "Sequence"},
          {"pretokenizers",
           {{{"type", "Split"},
             {"pattern", {{"Regex", family.split_regex}}},
             {"behavior", "Isolated"},
             {"invert", false}},
            byte_level(false, false, false)}}}},
        {"post_processor", post_processor(family, preset.spec.bos_token_id)},
        {"decoder", byte_level(true, true, true)},
        {"model",
         {{"type", "BPE"},
          {"dropout", nullptr},
          {"unk_token", nullptr},
          {"continuing_subword_prefix", nullptr},
          {"end_of_word_suffix", nullptr},
          {"fuse_unk", false},
          {"byte_fallback", false},
          {"ignore_merges", family.ignore_merges},
          {"vocab", placeholder},
          {"merges", merges}}},
    };
    std::string text = doc.dump(2);
    const std::string quoted = json(placeholder).dump();
    const size_t at = text.find(quoted);
    if (at == std::string::npos) fail("synth: tokenizer.json has no vocabulary slot");
    text.replace(at, quoted.size(), vocab_text(bpe_vocab(n_bpe, bpe), "    "));
    return text + "\n";
}

std::string tokenizer_config_json(const SynthPreset& preset) {
    const SynthTokenizer& family = model_family(preset.spec.arch)->synth_tokenizer();
    const int64_t n_bpe = preset.n_vocab_bpe;
    json decoder = json::object();
    json additional = json::array();
    const auto specials = special_tokens(family, preset.spec.n_vocab - n_bpe);
    for (size_t i = 0; i < specials.size(); ++i) {
        const auto& t = specials[i];
        decoder[std::to_string(n_bpe + static_cast<int64_t>(i))] = {
            {"content", t.content}, {"lstrip", false},      {"normalized", false},
            {"rstrip", false},      {"single_word", false}, {"special", t.special}};
        const bool named = i < family.specials.size() && !family.specials[i].content.empty();
        if (named && t.special && t.content != family.bos && t.content != family.eos &&
            t.content != family.pad)
            additional.push_back(t.content);
    }
    auto token_or_null = [](const std::string& t) { return t.empty() ? json(nullptr) : json(t); };
    json j = {
        {"add_bos_token", family.add_bos},
        {"added_tokens_decoder", decoder},
        {"additional_special_tokens", additional},
        {"bos_token", token_or_null(family.bos)},
        {"chat_template", family.chat_template},
        {"clean_up_tokenization_spaces", false},
        {"eos_token", family.eos},
        {"model_max_length", preset.spec.n_ctx_train},
        {"pad_token", token_or_null(family.pad)},
        {"tokenizer_class", family.tokenizer_class},
        {"unk_token", nullptr},
    };
    return j.dump(2) + "\n";
}

}  // namespace anelm::synth
