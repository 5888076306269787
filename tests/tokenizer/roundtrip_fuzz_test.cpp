// Random text: valid UTF-8 survives encode -> decode unchanged; random bytes
// never crash and come back as their lossy UTF-8 reading.
#include <gtest/gtest.h>

#include <random>

#include "tokenizer/utf8.h"
#include "tokenizer_fixtures.h"

namespace anelm::test {
namespace {

// Code points from ranges that stress the pre-tokenizer regexes, BPE and byte
// fallback. With nfc_stable only characters that NFC leaves alone.
std::string random_text(std::mt19937& rng, bool nfc_stable) {
    static const std::vector<std::pair<uint32_t, uint32_t>> stable = {
        {0x20, 0x7E},       {0x20, 0x20},       {0x0A, 0x0A},     {0x09, 0x0D},
        {0x30, 0x39},       {0x410, 0x44F},     {0x4E00, 0x9FFF}, {0x3041, 0x3096},
        {0x30A1, 0x30FA},   {0x1F600, 0x1F64F}, {0x2002, 0x200A}, {0x3000, 0x3000},
        {0x20000, 0x2A6DF}, {0xE000, 0xE0FF}};
    static const std::vector<std::pair<uint32_t, uint32_t>> any = {
        {0x0, 0x7F},         {0x80, 0x7FF},  {0x800, 0xD7FF},  {0xE000, 0xFFFF},
        {0x10000, 0x10FFFF}, {0x300, 0x36F}, {0x1100, 0x11FF}, {0xAC00, 0xD7A3}};
    const auto& ranges = nfc_stable ? stable : any;
    std::uniform_int_distribution<size_t> length(0, 40), pick(0, ranges.size() - 1);
    std::string s;
    for (size_t n = length(rng); n > 0; --n) {
        const auto [lo, hi] = ranges[pick(rng)];
        utf8::append(s, std::uniform_int_distribution<uint32_t>(lo, hi)(rng));
    }
    return s;
}

struct Model {
    const char* name;
    bool normalizes;  // NFC: only NFC-stable text round-trips
};

class RandomText : public ::testing::TestWithParam<Model> {};

TEST_P(RandomText, RoundTripsAndSurvivesRandomBytes) {
    const std::string model = GetParam().name;
    ANELM_REQUIRE_SHARED("tokenizers/" + model + "/tokenizer.json");
    const Tokenizer& tok = shared_tokenizer(model);
    std::mt19937 rng(1234);
    size_t passed = 0, total = 0;
    for (int k = 0; k < 400; ++k) {
        const std::string text = random_text(rng, GetParam().normalizes);
        // Gemma turns a literal U+2581 into a space on decode.
        if (model == "gemma3" && text.find("\xE2\x96\x81") != std::string::npos) continue;
        const bool ok = tok.decode(tok.encode(text, false)) == text;
        EXPECT_TRUE(ok) << nlohmann::json(text).dump();
        passed += ok;
        ++total;
    }
    std::cout << model << ": " << passed << "/" << total << " random strings round-trip\n";

    std::uniform_int_distribution<int> byte(0, 255), length(0, 120);
    for (int k = 0; k < 300; ++k) {
        std::string bytes;
        for (int n = length(rng); n > 0; --n) bytes += static_cast<char>(byte(rng));
        for (int32_t id : tok.encode(bytes, true)) ASSERT_TRUE(id >= 0 && id < tok.n_vocab());
        const std::string text = tok.decode(tok.encode(bytes, false));
        EXPECT_EQ(utf8::find_invalid(text), std::string::npos);
        // No normalizer: the text comes back as its lossy UTF-8 reading.
        if (model == "llama3") {
            EXPECT_EQ(text, utf8::repair(bytes));
        }
        // Random ids decode too, whatever they are.
        std::vector<int32_t> random_ids;
        for (int n = length(rng); n > 0; --n)
            random_ids.push_back(
                std::uniform_int_distribution<int32_t>(-5, tok.n_vocab() + 5)(rng));
        EXPECT_EQ(utf8::find_invalid(tok.decode(random_ids)), std::string::npos);
    }
}

INSTANTIATE_TEST_SUITE_P(Models, RandomText,
                         ::testing::Values(Model{"qwen3", true}, Model{"llama3", false},
                                           Model{"gemma3", false}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace anelm::test
