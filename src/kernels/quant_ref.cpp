// The scalar reference of the quantized-matrix kernels: the simplest correct loops.
#include <algorithm>
#include <vector>

#include "base/half.h"
#include "kernels/quant_kernels.h"

namespace anelm::kernels::ref {

namespace {

// The code of element i of a packed row (LSB-first, may straddle two bytes).
uint32_t code_at(const uint8_t* row, int64_t row_bytes, int64_t i, int nbits) {
    const int64_t bit = i * nbits, byte = bit / 8;
    uint32_t v = row[byte];
    if (byte + 1 < row_bytes) v |= static_cast<uint32_t>(row[byte + 1]) << 8;
    return (v >> (bit % 8)) & ((1u << nbits) - 1);
}

// The code as the value the row is summed on: the table entry for lut, the
// signed integer for int8 and int4 (their scale is applied per row).
float code_value(const QuantMatrix& w, int64_t o, uint32_t code) {
    switch (w.kind) {
        case QuantKind::lut:
            return f16_to_f32(w.lut[(o / w.group << w.nbits) + code]);
        case QuantKind::int8:
            return static_cast<float>(static_cast<int8_t>(code));
        case QuantKind::int4:
            return static_cast<float>(static_cast<int>(code ^ 8u) - 8);
        case QuantKind::blocks:  // refused by check_quant_matrix
            break;
    }
    return 0.0f;
}

float row_scale(const QuantMatrix& w, int64_t o) {
    return w.kind == QuantKind::lut ? 1.0f : f16_to_f32(w.scales[o]);
}

void code_values(const QuantMatrix& w, int64_t o, int64_t k0, int64_t n, float* out) {
    const uint8_t* row = w.codes + o * w.row_bytes();
    for (int64_t j = 0; j < n; ++j) {
        out[j] = code_value(w, o, code_at(row, w.row_bytes(), k0 + j, w.nbits));
    }
}

// The integer the row is summed on in integer dot products, and its scale.
int32_t code_int8(const QuantMatrix& w, int64_t o, uint32_t code) {
    if (w.kind == QuantKind::lut) return w.dot_lut[(o / w.group << w.nbits) + code];
    return static_cast<int32_t>(code_value(w, o, code));
}

float row_scale_int8(const QuantMatrix& w, int64_t o) {
    return w.kind == QuantKind::lut ? w.dot_scale[o / w.group] : row_scale(w, o);
}

void quant_matmul_int8(const QuantMatrix& w, const float* x, int64_t n_tokens, float* y,
                       ThreadPool& pool) {
    const int64_t n_blocks = w.n_in / int8_block;
    std::vector<int8_t> q(static_cast<size_t>(n_tokens * w.n_in));
    std::vector<float> d(static_cast<size_t>(n_tokens * n_blocks));
    for (int64_t b = 0; b < n_tokens * n_blocks; ++b) {
        d[b] = round_to_int8(x + b * int8_block, int8_block, q.data() + b * int8_block);
    }
    constexpr int64_t rows_per_task = 16;
    pool.run((w.n_out + rows_per_task - 1) / rows_per_task, [&](int64_t task, int) {
        std::vector<int32_t> row(static_cast<size_t>(w.n_in));
        const int64_t o_end = std::min(w.n_out, (task + 1) * rows_per_task);
        for (int64_t o = task * rows_per_task; o < o_end; ++o) {
            const uint8_t* codes = w.codes + o * w.row_bytes();
            for (int64_t i = 0; i < w.n_in; ++i) {
                row[i] = code_int8(w, o, code_at(codes, w.row_bytes(), i, w.nbits));
            }
            for (int64_t t = 0; t < n_tokens; ++t) {
                float sum = 0.0f;
                for (int64_t b = 0; b < n_blocks; ++b) {
                    int32_t dot = 0;
                    for (int64_t i = b * int8_block; i < (b + 1) * int8_block; ++i) {
                        dot += row[i] * q[t * w.n_in + i];
                    }
                    sum += d[t * n_blocks + b] * static_cast<float>(dot);
                }
                y[t * w.n_out + o] = sum * row_scale_int8(w, o);
            }
        }
    });
}

}  // namespace

void quant_decode_row(const QuantMatrix& w, int64_t o, int64_t k0, int64_t n, float* out) {
    code_values(w, o, k0, n, out);
    const float scale = row_scale(w, o);
    if (w.kind != QuantKind::lut) {
        for (int64_t j = 0; j < n; ++j) out[j] *= scale;
    }
}

void quant_matmul(const QuantMatrix& w, const float* x, int64_t n_tokens, float* y,
                  ThreadPool& pool) {
    check_quant_matrix(w);
    if (int8_dot_applies(w)) return quant_matmul_int8(w, x, n_tokens, y, pool);
    constexpr int64_t rows_per_task = 16;
    pool.run((w.n_out + rows_per_task - 1) / rows_per_task, [&](int64_t task, int) {
        std::vector<float> row(static_cast<size_t>(w.n_in));
        const int64_t o_end = std::min(w.n_out, (task + 1) * rows_per_task);
        for (int64_t o = task * rows_per_task; o < o_end; ++o) {
            code_values(w, o, 0, w.n_in, row.data());
            const float scale = row_scale(w, o);
            for (int64_t t = 0; t < n_tokens; ++t) {
                float sum = 0.0f;
                for (int64_t i = 0; i < w.n_in; ++i) sum += x[t * w.n_in + i] * row[i];
                y[t * w.n_out + o] = sum * scale;
            }
        }
    });
}

}  // namespace anelm::kernels::ref
