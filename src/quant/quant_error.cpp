#include "quant/quant_error.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "kernels/kernels.h"
#include "quant/weight_rows.h"

namespace anelm::quant {

double QuantError::rel_rmse() const {
    return sum_ww > 0 ? std::sqrt(sum_dd / sum_ww) : std::sqrt(sum_dd);
}

double QuantError::cosine() const {
    if (sum_ww > 0 && sum_qq > 0) return sum_wq / std::sqrt(sum_ww * sum_qq);
    return sum_ww == sum_qq ? 1.0 : 0.0;  // both zero: identical
}

QuantError& QuantError::operator+=(const QuantError& other) {
    sum_ww += other.sum_ww;
    sum_qq += other.sum_qq;
    sum_wq += other.sum_wq;
    sum_dd += other.sum_dd;
    max_abs = std::max(max_abs, other.max_abs);
    return *this;
}

namespace {

// Sums over W against the rows `other` writes for each row of W.
template <class OtherRow>
QuantError compare_rows(const TensorView& w, const MatrixShape& shape, ThreadPool& pool,
                        OtherRow other) {
    constexpr int64_t rows_per_task = 64;
    const int64_t n_tasks = (shape.n_out + rows_per_task - 1) / rows_per_task;
    std::vector<QuantError> parts(static_cast<size_t>(n_tasks));
    pool.run(n_tasks, [&](int64_t task, int) {
        std::vector<float> wr(static_cast<size_t>(shape.n_in)), qr(wr.size());
        QuantError& e = parts[static_cast<size_t>(task)];
        const int64_t o_end = std::min(shape.n_out, (task + 1) * rows_per_task);
        for (int64_t o = task * rows_per_task; o < o_end; ++o) {
            read_row(w, shape, o, wr.data());
            other(o, wr.data(), qr.data());
            for (size_t i = 0; i < wr.size(); ++i) {
                const double a = wr[i], b = qr[i];
                e.sum_ww += a * a;
                e.sum_qq += b * b;
                e.sum_wq += a * b;
                e.sum_dd += (a - b) * (a - b);
                e.max_abs = std::max(e.max_abs, std::fabs(a - b));
            }
        }
    });
    QuantError total;
    for (const QuantError& e : parts) total += e;
    return total;
}

}  // namespace

QuantError quant_error(const TensorView& w, const QuantizedMatrix& q, ThreadPool& pool) {
    const MatrixShape shape = matrix_shape(w);
    if (shape.n_out != q.n_out || shape.n_in != q.n_in)
        fail("quant_error: weight [{}, {}] against quantized [{}, {}]", shape.n_out, shape.n_in,
             q.n_out, q.n_in);
    return compare_rows(w, shape, pool,
                        [&](int64_t o, const float*, float* qr) { q.decode_row(o, qr); });
}

QuantError half_rounding_error(const TensorView& w, ThreadPool& pool) {
    const MatrixShape shape = matrix_shape(w);
    return compare_rows(w, shape, pool, [&](int64_t, const float* wr, float* qr) {
        for (int64_t i = 0; i < shape.n_in; ++i) qr[i] = round_to_f16(wr[i]);
    });
}

QuantError stand_in_error(const TensorView& w, ThreadPool& pool,
                          const std::function<void(int64_t o, float* out)>& row) {
    return compare_rows(w, matrix_shape(w), pool,
                        [&](int64_t o, const float*, float* out) { row(o, out); });
}

}  // namespace anelm::quant

namespace anelm::quant {

double output_error(const TensorView& w, const QuantizedMatrix& q, const InputStats& stats,
                    ThreadPool& pool, GramTerms terms) {
    const MatrixShape shape = matrix_shape(w);
    const int64_t n_in = shape.n_in;
    if (stats.n_in != n_in)
        fail("output error: statistics of {} inputs for a weight of {}", stats.n_in, n_in);
    // Rows in slices, so a tall matrix (an LM head) needs no copy of itself.
    constexpr int64_t slice = 2048;
    std::vector<float> d, dh, decoded(static_cast<size_t>(n_in));
    double total = 0;
    for (int64_t o0 = 0; o0 < shape.n_out; o0 += slice) {
        const int64_t rows = std::min(slice, shape.n_out - o0);
        d.resize(static_cast<size_t>(rows * n_in));
        for (int64_t r = 0; r < rows; ++r) {
            float* row = d.data() + r * n_in;
            read_row(w, shape, o0 + r, row);
            q.decode_row(o0 + r, decoded.data());
            for (int64_t i = 0; i < n_in; ++i) row[i] -= decoded[static_cast<size_t>(i)];
        }
        if (stats.has_gram() && terms == GramTerms::full) {
            dh.resize(d.size());
            kernels::matmul_cached({DType::f32, stats.gram.data(), n_in, n_in}, d.data(), rows,
                                   dh.data(), pool);
            for (size_t k = 0; k < d.size(); ++k) total += static_cast<double>(d[k]) * dh[k];
        } else {
            for (int64_t r = 0; r < rows; ++r)
                for (int64_t i = 0; i < n_in; ++i) {
                    const double v = d[static_cast<size_t>(r * n_in + i)];
                    total += v * v * stats.diag[static_cast<size_t>(i)];
                }
        }
    }
    return total;
}

}  // namespace anelm::quant
