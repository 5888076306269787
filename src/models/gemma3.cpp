// Gemma 3 text: scaled embeddings, (1 + w) RMSNorm gains, norms before and after
// both attention and MLP, q/k norms, a GELU-tanh gated MLP, sliding-window layers
// with their own rope base, and optional logit soft-capping.
#include <array>
#include <cmath>

#include "base/error.h"
#include "ir/builder.h"
#include "models/families.h"
#include "models/llama_like_config.h"
#include "models/model_family.h"
#include "models/synth_checks.h"

namespace anelm {

namespace {

using nlohmann::json;

// Which layers use sliding-window attention: layer_types when given, else every
// layer but each sliding_window_pattern-th (transformers' Gemma 3 rule).
std::vector<bool> gemma3_sliding_layers(const ConfigFields& f, int64_t n_layer) {
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

// Gemma 3's own fields (its reader has filled in Gemma3TextConfig's defaults).
// transformers 5 splits rope_parameters into full_attention and sliding_attention.
void parse_gemma3_fields(const ConfigFields& f, const std::string& path, ModelSpec& spec) {
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
        const ConfigFields full((*params)["full_attention"], path,
                                "rope_parameters.full_attention.");
        spec.rope_theta = full.positive("rope_theta", 1e12).value_or(spec.rope_theta);
        spec.rope_scaling = parse_rope_scaling(full);
        if (params->contains("sliding_attention")) {
            const ConfigFields local((*params)["sliding_attention"], path,
                                     "rope_parameters.sliding_attention.");
            spec.rope_local_base_freq =
                local.positive("rope_theta", 1e12).value_or(spec.rope_local_base_freq);
        }
    } else {
        parse_rope(f, path, spec);
    }
}

// Gemma 3 names its activation hidden_activation, a GELU by default.
constexpr LlamaLikeConfig gemma3_config = {
    .act_field = "hidden_activation",
    .act_name = "gelu_pytorch_tanh",
    .head_dim_required = true,
    .qk_norm = true,
    .own_fields = parse_gemma3_fields,
};

// A multimodal Gemma 3 keeps the language model's fields under text_config.
ModelSpec parse_gemma3(const ConfigFields& top, const std::string& path, ModelSpec spec) {
    const json* text_config = text_prefix(top).empty() ? nullptr : top.find("text_config");
    json fields = gemma3_text_defaults();
    for (const auto& [key, value] : (text_config ? *text_config : top.object()).items())
        fields[key] = value;
    const ConfigFields f(fields, path, text_config ? "text_config." : "");
    spec = parse_llama_like_config(top, f, path, std::move(spec), gemma3_config);
    if (text_config && !f.has("bos_token_id"))
        spec.bos_token_id = bos_token_id(top, spec.n_vocab).value_or(-1);
    if (text_config && !f.has("eos_token_id"))
        spec.eos_token_ids = top.token_ids("eos_token_id", spec.n_vocab);
    // Gemma3TextConfig's defaults: bos 2, eos 1.
    if (spec.bos_token_id < 0 && spec.n_vocab > 2) spec.bos_token_id = 2;
    if (spec.eos_token_ids.empty() && spec.n_vocab > 1) spec.eos_token_ids = {1};
    return spec;
}

void read_gemma3_gguf(const GgufFile&, const GgufKeys& keys, ModelSpec& spec) {
    spec.sliding_window = keys.integer("attention.sliding_window", 0, max_ctx).value_or(0);
    // Every period-th layer attends globally, the others through the window
    // (llama.cpp's default period is Gemma 3's 6).
    const int64_t period =
        keys.integer("attention.sliding_window_pattern", 1, max_layers).value_or(6);
    spec.sliding_layers.assign(static_cast<size_t>(spec.n_layer), false);
    if (spec.sliding_window > 0)
        for (int64_t i = 0; i < spec.n_layer; ++i) spec.sliding_layers[i] = (i + 1) % period != 0;
    spec.rope_local_base_freq = keys.positive("rope.freq_base_swa").value_or(10000.0);
    spec.final_logit_softcapping = keys.positive("final_logit_softcapping").value_or(0.0);
    spec.attn_logit_softcapping = keys.positive("attn_logit_softcapping").value_or(0.0);
    // Gemma 3 27B scales queries by hidden size over heads, the others by
    // head_dim (its config's query_pre_attn_scalar; llama.cpp keys on 62 layers).
    spec.query_pre_attn_scalar = spec.n_layer == 62 ? static_cast<double>(spec.n_embd / spec.n_head)
                                                    : static_cast<double>(spec.head_dim);
}

// Gemma's ffn_norm is the norm before the MLP; post_attention_norm follows attention.
constexpr std::pair<std::string_view, std::string_view> gguf_norm_names[] = {
    {"post_attention_norm", "post_attention_layernorm"},
    {"ffn_norm", "pre_feedforward_layernorm"},
    {"post_ffw_norm", "post_feedforward_layernorm"},
};

std::string gemma3_gguf_tensor_name(std::string_view name) {
    return decoder_gguf_tensor_name(name, gguf_norm_names);
}

// Every RMSNorm multiplies by 1 + weight.
bool gemma3_offset_norm(std::string_view name) {
    return name.ends_with("norm.weight");
}

std::vector<ExpectedTensor> gemma3_tensors(const ModelSpec& spec) {
    return decoder_tensors(spec, true);
}

// What Gemma 3 adds to a row. A layer is global when every_global divides its
// number (counting from 1); the real models have one global layer in six.
struct Gemma3Row {
    const char* name;
    int64_t sliding_window;
    int64_t every_global;
    double query_pre_attn_scalar;
    double linear_rope_factor;  // 0: no rope_scaling
    double final_logit_softcapping;
};

// The tiny one has a window of 8 before a global layer, a query scalar that is not
// head_dim, and rope scaling and logit soft-capping, so every path is exercised.
constexpr std::array gemma3_rows = {
    Gemma3Row{"gemma-3-270m", 512, 6, 256, 0, 0},
    Gemma3Row{"gemma-3-1b", 512, 6, 256, 0, 0},
    Gemma3Row{"gemma-3-4b", 1024, 6, 256, 8, 0},
    Gemma3Row{"tiny-gemma3", 8, 2, 24, 8, 30},
};

void gemma3_synth_fields(std::string_view name, ModelSpec& s) {
    for (const Gemma3Row& g : gemma3_rows) {
        if (name != g.name) continue;
        s.qk_norm = true;
        s.sliding_window = g.sliding_window;
        for (int64_t i = 0; i < s.n_layer; ++i)
            s.sliding_layers.push_back((i + 1) % g.every_global != 0);
        s.query_pre_attn_scalar = g.query_pre_attn_scalar;
        if (g.linear_rope_factor > 0) {
            s.rope_scaling.type = RopeScaling::Type::linear;
            s.rope_scaling.factor = g.linear_rope_factor;
        }
        s.final_logit_softcapping = g.final_logit_softcapping;
        return;
    }
    fail("synth: preset {} has no Gemma 3 fields", name);
}

// A number, or null for 0 (transformers' None).
json optional_number(double x) {
    return x > 0 ? json(x) : json(nullptr);
}

// Gemma3TextConfig's fields, as gemma-3-1b-it's config.json has them.
json gemma3_config_json(const ModelSpec& s) {
    json j = llama_like_config_json(s, gemma3_config);
    j["architectures"] = {"Gemma3ForCausalLM"};
    j["model_type"] = "gemma3_text";
    j["attention_bias"] = s.attention_bias;
    j["attn_logit_softcapping"] = optional_number(s.attn_logit_softcapping);
    j["final_logit_softcapping"] = optional_number(s.final_logit_softcapping);
    j["head_dim"] = s.head_dim;
    j["query_pre_attn_scalar"] = s.query_pre_attn_scalar;
    j["rope_local_base_freq"] = s.rope_local_base_freq;
    j["sliding_window"] = s.sliding_window;
    json types = json::array();
    for (bool sliding : s.sliding_layers)
        types.push_back(sliding ? "sliding_attention" : "full_attention");
    j["layer_types"] = types;
    return j;
}

constexpr SynthRow gemma3_presets[] = {
    SynthRow{"gemma-3-270m", "google/gemma-3-270m", 640, 18, 4, 1, 256, 2048, 262144, 256000, 32768,
             1e6, 1e-6, true, 0},
    SynthRow{"gemma-3-1b", "google/gemma-3-1b-it", 1152, 26, 4, 1, 256, 6912, 262144, 256000, 32768,
             1e6, 1e-6, true, 0},
    SynthRow{"gemma-3-4b", "google/gemma-3-4b-it (its text_config)", 2560, 34, 8, 4, 256, 10240,
             262208, 256000, 131072, 1e6, 1e-6, true, 0},
    SynthRow{"tiny-gemma3", "tiny test model, Gemma 3 layout", 64, 2, 4, 2, 16, 128, 640, 608, 1024,
             1e6, 1e-6, true, 0},
};

void gemma3_check_synth(std::string_view preset, const ModelSpec& s) {
    check_synth_attention(preset, s, {.qk_norm = true, .sliding_layers = true});
}

// Gemma turns: <start_of_turn>role ... <end_of_turn>, the assistant's role named model.
constexpr std::string_view gemma_template =
    R"({{ bos_token }}{% for message in messages %}{{ '<start_of_turn>' + ('model' if message['role'] == 'assistant' else message['role']) + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %})";

constexpr std::string_view model_types[] = {"gemma3_text", "gemma3"};
constexpr std::string_view hf_classes[] = {"Gemma3ForCausalLM", "Gemma3ForConditionalGeneration"};

void build_gemma3_function(const ModelSpec& spec, const WeightStore& weights,
                           const FunctionShape& shape, ir::Program& program) {
    if (static_cast<int64_t>(spec.sliding_layers.size()) != spec.n_layer)
        fail("{}: {} layer types for {} layers", spec.source, spec.sliding_layers.size(),
             spec.n_layer);
    if (spec.attention_bias) fail("{}: gemma3 with attention biases is not supported", spec.source);
    const int32_t rope_local = sliding_rope(spec, program);
    ir::Function& fn = add_function(program, shape);
    ir::Builder b(program, fn, weights);
    const float eps = static_cast<float>(spec.rms_norm_eps);
    constexpr float gain_offset = 1.0f;  // Gemma's norms scale by (1 + w)

    ir::Attrs attn = attention_attrs(spec, spec.head_dim);
    const double scalar = spec.query_pre_attn_scalar > 0 ? spec.query_pre_attn_scalar
                                                         : static_cast<double>(spec.head_dim);
    attn.scale = static_cast<float>(1.0 / std::sqrt(scalar));
    attn.softcap = static_cast<float>(spec.attn_logit_softcapping);

    const ir::ValueId ids = b.input("input_ids");
    const ir::ValueId pos = b.input("position_ids");
    ir::ValueId x = scaled_embedding(b, spec, weights, ids);

    for (int64_t il = 0; il < spec.n_layer; ++il) {
        auto w = [&](const char* s) { return layer_weight(il, s); };
        auto v = [&](const char* s) { return value_name(il, s); };
        auto norm = [&](ir::ValueId in, const char* weight, const char* name) {
            return b.rms_norm(in, w(weight), eps, v(name), gain_offset);
        };
        const bool sliding = spec.sliding_layers[static_cast<size_t>(il)];
        const int32_t rope = sliding ? rope_local : 0;

        ir::ValueId h = norm(x, "input_layernorm.weight", "attn_norm");
        ir::ValueId q = b.linear(h, w("self_attn.q_proj.weight"), "", v("attn_q"));
        ir::ValueId k = b.linear(h, w("self_attn.k_proj.weight"), "", v("attn_k"));
        ir::ValueId vv = b.linear(h, w("self_attn.v_proj.weight"), "", v("attn_v"));
        q = norm(q, "self_attn.q_norm.weight", "attn_q_norm");
        k = norm(k, "self_attn.k_norm.weight", "attn_k_norm");
        q = b.rope(q, pos, rope, spec.n_head, spec.head_dim, v("attn_q_rope"));
        k = b.rope(k, pos, rope, spec.n_head_kv, spec.head_dim, v("attn_k_rope"));
        attn.layer = static_cast<int32_t>(il);
        attn.window = sliding ? spec.sliding_window : 0;
        ir::ValueId a = b.attention(q, k, vv, pos, attn, v("attn"));
        a = b.linear(a, w("self_attn.o_proj.weight"), "", v("attn_out"));
        a = norm(a, "post_attention_layernorm.weight", "attn_post_norm");
        x = b.add(x, a, v("ffn_inp"));

        h = norm(x, "pre_feedforward_layernorm.weight", "ffn_norm");
        ir::ValueId gate = b.linear(h, w("mlp.gate_proj.weight"), "", v("ffn_gate"));
        ir::ValueId up = b.linear(h, w("mlp.up_proj.weight"), "", v("ffn_up"));
        ir::ValueId act = b.gelu_tanh_mul(gate, up, v("ffn_act"));
        ir::ValueId down = b.linear(act, w("mlp.down_proj.weight"), "", v("ffn_out"));
        down = norm(down, "post_feedforward_layernorm.weight", "ffn_post_norm");
        x = b.add(x, down, v("l_out"));
    }

    if (spec.final_logit_softcapping > 0) {
        const ir::ValueId raw =
            lm_head(b, spec, shape, x, "model.norm.weight", gain_offset, "logits_uncapped");
        b.output(b.softcap(raw, static_cast<float>(spec.final_logit_softcapping), "logits"));
    } else {
        b.output(lm_head(b, spec, shape, x, "model.norm.weight", gain_offset));
    }
}

}  // namespace

const SynthTokenizer& gemma3_synth_tokenizer() {
    static const SynthTokenizer tokenizer = [] {
        SynthTokenizer t;
        t.specials = {{"<pad>"},  {"<eos>"},           {"<bos>"},        {"<unk>"},
                      {"<mask>"}, {"<start_of_turn>"}, {"<end_of_turn>"}};
        t.split_regex = llama3_split;
        t.add_bos = true;
        t.config_bos = "<bos>";
        t.bos = "<bos>";
        t.eos = "<eos>";
        t.pad = "<pad>";
        t.config_eos = {"<eos>", "<end_of_turn>"};
        t.generation_eos = t.config_eos;
        t.chat_template = gemma_template;
        t.tokenizer_class = "GemmaTokenizer";
        t.top_p = 0.95;
        t.top_k = 64;
        return t;
    }();
    return tokenizer;
}

const ModelFamily gemma3_family = {
    .arch = Arch::gemma3,
    .name = "gemma3",
    .model_types = model_types,
    .hf_classes = hf_classes,
    .gguf_arch = "gemma3",
    .parse_config = parse_gemma3,
    .read_gguf = read_gemma3_gguf,
    .gguf_tensor_name = gemma3_gguf_tensor_name,
    .offset_norm = gemma3_offset_norm,
    .expected_tensors = gemma3_tensors,
    .synth_rows = gemma3_presets,
    .synth_fields = gemma3_synth_fields,
    .check_synth = gemma3_check_synth,
    .config_json = gemma3_config_json,
    .config_pad = true,
    .synth_tokenizer = gemma3_synth_tokenizer,
    .build_function = build_gemma3_function,
};

}  // namespace anelm
