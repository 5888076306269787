// Reading fields of tokenizer.json components, with errors that name the file,
// the field and what was expected.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>

#include "tokenizer/regex.h"

namespace anelm {

std::string type_field(const nlohmann::json& j, const std::string& where);
std::string string_field(const nlohmann::json& j, const char* key, const std::string& where);
// A missing or null field gives fallback.
bool bool_field(const nlohmann::json& j, const char* key, bool fallback, const std::string& where);
int64_t int_field(const nlohmann::json& j, const char* key, int64_t fallback,
                  const std::string& where);
const nlohmann::json& array_field(const nlohmann::json& j, const char* key,
                                  const std::string& where);

// A "pattern" field: {"String": literal} or {"Regex": pattern}. An empty literal
// matches nothing (nullptr), as in Hugging Face's tokenizers.
std::unique_ptr<Regex> pattern_field(const nlohmann::json& j, const std::string& where);

}  // namespace anelm
