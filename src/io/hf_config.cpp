#include "io/hf_config.h"

#include <algorithm>
#include <optional>

#include "base/error.h"
#include "io/json_file.h"

namespace anelm {

namespace {

using nlohmann::json;

// Typed access to the fields of one JSON object, with errors that name the file
// and the field ("config.json: field rope_scaling.factor: ...").
class Fields {
public:
    Fields(const json& object, const std::string& path, std::string prefix = "")
        : object_(object), path_(path), prefix_(std::move(prefix)) {}

    // The value, or nullptr when the field is absent or null.
    const json* find(const char* name) const {
        auto it = object_.find(name);
        return it == object_.end() || it->is_null() ? nullptr : &*it;
    }
    bool has(const char* name) const { return object_.contains(name); }

    template <typename... Args>
    [[noreturn]] void fail_field(const char* name, fmt::format_string<Args...> what,
                                 Args&&... args) const {
        fail("{}: field {}{}: {}", path_, prefix_, name,
             fmt::format(what, std::forward<Args>(args)...));
    }

    std::optional<int64_t> integer(const char* name, int64_t lo, int64_t hi) const {
        const json* v = find(name);
        if (!v) return std::nullopt;
        if (!v->is_number_integer())
            fail_field(name, "expected an integer, got {}", json_type_words(*v));
        if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi))
            fail_field(name, "{} is out of range [{}, {}]", v->get<uint64_t>(), lo, hi);
        const int64_t i = v->get<int64_t>();
        if (i < lo || i > hi) fail_field(name, "{} is out of range [{}, {}]", i, lo, hi);
        return i;
    }
    int64_t required_integer(const char* name, int64_t lo, int64_t hi) const {
        if (auto i = integer(name, lo, hi)) return *i;
        fail_field(name, "missing");
    }

    // A finite number in (0, hi].
    std::optional<double> positive(const char* name, double hi) const {
        const json* v = find(name);
        if (!v) return std::nullopt;
        if (!v->is_number()) fail_field(name, "expected a number, got {}", json_type_words(*v));
        const double x = v->get<double>();
        if (!(x > 0.0) || !(x <= hi)) fail_field(name, "{} is out of range (0, {}]", x, hi);
        return x;
    }
    double required_positive(const char* name, double hi) const {
        if (auto x = positive(name, hi)) return *x;
        fail_field(name, "missing");
    }

    bool boolean(const char* name, bool fallback) const {
        const json* v = find(name);
        if (!v) return fallback;
        if (!v->is_boolean())
            fail_field(name, "expected true or false, got {}", json_type_words(*v));
        return v->get<bool>();
    }

    std::optional<std::string> string(const char* name) const {
        const json* v = find(name);
        if (!v) return std::nullopt;
        if (!v->is_string()) fail_field(name, "expected a string, got {}", json_type_words(*v));
        return v->get<std::string>();
    }

    // A token id, or a list of them (eos_token_id), each in [0, n_vocab).
    std::vector<int32_t> token_ids(const char* name, int64_t n_vocab) const {
        const json* v = find(name);
        if (!v) return {};
        const auto check = [&](const json& id) {
            if (!id.is_number_integer())
                fail_field(name, "expected a token id, got {}", json_type_words(id));
            const int64_t i = id.get<int64_t>();
            if (id.is_number_unsigned() ? id.get<uint64_t>() >= static_cast<uint64_t>(n_vocab)
                                        : i < 0 || i >= n_vocab)
                fail_field(name, "token id {} is outside the vocabulary [0, {})", id.dump(),
                           n_vocab);
            return static_cast<int32_t>(i);
        };
        std::vector<int32_t> ids;
        if (v->is_array()) {
            for (const json& id : *v) ids.push_back(check(id));
        } else {
            ids.push_back(check(*v));
        }
        return ids;
    }

private:
    const json& object_;
    const std::string& path_;
    std::string prefix_;
};

// Upper bounds that no real model reaches; past them a value is corrupt.
constexpr int64_t max_dim = int64_t{1} << 20;
constexpr int64_t max_layers = 4096;
constexpr int64_t max_vocab = int64_t{1} << 24;
constexpr int64_t max_ctx = int64_t{1} << 30;

