// Gemma 4 text (E2B, E4B): Gemma 3's norms around attention and MLP but with
// plain gains, sliding-window layers of head_dim and full layers of
// global_head_dim whose rope turns a fraction of its frequencies
// ("proportional"), unscaled attention over RMS-normed q, k and v, the last
// layers attending with an earlier layer's K/V, per-layer embeddings gated in
// after every MLP, a per-layer scalar on the residual, and a logit softcap.
#include <array>
#include <cmath>

#include "base/error.h"
#include "io/tensor_values.h"
#include "ir/builder.h"
#include "models/families.h"
#include "models/model_family.h"
#include "models/synth_checks.h"

namespace anelm {

namespace {

using nlohmann::json;

// Gemma 4's rotation (Gemma4TextConfig's rope_parameters): "default" on the
// sliding layers; "proportional" (or "default") on the full ones, over
// global_head_dim, turning partial_rotary_factor of the frequencies.
void parse_gemma4_rope(const ConfigFields& f, const std::string& path, const std::string& prefix,
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
        const ConfigFields r(*local, path, base + "sliding_attention.");
        if (auto type = r.string("rope_type"); type && *type != "default")
            r.fail_field("rope_type", "unsupported \"{}\" (supported: default)", *type);
        spec.rope_local_base_freq = r.positive("rope_theta", 1e12).value_or(10000.0);
    }
    if (const json* full =
            params->contains("full_attention") ? &(*params)["full_attention"] : nullptr) {
        const ConfigFields r(*full, path, base + "full_attention.");
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
std::vector<bool> gemma4_sliding_layers(const ConfigFields& f, int64_t n_layer) {
    std::vector<bool> kinds =
        layer_types(f, n_layer, "sliding_attention").value_or(all_but_every(n_layer, 6));
    kinds.back() = false;
    return kinds;
}

// Gemma 4's text model (Gemma4TextConfig's names and defaults): under
// text_config in the released (multimodal) checkpoints, at the top level in a
// text-only one. The dense E2B/E4B layout only: no MoE, no k = v attention.
ModelSpec parse_gemma4(const ConfigFields& top, const std::string& path, ModelSpec spec) {
    const std::string prefix = text_prefix(top);
    const ConfigFields f = text_fields(top, path);
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
    const ConfigFields& ids = f.has("eos_token_id") || f.has("bos_token_id") ? f : top;
    spec.bos_token_id = bos_token_id(ids, spec.n_vocab).value_or(spec.n_vocab > 2 ? 2 : -1);
    spec.eos_token_ids = ids.token_ids("eos_token_id", spec.n_vocab);
    if (spec.eos_token_ids.empty() && spec.n_vocab > 1) spec.eos_token_ids = {1};
    return spec;
}

// Gemma 4: per-layer head sizes and MLP widths, no K/V projections on the
// layers that share another's, the per-layer embeddings' table, projection and
// norms, and a scalar per layer.
std::vector<ExpectedTensor> gemma4_tensors(const ModelSpec& spec) {
    const int64_t d = spec.n_embd, pl = spec.per_layer_dim;
    std::vector<ExpectedTensor> out = {{"model.embed_tokens.weight", {spec.n_vocab, d}}};
    if (pl > 0) {
        out.push_back(
            {"model.embed_tokens_per_layer.weight", {spec.per_layer_vocab, spec.n_layer * pl}});
        out.push_back({"model.per_layer_model_projection.weight", {spec.n_layer * pl, d}});
        out.push_back({"model.per_layer_projection_norm.weight", {pl}});
    }
    for (int64_t i = 0; i < spec.n_layer; ++i) {
        const std::string p = fmt::format("model.layers.{}.", i);
        const int64_t hd = layer_head_dim(spec, i), ff = layer_ff(spec, i);
        for (const char* norm : {"input_layernorm", "post_attention_layernorm",
                                 "pre_feedforward_layernorm", "post_feedforward_layernorm"})
            out.push_back({p + norm + ".weight", {d}});
        out.push_back({p + "self_attn.q_proj.weight", {spec.n_head * hd, d}});
        out.push_back({p + "self_attn.q_norm.weight", {hd}});
        if (kv_source_layer(spec, i) == i) {
            out.push_back({p + "self_attn.k_proj.weight", {spec.n_head_kv * hd, d}});
            out.push_back({p + "self_attn.v_proj.weight", {spec.n_head_kv * hd, d}});
            out.push_back({p + "self_attn.k_norm.weight", {hd}});
        }
        out.push_back({p + "self_attn.o_proj.weight", {d, spec.n_head * hd}});
        out.push_back({p + "mlp.gate_proj.weight", {ff, d}});
        out.push_back({p + "mlp.up_proj.weight", {ff, d}});
        out.push_back({p + "mlp.down_proj.weight", {d, ff}});
        if (pl > 0) {
            out.push_back({p + "per_layer_input_gate.weight", {pl, d}});
            out.push_back({p + "per_layer_projection.weight", {d, pl}});
            out.push_back({p + "post_per_layer_input_norm.weight", {d}});
        }
        out.push_back({p + "layer_scalar", {1}});
    }
    add_output(out, spec, "model.norm.weight");
    return out;
}

// What Gemma 4 adds: each layer's kind ('s' sliding, 'f' full), the full
// layers' head size, the window, how many last layers share K/V and whether
// their MLPs are twice as wide, the per-layer embeddings' width, the logit
// softcap. The tiny one shares K/V of both kinds and has a window of 8.
struct Gemma4Row {
    const char* name;
    const char* layers;
    int64_t global_head_dim, sliding_window, n_kv_shared;
    bool double_wide_mlp;
    int64_t per_layer_dim;
    double final_logit_softcapping;
};

constexpr std::array gemma4_rows = {
    Gemma4Row{"gemma-4-e2b", "ssssfssssfssssfssssfssssfssssfssssf", 512, 512, 20, true, 256, 30},
    Gemma4Row{"gemma-4-e4b", "sssssfsssssfsssssfsssssfsssssfsssssfsssssf", 512, 512, 18, false, 256,
              30},
    Gemma4Row{"tiny-gemma4", "sfsfsf", 32, 8, 3, true, 8, 30},
};

void gemma4_synth_fields(std::string_view name, ModelSpec& s) {
    for (const Gemma4Row& g : gemma4_rows) {
        if (name != g.name) continue;
        for (const char* c = g.layers; *c; ++c) s.sliding_layers.push_back(*c == 's');
        s.global_head_dim = g.global_head_dim;
        s.sliding_window = g.sliding_window;
        s.n_kv_shared_layers = g.n_kv_shared;
        s.double_wide_mlp = g.double_wide_mlp;
        s.per_layer_dim = g.per_layer_dim;
        s.per_layer_vocab = s.n_vocab;
        s.final_logit_softcapping = g.final_logit_softcapping;
        s.rope_local_base_freq = 10000.0;
        s.rope_global_fraction = 0.25;
        s.qk_norm = true;
        return;
    }
    fail("synth: preset {} has no Gemma 4 fields", name);
}

// A synth spec as a text-only Gemma 4 config (Gemma4ForCausalLM), as
// Gemma4TextConfig writes its fields.
json gemma4_config_json(const ModelSpec& s) {
    json types = json::array();
    for (bool sliding : s.sliding_layers)
        types.push_back(sliding ? "sliding_attention" : "full_attention");
    json full = {{"rope_theta", s.rope_theta},
                 {"rope_type", "proportional"},
                 {"partial_rotary_factor", s.rope_global_fraction}};
    if (s.rope_scaling.type == RopeScaling::Type::linear) full["factor"] = s.rope_scaling.factor;
    return {
        {"architectures", {"Gemma4ForCausalLM"}},
        {"attention_bias", false},
        {"attention_k_eq_v", false},
        {"bos_token_id", s.bos_token_id},
        {"enable_moe_block", false},
        {"final_logit_softcapping",
         s.final_logit_softcapping > 0 ? json(s.final_logit_softcapping) : json(nullptr)},
        {"global_head_dim", s.global_head_dim},
        {"head_dim", s.head_dim},
        {"hidden_activation", "gelu_pytorch_tanh"},
        {"hidden_size", s.n_embd},
        {"hidden_size_per_layer_input",
         s.per_layer_dim > 0 ? json(s.per_layer_dim) : json(nullptr)},
        {"intermediate_size", s.n_ff},
        {"layer_types", types},
        {"max_position_embeddings", s.n_ctx_train},
        {"model_type", "gemma4_text"},
        {"num_attention_heads", s.n_head},
        {"num_hidden_layers", s.n_layer},
        {"num_key_value_heads", s.n_head_kv},
        {"num_kv_shared_layers", s.n_kv_shared_layers},
        {"rms_norm_eps", s.rms_norm_eps},
        {"rope_parameters",
         {{"full_attention", full},
          {"sliding_attention",
           {{"rope_theta", s.rope_local_base_freq}, {"rope_type", "default"}}}}},
        {"sliding_window", s.sliding_window},
        {"tie_word_embeddings", s.tie_word_embeddings},
        {"transformers_version", "5.5.0"},
        {"use_cache", true},
        {"use_double_wide_mlp", s.double_wide_mlp},
        {"vocab_size", s.n_vocab},
        {"vocab_size_per_layer_input", s.per_layer_vocab},
    };
}

constexpr SynthRow gemma4_presets[] = {
    SynthRow{"gemma-4-e2b", "google/gemma-4-E2B-it (its text model)", 1536, 35, 8, 1, 256, 6144,
             262144, 256000, 131072, 1e6, 1e-6, true, 0},
    SynthRow{"gemma-4-e4b", "google/gemma-4-E4B-it (its text model)", 2560, 42, 8, 2, 256, 10240,
             262144, 256000, 131072, 1e6, 1e-6, true, 0},
    SynthRow{"tiny-gemma4", "tiny test model, Gemma 4 layout", 64, 6, 4, 2, 16, 128, 640, 608, 1024,
             1e6, 1e-6, true, 0},
};

void gemma4_check_synth(std::string_view preset, const ModelSpec& s) {
    check_synth_attention(preset, s, {.qk_norm = true, .sliding_layers = true});
}

constexpr std::string_view model_types[] = {"gemma4", "gemma4_text"};
constexpr std::string_view hf_classes[] = {"Gemma4ForCausalLM", "Gemma4ForConditionalGeneration"};

bool sliding(const ModelSpec& spec, int64_t il) {
    return spec.sliding_layers[static_cast<size_t>(il)];
}

// Layers below this one compute their own K/V.
int64_t first_shared(const ModelSpec& spec) {
    return spec.n_layer - spec.n_kv_shared_layers;
}

int64_t own_layers(const ModelSpec& spec, bool of_sliding) {
    int64_t n = 0;
    for (int64_t il = 0; il < first_shared(spec); ++il) n += sliding(spec, il) == of_sliding;
    return n;
}

// Where a layer's K/V live: the full layers' cache is state 0 and the sliding
// layers' the next (their heads differ in size); a KV-sharing layer reads its
// source layer's slot.
struct KvSlot {
    int32_t state;
    int32_t layer;
};

KvSlot kv_slot(const ModelSpec& spec, int64_t il) {
    const int64_t source = kv_source_layer(spec, il);
    const bool kind = sliding(spec, source);
    int32_t slot = 0;
    for (int64_t j = 0; j < source; ++j) slot += sliding(spec, j) == kind;
    const int32_t state = kind && own_layers(spec, false) > 0 ? 1 : 0;
    return {state, slot};
}

// The value transformers' Gemma4TextDecoderLayer multiplies its output by.
float layer_scalar(const WeightStore& weights, int64_t il) {
    const std::string name = layer_weight(il, "layer_scalar");
    float value = 0;
    read_f32(weights.get(name, {1}), 0, 1, &value);
    return value;
}

// Every layer's per-layer input, side by side [T, layers * per_layer_dim]:
// the token's row of its own table, scaled, plus the projection of the
// embedding, normed per layer, both times 1/sqrt(2).
ir::ValueId per_layer_inputs(ir::Builder& b, const ModelSpec& spec, const WeightStore& weights,
                             ir::ValueId ids, ir::ValueId embedded) {
    const char* table = "model.embed_tokens_per_layer.weight";
    const auto eps = static_cast<float>(spec.rms_norm_eps);
    ir::ValueId tokens = b.embed(ids, table, "per_layer_token_embd");
    tokens = b.scale(tokens,
                     scale_as_stored(std::sqrt(static_cast<double>(spec.per_layer_dim)),
                                     weights.get(table).dtype),
                     "per_layer_token_embd_scaled");
    ir::ValueId proj =
        b.linear(embedded, "model.per_layer_model_projection.weight", "", "per_layer_model_proj");
    proj = b.scale(proj, static_cast<float>(1.0 / std::sqrt(static_cast<double>(spec.n_embd))),
                   "per_layer_model_proj_scaled");
    proj = b.rms_norm(proj, "model.per_layer_projection_norm.weight", eps, "per_layer_proj_norm");
    return b.scale(b.add(proj, tokens, "per_layer_sum"), static_cast<float>(1.0 / std::sqrt(2.0)),
                   "per_layer_inp");
}

// The KV caches: one for the full layers and one for the sliding ones (their
// heads differ in size), holding only the layers that compute K/V.
void add_gemma4_caches(const ModelSpec& spec, int64_t n_ctx, ir::Program& program) {
    const int64_t full = own_layers(spec, false), window = own_layers(spec, true);
    if (full > 0)
        program.states.push_back(
            {"model_model_kv_cache_0",
             DType::f16,
             {2 * full, spec.n_head_kv, n_ctx,
              spec.global_head_dim > 0 ? spec.global_head_dim : spec.head_dim}});
    if (window > 0)
        program.states.push_back({fmt::format("model_model_kv_cache_{}", full > 0 ? 1 : 0),
                                  DType::f16,
                                  {2 * window, spec.n_head_kv, n_ctx, spec.head_dim}});
}

void build_gemma4_function(const ModelSpec& spec, const WeightStore& weights,
                           const FunctionShape& shape, ir::Program& program) {
    if (static_cast<int64_t>(spec.sliding_layers.size()) != spec.n_layer)
        fail("{}: {} layer types for {} layers", spec.source, spec.sliding_layers.size(),
             spec.n_layer);
    const int32_t rope_sliding = sliding_rope(spec, program);
    ir::Function& fn = add_function(program, shape);
    ir::Builder b(program, fn, weights);
    const auto eps = static_cast<float>(spec.rms_norm_eps);

    const ir::ValueId ids = b.input("input_ids");
    const ir::ValueId pos = b.input("position_ids");
    ir::ValueId x = scaled_embedding(b, spec, weights, ids);
    const ir::ValueId per_layer =
        spec.per_layer_dim > 0 ? per_layer_inputs(b, spec, weights, ids, x) : -1;

    for (int64_t il = 0; il < spec.n_layer; ++il) {
        auto w = [&](const char* s) { return layer_weight(il, s); };
        auto v = [&](const char* s) { return value_name(il, s); };
        auto norm = [&](ir::ValueId in, const char* weight, const char* name) {
            return b.rms_norm(in, w(weight), eps, v(name));
        };
        const bool is_sliding = sliding(spec, il);
        const int64_t hd = layer_head_dim(spec, il);
        const int32_t rope = is_sliding ? rope_sliding : 0;

        ir::Attrs attn = attention_attrs(spec, hd);
        attn.scale = 1.0f;  // q and k are RMS-normed instead
        attn.window = is_sliding ? spec.sliding_window : 0;
        const KvSlot slot = kv_slot(spec, il);
        attn.state = slot.state;
        attn.layer = slot.layer;

        ir::ValueId h = norm(x, "input_layernorm.weight", "attn_norm");
        ir::ValueId q = b.linear(h, w("self_attn.q_proj.weight"), "", v("attn_q"));
        q = norm(q, "self_attn.q_norm.weight", "attn_q_norm");
        q = b.rope(q, pos, rope, spec.n_head, hd, v("attn_q_rope"));
        ir::ValueId a;
        if (kv_source_layer(spec, il) == il) {
            ir::ValueId k = b.linear(h, w("self_attn.k_proj.weight"), "", v("attn_k"));
            ir::ValueId vv = b.linear(h, w("self_attn.v_proj.weight"), "", v("attn_v"));
            k = norm(k, "self_attn.k_norm.weight", "attn_k_norm");
            k = b.rope(k, pos, rope, spec.n_head_kv, hd, v("attn_k_rope"));
            vv = b.rms_norm_plain(vv, hd, eps, v("attn_v_norm"));
            a = b.attention(q, k, vv, pos, attn, v("attn"));
        } else {
            a = b.shared_attention(q, pos, attn, v("attn"));
        }
        a = b.linear(a, w("self_attn.o_proj.weight"), "", v("attn_out"));
        a = norm(a, "post_attention_layernorm.weight", "attn_post_norm");
        x = b.add(x, a, v("ffn_inp"));

        h = norm(x, "pre_feedforward_layernorm.weight", "ffn_norm");
        const ir::ValueId gate = b.linear(h, w("mlp.gate_proj.weight"), "", v("ffn_gate"));
        const ir::ValueId up = b.linear(h, w("mlp.up_proj.weight"), "", v("ffn_up"));
        ir::ValueId down = b.linear(b.gelu_tanh_mul(gate, up, v("ffn_act")),
                                    w("mlp.down_proj.weight"), "", v("ffn_out"));
        down = norm(down, "post_feedforward_layernorm.weight", "ffn_post_norm");
        x = b.add(x, down, v("ffn_res"));

        if (spec.per_layer_dim > 0) {
            const ir::ValueId mine = b.columns(per_layer, il * spec.per_layer_dim,
                                               spec.per_layer_dim, v("per_layer_inp"));
            ir::ValueId g = b.linear(x, w("per_layer_input_gate.weight"), "", v("inp_gate"));
            g = b.gelu_tanh_mul(g, mine, v("inp_gated"));
            g = b.linear(g, w("per_layer_projection.weight"), "", v("proj"));
            g = norm(g, "post_per_layer_input_norm.weight", "post_norm");
            x = b.add(x, g, v("per_layer_res"));
        }
        x = b.scale(x, layer_scalar(weights, il), v("l_out"));
    }

    const ir::ValueId raw =
        lm_head(b, spec, shape, x, "model.norm.weight", 0.0f,
                spec.final_logit_softcapping > 0 ? "logits_uncapped" : "logits");
    if (spec.final_logit_softcapping > 0)
        b.output(b.softcap(raw, static_cast<float>(spec.final_logit_softcapping), "logits"));
    else
        b.output(raw);
}

}  // namespace

const ModelFamily gemma4_family = {
    .arch = Arch::gemma4,
    .name = "gemma4",
    .model_types = model_types,
    .hf_classes = hf_classes,
    .parse_config = parse_gemma4,
    .expected_tensors = gemma4_tensors,
    .synth_rows = gemma4_presets,
    .synth_fields = gemma4_synth_fields,
    .check_synth = gemma4_check_synth,
    .config_json = gemma4_config_json,
    .config_pad = true,
    .synth_tokenizer = gemma3_synth_tokenizer,  // the synthetic tokenizer and turns of Gemma 3
    .add_caches = add_gemma4_caches,
    .build_function = build_gemma4_function,
};

}  // namespace anelm
