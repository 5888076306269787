#include "models/hf_config.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "io/io_test_util.h"

namespace anelm {
namespace {

using nlohmann::json;
using test::expect_error;

// Llama-3.2-1B's config.json as published.
const json llama32_1b = json::parse(R"({
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "head_dim": 64,
  "hidden_act": "silu", "hidden_size": 2048, "initializer_range": 0.02,
  "intermediate_size": 8192, "max_position_embeddings": 131072, "mlp_bias": false,
  "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 16,
  "num_key_value_heads": 8, "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 32.0, "high_freq_factor": 4.0, "low_freq_factor": 1.0,
                   "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.45.0.dev0", "use_cache": true, "vocab_size": 128256})");

// Qwen2.5-0.5B's config.json as published.
const json qwen25_05b = json::parse(R"({
  "architectures": ["Qwen2ForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 151643,
  "eos_token_id": 151643, "hidden_act": "silu", "hidden_size": 896, "initializer_range": 0.02,
  "intermediate_size": 4864, "max_position_embeddings": 32768, "max_window_layers": 24,
  "model_type": "qwen2", "num_attention_heads": 14, "num_hidden_layers": 24,
  "num_key_value_heads": 2, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0,
  "sliding_window": 32768, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.40.1", "use_cache": true, "use_sliding_window": false,
  "vocab_size": 151936})");

// Qwen3-0.6B's config.json as published.
const json qwen3_06b = json::parse(R"({
  "architectures": ["Qwen3ForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 151643, "eos_token_id": 151645, "head_dim": 128, "hidden_act": "silu",
  "hidden_size": 1024, "initializer_range": 0.02, "intermediate_size": 3072,
  "max_position_embeddings": 40960, "max_window_layers": 28, "model_type": "qwen3",
  "num_attention_heads": 16, "num_hidden_layers": 28, "num_key_value_heads": 8,
  "rms_norm_eps": 1e-06, "rope_scaling": null, "rope_theta": 1000000,
  "sliding_window": null, "tie_word_embeddings": true, "torch_dtype": "bfloat16",
  "transformers_version": "4.51.0", "use_cache": true, "use_sliding_window": false,
  "vocab_size": 151936})");

ModelSpec parse(const json& config) {
    return parse_hf_config(config.dump(), "m/config.json");
}

// `config` with `patch` merged in (a null value removes the field).
json with(json config, const json& patch) {
    config.merge_patch(patch);
    return config;
}

TEST(ConfigLlama, ParsesLlama32WithLlama3RopeScaling) {
    const ModelSpec s = parse(llama32_1b);
    EXPECT_EQ(s.arch, Arch::llama);
    EXPECT_EQ(s.source, "m/config.json");
    EXPECT_EQ(s.n_embd, 2048);
    EXPECT_EQ(s.n_layer, 16);
    EXPECT_EQ(s.n_head, 32);
    EXPECT_EQ(s.n_head_kv, 8);
    EXPECT_EQ(s.head_dim, 64);
    EXPECT_EQ(s.n_ff, 8192);
    EXPECT_EQ(s.n_vocab, 128256);
    EXPECT_EQ(s.n_ctx_train, 131072);
    EXPECT_EQ(s.rope_theta, 500000.0);
    EXPECT_EQ(s.rope_style, RopeStyle::rotate_half);
    EXPECT_EQ(s.rope_scaling.type, RopeScaling::Type::llama3);
    EXPECT_EQ(s.rope_scaling.factor, 32.0);
    EXPECT_EQ(s.rope_scaling.low_freq_factor, 1.0);
    EXPECT_EQ(s.rope_scaling.high_freq_factor, 4.0);
    EXPECT_EQ(s.rope_scaling.original_max_position_embeddings, 8192);
    EXPECT_EQ(s.rms_norm_eps, 1e-5);
    EXPECT_TRUE(s.tie_word_embeddings);
    EXPECT_FALSE(s.attention_bias);
    EXPECT_FALSE(s.attention_out_bias);
    EXPECT_FALSE(s.qk_norm);
    EXPECT_EQ(s.torch_dtype, "bfloat16");
    EXPECT_EQ(s.bos_token_id, 128000);
    EXPECT_EQ(s.eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
}

TEST(ConfigLlama, AppliesLlamaConfigDefaults) {
    const ModelSpec s = parse(json{{"model_type", "llama"},
                                   {"hidden_size", 256},
                                   {"num_hidden_layers", 2},
                                   {"num_attention_heads", 8},
                                   {"intermediate_size", 512},
                                   {"vocab_size", 1000},
                                   {"max_position_embeddings", 2048}});
    EXPECT_EQ(s.n_head_kv, 8);  // = n_head
    EXPECT_EQ(s.head_dim, 32);  // hidden_size / n_head
    EXPECT_EQ(s.rope_theta, 10000.0);
    EXPECT_EQ(s.rope_scaling.type, RopeScaling::Type::none);
    EXPECT_EQ(s.rms_norm_eps, 1e-6);
    EXPECT_FALSE(s.tie_word_embeddings);
    EXPECT_FALSE(s.attention_bias);
    EXPECT_FALSE(s.qk_norm);
    EXPECT_EQ(s.bos_token_id, 1);
    EXPECT_EQ(s.eos_token_ids, (std::vector<int32_t>{2}));
    EXPECT_EQ(s.torch_dtype, "");
}

TEST(ConfigLlama, NullMeansDerivedOrNone) {
    const ModelSpec s = parse(
        with(llama32_1b,
             {{"num_key_value_heads", nullptr}, {"head_dim", nullptr}, {"rope_scaling", nullptr}}));
    // merge_patch removes fields given as null; both ways mean "derive".
    EXPECT_EQ(s.n_head_kv, 32);
    EXPECT_EQ(s.head_dim, 64);
    EXPECT_EQ(s.rope_scaling.type, RopeScaling::Type::none);
    json explicit_null = llama32_1b;
    explicit_null["num_key_value_heads"] = nullptr;
    explicit_null["bos_token_id"] = nullptr;
    const ModelSpec t = parse(explicit_null);
    EXPECT_EQ(t.n_head_kv, 32);
    EXPECT_EQ(t.bos_token_id, -1);  // given as null: no BOS, not Llama's default
}

TEST(ConfigLlama, AttentionBiasCoversAllFourProjections) {
    const ModelSpec s = parse(with(llama32_1b, {{"attention_bias", true}}));
    EXPECT_TRUE(s.attention_bias);
    EXPECT_TRUE(s.attention_out_bias);
}

TEST(ConfigLlama, FallsBackToArchitectures) {
    json config = llama32_1b;
    config.erase("model_type");
    EXPECT_EQ(parse(config).arch, Arch::llama);
    config["architectures"] = {"Qwen2ForCausalLM"};
    config["num_key_value_heads"] = 8;
    EXPECT_EQ(parse(config).arch, Arch::qwen2);
}

TEST(ConfigRope, ReadsLinearAndDefaultAndOldSpelling) {
    json config = llama32_1b;
    config["rope_scaling"] = {{"type", "linear"}, {"factor", 4.0}};
    ModelSpec s = parse(config);
    EXPECT_EQ(s.rope_scaling.type, RopeScaling::Type::linear);
    EXPECT_EQ(s.rope_scaling.factor, 4.0);
    // With both spellings present, "type" wins, as transformers does it.
    s = parse(with(llama32_1b, {{"rope_scaling", {{"type", "linear"}}}}));
    EXPECT_EQ(s.rope_scaling.type, RopeScaling::Type::linear);
    EXPECT_EQ(s.rope_scaling.factor, 32.0);
    s = parse(with(llama32_1b, {{"rope_scaling", json{{"rope_type", "default"}}}}));
    EXPECT_EQ(s.rope_scaling.type, RopeScaling::Type::none);
}

TEST(ConfigRope, ReadsTransformers5RopeParameters) {
    json config = llama32_1b;
    config.erase("rope_theta");
    config.erase("rope_scaling");
    config["rope_parameters"] = {
        {"rope_type", "llama3"},   {"rope_theta", 500000.0},
        {"factor", 8.0},           {"low_freq_factor", 1.0},
        {"high_freq_factor", 4.0}, {"original_max_position_embeddings", 8192}};
    const ModelSpec s = parse(config);
    EXPECT_EQ(s.rope_theta, 500000.0);
    EXPECT_EQ(s.rope_scaling.type, RopeScaling::Type::llama3);
    EXPECT_EQ(s.rope_scaling.factor, 8.0);
}

TEST(ConfigRope, RejectsUnsupportedOrIncompleteScaling) {
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"rope_scaling", {{"rope_type", "yarn"}, {"factor", 4.0}}}}));
        },
        {"m/config.json: field rope_scaling.rope_type: unsupported rope scaling type \"yarn\""});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"rope_scaling", {{"type", "dynamic"}, {"factor", 2.0}}}}));
        },
        {"m/config.json: field rope_scaling.type: unsupported rope scaling type \"dynamic\""});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"rope_scaling", {{"low_freq_factor", nullptr}}}}));
        },
        {"m/config.json: field rope_scaling.low_freq_factor: missing"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"rope_scaling", {{"high_freq_factor", 1.0}}}}));
        },
        {"field rope_scaling.high_freq_factor: 1 must be greater than low_freq_factor 1"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"rope_scaling", {{"rope_type", nullptr}}}}));
        },
        {"field rope_scaling.rope_type: missing"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"rope_scaling", {{"factor", -2}}}}));
        },
        {"field rope_scaling.factor: -2 is out of range"});
    json as_list = llama32_1b;
    as_list["rope_scaling"] = json::array();
    expect_error([&] { parse(as_list); },
                 {"field rope_scaling: expected an object or null, got an array"});
}

