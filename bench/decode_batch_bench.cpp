// Decoding several sequences in one pass (what anelm serve does each step for
// its running requests): the time of one step for S = 1, 2, 4, 8 sequences,
// each 256 tokens deep, and the tokens per second they make together.
// The model is a folder in $ANELM_BENCH_MODEL (e.g. `anelm synth qwen3-0.6b`),
// quantized at load by $ANELM_BENCH_QUANT (default lut4; "none" keeps it).
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <random>

#include "runtime/model.h"
#include "runtime/session.h"

namespace anelm {
namespace {

constexpr int64_t depth = 256;

struct Loaded {
    std::unique_ptr<Model> model;
    std::unique_ptr<Session> session;
};

Loaded* loaded() {
    static std::unique_ptr<Loaded> l = []() -> std::unique_ptr<Loaded> {
        const char* path = std::getenv("ANELM_BENCH_MODEL");
        if (!path) return nullptr;
        const char* quant = std::getenv("ANELM_BENCH_QUANT");
        auto out = std::make_unique<Loaded>();
        out->model = std::make_unique<Model>(open_model(path, "", false));
        SessionOptions so;
        so.n_ctx = 1024;
        so.threads = 2;
        so.batch_rows = 8;
        so.quant = quant::parse_quant_spec(quant ? quant : "lut4");
        so.quant.int8_dot = true;
        out->session = std::make_unique<Session>(out->model->spec(), out->model->weights(), so);
        return out;
    }();
    return l.get();
}

void BM_decode_batch(benchmark::State& state) {
    Loaded* l = loaded();
    if (!l) {
        state.SkipWithError("set ANELM_BENCH_MODEL to a model folder");
        return;
    }
    const auto n = static_cast<size_t>(state.range(0));
    std::mt19937 rng(1);
    std::uniform_int_distribution<int32_t> token(0, static_cast<int32_t>(l->session->n_vocab() - 1));
    std::vector<Sequence> seqs;
    std::vector<int32_t> prompt(depth);
    for (size_t i = 0; i < n; ++i) {
        seqs.push_back(l->session->new_sequence());
        for (int32_t& t : prompt) t = token(rng);
        l->session->prefill(seqs.back(), prompt);
    }
    std::vector<Sequence*> running;
    for (Sequence& s : seqs) running.push_back(&s);
    std::vector<int32_t> next(n);
    for (auto _ : state) {
        for (int32_t& t : next) t = token(rng);
        benchmark::DoNotOptimize(l->session->decode_batch(running, next).data());
        state.PauseTiming();
        for (Sequence& s : seqs) s.pos = depth;  // every step at the same depth
        state.ResumeTiming();
    }
    state.counters["tok/s"] = benchmark::Counter(static_cast<double>(n) * state.iterations(),
                                                 benchmark::Counter::kIsRate);
}
BENCHMARK(BM_decode_batch)->Name("decode_batch")->Arg(1)->Arg(2)->Arg(4)->Arg(8)
    ->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace anelm

BENCHMARK_MAIN();
