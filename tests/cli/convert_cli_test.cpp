// `anelm convert` end to end: a model converted (fp16, two chunks, argmax in
// the model) and its folder run by `anelm generate` gives the same greedy
// tokens as the original model in half precision; LUT conversions run; bad
// options fail on one line and leave nothing behind.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "base/half.h"
#include "converted/ane_pipeline.h"
#include "near_ties.h"
#include "quant/quant_spec.h"
#include "run_anelm.h"
#include "runtime/calibration.h"
#include "runtime/model.h"
#include "runtime/session.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm {
namespace {

namespace fs = std::filesystem;

const std::string& tiny_model(const std::string& preset) {
    static std::map<std::string, std::string> paths;
    auto it = paths.find(preset);
    if (it == paths.end()) {
        static const fs::path base = test::temp_dir("cli-convert-model");
        const auto path = (base / preset).string();
        synth_write(preset, path, DType::bf16, 11);
        it = paths.emplace(preset, path).first;
    }
    return it->second;
}

// A prompt longer than one prefill batch, so both functions of every chunk
// run; as text, and quoted for the shell.
const std::string prompt_text = "the quick brown fox jumps over the lazy dog";
const std::string prompt = "'" + prompt_text + "'";
// stories260K's greedy text from it: the CPU and the packages agree as text
// up to here; from ~128 positions a near tie may go either way.
constexpr int texts_agree = 112;

std::string shell_word(const fs::path& p) {
    return "'" + p.string() + "'";
}

// Greedy steps up to `positions`, prompt included, of the model on the CPU in
// the ANE's precision against a converted folder's packages
// (near_ties.h): the logits within `tie` of each other, a different choice
// only where the CPU's best two are as close. Half precision's ulp at the
// logits' magnitude is 1/128.
void expect_steps_agree(const Model& model, const SessionOptions& so, TokenModel& packages,
                        int positions, float tie) {
    const std::vector<int32_t> tokens = model.tokenizer->encode(prompt_text, true);
    Session cpu(model.spec(), model.weights(), so);
    const int steps = positions - static_cast<int>(tokens.size());
    const test::NearTieComparison c = test::compare_greedy_steps(cpu, packages, tokens, steps, tie);
    EXPECT_EQ(c.steps, steps);
    EXPECT_EQ(c.disagreed, 0) << c.near_ties << " near ties";
    EXPECT_LE(c.near_ties, steps / 10);  // a few: the margin is not set wide
    EXPECT_LT(c.max_diff, tie);
}

// Up to `steps` positions, prompt included; converted_extra: options for the
// converted folder's run only.
void expect_same_greedy_text(const std::string& model_args, const fs::path& out, int steps = 64,
                             const std::string& converted_extra = "") {
    const std::string args =
        fmt::format(" -p {} --steps {} --temp 0 --precision ane", prompt, steps);
    const auto original = test::run_anelm("generate " + model_args + args);
    ASSERT_EQ(original.exit_code, 0) << original.err;
    const auto converted = test::run_anelm("generate " + shell_word(out) + args + converted_extra);
    ASSERT_EQ(converted.exit_code, 0) << converted.err;
    EXPECT_EQ(converted.out, original.out);
    EXPECT_NE(converted.err.find("MIL interpreter"), std::string::npos) << converted.err;
}

class ConvertTiny : public testing::TestWithParam<const char*> {};

TEST_P(ConvertTiny, ConvertedFolderGeneratesTheSameTokens) {
    const std::string model = tiny_model(GetParam());
    const fs::path out = test::temp_dir("cli-convert") / "out";
    const auto r = test::run_anelm("convert " + shell_word(model) + " -o " + shell_word(out) +
                                   " --lut-ffn none --lut-head none --chunks 2 --argmax --ctx 96 "
                                   "--batch 16 -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(out / "meta.yaml"));
    EXPECT_TRUE(fs::exists(out / "tokenizer.json"));
    EXPECT_TRUE(fs::exists(out / "README.txt"));
    EXPECT_FALSE(fs::exists(out.string() + ".partial-" + std::to_string(::getpid())));
    expect_same_greedy_text(shell_word(model), out);

    const auto info = test::run_anelm("info " + shell_word(out) + " --json");
    ASSERT_EQ(info.exit_code, 0) << info.err;
    const auto j = nlohmann::json::parse(info.out);
    EXPECT_EQ(j["num_chunks"], 2);
    EXPECT_EQ(j["packages"].size(), 4u);  // embeddings, two chunks, LM head
    EXPECT_EQ(j["argmax_in_model"], true);
}

INSTANTIATE_TEST_SUITE_P(Cli, ConvertTiny,
                         testing::Values("tiny-llama", "tiny-qwen3", "tiny-gemma3", "tiny-lfm2",
                                         "tiny-qwen3.5", "tiny-gemma4"),
                         [](const auto& info) {
                             std::string s = info.param;
                             std::ranges::replace(s, '.', '_');
                             std::ranges::replace(s, '-', '_');
                             return s;
                         });

TEST(CliConvert, Stories260KConvertedGeneratesTheSameTokens) {
    ANELM_REQUIRE_SHARED("models/stories260K/stories260K.bin");
    const auto dir = test::shared_path("models/stories260K");
    const std::string model =
        shell_word(dir / "stories260K.bin") + " --tokenizer " + shell_word(dir / "tok512.bin");
    const fs::path out = test::temp_dir("cli-convert-stories") / "out";
    const auto r = test::run_anelm(
        "convert " + model + " -o " + shell_word(out) +
        " --lut-ffn none --lut-head none --chunks 2 --argmax --batch 16 --verify 8");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(out / "tokenizer.bin"));
    // Every step up to where run.c's text ends, the rounding of the two paths
    // allowed to decide near ties only.
    {
        const Model original =
            open_model((dir / "stories260K.bin").string(), (dir / "tok512.bin").string(), true);
        ThreadPool pool(2);
        ConvertedModel packages(out.string(), (dir / "tok512.bin").string(), milexec::Rounding::f16,
                                &pool);
        SessionOptions so;
        so.n_ctx = 512;
        so.precision = Precision::ane;
        expect_steps_agree(original, so, packages.pipeline(), 400, 1.0f / 16);
    }
    // The whole text, as far as the first near tie (at ~128 positions).
    expect_same_greedy_text(model, out, texts_agree);
    // Speculative decoding on the packages' verify functions: the same text.
    expect_same_greedy_text(model, out, texts_agree, " --lookup 2");
    // The prompt through the packages, the rest on the CPU after the KV hand-off.
    const std::string args =
        fmt::format(" -p {} --steps {} --temp 0 --precision ane", prompt, texts_agree);
    const auto plain = test::run_anelm("generate " + model + args);
    const auto hybrid =
        test::run_anelm("generate " + model + args + " --prefill-packages " + shell_word(out));
    ASSERT_EQ(hybrid.exit_code, 0) << hybrid.err;
    EXPECT_EQ(hybrid.out, plain.out);
    EXPECT_NE(hybrid.err.find("KV hand-off: "), std::string::npos) << hybrid.err;
    // The hand-off writes f16 rows: an int8 cache is refused before any text.
    const auto int8_cache = test::run_anelm("generate " + model + args +
                                            " --kv q8 --prefill-packages " + shell_word(out));
    EXPECT_EQ(int8_cache.exit_code, 1);
    EXPECT_EQ(int8_cache.out, "");
    EXPECT_NE(int8_cache.err.find("--prefill-packages: takes --kv f16"), std::string::npos)
        << int8_cache.err;
    // Its own packages as the draft model (--draft OUT2): every draft is kept.
    expect_same_greedy_text(model, out, texts_agree,
                            " --draft " + shell_word(out) + " --draft-n 3");
    const auto drafted = test::run_anelm("generate " + shell_word(out) + " -p hi --lookup 2");
    EXPECT_NE(drafted.err.find("speculative (prompt lookup (2))"), std::string::npos)
        << drafted.err;
    const auto refused =
        test::run_anelm("generate " + shell_word(out) + " -p hi --draft-quant lut4");
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_NE(refused.err.find("--draft-quant"), std::string::npos) << refused.err;
}

TEST(CliConvert, CalibratedLutPackagesGenerateAsTheCalibratedModel) {
    const fs::path stories = fs::path(ANELM_SOURCE_DIR) / "models" / "stories260K";
    const fs::path texts = fs::path(ANELM_SOURCE_DIR) / "tests" / "data" / "stories260K";
    const fs::path work = test::temp_dir("cli-convert-calib");
    const fs::path calib = work / "calib.txt";
    {
        std::ofstream out(calib);
        for (const char* name :
             {"once_upon_a_time.txt", "the_little_dog.txt", "lily_wanted_to.txt"})
            out << std::ifstream(texts / name).rdbuf() << "\n";
    }
    const std::string model = shell_word(stories / "stories260K.bin") + " --tokenizer " +
                              shell_word(stories / "tok512.bin");
    const std::string calibrated = " --calib " + shell_word(calib) + " --ctx 256";
    const fs::path out = work / "out";
    const auto r = test::run_anelm("convert " + model + " -o " + shell_word(out) +
                                   " --lut-ffn 4,8 --lut-head 6,8 --batch 16" + calibrated);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("calibrate"), std::string::npos) << r.err;
    {
        // The calibration generate and convert make: its windows of --ctx
        // tokens, the LUTs made on the way, multiplied with int8 activations.
        const Model original = open_model((stories / "stories260K.bin").string(),
                                          (stories / "tok512.bin").string(), true);
        SessionOptions so;
        so.n_ctx = 256;
        so.precision = Precision::ane;
        so.quant = quant::parse_quant_spec("ffn=4:8,head=6:8");
        so.quant.int8_dot = true;
        const auto windows =
            calibration_windows(calib.string(), *original.tokenizer, so.n_ctx, 4096);
        so.calibration = calibrate(original.spec(), original.weights(), windows,
                                   quant::CalibMethod::gptq, 2, {}, &so.quant);
        ThreadPool pool(2);
        ConvertedModel packages(out.string(), (stories / "tok512.bin").string(),
                                milexec::Rounding::f16, &pool, milexec::QuantDot::int8);
        // Activations rounded to int8 on both sides: a rounding that goes
        // the other way moves the logits further.
        expect_steps_agree(original, so, packages.pipeline(), 200, 1.0f / 8);
    }
    expect_same_greedy_text(model + " --quant ffn=4:8,head=6:8" + calibrated, out, 100);

