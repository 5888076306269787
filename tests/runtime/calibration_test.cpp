// Calibration: the statistics a pass of the model collects, the windows a
// text becomes (and the files refused), and what calibrated palettization
// buys on real trained weights (stories260K, shipped in models/).
#include "runtime/calibration.h"

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include <fmt/core.h>

#include "base/error.h"
#include "exec/cpu/executor.h"
#include "exec/tiny_model.h"
#include "io/io_test_util.h"
#include "io/json_file.h"
#include "models/model_loader.h"
#include "models/models.h"
#include "quant/quantize.h"
#include "quant/quantize_program.h"
#include "runtime/held_out_kl.h"
#include "runtime/perplexity.h"
#include "runtime/runtime_program.h"
#include "runtime/session.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

const fs::path stories = fs::path(ANELM_SOURCE_DIR) / "models" / "stories260K";
const fs::path texts = fs::path(ANELM_SOURCE_DIR) / "tests" / "data" / "stories260K";

fs::path write_file(const std::string& name, const std::string& bytes) {
    const fs::path p = test::temp_dir("calibration") / name;
    std::ofstream(p, std::ios::binary) << bytes;
    return p;
}

TEST(Calibration, CollectsEveryLinearLayersInputsSharedWhereTheyReadOneValue) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    const std::vector<std::vector<int32_t>> windows = {test::random_tokens(m.spec.n_vocab, 40, 1),
                                                       test::random_tokens(m.spec.n_vocab, 25, 2)};
    const auto calib = calibrate(m.spec, m.weights, windows, quant::CalibMethod::gptq, 2);
    EXPECT_EQ(calib->tokens, 65);
    const std::string layer = "model.layers.1.";
    const auto* q = calib->find(layer + "self_attn.q_proj.weight");
    ASSERT_NE(q, nullptr);
    EXPECT_EQ(q, calib->find(layer + "self_attn.k_proj.weight"));
    EXPECT_EQ(q, calib->find(layer + "self_attn.v_proj.weight"));
    EXPECT_EQ(q->n_in, m.spec.n_embd);
    EXPECT_EQ(q->rows, 65);
    const auto* gate = calib->find(layer + "mlp.gate_proj.weight");
    ASSERT_NE(gate, nullptr);
    EXPECT_EQ(gate, calib->find(layer + "mlp.up_proj.weight"));
    EXPECT_NE(gate, q);
    const auto* down = calib->find(layer + "mlp.down_proj.weight");
    ASSERT_NE(down, nullptr);
    EXPECT_EQ(down->n_in, m.spec.n_ff);
    // Every row reaches the head, which a tied model reads as the embedding.
    const std::string head =
        m.spec.tie_word_embeddings ? "model.embed_tokens.weight" : "lm_head.weight";
    const auto* h = calib->find(head);
    ASSERT_NE(h, nullptr);
    EXPECT_EQ(h->rows, 65);
    EXPECT_EQ(h, calib->find(head + ":head"));
    for (double d : down->diag) EXPECT_GE(d, 0.0);
    EXPECT_EQ(calib->find("model.norm.weight"), nullptr);
}

// The embedding's table is weighted by how often the text reads each row:
// the pass counts the tokens, and a sequential pass makes the table so.
TEST(Calibration, AnEmbeddingIsWeightedByHowOftenTheTextReadsEachRow) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    std::vector<std::vector<int32_t>> windows = {test::random_tokens(m.spec.n_vocab, 40, 5),
                                                 std::vector<int32_t>(30, 7)};
    quant::QuantSpec spec = quant::parse_quant_spec("embed=3:8");
    spec.min_elements = 0;
    const auto seq = calibrate(m.spec, m.weights, windows, quant::CalibMethod::gptq, 2, {}, &spec);
    std::vector<double> expected(seq->token_counts.size(), 0.0);
    for (const auto& w : windows)
        for (const int32_t t : w) ++expected.at(static_cast<size_t>(t));
    EXPECT_EQ(seq->token_counts, expected);

    const std::string name = "model.embed_tokens.weight";
    ASSERT_TRUE(seq->made.contains(name));
    ThreadPool pool(2);
    const TensorView& table = m.weights.get(name);
    quant::Calibration by_counts;
    by_counts.row_counts = &expected;
    const quant::QuantChoice choice = spec.embed;
    const auto weighted = quant::quantize_matrix(table, choice, pool, 0, {}, by_counts);
    const auto plain = quant::quantize_matrix(table, choice, pool, 0);
    const quant::QuantizedMatrix& made = *seq->made.at(name).matrix;
    EXPECT_EQ(made.lut, weighted.lut);
    EXPECT_EQ(made.codes, weighted.codes);
    // Token 7, read 30 times, moved its group's table.
    const int64_t group = 7 / made.rows_per_table(), k = int64_t{1} << choice.nbits;
    EXPECT_FALSE(std::equal(made.lut.begin() + group * k, made.lut.begin() + (group + 1) * k,
                            plain.lut.begin() + group * k));
}

