// anelm generate: stream a continuation of a prompt to stdout.
#include <fmt/core.h>

#include <cstdio>

#include "base/error.h"
#include "chat/chat_template.h"
#include "command.h"
#include "converted/ane_pipeline.h"
#include "converted/hybrid_model.h"
#include "flag_checks.h"
#include "io/generation_config.h"
#include "run_options.h"
#include "runtime/generate.h"
#include "runtime/model.h"
#include "sampler_options.h"
#include "speculative_options.h"

namespace anelm::cli {
namespace {

struct GenerateArgs {
    std::string model, tokenizer, prompt, template_file;
    int64_t n = 256;
    int64_t steps = -1;  // run.c's count: prompt and generated tokens together
    bool chat = false;
    RunOptions run;
    SamplerOptions sampler{SamplerParams{}};
    SpeculativeOptions speculative;
    std::string prefill_packages;  // a converted folder of the model that prefills the prompt
};

// Streams the prompt and its continuation to stdout; statistics to stderr.
// `context_reason` says why the context is no larger, for a prompt that does not fit.
int stream(TokenModel& model, const Tokenizer& tokenizer, std::vector<int32_t> stop_ids,
           const GenerateArgs& args, const std::string& how, DraftSource* draft,
           const std::string& context_reason) {
    // With --chat the prompt is one user message rendered through the model's
    // template, which writes any BOS itself.
    std::string text = args.prompt;
    if (args.chat) {
        const nlohmann::ordered_json messages = {{{"role", "user"}, {"content", args.prompt}}};
        text = ChatTemplate::load(args.model, args.template_file).render(messages, true);
    }
    const std::vector<int32_t> prompt = tokenizer.encode(text, !args.chat);
    if (static_cast<int64_t>(prompt.size()) > model.n_ctx())
        fail("the prompt has {} tokens but the context holds {} ({})", prompt.size(), model.n_ctx(),
             context_reason);

    GenerateOptions options;
    options.max_new_tokens = args.steps >= 0 ? -1 : args.n;
    options.max_steps = args.steps;
    const ResolvedSampling sampling = args.sampler.resolve(model_generation_sampling(args.model));
    options.sampler = sampling.params;
    fmt::print(stderr, "{}\n", sampling.description);
    options.stop_ids = std::move(stop_ids);
    if (draft != nullptr) options.drafter = &draft->drafter();
    options.draft_n = args.speculative.draft_n.front();
    options.adaptive_draft = args.speculative.adaptive;

    StreamDecoder decoder(tokenizer);
    for (int32_t id : prompt) decoder.push(id);  // context for the first pieces
    fmt::print("{}", text);
    std::fflush(stdout);
    const GenerateStats stats = generate(model, prompt, options, [&](int32_t id) {
        fmt::print("{}", decoder.push(id));
        std::fflush(stdout);
    });
    fmt::print("{}\n", decoder.flush());
    std::fflush(stdout);

    fmt::print(stderr,
               "prompt: {} tokens, {:.2f} tok/s; generation: {} tokens, {:.2f} tok/s ({})\n",
               stats.n_prompt, stats.n_prompt / std::max(stats.prompt_seconds, 1e-9),
               stats.n_generated, stats.n_generated / std::max(stats.generate_seconds, 1e-9), how);
    if (stats.n_verify > 0)
        fmt::print(stderr,
                   "speculative ({}): {} verify passes, {} of {} drafted tokens accepted "
                   "({:.0f}%), {:.2f} tokens per pass\n",
                   draft->label(), stats.n_verify, stats.n_accepted, stats.n_drafted,
                   100.0 * stats.n_accepted / std::max<int64_t>(stats.n_drafted, 1),
                   1.0 + double(stats.n_accepted) / double(stats.n_verify));
    return 0;
}

// The prompt through the converted packages, the rest on the CPU after the KV
// cache is handed over.
int run_hybrid(const GenerateArgs& args, const Model& model, SessionOptions so) {
    if (args.speculative.active() && !args.speculative.draft_model.empty())
        fail("--prefill-packages: decode drafts with --lookup or --draft-quant");
    // The hand-off writes the packages' f16 rows into the CPU's cache.
    if (args.run.kv != "f16") fail("--prefill-packages: takes --kv f16, not {}", args.run.kv);
    ThreadPool pool(args.run.threads > 0 ? args.run.threads : ThreadPool::physical_cores());
    ConvertedModel packages(args.prefill_packages, args.tokenizer, milexec::Rounding::f16, &pool,
                            converted_quant_dot(args.run.quant_dot));
    const anemll::ConvertLayout& layout = packages.layout();
    if (layout.vocab_size != model.spec().n_vocab)
        fail("--prefill-packages {}: meta.yaml: vocab_size: {}, the model has {}",
             args.prefill_packages, layout.vocab_size, model.spec().n_vocab);
    so.fp16_scale = layout.fp16_scale;
    so.n_ctx = std::min(so.n_ctx, layout.context_length);
    std::unique_ptr<DraftSource> draft;
    if (args.speculative.active()) {
        so.verify_tokens = args.speculative.max_draft_n() + 1;
        draft = std::make_unique<DraftSource>(args.speculative, model, so);
    }
    const std::unique_ptr<Session> session = open_session(model, so);
    HybridModel hybrid(packages.pipeline(), *session);
    const int status = stream(
        hybrid, *model.tokenizer, model.stop_ids(), args,
        fmt::format("prefill on the packages, decode on {}, {}, {}",
                    thread_count(session->threads()), args.run.precision_name, kernels_isa()),
        draft.get(), "the packages' context, or the model's");
    const KvHandoff& h = hybrid.handoff();
    fmt::print(stderr, "KV hand-off: {} positions, {:.3f} MB in {:.3f} ms ({:.1f} GB/s)\n",
               h.tokens, h.bytes / 1e6, h.seconds * 1e3, h.bytes / std::max(h.seconds, 1e-9) / 1e9);
    return status;
}

int run_generate(const GenerateArgs& args) {
    if (is_converted_dir(args.model)) {
        const SpeculativeOptions& spec = args.speculative;
        // Run as ANEMLL's runners do, rounding as --precision says.
        const auto rounding = converted_rounding(args.run.precision_name);
        ThreadPool pool(args.run.threads > 0 ? args.run.threads : ThreadPool::physical_cores());
        ConvertedModel converted(args.model, args.tokenizer, rounding, &pool,
                                 converted_quant_dot(args.run.quant_dot));
        std::unique_ptr<DraftSource> draft;
        if (spec.active()) {
            if (converted.pipeline().verify_tokens() < 2)
                fail("{}: meta.yaml: verify_tokens: none; convert with --verify 8 to draft",
                     args.model);
            draft = std::make_unique<DraftSource>(spec, converted.tokenizer(), args.run.threads);
        }
        return stream(converted.pipeline(), converted.tokenizer(), converted.stop_ids(), args,
                      fmt::format("Core ML packages on the MIL interpreter, {}, {}",
                                  thread_count(pool.size()), args.run.precision_name),
                      draft.get(), "the packages were converted with this --ctx");
    }
    Model model = open_model(args.model, args.tokenizer, true);
    SessionOptions so = args.run.session(model);
    if (!args.prefill_packages.empty()) return run_hybrid(args, model, so);
    std::unique_ptr<DraftSource> draft;
    if (args.speculative.active()) {
        so.verify_tokens = args.speculative.max_draft_n() + 1;
        draft = std::make_unique<DraftSource>(args.speculative, model, so);
    }
    const std::unique_ptr<Session> session = open_session(model, so);
    return stream(*session, *model.tokenizer, model.stop_ids(), args,
                  fmt::format("{}, {}, {}", thread_count(session->threads()),
                              args.run.precision_name, kernels_isa()),
                  draft.get(), args.run.context_limit_reason(model.spec()));
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<GenerateArgs>();
    app.add_option("model", args->model,
                   "Hugging Face folder, GGUF file, llama2.c .bin, or a folder anelm convert wrote")
        ->required();
    app.add_option("--tokenizer", args->tokenizer,
                   "tokenizer.json, a GGUF file or llama2.c tokenizer.bin");
    app.add_option("-p,--prompt", args->prompt, "the prompt")->required();
    auto* n = in_range(app.add_option("-n", args->n,
                                      "new tokens to generate at most (-1: until the context is "
                                      "full or an end-of-sequence token)"),
                       {-1, 1e9})
                  ->capture_default_str();
    in_range(app.add_option("--steps", args->steps,
                            "stop when the prompt and the generated tokens together reach N, as "
                            "llama2.c's run.c counts its steps (instead of -n)"),
             {1, 1e9})
        ->excludes(n);
    auto* chat =
        app.add_flag("--chat", args->chat, "render the prompt through the model's chat template");
    app.add_option("--template", args->template_file,
                   "with --chat: a Jinja chat template file to use instead of the model's")
        ->needs(chat);
    add_speculative_options(app, args->speculative, false);
    app.add_option("--prefill-packages", args->prefill_packages,
                   "prefill the prompt through this converted folder of the model (the Neural "
                   "Engine's form, on the MIL interpreter), hand the KV cache over and decode on "
                   "the CPU; --precision ane gives either path's tokens");
    args->sampler.add_to(app);
    add_run_options(app, args->run);
    return [args] { return run_generate(*args); };
}

const bool registered = register_command({"generate", "Generate text from a prompt", setup});

}  // namespace
}  // namespace anelm::cli
