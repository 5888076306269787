// The one table of program operations. Adding an op means adding it here and to
// the tables in op.cpp; static_asserts there keep them the same length.
#pragma once

#include <cstdint>
#include <string_view>

namespace anelm::ir {

enum class Op : uint8_t {
    input,          // a function input: i32 [T] token ids or positions
    embed,          // (ids) gather rows of weight [n_vocab, n_embd] -> [T, n_embd]
    linear,         // (x) x · weightᵀ (+ bias) -> [T, n_out]
    rms_norm,       // (x) x / rms * (gain_offset + gain), per group of gain's width; without
                    // a gain x / rms per group of attrs.head_dim
    add,            // (a, b)
    mul,            // (a, b)
    silu_mul,       // (gate, up) silu(gate) * up
    gelu_tanh_mul,  // (gate, up) gelu_tanh(gate) * up
    scale,          // (x) x * attrs.scale
    softcap,        // (x) softcap * tanh(x / softcap)
    rope,           // (x, positions) rotary embedding of n_head heads
    attention,      // (q, k, v, positions) writes k, v into the KV state; causal attention,
                    // limited to the last attrs.window positions when set
    last_row,       // (x) the last token's row -> [1, C] (one per sequence of a batch)
    causal_conv,    // (x, positions) depthwise causal convolution along each sequence: writes x
                  // into the state's history at its positions; y[p] = Σ_j w[:, j] x[p - K + 1 + j]
                  // (+ bias), x before position 0 being zero
    silu,              // (x) x * sigmoid(x)
    sigmoid_mul,       // (gate, x) sigmoid(gate) * x
    gated_delta,       // (qkv, b, a, positions) the gated delta rule (Gated DeltaNet): per value
                       // head a [dk, dv] state decayed by exp(g) and corrected toward v at key k,
                       // read at query q; g and beta from a and b with weight A_log, bias dt_bias
    columns,           // (x) x[:, attrs.col0 : attrs.col0 + width]
    shared_attention,  // (q, positions) attention over the K/V another layer's attention op
                       // wrote at state slot attrs.layer; writes nothing
    count
};

constexpr int op_count = static_cast<int>(Op::count);

std::string_view op_name(Op op);
// Number of value inputs the op takes.
int op_arity(Op op);

}  // namespace anelm::ir