TEST(ConfigQwen2, ParsesQwen25WithBiasAndTie) {
    const ModelSpec s = parse(qwen25_05b);
    EXPECT_EQ(s.arch, Arch::qwen2);
    EXPECT_EQ(s.n_embd, 896);
    EXPECT_EQ(s.n_layer, 24);
    EXPECT_EQ(s.n_head, 14);
    EXPECT_EQ(s.n_head_kv, 2);
    EXPECT_EQ(s.head_dim, 64);
    EXPECT_EQ(s.n_ff, 4864);
    EXPECT_EQ(s.n_vocab, 151936);
    EXPECT_EQ(s.n_ctx_train, 32768);
    EXPECT_EQ(s.rope_theta, 1e6);
    EXPECT_EQ(s.rms_norm_eps, 1e-6);
    EXPECT_TRUE(s.tie_word_embeddings);
    EXPECT_TRUE(s.attention_bias);
    EXPECT_FALSE(s.attention_out_bias);
    EXPECT_FALSE(s.qk_norm);
    EXPECT_EQ(s.bos_token_id, 151643);
    EXPECT_EQ(s.eos_token_ids, (std::vector<int32_t>{151643}));
}

TEST(ConfigQwen2, DefaultsAndRequiredFields) {
    json config = qwen25_05b;
    for (const char* f : {"tie_word_embeddings", "bos_token_id", "eos_token_id", "rms_norm_eps"})
        config.erase(f);
    config["attention_bias"] = false;  // Qwen2 has q/k/v biases whatever this says
    const ModelSpec s = parse(config);
    EXPECT_FALSE(s.tie_word_embeddings);
    EXPECT_TRUE(s.attention_bias);
    EXPECT_EQ(s.bos_token_id, -1);
    EXPECT_TRUE(s.eos_token_ids.empty());
    EXPECT_EQ(s.rms_norm_eps, 1e-6);
    config.erase("num_key_value_heads");
    expect_error([&] { parse(config); }, {"m/config.json: field num_key_value_heads: missing"});
    expect_error(
        [&] {
            parse(with(qwen25_05b, {{"use_sliding_window", true}}));
        },
        {"field use_sliding_window: true is not supported"});
}

