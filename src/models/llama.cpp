// Llama: a pre-norm decoder (RMSNorm, rotary attention, SwiGLU MLP), whose
// graph Qwen2 (q/k/v bias) and Qwen3 (q/k RMSNorm) build too.
#include "base/error.h"
#include "ir/builder.h"
#include "models/families.h"
#include "models/llama_like_config.h"
#include "models/model_family.h"
#include "models/synth_checks.h"

namespace anelm {

void build_llama_function(const ModelSpec& spec, const WeightStore& weights,
                          const FunctionShape& shape, ir::Program& program) {
    ir::Function& fn = add_function(program, shape);
    ir::Builder b(program, fn, weights);
    const float eps = static_cast<float>(spec.rms_norm_eps);

    ir::Attrs attn = attention_attrs(spec, spec.head_dim);

    const ir::ValueId ids = b.input("input_ids");
    const ir::ValueId pos = b.input("position_ids");
    ir::ValueId x = b.embed(ids, "model.embed_tokens.weight", "token_embd");

    for (int64_t il = 0; il < spec.n_layer; ++il) {
        auto w = [&](const char* s) { return layer_weight(il, s); };
        auto v = [&](const char* s) { return value_name(il, s); };
        const bool bias = spec.attention_bias;

        ir::ValueId h = b.rms_norm(x, w("input_layernorm.weight"), eps, v("attn_norm"));
        ir::ValueId q = b.linear(h, w("self_attn.q_proj.weight"),
                                 bias ? w("self_attn.q_proj.bias") : "", v("attn_q"));
        ir::ValueId k = b.linear(h, w("self_attn.k_proj.weight"),
                                 bias ? w("self_attn.k_proj.bias") : "", v("attn_k"));
        ir::ValueId vv = b.linear(h, w("self_attn.v_proj.weight"),
                                  bias ? w("self_attn.v_proj.bias") : "", v("attn_v"));
        if (spec.qk_norm) {
            q = b.rms_norm(q, w("self_attn.q_norm.weight"), eps, v("attn_q_norm"));
            k = b.rms_norm(k, w("self_attn.k_norm.weight"), eps, v("attn_k_norm"));
        }
        q = b.rope(q, pos, 0, spec.n_head, spec.head_dim, v("attn_q_rope"));
        k = b.rope(k, pos, 0, spec.n_head_kv, spec.head_dim, v("attn_k_rope"));
        attn.layer = static_cast<int32_t>(il);
        ir::ValueId a = b.attention(q, k, vv, pos, attn, v("attn"));
        a = b.linear(a, w("self_attn.o_proj.weight"),
                     spec.attention_out_bias ? w("self_attn.o_proj.bias") : "", v("attn_out"));
        x = b.add(x, a, v("ffn_inp"));

        h = b.rms_norm(x, w("post_attention_layernorm.weight"), eps, v("ffn_norm"));
        ir::ValueId gate = b.linear(h, w("mlp.gate_proj.weight"), "", v("ffn_gate"));
        ir::ValueId up = b.linear(h, w("mlp.up_proj.weight"), "", v("ffn_up"));
        ir::ValueId act = b.silu_mul(gate, up, v("ffn_act"));
        ir::ValueId down = b.linear(act, w("mlp.down_proj.weight"), "", v("ffn_out"));
        x = b.add(x, down, v("l_out"));
    }

    b.output(lm_head(b, spec, shape, x, "model.norm.weight"));
}

// llama.cpp's ffn_norm is the only norm before the MLP, which Hugging Face
// calls post_attention_layernorm.
constexpr std::pair<std::string_view, std::string_view> gguf_norm_names[] = {
    {"ffn_norm", "post_attention_layernorm"},
};

std::string llama_gguf_tensor_name(std::string_view name) {
    return decoder_gguf_tensor_name(name, gguf_norm_names);
}

std::vector<ExpectedTensor> llama_tensors(const ModelSpec& spec) {
    return decoder_tensors(spec, false);
}

namespace {

using nlohmann::json;

constexpr LlamaLikeConfig llama_config = {.kv_heads_default = true};

ModelSpec parse_llama(const ConfigFields& top, const std::string& path, ModelSpec spec) {
    spec = parse_llama_like_config(top, top, path, std::move(spec), llama_config);
    // LlamaConfig defaults to the SentencePiece ids 1 and 2.
    if (!top.has("bos_token_id") && spec.n_vocab > 1) spec.bos_token_id = 1;
    if (!top.has("eos_token_id") && spec.n_vocab > 2) spec.eos_token_ids = {2};
    return spec;
}

json llama_config_json(const ModelSpec& s) {
    json j = llama_like_config_json(s, llama_config);
    j["architectures"] = {"LlamaForCausalLM"};
    j["attention_bias"] = s.attention_bias;
    j["head_dim"] = s.head_dim;
    j["mlp_bias"] = false;
    j["pretraining_tp"] = 1;
    return j;
}

// The Instruct releases (their eos ids and chat template). The tiny one keeps an
// untied lm_head and llama3 rope scaling, so those paths are exercised.
constexpr SynthRow llama_presets[] = {
    SynthRow{"llama-3.2-1b", "meta-llama/Llama-3.2-1B-Instruct", 2048, 16, 32, 8, 64, 8192, 128256,
             128000, 131072, 5e5, 1e-5, true, 32},
    SynthRow{"llama-3.2-3b", "meta-llama/Llama-3.2-3B-Instruct", 3072, 28, 24, 8, 128, 8192, 128256,
             128000, 131072, 5e5, 1e-5, true, 32},
    SynthRow{"llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", 4096, 32, 32, 8, 128, 14336,
             128256, 128000, 131072, 5e5, 1e-5, false, 8},
    SynthRow{"tiny-llama", "tiny test model, Llama 3 layout", 64, 2, 4, 2, 16, 128, 640, 576, 2048,
             5e5, 1e-5, false, 32},
};

void llama_check_synth(std::string_view preset, const ModelSpec& s) {
    check_synth_attention(preset, s, {});
}

// Llama 3 headers and end-of-turn tokens, without the tool branches.
constexpr std::string_view llama3_template =
    R"({{ bos_token }}{% for message in messages %}{{ '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n' + message['content'] | trim + '<|eot_id|>' }}{% endfor %}{% if add_generation_prompt %}{{ '<|start_header_id|>assistant<|end_header_id|>\n\n' }}{% endif %})";

const SynthTokenizer& llama_synth_tokenizer() {
    static const SynthTokenizer tokenizer = [] {
        SynthTokenizer t;
        // Llama 3.1 and 3.2: the named tokens among the first eleven ids, reserved slots between.
        t.specials = {{"<|begin_of_text|>"},
                      {"<|end_of_text|>"},
                      {""},
                      {""},
                      {"<|finetune_right_pad_id|>"},
                      {""},
                      {"<|start_header_id|>"},
                      {"<|end_header_id|>"},
                      {"<|eom_id|>"},
                      {"<|eot_id|>"},
                      {"<|python_tag|>"}};
        t.split_regex = llama3_split;
        t.add_bos = true;
        t.ignore_merges = true;
        t.config_bos = "<|begin_of_text|>";
        t.bos = "<|begin_of_text|>";
        t.eos = "<|eot_id|>";
        t.config_eos = {"<|end_of_text|>", "<|eom_id|>", "<|eot_id|>"};
        t.generation_eos = t.config_eos;
        t.chat_template = llama3_template;
        t.tokenizer_class = "PreTrainedTokenizerFast";
        t.temperature = 0.6;
        t.top_p = 0.9;
        return t;
    }();
    return tokenizer;
}

constexpr std::string_view model_types[] = {"llama"};
constexpr std::string_view hf_classes[] = {"LlamaForCausalLM"};

}  // namespace

const ModelFamily llama_family = {
    .arch = Arch::llama,
    .name = "llama",
    .model_types = model_types,
    .hf_classes = hf_classes,
    .gguf_arch = "llama",
    .parse_config = parse_llama,
    .gguf_rope = RopeStyle::interleaved,
    .gguf_tensor_name = llama_gguf_tensor_name,
    .expected_tensors = llama_tensors,
    .synth_rows = llama_presets,
    .check_synth = llama_check_synth,
    .config_json = llama_config_json,
    .synth_tokenizer = llama_synth_tokenizer,
    .build_function = build_llama_function,
};

}  // namespace anelm
