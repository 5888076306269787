#include "tokenizer/gguf_vocab.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <limits>

#include "base/atomic_file.h"
#include "base/json_escape.h"
#include "tokenizer/gguf_vocab_read.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/spm_merges.h"

namespace anelm {

namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::string_view space_mark = "\xE2\x96\x81";  // "▁", SentencePiece's space

bool is_added(GgufTokenType t) {
    return t == GgufTokenType::control || t == GgufTokenType::unknown ||
           t == GgufTokenType::user_defined;
}

// Unused tokens stay out of the vocabulary (llama.cpp decodes them to nothing
// and never produces them), unless a special id names one.
std::vector<bool> vocab_members(const GgufVocab& v) {
    std::vector<bool> in(v.tokens.size());
    for (size_t i = 0; i < in.size(); ++i) in[i] = v.types[i] != GgufTokenType::unused;
    for (int32_t id : {v.bos, v.eos, v.unk, v.pad, v.eot, v.eom})
        if (id >= 0) in[id] = true;
    return in;
}

ordered_json replace(std::string_view from, std::string_view to) {
    return {{"type", "Replace"}, {"pattern", {{"String", from}}}, {"content", to}};
}

ordered_json byte_level_processor() {
    return {{"type", "ByteLevel"},
            {"add_prefix_space", false},
            {"trim_offsets", false},
            {"use_regex", false}};
}

// BOS and EOS around the text, as the flags say; null when neither is added.
ordered_json template_processor(const GgufVocab& v) {
    if (!v.add_bos && !v.add_eos) return nullptr;
    auto special = [&](int32_t id, int type_id) {
        return ordered_json{{"SpecialToken", {{"id", v.tokens[id]}, {"type_id", type_id}}}};
    };
    auto sequence = [](const char* name, int type_id) {
        return ordered_json{{"Sequence", {{"id", name}, {"type_id", type_id}}}};
    };
    // single: [BOS] A [EOS]; pair: the same for B after it, with type id 1.
    ordered_json single = ordered_json::array(), pair = ordered_json::array();
    for (int type_id = 0; type_id < 2; ++type_id) {
        ordered_json& out = type_id == 0 ? single : pair;
        if (v.add_bos) out.push_back(special(v.bos, type_id));
        out.push_back(sequence(type_id == 0 ? "A" : "B", type_id));
        if (v.add_eos) out.push_back(special(v.eos, type_id));
    }
    pair.insert(pair.begin(), single.begin(), single.end());
    ordered_json tokens = ordered_json::object();
    for (int32_t id : {v.add_bos ? v.bos : -1, v.add_eos ? v.eos : -1})
        if (id >= 0)
            tokens[v.tokens[id]] = {
                {"id", v.tokens[id]}, {"ids", {id}}, {"tokens", {v.tokens[id]}}};
    return {{"type", "TemplateProcessing"},
            {"single", single},
            {"pair", pair},
            {"special_tokens", tokens}};
}

// Everything but the model.
ordered_json tokenizer_head(const GgufVocab& v) {
    ordered_json added = ordered_json::array();
    for (size_t i = 0; i < v.tokens.size(); ++i) {
        if (!is_added(v.types[i])) continue;
        added.push_back({{"id", static_cast<int32_t>(i)},
                         {"content", v.tokens[i]},
                         {"single_word", false},
                         {"lstrip", false},
                         {"rstrip", false},
                         {"normalized", false},
                         {"special", v.types[i] != GgufTokenType::user_defined}});
    }
    ordered_json tok;
    tok["version"] = "1.0";
    tok["truncation"] = nullptr;
    tok["padding"] = nullptr;
    tok["added_tokens"] = std::move(added);
    if (v.byte_level) {
        tok["normalizer"] = v.pre.normalizer;
        tok["pre_tokenizer"] = v.pre.pre_tokenizer;
        ordered_json affixes = template_processor(v);
        tok["post_processor"] =
            affixes.is_null()
                ? byte_level_processor()
                : ordered_json{{"type", "Sequence"},
                               {"processors", {byte_level_processor(), std::move(affixes)}}};
        tok["decoder"] = byte_level_processor();
        return tok;
    }
    // SentencePiece: spaces are "▁", with one before the text after BOS or a
    // token cut out of it when add_space_prefix (Hugging Face normalizes each
    // stretch between added tokens on its own, so Prepend does exactly that).
    const ordered_json spaces = replace(" ", space_mark);
    tok["normalizer"] =
        v.add_space_prefix
            ? ordered_json{{"type", "Sequence"},
                           {"normalizers",
                            {{{"type", "Prepend"}, {"prepend", space_mark}}, spaces}}}
            : spaces;
    tok["pre_tokenizer"] = nullptr;
    tok["post_processor"] = template_processor(v);
    ordered_json decoders = {
        replace(space_mark, " "), {{"type", "ByteFallback"}}, {{"type", "Fuse"}}};
    if (v.add_space_prefix)
        decoders.push_back({{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}});
    tok["decoder"] = {{"type", "Sequence"}, {"decoders", std::move(decoders)}};
    return tok;
}

// The merges in rank order: SentencePiece's from the scores, byte-level BPE's as stored.
std::vector<std::pair<std::string_view, std::string_view>> merge_pairs(
    const GgufVocab& v, const std::vector<bool>& in_vocab) {
    if (v.byte_level) return v.merges;
    std::vector<std::string_view> texts(v.tokens.begin(), v.tokens.end());
    // Pieces that text can be made of: not control, unknown or byte tokens,
    // which are cut out of the text or stand for a byte that no piece covered.
    auto usable = [&](int32_t id) {
        const GgufTokenType t = v.types[id];
        return in_vocab[id] && (t == GgufTokenType::normal || t == GgufTokenType::user_defined);
    };
    std::vector<std::pair<std::string_view, std::string_view>> pairs;
    for (const PieceMerge& m :
         merges_by_score(texts, v.scores, usable, -std::numeric_limits<float>::infinity()))
        pairs.emplace_back(texts[m.left], texts[m.right]);
    return pairs;
}

std::string tokenizer_json(const GgufVocab& v) {
    const std::vector<bool> in_vocab = vocab_members(v);
    std::string out = tokenizer_head(v).dump(2);
    out.resize(out.size() - 2);  // reopen the object: drop "\n}"
    ordered_json fields;
    fields["type"] = "BPE";
    fields["dropout"] = nullptr;
    const bool has_unk = !v.byte_level && v.unk >= 0;
    fields["unk_token"] = has_unk ? ordered_json(v.tokens[v.unk]) : ordered_json(nullptr);
    fields["continuing_subword_prefix"] = nullptr;
    fields["end_of_word_suffix"] = nullptr;
    fields["fuse_unk"] = !v.byte_level;
    fields["byte_fallback"] = !v.byte_level && std::find(v.types.begin(), v.types.end(),
                                                         GgufTokenType::byte) != v.types.end();
    fields["ignore_merges"] = v.byte_level && v.pre.ignore_merges;
    out += ",\n  \"model\": {\n";
    for (const auto& [key, value] : fields.items())
        out += fmt::format("    \"{}\": {},\n", key, value.dump());

    // The two big members are written directly: a JSON DOM of 262k entries is slow.
    out += "    \"vocab\": {";
    bool first = true;
    for (size_t i = 0; i < v.tokens.size(); ++i) {
        if (!in_vocab[i]) continue;
        out += first ? "\n      " : ",\n      ";
        first = false;
        append_json_string(out, v.tokens[i]);
        char digits[16];
        out += ": ";
        out.append(digits, std::to_chars(digits, digits + sizeof digits, i).ptr);
    }
    out += "\n    },\n    \"merges\": [";
    const auto pairs = merge_pairs(v, in_vocab);
    // "left right" strings, the older form every reader knows, unless a half
    // holds a space; then [left, right] pairs.
    const bool as_pairs = std::any_of(pairs.begin(), pairs.end(), [](const auto& p) {
        return p.first.find(' ') != std::string_view::npos ||
               p.second.find(' ') != std::string_view::npos;
    });
    std::string joined;
    for (size_t k = 0; k < pairs.size(); ++k) {
        out += k == 0 ? "\n      " : ",\n      ";
        if (as_pairs) {
            out += '[';
            append_json_string(out, pairs[k].first);
            out += ", ";
            append_json_string(out, pairs[k].second);
            out += ']';
        } else {
            joined.assign(pairs[k].first).append(" ").append(pairs[k].second);
            append_json_string(out, joined);
        }
    }
    out += "\n    ]\n  }\n}\n";
    return out;
}

ordered_json token_or_null(const GgufVocab& v, int32_t id) {
    return id >= 0 ? ordered_json(v.tokens[id]) : ordered_json(nullptr);
}

std::string tokenizer_config_json(const GgufFile& gguf, const GgufVocab& v) {
    ordered_json c;
    c["add_bos_token"] = v.add_bos;
    c["add_eos_token"] = v.add_eos;
    c["bos_token"] = token_or_null(v, v.bos);
    if (const auto t = gguf.find_string("tokenizer.chat_template")) c["chat_template"] = *t;
    c["clean_up_tokenization_spaces"] = v.byte_level && v.pre.clean_spaces;
    c["eos_token"] = token_or_null(v, v.eos);
    // LlamaTokenizerFast rebuilds BOS/EOS from the flags above; legacy keeps
    // the tokenizer.json as written (a space after every special token).
    if (!v.byte_level) c["legacy"] = true;
    const std::optional<std::string> arch = gguf.find_string("general.architecture");
    if (arch)
        if (const auto ctx = gguf.find_int(*arch + ".context_length")) c["model_max_length"] = *ctx;
    c["pad_token"] = token_or_null(v, v.pad);
    c["tokenizer_class"] = v.byte_level ? "PreTrainedTokenizerFast" : "LlamaTokenizerFast";
    c["unk_token"] = token_or_null(v, v.unk);
    return c.dump(2) + "\n";
}

std::string generation_config_json(const GgufVocab& v) {
    std::vector<int32_t> eos;
    for (int32_t id : {v.eos, v.eot, v.eom})
        if (id >= 0 && std::find(eos.begin(), eos.end(), id) == eos.end()) eos.push_back(id);
    if (eos.empty() && v.bos < 0) return {};
    ordered_json g;
    if (v.bos >= 0) g["bos_token_id"] = v.bos;
    if (eos.size() == 1) g["eos_token_id"] = eos[0];
    if (eos.size() > 1) g["eos_token_id"] = eos;
    return g.dump(2) + "\n";
}

}  // namespace

