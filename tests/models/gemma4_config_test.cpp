// Gemma 4's config.json: the text model under text_config (the released
// multimodal checkpoints) or flat, its two layer kinds and head sizes, the
// rope of each, K/V sharing, per-layer embeddings, and what is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/io_test_util.h"
#include "models/hf_config.h"

namespace anelm {
namespace {

using nlohmann::json;
using test::expect_error;

// The text_config of google/gemma-4-E2B-it's config.json (the fields that shape the model).
json text_e2b() {
    json types = json::array();
    for (int i = 0; i < 35; ++i)
        types.push_back(i % 5 == 4 ? "full_attention" : "sliding_attention");
    return {{"attention_bias", false},
            {"attention_k_eq_v", false},
            {"enable_moe_block", false},
            {"final_logit_softcapping", 30.0},
            {"global_head_dim", 512},
            {"head_dim", 256},
            {"hidden_activation", "gelu_pytorch_tanh"},
            {"hidden_size", 1536},
            {"hidden_size_per_layer_input", 256},
            {"intermediate_size", 6144},
            {"layer_types", types},
            {"max_position_embeddings", 131072},
            {"model_type", "gemma4_text"},
            {"num_attention_heads", 8},
            {"num_hidden_layers", 35},
            {"num_key_value_heads", 1},
            {"num_kv_shared_layers", 20},
            {"rms_norm_eps", 1e-6},
            {"rope_parameters",
             {{"full_attention",
               {{"partial_rotary_factor", 0.25},
                {"rope_theta", 1000000.0},
                {"rope_type", "proportional"}}},
              {"sliding_attention", {{"rope_theta", 10000.0}, {"rope_type", "default"}}}}},
            {"sliding_window", 512},
            {"use_bidirectional_attention", nullptr},
            {"use_double_wide_mlp", true},
            {"vocab_size", 262144},
            {"vocab_size_per_layer_input", 262144}};
}

json multimodal_e2b() {
    return {{"architectures", {"Gemma4ForConditionalGeneration"}},
            {"model_type", "gemma4"},
            {"eos_token_id", {1, 106}},
            {"text_config", text_e2b()},
            {"tie_word_embeddings", true},
            {"vision_config", {{"hidden_size", 768}}}};
}

ModelSpec parse(const json& config) {
    return parse_hf_config(config.dump(), "m/config.json");
}

TEST(ConfigGemma4, ParsesTheTextModelOfTheMultimodalCheckpoint) {
    const ModelSpec s = parse(multimodal_e2b());
    EXPECT_EQ(s.arch, Arch::gemma4);
    EXPECT_EQ(s.n_embd, 1536);
    EXPECT_EQ(s.n_layer, 35);
    EXPECT_EQ(s.n_head_kv, 1);
    EXPECT_EQ(s.head_dim, 256);
    EXPECT_EQ(s.global_head_dim, 512);
    EXPECT_EQ(s.sliding_window, 512);
    EXPECT_TRUE(s.sliding_layers[3]);
    EXPECT_FALSE(s.sliding_layers[4]);
    EXPECT_DOUBLE_EQ(s.rope_theta, 1e6);
    EXPECT_DOUBLE_EQ(s.rope_local_base_freq, 1e4);
    EXPECT_DOUBLE_EQ(s.rope_global_fraction, 0.25);
    EXPECT_EQ(s.n_kv_shared_layers, 20);
    EXPECT_TRUE(s.double_wide_mlp);
    EXPECT_EQ(s.per_layer_dim, 256);
    EXPECT_DOUBLE_EQ(s.final_logit_softcapping, 30.0);
    EXPECT_TRUE(s.tie_word_embeddings);
    EXPECT_EQ(s.eos_token_ids, (std::vector<int32_t>{1, 106}));  // from the top level
    EXPECT_EQ(s.bos_token_id, 2);                                // Gemma4TextConfig's default
    EXPECT_EQ(layer_head_dim(s, 4), 512);
    EXPECT_EQ(layer_head_dim(s, 5), 256);
}

TEST(ConfigGemma4, DefaultsAreGemma4TextConfigs) {
    const ModelSpec s = parse({{"model_type", "gemma4_text"}, {"num_hidden_layers", 7}});
    EXPECT_EQ(s.n_embd, 2304);
    EXPECT_EQ(s.global_head_dim, 512);
    EXPECT_EQ(s.per_layer_dim, 256);
    // One full layer in six, and the last one full whatever the pattern says.
    EXPECT_EQ(s.sliding_layers, (std::vector<bool>{true, true, true, true, true, false, false}));
    EXPECT_DOUBLE_EQ(s.rope_global_fraction, 0.25);
}

TEST(ConfigGemma4, NullPerLayerWidthMeansNoPerLayerEmbeddings) {
    json c = text_e2b();
    c["hidden_size_per_layer_input"] = nullptr;
    EXPECT_EQ(parse(c).per_layer_dim, 0);
}

TEST(ConfigGemma4, RefusesWhatItDoesNotModel) {
    for (const char* field : {"attention_k_eq_v", "enable_moe_block", "attention_bias"}) {
        json c = multimodal_e2b();
        c["text_config"][field] = true;
        expect_error([&] { parse(c); },
                     {"m/config.json", fmt::format("text_config.{}", field), "not supported"});
    }
    json c = text_e2b();
    c["use_bidirectional_attention"] = "all";
    expect_error([&] { parse(c); }, {"use_bidirectional_attention", "not supported"});
    c = text_e2b();
    c["vocab_size_per_layer_input"] = 128;
    expect_error([&] { parse(c); }, {"vocab_size_per_layer_input", "differs from vocab_size"});
    c = text_e2b();
    c["rope_parameters"]["full_attention"]["rope_type"] = "yarn";
    expect_error([&] { parse(c); }, {"rope_parameters.full_attention.rope_type", "yarn"});
}

// Every sharing layer needs an earlier layer of its kind that computes K/V.
TEST(ConfigGemma4, RefusesSharingWithoutASource) {
    json c = text_e2b();
    c["num_kv_shared_layers"] = 33;  // layers 2..34 share; no full layer below 2
    expect_error([&] { parse(c); }, {"num_kv_shared_layers", "layer 4", "no earlier layer"});
}

}  // namespace
}  // namespace anelm
