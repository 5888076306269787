#include "quant/input_stats.h"

#include <cstring>
#include <string_view>

#include "base/error.h"
#include "kernels/kernels.h"
#include "quant/gram_factor.h"

namespace anelm::quant {

InputStats::InputStats(int64_t n) : n_in(n), diag(static_cast<size_t>(n), 0.0) {
    if (n <= max_gram_inputs) gram.assign(static_cast<size_t>(n * n), 0.0f);
}

void InputStats::add(const float* x, int64_t n_rows, ThreadPool& pool) {
    if (n_rows <= 0) return;
    rows += n_rows;
    for (int64_t t = 0; t < n_rows; ++t)
        for (int64_t i = 0; i < n_in; ++i) {
            const double v = x[t * n_in + i];
            diag[static_cast<size_t>(i)] += v * v;
        }
    if (!has_gram()) return;
    // XᵀX as a product of Xᵀ with itself: matmul's y = x wᵀ with x = w = Xᵀ.
    std::vector<float> xt(static_cast<size_t>(n_in * n_rows));
    for (int64_t t = 0; t < n_rows; ++t)
        for (int64_t i = 0; i < n_in; ++i) xt[i * n_rows + t] = x[t * n_in + i];
    std::vector<float> product(gram.size());
    const kernels::Matrix w{DType::f32, xt.data(), n_in, n_rows};
    kernels::matmul_cached(w, xt.data(), n_in, product.data(), pool);
    for (size_t k = 0; k < gram.size(); ++k) gram[k] += product[k];
}

const InputStats* ModelCalibration::find(const std::string& name) const {
    auto it = stats.find(name);
    constexpr std::string_view head_suffix = ":head";
    if (it == stats.end() && name.ends_with(head_suffix))
        it = stats.find(name.substr(0, name.size() - head_suffix.size()));
    return it == stats.end() ? nullptr : it->second.get();
}

std::shared_ptr<const QuantizedMatrix> ModelCalibration::made_of(const std::string& name,
                                                                 const TensorView& view,
                                                                 const QuantChoice& choice,
                                                                 uint64_t seed,
                                                                 bool int8_dot) const {
    const auto it = made.find(name);
    if (it == made.end()) return nullptr;
    const MadeMatrix& m = it->second;
    if (m.choice != choice || m.seed != seed || m.int8_dot != int8_dot ||
        m.view.shape != view.shape || m.view.dtype != view.dtype ||
        m.view.block_type != view.block_type || m.view.n_bytes() != view.n_bytes())
        return nullptr;
    const bool same_bytes =
        m.view.data == view.data || std::memcmp(m.view.data, view.data, view.n_bytes()) == 0;
    return same_bytes ? m.matrix : nullptr;
}

Calibration ModelCalibration::for_weight(const std::string& name, Component component, bool linear,
                                         GramFactorCache* factors) const {
    Calibration calib;
    if (linear) {
        calib = {find(name), method, factors, component != Component::embed};
    } else if (component == Component::embed && !token_counts.empty()) {
        calib.row_counts = &token_counts;
    }
    return calib;
}

const std::vector<float>& GramFactorCache::factor_of(const InputStats& stats, ThreadPool& pool) {
    if (stats_ != &stats) {
        factor_ = inverse_gram_factor(stats.gram, stats.n_in, pool);
        stats_ = &stats;
    }
    return factor_;
}

const char* calib_method_name(CalibMethod m) {
    return m == CalibMethod::weighted ? "weighted" : "gptq";
}

CalibMethod calib_method_from_name(const std::string& name) {
    if (name == "weighted") return CalibMethod::weighted;
    if (name == "gptq") return CalibMethod::gptq;
    fail("--calib-method: {}, expected gptq or weighted", name);
}

}  // namespace anelm::quant
