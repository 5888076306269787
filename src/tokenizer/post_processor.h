// tokenizer.json "post_processor": what encode(add_special=true) puts around
// the ids of a single sequence (BOS, EOS ...).
#pragma once

#include <nlohmann/json_fwd.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace anelm {

struct SpecialAffixes {
    std::vector<int32_t> before;  // e.g. BOS
    std::vector<int32_t> after;   // e.g. EOS
};

// Reads TemplateProcessing (its "single" template), ByteLevel (adds nothing),
// RobertaProcessing, BertProcessing and Sequence of these; null adds nothing.
// An unsupported type is an error naming it.
SpecialAffixes read_post_processor(const nlohmann::json& j, const std::string& where);

}  // namespace anelm
