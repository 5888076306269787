// The ANE lowering computes what the program computes: tiny models lowered
// into embeddings, two chunks and a split LM head, run by the MIL interpreter
// the way ANEMLL's runners drive them (full prefill batches, the rest through
// infer), against the CPU executor on the unlowered program.
#include "lower/ane_lowering.h"

#include <google/protobuf/util/message_differencer.h>
#include <gtest/gtest.h>

#include <filesystem>

#include "anemll/anemll_layout.h"
#include "base/error.h"
#include "converted/ane_pipeline.h"
#include "converted/hybrid_model.h"
#include "exec/tiny_model.h"
#include "lower/lowering_support.h"
#include "models/models.h"
#include "passes/fp16_scale.h"
#include "runtime/drafter.h"
#include "runtime/generate.h"
#include "runtime/oracle_drafter.h"
#include "runtime/session.h"

namespace anelm {
namespace {

using test::argmax;
using test::decode_program;
using test::Lowered;
using test::pipeline;
constexpr int64_t n_ctx = test::lowering_ctx;
constexpr int64_t batch = test::lowering_batch;

Lowered lower_all(const ir::Program& program, int64_t n_vocab, bool argmax, int64_t verify = 0) {
    return test::lower_all(program, n_vocab, test::lowering_options(argmax, verify));
}

class AneLoweringTest : public testing::TestWithParam<const char*> {};

// Logits after an 11-token prompt (two prefill batches and three infer
// tokens) and after each of 8 decoded tokens agree with the f32 executor.
TEST_P(AneLoweringTest, MatchesTheProgramInF32) {
    EXPECT_LT(test::f32_lowering_error(test::tiny_model(GetParam())), 1e-2);
}

// In half precision (the ANE's storage) both greedy-decode the same tokens,
// and the in-model argmax head picks what the logits head's logits pick.
TEST_P(AneLoweringTest, SameGreedyTokensInF16) {
    test::expect_same_greedy_tokens(test::tiny_model(GetParam()), milexec::Rounding::f16, 6);
}

// A prompt whose rows after the full batches go through one padded prefill
// call gives the logits and greedy tokens of feeding it one token at a time.
TEST_P(AneLoweringTest, PaddedPrefillMatchesOneTokenAtATime) {
    const LoadedModel& m = test::tiny_model(GetParam());
    const Lowered l = lower_all(decode_program(m), m.spec.n_vocab, false);
    AnePipeline padded = pipeline(l, false, milexec::Rounding::none);
    AnePipeline stepped = pipeline(l, false, milexec::Rounding::none);
    const auto prompt = test::random_tokens(m.spec.n_vocab, batch + batch / 2 + 1, 5);
    const std::span<const float> first = padded.prefill(prompt);
    std::vector<float> a(first.begin(), first.end());  // the next prefill reuses the buffer
    std::span<const float> b = stepped.prefill(std::span(prompt).first(1));
    for (size_t k = 1; k < prompt.size(); ++k) b = stepped.decode(prompt[k]);
    EXPECT_EQ(padded.pos(), stepped.pos());
    EXPECT_LT(test::relative_error(a, b), 1e-3);
    for (int step = 0; step < 6; ++step) {
        const int32_t next = test::argmax(b);
        ASSERT_EQ(test::argmax(a), next) << "step " << step;
        const std::span<const float> na = padded.decode(next);
        a.assign(na.begin(), na.end());
        b = stepped.decode(next);
    }
}

// The residual scale (out_scale on the stream's producers) is folded into the
// weights the packages hold: the scaled packages compute the same logits.
TEST(AneLowering, ResidualScaleFoldedIntoWeights) {
    const LoadedModel& m = test::tiny_model("tiny-gemma3");
    ir::Program program = decode_program(m);
    passes::scale_residual(program, 0.25f);
    const Lowered l = lower_all(program, m.spec.n_vocab, false);
    AnePipeline ane = pipeline(l, false, milexec::Rounding::none);
    SessionOptions so;
    so.n_ctx = n_ctx;
    Session cpu(m.spec, m.weights, so);
    const auto prompt = test::random_tokens(m.spec.n_vocab, 9, 6);
    EXPECT_LT(test::relative_error(ane.prefill(prompt), cpu.prefill(prompt)), 1e-2);
    // Scaling really happened: the stream entering the first chunk is a quarter.
    const lower::AnePackage unscaled = lower::lower_embeddings(decode_program(m), {});
    milexec::States states;
    milexec::Function scaled_embed(l.embeddings.model.mlprogram(), "main", l.embeddings.blobs());
    milexec::Function plain_embed(unscaled.model.mlprogram(), "main", unscaled.blobs());
    milexec::Tensor ids = milexec::make_tensor(coreml::mil::INT32, {1, 1});
    ids.i = {prompt[0]};
    const auto a = scaled_embed.run({{"input_ids", ids}}, states).at("hidden_states");
    const auto b = plain_embed.run({{"input_ids", ids}}, states).at("hidden_states");
    ASSERT_EQ(a.f.size(), b.f.size());
    for (size_t i = 0; i < a.f.size(); ++i) EXPECT_FLOAT_EQ(a.f[i], 0.25f * b.f[i]);
}

// The prompt prefilled by the packages and decoded on the CPU after the KV
// hand-off gives the tokens of either path alone; the hand-off moves the
// prompt's K and V and nothing else.
TEST_P(AneLoweringTest, HybridPrefillThenCpuDecodeGivesEitherPathsTokens) {
    const LoadedModel& m = test::tiny_model(GetParam());
    const ir::Program program = decode_program(m);
    const Lowered l = lower_all(program, m.spec.n_vocab, false);
    SessionOptions so;
    so.n_ctx = n_ctx;
    so.precision = Precision::ane;
    GenerateOptions options;
    options.max_new_tokens = -1;  // up to the context
    options.sampler.temp = 0;
    const auto prompt = test::random_tokens(m.spec.n_vocab, 11, 6);  // two batches and three
    auto run = [&](TokenModel& model) {
        std::vector<int32_t> tokens;
        generate(model, prompt, options, [&](int32_t id) { tokens.push_back(id); });
        return tokens;
    };
    AnePipeline alone = pipeline(l, false, milexec::Rounding::f16);
    Session cpu_alone(m.spec, m.weights, so);
    const std::vector<int32_t> want = run(alone);
    EXPECT_EQ(run(cpu_alone), want);

    AnePipeline packages = pipeline(l, false, milexec::Rounding::f16);
    Session cpu(m.spec, m.weights, so);
    HybridModel hybrid(packages, cpu);
    EXPECT_EQ(run(hybrid), want);
    const KvHandoff& h = hybrid.handoff();
    EXPECT_EQ(h.tokens, static_cast<int64_t>(prompt.size()));
    const std::vector<int64_t>& shape = cpu.program().states.at(0).shape;
    EXPECT_EQ(h.bytes, shape[0] * shape[1] * h.tokens * shape[3] * 2);
    EXPECT_EQ(packages.pos(), h.tokens);  // the packages stop after the prompt

    // A session whose context cannot hold the prompt is refused.
    AnePipeline again = pipeline(l, false, milexec::Rounding::f16);
    so.n_ctx = 8;
    Session short_cpu(m.spec, m.weights, so);
    HybridModel cramped(again, short_cpu);
    EXPECT_THROW(cramped.prefill(prompt), Error);

    // So is one whose cache keeps int8 rows: the hand-off writes f16 ones.
    AnePipeline once_more = pipeline(l, false, milexec::Rounding::f16);
    so.n_ctx = n_ctx;
    so.kv = KvType::q8;
    Session int8_cpu(m.spec, m.weights, so);
    HybridModel int8_rows(once_more, int8_cpu);
    EXPECT_THROW(int8_rows.prefill(prompt), Error);
}

// The monolithic form computes what the split form computes.
TEST_P(AneLoweringTest, MonolithicMatchesSplit) {
    test::expect_monolithic_matches_split(test::tiny_model(GetParam()));
}

// A verify pass scores each of its tokens as infer does one at a time (logits
// and in-model argmax, split and monolithic), and greedy generation with
// prompt lookup on the packages gives the plain loop's tokens, to the
// context's end, where T rows no longer fit and the loop decodes one at a time.
TEST_P(AneLoweringTest, VerifyScoresEveryRowAsInferDoes) {
    const LoadedModel& m = test::tiny_model(GetParam());
    const ir::Program program = decode_program(m);
    constexpr int64_t t = 4;
    const auto prompt = test::random_tokens(m.spec.n_vocab, 10, 5);
    const std::vector<int32_t> fed{prompt[3], prompt[4], prompt[5]};  // a short call: padded
    for (bool with_argmax : {false, true}) {
        SCOPED_TRACE(with_argmax ? "argmax" : "logits");
        const Lowered l = lower_all(program, m.spec.n_vocab, with_argmax, t);
        AnePipeline verifier = pipeline(l, with_argmax, milexec::Rounding::f16, t);
        AnePipeline stepper = pipeline(l, with_argmax, milexec::Rounding::f16, t);
        verifier.prefill(prompt);
        stepper.prefill(prompt);
        const std::span<const float> scored = verifier.verify(fed);
        const std::vector<float> rows(scored.begin(), scored.end());
        EXPECT_EQ(verifier.pos(), static_cast<int64_t>(prompt.size() + fed.size()));
        const size_t vocab = rows.size() / fed.size();
        for (size_t r = 0; r < fed.size(); ++r) {
            const std::span<const float> want = stepper.decode(fed[r]);
            const std::span<const float> got(rows.data() + r * vocab, vocab);
            EXPECT_EQ(argmax(got), argmax(want)) << "row " << r;
            if (!with_argmax) {
                EXPECT_LT(test::relative_error(got, want), 1e-3) << "row " << r;
            }
        }

        // Greedy with prompt lookup against the plain loop, both on the packages.
        std::vector<int32_t> repeating = prompt;
        repeating.insert(repeating.end(), prompt.begin(), prompt.begin() + 6);
        GenerateOptions options;
        options.max_new_tokens = -1;  // up to the context
        options.sampler.temp = 0;
        std::vector<int32_t> plain, drafted;
        AnePipeline a = pipeline(l, with_argmax, milexec::Rounding::f16, t);
        generate(a, repeating, options, [&](int32_t id) { plain.push_back(id); });
        LookupDrafter lookup(2);
        options.drafter = &lookup;
        options.draft_n = t - 1;
        AnePipeline b = pipeline(l, with_argmax, milexec::Rounding::f16, t);
        generate(b, repeating, options, [&](int32_t id) { drafted.push_back(id); });
        EXPECT_EQ(drafted, plain);
        // Drafts that are all kept: whole verify passes, each row's token the plain one.
        std::vector<int32_t> answer = repeating;
        answer.insert(answer.end(), plain.begin(), plain.end());
        test::OracleDrafter oracle(answer);
        options.drafter = &oracle;
        std::vector<int32_t> known;
        AnePipeline c = pipeline(l, with_argmax, milexec::Rounding::f16, t);
        const GenerateStats stats =
            generate(c, repeating, options, [&](int32_t id) { known.push_back(id); });
        EXPECT_EQ(known, plain);
        EXPECT_GE(stats.n_verify, 2);
        EXPECT_EQ(stats.n_accepted, stats.n_drafted);
    }

    // The monolithic form's verify.
    const Lowered l = lower_all(program, m.spec.n_vocab, false, t);
    lower::AneOptions options;
    options.batch = batch;
    options.verify = t;
    const lower::AnePackage mono = lower::lower_monolithic(program, l.pieces, options);
    AnePipelineShape shape{n_ctx, batch, l.pieces, false};
    shape.verify = t;
    AnePipeline whole(AnePart{&mono.model, &mono.blobs()}, shape, milexec::Rounding::f16);
    AnePipeline split = pipeline(l, false, milexec::Rounding::f16, t);
    whole.prefill(prompt);
    split.prefill(prompt);
    EXPECT_LT(test::relative_error(whole.verify(fed), split.verify(fed)), 1e-3);
}

// Gemma 3 past its window: the rotate functions the runners call from the
// window's length on compute what infer and prefill compute on the one cache,
// so the pipeline that switches to them gives the same logits, bit for bit.
TEST(AneLowering, RotateFunctionsPastTheWindowComputeTheSame) {
    const LoadedModel& m = test::tiny_model("tiny-gemma3");
    ASSERT_GT(m.spec.sliding_window, 0);
    ASSERT_LT(m.spec.sliding_window + 2 * batch, n_ctx);
    const ir::Program program = decode_program(m);
    lower::AneOptions options;
    options.batch = batch;
    options.rotate = true;
    const lower::AnePackage chunk =
        lower::lower_chunk(program, 0, lower::layer_count(program), options);
    for (const char* fn : {"infer", "prefill", "infer_rotate", "prefill_rotate"})
        EXPECT_TRUE(chunk.model.mlprogram().functions().contains(fn)) << fn;
    EXPECT_EQ(chunk.model.description().functions_size(), 4);
    const Lowered l = lower_all(program, m.spec.n_vocab, false);
    auto part = [](const lower::AnePackage& p) { return AnePart{&p.model, &p.blobs()}; };
    AnePipelineShape shape{n_ctx, batch, l.pieces, false};
    shape.rotate_from = m.spec.sliding_window;
    AnePipeline rotating(part(l.embeddings), {part(chunk)}, part(l.head), shape,
                         milexec::Rounding::f16);
    AnePipeline plain = pipeline(l, false, milexec::Rounding::f16);
    // Batches at and past the window go through prefill_rotate, then infer_rotate.
    const auto prompt = test::random_tokens(
        m.spec.n_vocab, static_cast<size_t>(m.spec.sliding_window + 2 * batch), 5);
    auto a = rotating.prefill(prompt);
    auto b = plain.prefill(prompt);
    for (int step = 0; step < 4; ++step) {
        ASSERT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end())) << "step " << step;
        const int32_t next = argmax(b);
        a = rotating.decode(next);
        b = plain.decode(next);
    }
}

