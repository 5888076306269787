// llama2.c's tokenizer.bin against run.c: ids and printed text produced by
// run.c's own encode/decode/safe_printf on shared/models/stories260K/tok512.bin.
#include <gtest/gtest.h>

#include "tokenizer/llama2c_tokenizer.h"
#include "tokenizer_fixtures.h"

namespace anelm::test {
namespace {

constexpr const char* tok512 = "models/stories260K/tok512.bin";

struct Case {
    std::string text;
    std::vector<int32_t> ids;  // run.c encode(text, bos=1, eos=0)
};

const std::vector<Case>& cases() {
    static const std::vector<Case> all = {
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

TEST(Llama2c, EncodesAsRunC) {
    ANELM_REQUIRE_SHARED(tok512);
    const auto tok = load_tokenizer(shared_path(tok512).string());
    EXPECT_EQ(tok->n_vocab(), 512);
    EXPECT_EQ(tok->bos_id(), 1);
    EXPECT_EQ(tok->eos_ids(), std::vector<int32_t>{2});
    size_t passed = 0;
    for (const Case& c : cases()) {
        EXPECT_EQ(tok->encode(c.text, true), c.ids) << c.text;
        passed += tok->encode(c.text, true) == c.ids;
        std::vector<int32_t> no_bos(c.ids.begin() + 1, c.ids.end());
        EXPECT_EQ(tok->encode(c.text, false), no_bos) << c.text;
    }
    std::cout << tok512 << ": " << passed << "/" << cases().size() << " run.c encodings match\n";
}

TEST(Llama2c, DecodesAsRunCPrints) {
    ANELM_REQUIRE_SHARED(tok512);
    const auto tok = load_tokenizer(shared_path(tok512).string());
    EXPECT_EQ(tok->decode(cases()[0].ids), "Once upon a time");
    // Characters that were byte-encoded vanish: safe_printf drops lone bytes >= 0x80.
    EXPECT_EQ(tok->decode(cases()[2].ids), "h\xC3\xA9llo wrld  ");
    // The dummy prefix after BOS is dropped, the two spaces of the text stay.
    EXPECT_EQ(tok->decode(cases()[3].ids), "  two  spaces");
    EXPECT_EQ(tok->decode(cases()[4].ids), "tab\there\nnewline");
    // BOS prints nothing; only the piece right after it loses its leading space;
    // <0x03> is not printable, <0x0A> is a newline; EOS prints its piece.
    EXPECT_EQ(tok->decode(std::vector<int32_t>{1, 6, 13, 403, 1, 403, 2, 259}),
              "\n OnceOnce\n</s>\n t");
}

TEST(Llama2c, StreamsLikeWholeDecode) {
    ANELM_REQUIRE_SHARED(tok512);
    const auto tok = load_tokenizer(shared_path(tok512).string());
    for (const Case& c : cases()) {
        StreamDecoder stream(*tok);
        std::string text;
        for (int32_t id : c.ids) text += stream.push(id);
        text += stream.flush();
        EXPECT_EQ(text, tok->decode(c.ids)) << c.text;
    }
}

TEST(Llama2c, RejectsBadFiles) {
    const auto dir = temp_dir("llama2c");
    const auto path = (dir / "bad.bin").string();
    {
        std::ofstream out(path, std::ios::binary);
        const int32_t header[3] = {4, 0, 100};  // max_token_length, score, length 100 > 4
        out.write(reinterpret_cast<const char*>(header), sizeof header);
    }
    try {
        Llama2cTokenizer tok(path);
        FAIL() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
        EXPECT_NE(std::string(e.what()).find("offset 8"), std::string::npos) << e.what();
    }
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace anelm::test
