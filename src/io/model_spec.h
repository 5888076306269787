// Hyperparameters of a model, named the same way in config, IR, metadata and reports.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace anelm {

enum class Arch : uint8_t { llama, qwen2, qwen3, gemma3, lfm2, qwen3_5, gemma4 };

// How rotary embedding pairs dimensions: Hugging Face's rotate-half (i, i + d/2),
// or the interleaved (2i, 2i + 1) form of llama2.c checkpoints.
enum class RopeStyle : uint8_t { rotate_half, interleaved };

struct RopeScaling {
    enum class Type : uint8_t { none, llama3, linear };
    Type type = Type::none;
    double factor = 1.0;
    double low_freq_factor = 1.0;
    double high_freq_factor = 4.0;
    int64_t original_max_position_embeddings = 8192;
    // Per-frequency divisors after the scaling above, as llama.cpp's rope_freqs
    // tensor stores Llama 3's scaling; empty: none.
    std::vector<float> freq_factors;
};

struct ModelSpec {
    Arch arch = Arch::llama;
    std::string source;  // where it was read from, for messages
    int64_t n_embd = 0;
    int64_t n_layer = 0;
    int64_t n_head = 0;
    int64_t n_head_kv = 0;
    int64_t head_dim = 0;
    int64_t n_ff = 0;
    int64_t n_vocab = 0;
    int64_t n_ctx_train = 0;  // max_position_embeddings
    // n_ctx, at most the trained length when that is known.
    int64_t context_within(int64_t n_ctx) const {
        return n_ctx_train > 0 && n_ctx > n_ctx_train ? n_ctx_train : n_ctx;
    }
    double rope_theta = 10000.0;
    RopeStyle rope_style = RopeStyle::rotate_half;
    RopeScaling rope_scaling;
    double rms_norm_eps = 1e-6;
    bool tie_word_embeddings = false;
    bool attention_bias = false;      // q/k/v projections carry a bias (Qwen2)
    bool attention_out_bias = false;  // o_proj carries one too (Llama, Qwen3 attention_bias)
    bool qk_norm = false;             // RMSNorm on each head of q and k (Qwen3, Gemma 3)
    // Gemma 3
    double query_pre_attn_scalar = 0;  // attention scale is its inverse square root; 0: head_dim
    int64_t sliding_window = 0;        // keys a sliding-window layer sees; 0: none
    std::vector<bool> sliding_layers;  // per layer: sliding-window attention (else global)
    double rope_local_base_freq = 10000.0;  // rope base of sliding-window layers, without scaling
    double final_logit_softcapping = 0;     // 0: none
    double attn_logit_softcapping = 0;      // 0: none
    int64_t rope_dims = 0;  // leading dims of each head that rotate; 0: all (Qwen3.5: a quarter)
    // LFM2: short-convolution blocks in place of attention on some layers
    std::vector<bool> conv_layers;  // per layer: a short-convolution block (else attention)
    int64_t conv_kernel = 0;        // taps of the depthwise causal convolutions (LFM2, Qwen3.5)
    bool conv_bias = false;         // the block's projections and convolution carry biases
    // Qwen3.5: Gated DeltaNet (linear attention) layers between gated attention ones
    std::vector<bool> delta_layers;  // per layer: Gated DeltaNet (else full attention)
    int64_t delta_n_head_k = 0, delta_n_head_v = 0;      // key and value heads
    int64_t delta_head_dim_k = 0, delta_head_dim_v = 0;  // their sizes
    bool attention_gate = false;  // attention output times sigmoid(gate); q_proj holds the gate
    // Value head h reads key head h mod key heads (llama.cpp's order), not
    // h / (value heads / key heads) (Hugging Face's).
    bool delta_heads_tiled = false;
    // Gemma 4 (and Gemma 3's sliding_layers, rope_local_base_freq, final softcap)
    int64_t global_head_dim = 0;  // heads of the full-attention layers; 0: head_dim
    // Full layers' "proportional" rope: this fraction of the head's frequencies
    // turn (over exponents of the whole head), the rest stay zero.
    double rope_global_fraction = 1.0;
    int64_t n_kv_shared_layers = 0;  // the last layers attend with an earlier layer's K/V
    bool double_wide_mlp = false;    // ... and have MLPs twice n_ff wide
    int64_t per_layer_dim = 0;       // per-layer embeddings: width per layer; 0: none
    int64_t per_layer_vocab = 0;     // rows of their table
    std::string torch_dtype;         // as declared in config.json, informational
    int32_t bos_token_id = -1;
    std::vector<int32_t> eos_token_ids;
};

// Gemma 4's per-layer shapes (every other family: the spec's one size).
// The head size of layer il: global_head_dim on full-attention layers.
int64_t layer_head_dim(const ModelSpec& spec, int64_t il);
// The MLP width of layer il: doubled on the KV-sharing layers when double_wide_mlp.
int64_t layer_ff(const ModelSpec& spec, int64_t il);
// The layer whose K/V layer il attends with: itself, or for the last
// n_kv_shared_layers the last earlier layer of the same kind that has its own.
int64_t kv_source_layer(const ModelSpec& spec, int64_t il);
// The head size of each attention layer that computes its own K and V (not
// LFM2's convolutions, Qwen3.5's DeltaNet, Gemma 4's sharing layers).
std::vector<int64_t> kv_head_dims(const ModelSpec& spec);
// K and V values a position adds to the cache: n_head_kv rows of K and of V
// for each of those layers.
int64_t kv_values_per_position(const ModelSpec& spec);

}  // namespace anelm
