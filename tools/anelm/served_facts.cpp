#include "served_facts.h"

#include <filesystem>
#include <map>

#include "io/ggml_types.h"
#include "io/model_format.h"
#include "models/models.h"

namespace anelm::cli {

namespace {

namespace fs = std::filesystem;

const char* format_name(ModelFormat format) {
    switch (format) {
        case ModelFormat::hf_folder:
            return "safetensors";
        case ModelFormat::converted_folder:
        case ModelFormat::coreml_package:
            return "coreml";
        case ModelFormat::gguf:
            return "gguf";
        case ModelFormat::llama2c:
            return "llama2c";
    }
    return "";
}

uint64_t size_on_disk(const fs::path& path) {
    if (!fs::is_directory(path)) return fs::file_size(path);
    uint64_t size = 0;
    for (const auto& entry : fs::recursive_directory_iterator(path))
        if (entry.is_regular_file()) size += entry.file_size();
    return size;
}

// The weights' parameter count and the type most of them are stored in.
void count_weights(const WeightStore& weights, server::ModelFacts& facts) {
    std::map<std::string, int64_t> by_type;
    for (const std::string& name : weights.names()) {
        const TensorView& t = weights.get(name);
        facts.parameters += t.numel();
        by_type[t.dtype == DType::blocks ? ggml_type_name(t.block_type)
                                         : std::string(dtype_name(t.dtype))] += t.numel();
    }
    int64_t most = 0;
    for (const auto& [type, n] : by_type)
        if (n > most) {
            most = n;
            facts.dtype = type;
        }
}

}  // namespace

server::ModelFacts served_facts(const std::string& path, const Model* model,
                                const ConvertedModel* converted) {
    server::ModelFacts facts;
    facts.format = format_name(detect_model_format(path));
    facts.size = size_on_disk(path);
    facts.modified =
        std::chrono::duration_cast<std::chrono::seconds>(
            std::chrono::file_clock::to_sys(fs::last_write_time(path)).time_since_epoch())
            .count();
    if (converted) {
        facts.family = converted->layout().architecture;
        facts.n_vocab = converted->vocab_size();
        return facts;
    }
    const ModelSpec& spec = model->spec();
    facts.family = arch_name(spec.arch);
    facts.n_embd = spec.n_embd;
    facts.n_layer = spec.n_layer;
    facts.n_head = spec.n_head;
    facts.n_head_kv = spec.n_head_kv;
    facts.n_vocab = spec.n_vocab;
    facts.n_ctx_train = spec.n_ctx_train;
    count_weights(model->weights(), facts);
    return facts;
}

}  // namespace anelm::cli
