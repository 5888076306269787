// Every coremltools sample package compiles and runs; where the sample's
// result can be worked out by hand (the KV-cache update, the two functions
// sharing a cache, int4 dequantization) it is checked against that.
#include <gtest/gtest.h>

#include <cmath>

#include "base/half.h"
#include "coreml/package.h"
#include "exec/mil/function.h"
#include "mil_program.h"
#include "test_support.h"

namespace anelm::milexec::test {
namespace {

std::string sample(const std::string& name) {
    return "coreml-samples/" + name + ".mlpackage";
}

// Deterministic inputs: fp16-exact ramps, integers that index a 50-row table.
std::map<std::string, Tensor> inputs_for(const Function& f) {
    std::map<std::string, Tensor> in;
    for (const TensorSpec& s : f.inputs()) {
        Tensor t = make_tensor(s.dtype, s.shape);
        if (is_float_type(s.dtype))
            t.f = ramp(t.numel(), 0.0625f);
        else
            for (int64_t k = 0; k < t.numel(); ++k) t.i[k] = static_cast<int32_t>(k * 7 % 16);
        in[s.name] = t;
    }
    return in;
}

TEST(MilSamples, EveryFunctionRuns) {
    for (const char* name : {"kv_state", "palettized", "blockwise_int4", "kitchen_sink",
                             "multifunction", "affine_ios16"}) {
        ANELM_REQUIRE_SHARED(sample(name));
        SCOPED_TRACE(name);
        const coreml::Package pkg(anelm::test::shared_path(sample(name)));
        States states;
        for (const auto& [fn_name, fn] : pkg.model().mlprogram().functions()) {
            const Function f(pkg.model().mlprogram(), fn_name, pkg);
            const auto out = f.run(inputs_for(f), states);
            ASSERT_EQ(out.size(), f.outputs().size());
            for (const TensorSpec& spec : f.outputs()) {
                const Tensor& t = out.at(spec.name);
                EXPECT_EQ(t.shape, spec.shape) << spec.name;
                for (float v : t.f) EXPECT_TRUE(std::isfinite(v)) << spec.name;
            }
        }
    }
}

TEST(MilSamples, KvStateWritesTheCacheAndAttendsOverIt) {
    ANELM_REQUIRE_SHARED(sample("kv_state"));
    const coreml::Package pkg(anelm::test::shared_path(sample("kv_state")));
    const Function f(pkg.model().mlprogram(), "main", pkg);
    States states;
    const std::vector<float> q = ramp(16, 0.125f), k = ramp(16, 0.0625f);
    const int pos = 5;
    const auto out = f.run({{"q", floats(mil::FLOAT16, {1, 2, 1, 8}, q)},
                            {"k_new", floats(mil::FLOAT16, {1, 2, 1, 8}, k)},
                            {"pos", ints({1}, {pos})}},
                           states);
    const Tensor& cache = states.at("k_cache");  // [1, 2, 16, 8]
    for (int h = 0; h < 2; ++h)
        for (int t = 0; t < 16; ++t)
            for (int d = 0; d < 8; ++d)
                EXPECT_EQ(cache.f[(h * 16 + t) * 8 + d], t == pos ? k[h * 8 + d] : 0.0f);
    // Keys and values are the cache: 15 zero rows and k_new at pos.
    for (int h = 0; h < 2; ++h) {
        double dot = 0.0;
        for (int d = 0; d < 8; ++d) dot += q[h * 8 + d] * k[h * 8 + d];
        const double e = std::exp(dot / std::sqrt(8.0));
        const double w = e / (e + 15.0);
        for (int d = 0; d < 8; ++d)
            EXPECT_NEAR(out.at("attn").f[h * 8 + d], w * k[h * 8 + d], 2e-3);
    }
}

TEST(MilSamples, PrefillAndDecodeShareOneCache) {
    ANELM_REQUIRE_SHARED(sample("multifunction"));
    const coreml::Package pkg(anelm::test::shared_path(sample("multifunction")));
    const Function prefill(pkg.model().mlprogram(), "prefill", pkg);
    const Function decode(pkg.model().mlprogram(), "decode", pkg);
    States states;
    const std::vector<float> xp = ramp(32, 0.125f), xd = ramp(8, 0.25f);
    const auto yp = prefill.run({{"x", floats(mil::FLOAT16, {1, 2, 4, 4}, xp)}}, states);
    // prefill writes rows 0..3 of the [1, 2, 8, 4] cache; y sums the rows.
    for (int h = 0; h < 2; ++h)
        for (int d = 0; d < 4; ++d) {
            float sum = 0;
            for (int t = 0; t < 4; ++t) sum += xp[(h * 4 + t) * 4 + d];
            EXPECT_FLOAT_EQ(yp.at("y").f[h * 4 + d], round_to_f16(sum));
        }
    // decode overwrites row 0 only; rows 1..3 keep what prefill wrote.
    const auto yd = decode.run({{"x", floats(mil::FLOAT16, {1, 2, 1, 4}, xd)}}, states);
    for (int h = 0; h < 2; ++h)
        for (int d = 0; d < 4; ++d) {
            float sum = xd[h * 4 + d];
            for (int t = 1; t < 4; ++t) sum += xp[(h * 4 + t) * 4 + d];
            EXPECT_NEAR(yd.at("y").f[h * 4 + d], sum, 4e-3);
        }
}

TEST(MilSamples, BlockwiseInt4MatchesHandDequantization) {
    ANELM_REQUIRE_SHARED(sample("blockwise_int4"));
    const coreml::Package pkg(anelm::test::shared_path(sample("blockwise_int4")));
    const mil::Program& program = pkg.model().mlprogram();
    const Function f(program, "main", pkg, Rounding::none);
    // Read the int4 codes, the [32, 2] scales and the bias straight from the package.
    const auto& ops =
        program.functions().at("main").block_specializations().at("CoreML8").operations();
    const coreml::Blob data = pkg.blob(ops[0].inputs().at("data").arguments(0).value());
    const coreml::Blob scale = pkg.blob(ops[0].inputs().at("scale").arguments(0).value());
    const coreml::Blob bias = pkg.blob(ops[1].attributes().at("val"));
    auto half_at = [](const coreml::Blob& b, int k) {
        return f16_to_f32(static_cast<uint16_t>(b.data[2 * k] | b.data[2 * k + 1] << 8));
    };
    std::vector<float> w(32 * 64);
    for (int k = 0; k < 32 * 64; ++k) {
        int code = (data.data[k / 2] >> (k % 2 * 4)) & 15;
        if (code >= 8) code -= 16;
        const int row = k / 64, block = k % 64 / 32;
        w[k] = round_to_f16(half_at(scale, row * 2 + block) * static_cast<float>(code));
    }
    States states;
    const std::vector<float> x = ramp(4 * 64, 0.0625f);
    const auto out = f.run({{"x", floats(mil::FLOAT16, {1, 4, 64}, x)}}, states);
    for (int t = 0; t < 4; ++t)
        for (int o = 0; o < 32; ++o) {
            double acc = half_at(bias, o);
            for (int i = 0; i < 64; ++i) acc += x[t * 64 + i] * w[o * 64 + i];
            EXPECT_NEAR(out.at("linear_q4").f[t * 32 + o], acc,
                        1e-3 * std::max(1.0, std::fabs(acc)));
        }
}

// The kitchen sink computes attention twice, once with scaled_dot_product_attention
// and once with matmul, real_div, add and softmax: both must agree.
TEST(MilSamples, KitchenSinkAttentionPathsAgree) {
    ANELM_REQUIRE_SHARED(sample("kitchen_sink"));
    const coreml::Package pkg(anelm::test::shared_path(sample("kitchen_sink")));
    mil::Program program = pkg.model().mlprogram();
    mil::Block& block =
        (*program.mutable_functions())["main"].mutable_block_specializations()->at("CoreML8");
    block.add_outputs("sdpa");
    block.add_outputs("ctx");
    const Function f(program, "main", pkg, Rounding::none);
    States states;
    const auto out = f.run(inputs_for(f), states);
    const Tensor& a = out.at("sdpa");
    const Tensor& b = out.at("ctx");
    ASSERT_EQ(a.shape, b.shape);
    // The manual path divides by sqrt(8) rounded to fp16.
    for (size_t k = 0; k < a.f.size(); ++k) EXPECT_NEAR(a.f[k], b.f[k], 2e-3) << k;
}

TEST(MilSamples, ThreadsGiveTheSameResults) {
    ANELM_REQUIRE_SHARED(sample("kitchen_sink"));
    const coreml::Package pkg(anelm::test::shared_path(sample("kitchen_sink")));
    ThreadPool pool(3);
    const Function one(pkg.model().mlprogram(), "main", pkg);
    const Function three(pkg.model().mlprogram(), "main", pkg, Rounding::f16, &pool);
    States s1, s3;
    const auto a = one.run(inputs_for(one), s1);
    const auto b = three.run(inputs_for(three), s3);
    for (const auto& [name, t] : a) {
        EXPECT_EQ(t.f, b.at(name).f) << name;
        EXPECT_EQ(t.i, b.at(name).i) << name;
    }
    EXPECT_EQ(s1.at("kv").f, s3.at("kv").f);
}

}  // namespace
}  // namespace anelm::milexec::test
