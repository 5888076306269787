// LFM2 and LFM2.5: pre-norm layers that are either attention (Q/K norms) or a
// short-convolution block, each followed by a SwiGLU feed-forward.
#include <array>

#include "base/error.h"
#include "ir/builder.h"
#include "models/families.h"
#include "models/model_family.h"
#include "models/synth_checks.h"

namespace anelm {

namespace {

using nlohmann::json;

// LFM2's layer kinds: layer_types, else attention on full_attn_idxs (every
// layer when that is absent too, as Lfm2Config defaults).
std::vector<bool> lfm2_conv_layers(const ConfigFields& f, int64_t n_layer) {
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
ModelSpec parse_lfm2(const ConfigFields& f, const std::string& path, ModelSpec spec) {
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

// GGUF: head_count_kv per layer, 0 for the short-convolution blocks.
int64_t lfm2_gguf_kv_heads(const GgufFile& gguf, const GgufKeys& keys, ModelSpec& spec) {
    const std::string key = keys.name("attention.head_count_kv");
    const std::vector<int64_t> kv = gguf.ints(key);
    if (static_cast<int64_t>(kv.size()) != spec.n_layer)
        fail("{}: metadata {} has {} entries for {} layers", gguf.path(), key, kv.size(),
             spec.n_layer);
    int64_t n_head_kv = 0;
    for (int64_t v : kv) {
        if (v < 0 || v > spec.n_head || (n_head_kv > 0 && v > 0 && v != n_head_kv))
            fail("{}: metadata {}: {} heads, expected 0 or one count up to {}", gguf.path(), key, v,
                 spec.n_head);
        spec.conv_layers.push_back(v == 0);
        if (v > 0) n_head_kv = v;
    }
    spec.conv_kernel = keys.required("shortconv.l_cache", 2, 64);
    return n_head_kv > 0 ? n_head_kv : spec.n_head;
}

void lfm2_read_gguf(const GgufFile& gguf, const GgufKeys&, ModelSpec& spec) {
    spec.conv_bias = gguf.find_tensor("blk.0.shortconv.in_proj.bias") != nullptr;
    spec.qk_norm = true;
}

constexpr std::pair<std::string_view, std::string_view> gguf_layer_names[] = {
    {"attn_norm", "operator_norm"},
    {"attn_q", "self_attn.q_proj"},
    {"attn_k", "self_attn.k_proj"},
    {"attn_v", "self_attn.v_proj"},
    {"attn_output", "self_attn.out_proj"},
    {"attn_q_norm", "self_attn.q_layernorm"},
    {"attn_k_norm", "self_attn.k_layernorm"},
    {"shortconv.in_proj", "conv.in_proj"},
    {"shortconv.conv", "conv.conv"},
    {"shortconv.out_proj", "conv.out_proj"},
    {"ffn_norm", "ffn_norm"},
    {"ffn_gate", "feed_forward.w1"},
    {"ffn_up", "feed_forward.w3"},
    {"ffn_down", "feed_forward.w2"},
};

// llama.cpp's names: the final norm is token_embd_norm.
std::string lfm2_gguf_tensor_name(std::string_view name) {
    if (name == "token_embd_norm.weight") return "model.embedding_norm.weight";
    const auto layer = split_gguf_layer_name(name);
    return layer ? hf_layer_name(*layer, gguf_layer_names) : std::string();
}

// LFM2: attention layers (Q/K norms, out_proj) or short-convolution blocks,
// each followed by a SwiGLU feed-forward (w1 gate, w3 up, w2 down); the final
// norm is named embedding_norm.
std::vector<ExpectedTensor> lfm2_tensors(const ModelSpec& spec) {
    const int64_t d = spec.n_embd;
    std::vector<ExpectedTensor> out = {{"model.embed_tokens.weight", {spec.n_vocab, d}}};
    for (int64_t i = 0; i < spec.n_layer; ++i) {
        const std::string p = fmt::format("model.layers.{}.", i);
        out.push_back({p + "operator_norm.weight", {d}});
        if (spec.conv_layers.at(static_cast<size_t>(i))) {
            out.push_back({p + "conv.in_proj.weight", {3 * d, d}});
            out.push_back({p + "conv.conv.weight", {d, 1, spec.conv_kernel}});
            out.push_back({p + "conv.out_proj.weight", {d, d}});
            if (spec.conv_bias) {
                out.push_back({p + "conv.in_proj.bias", {3 * d}});
                out.push_back({p + "conv.conv.bias", {d}});
                out.push_back({p + "conv.out_proj.bias", {d}});
            }
        } else {
            add_attention(out, p, spec, spec.n_head * spec.head_dim, "out_proj");
            add_qk_norms(out, p, spec, "q_layernorm", "k_layernorm");
        }
        out.push_back({p + "ffn_norm.weight", {d}});
        add_mlp(out, p, spec, "feed_forward.w1", "feed_forward.w3", "feed_forward.w2");
    }
    add_output(out, spec, "model.embedding_norm.weight");
    return out;
}

// What LFM2 adds to a row: which layers are short-convolution blocks ('c') and
// which attention ('a'), the convolution's taps, and its biases. The tiny one
// has biases and a wider kernel, so every path is exercised.
struct Lfm2Row {
    const char* name;
    const char* layers;
    int64_t conv_kernel;
    bool conv_bias;
};

constexpr std::array lfm2_rows = {
    Lfm2Row{"lfm2.5-350m", "ccaccaccacacacac", 3, false},
    Lfm2Row{"lfm2-1.2b", "ccaccaccacacacac", 3, false},
    Lfm2Row{"tiny-lfm2", "cacc", 4, true},
};

void lfm2_synth_fields(std::string_view name, ModelSpec& s) {
    for (const Lfm2Row& l : lfm2_rows) {
        if (name != l.name) continue;
        for (const char* c = l.layers; *c; ++c) s.conv_layers.push_back(*c == 'c');
        s.conv_kernel = l.conv_kernel;
        s.conv_bias = l.conv_bias;
        s.qk_norm = true;
        return;
    }
    fail("synth: preset {} has no LFM2 fields", name);
}

void lfm2_check_synth(std::string_view name, const ModelSpec& s) {
    check_synth_attention(name, s, {.qk_norm = true});
    if (static_cast<int64_t>(s.conv_layers.size()) != s.n_layer || s.conv_kernel < 1 ||
        s.head_dim * s.n_head != s.n_embd)
        fail(
            "synth: preset {}: lfm2 needs a kind for each of its {} layers, a kernel, and "
            "heads that divide the width",
            name, s.n_layer);
}

// A synth spec as Lfm2Config's own names (norm_eps, conv_L_cache); the MLP
// width given as is, not derived from block_ff_dim.
json lfm2_config_json(const ModelSpec& s) {
    json types = json::array();
    for (bool conv : s.conv_layers) types.push_back(conv ? "conv" : "full_attention");
    return {
        {"architectures", {"Lfm2ForCausalLM"}},
        {"block_auto_adjust_ff_dim", false},
        {"bos_token_id", s.bos_token_id},
        {"conv_L_cache", s.conv_kernel},
        {"conv_bias", s.conv_bias},
        {"hidden_size", s.n_embd},
        {"initializer_range", 0.02},
        {"intermediate_size", s.n_ff},
        {"layer_types", types},
        {"max_position_embeddings", s.n_ctx_train},
        {"model_type", "lfm2"},
        {"norm_eps", s.rms_norm_eps},
        {"num_attention_heads", s.n_head},
        {"num_hidden_layers", s.n_layer},
        {"num_key_value_heads", s.n_head_kv},
        {"rope_theta", s.rope_theta},
        {"tie_embedding", s.tie_word_embeddings},
        {"transformers_version", "4.57.0"},
        {"use_cache", true},
        {"vocab_size", s.n_vocab},
    };
}

constexpr SynthRow lfm2_presets[] = {
    SynthRow{"lfm2.5-350m", "LiquidAI/LFM2.5-350M", 1024, 16, 16, 8, 64, 4608, 65536, 65000, 128000,
             1e6, 1e-5, true, 0},
    SynthRow{"lfm2-1.2b", "LiquidAI/LFM2-1.2B", 2048, 16, 32, 8, 64, 8192, 65536, 65000, 128000,
             1e6, 1e-5, true, 0},
    SynthRow{"tiny-lfm2", "tiny test model, LFM2 layout", 64, 4, 4, 2, 16, 128, 640, 608, 1024, 1e6,
             1e-5, true, 0},
};

// LFM2: ChatML turns after a start-of-text token.
constexpr std::string_view lfm2_template =
    R"({{ bos_token }}{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %})";

const SynthTokenizer& lfm2_synth_tokenizer() {
    static const SynthTokenizer tokenizer = [] {
        SynthTokenizer t;
        t.specials = {{"<|pad|>"},          {"<|startoftext|>"}, {"<|endoftext|>"},
                      {"<|fim_pre|>"},      {"<|fim_mid|>"},     {"<|fim_suf|>"},
                      {"<|im_start|>"},     {"<|im_end|>"},      {"<|tool_list_start|>"},
                      {"<|tool_list_end|>"}};
        t.split_regex = llama3_split;
        t.add_bos = true;
        t.ignore_merges = true;  // as llama.cpp's lfm2 pre-tokenizer
        t.config_bos = "<|startoftext|>";
        t.bos = "<|startoftext|>";
        t.eos = "<|im_end|>";
        t.pad = "<|pad|>";
        t.config_eos = {"<|im_end|>"};
        t.generation_eos = t.config_eos;
        t.chat_template = lfm2_template;
        t.tokenizer_class = "PreTrainedTokenizerFast";
        t.temperature = 0.3;
        t.top_k = 50;
        t.repetition_penalty = 1.05;
        return t;
    }();
    return tokenizer;
}

constexpr std::string_view model_types[] = {"lfm2"};
constexpr std::string_view hf_classes[] = {"Lfm2ForCausalLM"};

void build_lfm2_function(const ModelSpec& spec, const WeightStore& weights,
                         const FunctionShape& shape, ir::Program& program) {
    ir::Function& fn = add_function(program, shape);
    ir::Builder b(program, fn, weights);
    const float eps = static_cast<float>(spec.rms_norm_eps);
    const int64_t d = spec.n_embd;

    ir::Attrs attn = attention_attrs(spec, spec.head_dim);
    ir::Attrs conv;
    conv.state = 1;

    const ir::ValueId ids = b.input("input_ids");
    const ir::ValueId pos = b.input("position_ids");
    ir::ValueId x = b.embed(ids, "model.embed_tokens.weight", "token_embd");

    int32_t n_attention = 0, n_conv = 0;
    for (int64_t il = 0; il < spec.n_layer; ++il) {
        auto w = [&](const char* s) { return layer_weight(il, s); };
        auto v = [&](const char* s) { return value_name(il, s); };

        const ir::ValueId h = b.rms_norm(x, w("operator_norm.weight"), eps, v("attn_norm"));
        ir::ValueId mixed;
        if (spec.conv_layers[static_cast<size_t>(il)]) {
            // in_proj packs three outputs: B, C and x, in that order.
            const std::string in_proj = w("conv.in_proj.weight");
            const std::string in_bias = spec.conv_bias ? w("conv.in_proj.bias") : "";
            const ir::ValueId gate_b = b.linear_rows(h, in_proj, in_bias, 0, d, v("shortconv_b"));
            const ir::ValueId gate_c = b.linear_rows(h, in_proj, in_bias, d, d, v("shortconv_c"));
            const ir::ValueId input =
                b.linear_rows(h, in_proj, in_bias, 2 * d, d, v("shortconv_x"));
            const ir::ValueId bx = b.mul(gate_b, input, v("shortconv_bx"));
            conv.layer = n_conv++;
            const ir::ValueId conv_out =
                b.causal_conv(bx, pos, w("conv.conv.weight"),
                              spec.conv_bias ? w("conv.conv.bias") : "", conv, v("shortconv_conv"));
            const ir::ValueId y = b.mul(gate_c, conv_out, v("shortconv_y"));
            mixed = b.linear(y, w("conv.out_proj.weight"),
                             spec.conv_bias ? w("conv.out_proj.bias") : "", v("shortconv_out"));
        } else {
            ir::ValueId q = b.linear(h, w("self_attn.q_proj.weight"), "", v("attn_q"));
            ir::ValueId k = b.linear(h, w("self_attn.k_proj.weight"), "", v("attn_k"));
            const ir::ValueId vv = b.linear(h, w("self_attn.v_proj.weight"), "", v("attn_v"));
            q = b.rms_norm(q, w("self_attn.q_layernorm.weight"), eps, v("attn_q_norm"));
            k = b.rms_norm(k, w("self_attn.k_layernorm.weight"), eps, v("attn_k_norm"));
            q = b.rope(q, pos, 0, spec.n_head, spec.head_dim, v("attn_q_rope"));
            k = b.rope(k, pos, 0, spec.n_head_kv, spec.head_dim, v("attn_k_rope"));
            attn.layer = n_attention++;
            const ir::ValueId a = b.attention(q, k, vv, pos, attn, v("attn"));
            mixed = b.linear(a, w("self_attn.out_proj.weight"), "", v("attn_out"));
        }
        x = b.add(x, mixed, v("ffn_inp"));

        const ir::ValueId n = b.rms_norm(x, w("ffn_norm.weight"), eps, v("ffn_norm"));
        const ir::ValueId gate = b.linear(n, w("feed_forward.w1.weight"), "", v("ffn_gate"));
        const ir::ValueId up = b.linear(n, w("feed_forward.w3.weight"), "", v("ffn_up"));
        const ir::ValueId act = b.silu_mul(gate, up, v("ffn_act"));
        x = b.add(x, b.linear(act, w("feed_forward.w2.weight"), "", v("ffn_out")), v("l_out"));
    }

    b.output(lm_head(b, spec, shape, x, "model.embedding_norm.weight"));
}

}  // namespace

const ModelFamily lfm2_family = {
    .arch = Arch::lfm2,
    .name = "lfm2",
    .model_types = model_types,
    .hf_classes = hf_classes,
    .gguf_arch = "lfm2",
    .parse_config = parse_lfm2,
    .gguf_kv_heads = lfm2_gguf_kv_heads,
    .read_gguf = lfm2_read_gguf,
    .gguf_tensor_name = lfm2_gguf_tensor_name,
    .expected_tensors = lfm2_tensors,
    .synth_rows = lfm2_presets,
    .synth_fields = lfm2_synth_fields,
    .check_synth = lfm2_check_synth,
    .config_json = lfm2_config_json,
    .synth_tokenizer = lfm2_synth_tokenizer,
    .build_function = build_lfm2_function,
};

}  // namespace anelm