// Renames a function input everywhere a model mentions it.
void rename_input(coreml::spec::Model& model, const std::string& from, const std::string& to) {
    for (auto& [name, fn] : *model.mutable_mlprogram()->mutable_functions()) {
        for (auto& in : *fn.mutable_inputs())
            if (in.name() == from) in.set_name(to);
        for (auto& [opset, block] : *fn.mutable_block_specializations())
            for (auto& op : *block.mutable_operations())
                for (auto& [key, arg] : *op.mutable_inputs())
                    for (auto& binding : *arg.mutable_arguments())
                        if (binding.has_name() && binding.name() == from) binding.set_name(to);
    }
    for (auto& fd : *model.mutable_description()->mutable_functions())
        for (auto& state : *fd.mutable_state())
            if (state.name() == from) state.set_name(to);
}

// Packages written before states were MIL identifiers (model.model.kv_cache_0)
// still run here, and give the same logits.
TEST(AneLowering, PackagesWithTheOldStateNameStillRun) {
    const LoadedModel& m = test::tiny_model("tiny-llama");
    const ir::Program program = decode_program(m);
    const Lowered l = lower_all(program, m.spec.n_vocab, false);
    Lowered old = lower_all(program, m.spec.n_vocab, false);
    for (auto& chunk : old.chunks)
        rename_input(chunk.model, "model_model_kv_cache_0", "model.model.kv_cache_0");
    ASSERT_TRUE(old.chunks[0].model.mlprogram().functions().at("infer").inputs().rbegin()->name() ==
                "model.model.kv_cache_0");
    AnePipeline renamed = pipeline(old, false, milexec::Rounding::f16);
    AnePipeline current = pipeline(l, false, milexec::Rounding::f16);
    const auto prompt = test::random_tokens(m.spec.n_vocab, 9, 2);
    const auto a = renamed.prefill(prompt);
    const auto b = current.prefill(prompt);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
}

