#include "anemll/anemll_layout.h"

#include <fmt/format.h>

#include <algorithm>
#include <numeric>

#include "base/error.h"

namespace anelm::anemll {

namespace {

// The most chunks a two-digit "_chunk_XXofYY" name can count.
constexpr int max_chunks = 99;

void check_lut(std::string_view what, std::string_view field, const quant::QuantChoice& lut) {
    using quant::QuantMethod;
    if (lut.method == QuantMethod::none) return;
    if (lut.method != QuantMethod::lut)
        fail("{}: {}: {} has no ANEMLL name, expected none or a LUT", what, field, lut.name());
    const int b = lut.nbits;
    if (b != 1 && b != 2 && b != 3 && b != 4 && b != 6 && b != 8)
        fail("{}: {}: {} bits, expected 1, 2, 3, 4, 6 or 8", what, field, b);
    if (lut.group_size < 0) fail("{}: {}: group {} is negative", what, field, lut.group_size);
}

}  // namespace

std::string lut_suffix(const quant::QuantChoice& lut) {
    return lut.method == quant::QuantMethod::none ? "" : fmt::format("_lut{}", lut.nbits);
}

std::string ConvertLayout::embeddings_stem() const {
    return prefix + "_embeddings" + lut_suffix(lut_embed);
}

std::string ConvertLayout::per_layer_table_file() const {
    return fmt::format("{}_per_layer_embeddings_{}.bin", prefix,
                       per_layer_bits == 16 ? "f16" : "int8");
}

std::string ConvertLayout::lm_head_stem() const {
    return prefix + "_lm_head" + lut_suffix(lut_head);
}

std::string ConvertLayout::ffn_chunk_stem(int chunk) const {
    return fmt::format("{}_FFN_PF{}_chunk_{:02d}of{:02d}", prefix, lut_suffix(lut_ffn), chunk,
                       n_chunks);
}

std::string ConvertLayout::monolithic_stem() const {
    return prefix + "_monolithic_full" + lut_suffix(lut_ffn);
}

std::vector<std::string> ConvertLayout::package_stems() const {
    if (monolithic) return {monolithic_stem()};
    std::vector<std::string> stems{embeddings_stem()};
    for (int c = 1; c <= n_chunks; ++c) stems.push_back(ffn_chunk_stem(c));
    stems.push_back(lm_head_stem());
    return stems;
}

std::vector<std::string> ConvertLayout::function_names() const {
    std::vector<std::string> names{"infer", "prefill"};
    if (rotates()) names = {"infer", "infer_rotate", "prefill", "prefill_rotate"};
    if (verify_tokens > 0) names.emplace_back("verify");
    return names;
}

void ConvertLayout::check(std::string_view what) const {
    if (prefix.empty() || prefix.find('/') != std::string::npos)
        fail("{}: prefix: '{}' is not a file name prefix", what, prefix);
    if (architecture.empty()) fail("{}: architecture: empty", what);
    if (context_length < 1)
        fail("{}: context_length: {}, expected at least 1", what, context_length);
    if (batch_size < 1) fail("{}: batch_size: {}, expected at least 1", what, batch_size);
    if (n_chunks < 1 || n_chunks > max_chunks || (monolithic && n_chunks != 1))
        fail("{}: num_chunks: {}, expected 1 to {} (1 when monolithic)", what, n_chunks,
             max_chunks);
    check_lut(what, "lut_embeddings", lut_embed);
    check_lut(what, "lut_ffn", lut_ffn);
    check_lut(what, "lut_lmhead", lut_head);
    if (split_lm_head < 1) fail("{}: split_lm_head: {}, expected at least 1", what, split_lm_head);
    if (vocab_size < split_lm_head)
        fail("{}: vocab_size: {} is less than split_lm_head {}", what, vocab_size, split_lm_head);
    if (std::ssize(lm_head_chunk_sizes) != split_lm_head)
        fail("{}: lm_head_chunk_sizes: {} pieces, split_lm_head is {}", what,
             lm_head_chunk_sizes.size(), split_lm_head);
    if (std::ranges::any_of(lm_head_chunk_sizes, [](int64_t s) { return s < 1; }))
        fail("{}: lm_head_chunk_sizes: a piece is empty", what);
    const int64_t sum =
        std::accumulate(lm_head_chunk_sizes.begin(), lm_head_chunk_sizes.end(), int64_t{0});
    if (sum != vocab_size)
        fail("{}: lm_head_chunk_sizes: sum {}, vocab_size is {}", what, sum, vocab_size);
    if (!(fp16_scale > 0 && fp16_scale <= 1))
        fail("{}: fp16_scale: {}, expected a value in (0, 1]", what, fp16_scale);
    if (sliding_window < 0) fail("{}: sliding_window: {} is negative", what, sliding_window);
    if (single_cache && sliding_window == 0)
        fail("{}: single_cache: set without a sliding window", what);
    if (!valid_verify_tokens(verify_tokens, context_length))
        fail("{}: verify_tokens: {}, expected 0 (none) or 2 to the context of {}", what,
             verify_tokens, context_length);
}

std::string default_prefix(std::string_view model_type) {
    if (model_type == "qwen2") return "qwen25";
    // The hybrids carry states ANEMLL's runners do not pass: a name of their own.
    if (model_type == "qwen3_5") return "qwen35";
    if (model_type == "lfm2") return "lfm2";
    // Gemma 4's packages read per-layer inputs and shared K/V no ANEMLL runner passes.
    if (model_type == "gemma4") return "gemma4";
    if (model_type.starts_with("qwen")) return "qwen";
    if (model_type.starts_with("gemma3")) return "gemma3";
    return "llama";
}

int lm_head_split(std::string_view model_type) {
    return model_type.starts_with("qwen") || model_type.starts_with("gemma") ? 16 : 8;
}

std::vector<int64_t> lm_head_chunk_sizes(int64_t vocab, int n, int64_t align) {
    if (n < 1 || vocab < n) fail("LM head split: {} pieces of a vocabulary of {}", n, vocab);
    const int64_t rows = lm_head_piece_rows(vocab, n, align);
    const int64_t count = (vocab + rows - 1) / rows;
    std::vector<int64_t> sizes(static_cast<size_t>(count), rows);
    sizes.back() = vocab - (count - 1) * rows;
    return sizes;
}

int64_t lm_head_piece_rows(int64_t vocab, int n, int64_t align) {
    if (n < 1 || vocab < 1) fail("LM head split: {} pieces of a vocabulary of {}", n, vocab);
    if (align < 1) fail("LM head split: rows aligned to {}", align);
    const int64_t rows = (vocab + n - 1) / n;
    return (rows + align - 1) / align * align;
}

ConvertLayout default_layout(std::string_view model_type, int64_t vocab,
                             const quant::QuantChoice& lut_head) {
    ConvertLayout layout;
    layout.architecture = std::string(model_type);
    layout.prefix = default_prefix(model_type);
    layout.vocab_size = vocab;
    layout.lut_head = lut_head;
    // Each piece starts a whole LUT group of the head's rows.
    const bool grouped = lut_head.method == quant::QuantMethod::lut && lut_head.group_size > 0;
    layout.lm_head_chunk_sizes =
        lm_head_chunk_sizes(vocab, lm_head_split(model_type), grouped ? lut_head.group_size : 1);
    layout.split_lm_head = static_cast<int>(layout.lm_head_chunk_sizes.size());
    return layout;
}

std::vector<LayerRange> layer_ranges(int64_t n_layer, int n_chunks) {
    if (n_chunks < 1 || n_chunks > n_layer)
        fail("layer chunks: {} chunks of {} layers, expected 1 to {}", n_chunks, n_layer, n_layer);
    std::vector<LayerRange> ranges;
    int64_t begin = 0;
    for (int c = 0; c < n_chunks; ++c) {
        const int64_t n = n_layer / n_chunks + (c < n_layer % n_chunks ? 1 : 0);
        ranges.push_back({begin, begin + n});
        begin += n;
    }
    return ranges;
}

int auto_chunk_count(std::span<const uint64_t> layer_bytes, uint64_t first_chunk_extra_bytes,
                     uint64_t last_chunk_extra_bytes, uint64_t max_chunk_bytes) {
    const auto n_layer = std::ssize(layer_bytes);
    if (n_layer == 0) fail("--chunks auto: the model has no layers");
    const int most = static_cast<int>(std::min<int64_t>(n_layer, max_chunks));
    for (int n = 1; n <= most; ++n) {
        const std::vector<LayerRange> ranges = layer_ranges(n_layer, n);
        uint64_t largest = 0;
        for (int c = 0; c < n; ++c) {
            uint64_t bytes = 0;
            for (int64_t l = ranges[c].begin; l < ranges[c].end; ++l) bytes += layer_bytes[l];
            if (c == 0) bytes += first_chunk_extra_bytes;
            if (c == n - 1) bytes += last_chunk_extra_bytes;
            largest = std::max(largest, bytes);
        }
        if (largest <= max_chunk_bytes) return n;
    }
    fail(
        "--chunks auto: no chunk count up to {} keeps every chunk within {:.1f} MB "
        "(a layer is up to {:.1f} MB)",
        most, max_chunk_bytes / 1048576.0, *std::ranges::max_element(layer_bytes) / 1048576.0);
}

}  // namespace anelm::anemll
