#include "synth/synth.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "base/error.h"
#include "base/half.h"
#include "models/model_loader.h"
#include "models/models.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

json read_json(const fs::path& path) {
    return json::parse(read_file(path));
}

// A .safetensors file parsed by hand: 8-byte little-endian length, JSON, data.
struct Safetensors {
    json header;
    std::string data;

    std::vector<float> values(const std::string& name) const {
        const json& t = header.at(name);
        const size_t begin = t["data_offsets"][0], end = t["data_offsets"][1];
        const std::string dtype = t["dtype"];
        std::vector<float> out;
        const char* p = data.data() + begin;
        if (dtype == "F32") {
            out.resize((end - begin) / 4);
            std::memcpy(out.data(), p, end - begin);
            return out;
        }
        for (size_t i = 0; i < (end - begin) / 2; ++i) {
            uint16_t h;
            std::memcpy(&h, p + 2 * i, 2);
            out.push_back(dtype == "BF16" ? bf16_to_f32(h) : f16_to_f32(h));
        }
        return out;
    }
};

Safetensors read_safetensors(const fs::path& path) {
    const std::string bytes = read_file(path);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
    Safetensors st;
    st.header = json::parse(bytes.substr(8, n));
    st.data = bytes.substr(8 + n);
    return st;
}

class SynthTest : public ::testing::Test {
protected:
    void SetUp() override {
        root_ = test::temp_dir(::testing::UnitTest::GetInstance()->current_test_info()->name());
    }
    void TearDown() override { fs::remove_all(root_); }
    fs::path root_;
};

TEST(SynthPresets, ListsRealAndTinyModels) {
    const auto names = synth_presets();
    for (const char* name :
         {"qwen3-0.6b", "qwen3-1.7b", "qwen3-4b", "qwen3-8b", "qwen2.5-0.5b", "qwen2.5-1.5b",
          "llama-3.2-1b", "llama-3.2-3b", "llama-3.1-8b", "tiny-llama", "tiny-qwen2", "tiny-qwen3"})
        EXPECT_NE(std::find(names.begin(), names.end(), name), names.end()) << name;
    try {
        synth_preset("gpt-5");
        FAIL() << "no error";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("qwen3-0.6b"), std::string::npos) << e.what();
    }
}

TEST(SynthPresets, RealPresetsHaveThePublishedParameterCounts) {
    // The parameter counts Hugging Face shows for the released checkpoints. Qwen3-1.7B's
    // file also stores its tied lm_head (151936 x 2048), which a tied model does not need.
    const std::map<std::string, int64_t> published = {
        {"qwen3-0.6b", 596049920},    {"qwen3-1.7b", 2031739904 - 151936 * 2048},
        {"qwen3-4b", 4022468096},     {"qwen3-8b", 8190735360},
        {"qwen2.5-0.5b", 494032768},  {"qwen2.5-1.5b", 1543714304},
        {"llama-3.2-1b", 1235814400}, {"llama-3.2-3b", 3212749824},
        {"llama-3.1-8b", 8030261248},
    };
    for (const auto& [name, count] : published)
        EXPECT_EQ(synth_param_count(synth_preset(name)), count) << name;
}

TEST(SynthPresets, RealPresetsCarryTheirConfigValues) {
    const ModelSpec q = synth_preset("qwen3-0.6b").spec;
    EXPECT_EQ(q.arch, Arch::qwen3);
    EXPECT_EQ(q.head_dim, 128);
    EXPECT_EQ(q.n_ctx_train, 40960);
    EXPECT_EQ(q.rope_theta, 1e6);
    EXPECT_TRUE(q.qk_norm);
    EXPECT_TRUE(q.tie_word_embeddings);
    EXPECT_EQ(q.bos_token_id, 151643);
    EXPECT_EQ(q.eos_token_ids, std::vector<int32_t>{151645});

    const ModelSpec l = synth_preset("llama-3.1-8b").spec;
    EXPECT_EQ(l.rope_scaling.type, RopeScaling::Type::llama3);
    EXPECT_EQ(l.rope_scaling.factor, 8.0);
    EXPECT_EQ(l.rms_norm_eps, 1e-5);
    EXPECT_FALSE(l.tie_word_embeddings);
    EXPECT_EQ(l.eos_token_ids, (std::vector<int32_t>{128001, 128008, 128009}));
    EXPECT_EQ(synth_preset("llama-3.2-1b").spec.rope_scaling.factor, 32.0);
    EXPECT_TRUE(synth_preset("qwen2.5-0.5b").spec.attention_bias);
}

