// Tokenizer speed: encode 1 MiB of mixed English, code and CJK text on one
// thread with Qwen3's, Llama 3's and Gemma 3's tokenizer.json, decode it back,
// and load Gemma 3's 33 MB tokenizer.json. bench/tokenizer/README.md compares
// with Hugging Face's own tokenizers.
//
// tokenizer_bench --text-out=PATH writes the text for that comparison and exits.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "tokenizer/mixed_text.h"  // bench/tokenizer/
#include "tokenizer/tokenizer.h"

namespace {

std::filesystem::path shared_tokenizer_path(const std::string& name) {
    const char* env = std::getenv("ANELM_SHARED");
    // The shared data folder beside the source tree, found from this file's path.
    const std::filesystem::path shared =
        env ? std::filesystem::path(env)
            : std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "shared";
    return shared / "tokenizers" / name / "tokenizer.json";
}

const std::string& text() {
    static const std::string t = anelm::bench::mixed_text(1 << 20);
    return t;
}

const anelm::Tokenizer* tokenizer(const std::string& name) {
    static std::map<std::string, std::unique_ptr<anelm::Tokenizer>> loaded;
    auto& slot = loaded[name];
    if (!slot && std::filesystem::exists(shared_tokenizer_path(name)))
        slot = anelm::load_tokenizer(shared_tokenizer_path(name).string());
    return slot.get();
}

void encode(benchmark::State& state, const std::string& name) {
    const anelm::Tokenizer* tok = tokenizer(name);
    if (!tok) return state.SkipWithError("shared tokenizer absent");
    size_t n_tokens = 0;
    for (auto _ : state) {
        const auto ids = tok->encode(text(), false);
        n_tokens = ids.size();
        benchmark::DoNotOptimize(ids.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text().size()));
    state.counters["tokens"] = static_cast<double>(n_tokens);
}

// The same text line by line (each line with its newline), one call after another.
void encode_lines(benchmark::State& state, const std::string& name) {
    const anelm::Tokenizer* tok = tokenizer(name);
    if (!tok) return state.SkipWithError("shared tokenizer absent");
    std::vector<std::string_view> lines;
    const std::string_view all = text();
    for (size_t at = 0; at < all.size();) {
        const size_t end = std::min(all.find('\n', at), all.size() - 1) + 1;
        lines.push_back(all.substr(at, end - at));
        at = end;
    }
    size_t n_tokens = 0;
    for (auto _ : state) {
        n_tokens = 0;
        for (std::string_view line : lines) n_tokens += tok->encode(line, false).size();
        benchmark::DoNotOptimize(n_tokens);
    }
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text().size()));
    state.counters["tokens"] = static_cast<double>(n_tokens);
}

void decode(benchmark::State& state, const std::string& name) {
    const anelm::Tokenizer* tok = tokenizer(name);
    if (!tok) return state.SkipWithError("shared tokenizer absent");
    const auto ids = tok->encode(text(), false);
    for (auto _ : state) benchmark::DoNotOptimize(tok->decode(ids).size());
    state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text().size()));
}

void stream_decode(benchmark::State& state, const std::string& name) {
    const anelm::Tokenizer* tok = tokenizer(name);
    if (!tok) return state.SkipWithError("shared tokenizer absent");
    const auto ids = tok->encode(text().substr(0, 64 << 10), false);
    for (auto _ : state) {
        anelm::StreamDecoder stream(*tok);
        size_t n = 0;
        for (int32_t id : ids) n += stream.push(id).size();
        benchmark::DoNotOptimize(n);
    }
    state.counters["tokens/s"] = benchmark::Counter(static_cast<double>(ids.size()),
                                                    benchmark::Counter::kIsIterationInvariantRate);
}

void load(benchmark::State& state, const std::string& name) {
    if (!std::filesystem::exists(shared_tokenizer_path(name)))
        return state.SkipWithError("shared tokenizer absent");
    for (auto _ : state)
        benchmark::DoNotOptimize(anelm::load_tokenizer(shared_tokenizer_path(name).string()));
}

BENCHMARK_CAPTURE(encode, qwen3, "qwen3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode, llama3, "llama3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode, gemma3, "gemma3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_lines, qwen3, "qwen3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(encode_lines, llama3, "llama3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(decode, qwen3, "qwen3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(stream_decode, qwen3, "qwen3")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(load, gemma3, "gemma3")->Unit(benchmark::kMillisecond)->Iterations(3);
BENCHMARK_CAPTURE(load, qwen3, "qwen3")->Unit(benchmark::kMillisecond)->Iterations(3);

}  // namespace

int main(int argc, char** argv) {
    for (int i = 1; i < argc; ++i) {
        if (std::strncmp(argv[i], "--text-out=", 11) == 0) {
            std::ofstream(argv[i] + 11, std::ios::binary) << text();
            return 0;
        }
    }
    benchmark::Initialize(&argc, argv);
    benchmark::RunSpecifiedBenchmarks();
    benchmark::Shutdown();
    return 0;
}