    // Widths chosen per matrix: recorded in meta.yaml, run as the model runs them.
    const fs::path mixed = work / "auto";
    const auto a = test::run_anelm("convert " + model + " -o " + shell_word(mixed) +
                                   " --quant auto:bpw=5 --batch 16" + calibrated);
    ASSERT_EQ(a.exit_code, 0) << a.err;
    EXPECT_NE(a.err.find("auto: "), std::string::npos) << a.err;
    std::ifstream meta(mixed / "meta.yaml");
    const std::string yaml((std::istreambuf_iterator<char>(meta)),
                           std::istreambuf_iterator<char>());
    EXPECT_NE(yaml.find("quant_recipe:"), std::string::npos) << yaml;
    EXPECT_NE(yaml.find("model.layers.4.mlp.down_proj.weight: "), std::string::npos) << yaml;
    // 40 positions: the MIL interpreter sums its convolutions in another order
    // than the CPU's matrix products, and soon after, this recipe meets a near
    // tie ("thou|ght" against "thou|nd"; both paths quantize every weight alike).
    expect_same_greedy_text(model + " --quant auto:bpw=5" + calibrated, mixed, 40);

    const auto refused = test::run_anelm("convert " + model + " -o " + shell_word(work / "no") +
                                         " --quant lut4" + calibrated);
    EXPECT_EQ(refused.exit_code, 1);
    EXPECT_NE(refused.err.find("--quant lut4: convert takes auto:bpw=B or auto:kl=K"),
              std::string::npos)
        << refused.err;
    EXPECT_FALSE(fs::exists(work / "no"));
    const auto uncalibrated = test::run_anelm("quantize " + model + " --quant auto:bpw=5");
    EXPECT_EQ(uncalibrated.exit_code, 1);
    EXPECT_NE(uncalibrated.err.find("--quant auto:bpw=5: give --calib FILE"), std::string::npos)
        << uncalibrated.err;
    // A size below the narrowest widths is refused before calibrating (on an empty file).
    std::ofstream(work / "empty.txt").flush();
    for (const std::string command :
         {"quantize " + model, "convert " + model + " -o " + shell_word(work / "narrow")}) {
        const auto narrow = test::run_anelm(command + " --quant auto:bpw=2 --calib " +
                                            shell_word(work / "empty.txt"));
        EXPECT_EQ(narrow.exit_code, 1);
        EXPECT_NE(narrow.err.find("--quant auto:bpw=2: the narrowest widths take "),
                  std::string::npos)
            << narrow.err;
    }
    EXPECT_FALSE(fs::exists(work / "narrow"));
}

