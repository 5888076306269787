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
    virtual std::vector<int32_t> encode(std::string_view text, bool add_special) const = 0;
    // Text of a whole sequence of ids, as Hugging Face's decode(skip_special_tokens=False).
    virtual std::string decode(std::span<const int32_t> ids) const = 0;

    virtual int32_t n_vocab() const = 0;
    virtual int32_t bos_id() const = 0;  // -1 when there is none
    virtual std::vector<int32_t> eos_ids() const = 0;
};

// Loads tokenizer.json (or a folder holding one) or a llama2.c tokenizer.bin.
// Throws Error naming the file and field on bad input.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& path);

// Turns a stream of ids into text pieces for printing as they come: a UTF-8
// character split across tokens is emitted once, when it is complete.
class StreamDecoder {
public:
    explicit StreamDecoder(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}
    // The new text that id completes (possibly empty).
    std::string push(int32_t id);
    // Whatever is still held back (an incomplete character) at the end.
    std::string flush();

private:
    const Tokenizer& tokenizer_;
    std::vector<int32_t> ids_;
    size_t emitted_ = 0;  // bytes of decode(ids_) already returned
};

}  // namespace anelm