// The statistics of `name`'s inputs when `program` runs on the windows, each its own sequence.
quant::InputStats inputs_of(const ir::Program& program, const std::string& name,
                            const std::vector<std::vector<int32_t>>& windows, ThreadPool& pool) {
    const ir::Function& fn = program.functions.front();
    ir::ValueId input = 0;
    for (const ir::Node& node : fn.nodes)
        if (node.op == ir::Op::linear && program.weights[node.weight].name == name)
            input = node.inputs.at(0);
    quant::InputStats stats(fn.nodes[input].width);
    Executor executor(program, pool, Precision::f32, static_cast<int64_t>(windows.size()));
    std::vector<ExecState> states(windows.size());
    std::vector<ExecSegment> segments;
    std::vector<int32_t> tokens;
    for (size_t w = 0; w < windows.size(); ++w) {
        states[w] = executor.make_state();
        segments.push_back({static_cast<int64_t>(windows[w].size()), 0, &states[w]});
        tokens.insert(tokens.end(), windows[w].begin(), windows[w].end());
    }
    executor.set_observer([&](const ir::Node& node, std::span<const float> value) {
        if (&node == &fn.nodes[input])
            stats.add(value.data(), static_cast<int64_t>(value.size()) / node.width, pool);
    });
    executor.run(0, tokens, segments);
    return stats;
}

TEST(Calibration, SequentiallyEachLayerSeesTheInputsOfTheQuantizedLayersBefore) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    const std::vector<std::vector<int32_t>> windows = {test::random_tokens(m.spec.n_vocab, 40, 3),
                                                       test::random_tokens(m.spec.n_vocab, 25, 4)};
    quant::QuantSpec spec = quant::parse_quant_spec("ffn=3:8,head=6:8");
    spec.min_elements = 0;
    const auto f32 = calibrate(m.spec, m.weights, windows, quant::CalibMethod::gptq, 2);
    const auto seq = calibrate(m.spec, m.weights, windows, quant::CalibMethod::gptq, 2, {}, &spec);
    EXPECT_FALSE(f32->sequential);
    EXPECT_TRUE(f32->made.empty());
    ASSERT_TRUE(seq->sequential);

    // The quantized model, its layers taken as the pass made them.
    ProgramOptions po;
    po.n_ctx = 40;
    po.functions = {{"prefill", 65, true}};
    ir::Program program = build_program(m.spec, m.weights, po);
    ThreadPool pool(2);
    quant::quantize_program(program, spec, pool, {}, 0, seq.get());
    const std::string first = "model.layers.0.self_attn.q_proj.weight";
    const std::string last =
        fmt::format("model.layers.{}.mlp.down_proj.weight", m.spec.n_layer - 1);
    for (const std::string& name : {first, last}) {
        ASSERT_TRUE(seq->made.contains(name)) << name;
        for (const ir::Weight& w : program.weights)
            if (w.name == name) {
                EXPECT_EQ(w.quantized, seq->made.at(name).matrix) << name;
            }
    }
    // Nothing is quantized before the first layer's projections: the same
    // inputs as the f32 model's. The last layer's are the quantized model's.
    EXPECT_EQ(seq->find(first)->gram, f32->find(first)->gram);
    const quant::InputStats quantized = inputs_of(program, last, windows, pool);
    EXPECT_EQ(seq->find(last)->gram, quantized.gram);
    EXPECT_NE(seq->find(last)->gram, f32->find(last)->gram);
}

// A model rotating interleaved pairs (llama2.c, GGUF llama) has its q and k
// rows reordered into the half-split form by every program built of it; the
// walk's program and the one quantized after it each hold their own copy of
// those rows, and the matrices the walk made of them are still taken, so a
// session and convert run exactly the calibrated LUTs.
TEST(Calibration, TheWalksMatricesAreTakenForRowsTheHalfSplitFormReordered) {
    const LoadedModel& m = test::tiny_model("tiny-llama");
    ModelSpec interleaved = m.spec;
    interleaved.rope_style = RopeStyle::interleaved;
    const std::vector<std::vector<int32_t>> windows = {test::random_tokens(m.spec.n_vocab, 40, 5)};
    quant::QuantSpec spec = quant::parse_quant_spec("ffn=3:8,head=6:8");
    spec.min_elements = 0;
    const auto seq =
        calibrate(interleaved, m.weights, windows, quant::CalibMethod::gptq, 2, {}, &spec);

    ProgramOptions po;
    po.n_ctx = 40;
    po.functions = {{"decode", 1, false}};
    ir::Program program = runtime_program(interleaved, m.weights, po);
    ThreadPool pool(2);
    quant::quantize_program(program, spec, pool, {}, 0, seq.get());
    int taken = 0, reordered = 0;
    for (const ir::Weight& w : program.weights) {
        if (!w.quantized) continue;
        ASSERT_TRUE(seq->made.contains(w.name)) << w.name;
        EXPECT_EQ(w.quantized, seq->made.at(w.name).matrix) << w.name;
        ++taken;
        if (w.storage) ++reordered;
    }
    EXPECT_GT(taken, 2 * m.spec.n_layer);
    EXPECT_EQ(reordered, 2 * m.spec.n_layer);  // each layer's q and k
}

