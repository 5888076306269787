// llama2.c's tokenizer.bin and the encode/decode of its run.c.
//
// File: int32 max_token_length, then per token: float32 score, int32 length,
// that many bytes (the piece, with SentencePiece's "▁" already turned into a
// space). The token count is not stored: pieces run to the end of the file.
#pragma once

#include <string>
#include <vector>

#include "tokenizer/hash_tables.h"
#include "tokenizer/tokenizer.h"

namespace anelm {

class Llama2cTokenizer : public Tokenizer {
public:
    explicit Llama2cTokenizer(const std::string& path);

    // As run.c's encode(text, bos=add_special, eos=0): a dummy-prefix " " token
    // for non-empty text, one token per UTF-8 character (<0xXX> byte tokens, id =
    // byte + 3, when the character is not a piece), then repeated merging of the
    // adjacent pair whose concatenation is the highest-scoring piece, leftmost on
    // ties. Bytes are taken as they come, like run.c (no UTF-8 repair).
    std::vector<int32_t> encode(std::string_view text, bool add_special) const override;
    // What run.c prints for these ids when they are a prompt followed by its
    // generation: see the comment in llama2c_tokenizer.cpp.
    std::string decode(std::span<const int32_t> ids) const override;
    std::string decode_window(std::span<const int32_t> ids, bool at_start,
                              bool keep_truncated_tail) const override {
        return decode(ids);
    }

    int32_t n_vocab() const override { return static_cast<int32_t>(pieces_.size()); }
    int32_t bos_id() const override { return 1; }
    std::vector<int32_t> eos_ids() const override { return {2}; }
    // What decode prints for id in the middle of a sequence: the piece, <0xXX> as
    // its byte, lone bytes safe_printf drops as nothing.
    std::string token_bytes(int32_t id) const override;
    std::string token_to_piece(int32_t id) const override;
    int32_t token_to_id(std::string_view piece) const override { return lookup_.find(piece); }
    bool is_special(int32_t id) const override { return id == 1 || id == 2; }

private:
    struct Candidate {
        float score;
        int32_t pos, left, right, merged;
    };
    void merge_all(std::vector<int32_t>& tokens) const;
    // The bytes run.c prints for id after prev; byte holds a <0xXX> piece's byte.
    std::string_view printed(int32_t id, int32_t prev, char& byte) const;
    // The merged piece of left and right, or -1.
    int32_t merged_id(int32_t left, int32_t right, std::string& buffer) const;

    std::string path_;
    std::vector<std::string> pieces_;
    std::vector<float> scores_;
    StringMap lookup_;
};

}  // namespace anelm
