#include "anemll/tokenizer_files.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <filesystem>
#include <utility>

#include "base/atomic_file.h"
#include "base/error.h"
#include "io/json_file.h"

namespace anelm::anemll {

namespace {

namespace fs = std::filesystem;

constexpr std::array<std::string_view, 10> names = {
    "tokenizer.json",
    "tokenizer.model",
    "tokenizer_config.json",
    "special_tokens_map.json",
    "added_tokens.json",
    "vocab.json",
    "merges.txt",
    "chat_template.jinja",
    "generation_config.json",
    "config.json",
};

// Whether j is, or holds (as in a Sequence), a component of this type.
bool has_type(const nlohmann::json& j, std::string_view type) {
    if (j.is_array())
        return std::ranges::any_of(j, [&](const nlohmann::json& e) { return has_type(e, type); });
    if (!j.is_object()) return false;
    if (const auto it = j.find("type"); it != j.end() && it->is_string() && *it == type)
        return true;
    return std::ranges::any_of(j.items(), [&](const auto& kv) {
        return kv.value().is_structured() && has_type(kv.value(), type);
    });
}

}  // namespace

std::span<const std::string_view> tokenizer_file_names() {
    return names;
}

std::optional<BpeVocabFiles> byte_level_bpe_files(const std::string& tokenizer_json) {
    const nlohmann::json tok = read_json_file(tokenizer_json);
    if (!tok.is_object() || !tok.contains("model") || !tok["model"].is_object()) return {};
    const nlohmann::json& model = tok["model"];
    // As Hugging Face reads it: a model without a type is told by its fields.
    const auto type = model.find("type");
    const bool bpe = type == model.end() ? model.contains("merges") : *type == "BPE";
    auto byte_level = [&](const char* part) {
        const auto it = tok.find(part);
        return it != tok.end() && has_type(*it, "ByteLevel");
    };
    if (!bpe || !(byte_level("pre_tokenizer") || byte_level("decoder"))) return {};
    const auto vocab_it = model.find("vocab");
    const auto merges_it = model.find("merges");
    if (vocab_it == model.end() || !vocab_it->is_object())
        fail("{}: model.vocab: expected an object", tokenizer_json);
    if (merges_it != model.end() && !merges_it->is_array())
        fail("{}: model.merges: expected an array", tokenizer_json);

    std::vector<std::pair<int64_t, const std::string*>> by_id;
    by_id.reserve(vocab_it->size());
    for (const auto& [piece, id] : vocab_it->items()) {
        if (!id.is_number_integer())
            fail("{}: model.vocab[{}]: expected an integer id", tokenizer_json,
                 nlohmann::json(piece).dump());
        by_id.emplace_back(id.get<int64_t>(), &piece);
    }
    std::ranges::sort(by_id, [](const auto& a, const auto& b) { return a.first < b.first; });
    BpeVocabFiles out;
    out.vocab_json = "{";
    for (const auto& [id, piece] : by_id) {
        if (out.vocab_json.size() > 1) out.vocab_json += ',';
        out.vocab_json += nlohmann::json(*piece).dump();
        out.vocab_json += ':';
        out.vocab_json += std::to_string(id);
    }
    out.vocab_json += "}";

    out.merges_txt = "#version: 0.2\n";
    if (merges_it != model.end()) {
        size_t k = 0;
        for (const nlohmann::json& merge : *merges_it) {
            std::string line;
            if (merge.is_string()) {
                line = merge.get<std::string>();
            } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
                       merge[1].is_string()) {
                const std::string left = merge[0], right = merge[1];
                if (left.find(' ') != std::string::npos || right.find(' ') != std::string::npos)
                    fail("{}: model.merges[{}]: a piece with a space cannot go into merges.txt",
                         tokenizer_json, k);
                line = left + " " + right;
            } else {
                fail("{}: model.merges[{}]: expected \"left right\" or [left, right]",
                     tokenizer_json, k);
            }
            if (line.find_first_of("\r\n") != std::string::npos)
                fail("{}: model.merges[{}]: a line break cannot go into merges.txt", tokenizer_json,
                     k);
            out.merges_txt += line;
            out.merges_txt += '\n';
            ++k;
        }
    }
    return out;
}

void check_tokenizer_source(const std::string& model_dir) {
    const fs::path from(model_dir);
    if (!fs::is_directory(from)) fail("{}: not a folder", model_dir);
    if (!fs::exists(from / "tokenizer.json") && !fs::exists(from / "tokenizer.model"))
        fail("{}: neither tokenizer.json nor tokenizer.model, one of which a runner needs",
             model_dir);
}

std::vector<std::string> copy_tokenizer_files(const std::string& model_dir,
                                              const std::string& dest_dir) {
    check_tokenizer_source(model_dir);
    const fs::path from(model_dir);
    std::vector<std::string_view> written;
    for (std::string_view name : names) {
        const fs::path source = from / name;
        if (!fs::exists(source)) continue;
        const fs::path target = fs::path(dest_dir) / name;
        std::error_code ec;
        fs::copy_file(source, target, fs::copy_options::overwrite_existing, ec);
        if (ec) fail("{}: cannot copy to {}: {}", source.string(), target.string(), ec.message());
        written.push_back(name);
    }
    const bool no_vocab = !fs::exists(from / "vocab.json");
    const bool no_merges = !fs::exists(from / "merges.txt");
    if ((no_vocab || no_merges) && fs::exists(from / "tokenizer.json")) {
        if (const auto bpe = byte_level_bpe_files((from / "tokenizer.json").string())) {
            const fs::path to(dest_dir);
            if (no_vocab) {
                write_file_atomic((to / "vocab.json").string(), bpe->vocab_json);
                written.push_back("vocab.json");
            }
            if (no_merges) {
                write_file_atomic((to / "merges.txt").string(), bpe->merges_txt);
                written.push_back("merges.txt");
            }
        }
    }
    auto rank = [](std::string_view name) {
        return std::ranges::find(names, name) - names.begin();
    };
    std::ranges::sort(written, [&](auto a, auto b) { return rank(a) < rank(b); });
    return {written.begin(), written.end()};
}

}  // namespace anelm::anemll
