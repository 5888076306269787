// anelm chat: an interactive conversation through the model's chat template.
// The KV cache is kept across turns: each turn prefills only the tokens that
// differ from what the cache already holds.
#include <fmt/core.h>

#include <algorithm>
#include <cstdio>
#include <iostream>

#include "chat/chat_template.h"
#include "command.h"
#include "run_options.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "speculative_options.h"

namespace anelm::cli {
namespace {

struct ChatArgs {
    std::string model, tokenizer, system;
    int64_t n = 1024;
    RunOptions run;
    SamplerParams sampler;
    SpeculativeOptions speculative;
};

int run_chat(const ChatArgs& args) {
    Model model = open_model(args.model, args.tokenizer, true);
    const ChatTemplate chat_template = ChatTemplate::load(args.model);
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

    fmt::print(stderr, "anelm chat: /reset clears the conversation, /quit ends it\n");
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
        options.max_tokens = static_cast<int64_t>(tokens.size()) + args.n;
        options.sampler = args.sampler;
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
    args->sampler.temp = 0.7f;
    app.add_option("model", args->model, "Hugging Face folder or GGUF file")->required();
    app.add_option("--tokenizer", args->tokenizer, "tokenizer.json (default: the model's)");
    app.add_option("--system", args->system, "system message");
    app.add_option("-n", args->n, "most tokens per reply")->capture_default_str();
    add_sampler_options(app, args->sampler);
    add_run_options(app, args->run);
    add_speculative_options(app, args->speculative, false);
    return [args] { return run_chat(*args); };
}

const bool registered = register_command({"chat", "Chat with a model through its template", setup});

}  // namespace
}  // namespace anelm::cli
