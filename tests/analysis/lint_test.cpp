// Each lint rule fires on a small package built to break it, pointing at the
// op that breaks it, and stays quiet on the same package built correctly;
// lint finds no errors or warnings in the ANE lowering of the tiny models.
#include "analysis/lint.h"
#include "analysis/lint_checks.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "anemll/anemll_layout.h"
#include "base/thread_pool.h"
#include "coreml/mil_builder.h"
#include "exec/tiny_model.h"
#include "lower/ane_lowering.h"
#include "models/models.h"
#include "passes/rope_halves.h"
#include "quant/quantize_program.h"

namespace anelm {
namespace {

namespace mil = coreml::mil;
namespace spec = coreml::spec;
using coreml::MilBuilder;
using coreml::MilInput;
using coreml::MilParam;
using coreml::MilValue;

// A one-or-more-function ML Program built in the test.
struct TestPackage {
    spec::Model model;
    coreml::BlobSet blobs;
    uint64_t weight_file_bytes = 0;
    int chunk_no = 0, n_chunks = 0;

    TestPackage() {
        model.set_specificationversion(9);
        model.mutable_mlprogram()->set_version(1);
    }
    mil::Function& function(const std::string& name) {
        mil::Function& fn = (*model.mutable_mlprogram()->mutable_functions())[name];
        if (fn.opset().empty()) {
            fn.set_opset("CoreML8");
            (*fn.mutable_block_specializations())["CoreML8"];
        }
        return fn;
    }
    MilBuilder builder(const std::string& name = "main") {
        return MilBuilder((*function(name).mutable_block_specializations())["CoreML8"], blobs);
    }
    MilValue input(const MilValue& v, const std::string& fn = "main") {
        mil::NamedValueType& in = *function(fn).add_inputs();
        in.set_name(v.name);
        *in.mutable_type() = coreml::tensor_value_type(v.dtype, v.shape);
        return v;
    }
    MilValue state(const std::string& name, std::vector<int64_t> shape,
                   const std::string& fn = "main") {
        mil::NamedValueType& in = *function(fn).add_inputs();
        in.set_name(name);
        *in.mutable_type()->mutable_statetype()->mutable_wrappedtype() =
            coreml::tensor_value_type(mil::FLOAT16, shape);
        return MilValue{name, mil::FLOAT16, std::move(shape)};
    }
    std::vector<LintFinding> lint(LintTarget target = LintTarget::macos15) const {
        return lint_package(
            {"test.mlpackage", &model, &blobs, weight_file_bytes, chunk_no, n_chunks}, target);
    }
};

// A literal value of a type only: enough for rules that read shapes.
mil::Value typed(mil::DataType dtype, const std::vector<int64_t>& shape) {
    mil::Value v;
    *v.mutable_type() = coreml::tensor_value_type(dtype, shape);
    v.mutable_immediatevalue()->mutable_tensor();
    return v;
}

int count(const std::vector<LintFinding>& findings, std::string_view id) {
    int n = 0;
    for (const LintFinding& f : findings) n += f.rule->id == id;
    return n;
}

// The finding of rule `id`, which must be the only one of its rule.
LintFinding only(const std::vector<LintFinding>& findings, std::string_view id) {
    const LintFinding* found = nullptr;
    for (const LintFinding& f : findings)
        if (f.rule->id == id) {
            EXPECT_EQ(found, nullptr) << "two findings of " << id;
            found = &f;
        }
    if (found == nullptr) {
        ADD_FAILURE() << "no finding of " << id;
        LintFinding none;
        none.rule = &lint_rule(id);
        return none;
    }
    return *found;
}

const MilValue x16{"x", mil::FLOAT16, {1, 64, 1, 1}};

TEST(Lint, CatalogHasIdsSeveritiesFixesAndFacts) {
    std::string last;
    for (const LintRule& r : lint_rules()) {
        EXPECT_GT(r.id, last);
        last = std::string(r.id);
        EXPECT_FALSE(r.title.empty());
        EXPECT_FALSE(r.fix.empty());
        EXPECT_TRUE(r.fact.find("ane-llm-notes.txt") != std::string_view::npos ||
                    r.fact.find("research/") != std::string_view::npos)
            << r.id;
    }
    EXPECT_EQ(lint_rules().size(), 19u);
}

TEST(Lint, StateDimensionNeitherPowerOfTwoNorMultipleOf32) {
    TestPackage bad;
    bad.state("kv_cache", {56, 2, 64, 80});  // 56 slots are fine; head_dim 80 is not
    const auto f = bad.lint();
    const LintFinding& s = only(f, "ANE001");
    EXPECT_EQ(s.function, "main");
    EXPECT_EQ(s.op, "kv_cache");
    EXPECT_EQ(s.severity, LintSeverity::error);
    EXPECT_NE(s.message.find("80"), std::string::npos);

    TestPackage good;
    good.state("kv_cache", {56, 2, 96, 128});  // 96 is a multiple of 32
    EXPECT_EQ(count(good.lint(), "ANE001"), 0);
}

TEST(Lint, NamesThatAreNotMilIdentifiers) {
    TestPackage bad;
    bad.state("model.model.kv_cache_0", {4, 2, 64, 64});
    bad.input({"2nd_input", mil::FLOAT16, {1, 64, 1, 1}});
    const auto f = bad.lint();
    EXPECT_EQ(count(f, "ANE016"), 2);
    const auto s = std::find_if(f.begin(), f.end(), [](const LintFinding& x) {
        return x.rule->id == "ANE016" && x.op == "model.model.kv_cache_0";
    });
    ASSERT_NE(s, f.end());
    EXPECT_EQ(s->severity, LintSeverity::error);
    EXPECT_EQ(s->function, "main");
    EXPECT_NE(s->message.find("state"), std::string::npos);

    TestPackage good;
    good.state("model_model_kv_cache_0", {4, 2, 64, 64});
    good.input({"x@1", mil::FLOAT16, {1, 64, 1, 1}});
    EXPECT_EQ(count(good.lint(), "ANE016"), 0);

    for (const char* name : {"a", "_", "A_b9@x", "kv_cache_0"})
        EXPECT_TRUE(lint::is_mil_identifier(name)) << name;
    for (const char* name : {"", "9a", "a.b", "a-b", "a b", "@a", "é"})
        EXPECT_FALSE(lint::is_mil_identifier(name)) << name;
}

TEST(Lint, MoreThanOneState) {
    TestPackage bad;
    for (const char* s : {"kv_cache", "conv_cache"}) bad.state(s, {2, 2, 64, 64});
    EXPECT_EQ(only(bad.lint(), "ANE002").op, "conv_cache");

    TestPackage good;
    good.state("kv_cache_0", {4, 2, 64, 64});
    EXPECT_EQ(count(good.lint(), "ANE002"), 0);
}

// A depthwise conv (a group per channel) reading palettized taps; the same
// taps in fp16, and a palettized 1x1 conv, are fine.
TEST(Lint, PalettizedDepthwiseConv) {
    auto build = [](bool lut, int64_t per_group) {
        TestPackage p;
        MilBuilder b = p.builder();
        const MilValue x = p.input({"x", mil::FLOAT16, {1, 64, 1, 8}});
        const std::vector<int64_t> shape{64, per_group, 1, per_group == 1 ? 3 : 1};
        const MilValue w =
            lut ? b.op_literal("constexpr_lut_to_dense", "taps",
                               {{"indices", typed(mil::UINT4, shape)},
                                {"lut", typed(mil::FLOAT16, {8, 1, 1, 1, 16, 1})}},
                               mil::FLOAT16, shape)
                : b.const_f16("taps", shape,
                              std::vector<float>(static_cast<size_t>(64 * per_group * shape[3])));
        b.op("conv", "conv",
             {{"x", x}, {"weight", w}, {"groups", MilParam::i32(per_group == 1 ? 64 : 1)}},
             mil::FLOAT16, {1, 64, 1, per_group == 1 ? 6 : 8});
        return p.lint();
    };
    const LintFinding f = only(build(true, 1), "ANE018");
    EXPECT_EQ(f.op, "conv");
    EXPECT_EQ(f.severity, LintSeverity::error);
    EXPECT_EQ(count(build(false, 1), "ANE018"), 0);
    EXPECT_EQ(count(build(true, 64), "ANE018"), 0);
}

TEST(Lint, PerBlockQuantization) {
    TestPackage p;
    MilBuilder b = p.builder();
    b.op_literal("constexpr_blockwise_shift_scale", "w_block",
                 {{"data", typed(mil::INT4, {64, 128})}, {"scale", typed(mil::FLOAT16, {64, 4})}},
                 mil::FLOAT16, {64, 128});
    b.op_literal("constexpr_blockwise_shift_scale", "w_channel",
                 {{"data", typed(mil::INT4, {64, 128})}, {"scale", typed(mil::FLOAT16, {64, 1})}},
                 mil::FLOAT16, {64, 128});
    const LintFinding& f = only(p.lint(), "ANE003");
    EXPECT_EQ(f.op, "w_block");
    EXPECT_NE(f.message.find("blocks of 32"), std::string::npos) << f.message;
}

TEST(Lint, Gelu) {
    TestPackage p;
    MilBuilder b = p.builder();
    b.output(b.op("gelu", "mlp_act", {{"x", p.input(x16)}}, mil::FLOAT16, x16.shape));
    EXPECT_EQ(only(p.lint(), "ANE004").op, "mlp_act");
}

TEST(Lint, AttentionWithAMask) {
    TestPackage p;
    MilBuilder b = p.builder();
    const MilValue q = p.input({"q", mil::FLOAT16, {1, 2, 4, 16}});
    const MilValue mask = p.input({"causal_mask", mil::FLOAT16, {1, 1, 4, 4}});
    b.op("scaled_dot_product_attention", "attn_masked",
         {{"query", q}, {"key", q}, {"value", q}, {"attn_mask", mask}}, mil::FLOAT16, q.shape);
    b.op("scaled_dot_product_attention", "attn_plain", {{"query", q}, {"key", q}, {"value", q}},
         mil::FLOAT16, q.shape);
    EXPECT_EQ(only(p.lint(), "ANE005").op, "attn_masked");
}

TEST(Lint, ConcatWiderThan32K) {
    TestPackage p;
    MilBuilder b = p.builder();
    const MilValue a = p.input({"logits_a", mil::FLOAT16, {1, 1, 20000}});
    b.op("concat", "logits_all",
         {{"values", std::vector<MilValue>{a, a}},
          {"axis", MilParam::i32(2)},
          {"interleave", MilParam::boolean(false)}},
         mil::FLOAT16, {1, 1, 40000});
    b.op("concat", "logits_half",
         {{"values", std::vector<MilValue>{a}},
          {"axis", MilParam::i32(2)},
          {"interleave", MilParam::boolean(false)}},
         mil::FLOAT16, {1, 1, 20000});
    EXPECT_EQ(only(p.lint(), "ANE006").op, "logits_all");
}

TEST(Lint, ConcatShiftingAState) {
    TestPackage p;
    MilBuilder b = p.builder();
    const MilValue cache = p.state("kv_cache", {2, 2, 64, 64});
    const MilValue kv = p.input({"new_kv", mil::FLOAT16, {2, 2, 1, 64}});
    const MilValue old =
        b.op("read_state", "cache_read", {{"input", cache}}, mil::FLOAT16, cache.shape);
    const MilValue tail = b.op("slice_by_index", "cache_tail",
                               {{"x", old},
                                {"begin", MilParam::i32s({0, 0, 1, 0})},
                                {"end", MilParam::i32s({2, 2, 64, 64})}},
                               mil::FLOAT16, {2, 2, 63, 64});
    const MilValue shifted = b.op("concat", "cache_shifted",
                                  {{"values", std::vector<MilValue>{tail, kv}},
                                   {"axis", MilParam::i32(2)},
                                   {"interleave", MilParam::boolean(false)}},
                                  mil::FLOAT16, cache.shape);
    b.op("write_state", "cache_write", {{"input", cache}, {"data", shifted}}, mil::FLOAT16, {});
    const LintFinding& f = only(p.lint(), "ANE006");
    EXPECT_EQ(f.op, "cache_shifted");
    EXPECT_EQ(f.severity, LintSeverity::warning);
}

TEST(Lint, ConvWith32KChannels) {
    TestPackage p;
    MilBuilder b = p.builder();
    const MilValue x = p.input({"hidden", mil::FLOAT16, {1, 64, 1, 1}});
    auto conv = [&](const std::string& name, int64_t out) {
        const MilValue w = b.op_literal("constexpr_lut_to_dense", name + "_weight",
                                        {{"indices", typed(mil::UINT4, {out, 64, 1, 1})},
                                         {"lut", typed(mil::FLOAT16, {out / 8, 1, 1, 1, 16, 1})}},
                                        mil::FLOAT16, {out, 64, 1, 1});
        b.op("conv", name, {{"x", x}, {"weight", w}}, mil::FLOAT16, {1, out, 1, 1});
    };
    conv("lm_head_full", 32768);
    conv("lm_head_piece", 16384);
    EXPECT_EQ(only(p.lint(), "ANE007").op, "lm_head_full");
}

TEST(Lint, Int64Tensors) {
    TestPackage p;
    MilBuilder b = p.builder();
    const MilValue pos = p.input({"position", mil::INT32, {1}});
    b.op("cast", "position_i64", {{"x", pos}, {"dtype", MilParam::string("int64")}}, mil::INT64,
         {1});
    p.input({"token_ids", mil::INT64, {1, 1}});
    const auto f = p.lint();
    EXPECT_EQ(count(f, "ANE008"), 2);
    bool op = false, input = false;
    for (const LintFinding& e : f) {
        op |= e.rule->id == "ANE008" && e.op == "position_i64";
        input |= e.rule->id == "ANE008" && e.op == "token_ids";
    }
    EXPECT_TRUE(op && input);
}

TEST(Lint, DynamicShapesUnlessEnumerated) {
    auto build = [](bool enumerated) {
        TestPackage p;
        MilBuilder b = p.builder();
        const MilValue ids = p.input({"input_ids", mil::INT32, {1, -1}});
        b.op("add", "ids_plus_one", {{"x", ids}, {"y", MilParam::i32(1)}}, mil::INT32, {1, -1});
        spec::FeatureDescription& f = *p.model.mutable_description()->add_input();
        f.set_name("input_ids");
        auto& a = *f.mutable_type()->mutable_multiarraytype();
        a.add_shape(1);
        a.add_shape(1);
        if (enumerated)
            for (int64_t t : {1, 64}) {
                auto& s = *a.mutable_enumeratedshapes()->add_shapes();
                s.add_shape(1);
                s.add_shape(t);
            }
        return p.lint();
    };
    const auto dynamic = build(false);
    EXPECT_EQ(count(dynamic, "ANE009"), 2);
    bool input = false, op = false;
    for (const LintFinding& e : dynamic) {
        input |= e.rule->id == "ANE009" && e.op == "input_ids";
        op |= e.rule->id == "ANE009" && e.op == "ids_plus_one";
    }
    EXPECT_TRUE(input && op);
    EXPECT_EQ(count(build(true), "ANE009"), 0);
}

TEST(Lint, WeightFileOverTheTargetsLimit) {
    TestPackage p;
    p.weight_file_bytes = uint64_t{3} << 29;  // 1.5 GiB
    const LintFinding& f = only(p.lint(LintTarget::ios18), "ANE010");
    EXPECT_EQ(f.op, "weights/weight.bin");
    EXPECT_NE(f.message.find("ios18"), std::string::npos);
    EXPECT_EQ(count(p.lint(LintTarget::macos15), "ANE010"), 0);
    p.weight_file_bytes = uint64_t{5} << 29;  // 2.5 GiB
    EXPECT_EQ(count(p.lint(LintTarget::macos15), "ANE010"), 1);
}

TEST(Lint, PowOnPossiblyNegativeInput) {
    TestPackage p;
    MilBuilder b = p.builder();
    const MilValue x = p.input(x16);
    b.op("pow", "norm_square", {{"x", x}, {"y", MilParam::fp16(2.0f)}}, mil::FLOAT16, x.shape);
    const MilValue a = b.op("abs", "x_abs", {{"x", x}}, mil::FLOAT16, x.shape);
    b.op("pow", "abs_root", {{"x", a}, {"y", MilParam::fp16(0.5f)}}, mil::FLOAT16, x.shape);
    const MilValue sq = b.op("mul", "x_sq", {{"x", x}, {"y", x}}, mil::FLOAT16, x.shape);
    b.op("pow", "sq_root", {{"x", sq}, {"y", MilParam::fp16(0.5f)}}, mil::FLOAT16, x.shape);
    const MilValue relu6 =
        b.op("clip", "x_relu6",
             {{"x", x}, {"alpha", MilParam::fp16(0.0f)}, {"beta", MilParam::fp16(6.0f)}},
             mil::FLOAT16, x.shape);
    b.op("pow", "relu6_cube", {{"x", relu6}, {"y", MilParam::fp16(3.0f)}}, mil::FLOAT16, x.shape);
    const LintFinding& f = only(p.lint(), "ANE011");
    EXPECT_EQ(f.op, "norm_square");
    EXPECT_NE(f.message.find("function input x"), std::string::npos) << f.message;
}

TEST(Lint, MasksFromTheLowestFiniteValue) {
    auto build = [](float fill, mil::DataType dtype) {
        TestPackage p;
        MilBuilder b = p.builder();
        const MilValue scores = p.input({"scores", dtype, {1, 1, 1, 4}});
        const std::vector<float> v{0, 0, fill, fill};
        MilValue mask;
        if (dtype == mil::FLOAT16) {
            mask = b.const_f16("causal_mask_const", {1, 1, 1, 4}, v);
        } else {
            mask = b.constant("causal_mask_const", mil::FLOAT32, {1, 1, 1, 4},
                              {reinterpret_cast<const uint8_t*>(v.data()), v.size() * 4});
        }
        b.op("add", "masked_scores", {{"x", scores}, {"y", mask}}, dtype, scores.shape);
        return p.lint();
    };
    EXPECT_EQ(only(build(std::numeric_limits<float>::lowest(), mil::FLOAT32), "ANE012").op,
              "causal_mask_const");
    EXPECT_EQ(count(build(-65504.0f, mil::FLOAT16), "ANE012"), 1);
    EXPECT_EQ(count(build(-std::numeric_limits<float>::infinity(), mil::FLOAT16), "ANE012"), 0);
    EXPECT_EQ(count(build(-1e4f, mil::FLOAT16), "ANE012"), 0);
}

TEST(Lint, FinalNormOutsideTheLastChunk) {
    auto build = [](int chunk_no, bool from_metadata) {
        TestPackage p;
        MilBuilder b = p.builder("infer");
        const MilValue x = p.input(x16, "infer");
        const MilValue ln = b.op("layer_norm", "output_norm_ln",
                                 {{"x", x}, {"axes", MilParam::i32s({1})}}, mil::FLOAT16, x.shape);
        const MilValue gain =
            b.const_f16("output_norm_gain", {1, 64, 1, 1}, std::vector<float>(64, 1.0f));
        b.output(b.op("mul", "output_norm", {{"x", ln}, {"y", gain}}, mil::FLOAT16, x.shape));
        if (from_metadata) {
            auto& user = *p.model.mutable_description()->mutable_metadata()->mutable_userdefined();
            user["com.anemll.chunk_no"] = std::to_string(chunk_no);
            user["com.anemll.num_chunks"] = "2";
        } else {
            p.chunk_no = chunk_no;
            p.n_chunks = 2;
        }
        return p.lint();
    };
    const LintFinding& f = only(build(1, false), "ANE013");
    EXPECT_EQ(f.function, "infer");
    EXPECT_EQ(f.op, "output_norm_ln");
    EXPECT_EQ(count(build(1, true), "ANE013"), 1);
    EXPECT_EQ(count(build(2, false), "ANE013"), 0);
    EXPECT_EQ(count(build(2, true), "ANE013"), 0);
}

TEST(Lint, LutOnAnEmbeddingGather) {
    TestPackage p;
    MilBuilder b = p.builder();
    const MilValue ids = p.input({"input_ids", mil::INT32, {1, 1}});
    const MilValue table = b.op_literal(
        "constexpr_lut_to_dense", "embed_tokens_weight",
        {{"indices", typed(mil::UINT4, {512, 64})}, {"lut", typed(mil::FLOAT16, {64, 1, 16, 1})}},
        mil::FLOAT16, {512, 64});
    b.op("gather", "embed_tokens", {{"x", table}, {"indices", ids}, {"axis", MilParam::i32(0)}},
         mil::FLOAT16, {1, 1, 64});
    const LintFinding& f = only(p.lint(), "ANE014");
    EXPECT_EQ(f.op, "embed_tokens");
    EXPECT_EQ(f.severity, LintSeverity::warning);
}

TEST(Lint, OpCountAndDispatchOverhead) {
    auto build = [](int n_ops) {
        TestPackage p;
        MilBuilder b = p.builder();
        MilValue v = p.input(x16);
        for (int i = 0; i < n_ops; ++i)
            v = b.op("relu", "relu_" + std::to_string(i), {{"x", v}}, mil::FLOAT16, x16.shape);
        b.output(v);
        return p.lint();
    };
    const LintFinding small = only(build(20), "ANE015");
    EXPECT_EQ(small.severity, LintSeverity::info);
    EXPECT_NE(small.message.find("20 ops"), std::string::npos) << small.message;
    EXPECT_NE(small.message.find("1.9 ms"), std::string::npos) << small.message;
    EXPECT_EQ(lint_exit_code(build(20)), 0);
    EXPECT_EQ(only(build(4000), "ANE015").severity, LintSeverity::info);
    const auto many = build(4001);
    EXPECT_EQ(only(many, "ANE015").severity, LintSeverity::warning);
    EXPECT_EQ(lint_exit_code(many), 3);
}

TEST(Lint, ExitCodes) {
    TestPackage p;
    EXPECT_EQ(lint_exit_code(p.lint()), 0);
    MilBuilder b = p.builder();
    b.op("gelu", "act", {{"x", p.input(x16)}}, mil::FLOAT16, x16.shape);
    EXPECT_EQ(lint_exit_code(p.lint()), 1);
}

// The tiny models lowered as convert lowers them (LUT4 layers, LUT6 head,
// two chunks): no errors, no warnings.
class LintLowered : public testing::TestWithParam<const char*> {};

TEST_P(LintLowered, ConvertsOwnOutputIsClean) {
    const LoadedModel& m = test::tiny_model(GetParam());
    ProgramOptions po;
    po.n_ctx = 64;
    po.functions = {{"decode", 1, false}};
    ir::Program program = build_program(m.spec, m.weights, po);
    passes::rope_halves(program);
    quant::QuantSpec q;
    q.ffn = {quant::QuantMethod::lut, 4, 8};
    q.head = {quant::QuantMethod::lut, 6, 8};
    q.min_elements = 0;
    ThreadPool pool(2);
    quant::quantize_program(program, q, pool, {});

    lower::AneOptions options;
    options.batch = 16;
    std::vector<std::pair<std::string, lower::AnePackage>> packages;
    packages.emplace_back("embeddings", lower::lower_embeddings(program, options));
    const auto ranges = anemll::layer_ranges(lower::layer_count(program), 2);
    for (const auto& r : ranges)
        packages.emplace_back("chunk", lower::lower_chunk(program, r.begin, r.end, options));
    packages.emplace_back(
        "lm_head",
        lower::lower_lm_head(program, anemll::lm_head_chunk_sizes(m.spec.n_vocab, 16), options));
    int chunk = 0;
    for (const auto& [role, pkg] : packages) {
        const bool is_chunk = role == "chunk";
        chunk += is_chunk;
        const LintPackage lp{role,
                             &pkg.model,
                             &pkg.blobs(),
                             pkg.blobs().file_bytes(),
                             is_chunk ? chunk : 0,
                             is_chunk ? 2 : 0};
        const auto findings = lint_package(lp, LintTarget::ios18);
        for (const LintFinding& f : findings)
            EXPECT_EQ(f.severity, LintSeverity::info)
                << f.rule->id << " " << f.package << ":" << f.function << ":" << f.op << " "
                << f.message;
        EXPECT_GE(count(findings, "ANE015"), 1) << role;
    }
}

// The chunk holding the last layer applies the final norm in infer; placed
// before another chunk, that is the multi-chunk bug the notes describe.
TEST(LintChunks, LastChunkPlacedFirstIsFlagged) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    ProgramOptions po;
    po.n_ctx = 64;
    po.functions = {{"decode", 1, false}};
    ir::Program program = build_program(m.spec, m.weights, po);
    passes::rope_halves(program);
    const int64_t n_layer = lower::layer_count(program);
    const lower::AnePackage last = lower::lower_chunk(program, 0, n_layer, {});
    const LintPackage as_first{"chunk", &last.model, &last.blobs(), 0, 1, 2};
    const LintFinding f = only(lint_package(as_first, LintTarget::macos15), "ANE013");
    EXPECT_EQ(f.function, "infer");  // prefill skips the final norm
    EXPECT_EQ(f.op, "output_norm_ln");
    const LintPackage as_last{"chunk", &last.model, &last.blobs(), 0, 2, 2};
    EXPECT_EQ(count(lint_package(as_last, LintTarget::macos15), "ANE013"), 0);
}

INSTANTIATE_TEST_SUITE_P(Tiny, LintLowered,
                         testing::Values("tiny-llama", "tiny-qwen3", "tiny-gemma3"));

}  // namespace
}  // namespace anelm
