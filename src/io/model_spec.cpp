#include "io/model_spec.h"

namespace anelm {

const char* arch_name(Arch arch) {
    switch (arch) {
        case Arch::llama: return "llama";
        case Arch::qwen2: return "qwen2";
        case Arch::qwen3: return "qwen3";
        case Arch::gemma3: return "gemma3";
        case Arch::lfm2:
            return "lfm2";
        case Arch::qwen3_5:
            return "qwen3_5";
    }
    return "?";
}

}  // namespace anelm
