// Tiny models lowered into embeddings, two chunks and a split LM head, and run
// by the MIL interpreter the way ANEMLL's runners drive them (full prefill
// batches, the rest through infer).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <span>
#include <vector>

#include "anemll/anemll_layout.h"
#include "converted/ane_pipeline.h"
#include "lower/ane_lowering.h"
#include "models/models.h"
#include "passes/rope_halves.h"
#include "runtime/session.h"
#include "test_support.h"

namespace anelm::test {

inline constexpr int64_t lowering_ctx = 32;
inline constexpr int64_t lowering_batch = 4;

struct Lowered {
    lower::AnePackage embeddings, head;
    std::vector<lower::AnePackage> chunks;
    std::vector<int64_t> pieces;
};

inline ir::Program decode_program(const LoadedModel& m) {
    ProgramOptions po;
    po.n_ctx = lowering_ctx;
    po.functions = {{"decode", 1, false}};
    ir::Program program = build_program(m.spec, m.weights, po);
    passes::rope_halves(program);
    return program;
}

inline lower::AneOptions lowering_options(bool argmax, int64_t verify = 0) {
    lower::AneOptions options;
    options.batch = lowering_batch;
    options.argmax = argmax;
    options.verify = verify;
    return options;
}

// Chunks: layer 0, then the rest.
inline Lowered lower_all(const ir::Program& program, int64_t n_vocab,
                         const lower::AneOptions& options) {
    Lowered l{
        lower::lower_embeddings(program, options), {}, {}, anemll::lm_head_chunk_sizes(n_vocab, 4)};
    const int64_t n_layer = lower::layer_count(program);
    l.chunks.push_back(lower::lower_chunk(program, 0, 1, options));
    l.chunks.push_back(lower::lower_chunk(program, 1, n_layer, options));
    l.head = lower::lower_lm_head(program, l.pieces, options);
    return l;
}

inline AnePart part(const lower::AnePackage& p) {
    return AnePart{&p.model, &p.blobs()};
}

inline AnePipeline pipeline(const Lowered& l, bool argmax, milexec::Rounding rounding,
                            int64_t verify = 0, milexec::QuantDot dot = milexec::QuantDot::exact) {
    std::vector<AnePart> chunks;
    for (const auto& c : l.chunks) chunks.push_back(part(c));
    AnePipelineShape shape{lowering_ctx, lowering_batch, l.pieces, argmax};
    shape.verify = verify;
    return AnePipeline(part(l.embeddings), chunks, part(l.head), shape, rounding, nullptr, dot);
}

inline int32_t argmax(std::span<const float> v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

// The packages in f32 against the f32 executor: the largest relative logit
// error after an 11-token prompt (two prefill batches, three infer calls) and
// after each of 8 decoded tokens.
inline double f32_lowering_error(const LoadedModel& m) {
    const ir::Program program = decode_program(m);
    const Lowered l = lower_all(program, m.spec.n_vocab, lowering_options(false));
    AnePipeline ane = pipeline(l, false, milexec::Rounding::none);
    SessionOptions so;
    so.n_ctx = lowering_ctx;
    so.prefill_batch = 8;
    Session cpu(m.spec, m.weights, so);
    const auto prompt = random_tokens(m.spec.n_vocab, 11, 3);
    auto a = ane.prefill(prompt);
    auto b = cpu.prefill(prompt);
    double worst = relative_error(a, b);
    for (int step = 0; step < 8; ++step) {
        const int32_t next = argmax(b);
        a = ane.decode(next);
        b = cpu.decode(next);
        worst = std::max(worst, relative_error(a, b));
    }
    EXPECT_EQ(ane.pos(), cpu.pos());
    return worst;
}

// Greedy decoding to the context's end: the packages (logits head and in-model
// argmax head) run at `rounding` give the CPU's tokens in its ane precision.
inline void expect_same_greedy_tokens(const LoadedModel& m, milexec::Rounding rounding,
                                      int64_t prompt_tokens) {
    const ir::Program program = decode_program(m);
    const Lowered logits = lower_all(program, m.spec.n_vocab, lowering_options(false));
    const Lowered arg = lower_all(program, m.spec.n_vocab, lowering_options(true));
    AnePipeline ane = pipeline(logits, false, rounding);
    AnePipeline ane_argmax = pipeline(arg, true, rounding);
    SessionOptions so;
    so.n_ctx = lowering_ctx;
    so.precision = Precision::ane;
    Session cpu(m.spec, m.weights, so);
    const auto prompt = random_tokens(m.spec.n_vocab, prompt_tokens, 4);
    int32_t t_ane = argmax(ane.prefill(prompt));
    int32_t t_arg = argmax(ane_argmax.prefill(prompt));
    int32_t t_cpu = argmax(cpu.prefill(prompt));
    std::vector<int32_t> got, want, got_arg;
    while (cpu.pos() < lowering_ctx) {
        got.push_back(t_ane);
        got_arg.push_back(t_arg);
        want.push_back(t_cpu);
        t_ane = argmax(ane.decode(t_ane));
        t_arg = argmax(ane_argmax.decode(t_arg));
        t_cpu = argmax(cpu.decode(t_cpu));
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(got_arg, got);
}

// The monolithic form computes what the split form computes.
inline void expect_monolithic_matches_split(const LoadedModel& m) {
    const ir::Program program = decode_program(m);
    const Lowered l = lower_all(program, m.spec.n_vocab, lowering_options(false));
    const lower::AnePackage mono =
        lower::lower_monolithic(program, l.pieces, lowering_options(false));
    AnePipeline split = pipeline(l, false, milexec::Rounding::f16);
    AnePipeline whole(part(mono), {lowering_ctx, lowering_batch, l.pieces, false},
                      milexec::Rounding::f16);
    const auto prompt = random_tokens(m.spec.n_vocab, 10, 8);
    auto a = split.prefill(prompt);
    auto b = whole.prefill(prompt);
    EXPECT_LT(relative_error(a, b), 1e-3);
    const int32_t next = argmax(a);
    EXPECT_LT(relative_error(split.decode(next), whole.decode(next)), 1e-3);
}

}  // namespace anelm::test
