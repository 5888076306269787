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
#include "quant/quant_spec.h"
#include "runtime/token_model.h"

namespace anelm {

struct SessionOptions {
    int64_t n_ctx = 4096;         // capped at the model's trained context
    int64_t prefill_batch = 512;  // tokens per prefill call
    int threads = 0;              // 0: physical cores
    Precision precision = Precision::f32;
    bool all_logits = false;    // prefill returns logits for every token (tests)
    quant::QuantSpec quant;     // weights quantized at load (default: none)
    ProgressFn quant_progress;  // sees the quantization's progress
    float fp16_scale = 1;       // the residual stream scaled by this power of two
                                // (passes/fp16_scale.h), to keep half precision in range
    bool mmap = false;          // dense weights read in place from the file mapping
                                // instead of copied to private memory (private_weights.h)
    int64_t verify_tokens = 0;  // a function scoring this many tokens in one pass with
                                // every row's logits (speculative decoding); 0: none
};

class Session : public TokenModel {
public:
    Session(const ModelSpec& spec, const WeightStore& weights, const SessionOptions& options);

    // Feeds tokens at the current position and returns the logits of the last
    // one (or of every one with all_logits), f32 [rows, n_vocab].
    std::span<const float> prefill(std::span<const int32_t> tokens) override;
    std::span<const float> decode(int32_t token) override;
    void reset() { pos_ = 0; }
    // Moves back to an earlier position (keeps the cache before it).
    void rewind(int64_t pos) override;
    int64_t verify_tokens() const override { return verify_tokens_; }
    std::span<const float> verify(std::span<const int32_t> tokens) override;

    int64_t pos() const override { return pos_; }
    int64_t n_ctx() const override { return executor_->n_ctx(); }
    int64_t n_vocab() const { return n_vocab_; }
    const ir::Program& program() const { return program_; }
    Executor& executor() { return *executor_; }
    int threads() const { return pool_->size(); }
    // Bytes of weights one decode step reads (every matrix and gain it uses,
    // quantized ones as codes and tables).
    size_t decode_weight_bytes() const;

private:
    ir::Program program_;
    std::unique_ptr<ThreadPool> pool_;
    std::unique_ptr<Executor> executor_;
    ExecState state_;
    int64_t pos_ = 0;
    int64_t n_vocab_ = 0;
    int64_t prefill_batch_ = 0;
    int64_t verify_tokens_ = 0;
    std::vector<float> all_logits_;
};

}  // namespace anelm
