#include "io/json_file.h"

#include "base/error.h"
#include "base/mapped_file.h"

namespace anelm {

size_t json_too_deep_at(std::string_view text) {
    size_t depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            if (c == '\\')
                ++i;
            else if (c == '"')
                in_string = false;
        } else if (c == '"') {
            in_string = true;
        } else if (c == '[' || c == '{') {
            if (++depth > max_json_depth) return i;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return std::string_view::npos;
}

void check_json_depth(std::string_view text, const std::string& path, size_t file_offset) {
    const size_t at = json_too_deep_at(text);
    if (at != std::string_view::npos)
        fail("{}: JSON nested more than {} levels deep at byte {}", path, max_json_depth,
             file_offset + at);
}

nlohmann::json parse_json(std::string_view text, const std::string& path, size_t file_offset) {
    check_json_depth(text, path, file_offset);
    try {
        return nlohmann::json::parse(text.begin(), text.end());
    } catch (const nlohmann::json::parse_error& e) {
        // e.byte counts from 1; the message starts with a tag meant for programs.
        std::string_view what = e.what();
        if (what.starts_with("[json.exception.")) what.remove_prefix(what.find("] ") + 2);
        fail("{}: not valid JSON at byte {}: {}", path,
             file_offset + (e.byte == 0 ? 0 : e.byte - 1), what);
    } catch (const nlohmann::json::exception& e) {
        // A number past double's range ("1e999") is out_of_range, not a parse error.
        std::string_view what = e.what();
        if (what.starts_with("[json.exception.")) what.remove_prefix(what.find("] ") + 2);
        fail("{}: not valid JSON: {}", path, what);
    }
}

std::string read_text_file(const std::string& path) {
    const MappedFile file(path);
    return std::string(reinterpret_cast<const char*>(file.data()), file.size());
}

nlohmann::json read_json_file(const std::string& path) {
    return parse_json(read_text_file(path), path);
}

const char* json_type_words(const nlohmann::json& value) {
    switch (value.type()) {
        case nlohmann::json::value_t::null:
            return "null";
        case nlohmann::json::value_t::object:
            return "an object";
        case nlohmann::json::value_t::array:
            return "an array";
        case nlohmann::json::value_t::string:
            return "a string";
        case nlohmann::json::value_t::boolean:
            return "a boolean";
        case nlohmann::json::value_t::number_integer:
        case nlohmann::json::value_t::number_unsigned:
            return "an integer";
        case nlohmann::json::value_t::number_float:
            return "a floating-point number";
        case nlohmann::json::value_t::binary:
            return "binary data";
        case nlohmann::json::value_t::discarded:
            break;
    }
    return "an invalid value";
}

}  // namespace anelm
