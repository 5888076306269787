// One-dimensional k-means, the heart of LUT palettization: the table of a
// group of weights is the k cluster centres that minimise the squared error.
//
// Every method works on the sorted distinct values with their counts, where a
// cluster is a run of neighbours and its cost comes from prefix sums in O(1).
// The cost of a run satisfies the quadrangle inequality, so the best split
// points move monotonically, which both exact methods rely on:
// - layered: dynamic programming over (clusters, prefix), each of the k layers
//   a row-minima problem of a totally monotone matrix solved by SMAWK, O(k m)
//   for m distinct values: the global optimum.
// - lagrangian: a price per cluster instead of a fixed count; one pass finds
//   the best partition into any number of clusters in O(m log m), and its
//   count c makes it an optimal c-clustering. The price is searched until
//   c = k, two to five passes: the global optimum, at a cost nearly
//   independent of k. No price gives exactly k when the optimal costs of k
//   and its neighbouring counts lie on a line (ties); then it returns nullopt.
// - exact: lagrangian for k >= 8, else (and when lagrangian finds no price)
//   layered.
// - lloyd: k-means++ seeding (seeded, deterministic), then Lloyd iterations in
//   which the assignment is k - 1 binary searches for the midpoints between
//   centres and the update is k prefix-sum differences, O(k log m) per
//   iteration; n_init seedings, the best kept. A local optimum.
// kmeans_1d picks exact when k * m <= exact_budget: at the default every group
// of f16 or bf16 weights (at most 65,536 distinct values) up to 8 bits, where
// exact costs 1-6x Lloyd per group (8x below 8 clusters) and about 2x over a
// whole model; beyond it Lloyd, as the layered fallback would then take O(k m)
// time and 4 k m bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace anelm::quant {

struct KMeansOptions {
    int64_t exact_budget = int64_t{1} << 24;
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
// The distinct values of `values` (finite) with the sums of their `weights`
// (> 0, one per value) as counts.
void weighted_distinct_values(std::span<const float> values, std::span<const double> weights,
                              WeightedValues& out);

KMeansResult kmeans_1d(const WeightedValues& points, int k, uint64_t seed,
                       const KMeansOptions& options = {});
KMeansResult kmeans_1d_exact(const WeightedValues& points, int k);
KMeansResult kmeans_1d_layered(const WeightedValues& points, int k);
// nullopt when no price per cluster gives exactly k clusters (ties).
std::optional<KMeansResult> kmeans_1d_lagrangian(const WeightedValues& points, int k);
KMeansResult kmeans_1d_lloyd(const WeightedValues& points, int k, uint64_t seed,
                             const KMeansOptions& options = {});

// Mixes a seed with a stream number (a group index): independent, reproducible
// seeds per group whatever thread handles it.
uint64_t mix_seed(uint64_t seed, uint64_t stream);

}  // namespace anelm::quant
