// meta.yaml: written with the keys and YAML types ANEMLL's runners read
// (../shared/docs/research/anemll.md §5), read back to the same layout, and
// refused on one line naming the key.
#include "anemll/meta_yaml.h"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "io/io_test_util.h"

namespace anelm::anemll {
namespace {

using quant::QuantChoice;
using quant::QuantMethod;
using test::expect_error;
using test::expect_message;
using test::write_file;

QuantChoice lut(int bits, int64_t group = 8) {
    return {QuantMethod::lut, bits, group};
}

MetaYaml qwen_meta() {
    ConvertLayout layout = default_layout("qwen3", 151936);
    layout.n_chunks = 2;
    layout.lut_ffn = lut(4);
    layout.lut_head = lut(6, 4);
    layout.argmax_in_model = true;
    layout.fp16_scale = 0.125f;
    MetaYaml meta = make_meta_yaml(layout, "Qwen3-0.6B");
    meta.model_path = "/models/Qwen3-0.6B";
    meta.command_line = "anelm convert /models/Qwen3-0.6B -o out --chunks 2 --argmax";
    meta.anelm_version = "0.1.0";
    return meta;
}

MetaYaml gemma_monolithic_meta() {
    ConvertLayout layout = default_layout("gemma3_text", 262144);
    layout.monolithic = true;
    layout.context_length = 1024;
    layout.sliding_window = 512;
    layout.lut_ffn = lut(4);
    layout.lut_head = lut(6);
    return make_meta_yaml(layout, "gemma-3-270m-it");
}

// True when a runner's YAML resolver reads the scalar as an integer: a plain
// (unquoted) scalar that parses as one.
bool is_integer(const YAML::Node& n) {
    int64_t v = 0;
    return n.IsScalar() && n.Tag() == "?" && YAML::convert<int64_t>::decode(n, v);
}

bool is_bool(const YAML::Node& n) {
    return n.IsScalar() && n.Tag() == "?" && (n.Scalar() == "true" || n.Scalar() == "false");
}

class MetaYamlTest : public test::ScratchDir {};

TEST_F(MetaYamlTest, ChunkedRoundTrips) {
    const MetaYaml meta = qwen_meta();
    EXPECT_EQ(meta.embeddings, "qwen_embeddings.mlmodelc");
    EXPECT_EQ(meta.lm_head, "qwen_lm_head_lut6.mlmodelc");
    EXPECT_EQ(meta.ffn, "qwen_FFN_PF_lut4_chunk_01of02.mlmodelc");
    write_meta_yaml(path("meta.yaml"), meta);
    EXPECT_EQ(read_meta_yaml(path("meta.yaml")), meta);
}

// The keys chat.py and the Swift runner read beyond the file names:
// attention_size and state_length (the context), and generation_config.json's
// sampling as recommended_sampling, which reads back the same.
TEST_F(MetaYamlTest, RunnerKeysAndRecommendedSampling) {
    write_file(path("generation_config.json"),
               R"({"bos_token_id": 1, "do_sample": true, "temperature": 0.6, "top_p": 0.95,
                   "top_k": 20})");
    MetaYaml meta = qwen_meta();
    meta.sampling = read_recommended_sampling(path("generation_config.json"));
    ASSERT_TRUE(meta.sampling.has_value());
    EXPECT_EQ(*meta.sampling, (RecommendedSampling{true, 0.6, 0.95, 20}));
    write_meta_yaml(path("meta.yaml"), meta);
    const YAML::Node p = YAML::LoadFile(path("meta.yaml"))["model_info"]["parameters"];
    EXPECT_TRUE(is_integer(p["attention_size"]));
    EXPECT_EQ(p["attention_size"].as<int64_t>(), meta.layout.context_length);
    EXPECT_EQ(p["state_length"].as<int64_t>(), meta.layout.context_length);
    EXPECT_TRUE(is_bool(p["prefill_dynamic_slice"]));
    EXPECT_TRUE(is_bool(p["recommended_sampling"]["do_sample"]));
    EXPECT_DOUBLE_EQ(p["recommended_sampling"]["temperature"].as<double>(), 0.6);
    EXPECT_TRUE(is_integer(p["recommended_sampling"]["top_k"]));
    EXPECT_EQ(read_meta_yaml(path("meta.yaml")), meta);