TEST(CliConvert, LutPackagesAreNamedAndRun) {
    const std::string model = tiny_model("tiny-qwen3");
    const fs::path out = test::temp_dir("cli-convert-lut") / "out";
    const auto r = test::run_anelm("convert " + shell_word(model) + " -o " + shell_word(out) +
                                   " --lut-ffn 4,8 --lut-head 6,8 --ctx 64");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(out / "qwen_FFN_PF_lut4_chunk_01of01.mlpackage"));
    EXPECT_TRUE(fs::exists(out / "qwen_lm_head_lut6.mlpackage"));
    EXPECT_TRUE(fs::exists(out / "qwen_embeddings.mlpackage"));
    const auto g =
        test::run_anelm("generate " + shell_word(out) + " -p " + prompt + " -n 40 --temp 0");
    ASSERT_EQ(g.exit_code, 0) << g.err;
    EXPECT_GT(g.out.size(), 40u);
    // bench times the folder on the interpreter: a padded prefill batch, then infer.
    const auto b = test::run_anelm("bench " + shell_word(out) + " -p 40 -n 8 -r 1 --json");
    ASSERT_EQ(b.exit_code, 0) << b.err;
    const auto j = nlohmann::json::parse(b.out);
    EXPECT_EQ(j.at("engine"), "mil");
    EXPECT_GT(j.at("pp_tok_s").get<double>(), 0);
    EXPECT_GT(j.at("tg_tok_s").get<double>(), 0);
    const auto too_long = test::run_anelm("bench " + shell_word(out) + " -p 65 -n 8 -r 1");
    EXPECT_EQ(too_long.exit_code, 1);
    EXPECT_NE(too_long.err.find("context of 64"), std::string::npos) << too_long.err;
}

