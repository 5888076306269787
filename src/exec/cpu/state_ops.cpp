// The executor's ops over states that are not a KV cache: the causal
// convolution's position-addressed history of inputs and the gated delta
// rule's ring of recurrent states (docs/hybrid.md).
#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "base/half.h"
#include "exec/cpu/executor.h"
#include "kernels/kernels.h"

namespace anelm {

namespace {

// The delta rule's state as a half-precision device keeps it between tokens:
// boosted into half's normal range, rounded, subnormals flushed.
void as_device_stores(std::vector<float>& s) {
    for (float& v : s) v *= ir::delta_state_boost;
    kernels::round_to_f16_row(s.data(), std::ssize(s));
    flush_f16_subnormals(s.data(), std::ssize(s));
    for (float& v : s) v /= ir::delta_state_boost;
}

}  // namespace

// Each segment writes its rows into its own history and convolves over it,
// so prefill, decode and any split of a sequence read the same rounded inputs.
void Executor::run_causal_conv(const ir::Node& node, const float* x, float* out) {
    const auto& a = node.attrs;
    const auto& decl = program_.states[a.state];
    const int64_t n_ctx = decl.shape[2], width = node.width;
    const std::vector<float>& w = weight_f32(node.weight);
    const int64_t taps = static_cast<int64_t>(w.size()) / width;
    const std::vector<float>* bias = node.bias != ir::no_weight ? &weight_f32(node.bias) : nullptr;
    std::vector<float> row(static_cast<size_t>(width));
    int64_t row0 = 0;
    for (const ExecSegment& seg : segments_) {
        uint16_t* history = seg.state->buffers[a.state].data() + a.layer * n_ctx * width;
        for (int64_t t = 0; t < seg.rows; ++t)
            kernels::f32_to_f16_row(x + (row0 + t) * width, width,
                                    history + (seg.pos0 + t) * width);
        for (int64_t t = 0; t < seg.rows; ++t) {
            float* y = out + (row0 + t) * width;
            for (int64_t c = 0; c < width; ++c) y[c] = bias ? (*bias)[c] : 0.0f;
            const int64_t p = seg.pos0 + t;
            for (int64_t j = std::max<int64_t>(0, taps - 1 - p); j < taps; ++j) {
                kernels::f16_to_f32_row(history + (p - taps + 1 + j) * width, width, row.data());
                for (int64_t c = 0; c < width; ++c) y[c] += w[c * taps + j] * row[c];
            }
        }
        row0 += seg.rows;
    }
}

bool Executor::can_start(const ExecState& state, int64_t pos0) const {
    for (size_t s = 0; s < program_.states.size(); ++s) {
        const ir::StateDecl& decl = program_.states[s];
        if (decl.dtype != DType::f32 || pos0 == 0) continue;
        const int64_t end = state.ends.at(s);
        if (pos0 > end || pos0 < end - decl.shape[2] + 1) return false;
    }
    return true;
}

void Executor::check_rings(std::span<const ExecSegment> segments) const {
    for (const ExecSegment& seg : segments)
        if (!can_start(*seg.state, seg.pos0))
            fail(
                "a sequence whose recurrent state holds positions up to {} cannot continue at "
                "position {}",
                seg.state->ends.empty() ? 0 : seg.state->ends[0], seg.pos0);
}

// The gated delta rule, token by token, per value head h (sharing key head
// h / (value heads / key heads)): with q and k L2-normalised and q scaled by
// 1/sqrt(dk), beta = sigmoid(b) and g = -exp(A_log) softplus(a + dt_bias),
//   S = exp(g) S;  S += k (beta (v - Sᵀk))ᵀ;  out = Sᵀq.
// Each segment starts from its ring's state after pos0 - 1 and leaves the
// state after each of its last `slots` positions in the ring.
void Executor::run_gated_delta(const ir::Node& node, const float* qkv, const float* b,
                               const float* a, float* out) {
    const auto& at = node.attrs;
    const ir::StateDecl& decl = program_.states[at.state];
    const int64_t slots = decl.shape[2], per = decl.shape[3];
    const int64_t nv = at.n_head, nk = at.n_head_kv, dk = at.head_dim, dv = at.value_dim;
    const int64_t in_width = 2 * nk * dk + nv * dv;
    const std::vector<float>& a_log = weight_f32(node.weight);
    const std::vector<float>& dt_bias = weight_f32(node.bias);
    const float q_scale = 1.0f / std::sqrt(static_cast<float>(dk));
    int64_t row0 = 0;
    for (const ExecSegment& seg : segments_) {
        float* ring =
            reinterpret_cast<float*>(seg.state->buffers[at.state].data()) + at.layer * slots * per;
        // Heads are independent: each runs through the segment's tokens.
        pool_.run(nv, [&](int64_t h, int) {
            const int64_t kh = at.heads_tiled ? h % nk : h / (nv / nk), head = h * dk * dv;
            std::vector<float> s(static_cast<size_t>(dk * dv), 0.0f), q(dk), k(dk), delta(dv);
            if (seg.pos0 > 0) {
                const float* from = ring + ((seg.pos0 - 1) % slots) * per + head;
                std::copy(from, from + dk * dv, s.begin());
            }
            auto l2_normalized = [&](const float* x, std::vector<float>& y, float scale) {
                float sum = 0;
                for (int64_t i = 0; i < dk; ++i) sum += x[i] * x[i];
                const float r = scale / std::sqrt(sum + 1e-6f);
                for (int64_t i = 0; i < dk; ++i) y[i] = x[i] * r;
            };
            for (int64_t t = 0; t < seg.rows; ++t) {
                const int64_t row = row0 + t;
                const float* x = qkv + row * in_width;
                l2_normalized(x + kh * dk, q, q_scale);
                l2_normalized(x + nk * dk + kh * dk, k, 1.0f);
                const float* v = x + 2 * nk * dk + h * dv;
                const float beta = 1.0f / (1.0f + std::exp(-b[row * nv + h]));
                const float z = a[row * nv + h] + dt_bias[h];
                const float softplus = z > 20.0f ? z : std::log1p(std::exp(z));
                const float decay = std::exp(-std::exp(a_log[h]) * softplus);
                kernels::delta_rule_step(s.data(), dk, dv, q.data(), k.data(), v, beta, decay,
                                         delta.data(), out + row * nv * dv + h * dv);
                if (precision_ == Precision::ane) as_device_stores(s);
                if (t >= seg.rows - slots)
                    std::copy(s.begin(), s.end(), ring + ((seg.pos0 + t) % slots) * per + head);
            }
        });
        row0 += seg.rows;
    }
}

}  // namespace anelm
