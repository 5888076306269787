// Gemma 4 lowered for the ANE in one package (embeddings with the per-layer
// inputs, every layer, the LM head): one MLState holds both caches, the full
// layers' 32-wide heads in two 16-wide rows each, the sharing layers reading
// their source's rows; run by the MIL interpreter against the CPU executor.
#include <gtest/gtest.h>

#include "anemll/anemll_layout.h"
#include "anemll/per_layer_table.h"
#include "base/error.h"
#include "converted/ane_pipeline.h"
#include "exec/tiny_model.h"
#include "lower/ane_lowering.h"
#include "lower/lowering_support.h"
#include "runtime/session.h"

namespace anelm {
namespace {

using test::argmax;
using test::lowering_batch;
using test::lowering_ctx;

struct Monolithic {
    std::vector<int64_t> pieces;
    lower::AnePackage package;
};

Monolithic lower_tiny() {
    const LoadedModel& m = test::tiny_model("tiny-gemma4");
    const ir::Program program = test::decode_program(m);
    std::vector<int64_t> pieces = anemll::lm_head_chunk_sizes(m.spec.n_vocab, 4);
    lower::AnePackage pkg = lower::lower_monolithic(program, pieces, test::lowering_options(false));
    return {std::move(pieces), std::move(pkg)};
}

AnePipeline run(const Monolithic& l, milexec::Rounding rounding) {
    return AnePipeline(test::part(l.package), {lowering_ctx, lowering_batch, l.pieces, false},
                       rounding);
}

TEST(Gemma4Lowering, OneStateHoldsBothCachesInRowsOfTheNarrowHead) {
    const Monolithic l = lower_tiny();
    for (const auto& fd : l.package.model.description().functions()) {
        ASSERT_EQ(fd.state_size(), 1) << fd.name();
        const auto& shape = fd.state(0).type().statetype().arraytype().shape();
        // K then V: layer 1 (full, two rows), layers 0 and 2 (sliding, a row each).
        EXPECT_EQ(std::vector<int64_t>(shape.begin(), shape.end()),
                  (std::vector<int64_t>{8, 2, lowering_ctx, 16}));
    }
}

// In f32 the package computes what the executor computes, past the window
// of 8 and through infer after the prefill batches. Its weights, rope tables
// and constants are halves, and Gemma 4 attends unscaled over normed q and k,
// so the logits move by a few percent (measured 4.1% at worst; the other
// families stay under 0.2%); a sharing layer reading the wrong rows moves them
// by 55-126%.
TEST(Gemma4Lowering, MatchesTheProgramInF32) {
    const LoadedModel& m = test::tiny_model("tiny-gemma4");
    const Monolithic l = lower_tiny();
    AnePipeline ane = run(l, milexec::Rounding::none);
    SessionOptions so;
    so.n_ctx = lowering_ctx;
    so.prefill_batch = 8;
    Session cpu(m.spec, m.weights, so);
    const auto prompt = test::random_tokens(m.spec.n_vocab, 11, 3);
    auto a = ane.prefill(prompt);
    auto b = cpu.prefill(prompt);
    double worst = test::relative_error(a, b);
    for (int step = 0; step < 12; ++step) {
        const int32_t next = argmax(b);
        a = ane.decode(next);
        b = cpu.decode(next);
        worst = std::max(worst, test::relative_error(a, b));
    }
    EXPECT_LT(worst, 0.1);
}

// In half precision the package and the executor's ane precision agree all
// the way to the context's end (measured 7.7% at worst, as above).
TEST(Gemma4Lowering, FollowsTheAnePrecisionInF16) {
    const LoadedModel& m = test::tiny_model("tiny-gemma4");
    const Monolithic l = lower_tiny();
    AnePipeline ane = run(l, milexec::Rounding::f16);
    SessionOptions so;
    so.n_ctx = lowering_ctx;
    so.precision = Precision::ane;
    Session cpu(m.spec, m.weights, so);
    const auto prompt = test::random_tokens(m.spec.n_vocab, 6, 4);
    auto a = ane.prefill(prompt);
    auto b = cpu.prefill(prompt);
    double worst = test::relative_error(a, b);
    while (cpu.pos() < lowering_ctx) {
        const int32_t next = argmax(b);
        a = ane.decode(next);
        b = cpu.decode(next);
        worst = std::max(worst, test::relative_error(a, b));
    }
    EXPECT_LT(worst, 0.15);
}

// Split where ANEMLL splits: embeddings (with the per-layer inputs as a second
// output), chunks of layers 0-2 and 3-5, the LM head. The sharing layers 3-5
// read the K/V that the first chunk's layers 1 and 2 wrote into the one state
// the runners pass to every chunk; the per-layer inputs reach both chunks.
TEST(Gemma4Lowering, ChunksComputeWhatTheSinglePackageComputes) {
    const LoadedModel& m = test::tiny_model("tiny-gemma4");
    const ir::Program program = test::decode_program(m);
    const lower::AneOptions options = test::lowering_options(false);
    const Monolithic mono = lower_tiny();
    test::Lowered l{lower::lower_embeddings(program, options), {}, {}, mono.pieces};
    l.chunks.push_back(lower::lower_chunk(program, 0, 3, options));
    l.chunks.push_back(lower::lower_chunk(program, 3, 6, options));
    l.head = lower::lower_lm_head(program, l.pieces, options);
    EXPECT_EQ(l.embeddings.model.description().output_size(), 2);
    for (const auto& chunk : l.chunks) {
        const auto& inputs = chunk.model.description().functions(0).input();
        EXPECT_TRUE(std::ranges::any_of(
            inputs, [](const auto& in) { return in.name() == "per_layer_inp_rows"; }));
    }
    AnePipeline split = test::pipeline(l, false, milexec::Rounding::f16);
    AnePipeline whole = run(mono, milexec::Rounding::f16);
    const auto prompt = test::random_tokens(m.spec.n_vocab, 10, 8);
    auto a = split.prefill(prompt);
    auto b = whole.prefill(prompt);
    EXPECT_LT(test::relative_error(a, b), 1e-3);
    for (int step = 0; step < 6; ++step) {
        const int32_t next = argmax(b);
        a = split.decode(next);
        b = whole.decode(next);
        EXPECT_LT(test::relative_error(a, b), 1e-3) << step;
    }
}

// The per-layer table kept beside the packages (E2B's is 4.7 GB in f16): the
// embeddings take its looked-up rows as an input. At 16 bits the logits are
// the in-package table's, bit for bit; at 8 bits (a scale per layer's slice)
// close to them.
TEST(Gemma4Lowering, PerLayerTableBesideThePackages) {
    const LoadedModel& m = test::tiny_model("tiny-gemma4");
    const ir::Program program = test::decode_program(m);
    lower::AneOptions options = test::lowering_options(false);
    const Monolithic mono = lower_tiny();
    test::Lowered inside{lower::lower_embeddings(program, options), {}, {}, mono.pieces};
    options.per_layer_rows_input = true;
    test::Lowered beside{lower::lower_embeddings(program, options), {}, {}, mono.pieces};
    EXPECT_EQ(beside.embeddings.model.description().input_size(), 2);
    for (test::Lowered* l : {&inside, &beside}) {
        l->chunks.push_back(lower::lower_chunk(program, 0, 3, options));
        l->chunks.push_back(lower::lower_chunk(program, 3, 6, options));
        l->head = lower::lower_lm_head(program, l->pieces, options);
    }
    const auto dir = test::temp_dir("gemma4-per-layer");
    const TensorView& table = m.weights.get("model.embed_tokens_per_layer.weight");
    AnePipeline reference = test::pipeline(inside, false, milexec::Rounding::f16);
    const auto prompt = test::random_tokens(m.spec.n_vocab, 10, 8);
    const auto want_span = reference.prefill(prompt);
    const std::vector<float> want(want_span.begin(), want_span.end());
    for (int bits : {16, 8}) {
        SCOPED_TRACE(bits);
        const std::string path = (dir / fmt::format("table{}.bin", bits)).string();
        anemll::write_per_layer_table(path, table, bits, m.spec.per_layer_dim);
        const anemll::PerLayerTable file(path);
        AnePipeline ane = test::pipeline(beside, false, milexec::Rounding::f16);
        EXPECT_THROW(ane.prefill(prompt), Error);  // no table given
        ane.reset();
        ane.set_per_layer_table(&file);
        const auto got = ane.prefill(prompt);
        if (bits == 16)
            EXPECT_TRUE(std::equal(got.begin(), got.end(), want.begin(), want.end()));
        else
            EXPECT_LT(test::relative_error(got, want), 2e-2);
    }
}

// A verify pass (speculative decoding) writes the K/V of its rows as prefill
// does; the sharing layers of the second chunk read them in the same pass, so
// each row scores as infer does one token at a time.
TEST(Gemma4Lowering, VerifyScoresEveryRowAsInferDoes) {
    const LoadedModel& m = test::tiny_model("tiny-gemma4");
    const ir::Program program = test::decode_program(m);
    constexpr int64_t t = 4;
    const lower::AneOptions options = test::lowering_options(false, t);
    test::Lowered l{lower::lower_embeddings(program, options), {}, {}, lower_tiny().pieces};
    l.chunks.push_back(lower::lower_chunk(program, 0, 3, options));
    l.chunks.push_back(lower::lower_chunk(program, 3, 6, options));
    l.head = lower::lower_lm_head(program, l.pieces, options);
    AnePipeline verifier = test::pipeline(l, false, milexec::Rounding::f16, t);
    AnePipeline stepper = test::pipeline(l, false, milexec::Rounding::f16, t);
    const auto prompt = test::random_tokens(m.spec.n_vocab, 10, 5);
    verifier.prefill(prompt);
    stepper.prefill(prompt);
    const std::vector<int32_t> fed{prompt[3], prompt[4], prompt[5], prompt[6]};
    const std::span<const float> scored = verifier.verify(fed);
    const std::vector<float> rows(scored.begin(), scored.end());
    const size_t vocab = rows.size() / fed.size();
    for (size_t r = 0; r < fed.size(); ++r) {
        const std::span<const float> want = stepper.decode(fed[r]);
        const std::span<const float> got(rows.data() + r * vocab, vocab);
        EXPECT_EQ(argmax(got), argmax(want)) << "row " << r;
        EXPECT_LT(test::relative_error(got, want), 1e-3) << "row " << r;
    }
}

}  // namespace
}  // namespace anelm
