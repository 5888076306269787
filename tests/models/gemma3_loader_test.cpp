// A multimodal Gemma 3 folder: config.json with a text_config and the language
// model's tensors under either prefix transformers has written.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/safetensors_writer.h"
#include "models/expected_tensors.h"
#include "models/hf_config.h"
#include "models/model_loader.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

const nlohmann::json config = {{"architectures", {"Gemma3ForConditionalGeneration"}},
                               {"model_type", "gemma3"},
                               {"text_config",
                                {{"model_type", "gemma3_text"},
                                 {"hidden_size", 8},
                                 {"intermediate_size", 16},
                                 {"num_hidden_layers", 1},
                                 {"num_attention_heads", 2},
                                 {"num_key_value_heads", 1},
                                 {"head_dim", 4},
                                 {"vocab_size", 32},
                                 {"max_position_embeddings", 64}}},
                               {"vision_config", {{"model_type", "siglip_vision_model"}}}};

void write_folder(const fs::path& dir, const std::string& prefix) {
    fs::create_directories(dir);
    std::ofstream(dir / "config.json") << config.dump();
    const ModelSpec spec = parse_hf_config(config.dump(), "config.json");
    std::vector<TensorSpec> tensors;
    for (const ExpectedTensor& t : expected_tensors(spec)) {
        std::string name = t.name;
        name.replace(0, std::strlen("model."), prefix);
        tensors.push_back({name, DType::f32, t.shape});
    }
    tensors.push_back({"vision_tower.vision_model.post_layernorm.weight", DType::f32, {8}});
    write_safetensors((dir / "model.safetensors").string(), tensors,
                      [](size_t i, std::span<std::byte> out) {
                          for (size_t k = 0; k < out.size(); k += 4) {
                              const float v = static_cast<float>(i);
                              std::memcpy(out.data() + k, &v, 4);
                          }
                      });
}

TEST(Gemma3Loader, RenamesTheLanguageModelUnderEitherPrefix) {
    const fs::path root = test::temp_dir("gemma3_loader");
    for (const std::string prefix : {"language_model.model.", "model.language_model."}) {
        const fs::path dir = root / prefix;
        write_folder(dir, prefix);
        const LoadedModel m = load_model(dir.string());
        EXPECT_EQ(m.spec.arch, Arch::gemma3);
        EXPECT_EQ(m.spec.n_embd, 8);
        const TensorView* up = m.weights.find("model.layers.0.mlp.up_proj.weight");
        ASSERT_NE(up, nullptr) << prefix;
        EXPECT_EQ(up->shape, (std::vector<int64_t>{16, 8}));
        EXPECT_EQ(m.weights.find(prefix + "layers.0.mlp.up_proj.weight"), nullptr);
        EXPECT_EQ(m.weights.find("vision_tower.vision_model.post_layernorm.weight"), nullptr);
    }
    fs::remove_all(root);
}

}  // namespace
}  // namespace anelm
