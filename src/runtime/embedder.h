// Embeddings: a text's vector is its tokens' final-norm outputs (the hidden
// states before the LM head) pooled into one row and scaled to unit length.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "io/pooling_config.h"
#include "runtime/session.h"

namespace anelm {

// rows f32 [n, width] pooled into out [width]: their mean, the last row or the
// first (CLS), then L2-normalised.
void pool_rows(std::span<const float> rows, Pooling pooling, std::span<float> out);
// Scales v to length 1; a zero vector stays zero.
void l2_normalize(std::span<float> v);

class Embedder {
public:
    // The session must have its embed function (SessionOptions::hidden).
    Embedder(Session& session, Pooling pooling);
    // One unit vector of dims() per input. Inputs run together, up to the
    // session's batch_rows at once and its prefill batch of tokens in all; one
    // longer than that runs alone in pieces. Nothing is kept between inputs.
    // Throws Error for an input with no tokens or more than the context.
    std::vector<std::vector<float>> embed(std::span<const std::vector<int32_t>> inputs);
    int64_t dims() const { return dims_; }
    Pooling pooling() const { return pooling_; }

private:
    Session& session_;
    Pooling pooling_;
    int64_t dims_ = 0;
    std::vector<Sequence> seqs_;  // grown to the widest batch, each reused from position 0
    std::vector<float> rows_;     // a long input's rows, piece by piece

    // The inputs in one pass, their vectors into out.
    void embed_batch(std::span<const std::vector<int32_t>> inputs,
                     std::span<std::vector<float>> out);
    void embed_long(const std::vector<int32_t>& tokens, std::vector<float>& out);
};

}  // namespace anelm
