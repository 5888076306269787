// The special tokens of a synth preset's vocabulary: its family's tokens after
// the byte-level BPE ids, then reserved slots up to n_vocab.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "models/synth_tokenizer.h"

namespace anelm::synth {

// The content of every special id, n_vocab_bpe .. n_vocab - 1, in order.
std::vector<SynthSpecialToken> special_tokens(const SynthTokenizer& family, int64_t count);

// The id of a family token, for a vocabulary whose BPE part has n_vocab_bpe ids.
int32_t special_token_id(const SynthTokenizer& family, int64_t n_vocab_bpe,
                         std::string_view content);

}  // namespace anelm::synth
