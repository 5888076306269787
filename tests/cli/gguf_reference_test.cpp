// A GGUF file that llama.cpp's converter wrote (tests/data/gguf): anelm's
// tokens for three prompts equal llama.cpp's, prompt and 64 greedy tokens.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "run_anelm.h"

namespace anelm {
namespace {

const std::string data_dir = std::string(ANELM_SOURCE_DIR) + "/tests/data/gguf/";

TEST(GgufReference, GreedyTextEqualsLlamaCpp) {
    std::ifstream in(data_dir + "stories260K-llama.cpp-greedy.json");
    const auto cases = nlohmann::json::parse(in);
    ASSERT_EQ(cases.size(), 3u);
    for (const auto& c : cases) {
        const std::string prompt = c["prompt"];
        SCOPED_TRACE(prompt);
        // -n counts the generated tokens, as llama.cpp's -n does.
        const size_t n = c["ids"].size();
        const auto r = test::run_anelm("generate '" + data_dir + "stories260K.gguf' -p '" + prompt +
                                       "' -n " + std::to_string(n) + " --temp 0 -t 2");
        ASSERT_EQ(r.exit_code, 0) << r.err;
        EXPECT_EQ(r.out, prompt + c["text"].get<std::string>() + "\n");
    }
}

}  // namespace
}  // namespace anelm
