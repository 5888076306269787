// Reading tokenizer.json: the model's vocabulary and merges go through a
// scanner straight into hash tables; every other part is small and parsed with
// nlohmann::json.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <filesystem>
#include <optional>

#include "base/error.h"
#include "base/mapped_file.h"
#include "io/json_file.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/json_scan.h"

namespace anelm {

namespace {

nlohmann::json parse_part(std::string_view raw, const std::string& where) {
    check_json_depth(raw, where);
    try {
        return nlohmann::json::parse(raw);
    } catch (const nlohmann::json::exception& e) {
        fail("{}: {}", where, e.what());
    }
}

void read_merges(JsonScanner& scan, MergeList& merges, const std::string& where) {
    std::string left, right;
    scan.read_array([&] {
        const size_t at = scan.offset();
        if (scan.peek() == '"') {
            scan.read_string(left);
            const size_t space = left.find(' ');
            if (space == std::string::npos || left.find(' ', space + 1) != std::string::npos)
                fail("{}: merges entry at byte offset {}: expected \"left right\"", where, at);
            merges.add(std::string_view(left).substr(0, space),
                       std::string_view(left).substr(space + 1));
        } else {
            scan.expect('[');
            scan.read_string(left);
            scan.expect(',');
            scan.read_string(right);
            scan.expect(']');
            merges.add(left, right);
        }
    });
}

BpeOptions bpe_options(const nlohmann::json& m, const std::string& where) {
    BpeOptions o;
    auto optional_string = [&](const char* key) {
        const auto it = m.find(key);
        return it == m.end() || it->is_null() ? std::string() : string_field(m, key, where);
    };
    o.unk_token = optional_string("unk_token");
    o.continuing_subword_prefix = optional_string("continuing_subword_prefix");
    o.end_of_word_suffix = optional_string("end_of_word_suffix");
    o.fuse_unk = bool_field(m, "fuse_unk", false, where);
    o.byte_fallback = bool_field(m, "byte_fallback", false, where);
    o.ignore_merges = bool_field(m, "ignore_merges", false, where);
    const auto dropout = m.find("dropout");
    if (dropout != m.end() && !dropout->is_null() &&
        !(dropout->is_number() && dropout->get<double>() == 0.0))
        fail("{}.dropout: BPE dropout (random merges) is not supported", where);
    return o;
}

// A token given as "content" or as {"content": ...} in tokenizer_config.json.
std::string token_content(const nlohmann::json& j) {
    if (j.is_string()) return j.get<std::string>();
    if (j.is_object() && j.contains("content") && j["content"].is_string())
        return j["content"].get<std::string>();
    return {};
}

// One member of the top-level object of a JSON text (null when absent), without
// parsing the rest: Gemma's tokenizer_config.json is over a megabyte.
nlohmann::json read_json_member(std::string_view text, const std::string& where,
                                const std::string& key) {
    JsonScanner scan(text, where);
    nlohmann::json value;
    scan.read_object([&](const std::string& k) {
        const std::string_view raw = scan.skip_value();
        if (k == key) value = parse_part(raw, fmt::format("{}: {}", where, key));
    });
    return value;
}

std::string_view text_of(const MappedFile& file) {
    return {reinterpret_cast<const char*>(file.data()), file.size()};
}

}  // namespace

HfTokenizer::HfTokenizer(const std::string& path) : path_(path) {
    {
        const MappedFile file(path);
        load_json(text_of(file), path);
    }
    const std::filesystem::path dir = std::filesystem::path(path).parent_path();
    const std::string config = (dir / "tokenizer_config.json").string();
    const std::string generation = (dir / "generation_config.json").string();
    std::optional<MappedFile> config_file, generation_file;
    if (std::filesystem::exists(config)) config_file.emplace(config);
    if (std::filesystem::exists(generation)) generation_file.emplace(generation);
    auto text = [](const std::optional<MappedFile>& f) {
        return f ? std::optional<std::string_view>(text_of(*f)) : std::nullopt;
    };
    load_configs(text(config_file), config, text(generation_file), generation);
}

HfTokenizer::HfTokenizer(const HfTokenizerTexts& texts, const std::string& origin) : path_(origin) {
    load_json(texts.tokenizer_json, origin + " tokenizer.json");
    load_configs(texts.tokenizer_config_json, origin + " tokenizer_config.json",
                 texts.generation_config_json, origin + " generation_config.json");
}

void HfTokenizer::load_json(std::string_view text, const std::string& path) {
    JsonScanner scan(text, path);
    nlohmann::json parts = nlohmann::json::object();
    nlohmann::json model_fields = nlohmann::json::object();
    MergeList merges;
    bool has_model = false, has_vocab = false;
    // Tables are indexed by id: an id beyond what a file this size can number
    // (each token takes bytes of it) would only allocate holes.
    const int64_t id_limit = std::max<int64_t>(static_cast<int64_t>(text.size()), 1 << 16);
    auto checked_id = [&](int64_t id, std::string_view token, const std::string& where) {
        if (id < 0 || id >= id_limit)
            fail("{}: id {} of \"{}\" is out of range (0 to {})", where, id, token, id_limit - 1);
        return static_cast<int32_t>(id);
    };
    scan.read_object([&](const std::string& key) {
        if (key != "model") {
            parts[key] = parse_part(scan.skip_value(), fmt::format("{}: {}", path, key));
            return;
        }
        has_model = true;
        scan.read_object([&](const std::string& field) {
            if (field == "vocab") {
                has_vocab = true;
                scan.read_object([&](const std::string& t) {
                    model_.add_token(t, checked_id(scan.read_int(), t, path + ": model.vocab"));
                });
            } else if (field == "merges") {
                read_merges(scan, merges, path + ": model.merges");
            } else {
                model_fields[field] =
                    parse_part(scan.skip_value(), fmt::format("{}: model.{}", path, field));
            }
        });
    });
    if (scan.peek() != '\0') scan.error("the end of the file");
    if (!has_model || !has_vocab) fail("{}: model.vocab: missing", path);

    const std::string model_where = path + ": model";
    const std::string type =
        model_fields.contains("type") ? type_field(model_fields, model_where) : std::string("BPE");
    if (type != "BPE") fail("{}.type: unsupported model type \"{}\"", model_where, type);
    model_.set_options(bpe_options(model_fields, model_where), model_where);
    model_.add_merges(merges, model_where + ".merges");

    auto part = [&](const char* key) -> const nlohmann::json& {
        static const nlohmann::json null;
        const auto it = parts.find(key);
        return it == parts.end() ? null : *it;
    };
    normalizer_ = make_normalizer(part("normalizer"), path + ": normalizer");
    pre_tokenizer_ = make_pre_tokenizer(part("pre_tokenizer"), path + ": pre_tokenizer");
    decoder_ = make_decoder(part("decoder"), path + ": decoder");
    affixes_ = read_post_processor(part("post_processor"), path + ": post_processor");
    if (!part("truncation").is_null() || !part("padding").is_null())
        fail("{}: truncation and padding settings are not supported", path);

    n_vocab_ = model_.max_id() + 1;
    const nlohmann::json& added = part("added_tokens");
    for (size_t i = 0; i < added.size(); ++i) {
        const std::string where = fmt::format("{}: added_tokens[{}]", path, i);
        AddedToken t;
        t.content = string_field(added[i], "content", where);
        // As in Hugging Face: a content already in the vocabulary keeps that id.
        const int32_t in_vocab = model_.token_to_id(t.content);
        t.id = in_vocab >= 0 ? in_vocab
                             : checked_id(int_field(added[i], "id", -1, where), t.content, where);
        t.special = bool_field(added[i], "special", false, where);
        t.lstrip = bool_field(added[i], "lstrip", false, where);
        t.rstrip = bool_field(added[i], "rstrip", false, where);
        t.single_word = bool_field(added[i], "single_word", false, where);
        t.normalized = bool_field(added[i], "normalized", !t.special, where);
        // Tokens matched in normalized text are matched in their normalized form.
        if (t.normalized && normalizer_) normalizer_->normalize(t.content);
        n_vocab_ = std::max(n_vocab_, t.id + 1);
        added_by_id_[t.id] = added_.size();
        added_by_content_[t.content] = t.id;
        added_.push_back(std::move(t));
    }
    raw_matcher_ = std::make_unique<AddedTokenMatcher>(added_, false);
    normalized_matcher_ = std::make_unique<AddedTokenMatcher>(added_, true);
    if (!affixes_.before.empty()) bos_id_ = affixes_.before.front();
}

void HfTokenizer::load_configs(std::optional<std::string_view> config,
                               const std::string& config_where,
                               std::optional<std::string_view> generation,
                               const std::string& generation_where) {
    auto add_eos = [&](int32_t id) {
        if (id >= 0 && std::find(eos_ids_.begin(), eos_ids_.end(), id) == eos_ids_.end())
            eos_ids_.push_back(id);
    };
    if (config) {
        const nlohmann::json eos = read_json_member(*config, config_where, "eos_token");
        if (!eos.is_null()) add_eos(token_to_id(token_content(eos)));
    }
    if (generation) {
        const nlohmann::json ids = read_json_member(*generation, generation_where, "eos_token_id");
        if (ids.is_number_integer()) add_eos(ids.get<int32_t>());
        if (ids.is_array())
            for (const auto& id : ids)
                if (id.is_number_integer()) add_eos(id.get<int32_t>());
    }
    // Without either file, an EOS the post-processor appends is the best guess.
    if (eos_ids_.empty())
        for (int32_t id : affixes_.after) add_eos(id);
}

}  // namespace anelm
