// anelm detokenize: token ids on stdin to text on stdout.
#include <fmt/core.h>

#include <cstdio>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "base/error.h"
#include "command.h"
#include "tokenizer/tokenizer.h"

namespace anelm::cli {
namespace {

std::vector<int32_t> read_ids() {
    std::vector<int32_t> ids;
    std::string word;
    while (std::cin >> word) {
        size_t used = 0;
        long long v = -1;
        try {
            v = std::stoll(word, &used);
        } catch (const std::exception&) {
            used = 0;
        }
        if (used != word.size() || v < 0 || v > INT32_MAX)
            fail("stdin: id {}: expected a non-negative integer, got \"{}\"", ids.size() + 1, word);
        ids.push_back(static_cast<int32_t>(v));
    }
    return ids;
}

std::function<int()> setup(CLI::App& app) {
    auto model = std::make_shared<std::string>();
    app.add_option("model", *model,
                   "model folder with tokenizer.json, a tokenizer.json, a GGUF file or a llama2.c "
                   "tokenizer.bin")
        ->required();
    app.footer(
        "Reads whitespace-separated ids and writes their decoded text, with no newline "
        "added. Ids outside the vocabulary are skipped, as Hugging Face does.");
    return [model] {
        const std::unique_ptr<Tokenizer> tok = load_tokenizer(*model);
        const std::string text = tok->decode(read_ids());
        std::fwrite(text.data(), 1, text.size(), stdout);
        return 0;
    };
}

const bool registered =
    register_command({"detokenize", "token ids on stdin to text on stdout", setup});

}  // namespace
}  // namespace anelm::cli
