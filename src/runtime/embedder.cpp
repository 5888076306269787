#include "runtime/embedder.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"

namespace anelm {

void l2_normalize(std::span<float> v) {
    double sum = 0;
    for (float x : v) sum += static_cast<double>(x) * x;
    if (sum == 0) return;
    const auto scale = static_cast<float>(1 / std::sqrt(sum));
    for (float& x : v) x *= scale;
}

void pool_rows(std::span<const float> rows, Pooling pooling, std::span<float> out) {
    const size_t width = out.size();
    if (width == 0 || rows.empty() || rows.size() % width != 0)
        fail("pool_rows: {} values are not rows of {}", rows.size(), width);
    const size_t n = rows.size() / width;
    switch (pooling) {
        case Pooling::cls:
            std::copy_n(rows.begin(), width, out.begin());
            break;
        case Pooling::last:
            std::copy_n(rows.begin() + static_cast<std::ptrdiff_t>((n - 1) * width), width,
                        out.begin());
            break;
        case Pooling::mean:
            for (size_t c = 0; c < width; ++c) {
                double sum = 0;
                for (size_t r = 0; r < n; ++r) sum += rows[r * width + c];
                out[c] = static_cast<float>(sum / static_cast<double>(n));
            }
            break;
    }
    l2_normalize(out);
}

Embedder::Embedder(Session& session, Pooling pooling) : session_(session), pooling_(pooling) {
    if (!session.has_hidden()) fail("embeddings need a session built with its embed function");
    dims_ = session.program().function("embed").nodes.back().width;
}

std::vector<std::vector<float>> Embedder::embed(std::span<const std::vector<int32_t>> inputs) {
    for (size_t i = 0; i < inputs.size(); ++i) {
        const auto n = static_cast<int64_t>(inputs[i].size());
        if (n == 0) fail("embed: input {} has no tokens", i);
        if (n > session_.n_ctx())
            fail("embed: input {} has {} tokens, the context holds {}", i, n, session_.n_ctx());
    }
    std::vector<std::vector<float>> out(inputs.size());
    const int64_t max_tokens = session_.prefill_batch();
    const auto max_rows = static_cast<size_t>(std::max<int64_t>(session_.batch_rows(), 1));
    for (size_t i = 0; i < inputs.size();) {
        if (static_cast<int64_t>(inputs[i].size()) > max_tokens) {
            embed_long(inputs[i], out[i]);
            ++i;
            continue;
        }
        size_t end = i;
        int64_t tokens = 0;
        while (end < inputs.size() && end - i < max_rows &&
               tokens + static_cast<int64_t>(inputs[end].size()) <= max_tokens)
            tokens += static_cast<int64_t>(inputs[end++].size());
        embed_batch(inputs.subspan(i, end - i), std::span(out).subspan(i, end - i));
        i = end;
    }
    return out;
}

void Embedder::embed_batch(std::span<const std::vector<int32_t>> inputs,
                           std::span<std::vector<float>> out) {
    while (seqs_.size() < inputs.size()) seqs_.push_back(session_.new_sequence());
    std::vector<Sequence*> seqs;
    std::vector<int32_t> tokens;
    std::vector<int64_t> counts;
    for (size_t i = 0; i < inputs.size(); ++i) {
        seqs_[i].pos = 0;
        seqs.push_back(&seqs_[i]);
        tokens.insert(tokens.end(), inputs[i].begin(), inputs[i].end());
        counts.push_back(static_cast<int64_t>(inputs[i].size()));
    }
    const std::span<const float> rows = session_.hidden_rows(seqs, tokens, counts);
    size_t row = 0;
    for (size_t i = 0; i < inputs.size(); ++i) {
        const auto n = static_cast<size_t>(counts[i]);
        out[i].resize(static_cast<size_t>(dims_));
        pool_rows(rows.subspan(row * out[i].size(), n * out[i].size()), pooling_, out[i]);
        row += n;
    }
}

void Embedder::embed_long(const std::vector<int32_t>& tokens, std::vector<float>& out) {
    if (seqs_.empty()) seqs_.push_back(session_.new_sequence());
    Sequence* seq = &seqs_[0];
    seq->pos = 0;
    rows_.clear();
    const auto piece = static_cast<size_t>(session_.prefill_batch());
    for (size_t at = 0; at < tokens.size(); at += piece) {
        const std::span<const int32_t> chunk(tokens.data() + at,
                                             std::min(piece, tokens.size() - at));
        const int64_t count = static_cast<int64_t>(chunk.size());
        const std::span<const float> rows = session_.hidden_rows({&seq, 1}, chunk, {&count, 1});
        rows_.insert(rows_.end(), rows.begin(), rows.end());
    }
    out.resize(static_cast<size_t>(dims_));
    pool_rows(rows_, pooling_, out);
}

}  // namespace anelm
