// Shared helpers of the tokenizer tests: the real tokenizers from ../shared,
// loaded once per test program, and the JSONL vectors made with Hugging Face's
// tokenizers.
#pragma once

#include <nlohmann/json.hpp>

#include <fstream>
#include <map>
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

}  // namespace anelm::test
