// The least (weighted) squared error over every partition of a few values
// into at most k groups, each at its weighted mean: the reference the exact
// 1-D k-means solvers are checked against.
#pragma once

#include <algorithm>
#include <functional>
#include <limits>
#include <vector>

namespace anelm::test {

inline double brute_force_kmeans(const std::vector<float>& v, const std::vector<double>& w, int k) {
    const size_t n = v.size();
    std::vector<int> label(n, 0);
    double best = std::numeric_limits<double>::infinity();
    std::function<void(size_t, int)> assign = [&](size_t i, int used) {
        if (i == n) {
            double sse = 0;
            for (int g = 0; g < used; ++g) {
                double sw = 0, swv = 0;
                for (size_t j = 0; j < n; ++j)
                    if (label[j] == g) sw += w[j], swv += w[j] * v[j];
                const double mean = swv / sw;
                for (size_t j = 0; j < n; ++j)
                    if (label[j] == g) sse += w[j] * (v[j] - mean) * (v[j] - mean);
            }
            best = std::min(best, sse);
            return;
        }
        for (int g = 0; g <= std::min(used, k - 1); ++g) {
            label[i] = g;
            assign(i + 1, std::max(used, g + 1));
        }
    };
    assign(0, 0);
    return best;
}

}  // namespace anelm::test
