// ggml block-quantized weights (block_kernels.h): matrix-vector speed in GB/s
// of the blocks streamed from memory, for each type and table of leaves this
// processor runs, beside plain loads of the same bytes in the same minutes
// (the memory's limit for this access pattern); then products of a few to
// many tokens.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "kernels/block_isa.h"
#include "kernels/block_testing.h"
#include "sum_words.h"

namespace anelm::kernels {
namespace {

constexpr int n_threads = 2;

ThreadPool& pool() {
    static ThreadPool p(n_threads);
    return p;
}

double rate(benchmark::State& state, double per_iteration) {
    return static_cast<double>(state.iterations()) * per_iteration;
}

const test::BlockTypeCase& type_case(int64_t i) {
    return test::block_type_cases().at(static_cast<size_t>(i));
}

// The table of leaves at index i of block_available(), null (the scalar
// leaves) past its end.
const BlockIsa* table(int64_t i) {
    const auto tables = block_available();
    return i < static_cast<int64_t>(tables.size()) ? tables[static_cast<size_t>(i)] : nullptr;
}

// Copies of one random matrix adding up to 512 MiB, cycled so that each
// product reads its weights from memory, as in a model too large for the caches.
class CycledBlocks {
public:
    CycledBlocks(int64_t type, int64_t n_out, int64_t n_in) : type_(type) {
        std::mt19937 rng(1);
        const auto first = test::random_blocks(rng, type_case(type), n_out, n_in);
        const int64_t n_copies =
            std::max<int64_t>(1, (int64_t{512} << 20) / static_cast<int64_t>(first.size()));
        copies_.assign(static_cast<size_t>(n_copies), first);
        w_ = {type_case(type).type, n_out, n_in, nullptr,
              static_cast<int64_t>(first.size()) / n_out};
    }

    int64_t bytes() const { return w_.n_out * w_.row_bytes; }

    // The next copy as a matrix.
    BlockMatrix next() {
        BlockMatrix w = w_;
        w.data = copies_[next_].data();
        next_ = (next_ + 1) % copies_.size();
        return w;
    }

    // The copies for the last type and shape asked for, kept for the next
    // call: a benchmark runs several times to settle its iteration count.
    static CycledBlocks& last(int64_t type, int64_t n_out, int64_t n_in) {
        static std::unique_ptr<CycledBlocks> blocks;
        if (!blocks || blocks->type_ != type || blocks->w_.n_out != n_out ||
            blocks->w_.n_in != n_in) {
            blocks.reset();  // one set of copies at a time
            blocks = std::make_unique<CycledBlocks>(type, n_out, n_in);
        }
        return *blocks;
    }

private:
    int64_t type_;
    BlockMatrix w_;
    std::vector<std::vector<uint8_t>> copies_;
    size_t next_ = 0;
};

// Args: type (index in test::block_type_cases()), n_out, n_in, table (index in
// block_available(), past its end the scalar leaves; -1 plain loads of the
// same bytes, one half per thread). One token, two threads.
void BM_decode(benchmark::State& state) {
    const int64_t n_out = state.range(1), n_in = state.range(2), t = state.range(3);
    CycledBlocks& blocks = CycledBlocks::last(state.range(0), n_out, n_in);
    std::mt19937 rng(2);
    const std::vector<float> x = [&] {
        std::vector<float> v(static_cast<size_t>(n_in));
        std::normal_distribution<float> dist(0.0f, 1.0f);
        for (auto& e : v) e = dist(rng);
        return v;
    }();
    std::vector<float> y(static_cast<size_t>(n_out));
    uint64_t sums[n_threads] = {};
    for (auto _ : state) {
        const BlockMatrix w = blocks.next();
        if (t < 0) {
            const int64_t n = blocks.bytes() / 8;
            pool().run(n_threads, [&](int64_t task, int) {
                sums[task] = sum_words(reinterpret_cast<const uint64_t*>(w.data),
                                       task * n / n_threads, (task + 1) * n / n_threads);
            });
            benchmark::DoNotOptimize(sums);
        } else {
            block_matmul(table(t), w, x.data(), 1, y.data(), pool());
            benchmark::DoNotOptimize(y.data());
        }
    }
    state.counters["GB/s"] = benchmark::Counter(
        rate(state, static_cast<double>(blocks.bytes()) / 1e9), benchmark::Counter::kIsRate);
    const BlockIsa* isa = t < 0 ? nullptr : table(t);
    state.SetLabel(std::string(type_case(state.range(0)).name) + " " +
                   (t < 0 ? "plain loads"
                    : isa ? isa->name
                          : "scalar"));
}

// Each shape and type: plain loads of its bytes, then each table's leaves.
void decode_args(benchmark::internal::Benchmark* b) {
    const auto n_tables = static_cast<int64_t>(block_available().size());
    for (auto [n_out, n_in] : {std::pair<int64_t, int64_t>{1024, 3072}, {3072, 1024}}) {
        for (int64_t type = 0; type < static_cast<int64_t>(test::block_type_cases().size());
             ++type) {
            for (int64_t t = -1; t <= n_tables; ++t) b->Args({type, n_out, n_in, t});
        }
    }
}
BENCHMARK(BM_decode)
    ->Name("block_decode")
    ->Apply(decode_args)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

// Args: type, n_tokens, n_out, n_in; the active leaves, two threads, the
// weights from memory. A few tokens are the steps of several sequences
// decoded at once, many a prompt, where the cost is the arithmetic.
void BM_tokens(benchmark::State& state) {
    const int64_t n_tokens = state.range(1), n_out = state.range(2), n_in = state.range(3);
    CycledBlocks& blocks = CycledBlocks::last(state.range(0), n_out, n_in);
    std::mt19937 rng(3);
    std::vector<float> x(static_cast<size_t>(n_tokens * n_in));
    std::normal_distribution<float> dist(0.0f, 1.0f);
    for (auto& e : x) e = dist(rng);
    std::vector<float> y(static_cast<size_t>(n_tokens * n_out));
    for (auto _ : state) {
        block_matmul(blocks.next(), x.data(), n_tokens, y.data(), pool());
        benchmark::DoNotOptimize(y.data());
    }
    state.counters["GFLOP/s"] =
        benchmark::Counter(rate(state, 2.0 * static_cast<double>(n_out * n_in * n_tokens) / 1e9),
                           benchmark::Counter::kIsRate);
    const BlockIsa* isa = block_active();
    state.SetLabel(std::string(type_case(state.range(0)).name) + " " +
                   (isa ? isa->name : "scalar"));
}

void token_args(benchmark::internal::Benchmark* b) {
    // Q4_0, Q8_0, Q4_K, Q5_K, Q6_K: what Q4_0, Q8_0, Q4_K_M and Q5_K_M files hold.
    for (int64_t type : {0, 4, 7, 8, 9}) {
        for (int64_t n_tokens : {2, 4, 8, 16, 32, 64, 512}) b->Args({type, n_tokens, 2048, 2048});
    }
}
BENCHMARK(BM_tokens)
    ->Name("block_tokens")
    ->Apply(token_args)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace anelm::kernels

BENCHMARK_MAIN();
