// anelm bench's speculative table: for each draft length, how many drafts the
// target keeps, what one verify pass costs against one decode step, and the
// generation speed beside plain decoding on the same prompt.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include "runtime/model.h"
#include "runtime/session.h"
#include "speculative_options.h"

namespace anelm::cli {

struct SpeculativeBench {
    std::string prompt;  // the text generation continues (tokenized with the model's tokenizer)
    int64_t n_gen = 128;
    int repetitions = 3;
};

// The session must verify max_draft_n() + 1 tokens and hold the prompt, the
// generated tokens and one verify pass.
void bench_speculative(Session& session, const Model& model, DraftSource& draft,
                       const SpeculativeOptions& options, const SpeculativeBench& bench);

// Wall-clock seconds `fn` takes.
double seconds_of(const std::function<void()>& fn);

// A prompt whose continuation copies from it (code to be edited), the case
// prompt lookup is for.
const char* default_speculative_prompt();

}  // namespace anelm::cli
