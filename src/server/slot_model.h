// What the server's scheduler runs: a model with several slots, each a
// sequence with its own cache and position, whose decode steps run together.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

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
    // Feeds tokens to one slot; the next token's logits f32 [n_vocab].
    virtual std::span<const float> prefill(int slot, std::span<const int32_t> tokens) = 0;
    // tokens[i] fed to slots[i], in one pass; logits f32 [slots, n_vocab].
    virtual std::span<const float> decode(std::span<const int> slots,
                                          std::span<const int32_t> tokens) = 0;
};

// CPU sessions: every slot a Sequence on one session's weights, decoded in one
// batched pass.
class SessionSlots : public SlotModel {
public:
    SessionSlots(Session& session, int slots);
    int slots() const override { return static_cast<int>(seqs_.size()); }
    int64_t n_ctx() const override { return session_.n_ctx(); }
    int64_t pos(int slot) const override { return seqs_.at(slot).pos; }
    int64_t keepable(int, int64_t shared) const override { return shared; }
    void rewind(int slot, int64_t pos) override;
    std::span<const float> prefill(int slot, std::span<const int32_t> tokens) override;
    std::span<const float> decode(std::span<const int> slots,
                                  std::span<const int32_t> tokens) override;

private:
    Session& session_;
    std::vector<Sequence> seqs_;
    std::vector<Sequence*> batch_;
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
    std::span<const float> prefill(int, std::span<const int32_t> tokens) override {
        return model_.prefill(tokens);
    }
    std::span<const float> decode(std::span<const int> slots,
                                  std::span<const int32_t> tokens) override;

private:
    TokenModel& model_;
};

}  // namespace anelm::server
