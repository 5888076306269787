// A vocabulary of byte pieces taken as they are, the last id an end-of-text
// special token: what the grammar's tests and benchmark constrain decoding over.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/tokenizer.h"

namespace anelm {

class PieceTokenizer : public Tokenizer {
public:
    explicit PieceTokenizer(std::vector<std::string> pieces) : pieces_(std::move(pieces)) {
        pieces_.push_back("<eos>");
    }
    std::vector<int32_t> encode(std::string_view, bool) const override { return {}; }
    std::string decode(std::span<const int32_t> ids) const override {
        std::string out;
        for (int32_t id : ids) out += pieces_[id];
        return out;
    }
    int32_t n_vocab() const override { return static_cast<int32_t>(pieces_.size()); }
    int32_t bos_id() const override { return -1; }
    std::vector<int32_t> eos_ids() const override { return {n_vocab() - 1}; }
    std::string token_bytes(int32_t id) const override { return pieces_[id]; }
    bool is_special(int32_t id) const override { return id == n_vocab() - 1; }

private:
    std::vector<std::string> pieces_;
};

}  // namespace anelm
