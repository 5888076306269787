// anelm perplexity: perplexity of a text file, llama.cpp style, and with
// --kl-base how far the quantized model's predictions are from the base model's.
#include <fmt/core.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/error.h"
#include "command.h"
#include "flag_checks.h"
#include "io/json_file.h"
#include "run_options.h"
#include "runtime/model.h"
#include "runtime/perplexity.h"

namespace anelm::cli {
namespace {

struct PerplexityArgs {
    std::string model, tokenizer, text_path;
    int64_t n_chunks = 0;
    int64_t batch = 0;  // tokens per prefill call; 0: the whole window
    bool kl_base = false, json = false;
    RunOptions run;
    const CLI::Option* quant_option = nullptr;
};

// The BOS id when the tokenizer starts every sequence with one, else -1.
int32_t leading_bos(const Tokenizer& tokenizer) {
    const std::vector<int32_t> empty = tokenizer.encode("", true);
    return !empty.empty() && empty.front() == tokenizer.bos_id() ? tokenizer.bos_id() : -1;
}

void print_text(const PerplexityArgs& args, const quant::QuantSpec& spec, int64_t n_tokens,
                const PerplexityOptions& po, const PerplexityResult& r) {
    fmt::print("model       {}\n", args.model);
    fmt::print("text        {}: {} tokens, {} windows of {}, {} tokens scored\n", args.text_path,
               n_tokens, r.n_windows, po.n_ctx, r.n_scored);
    fmt::print("quant       {}\n", spec.to_string());
    if (!args.kl_base) {
        fmt::print("perplexity  {:.4f} ± {:.4f}\n", r.nll.perplexity, r.nll.perplexity_se);
        return;
    }
    fmt::print("perplexity  base {:.4f} ± {:.4f}, quantized {:.4f} ± {:.4f}\n",
               r.base_nll.perplexity, r.base_nll.perplexity_se, r.nll.perplexity,
               r.nll.perplexity_se);
    fmt::print("KL(base || quantized)  mean {:.6f}, p99 {:.6f}\n", r.kl_mean, r.kl_p99);
    fmt::print("top-1 agreement  {:.2f}%\n", 100 * r.top1);
}

void print_json(const PerplexityArgs& args, const quant::QuantSpec& spec, int64_t n_tokens,
                const PerplexityOptions& po, const PerplexityResult& r) {
    nlohmann::ordered_json j;
    j["model"] = args.model;
    j["text"] = args.text_path;
    j["quant"] = spec.to_string();
    j["n_tokens"] = n_tokens;
    j["n_ctx"] = po.n_ctx;
    j["n_windows"] = r.n_windows;
    j["n_scored"] = r.n_scored;
    j["perplexity"] = r.nll.perplexity;
    j["perplexity_se"] = r.nll.perplexity_se;
    if (args.kl_base) {
        j["base_perplexity"] = r.base_nll.perplexity;
        j["base_perplexity_se"] = r.base_nll.perplexity_se;
        j["kl_mean"] = r.kl_mean;
        j["kl_p99"] = r.kl_p99;
        j["top1"] = r.top1;
    }
    fmt::print("{}\n", j.dump(2));
}

int run_perplexity(const PerplexityArgs& args) {
    if (args.kl_base && args.quant_option->count() == 0 && args.run.kv == "f16")
        fail("--kl-base compares the --quant or --kv model with the base model: give one");
    const Model model = open_model(args.model, args.tokenizer, true);
    SessionOptions so = args.run.session(model);
    // With what the tokenizer adds (BOS), as llama.cpp's tool tokenizes the text:
    // the windows then hold the same tokens as its windows.
    const std::vector<int32_t> tokens =
        model.tokenizer->encode(read_text_file(args.text_path), true);

    PerplexityOptions po;
    po.n_ctx = args.run.n_ctx;
    po.n_chunks = args.n_chunks;
    po.bos_id = leading_bos(*model.tokenizer);
    if (args.batch < 0) fail("--batch must be positive, got {}", args.batch);
    so.prefill_batch = args.batch > 0 ? args.batch : po.n_ctx;
    so.all_logits = true;
    const std::unique_ptr<Session> session = open_session(model, so);
    std::unique_ptr<Session> base;
    if (args.kl_base) {
        SessionOptions base_options = so;
        base_options.quant = {};
        base_options.kv = KvType::f16;
        base = std::make_unique<Session>(model.spec(), model.weights(), base_options);
    }
    PerplexityResult r;
    {
        ProgressBar bar("perplexity");
        r = perplexity(*session, base.get(), tokens, po, bar.callback());
    }
    if (args.json) {
        print_json(args, so.quant, static_cast<int64_t>(tokens.size()), po, r);
    } else {
        print_text(args, so.quant, static_cast<int64_t>(tokens.size()), po, r);
    }
    return 0;
}

std::function<int()> setup(CLI::App& app) {
    auto args = std::make_shared<PerplexityArgs>();
    args->run.n_ctx = 512;
    app.add_option("model", args->model, "Hugging Face folder, GGUF file or llama2.c .bin")
        ->required();
    app.add_option("-f,--file", args->text_path, "the text to score (UTF-8)")->required();
    app.add_option("--tokenizer", args->tokenizer,
                   "tokenizer.json, a GGUF file or llama2.c tokenizer.bin");
    in_range(app.add_option("--chunks", args->n_chunks, "windows to run (default: all)"),
             {1, 1e9});
    in_range(app.add_option("-b,--batch", args->batch,
                            "tokens per prefill call (default: the whole window); 16 or fewer "
                            "take the decode path of quantized products, integer dot products "
                            "included"),
             {1, 1 << 20});
    app.add_flag("--kl-base", args->kl_base,
                 "also run the unquantized model with an f16 KV cache: KL divergence, top-1 "
                 "agreement");
    app.add_flag("--json", args->json, "print JSON");
    add_run_options(app, args->run);
    args->quant_option = app.get_option("--quant");
    return [args] { return run_perplexity(*args); };
}

const bool registered = register_command(
    {"perplexity", "Perplexity of a text; with --kl-base, KL divergence from the base model",
     setup});

}  // namespace
}  // namespace anelm::cli
