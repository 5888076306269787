#include "io/llama2c.h"

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <tuple>

#include "base/error.h"
#include "base/mapped_file.h"

namespace anelm {

namespace {

struct Header {
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};
static_assert(sizeof(Header) == 28);

// Newer llama2.c exports start with this magic ("ak42") and a version.
constexpr int32_t versioned_magic = 0x616b3432;

// What is wrong with a header, or "" when its sizes are all in range. The
// bounds keep every size computed from them far inside int64.
std::string header_problem(const Header& h) {
    if (h.dim == versioned_magic)
        return "a versioned llama2.c export (magic \"ak42\"); only the legacy format is read";
    for (const auto& [field, value, hi] :
         {std::tuple{"dim", h.dim, 1 << 16}, std::tuple{"hidden_dim", h.hidden_dim, 1 << 20},
          std::tuple{"n_layers", h.n_layers, 1024}, std::tuple{"n_heads", h.n_heads, h.dim},
          std::tuple{"n_kv_heads", h.n_kv_heads, h.n_heads}})
        if (value < 1 || value > hi)
            return fmt::format("header field {} is {}, expected 1 .. {}", field, value, hi);
    // The sign of vocab_size says whether the classifier is shared.
    const int64_t n_vocab = std::abs(int64_t{h.vocab_size});
    if (n_vocab < 1 || n_vocab > (1 << 24))
        return fmt::format("header field vocab_size is {}, expected ±1 .. ±{}", h.vocab_size,
                           1 << 24);
    if (h.seq_len < 1 || h.seq_len > (1 << 24))
        return fmt::format("header field seq_len is {}, expected 1 .. {}", h.seq_len, 1 << 24);
    if (h.dim % h.n_heads != 0)
        return fmt::format("header field n_heads is {}, which does not divide dim {}", h.n_heads,
                           h.dim);
    if (h.n_heads % h.n_kv_heads != 0)
        return fmt::format("header field n_kv_heads is {}, which does not divide n_heads {}",
                           h.n_kv_heads, h.n_heads);
    if ((h.dim / h.n_heads) % 2 != 0)
        return fmt::format("head size {} (dim / n_heads) is odd; rotary embedding rotates pairs",
                           h.dim / h.n_heads);
    return "";
}

// Checks the header and returns the spec it describes.
ModelSpec spec_from_header(const std::string& path, const Header& h) {
    if (const std::string problem = header_problem(h); !problem.empty())
        fail("{}: {}", path, problem);

    ModelSpec spec;  // a Llama, ModelSpec's default arch
    spec.source = path;
    spec.n_embd = h.dim;
    spec.n_layer = h.n_layers;
    spec.n_head = h.n_heads;
    spec.n_head_kv = h.n_kv_heads;
    spec.head_dim = h.dim / h.n_heads;
    spec.n_ff = h.hidden_dim;
    spec.n_vocab = std::abs(int64_t{h.vocab_size});
    spec.n_ctx_train = h.seq_len;
    // run.c's fixed constants: RoPE base 10000 over interleaved pairs (2i, 2i+1),
    // which its exported q/k rows are ordered for, and RMSNorm epsilon 1e-5.
    spec.rope_theta = 10000.0;
    spec.rope_style = RopeStyle::interleaved;
    spec.rms_norm_eps = 1e-5;
    spec.tie_word_embeddings = h.vocab_size > 0;
    spec.torch_dtype = "float32";
    spec.bos_token_id = 1;
    spec.eos_token_ids = {llama2c_stop_id};
    return spec;
}

}  // namespace

bool has_llama2c_header(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    Header h;
    if (!in.read(reinterpret_cast<char*>(&h), sizeof h)) return false;
    return h.dim == versioned_magic || header_problem(h).empty();
}

ModelSpec load_llama2c(const std::string& path, WeightStore& store) {
    auto file = std::make_shared<const MappedFile>(path);
    if (file->size() < sizeof(Header))
        fail("{}: file is {} bytes, shorter than the {}-byte llama2.c header", path, file->size(),
             sizeof(Header));
    Header h;
    std::memcpy(&h, file->data(), sizeof h);  // little-endian, as written by export.py
    ModelSpec spec = spec_from_header(path, h);

    // The arrays in file order; per-layer ones are stacked over the layers.
    struct Array {
        std::string name;  // the Hugging Face name, after "model.layers.{i}." if per layer
        std::vector<int64_t> shape;
        bool per_layer = false;
    };
    const int64_t d = spec.n_embd, ff = spec.n_ff, V = spec.n_vocab;
    const int64_t q_dim = spec.n_head * spec.head_dim, kv_dim = spec.n_head_kv * spec.head_dim;
    std::vector<Array> arrays = {
        {"model.embed_tokens.weight", {V, d}},
        {"input_layernorm.weight", {d}, true},
        {"self_attn.q_proj.weight", {q_dim, d}, true},
        {"self_attn.k_proj.weight", {kv_dim, d}, true},
        {"self_attn.v_proj.weight", {kv_dim, d}, true},
        {"self_attn.o_proj.weight", {d, q_dim}, true},
        {"post_attention_layernorm.weight", {d}, true},
        {"mlp.gate_proj.weight", {ff, d}, true},  // w1
        {"mlp.down_proj.weight", {d, ff}, true},  // w2
        {"mlp.up_proj.weight", {ff, d}, true},    // w3
        {"model.norm.weight", {d}},
        // The RoPE tables of older versions (real and imaginary parts), unused.
        {"", {2, spec.n_ctx_train * spec.head_dim / 2}},
    };
    if (!spec.tie_word_embeddings) arrays.push_back({"lm_head.weight", {V, d}});

    uint64_t expected = sizeof(Header);
    for (const Array& a : arrays)
        expected += TensorView{DType::f32, a.shape, nullptr}.n_bytes() *
                    static_cast<uint64_t>(a.per_layer ? spec.n_layer : 1);
    if (file->size() != expected)
        fail(
            "{}: file is {} bytes, but its header (dim {}, hidden_dim {}, n_layers {}, n_heads {}, "
            "n_kv_heads {}, vocab_size {}, seq_len {}) needs {}",
            path, file->size(), h.dim, h.hidden_dim, h.n_layers, h.n_heads, h.n_kv_heads,
            h.vocab_size, h.seq_len, expected);

    store.keep_alive(file);
    const std::byte* at = file->data() + sizeof(Header);  // 4-byte aligned: mapping + 28
    for (const Array& a : arrays) {
        const size_t n_bytes = TensorView{DType::f32, a.shape, nullptr}.n_bytes();
        for (int64_t i = 0; i < (a.per_layer ? spec.n_layer : 1); ++i, at += n_bytes) {
            if (a.name.empty()) continue;
            std::string name = a.per_layer ? fmt::format("model.layers.{}.{}", i, a.name) : a.name;
            store.add(std::move(name), TensorView{DType::f32, a.shape, at}, path);
        }
    }
    store.set_origin(path);
    return spec;
}

}  // namespace anelm
