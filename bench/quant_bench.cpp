// Quantized weights: matrix-vector speed straight from LUT and integer codes
// (one and two threads, each leaf table this processor runs) against the f16
// matrix-vector of the same shape (weights streamed from memory), products of
// a few to many tokens, the time to palettize every linear weight of a model,
// and one group's k-means, exact against Lloyd.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <ctime>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "base/bit_packing.h"
#include "base/half.h"
#include "kernels/kernels.h"
#include "kernels/quant_isa.h"
#include "quant/quantize.h"

namespace anelm::quant {
namespace {

constexpr int n_threads = 2;

ThreadPool& pool(int threads = n_threads) {
    static ThreadPool one(1), two(2);
    return threads == 1 ? one : two;
}

std::vector<float> random_floats(int64_t n, float scale, uint32_t seed) {
    std::mt19937 rng(seed);
    std::normal_distribution<float> dist(0.0f, scale);
    std::vector<float> v(static_cast<size_t>(n));
    for (auto& x : v) x = dist(rng);
    return v;
}

// A matrix in one of the formats measured, with random codes and tables.
struct Format {
    const char* name;
    QuantKind kind;
    int nbits;  // 16: plain f16
    bool int8_dot = false;
};
const Format formats[] = {{"f16", QuantKind::lut, 16},
                          {"lut4:8", QuantKind::lut, 4},
                          {"lut6:8", QuantKind::lut, 6},
                          {"int8", QuantKind::int8, 8},
                          {"int4", QuantKind::int4, 4},
                          {"lut4:8 int8-dot", QuantKind::lut, 4, true},
                          {"lut6:8 int8-dot", QuantKind::lut, 6, true},
                          {"int8 int8-dot", QuantKind::int8, 8, true},
                          {"int4 int8-dot", QuantKind::int4, 4, true}};

// isa: the leaves the matrix is laid out for (null: the active ones).
QuantizedMatrix random_quantized(const Format& f, int64_t n_out, int64_t n_in, uint32_t seed,
                                 const kernels::QuantIsa* isa) {
    std::mt19937 rng(seed);
    QuantizedMatrix q;
    q.kind = f.kind;
    q.nbits = f.nbits;
    q.n_out = n_out;
    q.n_in = n_in;
    q.group_size = 8;
    q.codes.resize(static_cast<size_t>(n_out * q.row_bytes()));
    for (auto& b : q.codes) b = static_cast<uint8_t>(rng());
    if (f.kind == QuantKind::lut) {
        q.lut.resize(static_cast<size_t>(q.n_tables() << f.nbits));
        for (auto& e : q.lut) e = f32_to_f16(std::normal_distribution<float>(0.0f, 0.02f)(rng));
    } else {
        q.scales.assign(static_cast<size_t>(n_out), f32_to_f16(0.001f));
    }
    if (f.int8_dot) q.use_int8_dot(isa ? isa : kernels::quant_active());
    return q;
}

double rate(benchmark::State& state, double per_iteration) {
    return static_cast<double>(state.iterations()) * per_iteration;
}

// The weights of one format and shape: copies adding up to 512 MiB, cycled so
// that they come from memory, as in a model too large for the caches.
class CycledWeights {
public:
    CycledWeights(const Format& f, int64_t n_out, int64_t n_in, const kernels::QuantIsa* isa)
        : f_(&f), isa_(isa), n_out_(n_out), n_in_(n_in) {
        bytes_ = f.nbits == 16 ? n_out * n_in * 2 : n_out * ((n_in * f.nbits + 7) / 8);
        const int64_t n_copies = std::max<int64_t>(1, (int64_t{512} << 20) / bytes_);
        for (int64_t c = 0; c < n_copies; ++c) {
            if (f.nbits != 16) {
                quantized_.push_back(c == 0 ? random_quantized(f, n_out, n_in, 1, isa)
                                            : quantized_[0]);
            } else if (c == 0) {
                const auto v = random_floats(n_out * n_in, 0.02f, 1);
                halves_.emplace_back(v.size());
                for (size_t i = 0; i < v.size(); ++i) halves_[0][i] = f32_to_f16(v[i]);
            } else {
                halves_.push_back(halves_[0]);
            }
        }
    }

    int64_t bytes() const { return bytes_; }