Arch parse_arch(const Fields& f) {
    constexpr std::pair<std::string_view, Arch> types[] = {
        {"llama", Arch::llama},        {"qwen2", Arch::qwen2},          {"qwen3", Arch::qwen3},
        {"gemma3_text", Arch::gemma3}, {"gemma3", Arch::gemma3},        {"lfm2", Arch::lfm2},
        {"qwen3_5", Arch::qwen3_5},    {"qwen3_5_text", Arch::qwen3_5}, {"gemma4", Arch::gemma4},
        {"gemma4_text", Arch::gemma4}};
    constexpr std::pair<std::string_view, Arch> classes[] = {
        {"LlamaForCausalLM", Arch::llama},
        {"Qwen2ForCausalLM", Arch::qwen2},
        {"Qwen3ForCausalLM", Arch::qwen3},
        {"Gemma3ForCausalLM", Arch::gemma3},
        {"Gemma3ForConditionalGeneration", Arch::gemma3},
        {"Lfm2ForCausalLM", Arch::lfm2},
        {"Qwen3_5ForCausalLM", Arch::qwen3_5},
        {"Qwen3_5ForConditionalGeneration", Arch::qwen3_5},
        {"Gemma4ForCausalLM", Arch::gemma4},
        {"Gemma4ForConditionalGeneration", Arch::gemma4}};
    if (auto type = f.string("model_type")) {
        for (const auto& [name, arch] : types)
            if (name == *type) return arch;
        f.fail_field("model_type",
                     "unsupported model type \"{}\" (supported: llama, qwen2, qwen3, gemma3_text, "
                     "gemma3, lfm2, qwen3_5, qwen3_5_text, gemma4, gemma4_text)",
                     *type);
    }
    const json* list = f.find("architectures");
    if (!list) f.fail_field("model_type", "missing, and no architectures field to fall back on");
    if (!list->is_array())
        f.fail_field("architectures", "expected a list of class names, got {}",
                     json_type_words(*list));
    for (const json& entry : *list)
        for (const auto& [name, arch] : classes)
            if (entry.is_string() && entry.get_ref<const std::string&>() == name) return arch;
    f.fail_field("architectures",
                 "none of {} is supported (LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, "
                 "Gemma3ForCausalLM, Gemma3ForConditionalGeneration, Lfm2ForCausalLM, "
                 "Qwen3_5ForCausalLM, Qwen3_5ForConditionalGeneration, Gemma4ForCausalLM, "
                 "Gemma4ForConditionalGeneration)",
                 list->dump());
}

