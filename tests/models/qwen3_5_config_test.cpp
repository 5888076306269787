// Qwen3.5's config.json: the text model's fields under text_config in the
// released multimodal checkpoints (or flat), layer kinds, the DeltaNet heads,
// and the partial rotation in rope_parameters.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/io_test_util.h"
#include "models/hf_config.h"

namespace anelm {
namespace {

using nlohmann::json;
using test::expect_error;

// The text_config of Qwen/Qwen3.5-0.8B's config.json (the fields that shape the model).
json text_0_8b() {
    json types = json::array();
    for (int i = 0; i < 24; ++i)
        types.push_back(i % 4 == 3 ? "full_attention" : "linear_attention");
    return {{"attention_bias", false},
            {"eos_token_id", 248044},
            {"full_attention_interval", 4},
            {"head_dim", 256},
            {"hidden_act", "silu"},
            {"hidden_size", 1024},
            {"intermediate_size", 3584},
            {"layer_types", types},
            {"linear_conv_kernel_dim", 4},
            {"linear_key_head_dim", 128},
            {"linear_num_key_heads", 16},
            {"linear_num_value_heads", 16},
            {"linear_value_head_dim", 128},
            {"max_position_embeddings", 262144},
            {"model_type", "qwen3_5_text"},
            {"num_attention_heads", 8},
            {"num_hidden_layers", 24},
            {"num_key_value_heads", 2},
            {"rms_norm_eps", 1e-06},
            {"rope_parameters",
             {{"mrope_interleaved", true},
              {"mrope_section", {11, 11, 10}},
              {"partial_rotary_factor", 0.25},
              {"rope_theta", 10000000},
              {"rope_type", "default"}}},
            {"vocab_size", 248320}};
}

json multimodal_0_8b() {
    return {{"architectures", {"Qwen3_5ForConditionalGeneration"}},
            {"model_type", "qwen3_5"},
            {"text_config", text_0_8b()},
            {"tie_word_embeddings", true},
            {"vision_config", {{"depth", 12}}}};
}

ModelSpec parse(const json& config) {
    return parse_hf_config(config.dump(), "m/config.json");
}

TEST(ConfigQwen3_5, ParsesTheTextModelOfTheMultimodalCheckpoint) {
    const ModelSpec s = parse(multimodal_0_8b());
    EXPECT_EQ(s.arch, Arch::qwen3_5);
    EXPECT_EQ(s.n_embd, 1024);
    EXPECT_EQ(s.n_layer, 24);
    EXPECT_EQ(s.n_head, 8);
    EXPECT_EQ(s.n_head_kv, 2);
    EXPECT_EQ(s.head_dim, 256);
    EXPECT_EQ(s.n_ff, 3584);
    EXPECT_EQ(s.rope_dims, 64);  // a quarter of each head rotates
    EXPECT_DOUBLE_EQ(s.rope_theta, 1e7);
    EXPECT_EQ(s.delta_n_head_k, 16);
    EXPECT_EQ(s.delta_n_head_v, 16);
    EXPECT_EQ(s.delta_head_dim_k, 128);
    EXPECT_EQ(s.conv_kernel, 4);
    EXPECT_TRUE(s.delta_layers[0]);
    EXPECT_FALSE(s.delta_layers[3]);
    EXPECT_EQ(std::count(s.delta_layers.begin(), s.delta_layers.end(), true), 18);
    EXPECT_TRUE(s.tie_word_embeddings);  // from the top level
    EXPECT_TRUE(s.attention_gate);
    EXPECT_TRUE(s.qk_norm);
    EXPECT_EQ(s.eos_token_ids, std::vector<int32_t>{248044});
}

TEST(ConfigQwen3_5, FlatConfigAndTheIntervalRule) {
    json c = text_0_8b();
    c.erase("layer_types");
    c["full_attention_interval"] = 3;
    c["rope_parameters"].erase("partial_rotary_factor");
    c["tie_word_embeddings"] = false;
    const ModelSpec s = parse(c);
    EXPECT_TRUE(s.delta_layers[0]);
    EXPECT_FALSE(s.delta_layers[2]);
    EXPECT_EQ(s.rope_dims, 64);  // partial_rotary_factor's default, 0.25
    EXPECT_FALSE(s.tie_word_embeddings);
}

TEST(ConfigQwen3_5, NamesTheBadField) {
    json c = multimodal_0_8b();
    c["text_config"]["linear_num_value_heads"] = 24;
    expect_error([&] { parse(c); }, {"text_config.linear_num_value_heads", "24"});
    c = multimodal_0_8b();
    c["text_config"]["layer_types"][5] = "mamba";
    expect_error([&] { parse(c); }, {"text_config.layer_types", "entry 5", "mamba"});
    c = multimodal_0_8b();
    c["text_config"]["rope_parameters"]["rope_type"] = "yarn";
    expect_error([&] { parse(c); }, {"text_config.rope_parameters.rope_type", "yarn"});
    c = multimodal_0_8b();
    c["text_config"]["rope_parameters"]["partial_rotary_factor"] = 0.005;
    expect_error([&] { parse(c); }, {"partial_rotary_factor", "rotates 1"});
}

}  // namespace
}  // namespace anelm
