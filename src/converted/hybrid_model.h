// A prompt prefilled by the converted packages, then decoded by a CPU session
// after the KV cache is handed over (kv_handoff.h): the first prefill goes to
// the packages, everything after it to the session, speculative verify too.
#pragma once

#include "converted/kv_handoff.h"
#include "runtime/token_model.h"

namespace anelm {

class HybridModel : public TokenModel {
public:
    // Both start empty; the session runs the same model at the same precision.
    HybridModel(AnePipeline& packages, Session& cpu);

    std::span<const float> prefill(std::span<const int32_t> tokens) override;
    std::span<const float> decode(int32_t token) override;
    int64_t pos() const override;
    int64_t n_ctx() const override;
    int64_t verify_tokens() const override { return cpu_.verify_tokens(); }
    bool can_verify(int64_t n) const override { return handed_ && cpu_.can_verify(n); }
    std::span<const float> verify(std::span<const int32_t> tokens) override;
    void rewind(int64_t pos) override;
    bool can_rewind(int64_t pos) const override { return handed_ && cpu_.can_rewind(pos); }

    // The hand-off, once the first prefill has run.
    const KvHandoff& handoff() const { return handoff_; }

private:
    void require_handed(const char* what) const;

    AnePipeline& packages_;
    Session& cpu_;
    bool handed_ = false;
    KvHandoff handoff_;
};

}  // namespace anelm
