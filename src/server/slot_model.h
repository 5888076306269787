// What the server's scheduler runs: a model with several slots, each a
// sequence with its own cache and position, whose decode steps run together.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "runtime/embedder.h"
#include "runtime/session.h"
#include "runtime/token_model.h"

namespace anelm::server {

class SlotModel {
public:
    virtual ~SlotModel() = default;
    virtual int slots() const = 0;
    virtual int64_t n_ctx() const = 0;
    virtual int64_t pos(int slot) const = 0;
    // The longest prefix of a slot's cache that can be kept (at most `shared`).
    virtual int64_t keepable(int slot, int64_t shared) const = 0;
    virtual void rewind(int slot, int64_t pos) = 0;
    // The most slots, and tokens in all, that one step takes.
    virtual int max_segments() const = 0;
    virtual int64_t max_tokens() const = 0;
    // counts[i] tokens fed to slots[i] (tokens holds them one slot after
    // another), in one pass; the logits after each slot's last token,
    // f32 [slots, n_vocab].
    virtual std::span<const float> step(std::span<const int> slots, std::span<const int32_t> tokens,
                                        std::span<const int64_t> counts) = 0;

    // Speculative decoding: the most tokens one verify pass takes in all (0:
    // none), whether a slot can take `rows` of them now, and the pass itself,
    // as step but returning every row's logits, f32 [tokens, n_vocab].
    virtual int64_t verify_rows() const { return 0; }
    virtual bool can_verify(int slot, int64_t rows) const { return false; }
    virtual std::span<const float> verify(std::span<const int> slots,
                                          std::span<const int32_t> tokens,
                                          std::span<const int64_t> counts);

    // Embeddings: the vectors' length (0: the model cannot embed) and one unit
    // vector per input, several inputs per pass where the model can.
    virtual int64_t embedding_dims() const { return 0; }
    virtual std::vector<std::vector<float>> embed(std::span<const std::vector<int32_t>> inputs);
};

// CPU sessions: every slot a Sequence on one session's weights; a step runs
// the decode tokens of some and a prompt chunk of another in one pass.
class SessionSlots : public SlotModel {
public:
    // With the session's embed function (SessionOptions::hidden), embeddings
    // pooled by `pooling`, in sequences of their own beside the slots'.
    SessionSlots(Session& session, int slots, Pooling pooling = Pooling::mean);
    int slots() const override { return static_cast<int>(seqs_.size()); }
    int64_t n_ctx() const override { return session_.n_ctx(); }
    int64_t pos(int slot) const override { return seqs_.at(slot).pos; }
    int64_t keepable(int slot, int64_t shared) const override;
    void rewind(int slot, int64_t pos) override;
    int max_segments() const override { return slots(); }
    int64_t max_tokens() const override { return session_.prefill_batch(); }
    std::span<const float> step(std::span<const int> slots, std::span<const int32_t> tokens,
                                std::span<const int64_t> counts) override;
    int64_t verify_rows() const override { return session_.verify_tokens(); }
    bool can_verify(int slot, int64_t rows) const override;
    std::span<const float> verify(std::span<const int> slots, std::span<const int32_t> tokens,
                                  std::span<const int64_t> counts) override;
    int64_t embedding_dims() const override { return embedder_ ? embedder_->dims() : 0; }
    std::vector<std::vector<float>> embed(std::span<const std::vector<int32_t>> inputs) override;

private:
    Session& session_;
    std::vector<Sequence> seqs_;
    std::vector<Sequence*> batch_;
    std::unique_ptr<Embedder> embedder_;  // null without the embed function
};

// One sequence of a model that runs one at a time (a converted folder on the
// MIL interpreter): one slot.
class SingleSlot : public SlotModel {
public:
    explicit SingleSlot(TokenModel& model) : model_(model) {}
    int slots() const override { return 1; }
    int64_t n_ctx() const override { return model_.n_ctx(); }
    int64_t pos(int) const override { return model_.pos(); }
    int64_t keepable(int, int64_t shared) const override;
    void rewind(int, int64_t pos) override { model_.rewind(pos); }
    int max_segments() const override { return 1; }
    int64_t max_tokens() const override { return model_.n_ctx(); }
    std::span<const float> step(std::span<const int> slots, std::span<const int32_t> tokens,
                                std::span<const int64_t> counts) override;
    int64_t verify_rows() const override { return model_.verify_tokens(); }
    bool can_verify(int, int64_t rows) const override { return model_.can_verify(rows); }
    std::span<const float> verify(std::span<const int> slots, std::span<const int32_t> tokens,
                                  std::span<const int64_t> counts) override;

private:
    TokenModel& model_;
};

}  // namespace anelm::server
