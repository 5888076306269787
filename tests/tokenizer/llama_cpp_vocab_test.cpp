// llama.cpp's tokenizer test strings (models/ggml-vocab-*.gguf.inp/.out, made
// with Hugging Face transformers, no BOS): qwen2 against the Qwen3
// tokenizer.json (same vocabulary, merges and pre-tokenizer), llama-bpe against
// the Llama 3 one.
#include <gtest/gtest.h>

#include <sstream>

#include "tokenizer_fixtures.h"

namespace anelm::test {
namespace {

struct VocabCase {
    const char* name;       // ggml-vocab-<name>.gguf.inp / .out
    const char* tokenizer;  // shared_tokenizer() name
};

class LlamaCppVocab : public ::testing::TestWithParam<VocabCase> {};

TEST_P(LlamaCppVocab, MatchTransformers) {
    const std::string base =
        std::string("tokenizers/llama.cpp-vocab-tests/ggml-vocab-") + GetParam().name + ".gguf";
    ANELM_REQUIRE_SHARED(base + ".inp");
    ANELM_REQUIRE_SHARED(std::string("tokenizers/") + GetParam().tokenizer + "/tokenizer.json");
    const Tokenizer& tok = shared_tokenizer(GetParam().tokenizer);
    const auto inputs = read_inputs(shared_path(base + ".inp"));
    const auto outputs = read_outputs(shared_path(base + ".out"));
    ASSERT_EQ(inputs.size(), outputs.size());
    ASSERT_FALSE(inputs.empty());
    size_t passed = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const bool ok = tok.encode(inputs[i], false) == outputs[i];
        EXPECT_TRUE(ok) << "case " << i << ": \"" << inputs[i] << "\"";
        passed += ok;
    }
    std::cout << base << ": " << passed << "/" << inputs.size() << " pass\n";
}

INSTANTIATE_TEST_SUITE_P(Files, LlamaCppVocab,
                         ::testing::Values(VocabCase{"qwen2", "qwen3"},
                                           VocabCase{"llama-bpe", "llama3"}),
                         [](const auto& info) {
                             std::string n = info.param.name;
                             std::replace(n.begin(), n.end(), '-', '_');
                             return n;
                         });

}  // namespace
}  // namespace anelm::test
