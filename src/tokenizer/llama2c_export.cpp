#include "tokenizer/llama2c_export.h"

#include <nlohmann/json.hpp>

#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "base/atomic_file.h"
#include "base/error.h"
#include "base/mapped_file.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "tokenizer/spm_merges.h"
#include "tokenizer/utf8.h"

namespace anelm {

namespace {

using ordered_json = nlohmann::ordered_json;

constexpr std::string_view space_mark = "\xE2\x96\x81";  // "▁", SentencePiece's space
constexpr int32_t first_piece = 3 + 256;                 // after <unk>, <s>, </s> and the bytes
constexpr float no_merge = -1e10f;                       // run.c merges only above this score
constexpr const char* special_names[3] = {"<unk>", "<s>", "</s>"};

struct Piece {
    std::string text;  // "▁" form
    float score;
};

// The pieces of a tokenizer.bin that Llama2cTokenizer has already checked.
std::vector<Piece> read_pieces(const std::string& path) {
    const Llama2cTokenizer tok(path);
    const MappedFile file(path);
    std::vector<Piece> pieces;
    size_t at = 4;
    for (int32_t id = 0; id < tok.n_vocab(); ++id) {
        float score;
        int32_t length;
        std::memcpy(&score, file.data() + at, 4);
        std::memcpy(&length, file.data() + at + 4, 4);
        at += 8 + static_cast<size_t>(length);
        std::string text;
        if (id < 3) {
            text = special_names[id];
        } else {
            const std::string raw = tok.token_to_piece(id);
            if (utf8::find_invalid(raw) != std::string::npos)
                fail("{}: token {} is not UTF-8, which tokenizer.json cannot hold", path, id);
            for (char c : raw) {
                if (c == ' ')
                    text.append(space_mark);
                else
                    text.push_back(c);
            }
        }
        if (id >= 3 && id < first_piece && text != fmt::format("<0x{:02X}>", id - 3))
            fail("{}: token {} is \"{}\"; run.c reads it as the byte token <0x{:02X}>", path, id,
                 text, id - 3);
        pieces.push_back({std::move(text), score});
    }
    return pieces;
}

ordered_json special_token(int32_t id) {
    return {{"id", id},
            {"content", special_names[id]},
            {"single_word", false},
            {"lstrip", false},
            {"rstrip", false},
            {"normalized", false},
            {"special", true}};
}

ordered_json replace(std::string_view from, std::string_view to) {
    return {{"type", "Replace"}, {"pattern", {{"String", from}}}, {"content", to}};
}

ordered_json bos_template() {
    auto special = [](int type_id) {
        return ordered_json{{"SpecialToken", {{"id", "<s>"}, {"type_id", type_id}}}};
    };
    auto sequence = [](const char* name, int type_id) {
        return ordered_json{{"Sequence", {{"id", name}, {"type_id", type_id}}}};
    };
    return {{"type", "TemplateProcessing"},
            {"single", {special(0), sequence("A", 0)}},
            {"pair", {special(0), sequence("A", 0), special(1), sequence("B", 1)}},
            {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
}

}  // namespace

Llama2cHfFiles llama2c_to_hf(const std::string& path, int64_t model_max_length) {
    const std::vector<Piece> pieces = read_pieces(path);
    std::unordered_map<std::string_view, int32_t> ids;
    ordered_json vocab = ordered_json::object();
    for (int32_t id = 0; id < static_cast<int32_t>(pieces.size()); ++id) {
        const auto [it, added] = ids.emplace(pieces[id].text, id);
        if (!added)
            fail("{}: token {} \"{}\" repeats token {}, which tokenizer.json cannot hold", path, id,
                 pieces[id].text, it->second);
        vocab[pieces[id].text] = id;
    }
    // run.c joins any two pieces after the bytes whose join scores above no_merge.
    std::vector<std::string_view> texts;
    std::vector<float> scores;
    for (const Piece& p : pieces) {
        texts.push_back(p.text);
        scores.push_back(p.score);
    }
    ordered_json merges = ordered_json::array();
    for (const PieceMerge& m : merges_by_score(
             texts, scores, [](int32_t id) { return id >= first_piece; }, no_merge))
        merges.push_back(fmt::format("{} {}", pieces[m.left].text, pieces[m.right].text));

    ordered_json tok;
    tok["version"] = "1.0";
    tok["truncation"] = nullptr;
    tok["padding"] = nullptr;
    tok["added_tokens"] = {special_token(0), special_token(1), special_token(2)};
    // run.c's dummy prefix, then its spaces as "▁".
    tok["normalizer"] = {
        {"type", "Sequence"},
        {"normalizers",
         {{{"type", "Prepend"}, {"prepend", space_mark}}, replace(" ", space_mark)}}};
    tok["pre_tokenizer"] = nullptr;
    tok["post_processor"] = bos_template();
    tok["decoder"] = {{"type", "Sequence"},
                      {"decoders",
                       {replace(space_mark, " "),
                        {{"type", "ByteFallback"}},
                        {{"type", "Fuse"}},
                        {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}}}};
    tok["model"] = {{"type", "BPE"},
                    {"dropout", nullptr},
                    {"unk_token", "<unk>"},
                    {"continuing_subword_prefix", nullptr},
                    {"end_of_word_suffix", nullptr},
                    {"fuse_unk", true},
                    {"byte_fallback", true},
                    {"ignore_merges", false},
                    {"vocab", std::move(vocab)},
                    {"merges", std::move(merges)}};

    // LlamaTokenizerFast: transformers loads it from tokenizer.json even when
    // asked for a slow tokenizer (there is no tokenizer.model for LlamaTokenizer).
    const ordered_json config = {
        {"add_bos_token", true},
        {"add_eos_token", false},
        {"bos_token", "<s>"},
        {"clean_up_tokenization_spaces", false},
        {"eos_token", "</s>"},
        {"legacy", true},
        {"model_max_length", model_max_length},
        {"pad_token", nullptr},
        {"tokenizer_class", "LlamaTokenizerFast"},
        {"unk_token", "<unk>"},
    };
    return {tok.dump(2) + "\n", config.dump(2) + "\n"};
}

std::vector<std::string> write_llama2c_hf_files(const std::string& path, const std::string& dir,
                                                int64_t model_max_length) {
    const Llama2cHfFiles files = llama2c_to_hf(path, model_max_length);
    const std::filesystem::path to(dir);
    write_file_atomic((to / "tokenizer.json").string(), files.tokenizer_json);
    write_file_atomic((to / "tokenizer_config.json").string(), files.tokenizer_config_json);
    return {"tokenizer.json", "tokenizer_config.json"};
}

}  // namespace anelm
