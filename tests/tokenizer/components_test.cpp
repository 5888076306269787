// The tokenizer.json components on small hand-made files: Llama 2 style
// (Prepend + Replace normalizer, byte fallback, Strip decoder), Metaspace,
// added-token flags, streaming with position-dependent decoders, and errors.
#include <gtest/gtest.h>

#include <utf8proc.h>

#include <cstdlib>
#include <random>

#include "base/error.h"
#include "tokenizer/normalizer.h"
#include "tokenizer/utf8.h"
#include "tokenizer_fixtures.h"

namespace anelm::test {
namespace {

using nlohmann::json;

const std::string meta = "\xE2\x96\x81";  // ▁

// A tiny SentencePiece-style BPE: <unk> <s> </s>, 256 byte tokens, ▁ a b and merges.
json small_bpe_model() {
    json vocab = {{"<unk>", 0}, {"<s>", 1}, {"</s>", 2}};
    for (int b = 0; b < 256; ++b) vocab[fmt::format("<0x{:02X}>", b)] = 3 + b;
    vocab[meta] = 259;
    vocab["a"] = 260;
    vocab["b"] = 261;
    vocab[meta + "a"] = 262;
    vocab[meta + "b"] = 263;
    vocab["ab"] = 264;
    vocab[meta + "ab"] = 265;
    return {{"type", "BPE"},
            {"unk_token", "<unk>"},
            {"fuse_unk", true},
            {"byte_fallback", true},
            {"vocab", vocab},
            {"merges", json::array({meta + " a", meta + " b", "a b", meta + "a b"})}};
}

json special(const std::string& content, int id) {
    return {{"id", id},        {"content", content},  {"single_word", false}, {"lstrip", false},
            {"rstrip", false}, {"normalized", false}, {"special", true}};
}

json bos_template() {
    return {{"type", "TemplateProcessing"},
            {"single", json::array({{{"SpecialToken", {{"id", "<s>"}, {"type_id", 0}}}},
                                    {{"Sequence", {{"id", "A"}, {"type_id", 0}}}}})},
            {"special_tokens", {{"<s>", {{"id", "<s>"}, {"ids", {1}}, {"tokens", {"<s>"}}}}}}};
}

json llama2_style() {
    return {
        {"version", "1.0"},
        {"added_tokens", json::array({special("<unk>", 0), special("<s>", 1), special("</s>", 2)})},
        {"normalizer",
         {{"type", "Sequence"},
          {"normalizers",
           json::array(
               {{{"type", "Prepend"}, {"prepend", meta}},
                {{"type", "Replace"}, {"pattern", {{"String", " "}}}, {"content", meta}}})}}},
        {"pre_tokenizer", nullptr},
        {"post_processor", bos_template()},
        {"decoder",
         {{"type", "Sequence"},
          {"decoders",
           json::array({{{"type", "Replace"}, {"pattern", {{"String", meta}}}, {"content", " "}},
                        {{"type", "ByteFallback"}},
                        {{"type", "Fuse"}},
                        {{"type", "Strip"}, {"content", " "}, {"start", 1}, {"stop", 0}}})}}},
        {"model", small_bpe_model()}};
}

json metaspace_style() {
    json j = llama2_style();
    j["normalizer"] = nullptr;
    j["pre_tokenizer"] = {
        {"type", "Metaspace"}, {"replacement", meta}, {"prepend_scheme", "first"}, {"split", true}};
    j["decoder"] = {
        {"type", "Metaspace"}, {"replacement", meta}, {"prepend_scheme", "first"}, {"split", true}};
    return j;
}

std::string write_json(const json& j, const std::string& name) {
    const auto dir = temp_dir("components");
    const auto path = (dir / (name + ".json")).string();
    std::ofstream(path) << j.dump();
    return path;
}

std::string stream_all(const Tokenizer& tok, const std::vector<int32_t>& ids) {
    StreamDecoder stream(tok);
    std::string text;
    for (int32_t id : ids) text += stream.push(id);
    return text + stream.flush();
}

using Ids = std::vector<int32_t>;

TEST(Llama2Style, PrependsToEachSegmentAndMergesByRank) {
    const auto tok = load_tokenizer(write_json(llama2_style(), "llama2"));
    EXPECT_EQ(tok->encode("ab a", false), (Ids{265, 262}));
    EXPECT_EQ(tok->encode("ab a", true), (Ids{1, 265, 262}));
    EXPECT_EQ(tok->encode("", true), (Ids{1}));
    // The text after an added token is normalized on its own: it gets a ▁ too.
    EXPECT_EQ(tok->encode("a<s>b", false), (Ids{262, 1, 263}));
    // é is not in the vocabulary: its UTF-8 bytes.
    EXPECT_EQ(tok->encode("\xC3\xA9", false), (Ids{259, 3 + 0xC3, 3 + 0xA9}));
    EXPECT_EQ(tok->bos_id(), 1);
}

TEST(Llama2Style, DecodesAndStreamsWithStrip) {
    const auto tok = load_tokenizer(write_json(llama2_style(), "llama2"));
    EXPECT_EQ(tok->decode(Ids{265, 262}), "ab a");
    EXPECT_EQ(tok->decode(Ids{1, 265, 262}), "<s> ab a");
    EXPECT_EQ(tok->decode(Ids{259, 3 + 0xC3, 3 + 0xA9}), "\xC3\xA9");
    // An invalid byte run: one U+FFFD per byte.
    EXPECT_EQ(tok->decode(Ids{260, 3 + 0xC3, 3 + 0x41}), "a\xEF\xBF\xBD\xEF\xBF\xBD");
    for (const Ids& ids : {Ids{265, 262}, Ids{259, 262, 259, 259, 263}, Ids{1, 265, 262},
                           Ids{259, 3 + 0xC3, 3 + 0xA9, 262}, Ids{259, 259}})
        EXPECT_EQ(stream_all(*tok, ids), tok->decode(ids));
}

TEST(Metaspace, PrependsOnlyAtTheStartOfTheInput) {
    const auto tok = load_tokenizer(write_json(metaspace_style(), "metaspace"));
    EXPECT_EQ(tok->encode("a b", false), (Ids{262, 263}));
    EXPECT_EQ(tok->encode("<s>a b", false), (Ids{1, 260, 263}));
    EXPECT_EQ(tok->decode(Ids{262, 263}), "a b");
    EXPECT_EQ(tok->decode(Ids{260, 263}), "a b");
    for (const Ids& ids : {Ids{262, 263}, Ids{259, 259, 262}, Ids{262, 259, 263, 262}})
        EXPECT_EQ(stream_all(*tok, ids), tok->decode(ids));
}

json flags_tokenizer() {
    json vocab = {{"<unk>", 0}, {" ", 1}, {"a", 2}, {"b", 3}, {"w", 4}};
    auto added = [](const std::string& content, int id, const char* flag) {
        json t = special(content, id);
        t["special"] = false;
        t[flag] = true;
        return t;
    };
    return {
        {"added_tokens", json::array({added("<x>", 10, "lstrip"), added("<y>", 11, "rstrip"),
                                      added("ww", 12, "single_word")})},
        {"normalizer", nullptr},
        {"pre_tokenizer", nullptr},
        {"post_processor", nullptr},
        {"decoder", {{"type", "Fuse"}}},
        {"model",
         {{"type", "BPE"}, {"unk_token", "<unk>"}, {"vocab", vocab}, {"merges", json::array()}}}};
}

TEST(AddedTokens, StripAndSingleWordFlags) {
    const auto tok = load_tokenizer(write_json(flags_tokenizer(), "flags"));
    EXPECT_EQ(tok->encode("a  <x>b", false), (Ids{2, 10, 3}));
    EXPECT_EQ(tok->encode("a<y>  b", false), (Ids{2, 11, 3}));
    EXPECT_EQ(tok->encode("a ww b", false), (Ids{2, 1, 12, 1, 3}));
    EXPECT_EQ(tok->encode("aww b", false), (Ids{2, 4, 4, 1, 3}));
    // Unknown characters fuse into one <unk> only with fuse_unk (off here).
    EXPECT_EQ(tok->encode("a\xC3\xA9\xC3\xA9", false), (Ids{2, 0, 0}));
    EXPECT_EQ(tok->token_to_id("<y>"), 11);
    EXPECT_EQ(tok->token_to_piece(12), "ww");
    EXPECT_FALSE(tok->is_special(12));
    EXPECT_EQ(tok->n_vocab(), 13);
}

void expect_error(const json& j, const std::string& name, const std::string& needle) {
    const std::string path = write_json(j, name);
    try {
        load_tokenizer(path);
        ADD_FAILURE() << "expected an error mentioning " << needle;
    } catch (const Error& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(path), std::string::npos) << what;
        EXPECT_NE(what.find(needle), std::string::npos) << what;
    }
}

TEST(Errors, IdsAndNestingBeyondWhatTheFileCanHoldAreRefused) {
    json j = llama2_style();
    j["model"]["vocab"]["<far>"] = int64_t{1} << 31;
    expect_error(j, "far", "model.vocab: id 2147483648 of \"<far>\" is out of range");
    j = llama2_style();
    j["model"]["vocab"]["<far>"] = 40000000;  // a 24 GiB table from a small file
    expect_error(j, "far2", "out of range (0 to 65535)");
    j = llama2_style();
    j["added_tokens"] = json::array({{{"id", 2147483647}, {"content", "<x>"}}});
    expect_error(j, "added", "added_tokens[0]: id 2147483647 of \"<x>\" is out of range");
    // Sequences in Sequences, deeper than JSON may nest here.
    json seq = {{"type", "Lowercase"}};
    for (int i = 0; i < 200; ++i) seq = {{"type", "Sequence"}, {"normalizers", json::array({seq})}};
    j = llama2_style();
    j["normalizer"] = seq;
    expect_error(j, "deep", "normalizer: JSON nested more than 128 levels deep at byte");
}

TEST(Errors, UnsupportedComponentsAreNamed) {
    json j = llama2_style();
    j["normalizer"] = {{"type", "Lowercase"}};
    expect_error(j, "n", "\"Lowercase\"");
    j = llama2_style();
    j["pre_tokenizer"] = {{"type", "Whitespace"}};
    expect_error(j, "p", "\"Whitespace\"");
    j = llama2_style();
    j["decoder"]["decoders"][1] = {{"type", "WordPiece"}, {"prefix", "##"}};
    expect_error(j, "d", "decoders[1]: unsupported decoder type \"WordPiece\"");
    j = llama2_style();
    j["model"]["type"] = "Unigram";
    expect_error(j, "m", "\"Unigram\"");
    j = llama2_style();
    j["model"]["merges"].push_back("a c");
    expect_error(j, "merge", "merges[4]");
    j = llama2_style();
    j["post_processor"] = {{"type", "Unknown"}};
    expect_error(j, "pp", "\"Unknown\"");
}

TEST(Errors, BrokenJsonNamesTheOffset) {
    const auto dir = temp_dir("components");
    const auto path = (dir / "broken.json").string();
    std::ofstream(path) << R"({"model": {"type": "BPE", "vocab": {"a": 0, "b" 1}}})";
    try {
        load_tokenizer(path);
        ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("byte offset 48: expected ':'"), std::string::npos)
            << e.what();
    }
}

