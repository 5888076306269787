// Gemma 4 on the CPU executor: a tiny model with every feature (both layer
// kinds, K/V shared by the last layers, per-layer embeddings, layer scalars)
// against the float64 reference written from transformers' formulas
// (tests/data/gemma4, README.md there says how), its proportional rope table
// element by element, any split into calls, half precision against f32, and
// caches held only for the layers that compute K/V.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "models/models.h"
#include "runtime/session.h"
#include "synth/synth.h"
#include "tiny_model.h"

namespace anelm {
namespace {

// The reference rounds cached K and V to half as the executor stores them
// (alone that moves these logits by 3.4e-3: the attention is unscaled); the
// rest is float64 against the executor's f32.
TEST(Gemma4, LogitsMatchTheFloat64Reference) {
    const LoadedModel& m = test::tiny_model("tiny-gemma4");
    const test::ReferenceLogits want = test::read_reference_logits("gemma4/tiny-gemma4.json");
    Session session(m.spec, m.weights, test::all_logits(32));
    const auto got = session.prefill(want.tokens);
    ASSERT_EQ(got.size(), want.logits.size());
    EXPECT_LT(test::relative_error(got, want.logits), 1e-4);
}

// 16 tokens pass the window of 8, so the sliding layers (and the layers that
// share their K/V) must drop the oldest keys whichever way the calls split.
// What remains is f32 rounding: a whole prompt's products go through the GEMM,
// single tokens through the matrix-vector leaves, and this model's unscaled
// attention amplifies the difference (measured 1.8e-5 with the AVX2 row
// leaves, 9.7e-5 with AVX-512's 16-lane norm sums); either side is within
// 1e-4 of the float64 reference (LogitsMatchTheFloat64Reference).
TEST(Gemma4, AnySplitIntoCallsGivesTheSameLogits) {
    const LoadedModel& m = test::tiny_model("tiny-gemma4");
    const auto tokens = test::random_tokens(m.spec.n_vocab, 20, 9);
    EXPECT_LT(test::split_call_error(m, tokens), 2e-4);
}

// Half precision everywhere (weights, activations, K/V) stays close to f32
// and picks the same next tokens.
TEST(Gemma4, HalfPrecisionFollowsF32) {
    const LoadedModel& m = test::tiny_model("tiny-gemma4");
    const auto tokens = test::random_tokens(m.spec.n_vocab, 16, 3);
    Session f32(m.spec, m.weights, test::all_logits(16));
    Session f16(m.spec, m.weights, test::all_logits(16, Precision::ane));
    const auto a = f32.prefill(tokens);
    const std::vector<float> want(a.begin(), a.end());
    const auto got = f16.prefill(tokens);
    EXPECT_LT(test::relative_error(got, want), 5e-2);  // measured 2.3e-2
    const auto n_vocab = static_cast<size_t>(m.spec.n_vocab);
    int same = 0;
    for (size_t t = 0; t < tokens.size(); ++t) {
        const auto row = [&](std::span<const float> l) {
            const auto r = l.subspan(t * n_vocab, n_vocab);
            return std::max_element(r.begin(), r.end()) - r.begin();
        };
        same += row(got) == row(want);
    }
    EXPECT_GE(same, 15);
}

// gemma-4-E2B's full layers: 64 of the 256 frequencies of a 512-wide head
// turn, at theta^(-2i/512) (the exponent over the whole head, not over the
// 128 dims that turn); the other 192 are zero.
TEST(Gemma4, ProportionalRopeTurnsAQuarterOverTheWholeHead) {
    const ModelSpec spec = synth_preset("gemma-4-e2b").spec;
    const std::vector<float> inv_freq = rope_inv_freq(spec);
    ASSERT_EQ(inv_freq.size(), 256u);
    for (size_t i = 0; i < inv_freq.size(); ++i) {
        SCOPED_TRACE(i);
        const double want = i < 64 ? std::pow(1e6, -2.0 * static_cast<double>(i) / 512.0) : 0.0;
        EXPECT_NEAR(inv_freq[i], want, want * 1e-6);
    }
}

// Only layers that compute K/V have cache rows: E2B's first 15 (12 sliding,
// 3 full); its last 20 read theirs.
TEST(Gemma4, SharedLayersHoldNoCache) {
    const ModelSpec spec = synth_preset("gemma-4-e2b").spec;
    EXPECT_EQ(kv_source_layer(spec, 14), 14);
    EXPECT_EQ(kv_source_layer(spec, 15), 13);  // sliding
    EXPECT_EQ(kv_source_layer(spec, 19), 14);  // full
    EXPECT_EQ(kv_source_layer(spec, 34), 14);
    EXPECT_EQ(layer_ff(spec, 14), 6144);
    EXPECT_EQ(layer_ff(spec, 15), 12288);

    const LoadedModel& m = test::tiny_model("tiny-gemma4");
    ProgramOptions options;
    options.n_ctx = 64;
    const ir::Program program = build_program(m.spec, m.weights, options);
    ASSERT_EQ(program.states.size(), 2u);
    // tiny-gemma4: layers s f s f s f, the last three sharing.
    EXPECT_EQ(program.states[0].shape, (std::vector<int64_t>{2, 2, 64, 32}));  // layer 1
    EXPECT_EQ(program.states[1].shape, (std::vector<int64_t>{4, 2, 64, 16}));  // layers 0, 2
    int shared = 0;
    for (const ir::Node& node : program.functions[0].nodes)
        shared += node.op == ir::Op::shared_attention;
    EXPECT_EQ(shared, 3);
}

// What a decode step reads: the matrices and gains, not the gain-less v norm
// (it has no weight) and not the per-layer table (a lookup of one row).
TEST(Gemma4, DecodeWeightBytesSkipNormsWithoutAGain) {
    const LoadedModel& m = test::tiny_model("tiny-gemma4");
    Session session(m.spec, m.weights, test::all_logits(4));
    const size_t table = m.weights.get("model.embed_tokens_per_layer.weight").n_bytes();
    const size_t projection = m.weights.get("model.per_layer_model_projection.weight").n_bytes();
    EXPECT_GE(session.decode_weight_bytes(), projection);
    EXPECT_LT(session.decode_weight_bytes(), m.weights.total_bytes() - table);
}

}  // namespace
}  // namespace anelm
