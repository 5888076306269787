// Reading small whole files: config.json, generation_config.json, shard indexes.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

namespace anelm {

// Arrays and objects nest at most this deep in JSON anelm reads: its readers
// and nlohmann::json's copies and dumps recurse once per level.
constexpr size_t max_json_depth = 128;

// The byte offset where `text` opens its (max_json_depth + 1)-th nested array
// or object, or npos: a linear scan, run before parsing.
size_t json_too_deep_at(std::string_view text);

// Throws an Error naming `path` and the byte when json_too_deep_at finds one.
void check_json_depth(std::string_view text, const std::string& path, size_t file_offset = 0);

// Parses `text` (its depth checked); a syntax error becomes an Error naming `path` and the byte
// offset in the file, `text` starting at byte `file_offset` of it.
nlohmann::json parse_json(std::string_view text, const std::string& path, size_t file_offset = 0);

// The contents of the file at `path`.
std::string read_text_file(const std::string& path);

// Reads and parses the file at `path`.
nlohmann::json read_json_file(const std::string& path);

// The JSON type of a value in words, for messages ("a string", "an array").
const char* json_type_words(const nlohmann::json& value);

}  // namespace anelm
