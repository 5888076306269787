// CPU kernel speed with two threads: matmul in decode (GB/s of weights read)
// and prefill (GFLOP/s), attention at a context of 512 and through a decode
// step's caches, and this machine's memory bandwidth to put the decode
// numbers in proportion; matmul on one thread. ANELM_ISA=avx2 (or another lower level) compares
// instruction sets.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <random>
#include <tuple>
#include <vector>

#include "base/half.h"
#include "kernels/kernels.h"
#include "sum_words.h"

namespace anelm::kernels {
namespace {

constexpr int n_threads = 2;

ThreadPool& pool() {
    static ThreadPool p(n_threads);
    return p;
}

std::vector<float> random_floats(int64_t n) {
    std::mt19937 rng(2);
    std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = dist(rng);
    return v;
}

std::vector<uint16_t> random_halves(DType dtype, int64_t n) {
    std::vector<uint16_t> h(static_cast<size_t>(n));
    const auto f = random_floats(n);
    for (size_t i = 0; i < h.size(); ++i) {
        h[i] = dtype == DType::f16 ? f32_to_f16(f[i]) : f32_to_bf16(f[i]);
    }
    return h;
}

double rate(benchmark::State& state, double per_iteration) {
    return static_cast<double>(state.iterations()) * per_iteration;
}

// Memory bandwidth: a STREAM-style triad (two reads and a write per element,
// 12 bytes) and a read-only pass (what matrix-vector products do), each over
// 256 MiB per array, split evenly between the threads.
constexpr int64_t stream_n = int64_t{64} << 20;

void BM_memory_triad(benchmark::State& state) {
    std::vector<float> a(stream_n, 0.0f), b(stream_n, 1.0f), c(stream_n, 2.0f);
    for (auto _ : state) {
        pool().run(n_threads, [&](int64_t task, int) {
            const int64_t begin = task * stream_n / n_threads,
                          end = (task + 1) * stream_n / n_threads;
            for (int64_t i = begin; i < end; ++i) a[i] = b[i] + 3.0f * c[i];
        });
        benchmark::ClobberMemory();
    }
    state.counters["GB/s"] =
        benchmark::Counter(rate(state, 12.0 * stream_n / 1e9), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_memory_triad)->Unit(benchmark::kMillisecond)->UseRealTime();

// Reads of one chunk of chunk_bytes per step, split between the threads, each
// step a chunk further on in a 256 MiB buffer (far larger than the caches).
void read_chunks(benchmark::State& state, int64_t chunk_bytes) {
    std::vector<uint64_t> data(stream_n / 2, 1);
    const int64_t chunk = chunk_bytes / 8;
    const int64_t n_chunks = static_cast<int64_t>(data.size()) / chunk;
    uint64_t sums[n_threads] = {};
    int64_t c = 0;
    for (auto _ : state) {
        const uint64_t* base = data.data() + c * chunk;
        pool().run(n_threads, [&](int64_t task, int) {
            sums[task] = sum_words(base, task * chunk / n_threads, (task + 1) * chunk / n_threads);
        });
        benchmark::DoNotOptimize(sums);
        c = (c + 1) % n_chunks;
    }
    state.counters["GB/s"] =
        benchmark::Counter(rate(state, 8.0 * chunk / 1e9), benchmark::Counter::kIsRate);
}

// The whole buffer per step: the read stream the kernels are compared with.
void BM_memory_read(benchmark::State& state) {
    read_chunks(state, stream_n * 4);
}
BENCHMARK(BM_memory_read)->Unit(benchmark::kMillisecond)->UseRealTime();

// Arg bytes per step: the rate a matrix-vector product of that many bytes
// could reach, its start and end included.
void BM_memory_read_chunks(benchmark::State& state) {
    read_chunks(state, state.range(0));
}
BENCHMARK(BM_memory_read_chunks)
    ->Name("memory_read_chunks")
    ->Arg(1 << 20)
    ->Arg(3 << 20)
    ->Arg(16 << 20)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The fixed cost of one parallel step (decode runs a few hundred per token).
void BM_thread_pool_run(benchmark::State& state) {
    std::atomic<int64_t> sink{0};
    for (auto _ : state) {
        pool().run(state.range(0),
                   [&](int64_t task, int) { sink.fetch_add(task, std::memory_order_relaxed); });
    }
    benchmark::DoNotOptimize(sink.load());
}
BENCHMARK(BM_thread_pool_run)->Arg(2)->Arg(64)->UseRealTime();

// Args: dtype (0 f16, 1 bf16), n_out, n_in, n_tokens.
void run_matmul(benchmark::State& state, ThreadPool& threads) {
    const DType dtype = state.range(0) == 0 ? DType::f16 : DType::bf16;
    const int64_t n_out = state.range(1), n_in = state.range(2), n_tokens = state.range(3);
    // Few tokens: cycle through copies adding up to 512 MiB, so weights come
    // from memory as in a model too large for the caches.
    const int64_t bytes = n_out * n_in * 2;
    const int64_t n_copies =
        n_tokens <= 16 ? std::max<int64_t>(1, (int64_t{512} << 20) / bytes) : 1;
    const auto first = random_halves(dtype, n_out * n_in);
    std::vector<std::vector<uint16_t>> copies(static_cast<size_t>(n_copies), first);
    const auto x = random_floats(n_tokens * n_in);
    std::vector<float> y(static_cast<size_t>(n_tokens * n_out));
    size_t next = 0;
    for (auto _ : state) {
        matmul(Matrix{dtype, copies[next].data(), n_out, n_in}, x.data(), n_tokens, y.data(),
               threads);
        next = (next + 1) % copies.size();
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["GB/s"] =
        benchmark::Counter(rate(state, bytes / 1e9), benchmark::Counter::kIsRate);
    state.counters["GFLOP/s"] =
        benchmark::Counter(rate(state, 2.0 * static_cast<double>(n_out * n_in * n_tokens) / 1e9),
                           benchmark::Counter::kIsRate);
    state.SetLabel(std::string(dtype_name(dtype)) + " " + active_isa());
}

void BM_matmul(benchmark::State& state) {
    run_matmul(state, pool());
}

// One thread, rates per CPU second: the leaves' own speed, less disturbed by
// other work on a shared machine than the wall clock of two threads.
void BM_matmul_one_thread(benchmark::State& state) {
    static ThreadPool one(1);
    run_matmul(state, one);
}

// Decode shapes (n_out x n_in): Llama/Qwen projections of 0.5B..7B models and a
// 151936-token LM head.
void decode_shapes(benchmark::internal::Benchmark* b) {
    for (int64_t dtype : {0, 1}) {
        // qwen3-0.6b's and llama-3.2-1b's projections and heads.
        for (auto [n_out, n_in] : {std::pair<int64_t, int64_t>{1024, 1024},
                                   {3072, 1024},
                                   {1024, 3072},
                                   {151936, 1024},
                                   {2048, 2048},
                                   {8192, 2048},
                                   {2048, 8192},
                                   {128256, 2048}}) {
            b->Args({dtype, n_out, n_in, 1});
        }
    }
}
BENCHMARK(BM_matmul)
    ->Name("matmul_decode")
    ->Apply(decode_shapes)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Few tokens (speculative decoding's verify, a server's batch) on a 2048 x
// 2048 matrix, and 1 to 16 on qwen3-0.6b's FFN and LM head.
void few_token_shapes(benchmark::internal::Benchmark* b) {
    for (int64_t n_tokens : {2, 3, 4, 6, 8, 12, 16}) b->Args({0, 2048, 2048, n_tokens});
    for (auto [n_out, n_in] :
         {std::pair<int64_t, int64_t>{3072, 1024}, {1024, 3072}, {151936, 1024}}) {
        for (int64_t n_tokens : {1, 2, 4, 8, 16}) b->Args({0, n_out, n_in, n_tokens});
    }
}
BENCHMARK(BM_matmul)
    ->Name("matmul_few")
    ->Apply(few_token_shapes)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

void prefill_shapes(benchmark::internal::Benchmark* b) {
    for (int64_t dtype : {0, 1}) {
        for (auto [n_out, n_in] : {std::pair<int64_t, int64_t>{1024, 3072}, {3072, 1024}}) {
            for (int64_t n_tokens : {64, 512}) b->Args({dtype, n_out, n_in, n_tokens});
        }
    }
}
BENCHMARK(BM_matmul)
    ->Name("matmul_prefill")
    ->Apply(prefill_shapes)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

BENCHMARK(BM_matmul_one_thread)
    ->Name("matmul_one_thread")
    ->Args({0, 1024, 1024, 1})
    ->Args({1, 1024, 1024, 1})
    ->Args({0, 3072, 1024, 4})
    ->Args({0, 3072, 1024, 8})
    ->Args({1, 3072, 1024, 8})
    ->Args({0, 1024, 3072, 512})
    ->Args({1, 1024, 3072, 512})
    ->Args({0, 3072, 1024, 512})
    ->Unit(benchmark::kMillisecond);

// Qwen3-0.6B's attention: 16 query heads over 8 kv heads of 128.
AttentionArgs qwen3_attention(int64_t n_tokens, int64_t pos0, int64_t n_ctx) {
    AttentionArgs a;
    a.n_tokens = n_tokens;
    a.pos0 = pos0;
    a.n_head = 16;
    a.n_head_kv = 8;
    a.head_dim = 128;
    a.n_ctx = n_ctx;
    a.scale = 1.0f / 128.0f;
    return a;
}

// GFLOP/s of a call: two dot products of head_dim per (query, head, visible key).
void count_attention_flops(benchmark::State& state, const AttentionArgs& a) {
    double pairs = 0;
    for (int64_t t = 0; t < a.n_tokens; ++t) pairs += static_cast<double>(a.pos0 + t + 1);
    state.counters["GFLOP/s"] = benchmark::Counter(
        rate(state, pairs * static_cast<double>(a.n_head * a.head_dim) * 4.0 / 1e9),
        benchmark::Counter::kIsRate);
}

// Args: n_tokens, pos0; n_ctx 512.
void BM_attention(benchmark::State& state) {
    AttentionArgs a = qwen3_attention(state.range(0), state.range(1), 512);
    const auto q = random_floats(a.n_tokens * a.n_head * a.head_dim);
    const auto k = random_halves(DType::f16, a.n_head_kv * a.n_ctx * a.head_dim);
    const auto v = random_halves(DType::f16, a.n_head_kv * a.n_ctx * a.head_dim);
    std::vector<float> out(q.size());
    a.q = q.data();
    a.k = k.data();
    a.v = v.data();
    a.out = out.data();
    for (auto _ : state) {
        attention(a, pool());
        benchmark::DoNotOptimize(out.data());
    }
    count_attention_flops(state, a);
}
BENCHMARK(BM_attention)
    ->Name("attention_ctx512")
    ->Args({1, 511})
    ->Args({1, 303})
    ->Args({8, 296})
    ->Args({512, 0})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// One kind of cache rows for a layered bench: f16, or int8 codes with a bf16
// scale and zero per row (as quantize_kv_row writes them).
struct BenchKvRows {
    std::vector<uint16_t> f16;
    std::vector<int8_t> codes;
    std::vector<uint16_t> scales, zeros;

    BenchKvRows(bool int8, int64_t n_rows, int64_t width) {
        const int64_t n = n_rows * width;
        if (!int8) {
            f16 = random_halves(DType::f16, n);
            return;
        }
        const auto x = random_floats(n);
        codes.resize(static_cast<size_t>(n));
        scales.resize(static_cast<size_t>(n_rows));
        zeros.resize(static_cast<size_t>(n_rows));
        for (int64_t r = 0; r < n_rows; ++r)
            quantize_kv_row(x.data() + r * width, width, codes.data() + r * width,
                            &scales[static_cast<size_t>(r)], &zeros[static_cast<size_t>(r)]);
    }
    int64_t bytes_per_value() const { return f16.empty() ? 1 : 2; }
    // Points the f16 pointer, or the int8 ones, at layer l's rows.
    void point(int64_t l, int64_t rows, int64_t width, const uint16_t*& half, const int8_t*& i8,
               const uint16_t*& scale, const uint16_t*& zero) const {
        if (!f16.empty()) {
            half = f16.data() + l * rows * width;
            return;
        }
        i8 = codes.data() + l * rows * width;
        scale = scales.data() + l * rows;
        zero = zeros.data() + l * rows;
    }
};

// The rows of a shape, made once: the benchmark library calls a bench several
// times, and making a gigabyte of random rows took longer than the runs.
const BenchKvRows& bench_kv_rows(bool int8, int64_t n_rows, int64_t width) {
    static std::map<std::tuple<bool, int64_t, int64_t>, std::unique_ptr<BenchKvRows>> made;
    auto& rows = made[{int8, n_rows, width}];
    if (!rows) rows = std::make_unique<BenchKvRows>(int8, n_rows, width);
    return *rows;
}

// Args: depth, cache (0 f16, 1 int8 keys and values, 2 f16 keys and int8
// values). One decode token's attention through the caches of 28 layers
// (Qwen3-0.6B's), each layer's keys and values read from memory as a decode
// step reads them, not from a cache that the previous call warmed.
void BM_attention_layers(benchmark::State& state) {
    constexpr int64_t n_layers = 28;
    const int64_t depth = state.range(0);
    AttentionArgs a = qwen3_attention(1, depth - 1, depth);
    const int64_t rows = a.n_head_kv * a.n_ctx, per_layer = rows * a.head_dim;
    const BenchKvRows& k = bench_kv_rows(state.range(1) == 1, n_layers * rows, a.head_dim);
    const BenchKvRows& v = bench_kv_rows(state.range(1) != 0, n_layers * rows, a.head_dim);
    const auto q = random_floats(a.n_head * a.head_dim);
    std::vector<float> out(q.size());
    a.q = q.data();
    a.out = out.data();
    for (auto _ : state) {
        for (int64_t l = 0; l < n_layers; ++l) {
            k.point(l, rows, a.head_dim, a.k, a.k_i8, a.k_scales, a.k_zeros);
            v.point(l, rows, a.head_dim, a.v, a.v_i8, a.v_scales, a.v_zeros);
            attention(a, pool());
        }
        benchmark::DoNotOptimize(out.data());
    }
    // The codes; the rows' scales and zeros add 4 bytes per head_dim values.
    const double bytes = static_cast<double>(n_layers * per_layer) *
                         static_cast<double>(k.bytes_per_value() + v.bytes_per_value());
    state.counters["GB/s"] =
        benchmark::Counter(rate(state, bytes / 1e9), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_attention_layers)
    ->Name("attention_layers")
    ->ArgsProduct({{256, 1024, 4096, 8192}, {0, 1, 2}})
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Args: depth, cache (as attention_layers). One layer's attention for a
// prompt of 512 tokens after `depth` cached positions, as a long prompt's
// later batches run it.
void BM_attention_prompt(benchmark::State& state) {
    const int64_t depth = state.range(0), n_tokens = 512;
    AttentionArgs a = qwen3_attention(n_tokens, depth, depth + n_tokens);
    const int64_t rows = a.n_head_kv * a.n_ctx;
    const BenchKvRows& k = bench_kv_rows(state.range(1) == 1, rows, a.head_dim);
    const BenchKvRows& v = bench_kv_rows(state.range(1) != 0, rows, a.head_dim);
    const auto q = random_floats(n_tokens * a.n_head * a.head_dim);
    std::vector<float> out(q.size());
    a.q = q.data();
    a.out = out.data();
    k.point(0, rows, a.head_dim, a.k, a.k_i8, a.k_scales, a.k_zeros);
    v.point(0, rows, a.head_dim, a.v, a.v_i8, a.v_scales, a.v_zeros);
    for (auto _ : state) {
        attention(a, pool());
        benchmark::DoNotOptimize(out.data());
    }
    count_attention_flops(state, a);
}
BENCHMARK(BM_attention_prompt)
    ->Name("attention_prompt")
    ->ArgsProduct({{0, 4096, 16384}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace
}  // namespace anelm::kernels

BENCHMARK_MAIN();
