// Finding a converted directory's packages from its meta.yaml as ANEMLL's
// runners do, with the .mlpackage standing in for an uncompiled .mlmodelc.
#include "anemll/converted_files.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "io/io_test_util.h"

namespace anelm::anemll {
namespace {

namespace fs = std::filesystem;
using test::expect_error;
using test::write_file;

class ConvertedFilesTest : public test::ScratchDir {
protected:
    // Writes meta.yaml and an (empty) package folder for every file the layout has.
    std::string convert(const ConvertLayout& layout) {
        write_meta_yaml(path("meta.yaml"), make_meta_yaml(layout, "model"));
        for (const std::string& stem : layout.package_stems())
            fs::create_directory(path(package_name(stem)));
        return path("meta.yaml");
    }
};

ConvertLayout three_chunks() {
    ConvertLayout layout = default_layout("qwen3", 1024);
    layout.n_chunks = 3;
    layout.lut_ffn = {quant::QuantMethod::lut, 4, 8};
    return layout;
}

TEST_F(ConvertedFilesTest, FindsPackagesWhereNothingIsCompiled) {
    const ConvertedFiles files = find_converted_files(convert(three_chunks()));
    EXPECT_EQ(files.dir, dir_.string());
    EXPECT_EQ(files.embeddings, path("qwen_embeddings.mlpackage"));
    EXPECT_EQ(files.lm_head, path("qwen_lm_head.mlpackage"));
    EXPECT_EQ(files.chunks,
              (std::vector<std::string>{path("qwen_FFN_PF_lut4_chunk_01of03.mlpackage"),
                                        path("qwen_FFN_PF_lut4_chunk_02of03.mlpackage"),
                                        path("qwen_FFN_PF_lut4_chunk_03of03.mlpackage")}));
    EXPECT_TRUE(files.monolithic.empty());
    EXPECT_EQ(files.meta.layout, three_chunks());
}

TEST_F(ConvertedFilesTest, PrefersTheCompiledModel) {
    const std::string meta = convert(three_chunks());
    fs::create_directory(path("qwen_FFN_PF_lut4_chunk_02of03.mlmodelc"));
    const ConvertedFiles files = find_converted_files(meta);
    EXPECT_EQ(files.chunks[0], path("qwen_FFN_PF_lut4_chunk_01of03.mlpackage"));
    EXPECT_EQ(files.chunks[1], path("qwen_FFN_PF_lut4_chunk_02of03.mlmodelc"));
}

TEST_F(ConvertedFilesTest, FindsTheMonolithicModel) {
    ConvertLayout layout = default_layout("llama", 512);
    layout.monolithic = true;
    const ConvertedFiles files = find_converted_files(convert(layout));
    EXPECT_EQ(files.monolithic, path("llama_monolithic_full.mlpackage"));
    EXPECT_TRUE(files.chunks.empty());
    EXPECT_TRUE(files.embeddings.empty());
}

TEST_F(ConvertedFilesTest, DerivesAChunkPartTheNameLacks) {
    // An ffn name without its chunk part, as older meta.yaml files record it.
    write_file(path("meta.yaml"), R"(model_info:
  parameters:
    context_length: 512
    batch_size: 64
    lut_embeddings: none
    lut_ffn: none
    lut_lmhead: none
    num_chunks: 2
    ffn: llama_FFN_PF.mlmodelc
)");
    for (const char* name :
         {"llama_embeddings.mlmodelc", "llama_lm_head.mlmodelc",
          "llama_FFN_PF_chunk_01of02.mlmodelc", "llama_FFN_PF_chunk_02of02.mlmodelc"})
        fs::create_directory(path(name));
    const ConvertedFiles files = find_converted_files(path("meta.yaml"));
    EXPECT_EQ(files.chunks, (std::vector<std::string>{path("llama_FFN_PF_chunk_01of02.mlmodelc"),
                                                      path("llama_FFN_PF_chunk_02of02.mlmodelc")}));
}

TEST_F(ConvertedFilesTest, MissingFilesNameTheKey) {
    const std::string meta = convert(three_chunks());
    fs::remove(path("qwen_FFN_PF_lut4_chunk_03of03.mlpackage"));
    expect_error([&] { find_converted_files(meta); },
                 {"meta.yaml: model_info.parameters.ffn: neither ",
                  "qwen_FFN_PF_lut4_chunk_03of03.mlmodelc nor ",
                  "qwen_FFN_PF_lut4_chunk_03of03.mlpackage exists"});
    fs::create_directory(path("qwen_FFN_PF_lut4_chunk_03of03.mlpackage"));
    fs::remove(path("qwen_lm_head.mlpackage"));
    expect_error([&] { find_converted_files(meta); },
                 {"model_info.parameters.lm_head: neither ", "qwen_lm_head.mlpackage exists"});
}

TEST_F(ConvertedFilesTest, ChunkCountMustMatchTheName) {
    convert(three_chunks());
    std::string text = test::read_file(path("meta.yaml"));
    text.replace(text.find("num_chunks: 3"), 13, "num_chunks: 2");
    write_file(path("meta.yaml"), text);
    expect_error([&] { find_converted_files(path("meta.yaml")); },
                 {"model_info.parameters.ffn: ", "names 03 chunks, num_chunks is 2"});
}

}  // namespace
}  // namespace anelm::anemll