TEST_F(SynthTest, TinyFoldersHaveTheFilesAndConfigOfTheirPreset) {
    for (const std::string name : {"tiny-llama", "tiny-qwen2", "tiny-qwen3"}) {
        const SynthPreset preset = synth_preset(name);
        const fs::path dir = root_ / name;
        synth_write(name, dir.string(), DType::bf16, 1);
        for (const char* file : {"config.json", "model.safetensors", "tokenizer.json",
                                 "tokenizer_config.json", "generation_config.json"})
            EXPECT_TRUE(fs::exists(dir / file)) << name << " " << file;
        const json c = read_json(dir / "config.json");
        const ModelSpec& s = preset.spec;
        EXPECT_EQ(c["model_type"], arch_name(s.arch));
        EXPECT_EQ(c["hidden_size"], s.n_embd);
        EXPECT_EQ(c["num_hidden_layers"], s.n_layer);
        EXPECT_EQ(c["num_attention_heads"], s.n_head);
        EXPECT_EQ(c["num_key_value_heads"], s.n_head_kv);
        EXPECT_EQ(c["intermediate_size"], s.n_ff);
        EXPECT_EQ(c["vocab_size"], s.n_vocab);
        EXPECT_EQ(c["max_position_embeddings"], s.n_ctx_train);
        EXPECT_EQ(c["rope_theta"], s.rope_theta);
        EXPECT_EQ(c["rms_norm_eps"], s.rms_norm_eps);
        EXPECT_EQ(c["tie_word_embeddings"], s.tie_word_embeddings);
        EXPECT_EQ(c["torch_dtype"], "bfloat16");
        EXPECT_EQ(c["bos_token_id"], s.bos_token_id);
        EXPECT_EQ(c.value("head_dim", s.n_embd / s.n_head), s.head_dim);

        // The project's own loader reads it back to the same hyperparameters.
        const LoadedModel m = load_model(dir.string());
        EXPECT_EQ(m.spec.arch, s.arch);
        EXPECT_EQ(m.spec.n_embd, s.n_embd);
        EXPECT_EQ(m.spec.head_dim, s.head_dim);
        EXPECT_EQ(m.spec.n_vocab, s.n_vocab);
        EXPECT_EQ(m.spec.attention_bias, s.attention_bias);
        EXPECT_EQ(m.spec.qk_norm, s.qk_norm);
        EXPECT_EQ(m.spec.rope_scaling.type, s.rope_scaling.type);
        EXPECT_EQ(m.spec.bos_token_id, s.bos_token_id);
        EXPECT_EQ(m.spec.eos_token_ids.front(), s.eos_token_ids.front());
        EXPECT_FALSE(m.tokenizer_path.empty());
    }
    const json rope = read_json(root_ / "tiny-llama" / "config.json")["rope_scaling"];
    EXPECT_EQ(rope["rope_type"], "llama3");
    EXPECT_EQ(rope["original_max_position_embeddings"], 8192);
}

