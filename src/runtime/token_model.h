// What the generation loop runs: a model that takes tokens at its current
// position and scores the next one. The CPU session is one; a converted
// directory run the way ANEMLL's runners run it is another.
#pragma once

#include <cstdint>
#include <span>

namespace anelm {

class TokenModel {
public:
    virtual ~TokenModel() = default;
    // Feeds tokens at the current position; returns the next token's logits
    // f32 [n_vocab] (a model that only reports its argmax gives -inf elsewhere).
    virtual std::span<const float> prefill(std::span<const int32_t> tokens) = 0;
    virtual std::span<const float> decode(int32_t token) = 0;
    virtual int64_t pos() const = 0;
    virtual int64_t n_ctx() const = 0;

    // Speculative decoding. The most tokens verify takes in one pass (0: the
    // model cannot verify); verify feeds them at the current position and
    // returns every row's logits, f32 [tokens, n_vocab] (row i scores the token
    // after tokens[0..i]); rewind moves back to an earlier position, after
    // which the cache past it is never read again.
    virtual int64_t verify_tokens() const { return 0; }
    // Whether verify can take n tokens at the current position.
    virtual bool can_verify(int64_t n) const {
        return n >= 1 && n <= verify_tokens() && pos() + n <= n_ctx();
    }
    virtual std::span<const float> verify(std::span<const int32_t> tokens);
    virtual void rewind(int64_t pos);
    virtual bool can_rewind(int64_t pos) const { return false; }
};

}  // namespace anelm
