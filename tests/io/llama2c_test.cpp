#include "io/llama2c.h"

#include <gtest/gtest.h>

#include <cstring>

#include "io/io_test_util.h"

namespace anelm {
namespace {

using test::expect_error;

struct Header {
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};

// A checkpoint whose every float holds its own index among the floats after
// the header, so each tensor's place in the file can be read off its values.
std::string checkpoint(const Header& h, int64_t extra_floats = 0) {
    const int64_t d = h.dim, ff = h.hidden_dim, L = h.n_layers, V = std::abs(h.vocab_size);
    const int64_t kv = d / h.n_heads * h.n_kv_heads;
    int64_t n = V * d + L * (d + d * d + 2 * kv * d + d * d + d + 3 * ff * d) + d +
                h.seq_len * (d / h.n_heads);
    if (h.vocab_size < 0) n += V * d;
    n += extra_floats;
    std::string out(sizeof h + static_cast<size_t>(n) * 4, '\0');
    std::memcpy(out.data(), &h, sizeof h);
    for (int64_t i = 0; i < n; ++i) {
        const float v = static_cast<float>(i);
        std::memcpy(out.data() + sizeof h + i * 4, &v, 4);
    }
    return out;
}

float first(const TensorView& t) {
    float v;
    std::memcpy(&v, t.data, 4);
    return v;
}

class Llama2cTest : public test::ScratchDir {
protected:
    std::string write(const std::string& bytes) {
        test::write_file(path("model.bin"), bytes);
        return path("model.bin");
    }
};

TEST_F(Llama2cTest, MapsEveryArrayInFileOrder) {
    // dim 8, hidden 12, 2 layers, 4 heads (head size 2), 2 kv heads, unshared classifier.
    const Header h{8, 12, 2, 4, 2, -10, 6};
    const std::string file = write(checkpoint(h));
    WeightStore store;
    const ModelSpec s = load_llama2c(file, store);
    EXPECT_EQ(s.arch, Arch::llama);
    EXPECT_EQ(s.n_embd, 8);
    EXPECT_EQ(s.n_ff, 12);
    EXPECT_EQ(s.n_layer, 2);
    EXPECT_EQ(s.n_head, 4);
    EXPECT_EQ(s.n_head_kv, 2);
    EXPECT_EQ(s.head_dim, 2);
    EXPECT_EQ(s.n_vocab, 10);
    EXPECT_EQ(s.n_ctx_train, 6);
    EXPECT_FALSE(s.tie_word_embeddings);
    EXPECT_EQ(store.size(), 1u + 2 * 9 + 1 + 1);
    EXPECT_EQ(store.origin(), file);

    // Offsets in floats, following run.c's memory_map_weights.
    const float embed = 0, att_norm = 80, wq = att_norm + 2 * 8, wk = wq + 2 * 64, wv = wk + 2 * 32,
                wo = wv + 2 * 32, ffn_norm = wo + 2 * 64, w1 = ffn_norm + 2 * 8, w2 = w1 + 2 * 96,
                w3 = w2 + 2 * 96, norm = w3 + 2 * 96, rope = norm + 8, cls = rope + 2 * 6 * 1;
    EXPECT_EQ(first(store.get("model.embed_tokens.weight", {10, 8})), embed);
    EXPECT_EQ(first(store.get("model.layers.0.input_layernorm.weight", {8})), att_norm);
    EXPECT_EQ(first(store.get("model.layers.1.input_layernorm.weight", {8})), att_norm + 8);
    EXPECT_EQ(first(store.get("model.layers.1.self_attn.q_proj.weight", {8, 8})), wq + 64);
    EXPECT_EQ(first(store.get("model.layers.1.self_attn.k_proj.weight", {4, 8})), wk + 32);
    EXPECT_EQ(first(store.get("model.layers.0.self_attn.v_proj.weight", {4, 8})), wv);
    EXPECT_EQ(first(store.get("model.layers.1.self_attn.o_proj.weight", {8, 8})), wo + 64);
    EXPECT_EQ(first(store.get("model.layers.1.post_attention_layernorm.weight", {8})),
              ffn_norm + 8);
    EXPECT_EQ(first(store.get("model.layers.1.mlp.gate_proj.weight", {12, 8})), w1 + 96);
    EXPECT_EQ(first(store.get("model.layers.1.mlp.down_proj.weight", {8, 12})), w2 + 96);
    EXPECT_EQ(first(store.get("model.layers.0.mlp.up_proj.weight", {12, 8})), w3);
    EXPECT_EQ(first(store.get("model.norm.weight", {8})), norm);
    EXPECT_EQ(first(store.get("lm_head.weight", {10, 8})), cls);
    for (const std::string& name : store.names()) EXPECT_EQ(store.get(name).dtype, DType::f32);
}

TEST_F(Llama2cTest, SharedClassifierHasNoLmHead) {
    WeightStore store;
    const ModelSpec s = load_llama2c(write(checkpoint({8, 12, 1, 2, 2, 10, 4})), store);
    EXPECT_TRUE(s.tie_word_embeddings);
    EXPECT_EQ(store.find("lm_head.weight"), nullptr);
    EXPECT_EQ(store.size(), 1u + 9 + 1);
}

TEST_F(Llama2cTest, RejectsShortAndLongFiles) {
    WeightStore store;
    std::string file = write(std::string(10, '\0'));
    expect_error([&] { load_llama2c(file, store); },
                 {file + ": file is 10 bytes, shorter than the 28-byte llama2.c header"});
    const Header h{8, 12, 1, 2, 2, 10, 4};
    const std::string full = checkpoint(h);
    file = write(full.substr(0, full.size() - 4));
    expect_error([&] { load_llama2c(file, store); },
                 {file, fmt::format("file is {} bytes", full.size() - 4), "(dim 8, hidden_dim 12",
                  fmt::format("needs {}", full.size())});
    file = write(checkpoint(h, 3));
    expect_error([&] { load_llama2c(file, store); }, {file, fmt::format("needs {}", full.size())});
    EXPECT_EQ(store.size(), 0u);
}

TEST_F(Llama2cTest, RejectsAbsurdHeaders) {
    WeightStore store;
    const auto header_only = [&](const Header& h) {
        std::string bytes(sizeof h, '\0');
        std::memcpy(bytes.data(), &h, sizeof h);
        return write(bytes);
    };
    std::string file = header_only({0, 12, 1, 2, 2, 10, 4});
    expect_error([&] { load_llama2c(file, store); },
                 {file + ": header field dim is 0, expected 1 .. 65536"});
    file = header_only({8, 12, -1, 2, 2, 10, 4});
    expect_error([&] { load_llama2c(file, store); }, {"header field n_layers is -1"});
    file = header_only({8, 12, 1, 3, 3, 10, 4});
    expect_error([&] { load_llama2c(file, store); },
                 {"header field n_heads is 3, which does not divide dim 8"});
    file = header_only({8, 12, 1, 4, 3, 10, 4});
    expect_error([&] { load_llama2c(file, store); },
                 {"header field n_kv_heads is 3, which does not divide n_heads 4"});
    file = header_only({8, 12, 1, 2, 4, 10, 4});
    expect_error([&] { load_llama2c(file, store); },
                 {"header field n_kv_heads is 4, expected 1 .. 2"});
    file = header_only({8, 12, 1, 8, 8, 10, 4});
    expect_error([&] { load_llama2c(file, store); }, {"head size 1 (dim / n_heads) is odd"});
    file = header_only({8, 12, 1, 2, 2, INT32_MIN, 4});
    expect_error([&] { load_llama2c(file, store); }, {"header field vocab_size is -2147483648"});
    file = header_only({8, 12, 1, 2, 2, 10, 0});
    expect_error([&] { load_llama2c(file, store); }, {"header field seq_len is 0"});
    file = header_only({0x616b3432, 1, 0, 0, 0, 0, 0});
    expect_error([&] { load_llama2c(file, store); }, {file, "versioned llama2.c export"});
}

class Llama2cStories : public test::ScratchDir {};

TEST_F(Llama2cStories, Loads260KWithItsDocumentedConfig) {
    ANELM_REQUIRE_SHARED("models/stories260K/stories260K.bin");
    const std::string file = test::shared_path("models/stories260K/stories260K.bin").string();
    WeightStore store;
    const ModelSpec s = load_llama2c(file, store);
    EXPECT_EQ(s.arch, Arch::llama);
    EXPECT_EQ(s.n_embd, 64);
    EXPECT_EQ(s.n_ff, 172);
    EXPECT_EQ(s.n_layer, 5);
    EXPECT_EQ(s.n_head, 8);
    EXPECT_EQ(s.n_head_kv, 4);
    EXPECT_EQ(s.head_dim, 8);
    EXPECT_EQ(s.n_vocab, 512);
    EXPECT_EQ(s.n_ctx_train, 512);
    EXPECT_TRUE(s.tie_word_embeddings);
    EXPECT_EQ(s.rope_style, RopeStyle::interleaved);
    EXPECT_EQ(s.rope_theta, 10000.0);
    EXPECT_EQ(s.rms_norm_eps, 1e-5);
    EXPECT_EQ(s.bos_token_id, 1);
    EXPECT_EQ(s.eos_token_ids, (std::vector<int32_t>{1}));
    EXPECT_EQ(store.size(), 47u);
    EXPECT_EQ(
        store.total_bytes(),
        (512 * 64 + 5 * (64 + 64 * 64 + 2 * 32 * 64 + 64 * 64 + 64 + 3 * 172 * 64) + 64) * 4u);

    // Views point into the file: compare against bytes read independently.
    const std::string raw = test::read_file(file);
    const auto expect_at = [&](const char* name, size_t float_offset) {
        const TensorView& t = store.get(name);
        EXPECT_EQ(std::memcmp(t.data, raw.data() + 28 + float_offset * 4, t.n_bytes()), 0) << name;
    };
    expect_at("model.embed_tokens.weight", 0);
    expect_at("model.layers.0.input_layernorm.weight", 512 * 64);
    expect_at("model.layers.2.self_attn.q_proj.weight", 512 * 64 + 5 * 64 + 2 * 64 * 64);
    expect_at("model.norm.weight", 259968);
}

TEST_F(Llama2cStories, RejectsTruncatedCopy) {
    ANELM_REQUIRE_SHARED("models/stories260K/stories260K.bin");
    const std::string raw =
        test::read_file(test::shared_path("models/stories260K/stories260K.bin").string());
    ASSERT_EQ(raw.size(), 1056540u);
    const std::string copy = path("stories260K.bin");
    test::write_file(copy, raw.substr(0, 600000));
    WeightStore store;
    expect_error(
        [&] { load_llama2c(copy, store); },
        {copy + ": file is 600000 bytes, but its header (dim 64, hidden_dim 172, n_layers 5, "
                "n_heads 8, n_kv_heads 4, vocab_size 512, seq_len 512) needs 1056540"});
}

}  // namespace
}  // namespace anelm
