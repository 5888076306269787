#include "converted/hybrid_model.h"

#include <algorithm>

#include "base/error.h"

namespace anelm {

HybridModel::HybridModel(AnePipeline& packages, Session& cpu) : packages_(packages), cpu_(cpu) {
    if (packages.pos() != 0 || cpu.pos() != 0)
        fail("hybrid: the packages and the CPU session must start empty");
}

std::span<const float> HybridModel::prefill(std::span<const int32_t> tokens) {
    if (handed_) return cpu_.prefill(tokens);
    const std::span<const float> logits = packages_.prefill(tokens);
    handoff_ = hand_off_kv(packages_, cpu_);
    handed_ = true;
    return logits;
}

void HybridModel::require_handed(const char* what) const {
    if (!handed_) fail("hybrid: {} before the prompt's prefill", what);
}

std::span<const float> HybridModel::decode(int32_t token) {
    require_handed("decode");
    return cpu_.decode(token);
}

std::span<const float> HybridModel::verify(std::span<const int32_t> tokens) {
    require_handed("verify");
    return cpu_.verify(tokens);
}

void HybridModel::rewind(int64_t pos) {
    require_handed("rewind");
    cpu_.rewind(pos);
}

int64_t HybridModel::pos() const {
    return handed_ ? cpu_.pos() : packages_.pos();
}

int64_t HybridModel::n_ctx() const {
    return std::min(packages_.n_ctx(), cpu_.n_ctx());
}

}  // namespace anelm
