// Shared helpers of the tokenizer tests: the real tokenizers from ../shared,
// loaded once per test program, and the JSONL vectors made with Hugging Face's
// tokenizers.
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
#include <sstream>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "test_support.h"
#include "tokenizer/tokenizer.h"

namespace anelm::test {

// "qwen3", "llama3" or "gemma3": shared/tokenizers/<name>/tokenizer.json.
inline const Tokenizer& shared_tokenizer(const std::string& name) {
    static std::map<std::string, std::unique_ptr<Tokenizer>> loaded;
    auto& slot = loaded[name];
    if (!slot)
        slot = load_tokenizer(shared_path("tokenizers/" + name + "/tokenizer.json").string());
    return *slot;
}

inline std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path) {
    std::vector<nlohmann::json> rows;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line))
        if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
    return rows;
}

inline std::string read_file(const std::filesystem::path& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// llama.cpp's .inp strings, split on its separator, and the .out ids, one
// line per string (README of ../shared/tokenizers).
inline std::vector<std::string> read_inputs(const std::filesystem::path& path) {
    const std::string all = read_file(path);
    const std::string sep = "\n__ggml_vocab_test__\n";
    std::vector<std::string> inputs;
    size_t start = 0;
    for (size_t at; (at = all.find(sep, start)) != std::string::npos; start = at + sep.size())
        inputs.push_back(all.substr(start, at - start));
    return inputs;
}

inline std::vector<std::vector<int32_t>> read_outputs(const std::filesystem::path& path) {
    std::vector<std::vector<int32_t>> outputs;
    std::ifstream in(path);
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::vector<int32_t> ids;
        for (int32_t id; words >> id;) ids.push_back(id);
        outputs.push_back(std::move(ids));
    }
    return outputs;
}

}  // namespace anelm::test
