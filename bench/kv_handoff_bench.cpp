// The KV hand-off of the hybrid (ANE prefill, then CPU or GPU decode): a full
// context of K and V moved from the interpreter's state into a CPU session's
// fp16 cache, for the shapes of qwen3-0.6b, llama-3.2-1b and llama-3.1-8b.
#include <benchmark/benchmark.h>

#include "converted/kv_handoff.h"

namespace anelm {
namespace {

// Args: layers, KV heads, head_dim, context (all of it handed over).
void BM_kv_handoff(benchmark::State& state) {
    const int64_t layers = state.range(0), heads = state.range(1), hd = state.range(2),
                  ctx = state.range(3);
    const std::vector<int64_t> shape{2 * layers, heads, ctx, hd};
    milexec::Tensor from = milexec::make_tensor(coreml::mil::FLOAT16, shape);
    for (size_t i = 0; i < from.f.size(); ++i) from.f[i] = static_cast<float>(i % 251) / 64;
    const ir::StateDecl decl{"model_model_kv_cache_0", DType::f16, shape};
    std::vector<uint16_t> to(from.f.size());
    int64_t bytes = 0;
    for (auto _ : state) {
        bytes = hand_off_state(from, decl, to, ctx);
        benchmark::DoNotOptimize(to.data());
    }
    state.counters["MB"] = static_cast<double>(bytes) / 1e6;
    state.counters["GB/s"] = benchmark::Counter(static_cast<double>(bytes) / 1e9,
                                                benchmark::Counter::kIsIterationInvariantRate);
}

void handoff_shapes(benchmark::internal::Benchmark* b) {
    for (auto [layers, heads, hd] :
         {std::tuple<int64_t, int64_t, int64_t>{28, 8, 128}, {16, 8, 64}, {32, 8, 128}})
        for (int64_t ctx : {512, 2048, 8192}) b->Args({layers, heads, hd, ctx});
}
BENCHMARK(BM_kv_handoff)
    ->Name("kv_handoff")
    ->Apply(handoff_shapes)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace anelm

BENCHMARK_MAIN();
