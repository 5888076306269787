// A tiny synthetic model written once per test program into a temp folder,
// and what the tests that run it share: random token ids, a relative error,
// weights with some tensors replaced.
#pragma once

#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "base/error.h"

#include "models/model_loader.h"
#include "quant/quant_spec.h"
#include "runtime/session.h"
#include "synth/synth.h"
#include "test_support.h"

namespace anelm::test {

// n_vocab: the preset's vocabulary when 0, else this many ids.
inline const LoadedModel& tiny_model(const std::string& preset, int64_t n_vocab = 0) {
    static std::map<std::pair<std::string, int64_t>, LoadedModel> models;
    auto it = models.find({preset, n_vocab});
    if (it == models.end()) {
        SynthPreset p = synth_preset(preset);
        if (n_vocab > 0) p.spec.n_vocab = n_vocab;
        const auto dir = temp_dir("exec") / (preset + "-" + std::to_string(p.spec.n_vocab));
        SynthOptions options;
        options.dtype = DType::f32;
        options.seed = 7;
        synth_write(p, dir.string(), options);
        it = models.emplace(std::pair(preset, n_vocab), load_model(dir.string())).first;
    }
    return it->second;
}

// A session on a tiny model: 2 threads, 64 positions, prompts in batches of
// 32, logits for every prompt row, the weights quantized by `quant` at load.
inline SessionOptions tiny_session_options(const std::string& quant) {
    SessionOptions so;
    so.n_ctx = 64;
    so.threads = 2;
    so.prefill_batch = 32;
    so.all_logits = true;
    so.quant = quant::parse_quant_spec(quant);
    return so;
}

inline std::vector<int32_t> random_tokens(int64_t n_vocab, size_t n, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_int_distribution<int32_t> pick(0, static_cast<int32_t>(n_vocab - 1));
    std::vector<int32_t> ids(n);
    for (int32_t& id : ids) id = pick(rng);
    return ids;
}

// ||a - b|| / ||b||
inline double relative_error(std::span<const float> a, std::span<const float> b) {
    double num = 0, den = 0;
    for (size_t i = 0; i < a.size(); ++i) {
        num += (a[i] - b[i]) * static_cast<double>(a[i] - b[i]);
        den += b[i] * static_cast<double>(b[i]);
    }
    return std::sqrt(num / den);
}

// A model's weights with some tensors replaced by owned f32 values (the base
// store must outlive it).
class PatchedWeights {
public:
    PatchedWeights(const WeightStore& base, std::map<std::string, std::vector<float>> patches) {
        for (const std::string& name : base.names()) {
            TensorView view = *base.find(name);
            if (auto it = patches.find(name); it != patches.end()) {
                auto owned = std::make_shared<std::vector<float>>(std::move(it->second));
                if (static_cast<size_t>(view.numel()) != owned->size())
                    fail("{}: a patch needs {} values", name, view.numel());
                view = TensorView{DType::f32, view.shape,
                                  reinterpret_cast<const std::byte*>(owned->data())};
                store_.keep_alive(std::move(owned));
            }
            store_.add(name, view, "patched");
        }
    }
    const WeightStore& store() const { return store_; }

private:
    WeightStore store_;
};

// A session of 64 positions on two threads that returns every position's
// logits, prefilling `batch` tokens per call.
inline SessionOptions all_logits(int64_t batch, Precision precision = Precision::f32) {
    SessionOptions so;
    so.n_ctx = 64;
    so.threads = 2;
    so.prefill_batch = batch;
    so.all_logits = true;
    so.precision = precision;
    return so;
}

// The largest relative error of every position's logits when `tokens` are
// prefilled in calls of 3 tokens and of 1 against one call: whatever a
// session carries from call to call must give the same result.
inline double split_call_error(const LoadedModel& m, std::span<const int32_t> tokens) {
    Session whole(m.spec, m.weights, all_logits(32));
    const auto a = whole.prefill(tokens);
    const std::vector<float> want(a.begin(), a.end());
    double worst = 0;
    for (size_t piece : {size_t{3}, size_t{1}}) {
        Session split(m.spec, m.weights, all_logits(static_cast<int64_t>(piece)));
        std::vector<float> got;
        for (size_t t = 0; t < tokens.size(); t += piece) {
            const auto l = split.prefill(tokens.subspan(t, std::min(piece, tokens.size() - t)));
            got.insert(got.end(), l.begin(), l.end());
        }
        if (got.size() != want.size())
            fail("split calls gave {} logits, not {}", got.size(), want.size());
        worst = std::max(worst, relative_error(got, want));
    }
    return worst;
}

// A reference script's output (tests/data/*/README.md): the tokens and every
// position's logits [tokens, vocab].
struct ReferenceLogits {
    std::vector<int32_t> tokens;
    std::vector<float> logits;
};

inline ReferenceLogits read_reference_logits(const std::string& rel) {
    const std::string path = std::string(ANELM_SOURCE_DIR) + "/tests/data/" + rel;
    std::ifstream in(path);
    if (!in) throw std::runtime_error(path + ": missing");
    const auto j = nlohmann::json::parse(in);
    ReferenceLogits r;
    r.tokens = j["tokens"].get<std::vector<int32_t>>();
    for (const auto& row : j["logits"])
        for (double v : row) r.logits.push_back(static_cast<float>(v));
    return r;
}

// The values of an f32 tensor, to patch.
inline std::vector<float> tensor_values(const WeightStore& weights, const std::string& name) {
    const TensorView& view = weights.get(name);
    if (view.dtype != DType::f32) fail("{}: expected f32", name);
    const auto* data = reinterpret_cast<const float*>(view.data);
    return {data, data + view.numel()};
}

}  // namespace anelm::test
