// The packages' LUT products at QuantDot::int8 are the CPU executor's
// integer dot products (activations rounded to int8 per block of 128, tables
// to int8). On a tiny model widened to 128 inputs per product: the LM head,
// given one hidden state, gives the CPU's int8 logits value for value; the
// whole packages follow the CPU's int8 logits closer than their exact
// products do. Not value for value: the packages hold the norms and rotary
// tables in fp16 and normalize in another order, and such differences move
// a few activations across an int8 rounding step.
#include <gtest/gtest.h>

#include <random>

#include "base/half.h"
#include "exec/tiny_model.h"
#include "kernels/quant_kernels.h"
#include "lower/lowering_support.h"
#include "lower/program_parts.h"
#include "quant/quantize_program.h"
#include "quant/quantized_matrix.h"

namespace anelm {
namespace {

const LoadedModel& wide_model() {
    static const LoadedModel m = [] {
        SynthPreset p = synth_preset("tiny-qwen3");
        p.spec.n_embd = 128;
        p.spec.head_dim = 32;
        p.spec.n_ff = 256;
        const auto dir = test::temp_dir("lower-int8-dot") / "model";
        SynthOptions options;
        options.dtype = DType::f16;
        options.seed = 9;
        synth_write(p, dir.string(), options);
        return load_model(dir.string());
    }();
    return m;
}

ir::Program quantized_program(const quant::QuantSpec& spec) {
    ir::Program program = test::decode_program(wide_model());
    ThreadPool pool(2);
    quant::quantize_program(program, spec, pool, {});
    return program;
}

TEST(LutInt8Dot, HeadGivesTheCpuIntegerProducts) {
    const LoadedModel& m = wide_model();
    quant::QuantSpec spec = quant::parse_quant_spec("head=6:8");
    spec.int8_dot = true;
    const ir::Program program = quantized_program(spec);
    const ir::Function& decode = program.function("decode");
    const quant::QuantizedMatrix* q = nullptr;
    for (ir::ValueId id : lower::split_parts(decode).head) {
        const ir::Node& node = decode.nodes[static_cast<size_t>(id)];
        if (node.op == ir::Op::linear) q = program.weights.at(node.weight).quantized.get();
    }
    ASSERT_TRUE(q && q->int8_dot);
    const std::vector<int64_t> sizes = anemll::lm_head_chunk_sizes(m.spec.n_vocab, 4, 8);
    const lower::AnePackage head = lower::lower_lm_head(program, sizes, {});
    ThreadPool pool(2);
    const milexec::Function fn(head.model.mlprogram(), "main", head.blobs(),
                               milexec::Rounding::none, &pool, milexec::QuantDot::int8);
    std::vector<float> h(static_cast<size_t>(m.spec.n_embd));
    std::mt19937 rng(1);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    for (float& x : h) x = f16_to_f32(f32_to_f16(normal(rng)));
    milexec::Tensor hidden = milexec::make_tensor(coreml::mil::FLOAT16, {1, 1, m.spec.n_embd});
    hidden.f = h;
    milexec::States states;
    const auto outs = fn.run({{"hidden_states", hidden}}, states);
    std::vector<float> got;
    for (size_t p = 0; p < sizes.size(); ++p) {
        const milexec::Tensor& piece = outs.at(fmt::format("logits{}", p + 1));
        got.insert(got.end(), piece.f.begin(), piece.f.begin() + sizes[p]);
    }
    std::vector<float> want(static_cast<size_t>(m.spec.n_vocab));
    kernels::quant_matmul(q->view(), h.data(), 1, want.data(), pool);
    EXPECT_EQ(got, want);
}

TEST(LutInt8Dot, PackagesFollowTheCpuIntegerProducts) {
    const LoadedModel& m = wide_model();
    quant::QuantSpec spec = quant::parse_quant_spec("ffn=4:8,head=6:8");
    const test::Lowered l =
        test::lower_all(quantized_program(spec), m.spec.n_vocab, test::lowering_options(false));
    AnePipeline int8 =
        test::pipeline(l, false, milexec::Rounding::none, 0, milexec::QuantDot::int8);
    AnePipeline exact = test::pipeline(l, false, milexec::Rounding::none);
    SessionOptions so;
    so.n_ctx = test::lowering_ctx;
    so.quant = spec;
    so.quant.int8_dot = true;
    Session cpu(m.spec, m.weights, so);

    // Each fed the CPU's greedy tokens: a prompt over two prefill batches and
    // infer, then decoding to the context's end.
    const auto prompt = test::random_tokens(m.spec.n_vocab, 11, 4);
    std::span<const float> want = cpu.prefill(prompt);
    double same = test::relative_error(int8.prefill(prompt), want);
    double other = test::relative_error(exact.prefill(prompt), want);
    while (cpu.pos() < test::lowering_ctx) {
        const int32_t t = test::argmax(want);
        want = cpu.decode(t);
        same = std::max(same, test::relative_error(int8.decode(t), want));
        other = std::max(other, test::relative_error(exact.decode(t), want));
    }
    EXPECT_LT(same, 0.7 * other) << "int8 " << same << ", exact " << other;
}

}  // namespace
}  // namespace anelm
