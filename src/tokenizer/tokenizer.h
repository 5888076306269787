// Text <-> token ids. One interface over Hugging Face tokenizer.json models and
// llama2.c's tokenizer.bin.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace anelm {

class Tokenizer {
public:
    virtual ~Tokenizer() = default;

    // Ids for text. add_special adds what the model's post-processor adds (BOS ...).
    // Special tokens written in the text are recognised either way, as Hugging Face does.
    // Invalid UTF-8 in text is read as U+FFFD per maximal invalid subpart (as Rust's
    // from_utf8_lossy and JavaScript's TextDecoder do) except by llama2.c's tokenizer,
    // which takes raw bytes as run.c does.
    virtual std::vector<int32_t> encode(std::string_view text, bool add_special) const = 0;
    // Text of a whole sequence of ids, as Hugging Face's decode(skip_special_tokens=False).
    // Ids outside the vocabulary are skipped, as Hugging Face does.
    virtual std::string decode(std::span<const int32_t> ids) const = 0;

    virtual int32_t n_vocab() const = 0;
    virtual int32_t bos_id() const = 0;  // -1 when there is none
    virtual std::vector<int32_t> eos_ids() const = 0;

    // The text of ids that may continue a sequence, for StreamDecoder: at_start says
    // ids[0] is the first id of the sequence (decoders strip a leading space only
    // there); with keep_truncated_tail a character cut off at the end stays raw bytes
    // instead of U+FFFD. decode(ids) equals decode_window(ids, true, false).
    virtual std::string decode_window(std::span<const int32_t> ids, bool at_start,
                                      bool keep_truncated_tail) const {
        return decode(ids);
    }
    // The vocabulary string of id as stored (byte-level or "▁" form; an added token's
    // content), empty when id is unknown.
    virtual std::string token_to_piece(int32_t id) const { return {}; }
    // The bytes id adds to decoded text in the middle of a sequence (no leading space
    // dropped, invalid UTF-8 kept as it is): what grammar-constrained decoding
    // matches. Joined over ids they equal decode_window(ids, false, false) wherever
    // that is valid UTF-8. Empty for unknown ids.
    virtual std::string token_bytes(int32_t id) const {
        return decode_window(std::span<const int32_t>(&id, 1), false, true);
    }
    // The id of a vocabulary string or added token, -1 when there is none.
    virtual int32_t token_to_id(std::string_view piece) const { return -1; }
    // Whether id is a special token (what Hugging Face's skip_special_tokens drops).
    virtual bool is_special(int32_t id) const { return false; }
};

// Loads tokenizer.json (or a folder holding one), a llama2.c tokenizer.bin, or
// the tokenizer in a GGUF file's metadata.
// Throws Error naming the file and field on bad input.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);

// Turns a stream of ids into text pieces for printing as they come: a UTF-8
// character split across tokens is emitted once, when it is complete. The pieces
// joined equal decode() of all ids whenever that has no U+FFFD from invalid bytes.
// Each push decodes only the ids since the previous piece, so a long generation
// costs O(n).
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
    // The new text that id completes (possibly empty).
    std::string push(int32_t id);
    // Whatever is still held back (an incomplete character) at the end.
    std::string flush();

private:
    const Tokenizer& tokenizer_;
    std::vector<int32_t> ids_;  // ids of the last piece, then ids not yet printed
    size_t emitted_ = 0;        // how many of ids_ belong to the last piece
    std::string emitted_text_;  // decode_window of those ids
    bool at_start_ = true;      // ids_[0] is the first id of the sequence
};

}  // namespace anelm
