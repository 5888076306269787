// Hugging Face tokenizer.json with a BPE model: byte-level (Qwen2/2.5/3,
// Llama 3) and byte-fallback / Metaspace (Gemma 3, Llama 2) alike.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "tokenizer/added_tokens.h"
#include "tokenizer/bpe_model.h"
#include "tokenizer/decoder.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/post_processor.h"
#include "tokenizer/pre_tokenizer.h"
#include "tokenizer/tokenizer.h"

namespace anelm {

// The files' texts held in memory; a config that is absent is nullopt.
struct HfTokenizerTexts {
    std::string_view tokenizer_json;
    std::optional<std::string_view> tokenizer_config_json;
    std::optional<std::string_view> generation_config_json;
};

class HfTokenizer : public Tokenizer {
public:
    // path is the tokenizer.json file; tokenizer_config.json and
    // generation_config.json beside it, when present, give the EOS ids.
    explicit HfTokenizer(const std::string& path);
    // The same from texts (made from a GGUF file's metadata, say); origin
    // stands for the files in error messages.
    HfTokenizer(const HfTokenizerTexts& texts, const std::string& origin);

    std::vector<int32_t> encode(std::string_view text, bool add_special) const override;
    std::string decode(std::span<const int32_t> ids) const override;
    std::string decode_window(std::span<const int32_t> ids, bool at_start,
                              bool keep_truncated_tail) const override;

    int32_t n_vocab() const override { return n_vocab_; }
    int32_t bos_id() const override { return bos_id_; }
    std::vector<int32_t> eos_ids() const override { return eos_ids_; }
    std::string token_bytes(int32_t id) const override;
    std::string token_to_piece(int32_t id) const override;
    int32_t token_to_id(std::string_view piece) const override;
    bool is_special(int32_t id) const override;
    const std::vector<AddedToken>& added_tokens() const { return added_; }

private:
    struct Work;
    void load_json(std::string_view text, const std::string& path);
    void load_configs(std::optional<std::string_view> config, const std::string& config_where,
                      std::optional<std::string_view> generation,
                      const std::string& generation_where);
    void encode_segment(std::string_view text, bool at_start, Work& work,
                        std::vector<int32_t>& ids) const;
    void encode_pieces(std::string_view text, bool at_start, Work& work,
                       std::vector<int32_t>& ids) const;
    const AddedToken* added_by_id(int32_t id) const;
    std::string decode_state(std::span<const int32_t> ids, DecodeState& state) const;

    std::string path_;
    BpeModel model_;
    std::unique_ptr<Normalizer> normalizer_;
    std::unique_ptr<PreTokenizer> pre_tokenizer_;
    std::unique_ptr<Decoder> decoder_;
    SpecialAffixes affixes_;
    std::vector<AddedToken> added_;
    std::unordered_map<int32_t, size_t> added_by_id_;
    std::unordered_map<std::string, int32_t> added_by_content_;
    std::unique_ptr<AddedTokenMatcher> raw_matcher_;         // normalized: false
    std::unique_ptr<AddedTokenMatcher> normalized_matcher_;  // normalized: true
    int32_t n_vocab_ = 0;
    int32_t bos_id_ = -1;
    std::vector<int32_t> eos_ids_;
};

}  // namespace anelm