TEST(Errors, InvalidUtf8InTheVocabulary) {
    const auto dir = temp_dir("components");
    const auto path = (dir / "latin1.json").string();
    std::ofstream(path) << "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"caf\xE9\": 0}}}";
    try {
        load_tokenizer(path);
        ADD_FAILURE() << "expected an error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("valid UTF-8"), std::string::npos) << e.what();
    }
}

TEST(Utf8, RepairsMaximalSubparts) {
    EXPECT_EQ(utf8::repair("a\xE2\x82"), "a\xEF\xBF\xBD");
    EXPECT_EQ(utf8::repair("\xED\xA0\x80"), "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD");
    EXPECT_EQ(utf8::repair("\xF0\x9F\x98\x80\xFF"), "\xF0\x9F\x98\x80\xEF\xBF\xBD");
    EXPECT_EQ(utf8::repair("a\xE2\x82", true), "a\xE2\x82");
    EXPECT_EQ(utf8::truncated_tail("a\xE2\x82"), 2u);
    EXPECT_EQ(utf8::truncated_tail("\xE2\x82\xAC"), 0u);
    EXPECT_EQ(utf8::truncated_tail("\xFF"), 0u);
    EXPECT_EQ(utf8::find_invalid("ok\xC0\x80"), 2u);
}

