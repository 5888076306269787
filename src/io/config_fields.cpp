#include "io/config_fields.h"

namespace anelm {

using nlohmann::json;

RopeScaling parse_rope_scaling(const ConfigFields& r) {
    // The older spelling "type" wins over "rope_type", as in transformers.
    const char* type_field = r.find("type") ? "type" : "rope_type";
    const std::optional<std::string> type = r.string(type_field);
    if (!type) r.fail_field("rope_type", "missing");

    RopeScaling s;
    if (*type == "default") return s;
    if (*type == "linear") {
        s.type = RopeScaling::Type::linear;
        s.factor = r.required_positive("factor", 1e6);
        return s;
    }
    if (*type == "llama3") {
        s.type = RopeScaling::Type::llama3;
        s.factor = r.required_positive("factor", 1e6);
        s.low_freq_factor = r.required_positive("low_freq_factor", 1e6);
        s.high_freq_factor = r.required_positive("high_freq_factor", 1e6);
        s.original_max_position_embeddings =
            r.required_integer("original_max_position_embeddings", 1, max_ctx);
        // The smoothing between the two bands divides by their difference.
        if (s.high_freq_factor <= s.low_freq_factor)
            r.fail_field("high_freq_factor", "{} must be greater than low_freq_factor {}",
                         s.high_freq_factor, s.low_freq_factor);
        return s;
    }
    r.fail_field(type_field,
                 "unsupported rope scaling type \"{}\" (supported: default, linear, llama3)",
                 *type);
}

void parse_rope(const ConfigFields& f, const std::string& path, ModelSpec& spec) {
    spec.rope_theta = f.positive("rope_theta", 1e12).value_or(10000.0);
    for (const char* name : {"rope_parameters", "rope_scaling"}) {
        const json* v = f.find(name);
        if (!v) continue;
        if (!v->is_object())
            f.fail_field(name, "expected an object or null, got {}", json_type_words(*v));
        const ConfigFields r(*v, path, std::string(name) + ".");
        if (auto theta = r.positive("rope_theta", 1e12)) spec.rope_theta = *theta;
        spec.rope_scaling = parse_rope_scaling(r);
        return;
    }
}

std::optional<int32_t> bos_token_id(const ConfigFields& f, int64_t n_vocab) {
    const std::vector<int32_t> ids = f.token_ids("bos_token_id", n_vocab);
    if (ids.size() > 1) f.fail_field("bos_token_id", "expected one token id, got {}", ids.size());
    if (ids.empty()) return std::nullopt;
    return ids[0];
}
std::optional<std::vector<bool>> layer_types(const ConfigFields& f, int64_t n_layer,
                                             std::string_view marked) {
    const json* types = f.find("layer_types");
    if (!types) return std::nullopt;
    if (!types->is_array() || static_cast<int64_t>(types->size()) != n_layer)
        f.fail_field("layer_types", "expected a list of {} layer types", n_layer);
    std::vector<bool> kinds(static_cast<size_t>(n_layer));
    for (int64_t i = 0; i < n_layer; ++i) {
        const json& t = (*types)[static_cast<size_t>(i)];
        if (t == marked) {
            kinds[i] = true;
        } else if (t != "full_attention") {
            f.fail_field("layer_types", "entry {} is {}, expected \"{}\" or \"full_attention\"", i,
                         t.dump(), marked);
        }
    }
    return kinds;
}

int64_t derived_head_dim(const ConfigFields& f, const ModelSpec& spec) {
    if (spec.n_embd % spec.n_head != 0)
        f.fail_field("num_attention_heads", "{} does not divide hidden_size {}", spec.n_head,
                     spec.n_embd);
    return spec.n_embd / spec.n_head;
}

void check_kv_heads(const ConfigFields& f, const ModelSpec& spec) {
    if (spec.n_head % spec.n_head_kv != 0)
        f.fail_field("num_key_value_heads", "{} does not divide num_attention_heads {}",
                     spec.n_head_kv, spec.n_head);
}

std::vector<bool> all_but_every(int64_t n_layer, int64_t period) {
    std::vector<bool> kinds(static_cast<size_t>(n_layer));
    for (int64_t i = 0; i < n_layer; ++i) kinds[i] = (i + 1) % period != 0;
    return kinds;
}
std::string text_prefix(const ConfigFields& top) {
    const json* text = top.find("text_config");
    if (text && !text->is_object())
        top.fail_field("text_config", "expected an object, got {}", json_type_words(*text));
    return text ? "text_config." : "";
}

ConfigFields text_fields(const ConfigFields& top, const std::string& path) {
    const json* text = text_prefix(top).empty() ? nullptr : top.find("text_config");
    return text ? ConfigFields(*text, path, "text_config.") : top;
}
}  // namespace anelm
