// What differs between model families in the files around the weights: special
// tokens and where they sit, the pre-tokenizer split, the chat template, the
// end-of-sequence tokens and the suggested sampling settings.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "io/model_spec.h"

namespace anelm::synth {

struct SpecialToken {
    std::string content;  // empty: a reserved slot, named by reserved_token_name()
    bool special = true;
};

struct Family {
    // The family's tokens at ids n_vocab_bpe, n_vocab_bpe + 1, ...; every later id
    // up to n_vocab is a reserved special token.
    std::vector<SpecialToken> specials;
    std::string split_regex;                  // the Split pre-tokenizer's pattern
    bool nfc = false;                         // NFC normaliser
    bool add_bos = false;                     // the post-processor prepends bos
    bool ignore_merges = false;               // a piece found whole in the vocabulary is one token
    std::string config_bos;                   // config.json bos_token_id
    std::string bos;                          // tokenizer_config's bos_token; empty: none
    std::string eos;                          // tokenizer_config's eos_token
    std::string pad;                          // empty: none
    std::vector<std::string> config_eos;      // config.json eos_token_id
    std::vector<std::string> generation_eos;  // generation_config.json eos_token_id
    std::string chat_template;
    std::string tokenizer_class;
    // generation_config.json's sampling settings; 0 leaves top_k out, 1 repetition_penalty.
    double temperature = 1.0;
    double top_p = 1.0;
    int top_k = 0;
    double repetition_penalty = 1.0;
};

const Family& family_of(Arch arch);

// The content of every special id, n_vocab_bpe .. n_vocab - 1, in order.
std::vector<SpecialToken> special_tokens(const Family& family, int64_t count);

// The id of a family token, for a vocabulary whose BPE part has n_vocab_bpe ids.
int32_t special_token_id(const Family& family, int64_t n_vocab_bpe, std::string_view content);

}  // namespace anelm::synth
