// Chat template speed: compiling the official templates and rendering
// conversations of growing length through them.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "chat/chat_template.h"

namespace {

using ojson = nlohmann::ordered_json;

// The shared data folder beside the source tree, or $ANELM_SHARED.
std::filesystem::path shared_dir() {
    if (const char* env = std::getenv("ANELM_SHARED")) return env;
    return std::filesystem::path(__FILE__).parent_path() / ".." / ".." / "shared";
}

std::string template_source(const char* name) {
    const auto path = shared_dir() / "tokenizers/chat-templates" / name;
    std::ifstream in(path);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

ojson conversation(int64_t turns) {
    ojson messages = ojson::array();
    messages.push_back({{"role", "system"}, {"content", "You are a helpful assistant."}});
    for (int64_t i = 0; i < turns; ++i) {
        messages.push_back(
            {{"role", "user"},
             {"content", "Question " + std::to_string(i) + ": " + std::string(400, 'q')}});
        messages.push_back(
            {{"role", "assistant"},
             {"content", "<think>\nreasoning\n</think>\n\n" + std::string(400, 'a')}});
    }
    messages.push_back({{"role", "user"}, {"content", "last question"}});
    return messages;
}

void render_turns(benchmark::State& state, const char* name) {
    const std::string source = template_source(name);
    if (source.empty()) {
        state.SkipWithError("shared chat templates not found");
        return;
    }
    const anelm::ChatTemplate chat(source, name, {{"bos_token", "<s>"}, {"eos_token", "</s>"}});
    const ojson messages = conversation(state.range(0));
    size_t bytes = 0;
    for (auto _ : state) {
        const std::string prompt = chat.render(messages, true, {{"date_string", "01 Jan 2025"}});
        bytes += prompt.size();
        benchmark::DoNotOptimize(prompt.data());
    }
    state.SetBytesProcessed(static_cast<int64_t>(bytes));
    state.counters["messages"] = static_cast<double>(messages.size());
}

void BM_RenderQwen3(benchmark::State& state) {
    render_turns(state, "Qwen-Qwen3.jinja");
}
void BM_RenderLlama31(benchmark::State& state) {
    render_turns(state, "meta-llama-Llama-3.1-8B-Instruct.jinja");
}
void BM_RenderGemma3(benchmark::State& state) {
    render_turns(state, "google-gemma-3-it.jinja");
}
BENCHMARK(BM_RenderQwen3)->Arg(1)->Arg(16)->Arg(256)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RenderLlama31)->Arg(1)->Arg(16)->Arg(256)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RenderGemma3)->Arg(1)->Arg(16)->Arg(256)->Unit(benchmark::kMicrosecond);

void BM_CompileQwen3(benchmark::State& state) {
    const std::string source = template_source("Qwen-Qwen3.jinja");
    for (auto _ : state) {
        const anelm::ChatTemplate chat(source, "qwen3");
        benchmark::DoNotOptimize(&chat);
    }
}
BENCHMARK(BM_CompileQwen3)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