GgufTokenizerFiles gguf_tokenizer_files(const GgufFile& gguf) {
    const GgufVocab v = read_gguf_vocab(gguf);
    return {tokenizer_json(v), tokenizer_config_json(gguf, v), generation_config_json(v)};
}

std::unique_ptr<Tokenizer> load_gguf_tokenizer(const GgufFile& gguf) {
    const GgufTokenizerFiles files = gguf_tokenizer_files(gguf);
    HfTokenizerTexts texts;
    texts.tokenizer_json = files.tokenizer_json;
    texts.tokenizer_config_json = files.tokenizer_config_json;
    if (!files.generation_config_json.empty())
        texts.generation_config_json = files.generation_config_json;
    return std::make_unique<HfTokenizer>(texts, gguf.path() + " (tokenizer metadata)");
}

std::vector<std::string> write_gguf_tokenizer_files(const GgufFile& gguf, const std::string& dir) {
    const GgufTokenizerFiles files = gguf_tokenizer_files(gguf);
    const std::filesystem::path to(dir);
    std::vector<std::string> names = {"tokenizer.json", "tokenizer_config.json"};
    write_file_atomic((to / names[0]).string(), files.tokenizer_json);
    write_file_atomic((to / names[1]).string(), files.tokenizer_config_json);
    if (!files.generation_config_json.empty()) {
        names.push_back("generation_config.json");
        write_file_atomic((to / names[2]).string(), files.generation_config_json);
    }
    return names;
}

}  // namespace anelm
