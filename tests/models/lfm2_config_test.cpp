// LFM2's config.json: its own field names, the MLP width derived from
// block_ff_dim, and the layer kinds from full_attn_idxs or layer_types.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/io_test_util.h"
#include "models/hf_config.h"

namespace anelm {
namespace {

using nlohmann::json;
using test::expect_error;

// The fields of LiquidAI/LFM2-350M's config.json that describe the model.
json lfm2_350m() {
    return {{"architectures", {"Lfm2ForCausalLM"}},
            {"block_auto_adjust_ff_dim", true},
            {"block_ff_dim", 6656},
            {"block_ffn_dim_multiplier", 1.0},
            {"block_multiple_of", 256},
            {"bos_token_id", 1},
            {"conv_L_cache", 3},
            {"conv_bias", false},
            {"eos_token_id", 7},
            {"full_attn_idxs", {2, 5, 8, 10, 12, 14}},
            {"hidden_size", 1024},
            {"max_position_embeddings", 128000},
            {"model_type", "lfm2"},
            {"norm_eps", 1e-05},
            {"num_attention_heads", 16},
            {"num_hidden_layers", 16},
            {"num_key_value_heads", 8},
            {"rope_theta", 1000000.0},
            {"torch_dtype", "bfloat16"},
            {"vocab_size", 65536}};
}

ModelSpec parse(const json& config) {
    return parse_hf_config(config.dump(), "m/config.json");
}

TEST(ConfigLfm2, ParsesLfm2With350MShapes) {
    const ModelSpec s = parse(lfm2_350m());
    EXPECT_EQ(s.arch, Arch::lfm2);
    EXPECT_EQ(s.n_embd, 1024);
    EXPECT_EQ(s.head_dim, 64);
    EXPECT_EQ(s.n_head_kv, 8);
    EXPECT_EQ(s.n_ff, 4608);  // 2/3 of 6656, rounded up to a multiple of 256
    EXPECT_EQ(s.conv_kernel, 3);
    EXPECT_FALSE(s.conv_bias);
    EXPECT_TRUE(s.qk_norm);
    EXPECT_TRUE(s.tie_word_embeddings);  // Lfm2Config's default
    EXPECT_DOUBLE_EQ(s.rms_norm_eps, 1e-5);
    EXPECT_DOUBLE_EQ(s.rope_theta, 1e6);
    const std::vector<bool> conv = {true,  true, false, true, true,  false, true,  true,
                                    false, true, false, true, false, true,  false, true};
    EXPECT_EQ(s.conv_layers, conv);
    EXPECT_EQ(s.bos_token_id, 1);
    EXPECT_EQ(s.eos_token_ids, std::vector<int32_t>{7});
}

TEST(ConfigLfm2, AppliesLfm2ConfigDefaults) {
    json c = lfm2_350m();
    for (const char* key : {"block_ff_dim", "full_attn_idxs", "rope_theta", "norm_eps",
                            "conv_L_cache", "bos_token_id", "eos_token_id"})
        c.erase(key);
    c["intermediate_size"] = 12288;
    const ModelSpec s = parse(c);
    EXPECT_EQ(s.n_ff, 8192);
    EXPECT_EQ(s.conv_layers, std::vector<bool>(16, false));  // every layer attends
    EXPECT_DOUBLE_EQ(s.rope_theta, 1e6);
    EXPECT_DOUBLE_EQ(s.rms_norm_eps, 1e-5);
    EXPECT_EQ(s.conv_kernel, 3);
    EXPECT_EQ(s.bos_token_id, 1);
    EXPECT_EQ(s.eos_token_ids, std::vector<int32_t>{2});
}

TEST(ConfigLfm2, LayerTypesAndTheOriginalKeys) {
    json c = lfm2_350m();
    c.erase("full_attn_idxs");
    c["layer_types"] = json::array();
    for (int i = 0; i < 16; ++i) c["layer_types"].push_back(i % 4 == 3 ? "full_attention" : "conv");
    c["block_auto_adjust_ff_dim"] = false;
    c["theta"] = 5e5;
    c["tie_embedding"] = false;
    const ModelSpec s = parse(c);
    EXPECT_EQ(s.n_ff, 6656);
    EXPECT_TRUE(s.conv_layers[0]);
    EXPECT_FALSE(s.conv_layers[3]);
    EXPECT_DOUBLE_EQ(s.rope_theta, 5e5);
    EXPECT_FALSE(s.tie_word_embeddings);
}

TEST(ConfigLfm2, NamesTheBadField) {
    json c = lfm2_350m();
    c["full_attn_idxs"] = {2, 16};
    expect_error([&] { parse(c); }, {"m/config.json", "full_attn_idxs", "16"});
    c = lfm2_350m();
    c.erase("full_attn_idxs");
    c["layer_types"] = {"conv"};
    expect_error([&] { parse(c); }, {"layer_types", "16 layer types"});
    c["layer_types"] = json::array();
    for (int i = 0; i < 16; ++i) c["layer_types"].push_back(i ? "conv" : "mamba");
    expect_error([&] { parse(c); }, {"layer_types", "entry 0", "mamba"});
    c = lfm2_350m();
    c["num_attention_heads"] = 24;
    expect_error([&] { parse(c); }, {"num_attention_heads", "24"});
}

}  // namespace
}  // namespace anelm
