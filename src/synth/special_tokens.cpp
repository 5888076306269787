#include "synth/special_tokens.h"

#include <fmt/format.h>

#include "base/error.h"

namespace anelm::synth {

std::vector<SynthSpecialToken> special_tokens(const SynthTokenizer& family, int64_t count) {
    std::vector<SynthSpecialToken> out;
    int reserved = 0;
    for (int64_t i = 0; i < count; ++i) {
        const bool named = i < static_cast<int64_t>(family.specials.size()) &&
                           !family.specials[static_cast<size_t>(i)].content.empty();
        if (named) {
            out.push_back(family.specials[static_cast<size_t>(i)]);
        } else {
            out.push_back({fmt::format("<|reserved_special_token_{}|>", reserved++), true});
        }
    }
    return out;
}

int32_t special_token_id(const SynthTokenizer& family, int64_t n_vocab_bpe,
                         std::string_view content) {
    for (size_t i = 0; i < family.specials.size(); ++i)
        if (family.specials[i].content == content) return static_cast<int32_t>(n_vocab_bpe + i);
    fail("synth: no special token {}", content);
}

}  // namespace anelm::synth
