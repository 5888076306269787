#include "models/hf_config.h"

#include <fmt/ranges.h>

#include <algorithm>

#include "base/error.h"
#include "io/config_fields.h"
#include "models/model_family.h"

namespace anelm {

namespace {

using nlohmann::json;

// Every family's names of one kind, for the message that lists what anelm reads.
std::string supported(std::span<const std::string_view> ModelFamily::*names) {
    std::vector<std::string_view> all;
    for (const ModelFamily* family : model_families())
        all.insert(all.end(), (family->*names).begin(), (family->*names).end());
    return fmt::format("{}", fmt::join(all, ", "));
}

const ModelFamily& config_family(const ConfigFields& f) {
    if (auto type = f.string("model_type")) {
        if (const ModelFamily* family = family_for_model_type(*type)) return *family;
        f.fail_field("model_type", "unsupported model type \"{}\" (supported: {})", *type,
                     supported(&ModelFamily::model_types));
    }
    const json* list = f.find("architectures");
    if (!list) f.fail_field("model_type", "missing, and no architectures field to fall back on");
    if (!list->is_array())
        f.fail_field("architectures", "expected a list of class names, got {}",
                     json_type_words(*list));
    for (const json& entry : *list) {
        if (!entry.is_string()) continue;
        if (const ModelFamily* family = family_for_class(entry.get_ref<const std::string&>()))
            return *family;
    }
    f.fail_field("architectures", "none of {} is supported ({})", list->dump(),
                 supported(&ModelFamily::hf_classes));
}

}  // namespace

ModelSpec parse_hf_config(std::string_view text, const std::string& path) {
    const json config = parse_json(text, path);
    if (!config.is_object())
        fail("{}: expected a JSON object, got {}", path, json_type_words(config));
    const ConfigFields top(config, path);

    ModelSpec spec;
    spec.source = path;
    const ModelFamily& family = config_family(top);
    spec.arch = family.arch;
    return family.parse_config(top, path, std::move(spec));
}

ModelSpec load_hf_config(const std::string& path) {
    return parse_hf_config(read_text_file(path), path);
}

void merge_generation_config(std::string_view text, const std::string& path, ModelSpec& spec) {
    const json config = parse_json(text, path);
    if (!config.is_object())
        fail("{}: expected a JSON object, got {}", path, json_type_words(config));
    const ConfigFields f(config, path);

    if (auto bos = bos_token_id(f, spec.n_vocab)) spec.bos_token_id = *bos;

    std::vector<int32_t> eos = f.token_ids("eos_token_id", spec.n_vocab);
    for (int32_t id : spec.eos_token_ids)
        if (std::find(eos.begin(), eos.end(), id) == eos.end()) eos.push_back(id);
    spec.eos_token_ids = std::move(eos);
}

void load_generation_config(const std::string& path, ModelSpec& spec) {
    merge_generation_config(read_text_file(path), path, spec);
}

}  // namespace anelm