// tiny-qwen3 widened to 128 inputs per product (n_embd, heads, n_ff 256), so
// that its LUT weights take integer dot products (whole blocks of 128): the
// folder runs them as the CPU does at each --quant-dot, token for token.
TEST(CliConvert, LutFolderMultipliesAsTheCpuAtEachQuantDot) {
    const fs::path work = test::temp_dir("cli-convert-quant-dot");
    SynthPreset preset = synth_preset("tiny-qwen3");
    preset.spec.n_embd = 128;
    preset.spec.head_dim = 32;
    preset.spec.n_ff = 256;
    SynthOptions options;
    options.seed = 5;
    synth_write(preset, (work / "model").string(), options);
    const std::string model = shell_word(work / "model");
    const fs::path out = work / "out";
    const auto r = test::run_anelm("convert " + model + " -o " + shell_word(out) +
                                   " --lut-ffn 4,8 --lut-head 6,8 --chunks 2 --ctx 96 --batch 16");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const char* dot : {"int8", "exact"}) {
        SCOPED_TRACE(dot);
        const std::string quant_dot = std::string(" --quant-dot ") + dot;
        expect_same_greedy_text(model + " --quant ffn=4:8,head=6:8" + quant_dot, out, 64,
                                quant_dot);
    }
}

// tiny-qwen2's 648 ids in 16 pieces of ceil(648 / 16) = 41 rows would split
// its LUT groups of 8: the pieces get 48 rows instead, 14 of them.
TEST(CliConvert, LutHeadPiecesStartWholeGroups) {
    const std::string model = tiny_model("tiny-qwen2");
    const fs::path out = test::temp_dir("cli-convert-lut-groups") / "out";
    const auto r = test::run_anelm("convert " + shell_word(model) + " -o " + shell_word(out) +
                                   " --lut-ffn 4,8 --lut-head 4,8 --ctx 64 --batch 16 -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto info = test::run_anelm("info " + shell_word(out) + " --json");
    ASSERT_EQ(info.exit_code, 0) << info.err;
    const auto j = nlohmann::json::parse(info.out);
    EXPECT_EQ(j["lm_head_chunk_sizes"].size(), 14u) << info.out;
    const auto g =
        test::run_anelm("generate " + shell_word(out) + " -p " + prompt + " -n 40 --temp 0");
    ASSERT_EQ(g.exit_code, 0) << g.err;
}

// --chunks auto: the fewest chunks whose weights fit --max-chunk-mb; one
// layer that does not fit is an error.
TEST(CliConvert, AutoChunksFitTheLimit) {
    const std::string model = tiny_model("tiny-llama");
    const fs::path dir = test::temp_dir("cli-convert-auto");
    const auto one = test::run_anelm("convert " + shell_word(model) + " -o " +
                                     shell_word(dir / "one") + " --lut-ffn none --lut-head none");
    ASSERT_EQ(one.exit_code, 0) << one.err;
    EXPECT_TRUE(fs::exists(dir / "one" / "llama_FFN_PF_chunk_01of01.mlpackage"));
    // A limit of one and a half layers' fp16 weights: one layer per chunk.
    const auto info = test::run_anelm("info " + shell_word(model) + " --json");
    ASSERT_EQ(info.exit_code, 0) << info.err;
    const auto j = nlohmann::json::parse(info.out);
    const int64_t n_layer = j["n_layer"], n_embd = j["n_embd"], n_ff = j["n_ff"];
    const int64_t q = j["n_head"].get<int64_t>() * j["head_dim"].get<int64_t>();
    const int64_t kv = j["n_head_kv"].get<int64_t>() * j["head_dim"].get<int64_t>();
    const int64_t layer_bytes = 2 * (n_embd * (2 * q + 2 * kv) + 3 * n_embd * n_ff + 2 * n_embd);
    const double limit_mb = 1.5 * static_cast<double>(layer_bytes) / (1024 * 1024);
    const auto many = test::run_anelm(
        "convert " + shell_word(model) + " -o " + shell_word(dir / "many") +
        " --lut-ffn none --lut-head none " + fmt::format("--max-chunk-mb {}", limit_mb));
    ASSERT_EQ(many.exit_code, 0) << many.err;
    EXPECT_TRUE(
        fs::exists(dir / "many" /
                   fmt::format("llama_FFN_PF_chunk_{:02d}of{:02d}.mlpackage", n_layer, n_layer)));
    const auto none = test::run_anelm("convert " + shell_word(model) + " -o " +
                                      shell_word(dir / "none") + " --max-chunk-mb 0.001");
    EXPECT_EQ(none.exit_code, 1);
    EXPECT_FALSE(fs::exists(dir / "none"));
}

TEST(CliConvert, BadInputIsOneLineAndWritesNothing) {
    const std::string model = tiny_model("tiny-llama");
    const fs::path dir = test::temp_dir("cli-convert-bad");
    const fs::path out = dir / "out";
    for (const std::string& bad :
         {std::string("--lut-ffn 5"), std::string("--chunks 0"), std::string("--chunks 9"),
          std::string("--fp16-scale 0.3"), std::string("--verify 1")}) {
        SCOPED_TRACE(bad);
        const auto r =
            test::run_anelm("convert " + shell_word(model) + " -o " + shell_word(out) + " " + bad);
        EXPECT_EQ(r.exit_code, 1);
        EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
        EXPECT_TRUE(fs::is_empty(dir)) << "something was written";
    }
    fs::create_directories(out);
    const auto r = test::run_anelm("convert " + shell_word(model) + " -o " + shell_word(out));
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
}

// Gemma 4's per-layer table: beside the packages at 16 bits (meta.yaml names
// it; the folder runs the source's tokens), or inside the embeddings; any
// other choice is one line and writes nothing.
TEST(CliConvert, Gemma4PerLayerTableBesideOrInside) {
    const std::string model = tiny_model("tiny-gemma4");
    const fs::path dir = test::temp_dir("cli-convert-gemma4");
    const std::string common = " --lut-ffn none --lut-head none --chunks 2 --ctx 96 --batch 16";
    const fs::path beside = dir / "beside";
    auto r = test::run_anelm("convert " + shell_word(model) + " -o " + shell_word(beside) + common +
                             " --per-layer-table 16");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_TRUE(fs::exists(beside / "gemma4_per_layer_embeddings_f16.bin"));
    std::ifstream meta(beside / "meta.yaml");
    const std::string text((std::istreambuf_iterator<char>(meta)), {});
    EXPECT_NE(text.find("per_layer_table: gemma4_per_layer_embeddings_f16.bin"), std::string::npos);
    expect_same_greedy_text(shell_word(model), beside, 40);

    const fs::path inside = dir / "inside";
    r = test::run_anelm("convert " + shell_word(model) + " -o " + shell_word(inside) + common +
                        " --per-layer-table package");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const auto& entry : fs::directory_iterator(inside))
        EXPECT_NE(entry.path().extension(), ".bin") << entry.path();
    expect_same_greedy_text(shell_word(model), inside, 40);

    const fs::path bad = dir / "bad";
    r = test::run_anelm("convert " + shell_word(model) + " -o " + shell_word(bad) + common +
                        " --per-layer-table 4");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("--per-layer-table"), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(bad));
}