    write_file(path("plain.json"), R"({"bos_token_id": 1, "eos_token_id": 2})");
    EXPECT_FALSE(read_recommended_sampling(path("plain.json")).has_value());
    write_file(path("bad.json"), R"({"top_k": "forty"})");
    expect_error([&] { read_recommended_sampling(path("bad.json")); }, {"bad.json", "top_k"});
}

TEST_F(MetaYamlTest, MonolithicRoundTrips) {
    const MetaYaml meta = gemma_monolithic_meta();
    EXPECT_EQ(meta.monolithic_model, "gemma3_monolithic_full_lut4.mlmodelc");
    EXPECT_TRUE(meta.embeddings.empty());
    write_meta_yaml(path("meta.yaml"), meta);
    EXPECT_EQ(read_meta_yaml(path("meta.yaml")), meta);
}

TEST_F(MetaYamlTest, Fp16WithoutLutRoundTrips) {
    ConvertLayout layout = default_layout("llama", 512);
    layout.context_length = 256;
    layout.batch_size = 32;
    const MetaYaml meta = make_meta_yaml(layout, "stories260K");
    write_meta_yaml(path("meta.yaml"), meta);
    EXPECT_EQ(read_meta_yaml(path("meta.yaml")), meta);
}

TEST_F(MetaYamlTest, ChunkedKeysHaveTheTypesRunnersRead) {
    write_meta_yaml(path("meta.yaml"), qwen_meta());
    const YAML::Node root = YAML::LoadFile(path("meta.yaml"));
    const YAML::Node info = root["model_info"];
    ASSERT_TRUE(info.IsMap());
    for (const char* key : {"name", "version", "description", "license", "author", "framework",
                            "language", "architecture"})
        EXPECT_TRUE(info[key].IsScalar()) << key;
    EXPECT_EQ(info["name"].Scalar(), "anemll-Qwen3-0.6B-ctx512");
    EXPECT_EQ(info["version"].Scalar(), "0.3.5");
    EXPECT_EQ(info["architecture"].Scalar(), "qwen3");
    EXPECT_FALSE(info["model_type"].IsDefined());

    const YAML::Node p = info["parameters"];
    ASSERT_TRUE(p.IsMap());
    for (const char* key :
         {"context_length", "batch_size", "lut_ffn", "lut_ffn_per_channel", "lut_lmhead",
          "lut_lmhead_per_channel", "num_chunks", "split_lm_head", "vocab_size"})
        EXPECT_TRUE(is_integer(p[key])) << key;
    EXPECT_EQ(p["lut_ffn"].as<int>(), 4);
    EXPECT_EQ(p["lut_lmhead"].as<int>(), 6);
    EXPECT_EQ(p["lut_lmhead_per_channel"].as<int>(), 4);
    EXPECT_EQ(p["lut_embeddings"].Scalar(), "none");
    EXPECT_FALSE(p["lut_embeddings_per_channel"].IsDefined());
    EXPECT_EQ(p["num_chunks"].as<int>(), 2);
    EXPECT_EQ(p["split_lm_head"].as<int>(), 16);
    EXPECT_EQ(p["vocab_size"].as<int>(), 151936);
    EXPECT_EQ(p["model_prefix"].Scalar(), "qwen");
    EXPECT_EQ(p["embeddings"].Scalar(), "qwen_embeddings.mlmodelc");
    EXPECT_EQ(p["lm_head"].Scalar(), "qwen_lm_head_lut6.mlmodelc");
    EXPECT_EQ(p["ffn"].Scalar(), "qwen_FFN_PF_lut4_chunk_01of02.mlmodelc");
    EXPECT_TRUE(is_bool(p["argmax_in_model"]));
    EXPECT_TRUE(p["argmax_in_model"].as<bool>());
    EXPECT_TRUE(is_bool(p["prefill_dynamic_slice"]));
    EXPECT_TRUE(p["prefill_dynamic_slice"].as<bool>());
    ASSERT_TRUE(p["lm_head_chunk_sizes"].IsSequence());
    ASSERT_EQ(p["lm_head_chunk_sizes"].size(), 16u);
    for (const YAML::Node& n : p["lm_head_chunk_sizes"]) EXPECT_TRUE(is_integer(n));
    EXPECT_EQ(p["lm_head_chunk_sizes"][0].as<int>(), 9496);
    EXPECT_FALSE(p["sliding_window"].IsDefined());
    EXPECT_FALSE(p["monolithic_model"].IsDefined());

    const std::string text = test::read_file(path("meta.yaml"));
    EXPECT_NE(text.find("\n# fp16_scale: 0.125\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\n# anelm_version: 0.1.0\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\n# lut_part2: 4,8\n"), std::string::npos) << text;
    EXPECT_NE(text.find("\n# command_line: anelm convert "), std::string::npos) << text;
}

TEST_F(MetaYamlTest, MonolithicKeysHaveTheTypesRunnersRead) {
    write_meta_yaml(path("meta.yaml"), gemma_monolithic_meta());
    const YAML::Node info = YAML::LoadFile(path("meta.yaml"))["model_info"];
    EXPECT_EQ(info["model_type"].Scalar(), "monolithic");
    EXPECT_EQ(info["name"].Scalar(), "anemll-gemma-3-270m-it-ctx1024-monolithic");
    const YAML::Node p = info["parameters"];
    EXPECT_TRUE(is_integer(p["lut_bits"]));
    EXPECT_EQ(p["lut_bits"].as<int>(), 4);
    EXPECT_EQ(p["lut_per_channel"].as<int>(), 8);
    // Written where they differ from lut_bits.
    EXPECT_EQ(p["lut_embeddings"].Scalar(), "none");
    EXPECT_EQ(p["lut_lmhead"].as<int>(), 6);
    EXPECT_EQ(p["monolithic_model"].Scalar(), "gemma3_monolithic_full_lut4.mlmodelc");
    EXPECT_FALSE(p["ffn"].IsDefined());
    EXPECT_FALSE(p["num_chunks"].IsDefined());
    EXPECT_TRUE(is_integer(p["sliding_window"]));
    EXPECT_EQ(p["sliding_window"].as<int>(), 512);
    EXPECT_TRUE(is_bool(p["argmax_in_model"]));
    EXPECT_FALSE(p["argmax_in_model"].as<bool>());
    EXPECT_EQ(p["functions"].as<std::vector<std::string>>(),
              (std::vector<std::string>{"infer", "infer_rotate", "prefill", "prefill_rotate"}));
}

// A chunked meta.yaml in the form ANEMLL 0.3.5's converter writes it (LLaMA,
// FFN LUT4 with an explicit group, LM head LUT6, no argmax, no sizes).
constexpr const char* anemll_llama_meta = R"(model_info:
  name: anemll-Llama-3.2-1B-ctx1024
  version: 0.3.5
  description: |
    Llama 3.2 1B
  license: MIT
  author: Anemll
  framework: Core ML
  language: Python
  architecture: llama
  parameters:
    context_length: 1024
    batch_size: 64
    lut_embeddings: none
    lut_ffn: 4
    lut_ffn_per_channel: 4
    lut_lmhead: 6
    num_chunks: 2
    model_prefix: llama
    embeddings: llama_embeddings.mlmodelc
    lm_head: llama_lm_head_lut6.mlmodelc
    ffn: llama_FFN_PF_lut4_chunk_01of02.mlmodelc
    split_lm_head: 8
    vocab_size: 128256
    prefill_dynamic_slice: true
)";

