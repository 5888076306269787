#include "quant/coreai_config.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <optional>
#include <regex>

#include "base/error.h"

namespace anelm::quant {
namespace {

constexpr QuantChoice lut(int bits, int64_t group = 8) { return {QuantMethod::lut, bits, group}; }

// Two layers of a Llama-shaped model: most at LUT4, layer 1's k_proj and both
// down_proj at LUT6, layer 0's v_proj f16, the head at LUT6 per tensor.
std::vector<RecipeWeight> mixed_recipe() {
    std::vector<RecipeWeight> w;
    for (int layer = 0; layer < 2; ++layer) {
        for (const char* m : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
                              "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
                              "mlp.down_proj"}) {
            const std::string module = m;
            QuantChoice c = lut(4);
            if ((layer == 1 && module == "self_attn.k_proj") || module == "mlp.down_proj") c = lut(6);
            if (layer == 0 && module == "self_attn.v_proj") c = {};
            w.push_back({"model.layers." + std::to_string(layer) + "." + module + ".weight", c, 4096});
        }
    }
    w.push_back({"lm_head.weight", lut(6, 0), 65536});
    w.push_back({"model.norm.weight", lut(4), 64});  // no linear module: left out
    return w;
}

// The config of the first module_name_configs entry whose regex matches all
// of `module`, if any.
std::optional<YAML::Node> config_for(const YAML::Node& root, const std::string& module) {
    for (const auto& entry : root["module_name_configs"]) {
        if (std::regex_match(module, std::regex(entry.first.as<std::string>()))) return entry.second;
    }
    return std::nullopt;
}

TEST(CoreAiConfig, IosPalettizationSetsEachMatrixWidth) {
    const std::string text =
        coreai_compression_yaml(mixed_recipe(), CoreAiPlatform::ios, {"made for a test"});
    EXPECT_EQ(text.rfind("# made for a test\n", 0), 0u);
    const YAML::Node root = YAML::Load(text)["kmeans_palettization_config"];
    ASSERT_TRUE(root.IsMap());
    const YAML::Node global = root["global_config"]["op_state_spec"]["weight"];
    EXPECT_EQ(global["n_bits"].as<int>(), 4);
    EXPECT_EQ(global["granularity"]["type"].as<std::string>(), "per_grouped_channel");
    EXPECT_EQ(global["granularity"]["axis"].as<int>(), 0);
    EXPECT_EQ(global["granularity"]["group_size"].as<int>(), 8);
    EXPECT_TRUE(root["module_type_configs"]["torch.nn.modules.sparse.Embedding"].IsNull());

    const auto bits_of = [&](const std::string& module) {
        const std::optional<YAML::Node> c = config_for(root, module);
        return c && c->IsMap() ? (*c)["op_state_spec"]["weight"]["n_bits"].as<int>() : 0;
    };
    EXPECT_EQ(bits_of("extend.model.layers.1.self_attn.k_proj"), 6);
    EXPECT_EQ(bits_of("extend.model.layers.0.mlp.down_proj"), 6);
    EXPECT_EQ(bits_of("extend.model.layers.1.mlp.down_proj"), 6);
    // The global width needs no entry; a regex must not reach a neighbour.
    EXPECT_FALSE(config_for(root, "extend.model.layers.0.self_attn.k_proj").has_value());
    EXPECT_FALSE(config_for(root, "extend.model.layers.1.mlp.gate_proj").has_value());
    EXPECT_FALSE(config_for(root, "extend.model.layers.10.self_attn.k_proj").has_value());
    // f16 is a null config; the head's own table is per tensor.
    const std::optional<YAML::Node> v = config_for(root, "extend.model.layers.0.self_attn.v_proj");
    ASSERT_TRUE(v);
    EXPECT_TRUE(v->IsNull());
    const std::optional<YAML::Node> head = config_for(root, "extend.lm_head");
    ASSERT_TRUE(head);
    EXPECT_EQ((*head)["op_state_spec"]["weight"]["granularity"]["type"].as<std::string>(),
              "per_tensor");
}

TEST(CoreAiConfig, MacosQuantizationTakesEachLayersWidestMatrix) {
    std::vector<RecipeWeight> w = mixed_recipe();
    w[2].choice = lut(4);  // layer 0 without its f16 v_proj
    const YAML::Node root =
        YAML::Load(coreai_compression_yaml(w, CoreAiPlatform::macos, {}))["quantization_config"];
    ASSERT_TRUE(root.IsMap());
    EXPECT_EQ(root["execution_mode"].as<std::string>(), "eager");
    // Every layer holds a LUT6 down_proj: int8 everywhere, no overrides left.
    const YAML::Node global = root["global_config"];
    EXPECT_TRUE(global["op_input_spec"].IsNull());
    EXPECT_EQ(global["op_state_spec"]["weight"]["dtype"].as<std::string>(), "int8");
    EXPECT_FALSE(root["module_name_configs"].IsDefined());

    // Layer 0 all LUT4 but for an f16 matrix: f16 wins; layer 1, the larger,
    // is int8 and global.
    w = mixed_recipe();
    for (RecipeWeight& r : w) {
        if (r.name == "model.layers.0.mlp.down_proj.weight") r.choice = lut(3);
        if (r.name.starts_with("model.layers.1.")) r.numel *= 2;
    }
    const YAML::Node mixed =
        YAML::Load(coreai_compression_yaml(w, CoreAiPlatform::macos, {}))["quantization_config"];
    EXPECT_EQ(mixed["global_config"]["op_state_spec"]["weight"]["dtype"].as<std::string>(), "int8");
    const std::optional<YAML::Node> layer0 = config_for(mixed, "model.layers.0.self_attn.qkv_proj");
    ASSERT_TRUE(layer0);
    EXPECT_TRUE(layer0->IsNull());
    EXPECT_FALSE(config_for(mixed, "model.layers.0.self_attn.qk_norm").has_value());
    EXPECT_FALSE(config_for(mixed, "model.layers.1.mlp.down_proj").has_value());
}

TEST(CoreAiConfig, PlatformNames) {
    EXPECT_EQ(parse_coreai_platform("ios", "--coreai-platform"), CoreAiPlatform::ios);
    EXPECT_EQ(parse_coreai_platform("macos", "--coreai-platform"), CoreAiPlatform::macos);
    EXPECT_THROW(parse_coreai_platform("tvos", "--coreai-platform"), Error);
}

}  // namespace
}  // namespace anelm::quant
