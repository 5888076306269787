#include "io/model_format.h"

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "base/error.h"
#include "io/gguf.h"
#include "io/json_file.h"
#include "io/llama2c.h"

namespace anelm {

namespace {

namespace fs = std::filesystem;

constexpr const char* expected_models =
    "expected a Hugging Face folder, a GGUF file or a llama2.c checkpoint";

[[noreturn]] void not_a_model(const std::string& path, const std::string& found) {
    if (found.empty()) fail("{}: not a model file ({})", path, expected_models);
    fail("{}: not a model file but {} ({})", path, found, expected_models);
}

std::string read_prefix(const std::string& path, size_t n) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes(n, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(n));
    bytes.resize(static_cast<size_t>(in.gcount()));
    return bytes;
}

// tokenizer.json: a "model" object with its type or vocabulary.
bool is_hf_tokenizer(const std::string& text) {
    if (json_too_deep_at(text) != std::string::npos) return false;
    const nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    return j.is_object() && j.contains("model") && j["model"].is_object() &&
           (j["model"].contains("type") || j["model"].contains("vocab"));
}

// llama2.c's tokenizer.bin: int32 max_token_length, then (f32 score, int32
// length, bytes) per token to the exact end of the file.
bool is_llama2c_tokenizer(const std::string& bytes) {
    auto int_at = [&](size_t at) {
        int32_t v;
        std::memcpy(&v, bytes.data() + at, 4);
        return v;
    };
    if (bytes.size() < 4 || int_at(0) < 1 || int_at(0) > 1024) return false;
    size_t at = 4, n_tokens = 0;
    while (at < bytes.size()) {
        if (bytes.size() - at < 8) return false;
        const int32_t len = int_at(at + 4);
        if (len < 0 || static_cast<size_t>(len) > bytes.size() - at - 8) return false;
        at += 8 + static_cast<size_t>(len);
        ++n_tokens;
    }
    return n_tokens > 0;
}

// A folder that is no model may still hold one: the first GGUF file or
// llama2.c checkpoint in it, or "".
std::string model_file_in(const fs::path& dir) {
    std::vector<fs::path> files;
    std::error_code ec;
    for (const auto& entry : fs::directory_iterator(dir, ec))
        if (entry.is_regular_file(ec)) files.push_back(entry.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files)
        if (is_gguf_file(f.string()) || has_llama2c_header(f.string()))
            return f.filename().string();
    return "";
}

ModelFormat folder_format(const std::string& path) {
    const fs::path dir(path);
    if (fs::exists(dir / "meta.yaml")) return ModelFormat::converted_folder;
    if (fs::exists(dir / "Manifest.json")) return ModelFormat::coreml_package;
    if (fs::exists(dir / "config.json")) return ModelFormat::hf_folder;
    if (const std::string inside = model_file_in(dir); !inside.empty())
        fail("{}: no config.json in this folder ({}; it holds {})", path, expected_models, inside);
    fail("{}: no config.json in this folder ({})", path, expected_models);
}

// Reading whole files to tell them apart stops at this size: tokenizers are smaller.
constexpr size_t max_probed_bytes = 64 << 20;

}  // namespace

bool is_text_file(const std::string& path) {
    const std::string head = read_prefix(path, 4096);
    return std::none_of(head.begin(), head.end(), [](char c) {
        const auto u = static_cast<unsigned char>(c);
        return (u < 0x20 && u != '\t' && u != '\n' && u != '\r' && u != '\f') || u == 0x7f;
    });
}

ModelFormat detect_model_format(const std::string& path) {
    std::error_code ec;
    const fs::file_status status = fs::status(path, ec);
    if (ec || !fs::exists(status)) fail("{}: no such file or folder", path);
    if (fs::is_directory(status)) return folder_format(path);

    if (is_gguf_file(path)) return ModelFormat::gguf;
    if (has_llama2c_header(path)) return ModelFormat::llama2c;
    const fs::path p(path);
    const fs::path parent = p.has_parent_path() ? p.parent_path() : fs::path(".");
    if (p.extension() == ".safetensors" || fs::exists(parent / "config.json"))
        fail("{}: give the model's folder (with config.json), not one of its files", path);

    const uintmax_t size = fs::file_size(p, ec);
    if (ec) fail("{}: cannot read the file's size", path);
    if (size == 0) not_a_model(path, "an empty file");
    const std::string bytes = read_prefix(path, std::min<uintmax_t>(size, max_probed_bytes));
    const size_t first = bytes.find_first_not_of(" \t\r\n");
    if (first != std::string::npos && (bytes[first] == '{' || bytes[first] == '['))
        not_a_model(path, is_hf_tokenizer(bytes) ? "a tokenizer" : "JSON");
    if (is_llama2c_tokenizer(bytes)) not_a_model(path, "a llama2.c tokenizer");
    if (is_text_file(path)) not_a_model(path, "text");
    not_a_model(path, "");
}

}  // namespace anelm
