// Writes a loaded Hugging Face model as a GGUF file the way llama.cpp's
// converter lays it out (tensor names, Llama's q/k row interleaving, Gemma's
// +1 on norm weights, rope_freqs for Llama 3 scaling, metadata keys), for
// tests that compare the GGUF path with the Hugging Face one. Matrices are
// written F32, F16 or Q8_0 (quantized here: one f16 scale per 32 values).
// With a tokenizer folder, its tokenizer.json becomes the tokenizer.* metadata.
#pragma once

#include <cmath>
#include <numbers>
#include <span>
#include <string>
#include <vector>

#include "base/half.h"
#include "exec/tiny_model.h"
#include "io/gguf_test_writer.h"
#include "io/tensor_values.h"
#include "models/model_loader.h"
#include "models/models.h"
#include "tokenizer/gguf_vocab_writer.h"

namespace anelm::test {

enum class GgufMatrixType : uint32_t { f32 = 0, f16 = 1, q8_0 = 8 };

// The values a Q8_0 block stores for x[0..32), and what they decode to.
inline std::string q8_0_block(const float* x, float* decoded) {
    float amax = 0;
    for (int i = 0; i < 32; ++i) amax = std::max(amax, std::fabs(x[i]));
    const uint16_t d = f32_to_f16(amax / 127.0f);
    const float scale = f16_to_f32(d), inverse = amax > 0 ? 127.0f / amax : 0.0f;
    std::string out(34, '\0');
    std::memcpy(out.data(), &d, 2);
    for (int i = 0; i < 32; ++i) {
        const auto q = static_cast<int8_t>(std::lround(x[i] * inverse));
        out[2 + i] = static_cast<char>(q);
        decoded[i] = scale * q;
    }
    return out;
}

// llama.cpp's converter tiles Qwen3.5's value heads over the key heads: value
// head k * r + j of key head k moves to j * n_k + k, wherever they index rows,
// channels or columns (`back` undoes it).
inline void qwen35_tile_heads(const ModelSpec& s, const std::string& name,
                              const std::vector<int64_t>& shape, std::vector<float>& values,
                              bool back) {
    const int64_t nk = s.delta_n_head_k, nv = s.delta_n_head_v, r = nv / nk;
    // Moves blocks of `size` values along a dimension of `count` blocks with stride `step`.
    auto tile = [&](int64_t first, int64_t size, int64_t outer, int64_t step, int64_t inner) {
        const std::vector<float> old = values;
        for (int64_t o = 0; o < outer; ++o)
            for (int64_t k = 0; k < nk; ++k)
                for (int64_t j = 0; j < r; ++j)
                    for (int64_t e = 0; e < size; ++e)
                        for (int64_t i = 0; i < inner; ++i) {
                            int64_t from = first + (k * r + j) * size + e;
                            int64_t to = first + (j * nk + k) * size + e;
                            if (back) std::swap(from, to);
                            values[(o * step + to) * inner + i] =
                                old[(o * step + from) * inner + i];
                        }
    };
    const int64_t dv = s.delta_head_dim_v, qk = 2 * nk * s.delta_head_dim_k;
    const int64_t cols = shape.size() == 2 ? shape[1] : 1;
    if (r > 1) {
        if (name.ends_with("in_proj_qkv.weight")) tile(qk, dv, 1, 0, cols);
        if (name.ends_with("conv1d.weight")) tile(qk, dv, 1, 0, shape.back());
        if (name.ends_with("in_proj_z.weight")) tile(0, dv, 1, 0, cols);
        if (name.ends_with("in_proj_b.weight") || name.ends_with("in_proj_a.weight"))
            tile(0, 1, 1, 0, cols);
        if (name.ends_with("A_log") || name.ends_with("dt_bias")) tile(0, 1, 1, 0, 1);
        if (name.ends_with("out_proj.weight")) tile(0, dv, shape[0], cols, 1);
    }
}

// What llama.cpp's converter does to a Qwen3.5 tensor: the heads tiled, norms
// (but the gated one) holding 1 + w, A_log stored as -exp(A_log).
inline void qwen35_as_llama_cpp(const ModelSpec& s, const std::string& name,
                                const std::vector<int64_t>& shape, std::vector<float>& values) {
    qwen35_tile_heads(s, name, shape, values, false);
    if (name.ends_with("norm.weight") && !name.ends_with("linear_attn.norm.weight"))
        for (float& v : values) v += 1.0f;
    if (name.ends_with("A_log"))
        for (float& v : values) v = -std::exp(v);
}

struct GgufFromHf {
    // What each quantized matrix decodes to, under its Hugging Face name.
    std::map<std::string, std::vector<float>> decoded;
};

inline GgufFromHf write_gguf_from_hf(const LoadedModel& m, const std::string& path,
                                     GgufMatrixType matrix_type,
                                     const std::filesystem::path& tokenizer_dir = {}) {
    const ModelSpec& s = m.spec;
    const std::string arch = s.arch == Arch::qwen3_5 ? "qwen35" : arch_name(s.arch);
    GgufTestWriter w;
    w.string("general.architecture", arch);
    w.u32(arch + ".context_length", static_cast<uint32_t>(s.n_ctx_train));
    w.u32(arch + ".embedding_length", static_cast<uint32_t>(s.n_embd));
    w.u32(arch + ".block_count", static_cast<uint32_t>(s.n_layer));
    w.u32(arch + ".feed_forward_length", static_cast<uint32_t>(s.n_ff));
    w.u32(arch + ".attention.head_count", static_cast<uint32_t>(s.n_head));
    if (s.arch == Arch::lfm2) {
        // Per layer, 0 for the short-convolution blocks.
        std::vector<int32_t> kv;
        for (bool conv : s.conv_layers) kv.push_back(conv ? 0 : static_cast<int32_t>(s.n_head_kv));
        w.i32s(arch + ".attention.head_count_kv", kv);
        w.u32(arch + ".shortconv.l_cache", static_cast<uint32_t>(s.conv_kernel));
    } else {
        w.u32(arch + ".attention.head_count_kv", static_cast<uint32_t>(s.n_head_kv));
    }
    w.u32(arch + ".attention.key_length", static_cast<uint32_t>(s.head_dim));
    w.u32(arch + ".attention.value_length", static_cast<uint32_t>(s.head_dim));
    w.u32(arch + ".rope.dimension_count",
          static_cast<uint32_t>(s.rope_dims > 0 ? s.rope_dims : s.head_dim));
    if (s.arch == Arch::qwen3_5) {
        w.u32(arch + ".ssm.conv_kernel", static_cast<uint32_t>(s.conv_kernel));
        w.u32(arch + ".ssm.state_size", static_cast<uint32_t>(s.delta_head_dim_k));
        w.u32(arch + ".ssm.group_count", static_cast<uint32_t>(s.delta_n_head_k));
        w.u32(arch + ".ssm.time_step_rank", static_cast<uint32_t>(s.delta_n_head_v));
        w.u32(arch + ".ssm.inner_size",
              static_cast<uint32_t>(s.delta_n_head_v * s.delta_head_dim_v));
        const auto first_full = std::find(s.delta_layers.begin(), s.delta_layers.end(), false);
        w.u32(arch + ".full_attention_interval",
              static_cast<uint32_t>(first_full - s.delta_layers.begin() + 1));
    }
    w.f32(arch + ".rope.freq_base", static_cast<float>(s.rope_theta));
    w.f32(arch + ".attention.layer_norm_rms_epsilon", static_cast<float>(s.rms_norm_eps));
    if (s.rope_scaling.type == RopeScaling::Type::linear) {
        w.string(arch + ".rope.scaling.type", "linear");
        w.f32(arch + ".rope.scaling.factor", static_cast<float>(s.rope_scaling.factor));
    }
    if (s.arch == Arch::gemma3) {
        w.u32(arch + ".attention.sliding_window", static_cast<uint32_t>(s.sliding_window));
        int64_t period = 1;
        while (period <= s.n_layer && s.sliding_layers[period - 1]) ++period;
        w.u32(arch + ".attention.sliding_window_pattern", static_cast<uint32_t>(period));
        w.f32(arch + ".rope.freq_base_swa", static_cast<float>(s.rope_local_base_freq));
        if (s.final_logit_softcapping > 0)
            w.f32(arch + ".final_logit_softcapping", static_cast<float>(s.final_logit_softcapping));
    }
    if (!tokenizer_dir.empty()) {
        add_hf_tokenizer(w, tokenizer_dir / "tokenizer.json",
                         tokenizer_dir / "tokenizer_config.json", "qwen2");
    } else {
        w.u32("tokenizer.ggml.bos_token_id", static_cast<uint32_t>(std::max(s.bos_token_id, 0)));
        if (!s.eos_token_ids.empty())
            w.u32("tokenizer.ggml.eos_token_id", static_cast<uint32_t>(s.eos_token_ids[0]));
    }

    if (s.rope_scaling.type == RopeScaling::Type::llama3) {
        // llama.cpp's converter: Llama 3's scaling as one divisor per frequency.
        const RopeScaling& r = s.rope_scaling;
        const double old_ctx = static_cast<double>(r.original_max_position_embeddings);
        std::vector<float> factors;
        for (int64_t i = 0; i < s.head_dim / 2; ++i) {
            const double freq =
                1.0 / std::pow(s.rope_theta, 2.0 * static_cast<double>(i) / s.head_dim);
            const double wavelen = 2 * std::numbers::pi / freq;
            if (wavelen < old_ctx / r.high_freq_factor) {
                factors.push_back(1.0f);
            } else if (wavelen > old_ctx / r.low_freq_factor) {
                factors.push_back(static_cast<float>(r.factor));
            } else {
                const double smooth = (old_ctx / wavelen - r.low_freq_factor) /
                                      (r.high_freq_factor - r.low_freq_factor);
                factors.push_back(static_cast<float>(1.0 / ((1 - smooth) / r.factor + smooth)));
            }
        }
        std::string bytes(factors.size() * 4, '\0');
        std::memcpy(bytes.data(), factors.data(), bytes.size());
        w.tensor("rope_freqs.weight", {s.head_dim / 2}, 0, bytes);
    }

    const std::pair<const char*, const char*> layer_names[] = {
        {"input_layernorm", "attn_norm"},
        {"self_attn.q_proj", "attn_q"},
        {"self_attn.k_proj", "attn_k"},
        {"self_attn.v_proj", "attn_v"},
        {"self_attn.o_proj", "attn_output"},
        {"self_attn.q_norm", "attn_q_norm"},
        {"self_attn.k_norm", "attn_k_norm"},
        {"post_attention_layernorm", s.arch == Arch::gemma3 ? "post_attention_norm" : "ffn_norm"},
        {"pre_feedforward_layernorm", "ffn_norm"},
        {"post_feedforward_layernorm", "post_ffw_norm"},
        {"mlp.gate_proj", "ffn_gate"},
        {"mlp.up_proj", "ffn_up"},
        {"mlp.down_proj", "ffn_down"},
    };
    const std::pair<const char*, const char*> lfm2_names[] = {
        {"operator_norm", "attn_norm"},
        {"self_attn.q_proj", "attn_q"},
        {"self_attn.k_proj", "attn_k"},
        {"self_attn.v_proj", "attn_v"},
        {"self_attn.out_proj", "attn_output"},
        {"self_attn.q_layernorm", "attn_q_norm"},
        {"self_attn.k_layernorm", "attn_k_norm"},
        {"conv.in_proj", "shortconv.in_proj"},
        {"conv.conv", "shortconv.conv"},
        {"conv.out_proj", "shortconv.out_proj"},
        {"ffn_norm", "ffn_norm"},
        {"feed_forward.w1", "ffn_gate"},
        {"feed_forward.w3", "ffn_up"},
        {"feed_forward.w2", "ffn_down"},
    };
    const std::pair<const char*, const char*> qwen35_names[] = {
        {"input_layernorm", "attn_norm"},
        {"post_attention_layernorm", "post_attention_norm"},
        {"self_attn.q_proj", "attn_q"},
        {"self_attn.k_proj", "attn_k"},
        {"self_attn.v_proj", "attn_v"},
        {"self_attn.o_proj", "attn_output"},
        {"self_attn.q_norm", "attn_q_norm"},
        {"self_attn.k_norm", "attn_k_norm"},
        {"linear_attn.in_proj_qkv", "attn_qkv"},
        {"linear_attn.in_proj_z", "attn_gate"},
        {"linear_attn.in_proj_b", "ssm_beta"},
        {"linear_attn.in_proj_a", "ssm_alpha"},
        {"linear_attn.conv1d", "ssm_conv1d"},
        {"linear_attn.norm", "ssm_norm"},
        {"linear_attn.out_proj", "ssm_out"},
        {"mlp.gate_proj", "ffn_gate"},
        {"mlp.up_proj", "ffn_up"},
        {"mlp.down_proj", "ffn_down"},
    };
    auto gguf_name = [&](const std::string& hf) -> std::string {
        if (hf.ends_with("linear_attn.A_log") || hf.ends_with("linear_attn.dt_bias")) {
            const size_t dot = hf.find('.', 13);
            return "blk." + hf.substr(13, dot - 13) +
                   (hf.ends_with("A_log") ? ".ssm_a" : ".ssm_dt.bias");
        }
        if (hf == "model.embed_tokens.weight") return "token_embd.weight";
        if (hf == "model.embedding_norm.weight") return "token_embd_norm.weight";
        if (hf == "model.norm.weight") return "output_norm.weight";
        if (hf == "lm_head.weight") return "output.weight";
        const size_t dot = hf.find('.', 13);  // after "model.layers.N"
        const std::string layer = hf.substr(13, dot - 13), rest = hf.substr(dot + 1);
        const size_t suffix = rest.rfind('.');
        using Names = std::span<const std::pair<const char*, const char*>>;
        const Names names = s.arch == Arch::lfm2      ? Names(lfm2_names)
                            : s.arch == Arch::qwen3_5 ? Names(qwen35_names)
                                                      : Names(layer_names);
        for (const auto& [from, to] : names)
            if (rest.substr(0, suffix) == from)
                return "blk." + layer + "." + to + rest.substr(suffix);
        return {};
    };

    GgufFromHf result;
    for (const std::string& name : m.weights.names()) {
        const TensorView& view = *m.weights.find(name);
        std::vector<float> values(static_cast<size_t>(view.numel()));
        read_f32(view, 0, view.numel(), values.data());
        const bool qk = name.ends_with("q_proj.weight") || name.ends_with("k_proj.weight") ||
                        name.ends_with("q_proj.bias") || name.ends_with("k_proj.bias");
        if (s.arch == Arch::llama && qk) {
            // Within each head, row s * half + j moves to row 2 j + s.
            const int64_t row = view.shape.size() == 2 ? view.shape[1] : 1;
            const int64_t half = s.head_dim / 2, heads = view.shape[0] / s.head_dim;
            std::vector<float> permuted(values.size());
            for (int64_t h = 0; h < heads; ++h)
                for (int64_t half_index = 0; half_index < 2; ++half_index)
                    for (int64_t j = 0; j < half; ++j)
                        std::copy_n(&values[((h * s.head_dim) + half_index * half + j) * row], row,
                                    &permuted[((h * s.head_dim) + 2 * j + half_index) * row]);
            values = std::move(permuted);
        }
        if (s.arch == Arch::gemma3 && name.ends_with("norm.weight"))
            for (float& v : values) v += 1.0f;
        if (s.arch == Arch::qwen3_5) qwen35_as_llama_cpp(s, name, view.shape, values);

        const bool matrix = view.shape.size() == 2;
        const auto type = matrix ? matrix_type : GgufMatrixType::f32;
        std::string bytes;
        if (type == GgufMatrixType::f32) {
            bytes.assign(values.size() * 4, '\0');
            std::memcpy(bytes.data(), values.data(), bytes.size());
        } else if (type == GgufMatrixType::f16) {
            for (float v : values) {
                const uint16_t h = f32_to_f16(v);
                bytes.append(reinterpret_cast<const char*>(&h), 2);
            }
        } else {
            std::vector<float>& decoded = result.decoded[name];
            decoded.resize(values.size());
            for (size_t i = 0; i < values.size(); i += 32)
                bytes += q8_0_block(&values[i], &decoded[i]);
            // In the Hugging Face model's order, which is what it is compared with.
            if (s.arch == Arch::qwen3_5) qwen35_tile_heads(s, name, view.shape, decoded, true);
        }
        // Depthwise kernels [C, 1, K] are stored [C, K].
        std::vector<int64_t> shape = view.shape;
        if (name.ends_with("conv.conv.weight") || name.ends_with("conv1d.weight"))
            shape.erase(shape.begin() + 1);
        w.tensor(gguf_name(name), shape, static_cast<uint32_t>(type), std::move(bytes));
    }
    w.write(path);
    return result;
}

// A GGUF's weights with every block matrix decoded to f32: the model the
// blocks stand for, run by the float kernels.
inline PatchedWeights dequantized_weights(const WeightStore& weights) {
    std::map<std::string, std::vector<float>> patches;
    for (const std::string& name : weights.names()) {
        const TensorView& view = *weights.find(name);
        if (view.dtype != DType::blocks) continue;
        std::vector<float>& values = patches[name];
        values.resize(static_cast<size_t>(view.numel()));
        read_f32(view, 0, view.numel(), values.data());
    }
    return PatchedWeights(weights, std::move(patches));
}

}  // namespace anelm::test