TEST(ConfigQwen3, ParsesQwen3WithQkNorm) {
    const ModelSpec s = parse(qwen3_06b);
    EXPECT_EQ(s.arch, Arch::qwen3);
    EXPECT_EQ(s.n_embd, 1024);
    EXPECT_EQ(s.n_layer, 28);
    EXPECT_EQ(s.n_head, 16);
    EXPECT_EQ(s.n_head_kv, 8);
    EXPECT_EQ(s.head_dim, 128);  // not hidden_size / n_head (64)
    EXPECT_EQ(s.n_ff, 3072);
    EXPECT_EQ(s.n_ctx_train, 40960);
    EXPECT_EQ(s.rope_theta, 1e6);
    EXPECT_EQ(s.rope_scaling.type, RopeScaling::Type::none);
    EXPECT_TRUE(s.tie_word_embeddings);
    EXPECT_FALSE(s.attention_bias);
    EXPECT_TRUE(s.qk_norm);
    EXPECT_EQ(s.bos_token_id, 151643);
    EXPECT_EQ(s.eos_token_ids, (std::vector<int32_t>{151645}));
}

TEST(ConfigQwen3, RequiresHeadDim) {
    json config = qwen3_06b;
    config.erase("head_dim");
    expect_error([&] { parse(config); }, {"m/config.json: field head_dim: missing"});
}

