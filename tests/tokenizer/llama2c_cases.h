// Encodings that llama2.c's run.c gives on shared/models/stories260K/tok512.bin,
// shared by the tests of the tokenizer.bin reader and of its tokenizer.json export.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace anelm::test {

inline constexpr const char* tok512 = "models/stories260K/tok512.bin";

struct Llama2cCase {
    std::string text;
    std::vector<int32_t> ids;  // run.c encode(text, bos=1, eos=0)
};

inline const std::vector<Llama2cCase>& llama2c_cases() {
    static const std::vector<Llama2cCase> all = {
        {"Once upon a time", {1, 403, 407, 261, 378}},
        {"", {1}},
        {"h\xC3\xA9llo w\xC3\xB6rld \xE6\x97\xA5\xE6\x9C\xAC \xE2\x98\x83",
         {1,   270, 485, 306, 414, 263, 198, 185, 420, 341, 410,
          233, 154, 168, 233, 159, 175, 410, 229, 155, 134}},
        {"  two  spaces", {1, 410, 410, 259, 424, 414, 410, 262, 427, 412, 331, 419}},
        {"tab\there\nnewline", {1, 259, 412, 430, 12, 260, 276, 13, 416, 411, 424, 421, 271, 411}},
        {"Lily's cat said: \"Hi!\"",
         {1, 317, 439, 419, 280, 294, 336, 467, 313, 440, 417, 443, 436}},
        {"x", {1, 410, 444}},
        // Stray and cut-off UTF-8 bytes go to byte tokens, as in run.c.
        {"\xFF\x80"
         "abc\xE2\x82",
         {1, 410, 258, 131, 412, 430, 429, 229, 133}},
        {"The quick brown fox jumps over the lazy dog. Tim and Lily went to the park to play with "
         "the ball.",
         {1,   291, 410, 456, 425, 417, 340, 268, 420, 327, 416, 272, 414, 444, 410, 449,
          425, 423, 427, 419, 334, 330, 265, 278, 412, 451, 422, 400, 428, 426, 326, 269,
          317, 263, 377, 267, 265, 282, 295, 433, 267, 337, 335, 265, 268, 388, 426}},
    };
    return all;
}

}  // namespace anelm::test