TEST_F(SynthTest, TensorsHaveHuggingFaceNamesAndShapes) {
    synth_write("tiny-qwen2", (root_ / "q2").string(), DType::bf16, 0);
    synth_write("tiny-qwen3", (root_ / "q3").string(), DType::f16, 0);
    synth_write("tiny-llama", (root_ / "ll").string(), DType::f32, 0);
    const json q2 = read_safetensors(root_ / "q2" / "model.safetensors").header;
    const json q3 = read_safetensors(root_ / "q3" / "model.safetensors").header;
    const json ll = read_safetensors(root_ / "ll" / "model.safetensors").header;
    auto shape = [](const json& h, const std::string& name) {
        return h.at(name).at("shape").get<std::vector<int64_t>>();
    };
    using S = std::vector<int64_t>;
    // n_embd 64, 4 heads and 2 kv heads of 16, n_ff 128, n_vocab 640 (tiny-qwen2: 648), 2 layers.
    EXPECT_EQ(shape(q2, "model.embed_tokens.weight"), (S{648, 64}));
    EXPECT_EQ(shape(q2, "model.layers.1.self_attn.q_proj.weight"), (S{64, 64}));
    EXPECT_EQ(shape(q2, "model.layers.1.self_attn.k_proj.weight"), (S{32, 64}));
    EXPECT_EQ(shape(q2, "model.layers.1.self_attn.v_proj.bias"), (S{32}));
    EXPECT_EQ(shape(q2, "model.layers.0.self_attn.q_proj.bias"), (S{64}));
    EXPECT_EQ(shape(q2, "model.layers.0.mlp.down_proj.weight"), (S{64, 128}));
    EXPECT_EQ(shape(q2, "model.layers.0.mlp.gate_proj.weight"), (S{128, 64}));
    EXPECT_EQ(shape(q2, "model.norm.weight"), (S{64}));
    EXPECT_EQ(shape(q3, "model.layers.0.self_attn.q_norm.weight"), (S{16}));
    EXPECT_EQ(shape(q3, "model.layers.1.self_attn.k_norm.weight"), (S{16}));
    EXPECT_EQ(shape(ll, "lm_head.weight"), (S{640, 64}));
    EXPECT_EQ(shape(ll, "model.layers.1.post_attention_layernorm.weight"), (S{64}));
    EXPECT_FALSE(q2.contains("lm_head.weight"));
    EXPECT_FALSE(q2.contains("model.layers.0.self_attn.q_norm.weight"));
    EXPECT_FALSE(q3.contains("model.layers.0.self_attn.q_proj.bias"));
    EXPECT_FALSE(ll.contains("model.layers.0.self_attn.o_proj.bias"));
    // Tensors plus the __metadata__ entry.
    EXPECT_EQ(q2.size(), 1 + 2 * 12 + 1 + 1u);
    EXPECT_EQ(q3.size(), 1 + 2 * 11 + 1 + 1u);
    EXPECT_EQ(ll.size(), 1 + 2 * 9 + 2 + 1u);
    EXPECT_EQ(q2["model.norm.weight"]["dtype"], "BF16");
    EXPECT_EQ(q3["model.norm.weight"]["dtype"], "F16");
    EXPECT_EQ(ll["model.norm.weight"]["dtype"], "F32");
}

TEST_F(SynthTest, WeightsAreNormalWithStd002AndNormsAreOne) {
    synth_write("tiny-llama", (root_ / "ll").string(), DType::f32, 5);
    const Safetensors st = read_safetensors(root_ / "ll" / "model.safetensors");
    double sum = 0, sum_sq = 0, max_abs = 0;
    size_t n = 0;
    for (const auto& [name, info] : st.header.items()) {
        if (name == "__metadata__") continue;
        const auto v = st.values(name);
        if (name.ends_with("norm.weight")) {
            for (float x : v) ASSERT_EQ(x, 1.0f) << name;
            continue;
        }
        for (float x : v) {
            sum += x;
            sum_sq += double(x) * x;
            max_abs = std::max(max_abs, std::abs(double(x)));
        }
        n += v.size();
    }
    const double mean = sum / n, std = std::sqrt(sum_sq / n - mean * mean);
    EXPECT_NEAR(mean, 0.0, 2e-4);
    EXPECT_NEAR(std, 0.02, 2e-4);
    EXPECT_LE(max_abs, 0.02 * 3.47);
    EXPECT_GT(max_abs, 0.02 * 2.5);
}

