// tokenizer.json "decoder": turns the token strings of ids back into text.
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <memory>
#include <string>
#include <vector>

namespace anelm {

struct DecodeState {
    std::vector<std::string> tokens;
    // tokens[0] is the first token of the whole sequence (decoders that treat
    // the start specially look at this).
    bool at_start = true;
    // A character cut off at the very end is kept as raw bytes instead of being
    // replaced by U+FFFD (streaming waits for the rest of it).
    bool keep_truncated_tail = false;
    // Invalid UTF-8 anywhere stays raw bytes instead of becoming U+FFFD (the bytes of
    // a single token, which may hold part of a character).
    bool keep_invalid = false;
    bool fused = false;  // the tokens were joined: tokens[0] begins the decoded text
};

class Decoder {
public:
    virtual ~Decoder() = default;
    virtual void apply(DecodeState& state) const = 0;
};

// From the JSON object (null gives nullptr); an unsupported type is an error naming it.
std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j, const std::string& where);

}  // namespace anelm