TEST_F(MetaYamlTest, ReadsAnemllsOwnFormWithRunnerDefaults) {
    write_file(path("meta.yaml"), anemll_llama_meta);
    const MetaYaml meta = read_meta_yaml(path("meta.yaml"));
    const ConvertLayout& l = meta.layout;
    EXPECT_EQ(meta.model_name, "Llama-3.2-1B");
    EXPECT_EQ(l.architecture, "llama");
    EXPECT_EQ(l.prefix, "llama");
    EXPECT_EQ(l.context_length, 1024);
    EXPECT_EQ(l.batch_size, 64);
    EXPECT_EQ(l.n_chunks, 2);
    EXPECT_EQ(l.lut_embed, QuantChoice{});
    EXPECT_EQ(l.lut_ffn, lut(4, 4));
    EXPECT_EQ(l.lut_head, lut(6, 8));
    EXPECT_FALSE(l.monolithic);
    EXPECT_FALSE(l.argmax_in_model);
    EXPECT_EQ(l.split_lm_head, 8);
    EXPECT_EQ(l.vocab_size, 128256);
    EXPECT_EQ(l.lm_head_chunk_sizes, std::vector<int64_t>(8, 16032));
    EXPECT_EQ(l.sliding_window, 0);
    EXPECT_EQ(l.fp16_scale, 1.0f);
    EXPECT_EQ(meta.ffn, "llama_FFN_PF_lut4_chunk_01of02.mlmodelc");
    EXPECT_NO_THROW(l.check("layout"));
}

