// Model shapes for the cost model. Norm weights and biases are left out: they
// are under 0.1% of any model here.
#include "analysis/plan_shape.h"

#include <fmt/ranges.h>

#include <algorithm>
#include <filesystem>

#include "base/error.h"
#include "io/gguf.h"
#include "models/expected_tensors.h"
#include "models/hf_config.h"
#include "models/gguf_model.h"
#include "models/model_loader.h"
#include "quant/quant_spec.h"
#include "synth/synth.h"

namespace anelm::plan {

double ModelShape::kv_elems(int64_t n_ctx) const {
    return kv_per_pos * n_ctx + kv_window_per_pos * std::min(n_ctx, window) + state_elems;
}

namespace {

// Gemma 4's shapes: heads and MLP widths per layer, no K/V projections or
// cache on the layers that share another's, and per-layer embeddings: a second
// table looked up like the first, plus a projection of the embedding and a
// gate and a projection in every layer.
void add_per_layer_shapes(const ModelSpec& s, ModelShape& m) {
    const double e = double(s.n_embd), pl = double(s.per_layer_dim), kvh = double(s.n_head_kv);
    m.layer_params = s.n_layer * pl * e;  // per_layer_model_projection
    m.embed_params += double(s.per_layer_vocab) * s.n_layer * pl;
    m.kv_per_pos = m.kv_window_per_pos = m.attn_q_dim_sum = 0;
    for (int64_t il = 0; il < s.n_layer; ++il) {
        const double hd = double(layer_head_dim(s, il)), q_dim = double(s.n_head) * hd;
        const bool own = kv_source_layer(s, il) == il;
        m.layer_params += 2 * e * q_dim + (own ? 2 * e * kvh * hd : 0) +
                          3 * e * double(layer_ff(s, il)) + 2 * e * pl;
        const bool sliding = s.sliding_layers[static_cast<size_t>(il)];
        // The sliding layers' attention stops at the window: only the full ones
        // grow with the context.
        if (!sliding) m.attn_q_dim_sum += q_dim;
        if (!own) continue;
        (sliding ? m.kv_window_per_pos : m.kv_per_pos) += 2.0 * kvh * hd;
    }
}

}  // namespace

ModelShape shape_from_spec(const ModelSpec& s, std::string name) {
    const double q_dim = double(s.n_head) * s.head_dim, kv_dim = double(s.n_head_kv) * s.head_dim;
    const double e = double(s.n_embd);
    ModelShape m;
    m.name = std::move(name);
    m.source = s.source;
    m.n_layer = s.n_layer;
    m.n_embd = s.n_embd;
    m.n_vocab = s.n_vocab;
    m.n_ctx_train = s.n_ctx_train;
    // q and o, k and v, then gate, up and down.
    m.layer_params = s.n_layer * (2 * e * q_dim + 2 * e * kv_dim + 3 * e * s.n_ff);
    m.embed_params = double(s.n_vocab) * e;
    m.head_params = double(s.n_vocab) * e;
    m.tied = s.tie_word_embeddings;
    m.kv_per_pos = 2.0 * s.n_layer * kv_dim;
    if (s.sliding_window > 0 && !s.sliding_layers.empty()) {
        // Sliding-window layers keep a cache of the window only (ANEMLL's kv_cache_local).
        const auto n_sliding = std::count(s.sliding_layers.begin(), s.sliding_layers.end(), true);
        m.kv_per_pos = 2.0 * double(s.n_layer - n_sliding) * kv_dim;
        m.kv_window_per_pos = 2.0 * double(n_sliding) * kv_dim;
        m.window = s.sliding_window;
    }
    m.attn_q_dim_sum = s.n_layer * q_dim;
    if (!s.conv_layers.empty()) {
        // LFM2: short-convolution blocks (in_proj to three widths, the taps,
        // out_proj) in place of attention; their state is a window of K - 1 inputs.
        const double n_conv = double(std::count(s.conv_layers.begin(), s.conv_layers.end(), true));
        const double n_attn = double(s.n_layer) - n_conv;
        m.layer_params = n_attn * (2 * e * q_dim + 2 * e * kv_dim) +
                         n_conv * (4 * e * e + double(s.conv_kernel) * e) +
                         s.n_layer * 3 * e * s.n_ff;
        m.kv_per_pos = 2.0 * n_attn * kv_dim;
        m.state_elems = n_conv * double(s.conv_kernel - 1) * e;
        m.attn_q_dim_sum = n_attn * q_dim;
    }
    if (!s.delta_layers.empty()) {
        // Qwen3.5: gated attention (q_proj twice as tall) and Gated DeltaNet
        // layers, whose state is a matrix per head and a convolution window.
        const double n_delta =
            double(std::count(s.delta_layers.begin(), s.delta_layers.end(), true));
        const double n_attn = double(s.n_layer) - n_delta;
        const double key = double(s.delta_n_head_k) * s.delta_head_dim_k;
        const double value = double(s.delta_n_head_v) * s.delta_head_dim_v;
        const double conv = 2 * key + value, heads = double(s.delta_n_head_v);
        m.layer_params =
            n_attn * (3 * e * q_dim + 2 * e * kv_dim) +
            n_delta * (e * (conv + value + 2 * heads) + value * e + conv * double(s.conv_kernel)) +
            s.n_layer * 3 * e * s.n_ff;
        m.kv_per_pos = 2.0 * n_attn * kv_dim;
        m.state_elems = n_delta * (heads * s.delta_head_dim_k * s.delta_head_dim_v +
                                   double(s.conv_kernel - 1) * conv);
        m.attn_q_dim_sum = n_attn * q_dim;
    }
    if (s.global_head_dim > 0 || s.n_kv_shared_layers > 0 || s.per_layer_dim > 0)
        add_per_layer_shapes(s, m);
    for (const ExpectedTensor& t : expected_tensors(s)) {
        if (t.shape.size() == 2 && quant::tensor_component(t.name) == quant::Component::ffn)
            m.layer_matrices.push_back({t.name, t.shape[0], t.shape[1]});
    }
    m.big_n_out = std::max({s.n_ff, int64_t(q_dim), s.n_embd});
    m.big_n_in = m.big_n_out == s.n_ff ? s.n_embd : std::max<int64_t>(s.n_embd, int64_t(q_dim));
    return m;
}

namespace {

std::vector<ModelShape> build_known_shapes() {
    std::vector<ModelShape> out;
    {
        // openai-community/gpt2 config.json: n_embd 768, n_layer 12, n_head 12, n_inner 4 x 768,
        // vocab 50257, tied head. A layer: c_attn 768x2304, c_proj 768x768, c_fc and its
        // projection 768x3072 each, n_positions 1024. The learned position table (1024 x 768)
        // counts as embedding.
        ModelShape m;
        m.name = "gpt2-124m";
        m.source = "openai-community/gpt2 config.json (Hugging Face)";
        m.n_layer = 12;
        m.n_embd = 768;
        m.n_vocab = 50257;
        m.n_ctx_train = 1024;  // n_positions
        m.layer_params = 12 * (768.0 * 2304 + 768.0 * 768 + 2 * 768.0 * 3072);
        m.embed_params = 50257.0 * 768 + 1024.0 * 768;
        m.head_params = 50257.0 * 768;
        m.tied = true;
        m.kv_per_pos = 2.0 * 12 * 768;
        m.attn_q_dim_sum = 12 * 768;
        m.big_n_out = 3072;
        m.big_n_in = 768;
        out.push_back(m);
    }
    {
        // Qwen/Qwen3.5-2B config.json (Hugging Face): hidden_size 2048, 24 layers of which every
        // 4th is full attention (8 query heads of 256 with an output gate, 2 KV heads) and the
        // others Gated DeltaNet (16 key / 16 value heads of 128: one 2048 x 8192 input
        // projection for q, k, v and the gate z, a 2048 x 2048 output), intermediate_size 6144,
        // vocab 248320, tied. Total 1.88 B weights, which agrees with the 1,280,835,840-byte
        // Q4_K_M GGUF (unsloth/Qwen3.5-2B-GGUF) at ~5.4 bits per weight.
        ModelShape m;
        m.name = "qwen3.5-2b";
        m.source = "Qwen/Qwen3.5-2B config.json (Hugging Face)";
        m.n_layer = 24;
        m.n_embd = 2048;
        m.n_vocab = 248320;
        const double full = 2048.0 * 4096 + 2 * 2048.0 * 512 + 2048.0 * 2048;
        const double delta = 2048.0 * 8192 + 2048.0 * 32 + 2048.0 * 2048;
        m.layer_params = 6 * full + 18 * delta + 24 * 3 * 2048.0 * 6144;
        m.embed_params = 248320.0 * 2048;
        m.head_params = m.embed_params;
        m.tied = true;
        m.kv_per_pos = 6 * 2 * 2 * 256.0;
        // Per DeltaNet layer: a 128 x 128 state per head and a short convolution window.
        m.state_elems = 18 * (16 * 128.0 * 128 + 3 * 6144.0);
        m.attn_q_dim_sum = 6 * 8 * 256;
        m.big_n_out = 8192;
        m.big_n_in = 2048;
        out.push_back(m);
    }
    return out;
}

}  // namespace

const std::vector<ModelShape>& known_shapes() {
    static const std::vector<ModelShape> table = build_known_shapes();
    return table;
}

ModelShape resolve_model(std::string_view what) {
    const std::vector<std::string> presets = synth_presets();
    if (std::find(presets.begin(), presets.end(), what) != presets.end()) {
        const SynthPreset p = synth_preset(what);
        ModelShape m = shape_from_spec(p.spec, p.name);
        m.source = p.model;
        return m;
    }
    for (const ModelShape& m : known_shapes())
        if (m.name == what) return m;
    if (std::filesystem::exists(std::string(what))) {
        const std::string path(what);
        // A GGUF's spec is in its metadata: no tensor needs reading.
        if (!std::filesystem::is_directory(path) && is_gguf_file(path))
            return shape_from_spec(gguf_model_spec(GgufFile(path)), path);
        // A converted folder keeps its source's config.json beside meta.yaml.
        if (std::filesystem::exists(std::filesystem::path(path) / "meta.yaml"))
            return shape_from_spec(load_hf_config((std::filesystem::path(path) / "config.json").string()), path);
        return shape_from_spec(load_model(path).spec, path);
    }
    std::vector<std::string> names = presets;
    for (const ModelShape& m : known_shapes()) names.push_back(m.name);
    fail("plan: '{}' is not a model path, a synth preset or a known shape (known: {})", what,
         fmt::join(names, ", "));
}

}  // namespace anelm::plan
