// Gemma 3 configs: the text-only gemma3_text form and the multimodal gemma3 form
// whose language model sits under text_config.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/io_test_util.h"
#include "models/hf_config.h"

namespace anelm {
namespace {

using nlohmann::json;
using test::expect_error;

// gemma-3-1b-it's config.json fields.
const json gemma3_1b = json::parse(R"({
  "architectures": ["Gemma3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "attn_logit_softcapping": null, "bos_token_id": 2, "cache_implementation": "hybrid",
  "eos_token_id": [1, 106], "final_logit_softcapping": null, "head_dim": 256,
  "hidden_activation": "gelu_pytorch_tanh", "hidden_size": 1152, "initializer_range": 0.02,
  "intermediate_size": 6912, "max_position_embeddings": 32768, "model_type": "gemma3_text",
  "num_attention_heads": 4, "num_hidden_layers": 26, "num_key_value_heads": 1,
  "pad_token_id": 0, "query_pre_attn_scalar": 256, "rms_norm_eps": 1e-06,
  "rope_local_base_freq": 10000, "rope_scaling": null, "rope_theta": 1000000,
  "sliding_window": 512, "sliding_window_pattern": 6, "torch_dtype": "bfloat16",
  "transformers_version": "4.50.0.dev0", "use_cache": true, "vocab_size": 262144})");

// gemma-3-4b-it's config.json without its vision_config: the text_config names
// only what differs from Gemma3TextConfig's defaults.
const json gemma3_4b = json::parse(R"({
  "architectures": ["Gemma3ForConditionalGeneration"], "boi_token_index": 255999,
  "eoi_token_index": 256000, "eos_token_id": [1, 106], "image_token_index": 262144,
  "initializer_range": 0.02, "mm_tokens_per_image": 256, "model_type": "gemma3",
  "text_config": {"hidden_size": 2560, "intermediate_size": 10240, "model_type": "gemma3_text",
                  "num_hidden_layers": 34, "rope_scaling": {"factor": 8.0, "rope_type": "linear"},
                  "sliding_window": 1024},
  "torch_dtype": "bfloat16", "transformers_version": "4.50.0.dev0"})");

ModelSpec parse(const json& config) {
    return parse_hf_config(config.dump(), "g/config.json");
}

std::vector<bool> every_sixth_global(int64_t n_layer) {
    std::vector<bool> sliding;
    for (int64_t i = 0; i < n_layer; ++i) sliding.push_back((i + 1) % 6 != 0);
    return sliding;
}

TEST(ConfigGemma3, ParsesGemma3Text) {
    const ModelSpec s = parse(gemma3_1b);
    EXPECT_EQ(s.arch, Arch::gemma3);
    EXPECT_EQ(s.n_embd, 1152);
    EXPECT_EQ(s.n_layer, 26);
    EXPECT_EQ(s.n_head, 4);
    EXPECT_EQ(s.n_head_kv, 1);
    EXPECT_EQ(s.head_dim, 256);
    EXPECT_EQ(s.n_ff, 6912);
    EXPECT_EQ(s.n_vocab, 262144);
    EXPECT_EQ(s.n_ctx_train, 32768);
    EXPECT_EQ(s.rope_theta, 1e6);
    EXPECT_EQ(s.rope_local_base_freq, 1e4);
    EXPECT_EQ(s.rope_scaling.type, RopeScaling::Type::none);
    EXPECT_EQ(s.query_pre_attn_scalar, 256);
    EXPECT_EQ(s.sliding_window, 512);
    EXPECT_EQ(s.sliding_layers, every_sixth_global(26));
    EXPECT_EQ(s.final_logit_softcapping, 0);
    EXPECT_EQ(s.attn_logit_softcapping, 0);
    EXPECT_TRUE(s.qk_norm);
    EXPECT_TRUE(s.tie_word_embeddings);  // Gemma3TextConfig's default
    EXPECT_EQ(s.bos_token_id, 2);
    EXPECT_EQ(s.eos_token_ids, (std::vector<int32_t>{1, 106}));
}

TEST(ConfigGemma3, ParsesTheTextConfigOfAMultimodalConfig) {
    const ModelSpec s = parse(gemma3_4b);
    EXPECT_EQ(s.arch, Arch::gemma3);
    EXPECT_EQ(s.n_embd, 2560);
    EXPECT_EQ(s.n_layer, 34);
    EXPECT_EQ(s.n_ff, 10240);
    // Gemma3TextConfig's defaults fill what the text_config leaves out.
    EXPECT_EQ(s.n_head, 8);
    EXPECT_EQ(s.n_head_kv, 4);
    EXPECT_EQ(s.head_dim, 256);
    EXPECT_EQ(s.n_vocab, 262208);
    EXPECT_EQ(s.n_ctx_train, 131072);
    EXPECT_EQ(s.query_pre_attn_scalar, 256);
    EXPECT_EQ(s.rope_theta, 1e6);
    EXPECT_EQ(s.rope_scaling.type, RopeScaling::Type::linear);
    EXPECT_EQ(s.rope_scaling.factor, 8.0);
    EXPECT_EQ(s.sliding_window, 1024);
    EXPECT_EQ(s.sliding_layers, every_sixth_global(34));
    EXPECT_EQ(s.torch_dtype, "bfloat16");
    EXPECT_EQ(s.eos_token_ids, (std::vector<int32_t>{1, 106}));
    EXPECT_EQ(s.bos_token_id, 2);
}

TEST(ConfigGemma3, LayerTypesAndTransformers5RopeParameters) {
    json config = gemma3_1b;
    config.erase("sliding_window_pattern");
    config.erase("rope_theta");
    config.erase("rope_local_base_freq");
    config["num_hidden_layers"] = 3;
    config["layer_types"] = {"full_attention", "sliding_attention", "full_attention"};
    config["final_logit_softcapping"] = 30.0;
    config["rope_parameters"] = {
        {"full_attention", {{"rope_type", "linear"}, {"factor", 4.0}, {"rope_theta", 2e6}}},
        {"sliding_attention", {{"rope_type", "default"}, {"rope_theta", 5e4}}}};
    const ModelSpec s = parse(config);
    EXPECT_EQ(s.sliding_layers, (std::vector<bool>{false, true, false}));
    EXPECT_EQ(s.final_logit_softcapping, 30.0);
    EXPECT_EQ(s.rope_theta, 2e6);
    EXPECT_EQ(s.rope_scaling.factor, 4.0);
    EXPECT_EQ(s.rope_local_base_freq, 5e4);

    config["layer_types"] = {"full_attention", "chunked_attention", "full_attention"};
    expect_error([&] { parse(config); },
                 {"g/config.json: field layer_types: entry 1 is \"chunked_attention\""});
    config["layer_types"] = {"full_attention"};
    expect_error([&] { parse(config); }, {"field layer_types: expected a list of 3 layer types"});
}

TEST(ConfigGemma3, NamesTheTextConfigInErrors) {
    json config = gemma3_4b;
    config["text_config"]["hidden_activation"] = "silu";
    expect_error([&] { parse(config); },
                 {"g/config.json: field text_config.hidden_activation: unsupported activation"});
    config = gemma3_4b;
    config["text_config"]["num_key_value_heads"] = 3;
    expect_error([&] { parse(config); },
                 {"field text_config.num_key_value_heads: 3 does not divide"});
    config["text_config"] = 5;
    expect_error([&] { parse(config); }, {"field text_config: expected an object"});
}

}  // namespace
}  // namespace anelm
