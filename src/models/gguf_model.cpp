#include "models/gguf_model.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>
#include <memory>

#include "base/error.h"
#include "io/ggml_types.h"
#include "models/model_family.h"

namespace anelm {

namespace {

// The family whose GGUF architecture the file names.
const ModelFamily& gguf_family(const GgufFile& gguf) {
    const std::string name = gguf.get_string("general.architecture");
    if (const ModelFamily* family = family_for_gguf(name)) return *family;
    std::vector<std::string_view> names;
    for (const ModelFamily* family : model_families())
        if (!family->gguf_arch.empty()) names.push_back(family->gguf_arch);
    fail("{}: metadata general.architecture is \"{}\"; anelm reads {} and {}", gguf.path(), name,
         fmt::join(std::span(names).first(names.size() - 1), ", "), names.back());
}

void read_rope_scaling(const GgufFile& gguf, const GgufKeys& keys, ModelSpec& spec) {
    const std::string type = keys.string("rope.scaling.type").value_or("none");
    auto factor = keys.positive("rope.scaling.factor");
    if (!factor) factor = keys.positive("rope.scale_linear");  // the older key
    if (type == "linear" || (type == "none" && factor && *factor != 1.0)) {
        if (factor && *factor != 1.0) {
            spec.rope_scaling.type = RopeScaling::Type::linear;
            spec.rope_scaling.factor = *factor;
        }
    } else if (type != "none") {
        fail(
            "{}: metadata {} is \"{}\"; anelm reads none and linear (Llama 3's scaling comes "
            "as the rope_freqs tensor)",
            gguf.path(), keys.name("rope.scaling.type"), type);
    }
    if (const GgufTensor* t = gguf.find_tensor("rope_freqs.weight")) {
        if (t->type != static_cast<uint32_t>(GgmlType::f32) || t->shape.size() != 1 ||
            t->shape[0] != spec.head_dim / 2)
            fail("{}: tensor rope_freqs.weight must be F32 [{}]", gguf.path(), spec.head_dim / 2);
        std::vector<float> factors(static_cast<size_t>(t->shape[0]));
        std::memcpy(factors.data(), t->data, factors.size() * sizeof(float));
        spec.rope_scaling.freq_factors = std::move(factors);
    }
}

// The Hugging Face name of a GGUF tensor name, or empty when it has none.
std::string hf_name(std::string_view name, const ModelFamily& family) {
    static const std::pair<std::string_view, std::string_view> globals[] = {
        {"token_embd.weight", "model.embed_tokens.weight"},
        {"output_norm.weight", "model.norm.weight"},
        {"output.weight", "lm_head.weight"},
    };
    for (const auto& [from, to] : globals)
        if (name == from) return std::string(to);
    return family.gguf_tensor_name ? family.gguf_tensor_name(name) : std::string();
}

// A copy of t's values as f32, dequantized as ggml defines its type.
std::shared_ptr<float[]> to_f32(const GgufFile& gguf, const GgufTensor& t, GgmlType type,
                                float add) {
    const int64_t row = t.shape.back();
    const int64_t rows = TensorView{DType::f32, t.shape, nullptr}.numel() / row;
    const uint64_t row_bytes = ggml_row_bytes(type, row);
    std::shared_ptr<float[]> out(new float[static_cast<size_t>(rows * row)]);
    for (int64_t r = 0; r < rows; ++r)
        dequantize_row(type, t.data + r * row_bytes, out.get() + r * row, row);
    if (add != 0)
        for (int64_t i = 0; i < rows * row; ++i) out[i] += add;
    return out;
}

}  // namespace

std::optional<GgufLayerName> split_gguf_layer_name(std::string_view name) {
    if (!name.starts_with("blk.")) return std::nullopt;
    const size_t dot = name.find('.', 4);
    if (dot == std::string_view::npos) return std::nullopt;
    const std::string_view layer = name.substr(4, dot - 4);
    GgufLayerName n;
    n.number = layer;
    if (std::from_chars(layer.data(), layer.data() + layer.size(), n.layer).ptr !=
        layer.data() + layer.size())
        return std::nullopt;
    n.rest = name.substr(dot + 1);
    if (const size_t suffix_at = n.rest.rfind('.'); suffix_at != std::string_view::npos) {
        n.part = n.rest.substr(0, suffix_at);
        n.suffix = n.rest.substr(suffix_at);
    }
    return n;
}

std::string hf_layer_name(const GgufLayerName& name, GgufNames table) {
    if (name.suffix.empty()) return {};
    for (const auto& [from, to] : table)
        if (name.part == from)
            return fmt::format("model.layers.{}.{}{}", name.layer, to, name.suffix);
    return {};
}

std::string decoder_gguf_tensor_name(std::string_view name, GgufNames norms) {
    static const std::pair<std::string_view, std::string_view> common[] = {
        {"attn_norm", "input_layernorm"},    {"attn_q", "self_attn.q_proj"},
        {"attn_k", "self_attn.k_proj"},      {"attn_v", "self_attn.v_proj"},
        {"attn_output", "self_attn.o_proj"}, {"attn_q_norm", "self_attn.q_norm"},
        {"attn_k_norm", "self_attn.k_norm"}, {"ffn_gate", "mlp.gate_proj"},
        {"ffn_up", "mlp.up_proj"},           {"ffn_down", "mlp.down_proj"},
    };
    const auto layer = split_gguf_layer_name(name);
    if (!layer) return {};
    if (std::string n = hf_layer_name(*layer, common); !n.empty()) return n;
    return hf_layer_name(*layer, norms);
}

ModelSpec gguf_model_spec(const GgufFile& gguf) {
    ModelSpec spec;
    spec.source = gguf.path();
    const ModelFamily& family = gguf_family(gguf);
    spec.arch = family.arch;
    const GgufKeys keys(gguf, gguf.get_string("general.architecture"));
    spec.n_embd = keys.required("embedding_length", 1, max_dim);
    spec.n_layer = keys.required("block_count", 1, max_layers);
    spec.n_head = keys.required("attention.head_count", 1, max_dim);
    spec.n_head_kv =
        family.gguf_kv_heads
            ? family.gguf_kv_heads(gguf, keys, spec)
            : keys.integer("attention.head_count_kv", 1, spec.n_head).value_or(spec.n_head);
    if (spec.n_head % spec.n_head_kv != 0)
        fail("{}: metadata {} is {}, which does not divide the {} heads", gguf.path(),
             keys.name("attention.head_count_kv"), spec.n_head_kv, spec.n_head);
    spec.head_dim = keys.integer("attention.key_length", 2, max_dim)
                        .value_or(spec.n_embd / std::max<int64_t>(spec.n_head, 1));
    if (const auto v = keys.integer("attention.value_length", 1, max_dim); v && *v != spec.head_dim)
        fail("{}: metadata {} is {}, expected the key length {}", gguf.path(),
             keys.name("attention.value_length"), *v, spec.head_dim);
    if (const auto rot = keys.integer("rope.dimension_count", 1, max_dim);
        rot && *rot != spec.head_dim) {
        if (!family.partial_rotation || *rot % 2 != 0 || *rot > spec.head_dim)
            fail("{}: metadata {} is {}: rotating part of a head ({} dims) is not supported",
                 gguf.path(), keys.name("rope.dimension_count"), *rot, spec.head_dim);
        spec.rope_dims = *rot;  // Qwen3.5's partial rotation
    }
    if (spec.head_dim % 2 != 0)
        fail("{}: head size {} is odd; rotary embedding rotates pairs", gguf.path(), spec.head_dim);
    spec.n_ff = keys.required("feed_forward_length", 1, max_dim * 16);
    spec.n_ctx_train = keys.required("context_length", 1, max_ctx);
    spec.rope_theta = keys.positive("rope.freq_base").value_or(10000.0);
    spec.rms_norm_eps = keys.positive("attention.layer_norm_rms_epsilon").value_or(1e-6);
    spec.rope_style = family.gguf_rope;

    const GgufTensor* embed = gguf.find_tensor("token_embd.weight");
    if (!embed || embed->shape.size() != 2)
        fail("{}: tensor token_embd.weight is missing or not a matrix", gguf.path());
    spec.n_vocab = embed->shape[0];
    spec.tie_word_embeddings = gguf.find_tensor("output.weight") == nullptr;
    spec.attention_bias = gguf.find_tensor("blk.0.attn_q.bias") != nullptr;
    spec.attention_out_bias = gguf.find_tensor("blk.0.attn_output.bias") != nullptr;
    spec.qk_norm = gguf.find_tensor("blk.0.attn_q_norm.weight") != nullptr;
    read_rope_scaling(gguf, keys, spec);
    if (family.read_gguf) family.read_gguf(gguf, keys, spec);

    if (const auto bos = gguf.find_int("tokenizer.ggml.bos_token_id"))
        spec.bos_token_id = static_cast<int32_t>(*bos);
    for (const char* key : {"tokenizer.ggml.eos_token_id", "tokenizer.ggml.eot_token_id"})
        if (const auto id = gguf.find_int(key)) {
            const auto v = static_cast<int32_t>(*id);
            if (std::find(spec.eos_token_ids.begin(), spec.eos_token_ids.end(), v) ==
                spec.eos_token_ids.end())
                spec.eos_token_ids.push_back(v);
        }
    spec.torch_dtype = "gguf";
    return spec;
}

void load_gguf_weights(const GgufFile& gguf, const ModelSpec& spec, WeightStore& store) {
    const ModelFamily& family = *model_family(spec.arch);
    store.keep_alive(gguf.file());
    for (const GgufTensor& t : gguf.tensors()) {
        if (t.name == "rope_freqs.weight") continue;  // in the spec's rope scaling
        const std::string name = hf_name(t.name, family);
        if (name.empty())
            fail("{}: tensor {} is not part of a {} model as anelm reads it", gguf.path(), t.name,
                 arch_name(spec.arch));
        const auto info = ggml_type_info(t.type);
        if (!info->dequantizable)
            fail(
                "{}: tensor {} has type {}, which anelm does not read (it reads F32, F16, BF16, "
                "Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K .. Q8_K and IQ4_NL)",
                gguf.path(), t.name, info->name);
        const auto type = static_cast<GgmlType>(t.type);
        // Depthwise kernels (LFM2, Qwen3.5) are stored [C, K]; Hugging Face's are [C, 1, K].
        std::vector<int64_t> shape = t.shape;
        if ((name.ends_with("conv.conv.weight") || name.ends_with("conv1d.weight")) &&
            shape.size() == 2)
            shape.insert(shape.begin() + 1, 1);
        // Gemma's and Qwen3.5's RMSNorms multiply by 1 + weight; the file holds the sum
        // (but for the plain gain of Qwen3.5's gated norm). Qwen3.5's A_log is stored
        // as -exp(A_log).
        const bool offset_norm = family.offset_norm && family.offset_norm(name);
        const bool a_log = name.ends_with("linear_attn.A_log");
        const bool transformed = offset_norm || a_log;
        if (!transformed &&
            (type == GgmlType::f32 || type == GgmlType::f16 || type == GgmlType::bf16)) {
            const DType dtype = type == GgmlType::f32   ? DType::f32
                                : type == GgmlType::f16 ? DType::f16
                                                        : DType::bf16;
            store.add(name, TensorView{dtype, shape, t.data}, gguf.path());
            continue;
        }
        if (!transformed && t.shape.size() == 2) {
            TensorView view{DType::blocks, shape, t.data};
            view.block_type = t.type;
            view.block_elems = info->block_elems;
            view.block_bytes = info->block_bytes;
            store.add(name, view, gguf.path());
            continue;
        }
        std::shared_ptr<float[]> values = to_f32(gguf, t, type, offset_norm ? -1.0f : 0.0f);
        if (a_log)
            for (int64_t i = 0; i < t.shape[0]; ++i) {
                if (!(values[i] < 0))
                    fail("{}: tensor {} holds {}, expected -exp(A_log) < 0", gguf.path(), t.name,
                         values[i]);
                values[i] = std::log(-values[i]);
            }
        store.add(name,
                  TensorView{DType::f32, shape, reinterpret_cast<const std::byte*>(values.get())},
                  gguf.path());
        store.keep_alive(std::shared_ptr<const void>(values, values.get()));
    }
    store.set_origin(gguf.path());
}

}  // namespace anelm
