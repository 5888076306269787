// Writes a Hugging Face tokenizer's vocabulary into GGUF metadata the way
// llama.cpp's converter does (conversion/base.py, get_vocab_base), for tests
// that read it back.
#pragma once

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "io/gguf_test_writer.h"
#include "tokenizer/json_scan.h"
#include "tokenizer_fixtures.h"

namespace anelm::test {

// llama.cpp's converter (conversion/base.py, get_vocab_base): the vocabulary
// in id order with added tokens' contents, holes as unused "[PAD<id>]",
// special or special-looking added tokens as control, other added tokens as
// user-defined; merges as "a b"; the special ids from tokenizer_config.json and
// add_bos_token from it or from the post-processor's template.
inline bool looks_special(const std::string& t) {
    return t == "<pad>" || t == "<mask>" || (t.starts_with("<|") && t.ends_with("|>")) ||
           (t.starts_with("<unused") && t.ends_with(">"));
}

// A tokenizer.json's parts with the model's vocabulary and merges read by the
// scanner (a DOM of them takes most of a second) into vocab and merges.
inline nlohmann::json scan_tokenizer_json(const std::string& text,
                                          std::vector<std::pair<std::string, int32_t>>* vocab,
                                          std::vector<std::string>* merges) {
    JsonScanner scan(text, "tokenizer.json");
    nlohmann::json parts = nlohmann::json::object();
    scan.read_object([&](const std::string& key) {
        if (key != "model") {
            parts[key] = nlohmann::json::parse(scan.skip_value());
            return;
        }
        scan.read_object([&](const std::string& field) {
            std::string left, right;
            if (field == "vocab" && vocab) {
                scan.read_object([&](const std::string& t) {
                    vocab->emplace_back(t, static_cast<int32_t>(scan.read_int()));
                });
            } else if (field == "merges" && merges) {
                scan.read_array([&] {
                    if (scan.peek() == '"') {
                        scan.read_string(left);
                        merges->push_back(left);
                        return;
                    }
                    scan.expect('[');
                    scan.read_string(left);
                    scan.expect(',');
                    scan.read_string(right);
                    scan.expect(']');
                    merges->push_back(left + " " + right);
                });
            } else {
                const std::string_view raw = scan.skip_value();
                if (field != "vocab" && field != "merges")
                    parts["model"][field] = nlohmann::json::parse(raw);
            }
        });
    });
    return parts;
}

// The tokenizer.* metadata of a Hugging Face tokenizer.json and
// tokenizer_config.json, as llama.cpp's converter writes them for a gpt2
// (byte-level BPE) vocabulary with the pre-tokenizer `pre`.
inline void add_hf_tokenizer(GgufTestWriter& w, const std::filesystem::path& tokenizer_json,
                             const std::filesystem::path& tokenizer_config,
                             const std::string& pre) {
    std::vector<std::pair<std::string, int32_t>> vocab;
    std::vector<std::string> merges;
    const nlohmann::json tok = scan_tokenizer_json(read_file(tokenizer_json), &vocab, &merges);
    const auto config = nlohmann::json::parse(read_file(tokenizer_config));
    std::vector<std::string> tokens;
    std::vector<int32_t> types;
    auto put = [&](size_t id, std::string text, int32_t type) {
        if (id >= tokens.size()) {
            for (size_t i = tokens.size(); i <= id; ++i)
                tokens.push_back(fmt::format("[PAD{}]", i));
            types.resize(id + 1, 5);
        }
        tokens[id] = std::move(text);
        types[id] = type;
    };
    for (auto& [text, id] : vocab) put(static_cast<size_t>(id), std::move(text), 1);
    std::map<std::string, int32_t> added;
    for (const auto& a : tok["added_tokens"]) {
        const std::string content = a["content"];
        const bool control = a["special"].get<bool>() || looks_special(content);
        put(a["id"].get<size_t>(), content, control ? 3 : 4);
        added[content] = a["id"];
    }

    w.string("tokenizer.ggml.model", "gpt2");
    w.string("tokenizer.ggml.pre", pre);
    w.strings("tokenizer.ggml.tokens", tokens);
    w.i32s("tokenizer.ggml.token_type", types);
    w.strings("tokenizer.ggml.merges", merges);
    const std::pair<const char*, const char*> specials[] = {
        {"bos_token", "tokenizer.ggml.bos_token_id"},
        {"eos_token", "tokenizer.ggml.eos_token_id"},
        {"pad_token", "tokenizer.ggml.padding_token_id"}};
    for (const auto& [field, key] : specials)
        if (config.contains(field) && config[field].is_string())
            w.u32(key, static_cast<uint32_t>(added.at(config[field].get<std::string>())));
    bool add_bos = config.value("add_bos_token", false);
    const auto& post = tok["post_processor"];
    if (post.is_object() && post.value("type", "") == "Sequence")
        for (const auto& p : post["processors"])
            if (p["type"] == "TemplateProcessing")
                add_bos = p["single"][0].contains("SpecialToken");
    w.boolean("tokenizer.ggml.add_bos_token", add_bos);
    if (config.contains("chat_template"))
        w.string("tokenizer.chat_template", config["chat_template"].get<std::string>());
}

}  // namespace anelm::test
