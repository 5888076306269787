// anelm generate: stream a continuation of a prompt to stdout.
#include <fmt/core.h>

#include <cstdio>

#include "chat/chat_template.h"
#include "command.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "run_options.h"

namespace anelm::cli {
namespace {

struct GenerateArgs {
    std::string model, tokenizer, prompt;
    int64_t n = 256;
    bool chat = false;
    RunOptions run;
    SamplerParams sampler;
};

int run_generate(const GenerateArgs& args) {
    Model model = open_model(args.model, args.tokenizer, true);
    const std::unique_ptr<Session> owned = open_session(model, args.run.session(model));
    Session& session = *owned;
    // With --chat the prompt is one user message rendered through the model's
    // template, which writes any BOS itself.
    std::string text = args.prompt;
    if (args.chat) {
        const nlohmann::ordered_json messages = {{{"role", "user"}, {"content", args.prompt}}};
        text = ChatTemplate::load(args.model).render(messages, true);
    }
    const std::vector<int32_t> prompt = model.tokenizer->encode(text, !args.chat);

    GenerateOptions options;
    options.max_tokens = args.n;
    options.sampler = args.sampler;
    options.stop_ids = model.stop_ids();

    StreamDecoder decoder(*model.tokenizer);
    for (int32_t id : prompt) decoder.push(id);  // context for the first pieces
    fmt::print("{}", text);
    std::fflush(stdout);
    const GenerateStats stats = generate(session, prompt, options, [&](int32_t id) {
        fmt::print("{}", decoder.push(id));
        std::fflush(stdout);
    });
    fmt::print("{}\n", decoder.flush());
    std::fflush(stdout);

    fmt::print(stderr, "prompt: {} tokens, {:.2f} tok/s; generation: {} tokens, {:.2f} tok/s ({} threads, {}, {})\n",
               stats.n_prompt, stats.n_prompt / std::max(stats.prompt_seconds, 1e-9),
               stats.n_generated, stats.n_generated / std::max(stats.generate_seconds, 1e-9),
               session.threads(), args.run.precision_name, kernels_isa());
    return 0;
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<GenerateArgs>();
    app.add_option("model", args->model, "Hugging Face folder or llama2.c .bin")->required();
    app.add_option("--tokenizer", args->tokenizer, "tokenizer.json or llama2.c tokenizer.bin");
    app.add_option("-p,--prompt", args->prompt, "the prompt")->required();
    app.add_option("-n", args->n, "stop when prompt + generated tokens reach N (as run.c counts)")
        ->capture_default_str();
    app.add_flag("--chat", args->chat, "render the prompt through the model's chat template");
    add_sampler_options(app, args->sampler);
    add_run_options(app, args->run);
    return [args] { return run_generate(*args); };
}

const bool registered = register_command({"generate", "Generate text from a prompt", setup});

}  // namespace
}  // namespace anelm::cli