TEST(ConfigErrors, RejectsUnsupportedModels) {
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"model_type", "gemma2"}}));
        },
        {"m/config.json: field model_type: unsupported model type \"gemma2\""});
    json config = llama32_1b;
    config.erase("model_type");
    config["architectures"] = {"MistralForCausalLM"};
    expect_error(
        [&] { parse(config); },
        {"m/config.json: field architectures: none of [\"MistralForCausalLM\"] is supported"});
    config.erase("architectures");
    expect_error([&] { parse(config); }, {"field model_type: missing"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"hidden_act", "gelu"}}));
        },
        {"field hidden_act: unsupported activation \"gelu\""});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"mlp_bias", true}}));
        },
        {"field mlp_bias: true is not supported"});
}

TEST(ConfigErrors, RejectsMissingAndAbsurdDimensions) {
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"hidden_size", 0}}));
        },
        {"m/config.json: field hidden_size: 0 is out of range [1, "});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"num_hidden_layers", -3}}));
        },
        {"field num_hidden_layers: -3 is out of range"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"vocab_size", "128256"}}));
        },
        {"field vocab_size: expected an integer, got a string"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"intermediate_size", 8192.5}}));
        },
        {"field intermediate_size: expected an integer, got a floating-point number"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"vocab_size", nullptr}}));
        },
        {"m/config.json: field vocab_size: missing"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"max_position_embeddings", nullptr}}));
        },
        {"field max_position_embeddings: missing"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"num_attention_heads", uint64_t{1} << 63}}));
        },
        {"field num_attention_heads: 9223372036854775808 is out of range"});
}

TEST(ConfigErrors, RejectsInconsistentHeads) {
    expect_error(
        [&] {
            parse(with(
                llama32_1b,
                {{"head_dim", nullptr}, {"num_attention_heads", 30}, {"num_key_value_heads", 10}}));
        },
        {"m/config.json: field num_attention_heads: 30 does not divide hidden_size 2048"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"num_key_value_heads", 5}}));
        },
        {"field num_key_value_heads: 5 does not divide num_attention_heads 32"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"head_dim", 63}}));
        },
        {"field head_dim: 63 is odd"});
}

