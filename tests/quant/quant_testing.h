// Random quantized matrices and weights for the quant tests.
#pragma once

#include <cmath>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "base/bit_packing.h"
#include "base/half.h"
#include "base/tensor.h"
#include "quant/quantized_matrix.h"

namespace anelm::test {

// A quantized format: LUT of nbits with `group` rows per table, or int8 / int4.
struct QuantFormat {
    kernels::QuantKind kind;
    int nbits;
    int64_t group;
};

// "avx2 lut4 [8, 64] tokens 3": what a failing comparison names.
inline std::string describe(const quant::QuantizedMatrix& q, int64_t n_tokens,
                            const char* isa = "") {
    const char* kind = q.kind == kernels::QuantKind::lut ? "lut" : "int";
    return std::string(isa) + " " + kind + std::to_string(q.nbits) + " [" +
           std::to_string(q.n_out) + ", " + std::to_string(q.n_in) + "] tokens " +
           std::to_string(n_tokens);
}

// A quantized matrix with uniformly random codes and random f16 tables or
// scales: every code pattern, whatever a quantizer would produce.
inline quant::QuantizedMatrix random_quantized(std::mt19937& rng, kernels::QuantKind kind,
                                               int nbits, int64_t n_out, int64_t n_in,
                                               int64_t group) {
    quant::QuantizedMatrix q;
    q.kind = kind;
    q.nbits = nbits;
    q.n_out = n_out;
    q.n_in = n_in;
    q.group_size = group;
    q.codes.assign(static_cast<size_t>(n_out * q.row_bytes()), 0);
    std::uniform_int_distribution<int> code(0, (1 << nbits) - 1);
    std::vector<uint8_t> row(static_cast<size_t>(n_in));
    for (int64_t o = 0; o < n_out; ++o) {
        for (auto& c : row) c = static_cast<uint8_t>(code(rng));
        pack_codes(row.data(), n_in, nbits, q.codes.data() + o * q.row_bytes());
    }
    std::normal_distribution<float> value(0.0f, 0.05f);
    if (kind == kernels::QuantKind::lut) {
        q.lut.resize(static_cast<size_t>(q.n_tables() << nbits));
        for (auto& e : q.lut) e = f32_to_f16(value(rng));
    } else {
        q.scales.resize(static_cast<size_t>(n_out));
        for (auto& s : q.scales) s = f32_to_f16(std::fabs(value(rng)) / 64 + 1e-4f);
    }
    return q;
}

// An owned f32 weight [n_out, n_in] and its view.
struct OwnedWeight {
    std::vector<float> values;
    TensorView view;
};

inline OwnedWeight make_weight(std::vector<float> values, int64_t n_out, int64_t n_in) {
    OwnedWeight w{std::move(values), {}};
    w.view.dtype = DType::f32;
    w.view.shape = {n_out, n_in};
    w.view.data = reinterpret_cast<const std::byte*>(w.values.data());
    return w;
}

inline OwnedWeight gaussian_weight(std::mt19937& rng, int64_t n_out, int64_t n_in) {
    std::normal_distribution<float> d(0.0f, 0.02f);
    std::vector<float> v(static_cast<size_t>(n_out * n_in));
    for (auto& x : v) x = d(rng);
    return make_weight(std::move(v), n_out, n_in);
}

// Heavy tails as in real weights: Student's t with 3 degrees of freedom.
inline OwnedWeight student_t_weight(std::mt19937& rng, int64_t n_out, int64_t n_in) {
    std::student_t_distribution<float> d(3.0f);
    std::vector<float> v(static_cast<size_t>(n_out * n_in));
    for (auto& x : v) x = 0.02f * d(rng);
    return make_weight(std::move(v), n_out, n_in);
}

}  // namespace anelm::test
