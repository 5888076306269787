#include "speculative_options.h"

#include <algorithm>

#include "base/error.h"
#include "flag_checks.h"
#include "run_options.h"

namespace anelm::cli {

namespace {

// A draft model must spell every token as the target does: its drafts are ids.
void check_same_vocabulary(const std::string& draft_path, const Tokenizer& d, const Tokenizer& t) {
    if (d.n_vocab() != t.n_vocab())
        fail(
            "--draft {}: its tokenizer has {} tokens, the model's {}: a draft model needs the "
            "same vocabulary",
            draft_path, d.n_vocab(), t.n_vocab());
    for (int32_t id = 0; id < t.n_vocab(); ++id)
        if (d.token_bytes(id) != t.token_bytes(id))
            fail(
                "--draft {}: token {} is '{}' there but '{}' in the model: a draft model needs "
                "the same vocabulary",
                draft_path, id, d.token_bytes(id), t.token_bytes(id));
}

}  // namespace

int64_t SpeculativeOptions::max_draft_n() const {
    return *std::max_element(draft_n.begin(), draft_n.end());
}

void add_speculative_options(CLI::App& app, SpeculativeOptions& options, bool sweep) {
    in_range(app.add_option("--lookup", options.lookup,
                            "speculative decoding with prompt lookup: draft what followed the "
                            "latest earlier n-gram (n up to N) of the prompt or output"),
             {1, 64});
    app.add_option("--draft", options.draft_model,
                   "speculative decoding with a smaller draft model that has the same tokenizer");
    app.add_option("--draft-quant", options.draft_quant,
                   "speculative decoding with the model's own weights quantized so as drafter "
                   "(e.g. lut4, int4; with --draft, the draft model's)");
    auto* n = app.add_option("--draft-n", options.draft_n,
                             sweep ? "tokens drafted per verify pass, a list to sweep (1,3,7)"
                                   : "tokens drafted per verify pass (verify: N + 1)")
                  ->capture_default_str();
    in_range(n, {1, 64});
    if (sweep)
        n->delimiter(',');
    else
        n->expected(1);
    app.add_flag("--draft-adaptive", options.adaptive,
                 "adapt the drafts per pass: two more after a pass that kept all, one fewer "
                 "after a rejection (at most --draft-n)");
}

void DraftSource::use_lookup(int max_ngram) {
    drafter_ = std::make_unique<LookupDrafter>(max_ngram);
    label_ = fmt::format("prompt lookup ({})", max_ngram);
}

void DraftSource::open_converted(const std::string& dir, const Tokenizer& target, int threads) {
    pool_ = std::make_unique<ThreadPool>(threads > 0 ? threads : ThreadPool::physical_cores());
    converted_ = std::make_unique<ConvertedModel>(dir, "", milexec::Rounding::f16, pool_.get());
    check_same_vocabulary(dir, converted_->tokenizer(), target);
    drafter_ = std::make_unique<ModelDrafter>(converted_->pipeline());
    label_ = fmt::format("draft packages {}", dir);
}

DraftSource::DraftSource(const SpeculativeOptions& options, const Tokenizer& target, int threads) {
    if (!options.draft_quant.empty())
        fail(
            "--draft-quant: a converted folder's weights are not requantized: use --lookup or "
            "--draft OUT2");
    if (options.lookup > 0 && !options.draft_model.empty())
        fail("--lookup drafts without a model: give it or --draft, not both");
    if (options.lookup > 0) {
        use_lookup(options.lookup);
        return;
    }
    if (!is_converted_dir(options.draft_model))
        fail("--draft {}: a converted folder drafts with another converted folder (meta.yaml)",
             options.draft_model);
    open_converted(options.draft_model, target, threads);
}

DraftSource::DraftSource(const SpeculativeOptions& options, const Model& target,
                         const SessionOptions& target_options) {
    if (options.lookup > 0 && (!options.draft_model.empty() || !options.draft_quant.empty()))
        fail("--lookup drafts without a model: give it or --draft / --draft-quant, not both");
    if (options.lookup > 0) {
        use_lookup(options.lookup);
        return;
    }
    if (is_converted_dir(options.draft_model)) {
        if (!options.draft_quant.empty())
            fail("--draft-quant: the converted folder {} is not requantized", options.draft_model);
        open_converted(options.draft_model, *target.tokenizer, target_options.threads);
        return;
    }
    SessionOptions so;
    so.n_ctx = target_options.n_ctx;
    so.threads = target_options.threads;
    so.precision = target_options.precision;
    so.quant = quant::parse_quant_spec(options.draft_quant.empty() ? "none" : options.draft_quant);
    so.quant.int8_dot = target_options.quant.int8_dot;
    const Model* runs = &target;
    if (!options.draft_model.empty()) {
        model_.emplace(open_model(options.draft_model, "", true));
        check_same_vocabulary(options.draft_model, *model_->tokenizer, *target.tokenizer);
        runs = &*model_;
        label_ = fmt::format("draft model {}", options.draft_model);
    } else {
        label_ = fmt::format("self-draft, weights {}", so.quant.to_string());
    }
    if (!options.draft_model.empty() && !options.draft_quant.empty())
        label_ += fmt::format(" ({})", so.quant.to_string());
    session_ = open_session(*runs, so);
    drafter_ = std::make_unique<ModelDrafter>(*session_);
}

}  // namespace anelm::cli
