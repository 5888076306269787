// What the server can say about the model it serves beyond its name: the
// description Ollama's /api/tags, /api/show and /api/ps give.
#pragma once

#include <cstdint>
#include <string>

namespace anelm::server {

struct ModelFacts {
    std::string format;      // safetensors, gguf, llama2c, coreml
    std::string family;      // the architecture: qwen3, llama, ... ("" when unknown)
    int64_t parameters = 0;  // 0 when unknown
    std::string dtype;       // of most of the weights: bf16, f16, q4_0 ... ("" when unknown)
    uint64_t size = 0;       // bytes on disk
    int64_t modified = 0;    // the model's last change, seconds since 1970
    int64_t n_embd = 0, n_layer = 0, n_head = 0, n_head_kv = 0, n_vocab = 0, n_ctx_train = 0;
};

}  // namespace anelm::server
