// Constrained decoding cost per token: the allowed-token mask for typical
// states of a JSON document, over Qwen3's vocabulary (shared/tokenizers/qwen3)
// or, where that is absent, a synthetic byte-level one of the same size. A decode
// step of a 0.6B model is tens of milliseconds on a CPU; the mask should be a
// small fraction of that.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <memory>
#include <random>

#include "grammar/piece_tokenizer.h"
#include "grammar/token_filter.h"
#include "tokenizer/tokenizer.h"

namespace {

using anelm::grammar::Grammar;
using anelm::grammar::Matcher;
using anelm::grammar::TokenFilter;

constexpr int32_t qwen_rows = 151936;  // Qwen3's embedding rows

// Random pieces of words, punctuation, digits and UTF-8, every byte among them,
// and an end-of-text token: qwen_rows in all.
std::vector<std::string> synthetic_pieces() {
    std::mt19937 rng(1);
    const std::string alphabet =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,:;\"{}[]_-";
    std::uniform_int_distribution<size_t> length(1, 10), pick(0, alphabet.size() - 1);
    std::vector<std::string> pieces;
    for (int b = 0; b < 256; ++b) pieces.emplace_back(1, static_cast<char>(b));
    while (pieces.size() < qwen_rows - 1) {
        std::string p = rng() % 3 == 0 ? " " : "";
        for (size_t n = length(rng); n > 0; --n) p += alphabet[pick(rng)];
        if (rng() % 10 == 0) p += "\xC3\xA9\xE6\x97\xA5";
        pieces.push_back(std::move(p));
    }
    return pieces;
}

const anelm::Tokenizer& tokenizer() {
    static const std::unique_ptr<anelm::Tokenizer> tok = [] {
        const char* env = std::getenv("ANELM_SHARED");
        const std::filesystem::path shared =
            env ? std::filesystem::path(env)
                : std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "shared";
        const auto qwen = shared / "tokenizers" / "qwen3" / "tokenizer.json";
        if (std::filesystem::exists(qwen)) return anelm::load_tokenizer(qwen.string());
        return std::unique_ptr<anelm::Tokenizer>(new anelm::PieceTokenizer(synthetic_pieces()));
    }();
    return *tok;
}

const TokenFilter& filter() {
    static const TokenFilter f(tokenizer(), tokenizer().eos_ids());
    return f;
}

const Grammar& person() {
    static const Grammar g =
        Grammar::from_json_schema(nlohmann::ordered_json::parse(R"({"type":"object","properties":{
            "name":{"type":"string","maxLength":40},"age":{"type":"integer"},
            "email":{"type":"string"},"tags":{"type":"array","items":{"type":"string"}}},
            "required":["name","age"]})"),
                                  "schema");
    return g;
}

void mask(benchmark::State& state, const Grammar& g, const char* prefix) {
    Matcher m(g);
    if (!m.advance(prefix)) return state.SkipWithError("prefix refused");
    std::vector<uint32_t> bits;
    for (auto _ : state) {
        filter().allowed(m, bits);
        benchmark::DoNotOptimize(bits.data());
    }
    int64_t allowed = 0;
    for (uint32_t w : bits) allowed += __builtin_popcount(w);
    state.counters["allowed"] = static_cast<double>(allowed);
    state.counters["vocab"] = filter().n_vocab();
}

void BM_Build(benchmark::State& state) {
    for (auto _ : state) {
        const TokenFilter f(tokenizer(), tokenizer().eos_ids());
        benchmark::DoNotOptimize(&f);
    }
}

void BM_Apply(benchmark::State& state) {
    Matcher m(person());
    m.advance(R"({"name":"Ann","age":30,"email":"ann@)");
    std::vector<float> logits(qwen_rows);
    for (auto _ : state) {
        std::fill(logits.begin(), logits.end(), 0.0f);
        filter().apply(m, logits);
        benchmark::DoNotOptimize(logits.data());
    }
}

}  // namespace

BENCHMARK(BM_Build)->Unit(benchmark::kMillisecond)->Iterations(1);
BENCHMARK_CAPTURE(mask, start, person(), "")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(mask, after_brace, person(), "{")->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(mask, in_string, person(), R"({"name":"Ann","age":30,"email":"ann@)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(mask, in_string_max_length, person(), R"({"name":"An)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(mask, in_number, person(), R"({"name":"Ann","age":3)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(mask, after_colon, person(), R"({"name":"Ann","age":)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(mask, after_comma, person(), R"({"name":"Ann","age":30,)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(mask, in_array, person(), R"({"name":"Ann","age":30,"tags":["a", )")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(mask, json_object_key, Grammar::any_object(), R"({"ke)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(mask, json_object_value, Grammar::any_object(), R"({"key": )")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(mask, json_object_nested, Grammar::any_object(), R"({"a":[{"b":[1,)")
    ->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_Apply)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
