#include "runtime/session.h"

#include <algorithm>
#include <set>

#include "base/error.h"
#include "passes/fp16_scale.h"
#include "passes/hidden_output.h"
#include "quant/quantize_program.h"
#include "quant/quantized_matrix.h"
#include "runtime/private_weights.h"
#include "runtime/runtime_program.h"

namespace anelm {

namespace {
constexpr size_t prefill_fn = 0;
constexpr size_t decode_fn = 1;
constexpr size_t verify_fn = 2;
}  // namespace

Session::Session(const ModelSpec& spec, const WeightStore& weights, const SessionOptions& options) {
    if (options.n_ctx <= 0) fail("--ctx must be positive, got {}", options.n_ctx);
    const int64_t n_ctx = spec.context_within(options.n_ctx);
    prefill_batch_ = std::clamp<int64_t>(options.prefill_batch, 1, n_ctx);
    ProgramOptions po;
    po.n_ctx = n_ctx;
    po.functions = {{"prefill", prefill_batch_, options.all_logits}, {"decode", 1, false}};
    if (options.verify_tokens < 0 || options.verify_tokens > n_ctx)
        fail("verify: {} tokens at once, expected 0 to {}", options.verify_tokens, n_ctx);
    verify_tokens_ = options.verify_tokens;
    if (verify_tokens_ > 0) po.functions.push_back({"verify", verify_tokens_, true});
    if (options.batch_rows < 0 || options.batch_rows > prefill_batch_)
        fail("batch: {} sequences at once, expected 0 to {} (the prefill batch)",
             options.batch_rows, prefill_batch_);
    batch_rows_ = options.batch_rows;
    if (options.hidden) po.functions.push_back({"embed", prefill_batch_, true});
    program_ = runtime_program(spec, weights, po);
    if (options.hidden) {
        hidden_fn_ = program_.functions.size() - 1;
        passes::hidden_output(program_.functions[hidden_fn_]);
    }
    passes::scale_residual(program_, options.fp16_scale);
    n_vocab_ = spec.n_vocab;
    pool_ = std::make_unique<ThreadPool>(options.threads > 0 ? options.threads
                                                             : ThreadPool::physical_cores());
    quant::QuantSpec quant = options.quant;
    quant.run_blocks = options.precision != Precision::ane;  // ane rounds every weight to half
    quant::quantize_program(program_, quant, *pool_, options.quant_progress, 0,
                            options.calibration.get());
    // The ane precision converts its weights to half on first use anyway.
    if (!options.mmap && options.precision != Precision::ane)
        copy_streamed_weights(program_, weights, *pool_);
    executor_ = std::make_unique<Executor>(program_, *pool_, options.precision,
                                           std::max<int64_t>(batch_rows_, 1), options.kv);
    own_ = new_sequence();
}

std::span<const float> Session::prefill(std::span<const int32_t> tokens) {
    return prefill(own_, tokens);
}

std::span<const float> Session::prefill(Sequence& seq, std::span<const int32_t> tokens) {
    if (tokens.empty()) fail("prefill needs at least one token");
    const bool all = program_.functions[prefill_fn].nodes.back().per_token;
    if (all) all_logits_.clear();
    std::span<const float> logits;
    for (size_t at = 0; at < tokens.size(); at += static_cast<size_t>(prefill_batch_)) {
        const auto chunk = tokens.subspan(at, std::min<size_t>(prefill_batch_, tokens.size() - at));
        logits = executor_->run(prefill_fn, chunk, seq.pos, seq.state);
        seq.pos += static_cast<int64_t>(chunk.size());
        if (all) all_logits_.insert(all_logits_.end(), logits.begin(), logits.end());
    }
    return all ? std::span<const float>(all_logits_) : logits;
}

std::span<const float> Session::decode(int32_t token) {
    auto logits = executor_->run(decode_fn, {&token, 1}, own_.pos, own_.state);
    ++own_.pos;
    return logits;
}

std::span<const float> Session::decode_batch(std::span<Sequence* const> seqs,
                                             std::span<const int32_t> tokens) {
    if (seqs.size() != tokens.size())
        fail("decode_batch: {} sequences but {} tokens", seqs.size(), tokens.size());
    if (seqs.size() == 1) {
        auto logits = executor_->run(decode_fn, tokens, seqs[0]->pos, seqs[0]->state);
        ++seqs[0]->pos;
        return logits;
    }
    const std::vector<int64_t> ones(seqs.size(), 1);
    return step(seqs, tokens, ones);
}

std::span<const float> Session::step(std::span<Sequence* const> seqs,
                                     std::span<const int32_t> tokens,
                                     std::span<const int64_t> counts) {
    auto logits = run_segments(prefill_fn, seqs, tokens, counts);
    // With every prompt row's logits (all_logits), keep each sequence's last.
    if (program_.functions[prefill_fn].nodes.back().per_token) {
        all_logits_.clear();
        int64_t end = 0;
        for (int64_t c : counts) {
            end += c;
            const auto row = logits.subspan(static_cast<size_t>((end - 1) * n_vocab_),
                                            static_cast<size_t>(n_vocab_));
            all_logits_.insert(all_logits_.end(), row.begin(), row.end());
        }
        return all_logits_;
    }
    return logits;
}

std::span<const float> Session::run_segments(size_t fn, std::span<Sequence* const> seqs,
                                             std::span<const int32_t> tokens,
                                             std::span<const int64_t> counts) {
    if (seqs.size() != counts.size())
        fail("step: {} sequences but {} token counts", seqs.size(), counts.size());
    if (static_cast<int64_t>(seqs.size()) > std::max<int64_t>(batch_rows_, 1))
        fail("step: {} sequences, the session batches up to {}", seqs.size(),
             std::max<int64_t>(batch_rows_, 1));
    std::vector<ExecSegment> segments;
    for (size_t i = 0; i < seqs.size(); ++i)
        segments.push_back({counts[i], seqs[i]->pos, &seqs[i]->state});
    auto out = executor_->run(fn, tokens, segments);
    for (size_t i = 0; i < seqs.size(); ++i) seqs[i]->pos += counts[i];
    return out;
}

std::span<const float> Session::verify(std::span<Sequence* const> seqs,
                                       std::span<const int32_t> tokens,
                                       std::span<const int64_t> counts) {
    if (verify_tokens_ == 0) fail("this session has no verify function");
    return run_segments(verify_fn, seqs, tokens, counts);
}

std::span<const float> Session::hidden_rows(std::span<Sequence* const> seqs,
                                            std::span<const int32_t> tokens,
                                            std::span<const int64_t> counts) {
    if (hidden_fn_ == 0) fail("this session has no embed function");
    return run_segments(hidden_fn_, seqs, tokens, counts);
}

std::span<const float> Session::verify(std::span<const int32_t> tokens) {
    if (tokens.empty() || static_cast<int64_t>(tokens.size()) > verify_tokens_)
        fail("verify takes 1 to {} tokens, got {}", verify_tokens_, tokens.size());
    if (own_.pos + static_cast<int64_t>(tokens.size()) > n_ctx())
        fail("verify: {} tokens at position {} pass the context of {}", tokens.size(), own_.pos,
             n_ctx());
    auto logits = executor_->run(verify_fn, tokens, own_.pos, own_.state);
    own_.pos += static_cast<int64_t>(tokens.size());
    return logits;
}

void Session::rewind(int64_t pos) {
    if (pos < 0 || pos > own_.pos) fail("cannot rewind to position {} from {}", pos, own_.pos);
    own_.pos = pos;
}

void Session::advance_to(int64_t pos) {
    if (pos < own_.pos || pos > n_ctx())
        fail("cannot move the session from position {} to {} (context {})", own_.pos, pos, n_ctx());
    own_.pos = pos;
}

size_t Session::decode_weight_bytes() const {
    std::set<ir::WeightId> used;
    for (const ir::Node& n : program_.functions[decode_fn].nodes)
        if ((n.op == ir::Op::linear || n.op == ir::Op::rms_norm) && n.weight != ir::no_weight) {
            used.insert(n.weight);
            if (n.bias != ir::no_weight) used.insert(n.bias);
        }
    size_t bytes = 0;
    for (ir::WeightId id : used) {
        const ir::Weight& w = program_.weights[id];
        bytes += w.quantized ? static_cast<size_t>(w.quantized->storage_bytes()) : w.view.n_bytes();
    }
    return bytes;
}

}  // namespace anelm
