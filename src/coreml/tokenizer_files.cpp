#include "coreml/tokenizer_files.h"

#include <array>
#include <filesystem>

#include "base/error.h"

namespace anelm::coreml {

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

}  // namespace

std::span<const std::string_view> tokenizer_file_names() {
    return names;
}

std::vector<std::string> copy_tokenizer_files(const std::string& model_dir,
                                              const std::string& dest_dir) {
    const fs::path from(model_dir);
    if (!fs::is_directory(from)) fail("{}: not a folder", model_dir);
    if (!fs::exists(from / "tokenizer.json") && !fs::exists(from / "tokenizer.model"))
        fail("{}: neither tokenizer.json nor tokenizer.model, one of which a runner needs",
             model_dir);
    std::vector<std::string> copied;
    for (std::string_view name : names) {
        const fs::path source = from / name;
        if (!fs::exists(source)) continue;
        const fs::path target = fs::path(dest_dir) / name;
        std::error_code ec;
        fs::copy_file(source, target, fs::copy_options::overwrite_existing, ec);
        if (ec) fail("{}: cannot copy to {}: {}", source.string(), target.string(), ec.message());
        copied.emplace_back(name);
    }
    return copied;
}

}  // namespace anelm::coreml
