// LUT groups that do not divide a weight's rows: a vocabulary of 650 (neither
// 8 nor 16 divides it, nor the LM head's pieces), layers at groups of 6 and an
// embedding table at groups of 7. Core ML's constexpr_lut_to_dense needs whole
// groups, so the last one is padded with rows that are cut off after the conv
// (or never gathered); the packages must compute what the CPU computes on the
// same quantized weights, expose the head's outputs at the runners' shapes and
// never let a padded id win.
#include <gtest/gtest.h>

#include <numeric>

#include "base/half.h"
#include "exec/mil/function.h"
#include "exec/tiny_model.h"
#include "lower/lowering_support.h"
#include "lower/program_parts.h"
#include "quant/quantize_program.h"
#include "quant/quantized_matrix.h"

namespace anelm {
namespace {

constexpr int64_t vocab = 650;

const LoadedModel& model_650() {
    return test::tiny_model("tiny-llama", vocab);
}

ir::Program quantized_program(const LoadedModel& m, const quant::QuantSpec& spec) {
    ir::Program program = test::decode_program(m);
    ThreadPool pool(2);
    quant::quantize_program(program, spec, pool, {});
    return program;
}

// The quantized head's weight, as the CPU multiplies it.
const quant::QuantizedMatrix& head_matrix(const ir::Program& program) {
    const ir::Function& fn = program.function("decode");
    for (ir::ValueId id : lower::split_parts(fn).head) {
        const ir::Node& node = fn.nodes[static_cast<size_t>(id)];
        if (node.op == ir::Op::linear) return *program.weights.at(node.weight).quantized;
    }
    fail("no LM head");
}

std::map<std::string, milexec::Tensor> run_head(const lower::AnePackage& head,
                                                const std::vector<float>& h) {
    milexec::Function fn(head.model.mlprogram(), "main", head.blobs());
    milexec::Tensor hidden =
        milexec::make_tensor(coreml::mil::FLOAT16, {1, 1, static_cast<int64_t>(h.size())});
    hidden.f = h;
    milexec::States states;
    return fn.run({{"hidden_states", hidden}}, states);
}

class LutPadding : public testing::TestWithParam<std::pair<int, int64_t>> {};

// The split head in both forms: every real id's logit is the quantized row's
// product, the padded ids' fp16's lowest, and each piece's argmax a real id.
TEST_P(LutPadding, HeadPiecesPadPartialGroups) {
    const auto [bits, group] = GetParam();
    const LoadedModel& m = model_650();
    quant::QuantSpec spec;
    spec.head = {quant::QuantMethod::lut, bits, group};
    const ir::Program program = quantized_program(m, spec);
    const quant::QuantizedMatrix& q = head_matrix(program);
    ASSERT_EQ(q.group_size, group);
    ASSERT_NE(vocab % group, 0);

    const std::vector<int64_t> sizes = anemll::lm_head_chunk_sizes(vocab, 8, group);
    const int64_t rows = sizes[0];
    ASSERT_EQ(rows % group, 0);
    ASSERT_NE(sizes.back() % group, 0);  // the last piece ends in a partial group
    lower::AneOptions options;
    const lower::AnePackage logits_head = lower::lower_lm_head(program, sizes, options);
    options.argmax = true;
    const lower::AnePackage argmax_head = lower::lower_lm_head(program, sizes, options);
    for (const auto& out : logits_head.model.description().output())
        EXPECT_EQ(out.type().multiarraytype().shape(2), rows) << out.name();

    const auto n_pieces = static_cast<int64_t>(sizes.size());
    std::vector<float> w(static_cast<size_t>(m.spec.n_embd));
    for (uint32_t seed = 1; seed <= 3; ++seed) {
        std::vector<float> h(static_cast<size_t>(m.spec.n_embd));
        std::mt19937 rng(seed);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (float& x : h) x = f16_to_f32(f32_to_f16(normal(rng)));

        const auto outs = run_head(logits_head, h);
        std::vector<float> all;
        for (int64_t p = 0; p < n_pieces; ++p) {
            const milexec::Tensor& piece = outs.at(fmt::format("logits{}", p + 1));
            ASSERT_EQ(std::ssize(piece.f), rows);
            all.insert(all.end(), piece.f.begin(), piece.f.end());
        }
        for (int64_t id = 0; id < vocab; ++id) {
            q.decode_row(id, w.data());
            const double want = std::inner_product(w.begin(), w.end(), h.begin(), 0.0);
            EXPECT_NEAR(all[static_cast<size_t>(id)], want, 2e-2 * (1 + std::abs(want)))
                << "id " << id;
        }
        for (int64_t pad = vocab; pad < std::ssize(all); ++pad)
            EXPECT_EQ(all[static_cast<size_t>(pad)], -65504.0f) << "id " << pad;

        const auto arg = run_head(argmax_head, h);
        const milexec::Tensor& idx = arg.at("argmax_idx");
        const milexec::Tensor& val = arg.at("argmax_val");
        ASSERT_EQ(std::ssize(idx.i), n_pieces);
        for (int64_t p = 0; p < n_pieces; ++p) {
            const int32_t local = idx.i[static_cast<size_t>(p)];
            EXPECT_LT(local, sizes[static_cast<size_t>(p)]) << "piece " << p;
            const auto begin = all.begin() + p * rows;
            EXPECT_EQ(val.f[static_cast<size_t>(p)], *std::max_element(begin, begin + rows));
        }
    }
}

INSTANTIATE_TEST_SUITE_P(
    Lower, LutPadding,
    testing::Values(std::pair<int, int64_t>{6, 8}, std::pair<int, int64_t>{4, 16},
                    std::pair<int, int64_t>{8, 3}, std::pair<int, int64_t>{2, 7}),
    [](const auto& info) { return fmt::format("lut{}_{}", info.param.first, info.param.second); });

// Embeddings, layers and head all with partial last groups: the packages
// (logits head and in-model argmax) decode the CPU's greedy tokens on the
// same quantized weights, and their logits match in f32.
TEST(LutPadding, PackagesMatchTheCpuOnTheSameLuts) {
    const LoadedModel& m = model_650();
    const std::string text = "embed=8:7,ffn=4:6,head=6:8";
    const quant::QuantSpec spec = quant::parse_quant_spec(text);
    const ir::Program program = quantized_program(m, spec);
    const auto lower_with = [&](bool argmax) {
        test::Lowered l{lower::lower_embeddings(program, test::lowering_options(argmax)),
                        {},
                        {},
                        anemll::lm_head_chunk_sizes(vocab, 8, 8)};
        l.chunks.push_back(lower::lower_chunk(program, 0, 1, test::lowering_options(argmax)));
        l.chunks.push_back(lower::lower_chunk(program, 1, lower::layer_count(program),
                                              test::lowering_options(argmax)));
        l.head = lower::lower_lm_head(program, l.pieces, test::lowering_options(argmax));
        return l;
    };
    const test::Lowered logits = lower_with(false), arg = lower_with(true);
    AnePipeline ane = test::pipeline(logits, false, milexec::Rounding::none);
    AnePipeline ane_argmax = test::pipeline(arg, true, milexec::Rounding::none);
    SessionOptions so;
    so.n_ctx = test::lowering_ctx;
    so.quant = spec;
    Session cpu(m.spec, m.weights, so);

    const auto prompt = test::random_tokens(vocab, 6, 4);
    auto a = ane.prefill(prompt);
    auto b = cpu.prefill(prompt);
    ASSERT_EQ(std::ssize(a), vocab);
    double worst = test::relative_error(a, b);
    int32_t t_ane = test::argmax(a), t_arg = test::argmax(ane_argmax.prefill(prompt)),
            t_cpu = test::argmax(b);
    std::vector<int32_t> got, got_arg, want;
    while (cpu.pos() < test::lowering_ctx) {
        got.push_back(t_ane);
        got_arg.push_back(t_arg);
        want.push_back(t_cpu);
        a = ane.decode(t_ane);
        b = cpu.decode(t_cpu);
        worst = std::max(worst, test::relative_error(a, b));
        t_ane = test::argmax(a);
        t_arg = test::argmax(ane_argmax.decode(t_arg));
        t_cpu = test::argmax(b);
    }
    EXPECT_EQ(got, want);
    EXPECT_EQ(got_arg, want);
    EXPECT_LT(worst, 1e-2) << text;
    EXPECT_TRUE(std::ranges::all_of(got_arg, [](int32_t id) { return id < vocab; }));
}

}  // namespace
}  // namespace anelm