// Written and read back, the packages are the models that were built, and
// run from disk they give the logits the in-memory ones give.
TEST(AneLowering, WrittenPackagesReadBackEqualAndRunTheSame) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    const ir::Program program = decode_program(m);
    const Lowered l = lower_all(program, m.spec.n_vocab, false);
    const auto dir = test::temp_dir("lower-write");
    std::vector<std::unique_ptr<coreml::Package>> read;
    auto write_read = [&](const lower::AnePackage& pkg, const std::string& name) {
        lower::write_ane_package(pkg, dir / name);
        read.push_back(std::make_unique<coreml::Package>(dir / name));
        EXPECT_TRUE(
            google::protobuf::util::MessageDifferencer::Equals(pkg.model, read.back()->model()))
            << name;
        return AnePart{&read.back()->model(), read.back().get()};
    };
    const AnePart embeddings = write_read(l.embeddings, "e.mlpackage");
    std::vector<AnePart> chunks{write_read(l.chunks[0], "c1.mlpackage"),
                                write_read(l.chunks[1], "c2.mlpackage")};
    const AnePart head = write_read(l.head, "h.mlpackage");
    AnePipeline from_disk(embeddings, chunks, head, {n_ctx, batch, l.pieces, false},
                          milexec::Rounding::f16);
    AnePipeline in_memory = pipeline(l, false, milexec::Rounding::f16);
    const auto prompt = test::random_tokens(m.spec.n_vocab, 7, 9);
    const auto a = from_disk.prefill(prompt);
    const auto b = in_memory.prefill(prompt);
    EXPECT_TRUE(std::equal(a.begin(), a.end(), b.begin(), b.end()));
}

INSTANTIATE_TEST_SUITE_P(Tiny, AneLoweringTest,
                         testing::Values("tiny-llama", "tiny-qwen2", "tiny-qwen3", "tiny-gemma3"));

}  // namespace
}  // namespace anelm
