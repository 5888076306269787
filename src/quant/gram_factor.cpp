#include "quant/gram_factor.h"

#include <algorithm>
#include <cmath>

#include "base/error.h"
#include "kernels/kernels.h"

namespace anelm::quant {

namespace {

// Columns per block: the blocks' own work is scalar, what lies between them
// a matrix product.
constexpr int64_t block = 64;

// sum a[p] b[p] for p < n, in eight independent sums the compiler vectorizes.
double dot(const float* a, const float* b, int64_t n) {
    float sum[8] = {};
    int64_t p = 0;
    for (; p + 8 <= n; p += 8)
        for (int l = 0; l < 8; ++l) sum[l] += a[p + l] * b[p + l];
    double total = 0;
    for (; p < n; ++p) total += static_cast<double>(a[p]) * b[p];
    for (float s : sum) total += s;
    return total;
}

}  // namespace

bool cholesky_lower(std::vector<float>& a, int64_t n, ThreadPool& pool) {
    const auto at = [&](int64_t i, int64_t j) -> float& { return a[static_cast<size_t>(i * n + j)]; };
    std::vector<float> panel, product;
    for (int64_t k0 = 0; k0 < n; k0 += block) {
        const int64_t k1 = std::min(n, k0 + block), width = k1 - k0;
        // The diagonal block, every earlier block's update already subtracted.
        for (int64_t j = k0; j < k1; ++j) {
            const double d = at(j, j) - dot(&at(j, k0), &at(j, k0), j - k0);
            if (!(d > 0)) return false;
            at(j, j) = static_cast<float>(std::sqrt(d));
            for (int64_t i = j + 1; i < k1; ++i)
                at(i, j) = static_cast<float>((at(i, j) - dot(&at(i, k0), &at(j, k0), j - k0)) / at(j, j));
        }
        const int64_t m = n - k1;
        if (m == 0) break;
        // The rows below: solve against the diagonal block's transpose.
        pool.run(m, [&](int64_t r, int) {
            const int64_t i = k1 + r;
            for (int64_t j = k0; j < k1; ++j)
                at(i, j) = static_cast<float>((at(i, j) - dot(&at(i, k0), &at(j, k0), j - k0)) / at(j, j));
        });
        // The trailing matrix loses the panel's outer product.
        panel.resize(static_cast<size_t>(m * width));
        for (int64_t r = 0; r < m; ++r)
            std::copy_n(&at(k1 + r, k0), width, panel.begin() + r * width);
        product.resize(static_cast<size_t>(m * m));
        kernels::matmul_cached({DType::f32, panel.data(), m, width}, panel.data(), m,
                               product.data(), pool);
        for (int64_t r = 0; r < m; ++r)
            for (int64_t c = 0; c <= r; ++c) at(k1 + r, k1 + c) -= product[r * m + c];
    }
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = i + 1; j < n; ++j) at(i, j) = 0;
    return true;
}

std::vector<float> lower_inverse(const std::vector<float>& l, int64_t n, ThreadPool& pool) {
    // Block row by block row: X[rows, :r0] = -L_bb⁻¹ (L[rows, :r0] X[:r0, :r0]),
    // X[rows, rows] = L_bb⁻¹. xt holds X transposed, so that the rows of X
    // done so far are the first r0 rows of a matrix with n columns (the
    // rest zero) for the product.
    std::vector<float> xt(static_cast<size_t>(n * n), 0.0f), lrows, s;
    const auto L = [&](int64_t i, int64_t j) { return l[static_cast<size_t>(i * n + j)]; };
    const auto X = [&](int64_t i, int64_t j) -> float& { return xt[static_cast<size_t>(j * n + i)]; };
    for (int64_t r0 = 0; r0 < n; r0 += block) {
        const int64_t r1 = std::min(n, r0 + block), rows = r1 - r0;
        s.assign(static_cast<size_t>(rows * std::max<int64_t>(r0, 1)), 0.0f);
        if (r0 > 0) {
            lrows.assign(static_cast<size_t>(rows * n), 0.0f);
            for (int64_t r = 0; r < rows; ++r)
                std::copy_n(&l[static_cast<size_t>((r0 + r) * n)], r0, lrows.begin() + r * n);
            kernels::matmul_cached({DType::f32, xt.data(), r0, n}, lrows.data(), rows, s.data(),
                                   pool);
        }
        // Forward substitution inside the block, for each column c < r1.
        pool.run(r1, [&](int64_t c, int) {
            const int64_t p0 = std::max(r0, c);
            for (int64_t i = p0; i < r1; ++i) {
                const double v = c < r0 ? -static_cast<double>(s[(i - r0) * r0 + c]) : (i == c ? 1.0 : 0.0);
                X(i, c) = static_cast<float>((v - dot(&l[static_cast<size_t>(i * n + p0)], &X(p0, c), i - p0)) / L(i, i));
            }
        });
    }
    std::vector<float> x(xt.size());
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) x[static_cast<size_t>(i * n + j)] = X(i, j);
    return x;
}

double mean_diagonal(const std::vector<float>& gram, int64_t n) {
    double mean = 0;
    for (int64_t i = 0; i < n; ++i) mean += gram[static_cast<size_t>(i * n + i)];
    mean = n > 0 ? mean / static_cast<double>(n) : 0.0;
    return mean > 0 ? mean : 1.0;
}

std::vector<float> inverse_gram_factor(const std::vector<float>& gram, int64_t n, ThreadPool& pool,
                                       double damping_share) {
    const double mean = mean_diagonal(gram, n);
    const auto damping = static_cast<float>(damping_share * mean);
    // With the order of the inputs reversed, H' = P H P = L Lᵀ gives
    // H = (P L P)(P L P)ᵀ with P L P upper triangular, so
    // H⁻¹ = UᵀU for U = (P L P)⁻¹ = P L⁻¹ P.
    std::vector<float> a(static_cast<size_t>(n * n));
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
            float v = gram[static_cast<size_t>((n - 1 - i) * n + (n - 1 - j))];
            if (i == j) v = (v > 0 ? v : static_cast<float>(mean)) + damping;
            a[static_cast<size_t>(i * n + j)] = v;
        }
    if (!cholesky_lower(a, n, pool))
        fail("calibration: the inputs' second moments are not positive definite");
    const std::vector<float> inv = lower_inverse(a, n, pool);
    std::vector<float> u(inv.size());
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j)
            u[static_cast<size_t>(i * n + j)] = inv[static_cast<size_t>((n - 1 - i) * n + (n - 1 - j))];
    return u;
}

}  // namespace anelm::quant
