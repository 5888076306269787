// A model read from GGUF computes what the same model read from its Hugging
// Face folder computes: tiny models of every architecture written the way
// llama.cpp's converter writes them, as F32, F16 and Q8_0.
#include <gtest/gtest.h>

#include <array>
#include <cctype>

#include "base/half.h"
#include "exec/tiny_model.h"
#include "quant/quant_spec.h"
#include "runtime/calibration.h"
#include "runtime/gguf_from_hf.h"

namespace anelm {
namespace {

using test::GgufMatrixType;

struct Case {
    const char* preset;
    GgufMatrixType type;
};

std::string case_name(const ::testing::TestParamInfo<Case>& info) {
    std::string name = info.param.preset;
    for (char& c : name)
        if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
    const char* types[] = {"f32", "f16"};
    return name + "_" +
           (info.param.type == GgufMatrixType::q8_0 ? "q8_0"
                                                    : types[static_cast<int>(info.param.type)]);
}

class GgufModel : public ::testing::TestWithParam<Case> {};

TEST_P(GgufModel, LogitsEqualTheHuggingFaceModel) {
    const Case c = GetParam();
    const LoadedModel& hf = test::tiny_model(c.preset);
    const auto dir = test::temp_dir("gguf-model");
    const std::string path = (dir / "model.gguf").string();
    const test::GgufFromHf written = test::write_gguf_from_hf(hf, path, c.type);
    const LoadedModel gguf = load_model(path);

    const ModelSpec& s = gguf.spec;
    EXPECT_EQ(s.arch, hf.spec.arch);
    EXPECT_EQ(s.n_layer, hf.spec.n_layer);
    EXPECT_EQ(s.n_head_kv, hf.spec.n_head_kv);
    EXPECT_EQ(s.head_dim, hf.spec.head_dim);
    EXPECT_EQ(s.n_vocab, hf.spec.n_vocab);
    EXPECT_EQ(s.tie_word_embeddings, hf.spec.tie_word_embeddings);
    EXPECT_EQ(s.attention_bias, hf.spec.attention_bias);
    EXPECT_EQ(s.qk_norm, hf.spec.qk_norm);
    EXPECT_EQ(s.sliding_layers, hf.spec.sliding_layers);
    EXPECT_EQ(s.conv_layers, hf.spec.conv_layers);
    EXPECT_EQ(s.conv_kernel, hf.spec.conv_kernel);
    EXPECT_EQ(s.conv_bias, hf.spec.conv_bias);
    EXPECT_EQ(s.delta_layers, hf.spec.delta_layers);
    EXPECT_EQ(s.rope_dims, hf.spec.rope_dims);
    EXPECT_EQ(s.rope_style,
              s.arch == Arch::llama ? RopeStyle::interleaved : RopeStyle::rotate_half);
    EXPECT_EQ(gguf.tokenizer_path, path);

    // The Hugging Face side with what GGUF cannot say: llama.cpp scales Gemma's
    // queries by head_dim (the tiny model's config says otherwise), and the
    // values the file rounded or quantized.
    ModelSpec want_spec = hf.spec;
    want_spec.query_pre_attn_scalar = s.query_pre_attn_scalar;
    std::map<std::string, std::vector<float>> patches = written.decoded;
    if (c.type == GgufMatrixType::f16)
        for (const std::string& name : hf.weights.names()) {
            const TensorView& v = *hf.weights.find(name);
            if (v.shape.size() != 2) continue;
            std::vector<float>& values = patches[name];
            values.resize(static_cast<size_t>(v.numel()));
            read_f32(v, 0, v.numel(), values.data());
            for (float& x : values) x = round_to_f16(x);
        }
    const test::PatchedWeights want_weights(hf.weights, std::move(patches));

    // The block matrices decoded: this compares the loading, not the kernels.
    const test::PatchedWeights got_weights = test::dequantized_weights(gguf.weights);
    const SessionOptions so = test::tiny_session_options("none");
    Session got(s, got_weights.store(), so);
    Session want(want_spec, want_weights.store(), so);
    const auto tokens = test::random_tokens(s.n_vocab, 20, 3);
    const auto a = got.prefill(tokens);
    const std::vector<float> got_prefill(a.begin(), a.end());
    EXPECT_LT(test::relative_error(got_prefill, want.prefill(tokens)), 1e-5);
    const auto b = got.decode(5);
    const std::vector<float> got_step(b.begin(), b.end());
    EXPECT_LT(test::relative_error(got_step, want.decode(5)), 1e-5);
    std::filesystem::remove_all(dir);
}

// Kept as blocks, the weights are multiplied by the block kernels, which round
// each token's activations to 8 bits as llama.cpp does: the logits stay within
// that rounding of the dequantized model's.
TEST(GgufBlocks, RunAsStoredCloseToTheDequantizedModel) {
    for (const char* preset : {"tiny-llama", "tiny-qwen3", "tiny-gemma3"}) {
        SCOPED_TRACE(preset);
        const auto dir = test::temp_dir("gguf-blocks");
        const std::string path = (dir / "model.gguf").string();
        test::write_gguf_from_hf(test::tiny_model(preset), path, GgufMatrixType::q8_0);
        const LoadedModel blocks = load_model(path);
        const test::PatchedWeights floats = test::dequantized_weights(blocks.weights);
        EXPECT_EQ(blocks.weights.get("model.layers.0.mlp.up_proj.weight").dtype, DType::blocks);
        EXPECT_EQ(floats.store().get("model.layers.0.mlp.up_proj.weight").dtype, DType::f32);

        const SessionOptions so = test::tiny_session_options("none");
        Session got(blocks.spec, blocks.weights, so);
        Session want(blocks.spec, floats.store(), so);
        const auto tokens = test::random_tokens(blocks.spec.n_vocab, 20, 4);
        const auto a = got.prefill(tokens);
        const std::vector<float> got_prefill(a.begin(), a.end());
        const double prefill_error = test::relative_error(got_prefill, want.prefill(tokens));
        EXPECT_LT(prefill_error, 2e-2);
        EXPECT_GT(prefill_error, 0.0);  // the activations were rounded: another path ran
        const auto b = got.decode(5);
        const std::vector<float> got_step(b.begin(), b.end());
        EXPECT_LT(test::relative_error(got_step, want.decode(5)), 2e-2);
        std::filesystem::remove_all(dir);
    }
}

// Calibration runs the blocks it does not quantize as stored, in both of its
// forms (a GGUF palettized again with --calib).
TEST(GgufBlocks, CalibrateRunsTheBlocksItLeavesAlone) {
    const auto dir = test::temp_dir("gguf-calib");
    const std::string path = (dir / "model.gguf").string();
    test::write_gguf_from_hf(test::tiny_model("tiny-qwen3"), path, GgufMatrixType::q8_0);
    const LoadedModel blocks = load_model(path);
    const std::vector<std::vector<int32_t>> windows = {
        test::random_tokens(blocks.spec.n_vocab, 30, 5), test::random_tokens(blocks.spec.n_vocab, 30, 6)};
    quant::QuantSpec spec = quant::parse_quant_spec("ffn=4:8");
    spec.min_elements = 0;
    for (const quant::QuantSpec* sequential : std::array<const quant::QuantSpec*, 2>{nullptr, &spec}) {
        const auto calib = calibrate(blocks.spec, blocks.weights, windows, quant::CalibMethod::gptq, 2,
                                     {}, sequential);
        const quant::InputStats* q = calib->find("model.layers.0.self_attn.q_proj.weight");
        ASSERT_NE(q, nullptr);
        EXPECT_EQ(q->rows, 60);
    }
    std::filesystem::remove_all(dir);
}

// Where values are needed (quantizing again, the ane precision's half
// weights) the blocks are decoded tensor by tensor, and the model computes
// exactly what the dequantized model computes, with no f32 copy of it.
TEST(GgufBlocks, DecodedWhereValuesAreNeededExactlyAsTheDequantizedModel) {
    const auto dir = test::temp_dir("gguf-decoded");
    const std::string path = (dir / "model.gguf").string();
    test::write_gguf_from_hf(test::tiny_model("tiny-qwen3"), path, GgufMatrixType::q8_0);
    const LoadedModel blocks = load_model(path);
    const test::PatchedWeights floats = test::dequantized_weights(blocks.weights);
    const auto tokens = test::random_tokens(blocks.spec.n_vocab, 12, 5);
    for (const char* quant : {"lut4", "int8"}) {
        SCOPED_TRACE(quant);
        const SessionOptions so = test::tiny_session_options(quant);
        Session got(blocks.spec, blocks.weights, so);
        Session want(blocks.spec, floats.store(), so);
        const auto a = got.prefill(tokens);
        const std::vector<float> got_logits(a.begin(), a.end());
        const auto b = want.prefill(tokens);
        EXPECT_EQ(got_logits, std::vector<float>(b.begin(), b.end()));
    }
    SessionOptions ane = test::tiny_session_options("none");
    ane.precision = Precision::ane;
    Session got(blocks.spec, blocks.weights, ane);
    Session want(blocks.spec, floats.store(), ane);
    const auto a = got.prefill(tokens);
    const std::vector<float> got_logits(a.begin(), a.end());
    const auto b = want.prefill(tokens);
    EXPECT_EQ(got_logits, std::vector<float>(b.begin(), b.end()));
    std::filesystem::remove_all(dir);
}

INSTANTIATE_TEST_SUITE_P(Architectures, GgufModel,
                         ::testing::Values(Case{"tiny-llama", GgufMatrixType::f32},
                                           Case{"tiny-llama", GgufMatrixType::f16},
                                           Case{"tiny-qwen2", GgufMatrixType::f32},
                                           Case{"tiny-qwen3", GgufMatrixType::f16},
                                           Case{"tiny-qwen3", GgufMatrixType::q8_0},
                                           Case{"tiny-gemma3", GgufMatrixType::f32},
                                           Case{"tiny-gemma3", GgufMatrixType::q8_0},
                                           Case{"tiny-lfm2", GgufMatrixType::f32},
                                           Case{"tiny-lfm2", GgufMatrixType::q8_0},
                                           Case{"tiny-qwen3.5", GgufMatrixType::f32},
                                           Case{"tiny-qwen3.5", GgufMatrixType::q8_0}),
                         case_name);

}  // namespace
}  // namespace anelm
