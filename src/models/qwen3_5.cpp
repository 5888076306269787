// Qwen3.5's text model: Gated DeltaNet layers (linear attention with a
// recurrent state) and, every few layers, full attention whose output is
// gated per head; each followed by a SwiGLU MLP. Norm gains are stored as
// offsets from one, but the gated norm inside DeltaNet's.
#include <array>

#include "base/error.h"
#include "ir/builder.h"
#include "models/families.h"
#include "models/model_family.h"
#include "models/synth_checks.h"

namespace anelm {

namespace {

using nlohmann::json;

// Qwen3.5's layer kinds: layer_types, else full attention every
// full_attention_interval-th layer (Qwen3_5TextConfig's rule).
std::vector<bool> qwen3_5_delta_layers(const ConfigFields& f, int64_t n_layer) {
    if (auto kinds = layer_types(f, n_layer, "linear_attention")) return *kinds;
    return all_but_every(n_layer, f.integer("full_attention_interval", 1, max_layers).value_or(4));
}

// Qwen3.5's rotation: rope_parameters (or the older rope_scaling) win over
// the top-level fields. Text positions are the same on mRoPE's three axes,
// which makes it plain rotate-half rotation of the leading dims.
void parse_qwen3_5_rope(const ConfigFields& f, const std::string& path, const std::string& prefix,
                        ModelSpec& spec) {
    double partial = f.positive("partial_rotary_factor", 1.0).value_or(0.25);
    spec.rope_theta = f.positive("rope_theta", 1e12).value_or(10000.0);
    for (const char* name : {"rope_scaling", "rope_parameters"}) {
        const json* v = f.find(name);
        if (!v) continue;
        if (!v->is_object()) f.fail_field(name, "expected an object");
        const ConfigFields r(*v, path, prefix + name + ".");
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

// Qwen3.5's text model: its fields under text_config in the released
// (multimodal) checkpoints, at the top level in a text-only one.
ModelSpec parse_qwen3_5(const ConfigFields& top, const std::string& path, ModelSpec spec) {
    const std::string prefix = text_prefix(top);
    const ConfigFields f = text_fields(top, path);
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
    const ConfigFields& ids = f.has("eos_token_id") || f.has("bos_token_id") ? f : top;
    spec.bos_token_id = bos_token_id(ids, spec.n_vocab).value_or(-1);
    spec.eos_token_ids = ids.token_ids("eos_token_id", spec.n_vocab);
    return spec;
}

// Qwen3.5: the Gated DeltaNet sizes under ssm.*, full attention every
// full_attention_interval-th layer. llama.cpp's converter tiles the value
// heads over the key heads (value head h reads key head h mod key heads).
void read_qwen35(const GgufFile& gguf, const GgufKeys& keys, ModelSpec& spec) {
    spec.conv_kernel = keys.required("ssm.conv_kernel", 2, 64);
    spec.delta_head_dim_k = keys.required("ssm.state_size", 1, max_dim);
    spec.delta_n_head_k = keys.required("ssm.group_count", 1, max_dim);
    spec.delta_n_head_v = keys.required("ssm.time_step_rank", 1, max_dim);
    const int64_t inner = keys.required("ssm.inner_size", 1, max_dim * 16);
    if (inner % spec.delta_n_head_v != 0 || spec.delta_n_head_v % spec.delta_n_head_k != 0)
        fail("{}: metadata {} ({}) and {} ({}) do not make whole value heads over the key heads",
             gguf.path(), keys.name("ssm.inner_size"), inner, keys.name("ssm.time_step_rank"),
             spec.delta_n_head_v);
    spec.delta_head_dim_v = inner / spec.delta_n_head_v;
    spec.delta_heads_tiled = true;
    const int64_t interval = keys.integer("full_attention_interval", 1, max_layers).value_or(4);
    for (int64_t i = 0; i < spec.n_layer; ++i) spec.delta_layers.push_back((i + 1) % interval != 0);
    spec.attention_gate = true;
    spec.qk_norm = true;
}

// Qwen3.5's GGUF names: the DeltaNet tensors are ssm_* (ssm_a, -exp(A_log), has
// no suffix; ssm_dt.bias is dt_bias), the second norm is post_attention_norm.
std::string qwen35_name(std::string_view layer, std::string_view rest) {
    static const std::pair<std::string_view, std::string_view> names[] = {
        {"attn_norm.weight", "input_layernorm.weight"},
        {"post_attention_norm.weight", "post_attention_layernorm.weight"},
        {"attn_q.weight", "self_attn.q_proj.weight"},
        {"attn_k.weight", "self_attn.k_proj.weight"},
        {"attn_v.weight", "self_attn.v_proj.weight"},
        {"attn_output.weight", "self_attn.o_proj.weight"},
        {"attn_q_norm.weight", "self_attn.q_norm.weight"},
        {"attn_k_norm.weight", "self_attn.k_norm.weight"},
        {"attn_qkv.weight", "linear_attn.in_proj_qkv.weight"},
        {"attn_gate.weight", "linear_attn.in_proj_z.weight"},
        {"ssm_beta.weight", "linear_attn.in_proj_b.weight"},
        {"ssm_alpha.weight", "linear_attn.in_proj_a.weight"},
        {"ssm_conv1d.weight", "linear_attn.conv1d.weight"},
        {"ssm_dt.bias", "linear_attn.dt_bias"},
        {"ssm_a", "linear_attn.A_log"},
        {"ssm_norm.weight", "linear_attn.norm.weight"},
        {"ssm_out.weight", "linear_attn.out_proj.weight"},
        {"ffn_gate.weight", "mlp.gate_proj.weight"},
        {"ffn_up.weight", "mlp.up_proj.weight"},
        {"ffn_down.weight", "mlp.down_proj.weight"},
    };
    for (const auto& [from, to] : names)
        if (rest == from) return fmt::format("model.layers.{}.{}", layer, to);
    return {};
}

std::string qwen3_5_gguf_tensor_name(std::string_view name) {
    const auto layer = split_gguf_layer_name(name);
    return layer ? qwen35_name(layer->number, layer->rest) : std::string();
}

// Norm gains are offsets from one, but for the plain gain of the gated norm.
bool qwen3_5_offset_norm(std::string_view name) {
    return name.ends_with("norm.weight") && !name.ends_with("linear_attn.norm.weight");
}

// Qwen3.5: Gated DeltaNet layers (linear_attn) and gated attention layers
// (q_proj holds each head's query and gate), each followed by the MLP.
std::vector<ExpectedTensor> qwen3_5_tensors(const ModelSpec& spec) {
    const int64_t d = spec.n_embd;
    const int64_t key_dim = spec.delta_n_head_k * spec.delta_head_dim_k;
    const int64_t value_dim = spec.delta_n_head_v * spec.delta_head_dim_v;
    const int64_t conv_dim = 2 * key_dim + value_dim, nv = spec.delta_n_head_v;
    std::vector<ExpectedTensor> out = {{"model.embed_tokens.weight", {spec.n_vocab, d}}};
    for (int64_t i = 0; i < spec.n_layer; ++i) {
        const std::string p = fmt::format("model.layers.{}.", i);
        out.push_back({p + "input_layernorm.weight", {d}});
        if (spec.delta_layers.at(static_cast<size_t>(i))) {
            out.push_back({p + "linear_attn.in_proj_qkv.weight", {conv_dim, d}});
            out.push_back({p + "linear_attn.in_proj_z.weight", {value_dim, d}});
            out.push_back({p + "linear_attn.in_proj_b.weight", {nv, d}});
            out.push_back({p + "linear_attn.in_proj_a.weight", {nv, d}});
            out.push_back({p + "linear_attn.conv1d.weight", {conv_dim, 1, spec.conv_kernel}});
            out.push_back({p + "linear_attn.dt_bias", {nv}});
            out.push_back({p + "linear_attn.A_log", {nv}});
            out.push_back({p + "linear_attn.norm.weight", {spec.delta_head_dim_v}});
            out.push_back({p + "linear_attn.out_proj.weight", {d, value_dim}});
        } else {
            add_attention(out, p, spec, 2 * spec.n_head * spec.head_dim, "o_proj");  // with gates
            add_qk_norms(out, p, spec, "q_norm", "k_norm");
        }
        out.push_back({p + "post_attention_layernorm.weight", {d}});
        add_mlp(out, p, spec, "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj");
    }
    add_output(out, spec, "model.norm.weight");
    return out;
}

// What Qwen3.5 adds: the Gated DeltaNet heads (key, value) and their sizes,
// the convolution's taps, every how many layers one attends fully, and the
// rotated fraction of a head. The tiny one has twice as many value heads as
// key heads, so the head sharing is exercised.
struct Qwen35Row {
    const char* name;
    int64_t n_head_k, n_head_v, head_dim_k, head_dim_v, conv_kernel, full_every;
    double partial_rotary;
};

constexpr std::array qwen35_rows = {
    Qwen35Row{"qwen3.5-0.8b", 16, 16, 128, 128, 4, 4, 0.25},
    Qwen35Row{"qwen3.5-2b", 16, 16, 128, 128, 4, 4, 0.25},
    Qwen35Row{"tiny-qwen3.5", 2, 4, 8, 8, 4, 4, 0.25},
};

void qwen3_5_synth_fields(std::string_view name, ModelSpec& s) {
    for (const Qwen35Row& q : qwen35_rows) {
        if (name != q.name) continue;
        for (int64_t i = 0; i < s.n_layer; ++i)
            s.delta_layers.push_back((i + 1) % q.full_every != 0);
        s.delta_n_head_k = q.n_head_k;
        s.delta_n_head_v = q.n_head_v;
        s.delta_head_dim_k = q.head_dim_k;
        s.delta_head_dim_v = q.head_dim_v;
        s.conv_kernel = q.conv_kernel;
        s.rope_dims = static_cast<int64_t>(static_cast<double>(s.head_dim) * q.partial_rotary);
        s.qk_norm = true;
        s.attention_gate = true;
        return;
    }
    fail("synth: preset {} has no Qwen3.5 fields", name);
}

// A synth spec as a text-only Qwen3.5 config (Qwen3_5ForCausalLM), its
// rotation in rope_parameters as transformers 5 writes it.
json qwen3_5_config_json(const ModelSpec& s) {
    json types = json::array();
    for (bool delta : s.delta_layers)
        types.push_back(delta ? "linear_attention" : "full_attention");
    return {
        {"architectures", {"Qwen3_5ForCausalLM"}},
        {"attention_bias", false},
        {"bos_token_id", s.bos_token_id},
        {"head_dim", s.head_dim},
        {"hidden_act", "silu"},
        {"hidden_size", s.n_embd},
        {"intermediate_size", s.n_ff},
        {"layer_types", types},
        {"linear_conv_kernel_dim", s.conv_kernel},
        {"linear_key_head_dim", s.delta_head_dim_k},
        {"linear_num_key_heads", s.delta_n_head_k},
        {"linear_num_value_heads", s.delta_n_head_v},
        {"linear_value_head_dim", s.delta_head_dim_v},
        {"max_position_embeddings", s.n_ctx_train},
        {"model_type", "qwen3_5_text"},
        {"num_attention_heads", s.n_head},
        {"num_hidden_layers", s.n_layer},
        {"num_key_value_heads", s.n_head_kv},
        {"rms_norm_eps", s.rms_norm_eps},
        {"rope_parameters",
         {{"mrope_interleaved", true},
          {"mrope_section", {11, 11, 10}},
          {"partial_rotary_factor",
           static_cast<double>(s.rope_dims) / static_cast<double>(s.head_dim)},
          {"rope_theta", s.rope_theta},
          {"rope_type", "default"}}},
        {"tie_word_embeddings", s.tie_word_embeddings},
        {"transformers_version", "5.2.0"},
        {"use_cache", true},
        {"vocab_size", s.n_vocab},
    };
}

constexpr SynthRow qwen3_5_presets[] = {
    SynthRow{"qwen3.5-0.8b", "Qwen/Qwen3.5-0.8B (its text model)", 1024, 24, 8, 2, 256, 3584,
             248320, 248044, 262144, 1e7, 1e-6, true, 0},
    SynthRow{"qwen3.5-2b", "Qwen/Qwen3.5-2B (its text model)", 2048, 24, 8, 2, 256, 6144, 248320,
             248044, 262144, 1e7, 1e-6, true, 0},
    SynthRow{"tiny-qwen3.5", "tiny test model, Qwen3.5 layout", 64, 4, 4, 2, 16, 128, 640, 608,
             1024, 1e7, 1e-6, true, 0},
};

void qwen3_5_check_synth(std::string_view preset, const ModelSpec& s) {
    check_synth_attention(preset, s, {.qk_norm = true});
}

constexpr std::string_view model_types[] = {"qwen3_5", "qwen3_5_text"};
constexpr std::string_view hf_classes[] = {"Qwen3_5ForCausalLM", "Qwen3_5ForConditionalGeneration"};

struct Layer {
    const ModelSpec& spec;
    ir::Builder& b;
    int64_t il;
    ir::ValueId pos;
    float eps;

    std::string w(const char* s) const { return layer_weight(il, s); }
    std::string v(const char* s) const { return value_name(il, s); }

    // q_proj holds, for each head, its query then its gate.
    ir::ValueId attention(ir::ValueId h, int32_t slot) const {
        const int64_t hd = spec.head_dim;
        const std::string q_proj = w("self_attn.q_proj.weight");
        ir::ValueId q = b.linear_strided_rows(h, q_proj, 0, hd, 2 * hd, v("attn_q"));
        const ir::ValueId gate = b.linear_strided_rows(h, q_proj, hd, hd, 2 * hd, v("attn_gate"));
        ir::ValueId k = b.linear(h, w("self_attn.k_proj.weight"), "", v("attn_k"));
        const ir::ValueId vv = b.linear(h, w("self_attn.v_proj.weight"), "", v("attn_v"));
        q = b.rms_norm(q, w("self_attn.q_norm.weight"), eps, v("attn_q_norm"), 1.0f);
        k = b.rms_norm(k, w("self_attn.k_norm.weight"), eps, v("attn_k_norm"), 1.0f);
        q = b.rope(q, pos, 0, spec.n_head, hd, v("attn_q_rope"));
        k = b.rope(k, pos, 0, spec.n_head_kv, hd, v("attn_k_rope"));
        ir::Attrs attn = attention_attrs(spec, hd);
        attn.layer = slot;
        const ir::ValueId a = b.attention(q, k, vv, pos, attn, v("attn"));
        return b.linear(b.sigmoid_mul(gate, a, v("attn_gated")), w("self_attn.o_proj.weight"), "",
                        v("attn_out"));
    }

    ir::ValueId delta_net(ir::ValueId h, int32_t slot) const {
        const ir::ValueId qkv = b.linear(h, w("linear_attn.in_proj_qkv.weight"), "", v("ssm_qkv"));
        const ir::ValueId z = b.linear(h, w("linear_attn.in_proj_z.weight"), "", v("ssm_z"));
        const ir::ValueId beta = b.linear(h, w("linear_attn.in_proj_b.weight"), "", v("ssm_b"));
        const ir::ValueId alpha = b.linear(h, w("linear_attn.in_proj_a.weight"), "", v("ssm_a"));
        ir::Attrs conv;
        conv.state = 1;
        conv.layer = slot;
        const ir::ValueId mixed =
            b.silu(b.causal_conv(qkv, pos, w("linear_attn.conv1d.weight"), "", conv, v("ssm_conv")),
                   v("ssm_conv_act"));
        ir::Attrs delta;
        delta.n_head = spec.delta_n_head_v;
        delta.n_head_kv = spec.delta_n_head_k;
        delta.head_dim = spec.delta_head_dim_k;
        delta.value_dim = spec.delta_head_dim_v;
        delta.heads_tiled = spec.delta_heads_tiled;
        delta.state = 2;
        delta.layer = slot;
        const ir::ValueId o = b.gated_delta(mixed, beta, alpha, pos, w("linear_attn.A_log"),
                                            w("linear_attn.dt_bias"), delta, v("ssm_delta"));
        const ir::ValueId normed = b.rms_norm(o, w("linear_attn.norm.weight"), eps, v("ssm_norm"));
        return b.linear(b.silu_mul(z, normed, v("ssm_gated")), w("linear_attn.out_proj.weight"), "",
                        v("ssm_out"));
    }
};

void build_qwen3_5_function(const ModelSpec& spec, const WeightStore& weights,
                            const FunctionShape& shape, ir::Program& program) {
    ir::Function& fn = add_function(program, shape);
    ir::Builder b(program, fn, weights);
    const float eps = static_cast<float>(spec.rms_norm_eps);

    const ir::ValueId ids = b.input("input_ids");
    const ir::ValueId pos = b.input("position_ids");
    ir::ValueId x = b.embed(ids, "model.embed_tokens.weight", "token_embd");

    int32_t n_attention = 0, n_delta = 0;
    for (int64_t il = 0; il < spec.n_layer; ++il) {
        const Layer layer{spec, b, il, pos, eps};
        const ir::ValueId h =
            b.rms_norm(x, layer.w("input_layernorm.weight"), eps, layer.v("attn_norm"), 1.0f);
        const ir::ValueId mixed = spec.delta_layers[static_cast<size_t>(il)]
                                      ? layer.delta_net(h, n_delta++)
                                      : layer.attention(h, n_attention++);
        x = b.add(x, mixed, layer.v("ffn_inp"));

        const ir::ValueId n = b.rms_norm(x, layer.w("post_attention_layernorm.weight"), eps,
                                         layer.v("ffn_norm"), 1.0f);
        const ir::ValueId gate =
            b.linear(n, layer.w("mlp.gate_proj.weight"), "", layer.v("ffn_gate"));
        const ir::ValueId up = b.linear(n, layer.w("mlp.up_proj.weight"), "", layer.v("ffn_up"));
        const ir::ValueId act = b.silu_mul(gate, up, layer.v("ffn_act"));
        x = b.add(x, b.linear(act, layer.w("mlp.down_proj.weight"), "", layer.v("ffn_out")),
                  layer.v("l_out"));
    }

    b.output(lm_head(b, spec, shape, x, "model.norm.weight", 1.0f));
}

}  // namespace

const ModelFamily qwen3_5_family = {
    .arch = Arch::qwen3_5,
    .name = "qwen3_5",
    .model_types = model_types,
    .hf_classes = hf_classes,
    .gguf_arch = "qwen35",  // llama.cpp's name
    .parse_config = parse_qwen3_5,
    .read_gguf = read_qwen35,
    .partial_rotation = true,
    .gguf_tensor_name = qwen3_5_gguf_tensor_name,
    .offset_norm = qwen3_5_offset_norm,
    .expected_tensors = qwen3_5_tensors,
    .synth_rows = qwen3_5_presets,
    .synth_fields = qwen3_5_synth_fields,
    .check_synth = qwen3_5_check_synth,
    .config_json = qwen3_5_config_json,
    .synth_tokenizer = qwen3_synth_tokenizer,
    .build_function = build_qwen3_5_function,
};

}  // namespace anelm
