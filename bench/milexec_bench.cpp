// The MIL interpreter on one decoder layer in the Neural Engine layout
// ([1, C, 1, T], 1x1 conv projections, a KV cache state updated in place,
// scaled_dot_product_attention over the cache) with Qwen3-0.6B's widths and a
// 512-token cache, two threads: decode (T = 1, GB/s of fp16 weights read) and
// a 64-token prefill (GFLOP/s).
#include <benchmark/benchmark.h>

#include <cmath>
#include <random>

#include "coreml/mil_builder.h"
#include "exec/mil/function.h"

namespace anelm::milexec {
namespace {

using coreml::MilParam;
using coreml::MilValue;

constexpr int64_t d_model = 1024, n_head = 16, head_dim = 128, n_ff = 3072, n_ctx = 512;

struct Layer {
    mil::Program program;
    coreml::BlobSet blobs;
    int64_t weight_elements = 0;
};

// y = x + attention(rms(x)); y + mlp(y), fp16 throughout.
void build_layer(Layer& layer, int64_t t) {
    layer.program.set_version(1);
    mil::Function& fn = (*layer.program.mutable_functions())["main"];
    fn.set_opset("CoreML8");
    auto input = [&](const std::string& name, mil::DataType dtype, std::vector<int64_t> shape,
                     bool state) {
        mil::NamedValueType& in = *fn.add_inputs();
        in.set_name(name);
        mil::ValueType type = coreml::tensor_value_type(dtype, shape);
        if (state)
            *in.mutable_type()->mutable_statetype()->mutable_wrappedtype() = type;
        else
            *in.mutable_type() = type;
        return MilValue{name, dtype, shape};
    };
    coreml::MilBuilder b((*fn.mutable_block_specializations())["CoreML8"], layer.blobs);
    const auto f16 = mil::FLOAT16;
    const MilValue x = input("x", f16, {1, d_model, 1, t}, false);
    const MilValue pos = input("pos", mil::INT32, {1}, false);
    const MilValue mask = input("mask", f16, {1, 1, t, n_ctx}, false);
    const std::vector<int64_t> cache_shape = {1, n_head, n_ctx, head_dim};
    const MilValue k_cache = input("k_cache", f16, cache_shape, true);
    const MilValue v_cache = input("v_cache", f16, cache_shape, true);
    std::mt19937 rng(1);
    std::normal_distribution<float> dist(0.0f, 0.02f);
    auto conv = [&](const std::string& name, const MilValue& in, int64_t n_out, int64_t n_in) {
        std::vector<float> w(static_cast<size_t>(n_out * n_in));
        for (float& v : w) v = dist(rng);
        layer.weight_elements += n_out * n_in;
        const MilValue weight = b.const_f16(name + "_w", {n_out, n_in, 1, 1}, w);
        return b.op("conv", name, {{"x", in}, {"weight", weight}}, f16, {1, n_out, 1, t});
    };
    const MilValue sq = b.op("mul", "sq", {{"x", x}, {"y", x}}, f16, {1, d_model, 1, t});
    const MilValue ms =
        b.op("reduce_mean", "ms",
             {{"x", sq}, {"axes", MilParam::i32s({1})}, {"keep_dims", MilParam::boolean(true)}},
             f16, {1, 1, 1, t});
    const MilValue rs =
        b.op("rsqrt", "rs", {{"x", ms}, {"epsilon", MilParam::fp16(1e-5f)}}, f16, {1, 1, 1, t});
    const MilValue h = b.op("mul", "h", {{"x", x}, {"y", rs}}, f16, {1, d_model, 1, t});
    auto heads = [&](const std::string& name) {  // [1, H * D, 1, T] → [1, H, T, D]
        const MilValue p = conv(name, h, n_head * head_dim, d_model);
        const MilValue r =
            b.op("reshape", name + "_r",
                 {{"x", p}, {"shape", MilParam::i32s({1, n_head, head_dim, (int)t})}}, f16,
                 {1, n_head, head_dim, t});
        return b.op("transpose", name + "_t", {{"x", r}, {"perm", MilParam::i32s({0, 1, 3, 2})}},
                    f16, {1, n_head, t, head_dim});
    };
    const MilValue q = heads("q"), k = heads("k"), v = heads("v");
    const MilValue begin = b.op(
        "concat", "begin",
        {{"values",
          std::vector<MilValue>{b.const_i32("b01", {2}, {0, 0}), pos, b.const_i32("b3", {1}, {0})}},
         {"axis", MilParam::i32(0)}},
        mil::INT32, {4});
    const MilValue end =
        b.op("add", "end", {{"x", begin}, {"y", MilParam::i32s({1, n_head, (int)t, head_dim})}},
             mil::INT32, {4});
    auto update = [&](const std::string& name, const MilValue& cache, const MilValue& value) {
        const MilValue r = b.op("read_state", name + "_read", {{"input", cache}}, f16, cache_shape);
        const MilValue u =
            b.op("slice_update", name + "_upd",
                 {{"x", r}, {"update", value}, {"begin", begin}, {"end", end}}, f16, cache_shape);
        b.op_multi("write_state", name + "_write", {{"input", cache}, {"data", u}}, {});
        return b.op("read_state", name + "_all", {{"input", cache}}, f16, cache_shape);
    };
    const MilValue keys = update("k", k_cache, k), values = update("v", v_cache, v);
    const MilValue att = b.op("scaled_dot_product_attention", "att",
                              {{"query", q}, {"key", keys}, {"value", values}, {"attn_mask", mask}},
                              f16, {1, n_head, t, head_dim});
    const MilValue att_t =
        b.op("transpose", "att_t", {{"x", att}, {"perm", MilParam::i32s({0, 1, 3, 2})}}, f16,
             {1, n_head, head_dim, t});
    const MilValue att_r =
        b.op("reshape", "att_r",
             {{"x", att_t}, {"shape", MilParam::i32s({1, n_head * head_dim, 1, (int)t})}}, f16,
             {1, n_head * head_dim, 1, t});
    const MilValue h1 =
        b.op("add", "h1", {{"x", x}, {"y", conv("o", att_r, d_model, n_head * head_dim)}}, f16,
             {1, d_model, 1, t});
    const MilValue gate = conv("gate", h1, n_ff, d_model), up = conv("up", h1, n_ff, d_model);
    const MilValue act = b.op("silu", "act", {{"x", gate}}, f16, {1, n_ff, 1, t});
    const MilValue gu = b.op("mul", "gu", {{"x", act}, {"y", up}}, f16, {1, n_ff, 1, t});
    b.output(b.op("add", "y", {{"x", h1}, {"y", conv("down", gu, d_model, n_ff)}}, f16,
                  {1, d_model, 1, t}));
}

void BM_milexec_layer(benchmark::State& state) {
    const int64_t t = state.range(0);
    Layer layer;
    build_layer(layer, t);
    ThreadPool pool(2);
    const Function fn(layer.program, "main", layer.blobs, Rounding::f16, &pool);
    Tensor x = make_tensor(mil::FLOAT16, {1, d_model, 1, t});
    for (size_t i = 0; i < x.f.size(); ++i) x.f[i] = std::sin(0.01f * static_cast<float>(i));
    Tensor mask = make_tensor(mil::FLOAT16, {1, 1, t, n_ctx});
    for (int64_t r = 0; r < t; ++r)
        for (int64_t c = r + 1; c < n_ctx; ++c) mask.f[r * n_ctx + c] = -INFINITY;
    const std::map<std::string, Tensor> inputs = {
        {"x", x}, {"pos", make_tensor(mil::INT32, {1})}, {"mask", mask}};
    States states;
    for (auto _ : state) benchmark::DoNotOptimize(fn.run(inputs, states));
    const double runs = static_cast<double>(state.iterations());
    if (t == 1)
        state.counters["weight_GB/s"] = benchmark::Counter(
            runs * 2.0 * static_cast<double>(layer.weight_elements), benchmark::Counter::kIsRate);
    else
        state.counters["GFLOP/s"] =
            benchmark::Counter(runs * 2.0 * static_cast<double>(layer.weight_elements * t) / 1e9,
                               benchmark::Counter::kIsRate);
}
BENCHMARK(BM_milexec_layer)->Arg(1)->Arg(64)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace anelm::milexec

BENCHMARK_MAIN();
