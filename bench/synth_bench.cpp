// Speed of random weight generation, merge learning and token sampling.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "runtime/sampler.h"
#include "synth/byte_bpe.h"
#include "synth/random_fill.h"

namespace {

using namespace anelm;

void BM_FillNormal(benchmark::State& state) {
    const auto dtype = static_cast<DType>(state.range(0));
    const int threads = static_cast<int>(state.range(1));
    const size_t n = size_t{1} << 24;
    std::vector<std::byte> out(n * dtype_size(dtype));
    ThreadPool pool(threads);
    for (auto _ : state) {
        synth::fill_normal(out, dtype, 0.02f, 1, "w", pool);
        benchmark::DoNotOptimize(out.data());
    }
    state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * n));
    state.SetLabel(std::string(dtype_name(dtype)));
}
BENCHMARK(BM_FillNormal)
    ->Args({static_cast<int>(DType::bf16), 1})
    ->Args({static_cast<int>(DType::bf16), 2})
    ->Args({static_cast<int>(DType::f32), 1})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

void BM_LearnMerges(benchmark::State& state) {
    for (auto _ : state)
        benchmark::DoNotOptimize(synth::learn_merges(synth::builtin_corpus(), 1000));
}
BENCHMARK(BM_LearnMerges)->Unit(benchmark::kMillisecond);

// One token from a Qwen-sized row of logits.
void BM_Sample(benchmark::State& state) {
    std::mt19937_64 rng(1);
    std::normal_distribution<float> normal(0.0f, 3.0f);
    std::vector<float> logits(151936);
    for (float& x : logits) x = normal(rng);
    std::vector<int32_t> recent(64);
    for (int32_t& id : recent) id = static_cast<int32_t>(rng() % logits.size());
    SamplerParams p;
    p.top_k = static_cast<int>(state.range(0));
    p.temp = state.range(1) ? 0.8f : 0.0f;
    p.repeat_penalty = 1.1f;
    Sampler sampler(p);
    for (auto _ : state) benchmark::DoNotOptimize(sampler.sample(logits, recent));
    state.SetLabel(p.temp > 0 ? "top_k " + std::to_string(p.top_k) : "greedy");
}
BENCHMARK(BM_Sample)->Args({40, 1})->Args({0, 1})->Args({40, 0})->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
