// anelm embed: one unit vector per text, the model's final-norm hidden states
// pooled (docs/server.md, "Embeddings").
#include <fmt/core.h>
#include <fmt/ranges.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "command.h"
#include "run_options.h"
#include "runtime/embedder.h"
#include "runtime/model.h"

namespace anelm::cli {
namespace {

struct EmbedArgs {
    std::string model, tokenizer, file, pooling;
    std::vector<std::string> texts;
    bool json = false;
    RunOptions run;
};

// One text per line of the file; blank lines are skipped.
std::vector<std::string> read_lines(const std::string& path) {
    std::ifstream in(path);
    if (!in) fail("{}: cannot read", path);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (line.find_first_not_of(" \t") != std::string::npos) lines.push_back(line);
    }
    return lines;
}

int run_embed(const EmbedArgs& args) {
    if (args.file.empty() == args.texts.empty()) fail("give texts or -f FILE (one of them)");
    const std::vector<std::string> texts = args.file.empty() ? args.texts : read_lines(args.file);
    if (texts.empty()) fail("{}: no text in it", args.file);
    const Model model = open_model(args.model, args.tokenizer, true);
    const PoolingChoice pooling = choose_pooling(args.model, args.pooling);
    std::vector<std::vector<int32_t>> inputs;
    for (const std::string& text : texts) inputs.push_back(model.tokenizer->encode(text, true));
    SessionOptions so = args.run.session(model);
    so.hidden = true;
    so.batch_rows = std::min<int64_t>(16, so.prefill_batch);
    const std::unique_ptr<Session> session = open_session(model, so);
    Embedder embedder(*session, pooling.pooling);
    const auto vectors = embedder.embed(inputs);
    fmt::print(stderr, "anelm embed: {} vectors of {} dims, {} pooling ({})\n", vectors.size(),
               embedder.dims(), pooling_name(pooling.pooling), pooling.source);
    if (args.json)
        fmt::print("{}\n", nlohmann::json(vectors).dump());
    else
        for (const auto& v : vectors) fmt::print("{}\n", fmt::join(v, " "));
    return 0;
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<EmbedArgs>();
    app.add_option("model", args->model, "Hugging Face folder, GGUF file or llama2.c .bin")
        ->required();
    app.add_option("texts", args->texts, "texts to embed, one vector each");
    app.add_option("-f,--file", args->file, "embed each line of this file (UTF-8)");
    app.add_option("--pooling", args->pooling,
                   "mean, last or cls (default: the model's sentence-transformers "
                   "modules.json, else mean)")
        ->check(CLI::IsMember({"mean", "last", "cls"}));
    app.add_option("--tokenizer", args->tokenizer,
                   "tokenizer.json, a GGUF file or llama2.c tokenizer.bin");
    app.add_flag("--json", args->json, "print a JSON array of arrays");
    add_run_options(app, args->run);
    return [args] { return run_embed(*args); };
}

const bool registered = register_command(
    {"embed", "Embedding vectors of texts: pooled final-norm hidden states, unit length", setup});

}  // namespace
}  // namespace anelm::cli
