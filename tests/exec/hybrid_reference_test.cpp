// LFM2 and Qwen3.5 against independent float64 references written from
// transformers' formulas (tests/data/hybrid/*_reference.py, run on the same
// tiny models; README.md there says how), and the states they carry:
// any split of a sequence into calls gives the same logits.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/session.h"
#include "tiny_model.h"

namespace anelm {
namespace {

class HybridModels : public ::testing::TestWithParam<std::pair<const char*, const char*>> {};

// The executor keeps K, V and the convolutions' inputs in half precision, so
// it agrees with float64 to about 1e-4 (measured: 7.9e-5 and 9.0e-5), not 1e-7.
TEST_P(HybridModels, LogitsMatchTheFloat64Reference) {
    const auto [preset, file] = GetParam();
    const LoadedModel& m = test::tiny_model(preset);
    const test::ReferenceLogits want = test::read_reference_logits(std::string("hybrid/") + file);
    Session session(m.spec, m.weights, test::all_logits(32));
    const auto got = session.prefill(want.tokens);
    ASSERT_EQ(got.size(), want.logits.size());
    EXPECT_LT(test::relative_error(got, want.logits), 3e-4);
}

// The same sequence as one prompt, in prompts of 3, and token by token.
TEST_P(HybridModels, AnySplitIntoCallsGivesTheSameLogits) {
    const LoadedModel& m = test::tiny_model(GetParam().first);
    const auto tokens = test::random_tokens(m.spec.n_vocab, 20, 9);
    EXPECT_LT(test::split_call_error(m, tokens), 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Tiny, HybridModels,
                         ::testing::Values(std::make_pair("tiny-lfm2", "tiny-lfm2.json"),
                                           std::make_pair("tiny-qwen3.5", "tiny-qwen3.5.json")));

}  // namespace
}  // namespace anelm
