// Quantized weights in a program: the executor's quantized paths against the
// dense executor on the dequantized weights, the tied-head split, the bytes a
// decode step reads, and determinism.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "exec/tiny_model.h"
#include "quant/quantize_program.h"
#include "quant/quantized_matrix.h"
#include "runtime/session.h"

namespace anelm {
namespace {

using test::random_tokens;
using test::relative_error;

SessionOptions options(const std::string& spec, Precision precision = Precision::f32) {
    SessionOptions so = test::tiny_session_options(spec);
    so.precision = precision;
    return so;
}

// The program with each quantized weight replaced by a dense f32 copy of its
// dequantized values (held in `buffers`).
ir::Program dequantized(const ir::Program& program, std::vector<std::vector<float>>& buffers) {
    ir::Program dense = program;
    for (ir::Weight& w : dense.weights) {
        if (!w.quantized) continue;
        const quant::QuantizedMatrix& q = *w.quantized;
        std::vector<float>& values = buffers.emplace_back(static_cast<size_t>(q.n_out * q.n_in));
        for (int64_t o = 0; o < q.n_out; ++o) q.decode_row(o, values.data() + o * q.n_in);
        w.view = {DType::f32, {q.n_out, q.n_in}, reinterpret_cast<const std::byte*>(values.data())};
        w.quantized = nullptr;
    }
    return dense;
}

struct Case {
    const char* model;
    const char* spec;
    Precision precision;
    double tolerance;  // f16 rounds each op's output, so summation order shows
};

class QuantizedSession : public ::testing::TestWithParam<Case> {};

TEST_P(QuantizedSession, LogitsEqualDenseProgramOnDequantizedWeights) {
    const Case c = GetParam();
    const LoadedModel& m = test::tiny_model(c.model);
    Session session(m.spec, m.weights, options(c.spec, c.precision));
    int n_quantized = 0;
    for (const ir::Weight& w : session.program().weights) n_quantized += w.quantized != nullptr;
    ASSERT_GT(n_quantized, 0);

    std::vector<std::vector<float>> buffers;
    const ir::Program dense = dequantized(session.program(), buffers);
    ThreadPool pool(2);
    Executor executor(dense, pool, c.precision);
    ExecState state = executor.make_state();

    // 20 tokens take the block GEMM path of quant_matmul, one token the streaming path.
    const auto tokens = random_tokens(m.spec.n_vocab, 20, 1);
    const auto got = session.prefill(tokens);
    const std::vector<float> prefill(got.begin(), got.end());
    const auto want = executor.run(0, tokens, 0, state);
    ASSERT_EQ(prefill.size(), want.size());
    EXPECT_LT(relative_error(prefill, want), c.tolerance);

    const int32_t next = 3;
    const std::vector<float> step = [&] {
        const auto s = session.decode(next);
        return std::vector<float>(s.begin(), s.end());
    }();
    EXPECT_LT(relative_error(step, executor.run(1, {&next, 1}, 20, state)), c.tolerance);
}

INSTANTIATE_TEST_SUITE_P(
    Runtime, QuantizedSession,
    ::testing::Values(Case{"tiny-llama", "lut4,min=0", Precision::f32, 1e-4},
                      Case{"tiny-llama", "int8,embed=int8,min=0", Precision::f32, 1e-4},
                      Case{"tiny-qwen3", "int4,embed=6,min=0", Precision::f32, 1e-4},
                      Case{"tiny-qwen2", "embed=3:4,ffn=2:0,head=8,min=0", Precision::f32, 1e-4},
                      Case{"tiny-qwen3", "lut6,embed=4,min=0", Precision::f16, 1e-2},
                      Case{"tiny-llama", "int8,min=0", Precision::f16, 1e-2}));

// How far the logits of a quantized session land from the dense model's.
double logit_error(const char* model, const std::string& spec) {
    const LoadedModel& m = test::tiny_model(model);
    Session dense(m.spec, m.weights, options("none"));
    Session quantized(m.spec, m.weights, options(spec));
    const auto tokens = random_tokens(m.spec.n_vocab, 24, 2);
    const auto a = dense.prefill(tokens);
    const std::vector<float> want(a.begin(), a.end());
    return relative_error(quantized.prefill(tokens), want);
}

TEST(QuantizedSessionQuality, Lut8AndInt8StayCloseToDense) {
    for (const char* model : {"tiny-llama", "tiny-qwen3"}) {
        const double lut8 = logit_error(model, "lut8,min=0");
        const double int8 = logit_error(model, "int8,min=0");
        const double lut4 = logit_error(model, "lut4,min=0");
        EXPECT_LT(lut8, 0.02) << model;
        EXPECT_LT(int8, 0.02) << model;
        EXPECT_GT(lut4, lut8) << model;  // fewer bits, further away
    }
}

// Integer dot products apply to the tiny models' down projections (128
// inputs, one whole block): prompts of 12 tokens take the gemv leaves, of 24
// the GEMM leaves (where the processor has them), decoding the gemv leaves.
TEST(QuantizedSessionQuality, Int8DotProductsStayCloseToExactOnes) {
    const LoadedModel& m = test::tiny_model("tiny-llama");
    for (const char* spec : {"lut4,min=0", "int8,min=0", "int4,head=6,min=0"}) {
        for (size_t n_prompt : {12, 24}) {
            SessionOptions int8_options = options(spec);
            int8_options.quant.int8_dot = true;
            Session exact(m.spec, m.weights, options(spec));
            Session int8(m.spec, m.weights, int8_options);
            const auto tokens = random_tokens(m.spec.n_vocab, n_prompt, 5);
            const auto a = exact.prefill(tokens);
            const std::vector<float> want(a.begin(), a.end());
            const double prompt_error = relative_error(int8.prefill(tokens), want);
            if (n_prompt <= 16) {
                EXPECT_GT(prompt_error, 0.0) << spec << ": the exact path was taken";
            }
            EXPECT_LT(prompt_error, 0.01) << spec << " prompt " << n_prompt;
            for (int32_t token : {7, 100, 3}) {
                const auto e = exact.decode(token);
                const std::vector<float> step(e.begin(), e.end());
                const double step_error = relative_error(int8.decode(token), step);
                EXPECT_GT(step_error, 0.0) << spec;
                EXPECT_LT(step_error, 0.01) << spec;
            }
        }
    }
}

TEST(QuantizedSessionProgram, TiedHeadGetsTheHeadChoice) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    ASSERT_TRUE(m.spec.tie_word_embeddings);
    Session session(m.spec, m.weights, options("embed=8,ffn=none,head=4,min=0"));
    const ir::Program& p = session.program();
    for (const ir::Function& fn : p.functions) {
        const ir::Weight& table = p.weights[fn.nodes[2].weight];
        ASSERT_EQ(fn.nodes[2].op, ir::Op::embed);
        const ir::Weight& head = p.weights[fn.nodes.back().weight];
        ASSERT_EQ(fn.nodes.back().name, "logits");
        EXPECT_EQ(table.name, "model.embed_tokens.weight");
        EXPECT_EQ(head.name, "model.embed_tokens.weight:head");
        ASSERT_TRUE(table.quantized && head.quantized);
        EXPECT_EQ(table.quantized->nbits, 8);
        EXPECT_EQ(head.quantized->nbits, 4);
        EXPECT_EQ(head.view.data, table.view.data);  // the same bytes, quantized twice
    }
    for (const ir::Weight& w : p.weights) {
        if (w.name.find(".mlp.") != std::string::npos) {
            EXPECT_FALSE(w.quantized) << w.name;
        }
    }