TEST_F(MetaYamlTest, AbsentFileNamesComeFromThePrefix) {
    write_file(path("meta.yaml"), R"(model_info:
  model_type: monolithic
  parameters:
    context_length: 512
    batch_size: 64
    lut_bits: 6
    model_prefix: gemma3
)");
    const MetaYaml meta = read_meta_yaml(path("meta.yaml"));
    EXPECT_TRUE(meta.layout.monolithic);
    EXPECT_EQ(meta.monolithic_model, "gemma3_monolithic_full_lut6.mlmodelc");
    EXPECT_EQ(meta.layout.lut_head, lut(6));
    EXPECT_EQ(meta.layout.sliding_window, 512);  // the runners' Gemma 3 default
    EXPECT_EQ(meta.layout.split_lm_head, 8);
}

TEST_F(MetaYamlTest, ErrorsNameTheFileAndTheKey) {
    const std::string file = path("meta.yaml");
    const std::string good = meta_yaml_text(qwen_meta());
    // Replaces the first line that starts with `key` (after indentation) by `with`.
    const auto edited = [&](const std::string& key, const std::string& with) {
        const size_t at = good.find(key);
        EXPECT_NE(at, std::string::npos) << key;
        const size_t end = good.find('\n', at);
        return good.substr(0, at) + with + good.substr(end);
    };
    const auto refused = [&](const std::string& text,
                             std::initializer_list<std::string_view> parts) {
        write_file(file, text);
        try {
            read_meta_yaml(file);
            ADD_FAILURE() << "accepted:\n" << text;
        } catch (const Error& e) {
            expect_message(e.what(), file + ": ", parts);
        }
    };
    refused(edited("context_length: 512", "other: 1"),
            {"model_info.parameters.context_length: missing"});
    refused(edited("lut_ffn: 4", "lut_ffn: four"),
            {"model_info.parameters.lut_ffn: 'four' is not an integer or none"});
    refused(edited("lut_ffn: 4", "lut_ffn: 5"), {"model_info.parameters.lut_ffn: 5 bits"});
    refused(edited("lut_embeddings: none", "other: 1"),
            {"model_info.parameters.lut_embeddings: missing"});
    refused(edited("num_chunks: 2", "num_chunks: 0"), {"model_info.parameters.num_chunks: 0"});
    refused(edited("argmax_in_model: true", "argmax_in_model: maybe"),
            {"model_info.parameters.argmax_in_model: 'maybe' is not true or false"});
    refused(edited("batch_size: 64", "batch_size: [64]"),
            {"model_info.parameters.batch_size: 'a list' is not an integer"});
    refused(edited("lm_head_chunk_sizes:", "lm_head_chunk_sizes: [1, 2]"),
            {"model_info.parameters.lm_head_chunk_sizes: 2 pieces, split_lm_head is 16"});
    refused(edited("vocab_size: 151936", "vocab_size: 151937"),
            {"model_info.parameters.lm_head_chunk_sizes: sum 151936, vocab_size is 151937"});
    refused(edited("# fp16_scale: 0.125", "# fp16_scale: 3"), {"# fp16_scale: '3'"});
    // Sizes runners allocate from: far above any model, far below a terabyte.
    refused(edited("context_length: 512", "context_length: 1099511627776"),
            {"model_info.parameters.context_length: 1099511627776, expected 1 to 1048576"});
    refused(edited("split_lm_head: 16", "split_lm_head: 2147483648"),
            {"model_info.parameters.split_lm_head: 2147483648, expected 1 to 1024"});
    refused(edited("vocab_size: 151936", "vocab_size: 4294967296"),
            {"model_info.parameters.vocab_size: 4294967296, expected 0 to 16777216"});
    refused(edited("  parameters:", "  params:"), {"model_info.parameters: missing"});
    refused("model: 1\n", {"model_info: missing"});
    refused("- 1\n", {"expected a mapping with model_info"});
    refused("model_info: [1,\n", {"not valid YAML at line"});
    expect_error([&] { read_meta_yaml(path("absent.yaml")); }, {"absent.yaml"});
}

TEST_F(MetaYamlTest, WritingChecksTheLayout) {
    MetaYaml meta = qwen_meta();
    meta.layout.lm_head_chunk_sizes.pop_back();
    expect_error([&] { meta_yaml_text(meta); }, {"meta.yaml: lm_head_chunk_sizes"});
}

}  // namespace
}  // namespace anelm::anemll