TEST(ConfigErrors, RejectsBadNumbersAndIds) {
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"rms_norm_eps", 0}}));
        },
        {"m/config.json: field rms_norm_eps: 0 is out of range (0, 1]"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"rms_norm_eps", -1e-5}}));
        },
        {"field rms_norm_eps: -1e-05 is out of range"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"rope_theta", 0.0}}));
        },
        {"field rope_theta: 0 is out of range"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"tie_word_embeddings", "yes"}}));
        },
        {"field tie_word_embeddings: expected true or false, got a string"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"eos_token_id", {128001, 200000}}}));
        },
        {"field eos_token_id: token id 200000 is outside the vocabulary [0, 128256)"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"bos_token_id", -5}}));
        },
        {"field bos_token_id: token id -5 is outside the vocabulary"});
    expect_error(
        [&] {
            parse(with(llama32_1b, {{"bos_token_id", {1, 2}}}));
        },
        {"field bos_token_id: expected one token id, got 2"});
}

TEST(ConfigErrors, RejectsBadJson) {
    expect_error([] { parse_hf_config("{\"hidden_size\": 12,", "m/config.json"); },
                 {"m/config.json: not valid JSON at byte"});
    expect_error([] { parse_hf_config("[]", "m/config.json"); },
                 {"m/config.json: expected a JSON object, got an array"});
    // Found by fuzzing: a number past double's range is not a parse error to the library.
    expect_error([] { parse_hf_config("{\"hidden_size\": 666E6666666}", "m/config.json"); },
                 {"m/config.json: not valid JSON", "number overflow"});
}

TEST(ConfigGeneration, MergesEosAndReplacesBos) {
    ModelSpec s = parse(llama32_1b);
    merge_generation_config(R"({"bos_token_id": 128000, "eos_token_id": [128009, 128001],
                                "do_sample": true, "temperature": 0.6})",
                            "m/generation_config.json", s);
    EXPECT_EQ(s.eos_token_ids, (std::vector<int32_t>{128009, 128001, 128008}));
    EXPECT_EQ(s.bos_token_id, 128000);

    ModelSpec q = parse(qwen25_05b);
    merge_generation_config(R"({"bos_token_id": 151643, "eos_token_id": 151645})",
                            "m/generation_config.json", q);
    EXPECT_EQ(q.eos_token_ids, (std::vector<int32_t>{151645, 151643}));

    ModelSpec unchanged = parse(qwen3_06b);
    merge_generation_config("{}", "m/generation_config.json", unchanged);
    EXPECT_EQ(unchanged.eos_token_ids, (std::vector<int32_t>{151645}));
    EXPECT_EQ(unchanged.bos_token_id, 151643);
}

TEST(ConfigGeneration, RejectsBadIds) {
    ModelSpec s = parse(qwen3_06b);
    expect_error([&] { merge_generation_config(R"({"eos_token_id": [1.5]})", "g.json", s); },
                 {"g.json: field eos_token_id: expected a token id, got a floating-point number"});
    expect_error([&] { merge_generation_config(R"({"eos_token_id": 999999})", "g.json", s); },
                 {"g.json: field eos_token_id: token id 999999 is outside the vocabulary"});
}

class ConfigFile : public test::ScratchDir {};

TEST_F(ConfigFile, LoadsFromFilesAndNamesThem) {
    test::write_file(path("config.json"), qwen3_06b.dump());
    ModelSpec s = load_hf_config(path("config.json"));
    EXPECT_EQ(s.source, path("config.json"));
    test::write_file(path("generation_config.json"), R"({"eos_token_id": [151645, 151643]})");
    load_generation_config(path("generation_config.json"), s);
    EXPECT_EQ(s.eos_token_ids, (std::vector<int32_t>{151645, 151643}));

    test::write_file(path("config.json"), with(qwen3_06b, {{"num_hidden_layers", 0}}).dump());
    expect_error([&] { load_hf_config(path("config.json")); },
                 {path("config.json") + ": field num_hidden_layers: 0 is out of range"});
    expect_error([&] { load_hf_config(path("absent.json")); },
                 {path("absent.json"), "cannot open"});
}

}  // namespace
}  // namespace anelm
