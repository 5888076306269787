// The speculative-decoding options that generate, chat and bench share, and
// the drafter they choose.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/thread_pool.h"
#include "converted/ane_pipeline.h"
#include "runtime/drafter.h"
#include "runtime/model.h"
#include "runtime/session.h"

namespace anelm::cli {

struct SpeculativeOptions {
    int lookup = 0;           // prompt lookup over n-grams of up to this many tokens; 0: off
    std::string draft_model;  // a smaller model (or converted folder) with the target's tokenizer
    std::string draft_quant;  // the draft's weights quantized so (the target's own without --draft)
    std::vector<int64_t> draft_n{7};  // tokens drafted per pass (bench sweeps a list)
    bool adaptive = false;

    bool active() const { return lookup > 0 || !draft_model.empty() || !draft_quant.empty(); }
    int64_t max_draft_n() const;
};

// --lookup, --draft, --draft-quant, --draft-n (a list when `sweep`) and --draft-adaptive.
void add_speculative_options(CLI::App& app, SpeculativeOptions& options, bool sweep);

// The drafter the options name, with the model and session it runs on.
class DraftSource {
public:
    // Throws Error on conflicting options or a draft model whose vocabulary
    // differs from the target's. target_options: the target's session
    // options, whose context and threads the draft model shares.
    DraftSource(const SpeculativeOptions& options, const Model& target,
                const SessionOptions& target_options);
    // A converted folder's drafter: prompt lookup, or another converted folder
    // (--draft OUT2) on the MIL interpreter with `threads` threads.
    DraftSource(const SpeculativeOptions& options, const Tokenizer& target, int threads);
    Drafter& drafter() { return *drafter_; }
    // How it drafts, for the statistics line: "prompt lookup (3)", "lut4 self-draft" ...
    const std::string& label() const { return label_; }

private:
    void use_lookup(int max_ngram);
    // --draft OUT2: a converted folder run on the MIL interpreter.
    void open_converted(const std::string& dir, const Tokenizer& target, int threads);

    std::optional<Model> model_;
    std::unique_ptr<Session> session_;
    std::unique_ptr<ThreadPool> pool_;
    std::unique_ptr<ConvertedModel> converted_;
    std::unique_ptr<Drafter> drafter_;
    std::string label_;
};

}  // namespace anelm::cli
