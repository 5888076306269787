// One-dimensional k-means, the heart of LUT palettization: the table of a
// group of weights is the k cluster centres that minimise the squared error.
//
// Both methods work on the sorted distinct values with their counts, where a
// cluster is a run of neighbours and its cost comes from prefix sums in O(1):
// - exact: dynamic programming over (clusters, prefix), each layer solved by
//   divide and conquer on the monotone split points, O(k m log m) for m
//   distinct values: the global optimum.
// - lloyd: k-means++ seeding (seeded, deterministic), then Lloyd iterations in
//   which the assignment is k - 1 binary searches for the midpoints between
//   centres and the update is k prefix-sum differences, O(k log m) per
//   iteration; n_init seedings, the best kept. A local optimum.
// kmeans_1d picks exact when k * m * ceil(log2 m) <= exact_budget (small groups,
// small k; about a millisecond at the default), lloyd otherwise.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace anelm::quant {

struct KMeansOptions {
    int64_t exact_budget = int64_t{1} << 18;
    int n_init = 3;
    int max_iterations = 300;
};

struct KMeansResult {
    std::vector<double> centers;  // ascending, min(k, distinct values) of them
    double sse = 0.0;             // sum of squared distances to the nearest centre
    bool exact = false;           // found by the dynamic programme
};

// Sorted distinct values with their multiplicities.
struct WeightedValues {
    std::vector<double> value;  // strictly ascending
    std::vector<double> count;  // > 0
};

// Sorts `values` (finite) in place and collects the distinct ones into `out`
// (its arrays reused).
void distinct_values(std::span<float> values, WeightedValues& out);

KMeansResult kmeans_1d(const WeightedValues& points, int k, uint64_t seed,
                       const KMeansOptions& options = {});
KMeansResult kmeans_1d_exact(const WeightedValues& points, int k);
KMeansResult kmeans_1d_lloyd(const WeightedValues& points, int k, uint64_t seed,
                             const KMeansOptions& options = {});

// Mixes a seed with a stream number (a group index): independent, reproducible
// seeds per group whatever thread handles it.
uint64_t mix_seed(uint64_t seed, uint64_t stream);

}  // namespace anelm::quant