// info counts the cache of the layers that compute K/V only: tiny-gemma4's
// layers 0 and 2 (2 x 2 heads x 16) and 1 (2 x 2 x 32), not the sharing 3-5.
TEST(CliInfo, Gemma4KvBytesCountOnlyLayersThatComputeKv) {
    const std::string model = tiny_model("tiny-gemma4");
    const auto json = test::run_anelm("info " + shell_word(model) + " --json");
    ASSERT_EQ(json.exit_code, 0) << json.err;
    const auto j = nlohmann::json::parse(json.out);
    EXPECT_EQ(j["kv_bytes_per_position"], 2 * (2 * 64 + 128));
    // int8 rows of 16 and 32 bytes with a 4-byte scale each: 2 layers x 4 rows of
    // 20 and 1 x 4 of 36; k16v8 keeps the keys' 2 x 2 rows of 32 and 2 of 64 bytes.
    EXPECT_EQ(j["kv_bytes_per_position_q8"], 2 * 4 * 20 + 4 * 36);
    EXPECT_EQ(j["kv_bytes_per_position_k16v8"], 2 * (2 * 32 + 2 * 20) + 2 * 64 + 2 * 36);
    EXPECT_EQ(j["n_kv_shared_layers"], 3);
    EXPECT_EQ(j["global_head_dim"], 32);
    const auto text = test::run_anelm("info " + shell_word(model));
    EXPECT_NE(text.out.find("layers         sfsFSF"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("4 of 16 frequencies turn"), std::string::npos) << text.out;
    EXPECT_NE(text.out.find("0.5 KiB per position"), std::string::npos) << text.out;
}

// Sets element 0 of a bf16 tensor of a safetensors file to `value`, in place.
void set_first_bf16(const fs::path& file, const std::string& tensor, float value) {
    std::fstream f(file, std::ios::in | std::ios::out | std::ios::binary);
    ASSERT_TRUE(f) << file;
    uint64_t header_bytes = 0;
    f.read(reinterpret_cast<char*>(&header_bytes), 8);
    std::string header(header_bytes, '\0');
    f.read(header.data(), static_cast<std::streamsize>(header_bytes));
    const auto j = nlohmann::json::parse(header);
    ASSERT_TRUE(j.contains(tensor)) << tensor;
    ASSERT_EQ(j[tensor]["dtype"], "BF16");
    const uint64_t at = 8 + header_bytes + j[tensor]["data_offsets"][0].get<uint64_t>();
    const uint16_t bits = f32_to_bf16(value);
    f.seekp(static_cast<std::streamoff>(at));
    f.write(reinterpret_cast<const char*>(&bits), 2);
    ASSERT_TRUE(f);
}

// A Gemma norm gain above half precision's range (legal in bf16) on a branch
// that feeds the residual stream: scaled by 1/16 it is in range. The CPU's ane
// precision folds the scale before rounding, as convert does, so both give the
// same greedy text (rounding the gain first made it inf on the CPU only).
TEST(CliConvert, ScaledGainAboveHalfRangeGivesTheSameTokens) {
    const fs::path dir = test::temp_dir("cli-convert-gain");
    const fs::path model = dir / "model";
    synth_write("tiny-gemma3", model.string(), DType::bf16, 11);
    set_first_bf16(model / "model.safetensors", "model.layers.0.post_feedforward_layernorm.weight",
                   100000.0f);
    const fs::path out = dir / "out";
    const auto r = test::run_anelm("convert " + shell_word(model) + " -o " + shell_word(out) +
                                   " --lut-ffn none --lut-head none --chunks 2 --ctx 96 "
                                   "--batch 16 --fp16-scale 0.0625 -t 2");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const auto original = test::run_anelm("generate " + shell_word(model) + " -p " + prompt +
                                          " -n 48 --temp 0 --precision ane --fp16-scale 0.0625");
    ASSERT_EQ(original.exit_code, 0) << original.err;
    const auto converted = test::run_anelm("generate " + shell_word(out) + " -p " + prompt +
                                           " -n 48 --temp 0 --precision ane");
    ASSERT_EQ(converted.exit_code, 0) << converted.err;
    EXPECT_EQ(converted.out, original.out);
}

}  // namespace
}  // namespace anelm
