#include "quant/gptq_lut.h"

#include <algorithm>
#include <cmath>

#include "kernels/kernels.h"

namespace anelm::quant {

namespace {

// Columns fed forward one at a time before the rest get their share as one
// matrix product (GPTQ's lazy batch).
constexpr int64_t column_block = 128;
// Rows processed together: bounds the product's scratch for tall matrices.
constexpr int64_t row_chunk = 4096;

}  // namespace

int nearest_entry(const float* table, int k, float v) {
    int lo = 0;
    for (int step = k / 2; step > 0; step /= 2) {
        // A table of k = 2^bits entries: step halves from k / 2.
        if (lo + step < k && v > (table[lo + step - 1] + table[lo + step]) / 2) lo += step;
    }
    // The binary steps reach every index below k when k is a power of two;
    // walk the rest for other sizes.
    while (lo + 1 < k && v > (table[lo] + table[lo + 1]) / 2) ++lo;
    return lo;
}

std::vector<uint8_t> gptq_codes(const std::vector<float>& w, int64_t n_out, int64_t n_in,
                                const LutTables& tables, const std::vector<float>& u,
                                ThreadPool& pool) {
    std::vector<uint8_t> codes(static_cast<size_t>(n_out * n_in));
    std::vector<float> rows, err, ut, product;
    for (int64_t o0 = 0; o0 < n_out; o0 += row_chunk) {
        const int64_t o1 = std::min(n_out, o0 + row_chunk), n_rows = o1 - o0;
        rows.assign(w.begin() + o0 * n_in, w.begin() + o1 * n_in);
        for (int64_t i0 = 0; i0 < n_in; i0 += column_block) {
            const int64_t i1 = std::min(n_in, i0 + column_block), width = i1 - i0;
            err.assign(static_cast<size_t>(n_rows * width), 0.0f);
            pool.run(n_rows, [&](int64_t r, int) {
                float* row = rows.data() + r * n_in;
                const float* table = tables.table_of_row(o0 + r);
                for (int64_t i = i0; i < i1; ++i) {
                    const int c = nearest_entry(table, tables.k, row[i]);
                    codes[static_cast<size_t>((o0 + r) * n_in + i)] = static_cast<uint8_t>(c);
                    const float* ui = u.data() + i * n_in;
                    const float e = (row[i] - table[c]) / ui[i];
                    err[static_cast<size_t>(r * width + (i - i0))] = e;
                    for (int64_t j = i + 1; j < i1; ++j) row[j] -= e * ui[j];
                }
            });
            const int64_t rest = n_in - i1;
            if (rest == 0) continue;
            // rows[:, i1:] -= err · U[i0:i1, i1:], as matmul's x wᵀ with w = that block of U transposed.
            ut.resize(static_cast<size_t>(rest * width));
            for (int64_t j = 0; j < rest; ++j)
                for (int64_t p = 0; p < width; ++p)
                    ut[static_cast<size_t>(j * width + p)] = u[static_cast<size_t>((i0 + p) * n_in + i1 + j)];
            product.resize(static_cast<size_t>(n_rows * rest));
            kernels::matmul_cached({DType::f32, ut.data(), rest, width}, err.data(), n_rows,
                                   product.data(), pool);
            pool.run(n_rows, [&](int64_t r, int) {
                float* row = rows.data() + r * n_in + i1;
                const float* p = product.data() + r * rest;
                for (int64_t j = 0; j < rest; ++j) row[j] -= p[j];
            });
        }
    }
    return codes;
}

}  // namespace anelm::quant
