// ANEMLL's file names, chunk split and LM head pieces, as its converter and
// runners expect them (../shared/docs/research/anemll.md §1, §2).
#include "anemll/anemll_layout.h"

#include <gtest/gtest.h>

#include <numeric>

#include "io/io_test_util.h"

namespace anelm::anemll {
namespace {

using quant::QuantChoice;
using quant::QuantMethod;
using test::expect_error;

QuantChoice lut(int bits, int64_t group = 8) {
    return {QuantMethod::lut, bits, group};
}

TEST(AnemllLayout, NamesWithLut) {
    ConvertLayout layout = default_layout("qwen3", 151936);
    layout.lut_ffn = lut(4);
    layout.lut_head = lut(6, 4);
    layout.n_chunks = 12;
    EXPECT_EQ(layout.embeddings_stem(), "qwen_embeddings");
    EXPECT_EQ(layout.lm_head_stem(), "qwen_lm_head_lut6");
    EXPECT_EQ(layout.ffn_chunk_stem(1), "qwen_FFN_PF_lut4_chunk_01of12");
    EXPECT_EQ(layout.ffn_chunk_stem(12), "qwen_FFN_PF_lut4_chunk_12of12");
    EXPECT_EQ(layout.monolithic_stem(), "qwen_monolithic_full_lut4");
    EXPECT_EQ(package_name(layout.lm_head_stem()), "qwen_lm_head_lut6.mlpackage");
    EXPECT_EQ(compiled_name(layout.ffn_chunk_stem(3)), "qwen_FFN_PF_lut4_chunk_03of12.mlmodelc");

    const std::vector<std::string> stems = layout.package_stems();
    ASSERT_EQ(stems.size(), 14u);
    EXPECT_EQ(stems.front(), "qwen_embeddings");
    EXPECT_EQ(stems[1], "qwen_FFN_PF_lut4_chunk_01of12");
    EXPECT_EQ(stems.back(), "qwen_lm_head_lut6");
}

TEST(AnemllLayout, NamesWithoutLut) {
    ConvertLayout layout = default_layout("llama", 32000);
    EXPECT_EQ(layout.embeddings_stem(), "llama_embeddings");
    EXPECT_EQ(layout.lm_head_stem(), "llama_lm_head");
    EXPECT_EQ(layout.ffn_chunk_stem(1), "llama_FFN_PF_chunk_01of01");
    EXPECT_EQ(layout.monolithic_stem(), "llama_monolithic_full");
    EXPECT_EQ(layout.package_stems(),
              (std::vector<std::string>{"llama_embeddings", "llama_FFN_PF_chunk_01of01",
                                        "llama_lm_head"}));
    layout.monolithic = true;
    EXPECT_EQ(layout.package_stems(), std::vector<std::string>{"llama_monolithic_full"});
}

TEST(AnemllLayout, DefaultsPerFamily) {
    EXPECT_EQ(default_prefix("llama"), "llama");
    EXPECT_EQ(default_prefix("qwen2"), "qwen25");
    EXPECT_EQ(default_prefix("qwen3"), "qwen");
    EXPECT_EQ(default_prefix("gemma3_text"), "gemma3");
    EXPECT_EQ(default_prefix("gemma3"), "gemma3");
    EXPECT_EQ(default_prefix("gemma4"), "gemma4");
    EXPECT_EQ(lm_head_split("llama"), 8);
    EXPECT_EQ(lm_head_split("qwen2"), 16);
    EXPECT_EQ(lm_head_split("qwen3"), 16);
    EXPECT_EQ(lm_head_split("gemma3_text"), 16);

    const ConvertLayout gemma = default_layout("gemma3_text", 262144);
    EXPECT_EQ(gemma.prefix, "gemma3");
    EXPECT_EQ(gemma.architecture, "gemma3_text");
    EXPECT_EQ(gemma.split_lm_head, 16);
    EXPECT_EQ(gemma.lm_head_chunk_sizes, std::vector<int64_t>(16, 16384));
    EXPECT_NO_THROW(gemma.check("layout"));
}

TEST(AnemllLayout, FunctionsRotateOnlyBeyondTheWindow) {
    ConvertLayout layout = default_layout("gemma3_text", 262144);
    EXPECT_EQ(layout.function_names(), (std::vector<std::string>{"infer", "prefill"}));
    layout.sliding_window = 512;
    layout.context_length = 512;
    EXPECT_FALSE(layout.rotates());
    layout.context_length = 1024;
    EXPECT_EQ(layout.function_names(),
              (std::vector<std::string>{"infer", "infer_rotate", "prefill", "prefill_rotate"}));
    // One cache as long as the context still needs the rotate functions: the
    // Swift runner calls them past the window whatever the cache layout.
    layout.single_cache = true;
    EXPECT_TRUE(layout.rotates());
    layout.context_length = 512;
    EXPECT_FALSE(layout.rotates());
}

TEST(AnemllLayout, LmHeadPiecesSumToTheVocabulary) {
    // Qwen3's 151936 = 16 * 9496: even pieces.
    EXPECT_EQ(lm_head_chunk_sizes(151936, 16), std::vector<int64_t>(16, 9496));
    // 32003 = 8 * 4000 + 3: every piece but the last holds ceil(32003 / 8) ids,
    // the last the rest (its output is padded to 4001 rows).
    EXPECT_EQ(lm_head_chunk_sizes(32003, 8),
              (std::vector<int64_t>{4001, 4001, 4001, 4001, 4001, 4001, 4001, 3996}));
    EXPECT_EQ(lm_head_piece_rows(32003, 8), 4001);
    // 17 ids in pieces of ceil(17 / 16) = 2 rows fill only 9 pieces.
    EXPECT_EQ(lm_head_chunk_sizes(17, 16), (std::vector<int64_t>{2, 2, 2, 2, 2, 2, 2, 2, 1}));
    // Rows rounded up to the head's LUT group: 648 in pieces of ceil(648 / 16) = 41
    // rows becomes 14 pieces of 48 (the last 24), each starting a group of 8.
    EXPECT_EQ(lm_head_piece_rows(648, 16, 8), 48);
    const std::vector<int64_t> grouped = lm_head_chunk_sizes(648, 16, 8);
    EXPECT_EQ(grouped.size(), 14u);
    EXPECT_EQ(grouped.back(), 24);
    // Gemma 3 4B's 262208 ids keep 16 pieces of 16392 rows (16388 rounded up to 8).
    EXPECT_EQ(lm_head_piece_rows(262208, 16, 8), 16392);
    EXPECT_EQ(lm_head_chunk_sizes(262208, 16, 8).size(), 16u);
    for (int64_t vocab : {512, 650, 128256, 128257, 151669}) {
        for (int n : {8, 16}) {
            const std::vector<int64_t> sizes = lm_head_chunk_sizes(vocab, n);
            const int64_t rows = lm_head_piece_rows(vocab, n);
            ASSERT_EQ(sizes.size(), static_cast<size_t>(n));
            EXPECT_EQ(std::accumulate(sizes.begin(), sizes.end(), int64_t{0}), vocab);
            for (size_t i = 0; i + 1 < sizes.size(); ++i) EXPECT_EQ(sizes[i], rows);
            EXPECT_GE(sizes.back(), 1);
            EXPECT_LE(sizes.back(), rows);
        }
    }
    expect_error([] { lm_head_chunk_sizes(7, 8); }, {"8 pieces", "7"});
    expect_error([] { lm_head_chunk_sizes(100, 0); }, {"0 pieces"});
}

TEST(AnemllLayout, LayerRangesAreBalancedAndCoverEveryLayer) {
    EXPECT_EQ(layer_ranges(28, 1), (std::vector<LayerRange>{{0, 28}}));
    EXPECT_EQ(layer_ranges(10, 3), (std::vector<LayerRange>{{0, 4}, {4, 7}, {7, 10}}));
    for (int64_t n_layer : {1, 5, 16, 28, 36}) {
        for (int n = 1; n <= n_layer; ++n) {
            const std::vector<LayerRange> ranges = layer_ranges(n_layer, n);
            ASSERT_EQ(ranges.size(), static_cast<size_t>(n));
            int64_t next = 0, most = 0, least = n_layer;
            for (const LayerRange& r : ranges) {
                EXPECT_EQ(r.begin, next);
                EXPECT_GT(r.end, r.begin);
                most = std::max(most, r.end - r.begin);
                least = std::min(least, r.end - r.begin);
                next = r.end;
            }
            EXPECT_EQ(next, n_layer);
            EXPECT_LE(most - least, 1);
            EXPECT_EQ(ranges.front().end - ranges.front().begin, most);
        }
    }
    expect_error([] { layer_ranges(4, 5); }, {"5 chunks", "4 layers"});
    expect_error([] { layer_ranges(4, 0); }, {"0 chunks"});
}

TEST(AnemllLayout, AutoChunkCountIsTheSmallestThatFits) {
    const std::vector<uint64_t> layers(10, 100);
    EXPECT_EQ(auto_chunk_count(layers, 0, 0, 1000), 1);
    EXPECT_EQ(auto_chunk_count(layers, 0, 0, 999), 2);
    // 3 chunks are 4/3/3 layers: 400 fits, so 2 chunks (500) do not at 450.
    EXPECT_EQ(auto_chunk_count(layers, 0, 0, 450), 3);
    // The first chunk's extra bytes push it over: 400 + 60 > 450, and 4 chunks (3/3/2/2) fit.
    EXPECT_EQ(auto_chunk_count(layers, 60, 0, 450), 4);
    // The last chunk's extra: 3 chunks end with 300 + 160 > 450; 4 (3/3/2/2) with 200 + 160.
    EXPECT_EQ(auto_chunk_count(layers, 0, 160, 450), 4);
    // With one chunk, it carries both extras.
    EXPECT_EQ(auto_chunk_count(layers, 1, 1, 1001), 2);
    EXPECT_EQ(auto_chunk_count(layers, 1, 1, 1002), 1);
    // Uneven layers: the chunk holding the big one decides.
    EXPECT_EQ(auto_chunk_count(std::vector<uint64_t>{100, 100, 500, 100}, 0, 0, 600), 2);
    EXPECT_EQ(auto_chunk_count(std::vector<uint64_t>{100, 100, 500, 100}, 0, 0, 599), 3);
    expect_error(
        [] {
            auto_chunk_count(std::vector<uint64_t>{100, 100, 500, 100}, 0, 0, 499);
        },
        {"no chunk count up to 4"});

    expect_error([&] { auto_chunk_count(layers, 0, 0, 99); },
                 {"--chunks auto", "no chunk count up to 10"});
    expect_error([&] { auto_chunk_count(layers, 0, 60, 150); }, {"--chunks auto"});
    expect_error([] { auto_chunk_count({}, 0, 0, 100); }, {"no layers"});
}

TEST(AnemllLayout, CheckNamesTheField) {
    const ConvertLayout good = default_layout("llama", 32000);
    EXPECT_NO_THROW(good.check("layout"));
    ConvertLayout bad = good;
    bad.lut_ffn = {QuantMethod::int8, 8, 0};
    expect_error([&] { bad.check("layout"); }, {"layout: lut_ffn:", "int8"});
    bad = good;
    bad.lut_head = lut(5);
    expect_error([&] { bad.check("layout"); }, {"layout: lut_lmhead:", "5 bits"});
    bad = good;
    bad.lm_head_chunk_sizes.back() += 1;
    expect_error([&] { bad.check("layout"); }, {"lm_head_chunk_sizes", "32001"});
    bad = good;
    bad.n_chunks = 100;
    expect_error([&] { bad.check("layout"); }, {"num_chunks: 100"});
    bad = good;
    bad.monolithic = true;
    bad.n_chunks = 2;
    expect_error([&] { bad.check("layout"); }, {"num_chunks: 2", "monolithic"});
    bad = good;
    bad.fp16_scale = 2;
    expect_error([&] { bad.check("layout"); }, {"fp16_scale: 2"});
    bad = good;
    bad.context_length = 0;
    expect_error([&] { bad.check("layout"); }, {"context_length: 0"});
}

}  // namespace
}  // namespace anelm::anemll
