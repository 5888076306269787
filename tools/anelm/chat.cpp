// anelm chat: an interactive conversation through the model's chat template.
// The KV cache is kept across turns: each turn prefills only the tokens that
// differ from what the cache already holds.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "chat/chat_template.h"
#include "command.h"
#include "flag_checks.h"
#include "io/generation_config.h"
#include "run_options.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "sampler_options.h"
#include "speculative_options.h"

namespace anelm::cli {
namespace {

struct ChatArgs {
    std::string model, tokenizer, system, template_file;
    int64_t n = 1024;
    RunOptions run;
    SamplerOptions sampler{SamplerParams{.temp = 0.7f}};
    SpeculativeOptions speculative;
};

int run_chat(const ChatArgs& args) {
    Model model = open_model(args.model, args.tokenizer, true);
    const ChatTemplate chat_template = ChatTemplate::load(args.model, args.template_file);
    SessionOptions so = args.run.session(model);
    std::unique_ptr<DraftSource> draft;
    if (args.speculative.active()) {
        so.verify_tokens = args.speculative.max_draft_n() + 1;
        draft = std::make_unique<DraftSource>(args.speculative, model, so);
    }
    const std::unique_ptr<Session> owned = open_session(model, so);
    Session& session = *owned;

    nlohmann::ordered_json messages = nlohmann::ordered_json::array();
    auto reset = [&] {
        messages = nlohmann::ordered_json::array();
        if (!args.system.empty()) messages.push_back({{"role", "system"}, {"content", args.system}});
    };
    reset();
    std::vector<int32_t> cached;  // the tokens the KV cache holds, in order

    const ResolvedSampling sampling = args.sampler.resolve(model_generation_sampling(args.model));
    fmt::print(stderr, "{}\nanelm chat: /reset clears the conversation, /quit ends it\n",
               sampling.description);
    std::string line;
    while (true) {
        fmt::print("> ");
        std::fflush(stdout);
        if (!std::getline(std::cin, line) || line == "/quit") break;
        if (line == "/reset") {
            reset();
            continue;
        }
        if (line.empty()) continue;
        messages.push_back({{"role", "user"}, {"content", line}});
        const std::string prompt = chat_template.render(messages, true);
        const std::vector<int32_t> tokens = model.tokenizer->encode(prompt, false);

        // Keep the cached prefix the new prompt shares; prefill the rest.
        const auto shared = static_cast<size_t>(
            std::mismatch(cached.begin(), cached.end(), tokens.begin(), tokens.end()).first -
            cached.begin());
        const size_t keep = std::min(shared, tokens.size() - 1);
        session.rewind(static_cast<int64_t>(keep));
        cached.assign(tokens.begin(), tokens.end());

        GenerateOptions options;
        options.max_new_tokens = args.n;
        options.sampler = sampling.params;
        options.stop_ids = model.stop_ids();
        options.context = std::span<const int32_t>(tokens.data(), keep);
        if (draft != nullptr) options.drafter = &draft->drafter();
        options.draft_n = args.speculative.draft_n.front();
        options.adaptive_draft = args.speculative.adaptive;
        StreamDecoder decoder(*model.tokenizer);
        std::vector<int32_t> reply;
        const std::span<const int32_t> fresh(tokens.data() + keep, tokens.size() - keep);
        generate(session, fresh, options, [&](int32_t id) {
            reply.push_back(id);
            fmt::print("{}", decoder.push(id));
            std::fflush(stdout);
        });
        fmt::print("{}\n", decoder.flush());
        // The cache holds every reply token but the last, which was never fed back.
        cached.insert(cached.end(), reply.begin(), reply.end());
        cached.resize(static_cast<size_t>(session.pos()));
        messages.push_back({{"role", "assistant"}, {"content", model.tokenizer->decode(reply)}});
    }
    return 0;
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<ChatArgs>();
    app.add_option("model", args->model, "Hugging Face folder or GGUF file")->required();
    app.add_option("--tokenizer", args->tokenizer, "tokenizer.json (default: the model's)");
    app.add_option("--system", args->system, "system message");
    app.add_option("--template", args->template_file,
                   "a Jinja chat template file to use instead of the model's");
    in_range(app.add_option("-n", args->n, "new tokens per reply at most (-1: until the context is full)"), {-1, 1e9})
        ->capture_default_str();
    args->sampler.add_to(app);
    add_run_options(app, args->run);
    add_speculative_options(app, args->speculative, false);
    return [args] { return run_chat(*args); };
}

const bool registered = register_command({"chat", "Chat with a model through its template", setup});

}  // namespace
}  // namespace anelm::cli
