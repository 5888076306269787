// llama2.c's tokenizer.bin against run.c: ids and printed text produced by
// run.c's own encode/decode/safe_printf on shared/models/stories260K/tok512.bin.
#include <gtest/gtest.h>

#include "llama2c_cases.h"
#include "tokenizer/llama2c_tokenizer.h"
#include "tokenizer_fixtures.h"

namespace anelm::test {
namespace {

TEST(Llama2c, EncodesAsRunC) {
    ANELM_REQUIRE_SHARED(tok512);
    const auto tok = load_tokenizer(shared_path(tok512).string());
    EXPECT_EQ(tok->n_vocab(), 512);
    EXPECT_EQ(tok->bos_id(), 1);
    EXPECT_EQ(tok->eos_ids(), std::vector<int32_t>{2});
    size_t passed = 0;
    for (const Llama2cCase& c : llama2c_cases()) {
        EXPECT_EQ(tok->encode(c.text, true), c.ids) << c.text;
        passed += tok->encode(c.text, true) == c.ids;
        std::vector<int32_t> no_bos(c.ids.begin() + 1, c.ids.end());
        EXPECT_EQ(tok->encode(c.text, false), no_bos) << c.text;
    }
    std::cout << tok512 << ": " << passed << "/" << llama2c_cases().size()
              << " run.c encodings match\n";
}

TEST(Llama2c, DecodesAsRunCPrints) {
    ANELM_REQUIRE_SHARED(tok512);
    const auto tok = load_tokenizer(shared_path(tok512).string());
    EXPECT_EQ(tok->decode(llama2c_cases()[0].ids), "Once upon a time");
    // Characters that were byte-encoded vanish: safe_printf drops lone bytes >= 0x80.
    EXPECT_EQ(tok->decode(llama2c_cases()[2].ids), "h\xC3\xA9llo wrld  ");
    // The dummy prefix after BOS is dropped, the two spaces of the text stay.
    EXPECT_EQ(tok->decode(llama2c_cases()[3].ids), "  two  spaces");
    EXPECT_EQ(tok->decode(llama2c_cases()[4].ids), "tab\there\nnewline");
    // BOS prints nothing; only the piece right after it loses its leading space;
    // <0x03> is not printable, <0x0A> is a newline; EOS prints its piece.
    EXPECT_EQ(tok->decode(std::vector<int32_t>{1, 6, 13, 403, 1, 403, 2, 259}),
              "\n OnceOnce\n</s>\n t");
}

TEST(Llama2c, StreamsLikeWholeDecode) {
    ANELM_REQUIRE_SHARED(tok512);
    const auto tok = load_tokenizer(shared_path(tok512).string());
    for (const Llama2cCase& c : llama2c_cases()) {
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