TEST(Calibration, WindowsOfTheContextEachStartingWithBos) {
    const auto tokenizer = load_tokenizer((stories / "tok512.bin").string());
    const std::string path = (texts / "once_upon_a_time.txt").string();
    const auto all = tokenizer->encode(read_text_file(path), true);
    const auto windows = calibration_windows(path, *tokenizer, 50);
    ASSERT_EQ(windows.size(), (all.size() + 49) / 50);
    size_t total = 0;
    for (const auto& w : windows) {
        EXPECT_EQ(w.front(), tokenizer->bos_id());
        total += w.size();
    }
    EXPECT_EQ(total, all.size());
    EXPECT_EQ(windows[1][1], all[51]);
}

TEST(Calibration, RefusesFilesThatAreNotTextEnoughForAWindow) {
    const auto tokenizer = load_tokenizer((stories / "tok512.bin").string());
    const auto refuse = [&](const fs::path& p, int64_t window) {
        return test::error_of([&] { calibration_windows(p.string(), *tokenizer, window); });
    };
    const fs::path missing = test::temp_dir("calibration") / "missing.txt";
    EXPECT_NE(refuse(missing, 8).find(missing.string()), std::string::npos);
    EXPECT_NE(refuse(write_file("empty.txt", " \n\n"), 8).find("empty.txt: empty"),
              std::string::npos);
    EXPECT_NE(refuse(write_file("binary.bin", std::string("ab\xff\xfe\x00", 5)), 8)
                  .find("binary.bin: not UTF-8 text (byte 2)"),
              std::string::npos);
    EXPECT_NE(
        refuse(write_file("nul.txt", std::string("ab\0cd", 5)), 8).find("nul.txt: not UTF-8 text"),
        std::string::npos);
    EXPECT_NE(refuse(write_file("short.txt", "Once upon a time."), 64)
                  .find("short.txt: 6 tokens, shorter than one calibration window of 64"),
              std::string::npos);
}

constexpr int64_t quality_window = 128;

// 3K held-out tokens: enough that the result reflects the method rather than
// which stories were drawn.
double held_out_kl(const LoadedModel& m, const Tokenizer& tokenizer, const std::string& quant,
                   std::shared_ptr<const quant::ModelCalibration> calib) {
    return test::held_out_kl(m, tokenizer, quant::parse_quant_spec(quant), std::move(calib),
                             quality_window, 24);
}

TEST(Calibration, GptqCodesLowerTheKlOfRealWeightsOnUnseenText) {
    const LoadedModel m = load_model((stories / "stories260K.bin").string());
    const auto tokenizer = load_tokenizer((stories / "tok512.bin").string());
    const auto windows =
        calibration_windows((texts / "calibration.txt").string(), *tokenizer, quality_window, 4096);
    const auto gptq = calibrate(m.spec, m.weights, windows, quant::CalibMethod::gptq, 2);
    // Measured: 0.71, 0.80 and 0.86 of plain k-means's KL.
    for (const auto& [spec, ratio] : {std::pair{"ffn=3:8,head=6:8", 0.8},
                                      {"ffn=4:8,head=6:8", 0.9},
                                      {"ffn=2:8,head=6:8", 0.95}}) {
        const double plain = held_out_kl(m, *tokenizer, spec, nullptr);
        const double calibrated = held_out_kl(m, *tokenizer, spec, gptq);
        EXPECT_LT(calibrated, ratio * plain)
            << spec << ": plain " << plain << ", gptq " << calibrated;
    }
}

TEST(Calibration, AimedAtTheF32OutputsOnQuantizedInputsLowersTheKlOfRealWeights) {
    const LoadedModel m = load_model((stories / "stories260K.bin").string());
    const auto tokenizer = load_tokenizer((stories / "tok512.bin").string());
    const auto windows =
        calibration_windows((texts / "calibration.txt").string(), *tokenizer, quality_window, 4096);
    const auto f32 = calibrate(m.spec, m.weights, windows, quant::CalibMethod::gptq, 2);
    for (const auto& [text, ratio] :
         {std::pair{"ffn=3:8,head=6:8", 0.8}, {"ffn=4:8,head=6:8", 0.9}}) {
        const quant::QuantSpec spec = quant::parse_quant_spec(text);
        const auto seq =
            calibrate(m.spec, m.weights, windows, quant::CalibMethod::gptq, 2, {}, &spec);
        const double on_f32 = held_out_kl(m, *tokenizer, text, f32);
        const double sequential = held_out_kl(m, *tokenizer, text, seq);
        EXPECT_LT(sequential, ratio * on_f32)
            << text << ": f32 inputs " << on_f32 << ", sequential " << sequential;
    }
}

}  // namespace
}  // namespace anelm