    // y = x W^T with the next copy, by isa's leaves (f16: the active dense ones;
    // null: the active quantized ones).
    void multiply(const kernels::QuantIsa* isa, const float* x, int64_t n_tokens, float* y,
                  ThreadPool& threads) {
        if (f_->nbits == 16) {
            kernels::matmul({DType::f16, halves_[next_].data(), n_out_, n_in_}, x, n_tokens, y,
                            threads);
            next_ = (next_ + 1) % halves_.size();
        } else {
            const kernels::QuantMatrix w = quantized_[next_].view();
            isa ? kernels::quant_matmul(*isa, w, x, n_tokens, y, threads)
                : kernels::quant_matmul(w, x, n_tokens, y, threads);
            next_ = (next_ + 1) % quantized_.size();
        }
    }

    // The weights for the last format and shape asked for, kept for the next
    // call: a benchmark runs several times to settle its iteration count.
    static CycledWeights& last(const Format& f, int64_t n_out, int64_t n_in,
                               const kernels::QuantIsa* isa) {
        static std::unique_ptr<CycledWeights> weights;
        if (!weights || weights->f_ != &f || weights->isa_ != isa || weights->n_out_ != n_out ||
            weights->n_in_ != n_in) {
            weights.reset();  // one set of copies at a time
            weights = std::make_unique<CycledWeights>(f, n_out, n_in, isa);
        }
        return *weights;
    }

private:
    const Format* f_;
    const kernels::QuantIsa* isa_;
    int64_t n_out_, n_in_, bytes_ = 0;
    std::vector<std::vector<uint16_t>> halves_;
    std::vector<QuantizedMatrix> quantized_;
    size_t next_ = 0;
};

// Args: format index, n_out, n_in, leaf table (index in kernels::quant_available()),
// threads (1 or 2). One token, the weights from memory.
void BM_decode(benchmark::State& state) {
    const Format& f = formats[state.range(0)];
    const int64_t n_out = state.range(1), n_in = state.range(2);
    const kernels::QuantIsa* isa =
        f.nbits == 16 ? nullptr : kernels::quant_available().at(state.range(3));
    ThreadPool& threads = pool(static_cast<int>(state.range(4)));
    CycledWeights& weights = CycledWeights::last(f, n_out, n_in, isa);
    const auto x = random_floats(n_in, 1.0f, 2);
    std::vector<float> y(static_cast<size_t>(n_out));
    for (auto _ : state) {
        weights.multiply(isa, x.data(), 1, y.data(), threads);
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["GB/s"] = benchmark::Counter(
        rate(state, static_cast<double>(weights.bytes()) / 1e9), benchmark::Counter::kIsRate);
    state.counters["Gweights/s"] = benchmark::Counter(
        rate(state, static_cast<double>(n_out * n_in) / 1e9), benchmark::Counter::kIsRate);
    state.SetLabel(std::string(f.name) + " " + (isa ? isa->name : kernels::active_isa()) + " " +
                   std::to_string(state.range(4)) + "t");
}

void decode_shapes(benchmark::internal::Benchmark* b) {
    const auto n_tables = static_cast<int64_t>(kernels::quant_available().size());
    for (auto [n_out, n_in] : {std::pair<int64_t, int64_t>{1024, 3072},
                               {3072, 1024},
                               {2048, 8192},
                               {151936, 1024},
                               {8192, 2048},
                               {128256, 2048}}) {
        for (int64_t f = 0; f < static_cast<int64_t>(std::size(formats)); ++f) {
            for (int64_t t = 0; t < (formats[f].nbits == 16 ? 1 : n_tables); ++t) {
                for (int64_t threads : {1, 2}) b->Args({f, n_out, n_in, t, threads});
            }
        }
    }
}
BENCHMARK(BM_decode)
    ->Name("quant_decode")
    ->Apply(decode_shapes)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Args: format index, n_out, n_in, leaf table. One token, one thread, one
// matrix small enough to stay in L2: the leaf's own rate, what it could
// reach were memory never the limit.
void BM_decode_cached(benchmark::State& state) {
    const Format& f = formats[state.range(0)];
    const int64_t n_out = state.range(1), n_in = state.range(2);
    const kernels::QuantIsa* isa = kernels::quant_available().at(state.range(3));
    const QuantizedMatrix q = random_quantized(f, n_out, n_in, 1, isa);
    const auto x = random_floats(n_in, 1.0f, 2);
    std::vector<float> y(static_cast<size_t>(n_out));
    for (auto _ : state) {
        kernels::quant_matmul(*isa, q.view(), x.data(), 1, y.data(), pool(1));
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["Gweights/s"] = benchmark::Counter(
        rate(state, static_cast<double>(n_out * n_in) / 1e9), benchmark::Counter::kIsRate);
    state.SetLabel(std::string(f.name) + " " + isa->name);
}

void cached_shapes(benchmark::internal::Benchmark* b) {
    const auto n_tables = static_cast<int64_t>(kernels::quant_available().size());
    for (int64_t f : {5, 6, 7, 8}) {
        for (int64_t t = 0; t < n_tables; ++t) {
            b->Args({f, 256, 1024, t});
            b->Args({f, 64, 4096, t});
        }
    }
}
BENCHMARK(BM_decode_cached)
    ->Name("quant_decode_cached")
    ->Apply(cached_shapes)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Args: format index, n_tokens, n_out, n_in, leaf table (as for quant_decode;
// f16 takes the active dense leaves); 2 threads, the weights from memory. A
// few tokens are the steps of several sequences decoded at once, where the
// weights should be read once for all of them; many tokens (2048 x 2048) a
// prompt, where the cost is the arithmetic.
void BM_tokens(benchmark::State& state) {
    const Format& f = formats[state.range(0)];
    const int64_t n_tokens = state.range(1), n_out = state.range(2), n_in = state.range(3);
    const kernels::QuantIsa* isa =
        f.nbits == 16 ? nullptr : kernels::quant_available().at(state.range(4));
    CycledWeights& weights = CycledWeights::last(f, n_out, n_in, isa);
    const auto x = random_floats(n_tokens * n_in, 1.0f, 2);
    std::vector<float> y(static_cast<size_t>(n_tokens * n_out));
    for (auto _ : state) {
        weights.multiply(isa, x.data(), n_tokens, y.data(), pool());
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["GFLOP/s"] =
        benchmark::Counter(rate(state, 2.0 * static_cast<double>(n_out * n_in * n_tokens) / 1e9),
                           benchmark::Counter::kIsRate);
    state.SetLabel(std::string(f.name) + " " + (isa ? isa->name : kernels::active_isa()));
}

void token_shapes(benchmark::internal::Benchmark* b) {
    const auto n_tables = static_cast<int64_t>(kernels::quant_available().size());
    for (int64_t f : {0, 1, 3, 5, 6, 7, 8}) {
        for (int64_t t = 0; t < (formats[f].nbits == 16 ? 1 : n_tables); ++t) {
            for (int64_t n_tokens : {2, 4, 8, 12, 16, 17, 24, 64, 512})
                b->Args({f, n_tokens, 2048, 2048, t});
            for (auto [n_out, n_in] : {std::pair<int64_t, int64_t>{3072, 1024},
                                       {1024, 3072},
                                       {2048, 1024},
                                       {151936, 1024}}) {
                for (int64_t n_tokens : {1, 2, 3, 4, 6, 8}) b->Args({f, n_tokens, n_out, n_in, t});
            }
        }
    }
}
BENCHMARK(BM_tokens)
    ->Name("quant_tokens")
    ->Apply(token_shapes)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// The linear weights of a model: (n_out, n_in, how many).
struct Linear {
    int64_t n_out, n_in, count;
};

std::vector<Linear> model_linears(int64_t n_embd, int64_t n_layer, int64_t n_head,
                                  int64_t n_head_kv, int64_t head_dim, int64_t n_ff,
                                  int64_t n_vocab) {
    const int64_t q_dim = n_head * head_dim, kv_dim = n_head_kv * head_dim;
    return {{q_dim, n_embd, n_layer},    {kv_dim, n_embd, 2 * n_layer}, {n_embd, q_dim, n_layer},
            {n_ff, n_embd, 2 * n_layer}, {n_embd, n_ff, n_layer},       {n_vocab, n_embd, 1}};
}

// Args: model (0 qwen3-0.6b, 1 llama-3.2-1b), with the LM head (1) or the layers only (0),
// bits, group size, k-means method (0 kmeans_1d's choice, 1 exact, 2 Lloyd).
// One random f16 matrix per distinct shape, palettized as many times as the model has it.
void BM_palettize_model(benchmark::State& state) {
    const bool qwen = state.range(0) == 0, with_head = state.range(1) != 0;
    const auto linears = qwen ? model_linears(1024, 28, 16, 8, 128, 3072, 151936)
                              : model_linears(2048, 16, 32, 8, 64, 8192, 128256);
    std::vector<std::vector<uint16_t>> data;
    int64_t n_weights = 0;
    for (const Linear& l : linears) {
        const auto v = random_floats(l.n_out * l.n_in, 0.02f, static_cast<uint32_t>(data.size()));
        data.emplace_back(v.size());
        for (size_t i = 0; i < v.size(); ++i) data.back()[i] = f32_to_f16(v[i]);
    }
    const QuantChoice choice{QuantMethod::lut, static_cast<int>(state.range(2)), state.range(3)};
    KMeansOptions kmeans;
    if (state.range(4) == 1) kmeans.exact_budget = std::numeric_limits<int64_t>::max();
    if (state.range(4) == 2) kmeans.exact_budget = 0;
    // Process CPU time too: on a shared machine the wall time also counts waiting.
    const std::clock_t cpu_start = std::clock();
    for (auto _ : state) {
        n_weights = 0;
        for (size_t s = 0; s < linears.size(); ++s) {
            const Linear& l = linears[s];
            if (!with_head && s + 1 == linears.size()) continue;
            const TensorView view{
                DType::f16, {l.n_out, l.n_in}, reinterpret_cast<const std::byte*>(data[s].data())};
            for (int64_t c = 0; c < l.count; ++c) {
                benchmark::DoNotOptimize(quantize_matrix(view, choice, pool(), 1, kmeans));
                n_weights += l.n_out * l.n_in;
            }
        }
    }
    state.counters["Mweights/s"] = benchmark::Counter(
        rate(state, static_cast<double>(n_weights) / 1e6), benchmark::Counter::kIsRate);
    state.counters["cpu_s"] = static_cast<double>(std::clock() - cpu_start) / CLOCKS_PER_SEC /
                              static_cast<double>(state.iterations());
    state.SetLabel(std::string(qwen ? "qwen3-0.6b" : "llama-3.2-1b") +
                   (with_head ? " layers + head, " : " layers, ") + choice.name() +
                   (state.range(4) == 0   ? ""
                    : state.range(4) == 1 ? " exact"
                                          : " lloyd"));
}
BENCHMARK(BM_palettize_model)
    ->Name("palettize_model")
    ->ArgNames({"model", "head", "bits", "group", "method"})
    ->Args({0, 1, 4, 8, 0})
    ->Args({0, 0, 4, 8, 0})
    ->Args({1, 1, 4, 8, 0})
    ->Args({1, 0, 4, 8, 0})
    ->Args({0, 1, 6, 4, 0})
    ->Args({0, 0, 6, 4, 0})
    ->Args({0, 1, 4, 8, 2})
    ->Args({0, 1, 6, 4, 2})
    ->Iterations(1)
    ->Unit(benchmark::kSecond)
    ->UseRealTime();

// One group's k-means. Args: bits, rows, columns (random f16 values), method (1 kmeans_1d_exact,
// 2 Lloyd, 3 the k-layer programme alone). The counter sse_ratio is the method's squared error
// over the exact optimum's.
void BM_kmeans_group(benchmark::State& state) {
    const int k = 1 << state.range(0);
    const int64_t n = state.range(1) * state.range(2), method = state.range(3);
    std::vector<float> values = random_floats(n, 0.02f, 7);
    for (float& v : values) v = f16_to_f32(f32_to_f16(v));
    WeightedValues points;
    distinct_values(values, points);
    const auto run = [&] {
        return method == 1   ? kmeans_1d_exact(points, k)
               : method == 2 ? kmeans_1d_lloyd(points, k, 5)
                             : kmeans_1d_layered(points, k);
    };
    for (auto _ : state) benchmark::DoNotOptimize(run());
    const double optimum = kmeans_1d_exact(points, k).sse;
    state.counters["distinct"] = static_cast<double>(points.value.size());
    state.counters["sse_ratio"] = optimum > 0 ? run().sse / optimum : 1.0;
    state.SetLabel(method == 1 ? "exact" : method == 2 ? "lloyd" : "layered");
}
void kmeans_group_shapes(benchmark::internal::Benchmark* b) {
    for (int64_t bits : {2, 3, 4, 6, 8}) {
        for (auto [rows, cols] :
             {std::pair<int64_t, int64_t>{4, 1024}, {8, 1024}, {4, 3072}, {8, 3072}, {8, 8192}}) {
            for (int64_t method : {1, 2, 3}) b->Args({bits, rows, cols, method});
        }
    }
}
BENCHMARK(BM_kmeans_group)
    ->Name("kmeans_group")
    ->ArgNames({"bits", "rows", "cols", "method"})
    ->Apply(kmeans_group_shapes)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace anelm::quant

BENCHMARK_MAIN();
