#include "synth/byte_bpe.h"

#include <gtest/gtest.h>

#include <map>
#include <set>

namespace anelm::synth {
namespace {

TEST(ByteBpe, ByteCharsAreGpt2s) {
    const auto& chars = byte_chars();
    EXPECT_EQ(std::set<std::string>(chars.begin(), chars.end()).size(), 256u);
    EXPECT_EQ(chars['A'], "A");
    EXPECT_EQ(chars['!'], "!");
    EXPECT_EQ(chars[0xe9], "\xc3\xa9");  // é stands for itself
    EXPECT_EQ(chars[' '], "\xc4\xa0");   // Ġ, U+0120
    EXPECT_EQ(chars['\n'], "\xc4\x8a");  // Ċ, U+010A
    EXPECT_EQ(chars[0], "\xc4\x80");     // Ā, U+0100
    EXPECT_EQ(chars[0xad], "\xc5\x83");  // Ń, U+0143: the last byte moved
    EXPECT_EQ(to_byte_chars("a b"),
              "a\xc4\xa0"
              "b");
}

TEST(ByteBpe, SplitFollowsThePreTokenizerPattern) {
    const std::vector<std::string> expected = {
        "Hello", " world", ",",     " it",      "'s", " ",     "4",   "2",    " degrees",
        ".\n\n", " ",      " Next", "\"quoted", "\"", " THEY", "'RE", " ?!\n"};
    EXPECT_EQ(split_pieces("Hello world, it's 42 degrees.\n\n  Next\"quoted\" THEY'RE ?!\n"),
              expected);
}

// Applies merges by rank to one piece, as a BPE model does.
std::vector<std::string> encode_piece(const std::string& piece, const BpeMerges& bpe) {
    std::map<std::pair<std::string, std::string>, size_t> rank;
    for (size_t i = 0; i < bpe.merges.size(); ++i) rank.emplace(bpe.merges[i], i);
    std::vector<std::string> symbols;
    for (unsigned char b : piece) symbols.push_back(byte_chars()[b]);
    for (;;) {
        size_t best = SIZE_MAX, at = 0;
        for (size_t i = 0; i + 1 < symbols.size(); ++i) {
            auto it = rank.find({symbols[i], symbols[i + 1]});
            if (it != rank.end() && it->second < best) best = it->second, at = i;
        }
        if (best == SIZE_MAX) return symbols;
        symbols[at] += symbols[at + 1];
        symbols.erase(symbols.begin() + static_cast<ptrdiff_t>(at) + 1);
    }
}

TEST(ByteBpe, LearntMergesMakeOrdinaryWordsWhole) {
    const BpeMerges bpe = learn_merges(builtin_corpus(), 1000);
    EXPECT_GT(bpe.tokens.size(), 250u);
    EXPECT_EQ(std::set<std::string>(bpe.tokens.begin(), bpe.tokens.end()).size(),
              bpe.tokens.size());
    // Every merge joins known symbols and makes a known token.
    std::set<std::string> known(byte_chars().begin(), byte_chars().end());
    for (const auto& [a, b] : bpe.merges) {
        EXPECT_TRUE(known.count(a) && known.count(b)) << a << " " << b;
        known.insert(a + b);
    }
    for (const char* word : {" the", " and", " river", " water", " people"})
        EXPECT_EQ(encode_piece(word, bpe).size(), 1u) << word;
    size_t bytes = 0, tokens = 0;
    for (const auto& piece :
         split_pieces("The people of the town talk about the weather and the river.")) {
        bytes += piece.size();
        tokens += encode_piece(piece, bpe).size();
    }
    EXPECT_LT(tokens * 3, bytes);
}

TEST(ByteBpe, LearningIsDeterministicAndBounded) {
    const BpeMerges a = learn_merges(builtin_corpus(), 100);
    const BpeMerges b = learn_merges(builtin_corpus(), 100);
    EXPECT_EQ(a.merges, b.merges);
    EXPECT_EQ(a.tokens.size(), 100u);
    // The first merges are the most frequent pairs of English text.
    ASSERT_GE(a.merges.size(), 2u);
    EXPECT_EQ(a.merges[0], (std::pair<std::string, std::string>{"\xc4\xa0", "t"}));
    EXPECT_EQ(a.merges[1], (std::pair<std::string, std::string>{"h", "e"}));
}

}  // namespace
}  // namespace anelm::synth
