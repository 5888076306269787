#include "server/slot_model.h"

#include <algorithm>

#include "base/error.h"

namespace anelm::server {

SessionSlots::SessionSlots(Session& session, int slots, Pooling pooling) : session_(session) {
    if (slots < 1) fail("--parallel: {}, expected at least 1", slots);
    if (slots > 1 && session.batch_rows() < slots)
        fail("the session decodes {} sequences at once, the server asks for {}",
             session.batch_rows(), slots);
    for (int i = 0; i < slots; ++i) seqs_.push_back(session.new_sequence());
    if (session.has_hidden()) embedder_ = std::make_unique<Embedder>(session, pooling);
}

std::vector<std::vector<float>> SlotModel::embed(std::span<const std::vector<int32_t>>) {
    fail("this model cannot embed");
}

std::vector<std::vector<float>> SessionSlots::embed(std::span<const std::vector<int32_t>> inputs) {
    if (!embedder_) return SlotModel::embed(inputs);
    return embedder_->embed(inputs);
}

int64_t SessionSlots::keepable(int slot, int64_t shared) const {
    return session_.can_rewind(seqs_.at(slot), shared) ? shared : 0;
}

void SessionSlots::rewind(int slot, int64_t pos) {
    Sequence& seq = seqs_.at(slot);
    if (pos < 0 || pos > seq.pos) fail("cannot rewind slot {} to {} from {}", slot, pos, seq.pos);
    seq.pos = pos;
}

std::span<const float> SessionSlots::step(std::span<const int> slots,
                                          std::span<const int32_t> tokens,
                                          std::span<const int64_t> counts) {
    batch_.clear();
    for (int s : slots) batch_.push_back(&seqs_.at(s));
    // Decode steps alone take the one-token function when there is one slot.
    if (std::all_of(counts.begin(), counts.end(), [](int64_t c) { return c == 1; }))
        return session_.decode_batch(batch_, tokens);
    return session_.step(batch_, tokens, counts);
}

std::span<const float> SlotModel::verify(std::span<const int>, std::span<const int32_t>,
                                         std::span<const int64_t>) {
    fail("this model has no verify function");
}

bool SessionSlots::can_verify(int slot, int64_t rows) const {
    return rows >= 1 && rows <= session_.verify_tokens() &&
           seqs_.at(slot).pos + rows <= session_.n_ctx();
}

std::span<const float> SessionSlots::verify(std::span<const int> slots,
                                            std::span<const int32_t> tokens,
                                            std::span<const int64_t> counts) {
    batch_.clear();
    for (int s : slots) batch_.push_back(&seqs_.at(s));
    return session_.verify(batch_, tokens, counts);
}

std::span<const float> SingleSlot::verify(std::span<const int> slots,
                                          std::span<const int32_t> tokens,
                                          std::span<const int64_t>) {
    if (slots.size() != 1) fail("this model runs one sequence at a time, got {}", slots.size());
    return model_.verify(tokens);
}

int64_t SingleSlot::keepable(int, int64_t shared) const {
    return model_.can_rewind(shared) ? shared : 0;
}

std::span<const float> SingleSlot::step(std::span<const int> slots, std::span<const int32_t> tokens,
                                        std::span<const int64_t> counts) {
    if (slots.size() != 1) fail("this model runs one sequence at a time, got {}", slots.size());
    return counts[0] == 1 ? model_.decode(tokens[0]) : model_.prefill(tokens);
}

}  // namespace anelm::server
