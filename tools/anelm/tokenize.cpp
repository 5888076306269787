// anelm tokenize: text on stdin to token ids on stdout.
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "base/error.h"
#include "command.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace anelm::cli {
namespace {

struct TokenizeArgs {
    std::string model;
    bool jsonl = false;
    bool special = false;
};

// Input must be UTF-8: a wrong byte is an error naming its offset rather than a
// silent U+FFFD (what Python's strict decoding of stdin does too).
void check_utf8(std::string_view text, const std::string& where, size_t base) {
    const size_t bad = utf8::find_invalid(text);
    if (bad != std::string_view::npos)
        fail("{}: invalid UTF-8 at byte offset {} (byte 0x{:02X})", where, base + bad,
             static_cast<uint8_t>(text[bad]));
}

int run_tokenize(const TokenizeArgs& args) {
    const std::unique_ptr<Tokenizer> tok = load_tokenizer(args.model);
    std::cin >> std::noskipws;
    if (!args.jsonl) {
        const std::string text{std::istreambuf_iterator<char>(std::cin),
                               std::istreambuf_iterator<char>()};
        check_utf8(text, "stdin", 0);
        fmt::print("{}\n", fmt::join(tok->encode(text, args.special), " "));
        return 0;
    }
    std::string line;
    size_t line_no = 0, offset = 0;
    while (std::getline(std::cin, line)) {
        ++line_no;
        const std::string where = fmt::format("stdin line {}", line_no);
        check_utf8(line, "stdin", offset);
        offset += line.size() + 1;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        nlohmann::json row;
        try {
            row = nlohmann::json::parse(line);
        } catch (const nlohmann::json::exception& e) {
            fail("{}: {}", where, e.what());
        }
        if (!row.is_object() || !row.contains("text") || !row["text"].is_string())
            fail("{}: expected a JSON object with a string \"text\"", where);
        fmt::print("[{}]\n",
                   fmt::join(tok->encode(row["text"].get<std::string>(), args.special), ","));
    }
    return 0;
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<TokenizeArgs>();
    app.add_option("model", args->model,
                   "model folder with tokenizer.json, a tokenizer.json, a GGUF file or a llama2.c "
                   "tokenizer.bin")
        ->required();
    app.add_flag("--jsonl", args->jsonl,
                 "each input line is {\"text\": ...}; each output line a JSON array of ids");
    app.add_flag(
        "--special", args->special,
        "add what the tokenizer's post-processor adds (BOS ...); special tokens written in "
        "the text are recognised either way");
    app.footer(
        "Reads all of stdin as one text (a final newline is part of it) and prints the ids "
        "separated by spaces on one line. Invalid UTF-8 input is an error naming the byte "
        "offset.");
    return [args] { return run_tokenize(*args); };
}

const bool registered =
    register_command({"tokenize", "text on stdin to token ids on stdout", setup});

}  // namespace
}  // namespace anelm::cli