RopeScaling parse_rope_scaling(const Fields& r) {
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

// rope_theta and rope scaling: transformers 5 groups both under rope_parameters;
// earlier configs have rope_theta and rope_scaling at the top level.
void parse_rope(const Fields& f, const std::string& path, ModelSpec& spec) {
    spec.rope_theta = f.positive("rope_theta", 1e12).value_or(10000.0);
    for (const char* name : {"rope_parameters", "rope_scaling"}) {
        const json* v = f.find(name);
        if (!v) continue;
        if (!v->is_object())
            f.fail_field(name, "expected an object or null, got {}", json_type_words(*v));
        const Fields r(*v, path, std::string(name) + ".");
        if (auto theta = r.positive("rope_theta", 1e12)) spec.rope_theta = *theta;
        spec.rope_scaling = parse_rope_scaling(r);
        return;
    }
}

std::optional<int32_t> bos_token_id(const Fields& f, int64_t n_vocab) {
    const std::vector<int32_t> ids = f.token_ids("bos_token_id", n_vocab);
    if (ids.size() > 1) f.fail_field("bos_token_id", "expected one token id, got {}", ids.size());
    if (ids.empty()) return std::nullopt;
    return ids[0];
}

void check_features(const Fields& f, Arch arch) {
    // Gemma 3 names its activation hidden_activation, a GELU by default.
    const bool gemma = arch == Arch::gemma3;
    const char* act_field = gemma ? "hidden_activation" : "hidden_act";
    const char* act_name = gemma ? "gelu_pytorch_tanh" : "silu";
    if (auto act = f.string(act_field); act && *act != act_name)
        f.fail_field(act_field, "unsupported activation \"{}\" (supported: {})", *act, act_name);
    if (f.boolean("mlp_bias", false)) f.fail_field("mlp_bias", "true is not supported");
    if (arch != Arch::llama && !gemma && f.boolean("use_sliding_window", false))
        f.fail_field("use_sliding_window", "true is not supported");
}

// layer_types, when given: one entry a layer, `marked` (true) or
// "full_attention" (false).
std::optional<std::vector<bool>> layer_types(const Fields& f, int64_t n_layer,
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

// The head size of a config that names none: hidden_size over the query heads.
int64_t derived_head_dim(const Fields& f, const ModelSpec& spec) {
    if (spec.n_embd % spec.n_head != 0)
        f.fail_field("num_attention_heads", "{} does not divide hidden_size {}", spec.n_head,
                     spec.n_embd);
    return spec.n_embd / spec.n_head;
}

// Grouped-query attention: each KV head serves the same number of query heads.
void check_kv_heads(const Fields& f, const ModelSpec& spec) {
    if (spec.n_head % spec.n_head_kv != 0)
        f.fail_field("num_key_value_heads", "{} does not divide num_attention_heads {}",
                     spec.n_head_kv, spec.n_head);
}

// The layer_types transformers derives when a config lists none: every layer
// marked but each period-th, which attends fully.
std::vector<bool> all_but_every(int64_t n_layer, int64_t period) {
    std::vector<bool> kinds(static_cast<size_t>(n_layer));
    for (int64_t i = 0; i < n_layer; ++i) kinds[i] = (i + 1) % period != 0;
    return kinds;
}

// Which layers use sliding-window attention: layer_types when given, else every
// layer but each sliding_window_pattern-th (transformers' Gemma 3 rule).
std::vector<bool> gemma3_sliding_layers(const Fields& f, int64_t n_layer) {
    if (auto kinds = layer_types(f, n_layer, "sliding_attention")) return *kinds;
    return all_but_every(n_layer, f.integer("sliding_window_pattern", 1, max_layers).value_or(6));
}

// Gemma3TextConfig's defaults. A multimodal config's text_config names only the
// fields that differ from them (gemma-3-4b's has no head counts or vocab_size).
json gemma3_text_defaults() {
    return {{"hidden_size", 2304},      {"intermediate_size", 9216},
            {"num_hidden_layers", 26},  {"num_attention_heads", 8},
            {"num_key_value_heads", 4}, {"head_dim", 256},
            {"vocab_size", 262208},     {"max_position_embeddings", 131072},
            {"rms_norm_eps", 1e-6},     {"query_pre_attn_scalar", 256},
            {"sliding_window", 4096},   {"rope_local_base_freq", 10000.0},
            {"rope_theta", 1e6},        {"tie_word_embeddings", true}};
}

// Gemma 3's own fields (parse_hf_config has filled in Gemma3TextConfig's defaults).
// transformers 5 splits rope_parameters into full_attention and sliding_attention.
void parse_gemma3(const Fields& f, const std::string& path, ModelSpec& spec) {
    spec.qk_norm = true;
    spec.query_pre_attn_scalar = f.positive("query_pre_attn_scalar", 1e9).value_or(256.0);
    spec.sliding_window = f.integer("sliding_window", 1, max_ctx).value_or(4096);
    spec.sliding_layers = gemma3_sliding_layers(f, spec.n_layer);
    spec.rope_local_base_freq = f.positive("rope_local_base_freq", 1e12).value_or(10000.0);
    spec.final_logit_softcapping = f.positive("final_logit_softcapping", 1e9).value_or(0.0);
    spec.attn_logit_softcapping = f.positive("attn_logit_softcapping", 1e9).value_or(0.0);
    spec.tie_word_embeddings = f.boolean("tie_word_embeddings", true);
    spec.rope_theta = f.positive("rope_theta", 1e12).value_or(spec.rope_theta);
    const json* params = f.find("rope_parameters");
    if (params && params->is_object() && params->contains("full_attention")) {
        const Fields full((*params)["full_attention"], path, "rope_parameters.full_attention.");
        spec.rope_theta = full.positive("rope_theta", 1e12).value_or(spec.rope_theta);
        spec.rope_scaling = parse_rope_scaling(full);
        if (params->contains("sliding_attention")) {
            const Fields local((*params)["sliding_attention"], path,
                               "rope_parameters.sliding_attention.");
            spec.rope_local_base_freq =
                local.positive("rope_theta", 1e12).value_or(spec.rope_local_base_freq);
        }
    } else {
        parse_rope(f, path, spec);
    }
}

// LFM2's layer kinds: layer_types, else attention on full_attn_idxs (every
// layer when that is absent too, as Lfm2Config defaults).
std::vector<bool> lfm2_conv_layers(const Fields& f, int64_t n_layer) {
    if (auto kinds = layer_types(f, n_layer, "conv")) return *kinds;
    std::vector<bool> conv(static_cast<size_t>(n_layer), false);
    if (const json* idxs = f.find("full_attn_idxs")) {
        if (!idxs->is_array()) f.fail_field("full_attn_idxs", "expected a list of layer numbers");
        conv.assign(static_cast<size_t>(n_layer), true);
        for (const json& i : *idxs) {
            if (!i.is_number_integer() || i.get<int64_t>() < 0 || i.get<int64_t>() >= n_layer)
                f.fail_field("full_attn_idxs", "{} is not a layer number below {}", i.dump(),
                             n_layer);
            conv[static_cast<size_t>(i.get<int64_t>())] = false;
        }
    }
    return conv;
}

// Lfm2Config's own names and defaults: norm_eps, theta, tie_embedding, and an
// MLP width that block_auto_adjust_ff_dim derives from block_ff_dim.
ModelSpec parse_lfm2(const Fields& f, const std::string& path, ModelSpec spec) {
    spec.n_embd = f.required_integer("hidden_size", 1, max_dim);
    spec.n_layer = f.required_integer("num_hidden_layers", 1, max_layers);
    spec.n_head = f.required_integer("num_attention_heads", 1, max_dim);
    spec.n_head_kv = f.integer("num_key_value_heads", 1, max_dim).value_or(8);
    spec.head_dim = derived_head_dim(f, spec);
    check_kv_heads(f, spec);
    if (spec.head_dim % 2 != 0)
        f.fail_field("num_attention_heads",
                     "heads of {} dimensions; rotary embedding rotates pairs", spec.head_dim);
    const char* ff_field = f.has("block_ff_dim") ? "block_ff_dim" : "intermediate_size";
    int64_t ff = f.integer(ff_field, 1, max_dim * 16).value_or(12288);
    if (f.boolean("block_auto_adjust_ff_dim", true)) {
        ff = 2 * ff / 3;
        if (const json* mult = f.find("block_ffn_dim_multiplier")) {
            if (!mult->is_number())
                f.fail_field("block_ffn_dim_multiplier", "expected a number or null");
            ff = static_cast<int64_t>(mult->get<double>() * static_cast<double>(ff));
            const int64_t multiple = f.integer("block_multiple_of", 1, max_dim).value_or(256);
            ff = (ff + multiple - 1) / multiple * multiple;
        }
        if (ff < 1) f.fail_field(ff_field, "leaves an MLP of width {}", ff);
    }
    spec.n_ff = ff;
    spec.n_vocab = f.integer("vocab_size", 1, max_vocab).value_or(65536);
    spec.n_ctx_train = f.integer("max_position_embeddings", 1, max_ctx).value_or(128000);
    spec.rms_norm_eps = f.positive("norm_eps", 1.0).value_or(1e-5);
    // Lfm2Config's theta: "theta", else rope_theta (top level or in rope_parameters), else 1e6.
    parse_rope(f, path, spec);
    const json* params = f.find("rope_parameters");
    const bool named =
        f.has("rope_theta") || (params && params->is_object() && params->contains("rope_theta"));
    spec.rope_theta = f.positive("theta", 1e12).value_or(named ? spec.rope_theta : 1e6);
    spec.tie_word_embeddings = f.has("tie_embedding") ? f.boolean("tie_embedding", true)
                                                      : f.boolean("tie_word_embeddings", true);
    spec.qk_norm = true;
    spec.conv_layers = lfm2_conv_layers(f, spec.n_layer);
    spec.conv_kernel = f.integer("conv_L_cache", 1, 64).value_or(3);
    spec.conv_bias = f.boolean("conv_bias", false);
    spec.torch_dtype = f.string("torch_dtype").value_or(f.string("dtype").value_or(""));
    spec.bos_token_id = bos_token_id(f, spec.n_vocab).value_or(spec.n_vocab > 1 ? 1 : -1);
    spec.eos_token_ids = f.token_ids("eos_token_id", spec.n_vocab);
    if (!f.has("eos_token_id") && spec.n_vocab > 2) spec.eos_token_ids = {2};
    return spec;
}

// Qwen3.5's layer kinds: layer_types, else full attention every
// full_attention_interval-th layer (Qwen3_5TextConfig's rule).
std::vector<bool> qwen3_5_delta_layers(const Fields& f, int64_t n_layer) {
    if (auto kinds = layer_types(f, n_layer, "linear_attention")) return *kinds;
    return all_but_every(n_layer, f.integer("full_attention_interval", 1, max_layers).value_or(4));
}

// Qwen3.5's rotation: rope_parameters (or the older rope_scaling) win over
// the top-level fields. Text positions are the same on mRoPE's three axes,
// which makes it plain rotate-half rotation of the leading dims.
void parse_qwen3_5_rope(const Fields& f, const std::string& path, const std::string& prefix,
                        ModelSpec& spec) {
    double partial = f.positive("partial_rotary_factor", 1.0).value_or(0.25);
    spec.rope_theta = f.positive("rope_theta", 1e12).value_or(10000.0);
    for (const char* name : {"rope_scaling", "rope_parameters"}) {
        const json* v = f.find(name);
        if (!v) continue;
        if (!v->is_object()) f.fail_field(name, "expected an object");
        const Fields r(*v, path, prefix + name + ".");
        if (auto type = r.string("rope_type"); type && *type != "default" && *type != "mrope")
            r.fail_field("rope_type", "unsupported \"{}\" (supported: default, mrope)", *type);
        spec.rope_theta = r.positive("rope_theta", 1e12).value_or(spec.rope_theta);
        partial = r.positive("partial_rotary_factor", 1.0).value_or(partial);
        break;
    }
    spec.rope_dims = static_cast<int64_t>(static_cast<double>(spec.head_dim) * partial);
    if (spec.rope_dims < 2 || spec.rope_dims % 2 != 0)
        f.fail_field("partial_rotary_factor", "rotates {} of {} dims, expected an even count",
                     spec.rope_dims, spec.head_dim);
}

// A multimodal config's language model: its fields under text_config (the
// prefix its error messages give them), else the top level's.
std::string text_prefix(const Fields& top) {
    const json* text = top.find("text_config");
    if (text && !text->is_object())
        top.fail_field("text_config", "expected an object, got {}", json_type_words(*text));
    return text ? "text_config." : "";
}

Fields text_fields(const Fields& top, const std::string& path) {
    const json* text = text_prefix(top).empty() ? nullptr : top.find("text_config");
    return text ? Fields(*text, path, "text_config.") : top;
}

// Qwen3.5's text model: its fields under text_config in the released
// (multimodal) checkpoints, at the top level in a text-only one.
ModelSpec parse_qwen3_5(const Fields& top, const std::string& path, ModelSpec spec) {
    const std::string prefix = text_prefix(top);
    const Fields f = text_fields(top, path);
    if (auto act = f.string("hidden_act"); act && *act != "silu")
        f.fail_field("hidden_act", "unsupported activation \"{}\" (supported: silu)", *act);
    if (f.boolean("attention_bias", false)) f.fail_field("attention_bias", "true is not supported");
    spec.n_embd = f.required_integer("hidden_size", 1, max_dim);
    spec.n_layer = f.required_integer("num_hidden_layers", 1, max_layers);
    spec.n_head = f.required_integer("num_attention_heads", 1, max_dim);
    spec.n_head_kv = f.integer("num_key_value_heads", 1, max_dim).value_or(4);
    spec.head_dim = f.integer("head_dim", 2, max_dim).value_or(256);
    check_kv_heads(f, spec);
    spec.n_ff = f.required_integer("intermediate_size", 1, max_dim * 16);
    spec.n_vocab = f.required_integer("vocab_size", 1, max_vocab);
    spec.n_ctx_train = f.integer("max_position_embeddings", 1, max_ctx).value_or(32768);
    spec.rms_norm_eps = f.positive("rms_norm_eps", 1.0).value_or(1e-6);
    spec.delta_layers = qwen3_5_delta_layers(f, spec.n_layer);
    spec.conv_kernel = f.integer("linear_conv_kernel_dim", 1, 64).value_or(4);
    spec.delta_n_head_k = f.integer("linear_num_key_heads", 1, max_dim).value_or(16);
    spec.delta_n_head_v = f.integer("linear_num_value_heads", 1, max_dim).value_or(32);
    spec.delta_head_dim_k = f.integer("linear_key_head_dim", 1, max_dim).value_or(128);
    spec.delta_head_dim_v = f.integer("linear_value_head_dim", 1, max_dim).value_or(128);
    if (spec.delta_n_head_v % spec.delta_n_head_k != 0)
        f.fail_field("linear_num_value_heads", "{} is not a multiple of linear_num_key_heads {}",
                     spec.delta_n_head_v, spec.delta_n_head_k);
    parse_qwen3_5_rope(f, path, prefix, spec);
    spec.tie_word_embeddings = top.has("tie_word_embeddings")
                                   ? top.boolean("tie_word_embeddings", false)
                                   : f.boolean("tie_word_embeddings", false);
    spec.qk_norm = true;
    spec.attention_gate = true;
    spec.torch_dtype =
        f.string("torch_dtype")
            .value_or(f.string("dtype").value_or(top.string("torch_dtype").value_or("")));
    const Fields& ids = f.has("eos_token_id") || f.has("bos_token_id") ? f : top;
    spec.bos_token_id = bos_token_id(ids, spec.n_vocab).value_or(-1);
    spec.eos_token_ids = ids.token_ids("eos_token_id", spec.n_vocab);
    return spec;
}

// Gemma 4's rotation (Gemma4TextConfig's rope_parameters): "default" on the
// sliding layers; "proportional" (or "default") on the full ones, over
// global_head_dim, turning partial_rotary_factor of the frequencies.
void parse_gemma4_rope(const Fields& f, const std::string& path, const std::string& prefix,
                       ModelSpec& spec) {
    spec.rope_local_base_freq = 10000.0;
    spec.rope_theta = 1e6;
    spec.rope_global_fraction = 0.25;
    const json* params = f.find("rope_parameters");
    if (!params) return;
    if (!params->is_object()) f.fail_field("rope_parameters", "expected an object");
    const std::string base = prefix + "rope_parameters.";
    if (const json* local =
            params->contains("sliding_attention") ? &(*params)["sliding_attention"] : nullptr) {
        const Fields r(*local, path, base + "sliding_attention.");
        if (auto type = r.string("rope_type"); type && *type != "default")
            r.fail_field("rope_type", "unsupported \"{}\" (supported: default)", *type);
        spec.rope_local_base_freq = r.positive("rope_theta", 1e12).value_or(10000.0);
    }
    if (const json* full =
            params->contains("full_attention") ? &(*params)["full_attention"] : nullptr) {
        const Fields r(*full, path, base + "full_attention.");
        const std::string type = r.string("rope_type").value_or("default");
        if (type != "default" && type != "proportional")
            r.fail_field("rope_type", "unsupported \"{}\" (supported: default, proportional)",
                         type);
        spec.rope_theta = r.positive("rope_theta", 1e12).value_or(1e6);
        spec.rope_global_fraction =
            type == "proportional" ? r.positive("partial_rotary_factor", 1.0).value_or(1.0) : 1.0;
        if (const double factor = r.positive("factor", 1e6).value_or(1.0); factor != 1.0) {
            spec.rope_scaling.type = RopeScaling::Type::linear;
            spec.rope_scaling.factor = factor;
        }
    }
}

// Gemma 4's layer kinds: layer_types, else one full layer in six; the last
// layer attends fully whatever the list says (Gemma4TextConfig forces it).
std::vector<bool> gemma4_sliding_layers(const Fields& f, int64_t n_layer) {
    std::vector<bool> kinds =
        layer_types(f, n_layer, "sliding_attention").value_or(all_but_every(n_layer, 6));
    kinds.back() = false;
    return kinds;
}

// Gemma 4's text model (Gemma4TextConfig's names and defaults): under
// text_config in the released (multimodal) checkpoints, at the top level in a
// text-only one. The dense E2B/E4B layout only: no MoE, no k = v attention.
ModelSpec parse_gemma4(const Fields& top, const std::string& path, ModelSpec spec) {
    const std::string prefix = text_prefix(top);
    const Fields f = text_fields(top, path);
    if (auto act = f.string("hidden_activation"); act && *act != "gelu_pytorch_tanh")
        f.fail_field("hidden_activation",
                     "unsupported activation \"{}\" (supported: gelu_pytorch_tanh)", *act);
    for (const char* field : {"attention_bias", "attention_k_eq_v", "enable_moe_block"})
        if (f.boolean(field, false)) f.fail_field(field, "true is not supported");
    if (f.find("use_bidirectional_attention"))
        f.fail_field("use_bidirectional_attention", "is not supported (text attends causally)");
    spec.n_embd = f.integer("hidden_size", 1, max_dim).value_or(2304);
    spec.n_layer = f.integer("num_hidden_layers", 1, max_layers).value_or(30);
    spec.n_head = f.integer("num_attention_heads", 1, max_dim).value_or(8);
    spec.n_head_kv = f.integer("num_key_value_heads", 1, max_dim).value_or(4);
    check_kv_heads(f, spec);
    spec.head_dim = f.integer("head_dim", 2, max_dim).value_or(256);
    spec.global_head_dim = f.integer("global_head_dim", 2, max_dim).value_or(512);
    if (spec.head_dim % 2 != 0 || spec.global_head_dim % 2 != 0)
        f.fail_field(spec.head_dim % 2 ? "head_dim" : "global_head_dim",
                     "is odd; rotary embedding rotates pairs");
    spec.n_ff = f.integer("intermediate_size", 1, max_dim * 16).value_or(9216);
    spec.n_vocab = f.integer("vocab_size", 1, max_vocab).value_or(262144);
    spec.n_ctx_train = f.integer("max_position_embeddings", 1, max_ctx).value_or(131072);
    spec.rms_norm_eps = f.positive("rms_norm_eps", 1.0).value_or(1e-6);
    spec.sliding_window = f.integer("sliding_window", 1, max_ctx).value_or(512);
    spec.sliding_layers = gemma4_sliding_layers(f, spec.n_layer);
    spec.final_logit_softcapping = f.positive("final_logit_softcapping", 1e9).value_or(0.0);
    spec.n_kv_shared_layers = f.integer("num_kv_shared_layers", 0, spec.n_layer - 1).value_or(0);
    for (int64_t il = spec.n_layer - spec.n_kv_shared_layers; il < spec.n_layer; ++il)
        if (kv_source_layer(spec, il) == il)
            f.fail_field("num_kv_shared_layers",
                         "layer {} would share K/V but no earlier layer of its kind computes them",
                         il);
    spec.double_wide_mlp = f.boolean("use_double_wide_mlp", false);
    // A null width means no per-layer embeddings; an absent one Gemma4TextConfig's 256.
    spec.per_layer_dim = f.has("hidden_size_per_layer_input")
                             ? f.integer("hidden_size_per_layer_input", 1, max_dim).value_or(0)
                             : 256;
    if (spec.per_layer_dim > 0) {
        spec.per_layer_vocab =
            f.integer("vocab_size_per_layer_input", 1, max_vocab).value_or(262144);
        if (spec.per_layer_vocab != spec.n_vocab)
            f.fail_field("vocab_size_per_layer_input",
                         "{} differs from vocab_size {}, which is not supported",
                         spec.per_layer_vocab, spec.n_vocab);
    }
    parse_gemma4_rope(f, path, prefix, spec);
    spec.tie_word_embeddings = top.has("tie_word_embeddings")
                                   ? top.boolean("tie_word_embeddings", true)
                                   : f.boolean("tie_word_embeddings", true);
    spec.qk_norm = true;
    spec.torch_dtype =
        f.string("torch_dtype")
            .value_or(f.string("dtype").value_or(top.string("torch_dtype").value_or("")));
    const Fields& ids = f.has("eos_token_id") || f.has("bos_token_id") ? f : top;
    spec.bos_token_id = bos_token_id(ids, spec.n_vocab).value_or(spec.n_vocab > 2 ? 2 : -1);
    spec.eos_token_ids = ids.token_ids("eos_token_id", spec.n_vocab);
    if (spec.eos_token_ids.empty() && spec.n_vocab > 1) spec.eos_token_ids = {1};
    return spec;
}

}  // namespace

ModelSpec parse_hf_config(std::string_view text, const std::string& path) {
    const json config = parse_json(text, path);
    if (!config.is_object())
        fail("{}: expected a JSON object, got {}", path, json_type_words(config));
    const Fields top(config, path);

    ModelSpec spec;
    spec.source = path;
    spec.arch = parse_arch(top);
    if (spec.arch == Arch::lfm2) return parse_lfm2(top, path, std::move(spec));
    if (spec.arch == Arch::qwen3_5) return parse_qwen3_5(top, path, std::move(spec));
    if (spec.arch == Arch::gemma4) return parse_gemma4(top, path, std::move(spec));
    // A multimodal Gemma 3 keeps the language model's fields under text_config.
    const json* text_config = spec.arch == Arch::gemma3 ? top.find("text_config") : nullptr;
    if (text_config && !text_config->is_object())
        top.fail_field("text_config", "expected an object, got {}", json_type_words(*text_config));
    json gemma_fields;
    if (spec.arch == Arch::gemma3) {
        gemma_fields = gemma3_text_defaults();
        for (const auto& [key, value] : (text_config ? *text_config : config).items())
            gemma_fields[key] = value;
    }
    const Fields f = spec.arch == Arch::gemma3
                         ? Fields(gemma_fields, path, text_config ? "text_config." : "")
                         : top;
    check_features(f, spec.arch);
    const bool is_llama = spec.arch == Arch::llama;

    spec.n_embd = f.required_integer("hidden_size", 1, max_dim);
    spec.n_layer = f.required_integer("num_hidden_layers", 1, max_layers);
    spec.n_head = f.required_integer("num_attention_heads", 1, max_dim);
    // transformers derives n_head_kv from n_head when it is null, and for Llama
    // also when absent; Qwen's classes default to a fixed 32 instead, which no
    // real checkpoint relies on, so there the field is required.
    if (is_llama || f.has("num_key_value_heads"))
        spec.n_head_kv = f.integer("num_key_value_heads", 1, max_dim).value_or(spec.n_head);
    else
        f.fail_field("num_key_value_heads", "missing");
    if (auto head_dim = f.integer("head_dim", 1, max_dim)) {
        spec.head_dim = *head_dim;
    } else if (spec.arch == Arch::qwen3 || spec.arch == Arch::gemma3) {
        f.fail_field("head_dim", "missing ({} does not derive it from hidden_size)",
                     arch_name(spec.arch));
    } else {
        spec.head_dim = derived_head_dim(f, spec);
    }
    check_kv_heads(f, spec);
    if (spec.head_dim % 2 != 0)
        f.fail_field("head_dim", "{} is odd; rotary embedding rotates pairs", spec.head_dim);
    spec.n_ff = f.required_integer("intermediate_size", 1, max_dim * 16);
    spec.n_vocab = f.required_integer("vocab_size", 1, max_vocab);
    spec.n_ctx_train = f.required_integer("max_position_embeddings", 1, max_ctx);

    if (spec.arch != Arch::gemma3) parse_rope(f, path, spec);
    spec.rope_style = RopeStyle::rotate_half;
    spec.rms_norm_eps = f.positive("rms_norm_eps", 1.0).value_or(1e-6);
    spec.tie_word_embeddings = f.boolean("tie_word_embeddings", false);

    // Qwen2 always has q/k/v biases and none on o_proj; Llama and Qwen3 put a
    // bias on all four projections when attention_bias is set.
    if (spec.arch == Arch::qwen2) {
        spec.attention_bias = true;
    } else {
        spec.attention_bias = f.boolean("attention_bias", false);
        spec.attention_out_bias = spec.attention_bias;
    }
    spec.qk_norm = spec.arch == Arch::qwen3;
    if (spec.arch == Arch::gemma3) parse_gemma3(f, path, spec);
    // transformers 5 renamed torch_dtype to dtype; a multimodal config may name it at the top.
    spec.torch_dtype =
        f.string("torch_dtype")
            .value_or(f.string("dtype").value_or(top.string("torch_dtype").value_or("")));

    spec.bos_token_id = bos_token_id(f, spec.n_vocab).value_or(-1);
    spec.eos_token_ids = f.token_ids("eos_token_id", spec.n_vocab);
    if (text_config && !f.has("bos_token_id"))
        spec.bos_token_id = bos_token_id(top, spec.n_vocab).value_or(-1);
    if (text_config && !f.has("eos_token_id"))
        spec.eos_token_ids = top.token_ids("eos_token_id", spec.n_vocab);
    // Gemma3TextConfig's defaults: bos 2, eos 1.
    if (spec.arch == Arch::gemma3 && spec.bos_token_id < 0 && spec.n_vocab > 2)
        spec.bos_token_id = 2;
    if (spec.arch == Arch::gemma3 && spec.eos_token_ids.empty() && spec.n_vocab > 1)
        spec.eos_token_ids = {1};
    // LlamaConfig defaults to the SentencePiece ids 1 and 2; the Qwen classes have none.
    if (is_llama && !f.has("bos_token_id") && spec.n_vocab > 1) spec.bos_token_id = 1;
    if (is_llama && !f.has("eos_token_id") && spec.n_vocab > 2) spec.eos_token_ids = {2};
    return spec;
}

ModelSpec load_hf_config(const std::string& path) {
    return parse_hf_config(read_text_file(path), path);
}

void merge_generation_config(std::string_view text, const std::string& path, ModelSpec& spec) {
    const json config = parse_json(text, path);
    if (!config.is_object())
        fail("{}: expected a JSON object, got {}", path, json_type_words(config));
    const Fields f(config, path);

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
