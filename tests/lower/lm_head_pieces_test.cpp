// LM head pieces of equal size. AnemllCore (the Swift runner) turns a piece's
// local index into a vocabulary id as piece * rows + index, with rows the
// size of every piece's output, for concatenated logits and for the in-model
// argmax alike; chat.py adds the sum of lm_head_chunk_sizes before the piece.
// With a vocabulary of 650, which neither 8 nor 16 divides, both oracles must
// give the id the program's own head gives, for every id and every piece.
#include <gtest/gtest.h>

#include <numeric>

#include "anemll/anemll_layout.h"
#include "base/half.h"
#include "exec/mil/function.h"
#include "exec/tiny_model.h"
#include "lower/ane_lowering.h"
#include "lower/program_parts.h"
#include "models/models.h"

namespace anelm {
namespace {

constexpr int64_t vocab = 650;

const LoadedModel& model_650() {
    return test::tiny_model("tiny-llama", vocab);
}

ir::Program decode_program(const LoadedModel& m) {
    ProgramOptions po;
    po.n_ctx = 16;
    po.functions = {{"decode", 1, false}};
    return build_program(m.spec, m.weights, po);
}

// The head's logits in f32 for a final-normed hidden state: the weight rows
// of the last linear, each dotted with h (values rounded to fp16 as stored).
std::vector<float> reference_logits(const ir::Program& program, std::span<const float> h) {
    const ir::Function& fn = program.function("decode");
    const lower::ProgramParts parts = lower::split_parts(fn);
    const ir::Node* head = nullptr;
    for (ir::ValueId id : parts.head)
        if (fn.nodes[static_cast<size_t>(id)].op == ir::Op::linear)
            head = &fn.nodes[static_cast<size_t>(id)];
    EXPECT_NE(head, nullptr);
    const TensorView& w = program.weights.at(static_cast<size_t>(head->weight)).view;
    EXPECT_EQ(w.dtype, DType::f32);
    const auto* rows = reinterpret_cast<const float*>(w.data);
    const auto n_in = static_cast<int64_t>(h.size());
    std::vector<float> logits(static_cast<size_t>(w.shape.at(0)));
    for (size_t v = 0; v < logits.size(); ++v) {
        double sum = 0;
        for (int64_t j = 0; j < n_in; ++j)
            sum += double(f16_to_f32(f32_to_f16(rows[static_cast<int64_t>(v) * n_in + j]))) *
                   h[static_cast<size_t>(j)];
        logits[v] = static_cast<float>(sum);
    }
    return logits;
}

std::map<std::string, milexec::Tensor> run_head(const lower::AnePackage& head,
                                                std::span<const float> h) {
    milexec::Function fn(head.model.mlprogram(), "main", head.blobs());
    milexec::Tensor hidden =
        milexec::make_tensor(coreml::mil::FLOAT16, {1, 1, static_cast<int64_t>(h.size())});
    hidden.f.assign(h.begin(), h.end());
    milexec::States states;
    return fn.run({{"hidden_states", hidden}}, states);
}

std::vector<float> random_hidden(int64_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<float> h(static_cast<size_t>(n));
    for (float& x : h) x = f16_to_f32(f32_to_f16(normal(rng)));
    return h;
}

// `id` lies in [first, first + n) and its logit is the largest there, up to
// fp16 rounding (two logits that close may trade places in half precision).
void expect_a_best(const std::vector<float>& logits, int64_t first, int64_t n, int64_t id) {
    ASSERT_GE(id, first);
    ASSERT_LT(id, first + n);
    const float top = *std::max_element(logits.begin() + first, logits.begin() + first + n);
    EXPECT_GE(logits[static_cast<size_t>(id)], top - 2e-2f * (1 + std::abs(top)))
        << "id " << id << " in [" << first << ", " << first + n << ")";
}

class LmHeadPieces : public testing::TestWithParam<int> {};

TEST_P(LmHeadPieces, EveryIdMapsAsAnemllCoreComputesIt) {
    const int split = GetParam();
    const LoadedModel& m = model_650();
    ASSERT_EQ(m.spec.n_vocab, vocab);
    const ir::Program program = decode_program(m);
    const std::vector<int64_t> sizes = anemll::lm_head_chunk_sizes(vocab, split);
    const int64_t rows = anemll::lm_head_piece_rows(vocab, split);
    ASSERT_EQ(std::ssize(sizes), split);
    ASSERT_LT(sizes.back(), rows);  // the last piece is padded

    lower::AneOptions options;
    const lower::AnePackage logits_head = lower::lower_lm_head(program, sizes, options);
    options.argmax = true;
    const lower::AnePackage argmax_head = lower::lower_lm_head(program, sizes, options);

    // Every output is declared with the same rows.
    for (const auto& out : logits_head.model.description().output())
        EXPECT_EQ(out.type().multiarraytype().shape(2), rows) << out.name();

    for (uint32_t seed = 1; seed <= 4; ++seed) {
        const std::vector<float> h = random_hidden(m.spec.n_embd, seed);
        const std::vector<float> want = reference_logits(program, h);

        // Logits: pieces concatenated in order, id = piece * rows + index.
        const auto outs = run_head(logits_head, h);
        std::vector<float> concatenated;
        for (int p = 0; p < split; ++p) {
            const milexec::Tensor& piece = outs.at(fmt::format("logits{}", p + 1));
            ASSERT_EQ(std::ssize(piece.f), rows);
            concatenated.insert(concatenated.end(), piece.f.begin(), piece.f.end());
        }
        for (int64_t id = 0; id < vocab; ++id)
            EXPECT_NEAR(concatenated[static_cast<size_t>(id)], want[static_cast<size_t>(id)],
                        2e-2 * (1 + std::abs(want[static_cast<size_t>(id)])))
                << "id " << id;
        for (int64_t pad = vocab; pad < std::ssize(concatenated); ++pad)
            EXPECT_EQ(concatenated[static_cast<size_t>(pad)], -65504.0f);
        const auto best = std::max_element(concatenated.begin(), concatenated.end());
        expect_a_best(want, 0, vocab, best - concatenated.begin());

        // In-model argmax: each piece's winner is its own best id, by both
        // runners' arithmetic.
        const auto arg = run_head(argmax_head, h);
        const milexec::Tensor& idx = arg.at("argmax_idx");
        ASSERT_EQ(std::ssize(idx.i), split);
        int64_t chat_py_offset = 0;
        for (int p = 0; p < split; ++p) {
            const int32_t local = idx.i[static_cast<size_t>(p)];
            EXPECT_EQ(p * rows + local, chat_py_offset + local) << "piece " << p;
            expect_a_best(want, p * rows, sizes[static_cast<size_t>(p)], p * rows + local);
            chat_py_offset += sizes[static_cast<size_t>(p)];
        }
    }
}

INSTANTIATE_TEST_SUITE_P(Lower, LmHeadPieces, testing::Values(8, 16));

}  // namespace
}  // namespace anelm
