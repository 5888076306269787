// One sequence being run: the program, its executor and its KV cache.
#pragma once

#include <cstdint>
#include <memory>
#include <span>

#include "base/progress.h"
#include "base/thread_pool.h"
#include "exec/cpu/executor.h"
#include "io/model_spec.h"
#include "io/weight_store.h"
#include "ir/program.h"
#include "quant/input_stats.h"
#include "quant/quant_spec.h"
#include "runtime/token_model.h"

namespace anelm {

struct SessionOptions {
    int64_t n_ctx = 4096;         // capped at the model's trained context
    int64_t prefill_batch = 512;  // tokens per prefill call
    int threads = 0;              // 0: physical cores
    Precision precision = Precision::f32;
    KvType kv = KvType::f16;    // how the KV cache stores its rows (exec/cpu/kv_cache.h)
    bool all_logits = false;    // prefill returns logits for every token (tests)
    quant::QuantSpec quant;     // weights quantized at load (default: none)
    ProgressFn quant_progress;  // sees the quantization's progress
    // Input statistics that make the LUT weights data-aware (runtime/calibration.h); null: none.
    std::shared_ptr<const quant::ModelCalibration> calibration;
    float fp16_scale = 1;       // the residual stream scaled by this power of two
                                // (passes/fp16_scale.h), to keep half precision in range
    bool mmap = false;          // dense weights read in place from the file mapping
                                // instead of copied to private memory (private_weights.h)
    int64_t verify_tokens = 0;  // a function scoring this many tokens in one pass with
                                // every row's logits (speculative decoding); 0: none
    int64_t batch_rows = 0;     // up to this many sequences in one pass (a server's
                                // slots; decode_batch, step); 0 or 1: one
    bool hidden = false;        // an embed function: every token's final-norm output
                                // (hidden_rows), not logits
};

// One sequence's KV cache and position. A session runs its own, and any number
// of others that share its weights (decode_batch runs several in one pass).
struct Sequence {
    ExecState state;
    int64_t pos = 0;
};

class Session : public TokenModel {
public:
    Session(const ModelSpec& spec, const WeightStore& weights, const SessionOptions& options);

    // Feeds tokens at the current position and returns the logits of the last
    // one (or of every one with all_logits), f32 [rows, n_vocab].
    std::span<const float> prefill(std::span<const int32_t> tokens) override;
    std::span<const float> decode(int32_t token) override;
    void reset() { own_.pos = 0; }
    // Moves back to an earlier position (keeps the cache before it).
    void rewind(int64_t pos) override;
    bool can_rewind(int64_t pos) const override { return can_rewind(own_, pos); }
    // A recurrent state (Qwen3.5) reaches back only a few positions.
    bool can_rewind(const Sequence& seq, int64_t pos) const {
        return pos >= 0 && pos <= seq.pos && executor_->can_start(seq.state, pos);
    }
    // The cache of the session's own sequence, and a move to a later position
    // whose keys and values another runner wrote into it (kv_handoff.h).
    ExecState& state() { return own_.state; }
    void advance_to(int64_t pos);
    int64_t verify_tokens() const override { return verify_tokens_; }
    std::span<const float> verify(std::span<const int32_t> tokens) override;

    // Other sequences on the same weights: an empty cache at position 0.
    Sequence new_sequence() const { return {executor_->make_state(), 0}; }
    // Feeds tokens to seq at its position; the logits of the last one.
    std::span<const float> prefill(Sequence& seq, std::span<const int32_t> tokens);
    // tokens[i] fed to *seqs[i], all in one pass that reads every weight once;
    // returns each one's next-token logits, f32 [seqs, n_vocab]. Up to
    // batch_rows sequences (any number when there is only one).
    std::span<const float> decode_batch(std::span<Sequence* const> seqs,
                                        std::span<const int32_t> tokens);
    // counts[i] tokens fed to *seqs[i] (tokens holds them one sequence after
    // another, prefill_batch at most in all), in one pass: prompts and decode
    // steps together. Returns the logits after each sequence's last token,
    // f32 [seqs, n_vocab].
    std::span<const float> step(std::span<Sequence* const> seqs, std::span<const int32_t> tokens,
                                std::span<const int64_t> counts);
    // As step, through the verify function (verify_tokens rows in all): every
    // row's logits, f32 [tokens, n_vocab] (speculative decoding of several).
    std::span<const float> verify(std::span<Sequence* const> seqs, std::span<const int32_t> tokens,
                                  std::span<const int64_t> counts);
    // As step, through the embed function (SessionOptions::hidden): every row's
    // final-norm output, f32 [tokens, n_embd].
    std::span<const float> hidden_rows(std::span<Sequence* const> seqs,
                                       std::span<const int32_t> tokens,
                                       std::span<const int64_t> counts);
    bool has_hidden() const { return hidden_fn_ != 0; }
    int64_t prefill_batch() const { return prefill_batch_; }
    int64_t batch_rows() const { return batch_rows_; }

    int64_t pos() const override { return own_.pos; }
    int64_t n_ctx() const override { return executor_->n_ctx(); }
    int64_t n_vocab() const { return n_vocab_; }
    const ir::Program& program() const { return program_; }
    Executor& executor() { return *executor_; }
    ThreadPool& pool() { return *pool_; }
    int threads() const { return pool_->size(); }
    // Bytes of weights one decode step reads (every matrix and gain it uses,
    // quantized ones as codes and tables).
    size_t decode_weight_bytes() const;

private:
    ir::Program program_;
    std::unique_ptr<ThreadPool> pool_;
    std::unique_ptr<Executor> executor_;
    Sequence own_;
    int64_t n_vocab_ = 0;
    int64_t prefill_batch_ = 0;
    int64_t verify_tokens_ = 0;
    int64_t batch_rows_ = 0;
    size_t hidden_fn_ = 0;  // 0: none (the prefill function is function 0)
    std::vector<float> all_logits_;

    // counts[i] tokens to *seqs[i] through function fn; its output as it is.
    std::span<const float> run_segments(size_t fn, std::span<Sequence* const> seqs,
                                        std::span<const int32_t> tokens,
                                        std::span<const int64_t> counts);
};

}  // namespace anelm
