#include "speculative_options.h"

#include <algorithm>

#include "base/error.h"
#include "run_options.h"

namespace anelm::cli {

namespace {

// A draft model must spell every token as the target does: its drafts are ids.
void check_same_vocabulary(const Model& draft, const Model& target) {
    const Tokenizer& d = *draft.tokenizer;
    const Tokenizer& t = *target.tokenizer;
    if (d.n_vocab() != t.n_vocab())
        fail("--draft {}: its tokenizer has {} tokens, the model's {}: a draft model needs the "
             "same vocabulary",
             draft.path, d.n_vocab(), t.n_vocab());
    for (int32_t id = 0; id < t.n_vocab(); ++id)
        if (d.token_bytes(id) != t.token_bytes(id))
            fail("--draft {}: token {} is '{}' there but '{}' in the model: a draft model needs "
                 "the same vocabulary",
                 draft.path, id, d.token_bytes(id), t.token_bytes(id));
}

}  // namespace

int64_t SpeculativeOptions::max_draft_n() const {
    return *std::max_element(draft_n.begin(), draft_n.end());
}

void add_speculative_options(CLI::App& app, SpeculativeOptions& options, bool sweep) {
    app.add_option("--lookup", options.lookup,
                   "speculative decoding with prompt lookup: draft what followed the latest "
                   "earlier n-gram (n up to N) of the prompt or output");
    app.add_option("--draft", options.draft_model,
                   "speculative decoding with a smaller draft model that has the same tokenizer");
    app.add_option("--draft-quant", options.draft_quant,
                   "speculative decoding with the model's own weights quantized so as drafter "
                   "(e.g. lut4, int4; with --draft, the draft model's)");
    auto* n = app.add_option("--draft-n", options.draft_n,
                             sweep ? "tokens drafted per verify pass, a list to sweep (1,3,7)"
                                   : "tokens drafted per verify pass (verify: N + 1)")
                  ->capture_default_str()
                  ->check(CLI::PositiveNumber);
    if (sweep)
        n->delimiter(',');
    else
        n->expected(1);
    app.add_flag("--draft-adaptive", options.adaptive,
                 "adapt the drafts per pass: two more after a pass that kept all, one fewer "
                 "after a rejection (at most --draft-n)");
}

DraftSource::DraftSource(const SpeculativeOptions& options) {
    if (options.lookup < 1) fail("--lookup: expected at least 1");
    drafter_ = std::make_unique<LookupDrafter>(options.lookup);
    label_ = fmt::format("prompt lookup ({})", options.lookup);
}

DraftSource::DraftSource(const SpeculativeOptions& options, const Model& target,
                         const SessionOptions& target_options) {
    if (options.lookup > 0 && (!options.draft_model.empty() || !options.draft_quant.empty()))
        fail("--lookup drafts without a model: give it or --draft / --draft-quant, not both");
    if (options.lookup > 0) {
        *this = DraftSource(options);
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
        check_same_vocabulary(*model_, target);
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
