#include "quant/output_target.h"

#include <utility>

#include "base/error.h"
#include "kernels/kernels.h"
#include "quant/gram_factor.h"

namespace anelm::quant {

namespace {

// a [rows, cols] -> [cols, rows].
std::vector<float> transposed(const float* a, int64_t rows, int64_t cols) {
    std::vector<float> t(static_cast<size_t>(rows * cols));
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) t[static_cast<size_t>(c * rows + r)] = a[r * cols + c];
    return t;
}

// y = x wᵀ for square f32 matrices of side n.
std::vector<float> times_transposed(const std::vector<float>& x, const std::vector<float>& w,
                                    int64_t n, ThreadPool& pool) {
    std::vector<float> y(static_cast<size_t>(n * n));
    kernels::matmul_cached({DType::f32, w.data(), n, n}, x.data(), n, y.data(), pool);
    return y;
}

}  // namespace

CrossStats::CrossStats(int64_t n) : n_in(n), cross(static_cast<size_t>(n * n), 0.0f) {}

void CrossStats::add(const float* x, const float* xq, int64_t n_rows, ThreadPool& pool) {
    if (n_rows <= 0) return;
    // C = Xᵀ X̃ as matmul's y = x wᵀ with x = Xᵀ, w = X̃ᵀ.
    const std::vector<float> xt = transposed(x, n_rows, n_in);
    const std::vector<float> xqt = transposed(xq, n_rows, n_in);
    std::vector<float> product(cross.size());
    kernels::matmul_cached({DType::f32, xqt.data(), n_in, n_rows}, xt.data(), n_in, product.data(),
                           pool);
    for (size_t k = 0; k < cross.size(); ++k) cross[k] += product[k];
}

std::vector<float> target_map(const CrossStats& cross, const InputStats& quantized,
                              ThreadPool& pool) {
    const int64_t n = cross.n_in;
    if (!quantized.has_gram() || quantized.n_in != n)
        fail("calibration: output target needs the full Gram matrix of {} inputs", n);
    // (X̃ᵀX̃ + λI)⁻¹ = UᵀU, so Pᵀ = UᵀU (C + λI)ᵀ = Uᵀ R with R = U (C + λI)ᵀ.
    const std::vector<float> u = inverse_gram_factor(quantized.gram, n, pool, target_damping);
    // The same diagonal as the factor's: λ, and the mean for an input never
    // seen active (which the factor counts as independent of the rest).
    std::vector<float> c = cross.cross;
    const double mean = mean_diagonal(quantized.gram, n);
    for (int64_t i = 0; i < n; ++i) {
        const auto k = static_cast<size_t>(i * n + i);
        c[k] += static_cast<float>(target_damping * mean + (quantized.gram[k] > 0 ? 0.0 : mean));
    }
    const std::vector<float> r = times_transposed(u, c, n, pool);
    return times_transposed(transposed(u.data(), n, n), transposed(r.data(), n, n), n, pool);
}

void retarget(std::vector<float>& w, int64_t n_out, const std::vector<float>& map_t,
              ThreadPool& pool) {
    const auto n_in = static_cast<int64_t>(w.size()) / n_out;
    if (map_t.size() != static_cast<size_t>(n_in * n_in))
        fail("calibration: an output target of {} values for rows of {}", map_t.size(), n_in);
    std::vector<float> out(w.size());
    kernels::matmul({DType::f32, map_t.data(), n_in, n_in}, w.data(), n_out, out.data(), pool);
    w = std::move(out);
}

}  // namespace anelm::quant
