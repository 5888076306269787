#include <algorithm>

#include "models/model_family.h"

namespace anelm {

namespace {

// An explicit list: a family that registered itself from its own file would be
// dropped by the linker, nothing else referring to it.
// Their order is the order of the lists in messages.
constexpr const ModelFamily* families[] = {&llama_family,  &qwen2_family, &qwen3_family,
                                           &gemma3_family, &lfm2_family,  &qwen3_5_family,
                                           &gemma4_family};

template <typename Names>
const ModelFamily* find_family(std::string_view name, Names ModelFamily::*names) {
    for (const ModelFamily* f : families)
        if (std::ranges::find(f->*names, name) != (f->*names).end()) return f;
    return nullptr;
}

}  // namespace

std::span<const ModelFamily* const> model_families() {
    return families;
}

const ModelFamily* model_family(Arch arch) {
    for (const ModelFamily* f : families)
        if (f->arch == arch) return f;
    return nullptr;
}

const char* arch_name(Arch arch) {
    const ModelFamily* family = model_family(arch);
    return family ? family->name : "?";
}

const ModelFamily* family_for_model_type(std::string_view model_type) {
    return find_family(model_type, &ModelFamily::model_types);
}

const ModelFamily* family_for_class(std::string_view hf_class) {
    return find_family(hf_class, &ModelFamily::hf_classes);
}

const ModelFamily* family_for_gguf(std::string_view gguf_arch) {
    for (const ModelFamily* f : families)
        if (!f->gguf_arch.empty() && f->gguf_arch == gguf_arch) return f;
    return nullptr;
}

}  // namespace anelm