// Normalization runs only on stretches around characters that may change; the
// result must equal normalizing the whole text.
TEST(Normalizer, StretchesEqualWholeTextNfc) {
    const auto nfc = make_normalizer(json{{"type", "NFC"}}, "test");
    std::mt19937 rng(5);
    const std::vector<std::pair<uint32_t, uint32_t>> ranges = {
        {0x41, 0x7A},     {0x300, 0x36F},   {0xC0, 0x17F},    {0x1100, 0x11FF}, {0xAC00, 0xAC20},
        {0x3040, 0x30FF}, {0x4E00, 0x4E10}, {0x2000, 0x2010}, {0x0B47, 0x0B57}, {0x20, 0x20}};
    for (int k = 0; k < 2000; ++k) {
        std::string s;
        for (int n = rng() % 12; n > 0; --n) {
            const auto [lo, hi] = ranges[rng() % ranges.size()];
            utf8::append(s, lo + rng() % (hi - lo + 1));
        }
        utf8proc_uint8_t* whole =
            utf8proc_NFC(reinterpret_cast<const utf8proc_uint8_t*>(s.c_str()));
        const std::string expected(reinterpret_cast<char*>(whole));
        std::free(whole);
        std::string got = s;
        nfc->normalize(got);
        EXPECT_EQ(got, expected) << json(s).dump();
    }
}

}  // namespace
}  // namespace anelm::test
