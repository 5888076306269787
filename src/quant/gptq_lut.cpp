#include "quant/gptq_lut.h"

#include <algorithm>
#include <cmath>
#include <numeric>

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

namespace {

// Solves a x = b for a symmetric positive definite a (k x k, row-major) in
// place by Cholesky; false when it is not.
bool solve_spd(std::vector<double>& a, std::vector<double>& b, int k) {
    for (int j = 0; j < k; ++j) {
        double d = a[j * k + j];
        for (int p = 0; p < j; ++p) d -= a[j * k + p] * a[j * k + p];
        if (!(d > 0)) return false;
        a[j * k + j] = std::sqrt(d);
        for (int i = j + 1; i < k; ++i) {
            double s = a[i * k + j];
            for (int p = 0; p < j; ++p) s -= a[i * k + p] * a[j * k + p];
            a[i * k + j] = s / a[j * k + j];
        }
    }
    for (int i = 0; i < k; ++i) {
        for (int p = 0; p < i; ++p) b[i] -= a[i * k + p] * b[p];
        b[i] /= a[i * k + i];
    }
    for (int i = k - 1; i >= 0; --i) {
        for (int p = i + 1; p < k; ++p) b[i] -= a[p * k + i] * b[p];
        b[i] /= a[i * k + i];
    }
    return true;
}

}  // namespace

void refit_tables(const std::vector<float>& w, int64_t n_out, int64_t n_in,
                  const std::vector<float>& gram, LutTables& tables, std::vector<uint8_t>& codes,
                  ThreadPool& pool) {
    const int k = tables.k;
    const int64_t n_tables = (n_out + tables.rows_per_table - 1) / tables.rows_per_table;
    // H w_o for every row: w Hᵀ = w H, H symmetric.
    std::vector<float> hw(static_cast<size_t>(n_out * n_in));
    kernels::matmul_cached({DType::f32, gram.data(), n_in, n_in}, w.data(), n_out, hw.data(), pool);
    pool.run(n_tables, [&](int64_t g, int) {
        const int64_t o0 = g * tables.rows_per_table;
        const int64_t o1 = std::min(n_out, o0 + tables.rows_per_table);
        std::vector<double> m(static_cast<size_t>(k * k), 0.0), v(static_cast<size_t>(k), 0.0);
        std::vector<double> h_by_code(static_cast<size_t>(n_in * k));
        std::vector<int64_t> used(static_cast<size_t>(k), 0);
        for (int64_t o = o0; o < o1; ++o) {
            const uint8_t* c = codes.data() + o * n_in;
            // (H A_o)[i, d]: the sum of H's columns j whose code is d.
            std::fill(h_by_code.begin(), h_by_code.end(), 0.0);
            for (int64_t i = 0; i < n_in; ++i) {
                const float* hi = gram.data() + i * n_in;
                double* out = h_by_code.data() + i * k;
                for (int64_t j = 0; j < n_in; ++j) out[c[j]] += hi[j];
            }
            for (int64_t i = 0; i < n_in; ++i) {
                ++used[c[i]];
                v[c[i]] += hw[static_cast<size_t>(o * n_in + i)];
                const double* hi = h_by_code.data() + i * k;
                for (int d = 0; d < k; ++d) m[c[i] * k + d] += hi[d];
            }
        }
        float* table = tables.entries.data() + g * k;
        // Unused entries stay: a unit equation holding them in place, and a
        // slight pull of every entry toward its old value keeps the system
        // solvable when codes share no inputs.
        double trace = 0;
        for (int c = 0; c < k; ++c) trace += m[c * k + c];
        const double ridge = 1e-9 * (trace > 0 ? trace / k : 1.0);
        for (int c = 0; c < k; ++c) {
            if (used[c] == 0) {
                for (int d = 0; d < k; ++d) m[c * k + d] = m[d * k + c] = 0;
                m[c * k + c] = 1;
                v[c] = table[c];
            } else {
                m[c * k + c] += ridge;
                v[c] += ridge * table[c];
            }
        }
        if (!solve_spd(m, v, k)) return;
        for (int c = 0; c < k; ++c)
            if (std::isfinite(v[c])) table[c] = static_cast<float>(v[c]);
        // Ascending again, codes renumbered.
        std::vector<int> order(static_cast<size_t>(k));
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return table[a] < table[b]; });
        std::vector<uint8_t> renumber(static_cast<size_t>(k));
        std::vector<float> sorted(static_cast<size_t>(k));
        for (int r = 0; r < k; ++r) {
            renumber[order[r]] = static_cast<uint8_t>(r);
            sorted[r] = table[order[r]];
        }
        std::copy(sorted.begin(), sorted.end(), table);
        for (int64_t o = o0; o < o1; ++o)
            for (int64_t i = 0; i < n_in; ++i) {
                uint8_t& c = codes[static_cast<size_t>(o * n_in + i)];
                c = renumber[c];
            }
    });
}

}  // namespace anelm::quant
