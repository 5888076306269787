// OUT/README.txt names every file and gives the compile and run commands for
// ANEMLL's runners with their real flags.
#include "anemll/convert_readme.h"

#include <fmt/format.h>
#include <gtest/gtest.h>

namespace anelm::anemll {
namespace {

bool has(const std::string& text, std::string_view part) {
    return text.find(part) != std::string::npos;
}

TEST(ConvertReadme, ChunkedListsFilesAndCommands) {
    ConvertLayout layout = default_layout("qwen3", 151936);
    layout.n_chunks = 2;
    layout.lut_ffn = {quant::QuantMethod::lut, 4, 8};
    layout.argmax_in_model = true;
    MetaYaml meta = make_meta_yaml(layout, "Qwen3-0.6B");
    meta.anelm_version = "0.1.0";
    const std::vector<std::string> tokenizer{"tokenizer.json", "config.json"};
    const std::string text = convert_readme_text(meta, tokenizer, "/models/qwen3-ane");

    EXPECT_TRUE(
        text.starts_with("Qwen3-0.6B for the Apple Neural Engine, converted by anelm 0.1.0\n"))
        << text;
    for (const char* name : {"qwen_embeddings.mlpackage", "qwen_FFN_PF_lut4_chunk_01of02.mlpackage",
                             "qwen_FFN_PF_lut4_chunk_02of02.mlpackage", "qwen_lm_head.mlpackage",
                             "meta.yaml", "tokenizer.json", "config.json", "README.txt"})
        EXPECT_TRUE(has(text, fmt::format("\n  {} ", name))) << name << "\n" << text;
    EXPECT_TRUE(has(text, "argmax_idx and argmax_val")) << text;
    EXPECT_TRUE(has(text, "LUT4 in groups of 8")) << text;
    EXPECT_TRUE(has(text, "  cd /models/qwen3-ane\n"));
    for (const std::string& stem : layout.package_stems())
        EXPECT_TRUE(has(text, fmt::format("  xcrun coremlcompiler compile {}.mlpackage .\n", stem)))
            << stem;
    EXPECT_TRUE(has(text, "  python tests/chat.py --meta /models/qwen3-ane/meta.yaml\n")) << text;
    EXPECT_TRUE(has(text, "  python tests/chat_full.py --meta /models/qwen3-ane/meta.yaml "));
    EXPECT_TRUE(has(text, "anemllcli --meta /models/qwen3-ane/meta.yaml --prompt ")) << text;
    EXPECT_EQ(text.find('\t'), std::string::npos);
}

TEST(ConvertReadme, MonolithicHasOneCompileLine) {
    ConvertLayout layout = default_layout("gemma3_text", 262144);
    layout.monolithic = true;
    layout.context_length = 1024;
    layout.sliding_window = 512;
    layout.fp16_scale = 0.5f;
    const std::string text =
        convert_readme_text(make_meta_yaml(layout, "gemma-3-270m"), {}, "my models/gemma");
    EXPECT_TRUE(has(text, "\n  gemma3_monolithic_full.mlpackage ")) << text;
    EXPECT_TRUE(has(text, "_rotate forms past position 512")) << text;
    EXPECT_TRUE(has(text, "logits1 to logits16")) << text;
    EXPECT_TRUE(has(text, "scaled by 0.5")) << text;
    EXPECT_EQ(text.find("_embeddings"), std::string::npos);
    EXPECT_EQ(text.find("coremlcompiler compile"), text.rfind("coremlcompiler compile"));
    // A path with a space stays one shell word.
    EXPECT_TRUE(has(text, "  cd 'my models/gemma'\n")) << text;
    EXPECT_TRUE(has(text, "--meta 'my models/gemma/meta.yaml'")) << text;
}

// Which tokenizer files are there, and what a runner needs that is not.
TEST(ConvertReadme, SaysWhatTheTokenizerFilesServe) {
    const MetaYaml meta = make_meta_yaml(default_layout("llama", 512), "model");
    auto text_with = [&](std::vector<std::string> files) {
        return convert_readme_text(meta, files, "out");
    };
    const std::string llama2c =
        text_with({"tokenizer.json", "tokenizer_config.json", "tokenizer.bin"});
    EXPECT_TRUE(has(llama2c, "\n  tokenizer.bin ")) << llama2c;
    EXPECT_TRUE(has(llama2c, "LlamaTokenizerFast")) << llama2c;
    EXPECT_FALSE(has(llama2c, "There is no")) << llama2c;

    const std::string qwen = text_with(
        {"tokenizer.json", "tokenizer_config.json", "vocab.json", "merges.txt", "config.json"});
    EXPECT_TRUE(has(qwen, "vocab.json and merges.txt serve a slow byte-level BPE class")) << qwen;
    EXPECT_FALSE(has(qwen, "There is no")) << qwen;

    const std::string gemma = text_with({"tokenizer.json", "tokenizer_config.json"});
    EXPECT_TRUE(has(gemma, "There is no tokenizer.model.")) << gemma;
    EXPECT_FALSE(has(gemma, "There is no tokenizer.json")) << gemma;

    const std::string spm = text_with({"tokenizer.model", "tokenizer_config.json"});
    EXPECT_TRUE(has(spm, "There is no tokenizer.json")) << spm;
    EXPECT_FALSE(has(spm, "There is no tokenizer.model")) << spm;
    for (const std::string& text : {llama2c, qwen, gemma, spm})
        EXPECT_TRUE(has(text, "use_fast=False")) << text;
}

// A model with carried states: the README lists them per package, says what
// a runner must do, and does not send the user to ANEMLL's runners.
TEST(ConvertReadme, CarriedStatesAndWhoCanRunThem) {
    ConvertLayout layout = default_layout("qwen3_5", 248320);
    layout.batch_size = 32;
    const MetaYaml meta = make_meta_yaml(layout, "qwen3.5-0.8b");
    const std::vector<CarriedInput> carried{
        {"qwen35_FFN_PF_chunk_01of01.mlpackage", "conv_state", {18, 6144, 1, 3}},
        {"qwen35_FFN_PF_chunk_01of01.mlpackage", "delta_state", {18, 16, 128, 128}}};
    const std::string text = convert_readme_text(meta, {}, "/m/q35", carried);
    EXPECT_TRUE(has(text, "conv_state fp16 [18, 6144, 1, 3] -> conv_state_out")) << text;
    EXPECT_TRUE(has(text, "delta_state fp16 [18, 16, 128, 128] -> delta_state_out")) << text;
    EXPECT_TRUE(has(text, "full batches of 32 real tokens")) << text;
    EXPECT_TRUE(has(text, "anelm generate /m/q35")) << text;
    EXPECT_FALSE(has(text, "chat.py --meta")) << text;
    EXPECT_FALSE(has(text, "anemllcli")) << text;
    const std::string plain = convert_readme_text(meta, {}, "/m/q35");
    EXPECT_FALSE(has(plain, "States beyond the KV cache"));
    EXPECT_TRUE(has(plain, "chat.py --meta"));
}

// Gemma 4's chunks read the embeddings' per-layer inputs: the text says to
// pass them along (nothing comes back) and sends the reader to anelm.
TEST(ConvertReadme, PerLayerInputsAndWhoCanRunThem) {
    ConvertLayout layout = default_layout("gemma4", 262144);
    layout.n_chunks = 2;
    const MetaYaml meta = make_meta_yaml(layout, "gemma-4-e2b");
    const std::vector<CarriedInput> passed{
        {"gemma4_FFN_PF_chunk_01of02.mlpackage", "per_layer_inp_rows", {1, 1, 8960}, false},
        {"gemma4_FFN_PF_chunk_02of02.mlpackage", "per_layer_inp_rows", {1, 1, 8960}, false}};
    const std::string text = convert_readme_text(meta, {}, "/m/e2b", passed);
    EXPECT_TRUE(
        has(text, "gemma4_FFN_PF_chunk_02of02.mlpackage: per_layer_inp_rows fp16 [1, 1, 8960]"))
        << text;
    EXPECT_TRUE(has(text, "pass it to every chunk")) << text;
    EXPECT_FALSE(has(text, "per_layer_inp_rows_out")) << text;
    EXPECT_FALSE(has(text, "States beyond the KV cache")) << text;
    EXPECT_TRUE(has(text, "anelm generate /m/e2b")) << text;
    EXPECT_FALSE(has(text, "chat.py --meta")) << text;
}

}  // namespace
}  // namespace anelm::anemll
