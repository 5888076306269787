#include "bench_speculative.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>

#include "base/error.h"
#include "runtime/generate.h"

namespace anelm::cli {

namespace {

double median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

// Greedy generation from the prompt, with or without drafts: the best of the
// repetitions' speeds and the last run's statistics.
struct Run {
    double tok_s = 0;
    GenerateStats stats;
};

Run best_run(Session& session, const std::vector<int32_t>& prompt, const SpeculativeBench& bench,
             Drafter* drafter, int64_t draft_n, bool adaptive) {
    GenerateOptions options;
    options.max_new_tokens = bench.n_gen;
    options.sampler.temp = 0;
    options.drafter = drafter;
    options.draft_n = draft_n;
    options.adaptive_draft = adaptive;
    Run best;
    for (int r = 0; r < bench.repetitions; ++r) {
        session.reset();
        const GenerateStats stats = generate(session, prompt, options, [](int32_t) {});
        best.tok_s =
            std::max(best.tok_s, stats.n_generated / std::max(stats.generate_seconds, 1e-9));
        best.stats = stats;
    }
    return best;
}

// One pass of `rows` tokens at the end of the prompt, against one decode step
// there: the median of several timings of each.
double verify_cost(Session& session, const std::vector<int32_t>& prompt, int64_t rows) {
    session.reset();
    session.prefill(prompt);
    const int64_t at = session.pos();
    const std::vector<int32_t> tokens(prompt.end() - std::min<int64_t>(rows, prompt.size()),
                                      prompt.end());
    std::vector<double> verify, decode;
    for (int r = 0; r < 7; ++r) {
        verify.push_back(seconds_of([&] { session.verify(tokens); }));
        session.rewind(at);
        decode.push_back(seconds_of([&] { session.decode(tokens.front()); }));
        session.rewind(at);
    }
    return median(verify) / median(decode);
}

}  // namespace

double seconds_of(const std::function<void()>& fn) {
    const auto start = std::chrono::steady_clock::now();
    fn();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

const char* default_speculative_prompt() {
    return "Rename the variable `total` to `sum` in this function and return the whole function.\n"
           "\n"
           "int add_all(const std::vector<int>& values) {\n"
           "    int total = 0;\n"
           "    for (int v : values) {\n"
           "        if (v < 0) continue;\n"
           "        total += v;\n"
           "    }\n"
           "    return total;\n"
           "}\n"
           "\n"
           "int add_all(const std::vector<int>& values) {\n";
}

void bench_speculative(Session& session, const Model& model, DraftSource& draft,
                       const SpeculativeOptions& options, const SpeculativeBench& bench) {
    if (model.tokenizer == nullptr) fail("{}: speculative bench needs a tokenizer", model.path);
    const std::vector<int32_t> prompt = model.tokenizer->encode(bench.prompt, true);
    if (prompt.empty()) fail("the speculative bench's prompt has no tokens");

    const Run plain = best_run(session, prompt, bench, nullptr, 0, false);
    fmt::print("\nspeculative decoding ({}), {}-token prompt, {} tokens greedy, best of {}\n",
               draft.label(), prompt.size(), bench.n_gen, bench.repetitions);
    fmt::print("| {:>7} | {:>9} | {:>8} | {:>13} | {:>10} | {:>10} | {:>7} |\n", "draft-n",
               "accepted", "tok/pass", "verify/decode", "plain t/s", "spec t/s", "speedup");
    fmt::print("| {:->7} | {:->9} | {:->8} | {:->13} | {:->10} | {:->10} | {:->7} |\n", "", "", "",
               "", "", "", "");
    std::vector<int64_t> lengths = options.draft_n;
    std::sort(lengths.begin(), lengths.end());
    for (int64_t k : lengths) {
        const Run spec = best_run(session, prompt, bench, &draft.drafter(), k, options.adaptive);
        const GenerateStats& s = spec.stats;
        fmt::print(
            "| {:>7} | {:>8.0f}% | {:>8.2f} | {:>12.2f}x | {:>10.2f} | {:>10.2f} | {:>6.2f}x |\n",
            fmt::format("{}{}", k, options.adaptive ? "a" : ""),
            100.0 * s.n_accepted / std::max<int64_t>(s.n_drafted, 1),
            s.n_verify > 0 ? 1.0 + double(s.n_accepted) / double(s.n_verify) : 1.0,
            verify_cost(session, prompt, k + 1), plain.tok_s, spec.tok_s, spec.tok_s / plain.tok_s);
    }
}

}  // namespace anelm::cli
