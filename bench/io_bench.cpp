// Model loading: writing safetensors through the streaming writer, and mapping
// one back (header parse and validation; no tensor bytes are read).
#include <benchmark/benchmark.h>

#include <unistd.h>
#include <cstring>
#include <filesystem>
#include <string>

#include "io/safetensors.h"
#include "io/safetensors_writer.h"

namespace {

// 28 layers of 11 tensors plus embeddings and norm, like Qwen3-0.6B's header,
// with `row` floats per matrix row so the file size can be chosen.
std::vector<anelm::TensorSpec> layered_specs(int64_t row) {
    std::vector<anelm::TensorSpec> specs = {
        {"model.embed_tokens.weight", anelm::DType::bf16, {1024, row}},
        {"model.norm.weight", anelm::DType::bf16, {row}}};
    for (int i = 0; i < 28; ++i)
        for (const char* name :
             {"input_layernorm", "post_attention_layernorm", "self_attn.q_norm", "self_attn.k_norm",
              "self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
              "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
            specs.push_back({"model.layers." + std::to_string(i) + "." + name + ".weight",
                             anelm::DType::bf16,
                             {256, row}});
    return specs;
}

std::string bench_path() {
    return (std::filesystem::temp_directory_path() /
            ("anelm-io-bench-" + std::to_string(::getpid()) + ".safetensors"))
        .string();
}

void BM_write_safetensors(benchmark::State& state) {
    const auto specs = layered_specs(state.range(0));
    const std::string path = bench_path();
    size_t bytes = 0;
    for (auto _ : state) {
        anelm::write_safetensors(path, specs, [&](size_t i, std::span<std::byte> out) {
            std::memset(out.data(), static_cast<int>(i), out.size());
        });
        bytes += std::filesystem::file_size(path);
    }
    state.SetBytesProcessed(static_cast<int64_t>(bytes));
    std::filesystem::remove(path);
}
BENCHMARK(BM_write_safetensors)->Arg(64)->Arg(1024)->Unit(benchmark::kMillisecond);

void BM_load_safetensors(benchmark::State& state) {
    const auto specs = layered_specs(state.range(0));
    const std::string path = bench_path();
    anelm::write_safetensors(path, specs, [](size_t, std::span<std::byte> out) {
        std::memset(out.data(), 0, out.size());
    });
    for (auto _ : state) {
        anelm::WeightStore store;
        anelm::load_safetensors(path, store);
        benchmark::DoNotOptimize(store.size());
    }
    state.counters["tensors"] = static_cast<double>(specs.size());
    state.counters["file_MiB"] = static_cast<double>(std::filesystem::file_size(path)) / (1 << 20);
    std::filesystem::remove(path);
}
BENCHMARK(BM_load_safetensors)->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