    // The same choice for both: one weight, quantized once.
    Session same(m.spec, m.weights, options("embed=8,head=8,min=0"));
    const ir::Function& fn = same.program().functions[0];
    EXPECT_EQ(fn.nodes[2].weight, fn.nodes.back().weight);
    EXPECT_EQ(same.program().weights.size(), p.weights.size() - 1);
}

TEST(QuantizedSessionProgram, DecodeReadsTheQuantizedBytes) {
    const LoadedModel& m = test::tiny_model("tiny-llama");  // untied head, no biases, f32
    const ModelSpec& s = m.spec;
    Session session(s, m.weights, options("int8,min=0"));
    // int8: one byte per weight and an f16 scale per row; gains stay f32.
    const auto int8_bytes = [](int64_t n_out, int64_t n_in) { return n_out * n_in + 2 * n_out; };
    const int64_t q = s.n_head * s.head_dim, kv = s.n_head_kv * s.head_dim;
    const int64_t layer = int8_bytes(q, s.n_embd) + 2 * int8_bytes(kv, s.n_embd) +
                          int8_bytes(s.n_embd, q) + 2 * int8_bytes(s.n_ff, s.n_embd) +
                          int8_bytes(s.n_embd, s.n_ff) + 2 * s.n_embd * 4;
    const int64_t expected = s.n_layer * layer + int8_bytes(s.n_vocab, s.n_embd) + s.n_embd * 4;
    EXPECT_EQ(session.decode_weight_bytes(), static_cast<size_t>(expected));
}

TEST(QuantizedSessionProgram, SameCodesForAnyThreadCountAndProgressToTheEnd) {
    const LoadedModel& m = test::tiny_model("tiny-qwen2");
    const quant::QuantSpec spec = quant::parse_quant_spec("lut4,embed=6,min=0");
    SessionOptions one = options("none");
    one.threads = 1;
    Session a(m.spec, m.weights, one);
    Session b(m.spec, m.weights, options("none"));
    ir::Program pa = a.program(), pb = b.program();
    ThreadPool pool1(1), pool2(2);
    int64_t last_done = -1, last_total = -1;
    quant::quantize_program(pa, spec, pool1, [&](int64_t done, int64_t total) {
        EXPECT_GE(done, last_done);
        last_done = done;
        last_total = total;
    });
    quant::quantize_program(pb, spec, pool2);
    EXPECT_GT(last_total, 0);
    EXPECT_EQ(last_done, last_total);
    ASSERT_EQ(pa.weights.size(), pb.weights.size());
    for (size_t i = 0; i < pa.weights.size(); ++i) {
        ASSERT_EQ(!pa.weights[i].quantized, !pb.weights[i].quantized) << pa.weights[i].name;
        if (!pa.weights[i].quantized) continue;
        EXPECT_EQ(pa.weights[i].quantized->codes, pb.weights[i].quantized->codes);
        EXPECT_EQ(pa.weights[i].quantized->lut, pb.weights[i].quantized->lut);
    }
}

}  // namespace
}  // namespace anelm