TEST_F(SynthTest, HalfTypesHoldTheF32ValuesRounded) {
    synth_write("tiny-qwen2", (root_ / "f32").string(), DType::f32, 9);
    synth_write("tiny-qwen2", (root_ / "f16").string(), DType::f16, 9);
    synth_write("tiny-qwen2", (root_ / "bf16").string(), DType::bf16, 9);
    const std::string name = "model.layers.1.self_attn.k_proj.bias";
    const auto f32 = read_safetensors(root_ / "f32" / "model.safetensors").values(name);
    const auto f16 = read_safetensors(root_ / "f16" / "model.safetensors").values(name);
    const auto bf16 = read_safetensors(root_ / "bf16" / "model.safetensors").values(name);
    ASSERT_EQ(f32.size(), 32u);
    for (size_t i = 0; i < f32.size(); ++i) {
        EXPECT_EQ(f16[i], round_to_f16(f32[i]));
        EXPECT_EQ(bf16[i], bf16_to_f32(f32_to_bf16(f32[i])));
    }
    EXPECT_EQ(read_json(root_ / "f16" / "config.json")["torch_dtype"], "float16");
}

TEST_F(SynthTest, SameSeedSameBytesWhateverTheThreadCount) {
    // Wider than the tiny preset so tensors span several generator blocks.
    SynthPreset preset = synth_preset("tiny-qwen3");
    preset.spec.n_embd = 256;
    preset.spec.n_ff = 1024;
    preset.spec.n_layer = 1;
    auto write = [&](const std::string& name, uint64_t seed, int threads) {
        SynthOptions o;
        o.seed = seed;
        o.n_threads = threads;
        synth_write(preset, (root_ / name).string(), o);
        return read_file(root_ / name / "model.safetensors");
    };
    const std::string a = write("a", 7, 1);
    EXPECT_EQ(a, write("b", 7, 2));
    EXPECT_EQ(a, write("c", 7, 3));
    EXPECT_NE(a, write("d", 8, 2));
    const json h = read_safetensors(root_ / "a" / "model.safetensors").header;
    EXPECT_EQ(h["model.layers.0.mlp.up_proj.weight"]["shape"], (std::vector<int64_t>{1024, 256}));
    EXPECT_FALSE(h.contains("model.layers.1.mlp.up_proj.weight"));
    EXPECT_EQ(read_json(root_ / "a" / "config.json")["hidden_size"], 256);
}

TEST_F(SynthTest, ExistingFolderNeedsForceAndAnelmsOwnFiles) {
    const fs::path dir = root_ / "model";
    synth_write("tiny-llama", dir.string());
    SynthOptions o;
    EXPECT_THROW(synth_write(synth_preset("tiny-qwen3"), dir.string(), o), Error);
    // A file anelm did not write: --force leaves the folder alone too.
    std::ofstream(dir / "mine.txt") << "mine";
    o.force = true;
    EXPECT_THROW(synth_write(synth_preset("tiny-qwen3"), dir.string(), o), Error);
    EXPECT_TRUE(fs::exists(dir / "mine.txt"));
    fs::remove(dir / "mine.txt");
    synth_write(synth_preset("tiny-qwen3"), dir.string(), o);
    EXPECT_EQ(read_json(dir / "config.json")["model_type"], "qwen3");
    // Nothing but the finished folder is left beside it.
    size_t entries = 0;
    for (const auto& e : fs::directory_iterator(root_)) entries += e.path().filename() != "model";
    EXPECT_EQ(entries, 0u);
}

TEST_F(SynthTest, BadOverridesAreRefused) {
    SynthPreset p = synth_preset("tiny-llama");
    p.spec.n_head_kv = 3;
    EXPECT_THROW(synth_write(p, (root_ / "x").string()), Error);
    p = synth_preset("tiny-qwen2");
    p.spec.n_vocab = p.n_vocab_bpe + 4;  // no room for the Qwen special tokens
    EXPECT_THROW(synth_write(p, (root_ / "x").string()), Error);
    EXPECT_FALSE(fs::exists(root_ / "x"));
}

