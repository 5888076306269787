#include "models/model_loader.h"

#include <gtest/gtest.h>

#include <cstring>
#include <nlohmann/json.hpp>

#include "io/io_test_util.h"
#include "io/safetensors_writer.h"

namespace anelm {
namespace {

using nlohmann::json;
using test::expect_error;

// A tiny model: n_embd 16, 2 layers, 4 heads of 8 (q is 32 wide), 2 kv heads, n_ff 24, vocab 50.
json tiny_config(const std::string& model_type) {
    return {{"model_type", model_type},
            {"hidden_size", 16},
            {"num_hidden_layers", 2},
            {"num_attention_heads", 4},
            {"num_key_value_heads", 2},
            {"head_dim", 8},
            {"intermediate_size", 24},
            {"vocab_size", 50},
            {"max_position_embeddings", 128},
            {"tie_word_embeddings", false},
            {"bos_token_id", 1},
            {"eos_token_id", 2}};
}

// The tensors of the tiny model, listed by hand as transformers names them.
std::vector<TensorSpec> tiny_tensors(bool qkv_bias, bool o_bias, bool qk_norm, bool lm_head,
                                     DType dtype = DType::bf16) {
    std::vector<TensorSpec> t = {{"model.embed_tokens.weight", dtype, {50, 16}},
                                 {"model.norm.weight", dtype, {16}}};
    for (int i = 0; i < 2; ++i) {
        const std::string p = "model.layers." + std::to_string(i) + ".";
        for (const auto& [name, shape] : std::vector<std::pair<std::string, std::vector<int64_t>>>{
                 {"input_layernorm.weight", {16}},
                 {"post_attention_layernorm.weight", {16}},
                 {"self_attn.q_proj.weight", {32, 16}},
                 {"self_attn.k_proj.weight", {16, 16}},
                 {"self_attn.v_proj.weight", {16, 16}},
                 {"self_attn.o_proj.weight", {16, 32}},
                 {"mlp.gate_proj.weight", {24, 16}},
                 {"mlp.up_proj.weight", {24, 16}},
                 {"mlp.down_proj.weight", {16, 24}}})
            t.push_back({p + name, dtype, shape});
        if (qkv_bias) {
            t.push_back({p + "self_attn.q_proj.bias", dtype, {32}});
            t.push_back({p + "self_attn.k_proj.bias", dtype, {16}});
            t.push_back({p + "self_attn.v_proj.bias", dtype, {16}});
        }
        if (o_bias) t.push_back({p + "self_attn.o_proj.bias", dtype, {16}});
        if (qk_norm) {
            t.push_back({p + "self_attn.q_norm.weight", dtype, {8}});
            t.push_back({p + "self_attn.k_norm.weight", dtype, {8}});
        }
    }
    if (lm_head) t.push_back({"lm_head.weight", dtype, {50, 16}});
    return t;
}

const auto zero_fill = [](size_t, std::span<std::byte> out) {
    std::memset(out.data(), 0, out.size());
};

class ModelLoaderTest : public test::ScratchDir {
protected:
    void write_folder(const json& config, const std::vector<TensorSpec>& tensors) {
        test::write_file(path("config.json"), config.dump());
        write_safetensors(path("model.safetensors"), tensors, zero_fill);
    }
    std::string folder() const { return dir_.string(); }
};

TEST_F(ModelLoaderTest, LoadsQwen3Folder) {
    write_folder(tiny_config("qwen3"), tiny_tensors(false, false, true, true));
    test::write_file(path("generation_config.json"), R"({"eos_token_id": [3, 2]})");
    test::write_file(path("tokenizer.json"), "{}");
    const LoadedModel m = load_model(folder());
    EXPECT_EQ(m.spec.arch, Arch::qwen3);
    EXPECT_TRUE(m.spec.qk_norm);
    EXPECT_EQ(m.spec.eos_token_ids, (std::vector<int32_t>{3, 2}));
    EXPECT_EQ(m.tokenizer_path, path("tokenizer.json"));
    EXPECT_EQ(m.weights.size(), 2u + 2 * 11 + 1);
    EXPECT_EQ(m.weights.get("model.layers.1.self_attn.k_norm.weight", {8}).dtype, DType::bf16);
    EXPECT_EQ(m.weights.origin(), folder());
}

TEST_F(ModelLoaderTest, LoadsQwen2WithBiasesAndTiedEmbeddings) {
    json config = tiny_config("qwen2");
    config["tie_word_embeddings"] = true;
    write_folder(config, tiny_tensors(true, false, false, false, DType::f16));
    const LoadedModel m = load_model(folder());
    EXPECT_TRUE(m.spec.attention_bias);
    EXPECT_TRUE(m.spec.tie_word_embeddings);
    EXPECT_TRUE(m.tokenizer_path.empty());
    EXPECT_EQ(m.weights.get("model.layers.0.self_attn.v_proj.bias", {16}).dtype, DType::f16);
}

TEST_F(ModelLoaderTest, LoadsShardedLlamaWithAttentionBias) {
    json config = tiny_config("llama");
    config["attention_bias"] = true;
    test::write_file(path("config.json"), config.dump());
    const std::vector<TensorSpec> all = tiny_tensors(true, true, false, true, DType::f32);
    const std::vector<TensorSpec> first(all.begin(), all.begin() + 10);
    const std::vector<TensorSpec> second(all.begin() + 10, all.end());
    write_safetensors(path("model-00001-of-00002.safetensors"), first, zero_fill);
    write_safetensors(path("model-00002-of-00002.safetensors"), second, zero_fill);
    json weight_map = json::object();
    for (const TensorSpec& t : first) weight_map[t.name] = "model-00001-of-00002.safetensors";
    for (const TensorSpec& t : second) weight_map[t.name] = "model-00002-of-00002.safetensors";
    test::write_file(path("model.safetensors.index.json"), json{{"weight_map", weight_map}}.dump());
    const LoadedModel m = load_model(folder());
    EXPECT_EQ(m.spec.arch, Arch::llama);
    EXPECT_TRUE(m.spec.attention_out_bias);
    EXPECT_EQ(m.weights.size(), all.size());
}

TEST_F(ModelLoaderTest, RejectsWrongShape) {
    std::vector<TensorSpec> tensors = tiny_tensors(false, false, true, true);
    for (TensorSpec& t : tensors)
        if (t.name == "model.layers.1.self_attn.k_proj.weight") t.shape = {32, 16};
    write_folder(tiny_config("qwen3"), tensors);
    expect_error(
        [&] { load_model(folder()); },
        {path("model.safetensors") +
         ": tensor model.layers.1.self_attn.k_proj.weight has shape [32, 16], expected [16, 16]"});
}

TEST_F(ModelLoaderTest, RejectsMissingTensors) {
    // Qwen2 calls for q/k/v biases.
    write_folder(tiny_config("qwen2"), tiny_tensors(false, false, false, true));
    expect_error([&] { load_model(folder()); },
                 {folder() + ": missing tensor model.layers.0.self_attn.q_proj.bias"});
    // An untied model needs lm_head.
    write_folder(tiny_config("llama"), tiny_tensors(false, false, false, false));
    expect_error([&] { load_model(folder()); }, {folder() + ": missing tensor lm_head.weight"});
}

TEST_F(ModelLoaderTest, RejectsIntegerWeights) {
    write_folder(tiny_config("llama"), tiny_tensors(false, false, false, true, DType::i32));
    expect_error([&] { load_model(folder()); },
                 {folder(), "has dtype i32, expected f32, f16 or bf16"});
}

TEST_F(ModelLoaderTest, RejectsIncompleteFolders) {
    expect_error([&] { load_model(folder()); }, {folder() + ": no config.json in this folder"});
    test::write_file(path("config.json"), tiny_config("llama").dump());
    expect_error([&] { load_model(folder()); },
                 {folder() + ": no model.safetensors or model.safetensors.index.json"});
    expect_error([&] { load_model(path("absent")); },
                 {path("absent") + ": no such file or folder"});
    write_folder(tiny_config("llama"), tiny_tensors(false, false, false, true));
    expect_error([&] { load_model(path("model.safetensors")); },
                 {path("model.safetensors") + ": give the model's folder"});
    test::write_file(path("generation_config.json"), R"({"eos_token_id": 50})");
    expect_error([&] { load_model(folder()); },
                 {path("generation_config.json") + ": field eos_token_id: token id 50 is outside"});
}

TEST_F(ModelLoaderTest, LoadsLlama2cCheckpoint) {
    ANELM_REQUIRE_SHARED("models/stories260K/stories260K.bin");
    const std::string file = test::shared_path("models/stories260K/stories260K.bin").string();
    const LoadedModel m = load_model(file);
    EXPECT_EQ(m.spec.rope_style, RopeStyle::interleaved);
    EXPECT_EQ(m.spec.n_vocab, 512);
    EXPECT_TRUE(m.tokenizer_path.empty());
    EXPECT_EQ(m.weights.size(), 47u);
}

}  // namespace
}  // namespace anelm
