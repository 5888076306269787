#include "io/json_file.h"

#include "base/error.h"
#include "base/mapped_file.h"

namespace anelm {

nlohmann::json parse_json(std::string_view text, const std::string& path, size_t file_offset) {
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