TEST_F(SynthTest, TokenizerCoversEveryIdOnce) {
    for (const std::string name : {"tiny-llama", "tiny-qwen2", "tiny-qwen3"}) {
        const SynthPreset preset = synth_preset(name);
        const fs::path dir = root_ / name;
        synth_write(name, dir.string(), DType::bf16, 0);
        const json t = read_json(dir / "tokenizer.json");
        const int64_t n_vocab = preset.spec.n_vocab;
        std::vector<int> seen(static_cast<size_t>(n_vocab), 0);
        std::map<int64_t, std::string> added;
        for (const auto& [token, id] : t["model"]["vocab"].items()) {
            ASSERT_LT(id.get<int64_t>(), n_vocab) << token;
            ++seen[id.get<size_t>()];
        }
        for (const auto& a : t["added_tokens"]) {
            ASSERT_LT(a["id"].get<int64_t>(), n_vocab);
            ++seen[a["id"].get<size_t>()];
            added[a["id"]] = a["content"];
        }
        for (int64_t id = 0; id < n_vocab; ++id) EXPECT_EQ(seen[id], 1) << name << " id " << id;
        EXPECT_EQ(t["model"]["vocab"].size(), static_cast<size_t>(preset.n_vocab_bpe));

        // Merges join vocabulary entries into vocabulary entries.
        const json& vocab = t["model"]["vocab"];
        EXPECT_GT(t["model"]["merges"].size(), 250u);
        for (const auto& m : t["model"]["merges"]) {
            const std::string s = m;
            const size_t space = s.find(' ');
            ASSERT_NE(space, std::string::npos);
            EXPECT_TRUE(vocab.contains(s.substr(0, space)) && vocab.contains(s.substr(space + 1)) &&
                        vocab.contains(s.substr(0, space) + s.substr(space + 1)))
                << s;
        }
        EXPECT_TRUE(vocab.contains("\xc4\xa0the"));  // "Ġthe"
        EXPECT_EQ(vocab["!"], 0);

        // Special tokens sit where config.json and tokenizer_config.json say.
        const json c = read_json(dir / "config.json");
        const json tc = read_json(dir / "tokenizer_config.json");
        const json g = read_json(dir / "generation_config.json");
        const auto eos = c["eos_token_id"].is_array() ? c["eos_token_id"].back().get<int64_t>()
                                                      : c["eos_token_id"].get<int64_t>();
        EXPECT_EQ(added[eos], tc["eos_token"]) << name;
        EXPECT_EQ(tc["added_tokens_decoder"].size(), added.size());
        EXPECT_TRUE(g["eos_token_id"].is_array());
        EXPECT_FALSE(tc["chat_template"].get<std::string>().empty());
        if (preset.spec.arch == Arch::llama) {
            EXPECT_EQ(added[c["bos_token_id"]], "<|begin_of_text|>");
            EXPECT_EQ(tc["bos_token"], "<|begin_of_text|>");
            EXPECT_EQ(added[preset.n_vocab_bpe + 2], "<|reserved_special_token_0|>");
            EXPECT_EQ(added[preset.n_vocab_bpe + 9], "<|eot_id|>");
            EXPECT_EQ(t["post_processor"]["processors"][1]["type"], "TemplateProcessing");
        } else {
            EXPECT_EQ(added[c["bos_token_id"]], "<|endoftext|>");
            EXPECT_EQ(added[preset.n_vocab_bpe + 1], "<|im_start|>");
            EXPECT_EQ(tc["eos_token"], "<|im_end|>");
            EXPECT_EQ(t["normalizer"]["type"], "NFC");
        }
        EXPECT_EQ(t["pre_tokenizer"]["pretokenizers"][0]["type"], "Split");
        EXPECT_EQ(t["pre_tokenizer"]["pretokenizers"][1]["type"], "ByteLevel");
        EXPECT_EQ(t["decoder"]["type"], "ByteLevel");
    }
}

}  // namespace
}  // namespace anelm
