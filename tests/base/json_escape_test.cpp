// Expected strings are Python's json.dumps of the same text.
#include "base/json_escape.h"

#include <gtest/gtest.h>

namespace anelm {
namespace {

std::string json_string(std::string_view s, bool ensure_ascii = false) {
    std::string out;
    append_json_string(out, s, ensure_ascii);
    return out;
}

TEST(JsonEscape, EscapesAsJsonDumps) {
    // json.dumps('a"b\\c\n\r\t\b\f\x01\x1f\x7f', ensure_ascii=False)
    EXPECT_EQ(json_string("a\"b\\c\n\r\t\b\f\x01\x1f\x7f"),
              "\"a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0001\\u001f\x7f\"");
    EXPECT_EQ(json_string(""), "\"\"");
}

TEST(JsonEscape, KeepsUtf8UnlessAsciiIsAsked) {
    // json.dumps('é😀~', ensure_ascii=False) and json.dumps('é\x7f😀~')
    EXPECT_EQ(json_string("\xC3\xA9\xF0\x9F\x98\x80~"), "\"\xC3\xA9\xF0\x9F\x98\x80~\"");
    EXPECT_EQ(json_string("\xC3\xA9\x7f\xF0\x9F\x98\x80~", true),
              "\"\\u00e9\\u007f\\ud83d\\ude00~\"");
}

TEST(JsonEscape, CopiesIllFormedBytesAsTheyAre) {
    // Token texts may hold part of a character: they are written back byte for byte.
    EXPECT_EQ(json_string("\xFF\xC3"), "\"\xFF\xC3\"");
    EXPECT_EQ(json_string("\xFF\xC3", true), "\"\\u00ff\\u00c3\"");
}

}  // namespace
}  // namespace anelm
