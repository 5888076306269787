#include <filesystem>
#include <fstream>

#include "base/error.h"
#include "io/gguf.h"
#include "tokenizer/gguf_vocab.h"
#include "tokenizer/hf_tokenizer.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace anelm {

std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path) {
    namespace fs = std::filesystem;
    if (fs::is_directory(path)) {
        const fs::path json = fs::path(path) / "tokenizer.json";
        if (!fs::exists(json)) fail("{}: no tokenizer.json in this folder", path);
        return std::make_unique<HfTokenizer>(json.string());
    }
    if (!fs::exists(path)) fail("{}: no such file or folder", path);
    if (is_gguf_file(path)) return load_gguf_tokenizer(GgufFile(path));
    // tokenizer.json starts with '{'; tokenizer.bin with a small int32 (max_token_length).
    std::ifstream in(path, std::ios::binary);
    char first = 0;
    while (in.get(first) && (first == ' ' || first == '\n' || first == '\r' || first == '\t')) {
    }
    if (first == '{') return std::make_unique<HfTokenizer>(path);
    return std::make_unique<Llama2cTokenizer>(path);
}

}  // namespace anelm
