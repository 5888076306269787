// A tool call as the model writes it, read from its text piece by piece: the
// scanners here read the JSON and literal forms the families' formats share.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <string_view>

namespace anelm::server {

struct ToolCall {
    std::string name;       // "" until read
    std::string arguments;  // JSON text; until done, a prefix of what it will be
    bool done = false;
};

// How far a scanner got: to the end of what it reads, to the end of the text
// before that (more may come), or to text that cannot be what it reads.
enum class Scan { done, more, bad };

void skip_space(std::string_view t, size_t& pos);

// Reads the literal `lit` at pos.
Scan expect(std::string_view t, size_t& pos, std::string_view lit);

// Reads the text up to `end` (not included) into out, and moves past `end`.
Scan read_until(std::string_view t, size_t& pos, std::string_view end, std::string& out);

// Skips one JSON value (with any space before it).
Scan skip_json_value(std::string_view t, size_t& pos);

// {"name": "...", "arguments": {...}} ("parameters" too; other keys ignored),
// the arguments kept as written so that streamed pieces join to them.
Scan read_json_call(std::string_view t, size_t& pos, ToolCall& call);

// A literal as templates write arguments outside JSON: JSON values, Python's
// ('text', True, None, (tuples)), Gemma 4's <|"|>text<|"|> strings, and
// objects whose keys are bare words.
Scan read_loose_value(std::string_view t, size_t& pos, nlohmann::ordered_json& out);

// A call's arguments as an object, as APIs that return them parsed give them
// ({} for a call cut short).
nlohmann::json arguments_object(const std::string& arguments);

// Arguments built one at a time as JSON text: each added one extends the text,
// so the text before the last is a prefix of the whole.
class ArgumentsText {
public:
    void add(const std::string& key, const nlohmann::ordered_json& value);
    std::string text(bool done) const { return text_ + (done ? "}" : ""); }

private:
    std::string text_ = "{";
};

}  // namespace anelm::server
