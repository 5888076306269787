#include "quant/kmeans_1d.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <set>
#include <vector>

#include "base/half.h"
#include "quant/kmeans_brute_force.h"
#include "quant/sort_floats.h"

namespace anelm::quant {
namespace {

// Sum of squared distances of the values to their nearest centre.
double sse_of(const std::vector<float>& values, const std::vector<double>& centers) {
    double sse = 0;
    for (float v : values) {
        double best = std::numeric_limits<double>::infinity();
        for (double c : centers) best = std::min(best, (v - c) * (v - c));
        sse += best;
    }
    return sse;
}

// The least squared error over every partition of the values into at most k
// groups (all set partitions, not only runs of sorted neighbours).
double brute_force_optimum(const std::vector<float>& values, int k) {
    return test::brute_force_kmeans(values, std::vector<double>(values.size(), 1.0), k);
}

WeightedValues points_of(std::vector<float> values) {
    WeightedValues p;
    distinct_values(values, p);
    return p;
}

std::vector<float> random_values(std::mt19937& rng, size_t n, bool with_duplicates) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> v(n);
    for (auto& x : v) x = with_duplicates ? std::round(d(rng) * 2.0f) / 2.0f : d(rng);
    return v;
}

// Distinct values with counts: m of them, drawn from a coarse grid when `ties` (many runs of
// equal cost), with counts all equal or drawn from 1-4.
WeightedValues random_points(std::mt19937& rng, size_t m, bool ties, bool equal_counts) {
    std::set<double> distinct;
    std::normal_distribution<double> d(0.0, 1.0);
    std::uniform_int_distribution<int> grid(-60, 60);
    while (distinct.size() < m) distinct.insert(ties ? grid(rng) : d(rng));
    WeightedValues p;
    p.value.assign(distinct.begin(), distinct.end());
    std::uniform_int_distribution<int> count(1, 4);
    for (size_t i = 0; i < m; ++i) p.count.push_back(equal_counts ? 2.0 : count(rng));
    return p;
}

// Squared error of k runs of sorted neighbours, each summed directly around its mean.
double run_cost(const WeightedValues& p, size_t a, size_t b) {
    long double w = 0, sum = 0, sse = 0;
    for (size_t i = a; i < b; ++i) {
        w += p.count[i];
        sum += p.count[i] * p.value[i];
    }
    for (size_t i = a; i < b; ++i) sse += p.count[i] * std::pow(p.value[i] - sum / w, 2);
    return static_cast<double>(sse);
}

double mean_of(const WeightedValues& p) {
    double w = 0, sum = 0;
    for (size_t i = 0; i < p.value.size(); ++i) {
        w += p.count[i];
        sum += p.count[i] * p.value[i];
    }
    return sum / w;
}

// The least error of k clusters by the plain O(k m^2) programme over every split.
double brute_force_programme(const WeightedValues& p, int k) {
    const size_t m = p.value.size();
    if (static_cast<size_t>(k) >= m) return 0;
    std::vector<std::vector<double>> cost(m + 1, std::vector<double>(m + 1));
    for (size_t a = 0; a < m; ++a) {
        for (size_t b = a + 1; b <= m; ++b) cost[a][b] = run_cost(p, a, b);
    }
    const double inf = std::numeric_limits<double>::infinity();
    std::vector<double> d(m + 1, inf);
    for (size_t i = 1; i <= m; ++i) d[i] = cost[0][i];
    for (int j = 1; j < k; ++j) {
        std::vector<double> next(m + 1, inf);
        for (size_t i = 1; i <= m; ++i) {
            for (size_t s = 1; s < i; ++s) next[i] = std::min(next[i], d[s] + cost[s][i]);
        }
        d = next;
    }
    return d[m];
}

// The previous exact method: each layer by divide and conquer on the monotone split.
double divide_and_conquer_programme(const WeightedValues& p, int k) {
    const size_t m = p.value.size();
    if (static_cast<size_t>(k) >= m) return 0;
    std::vector<double> w(m + 1), s1(m + 1), s2(m + 1);
    for (size_t i = 0; i < m; ++i) {
        w[i + 1] = w[i] + p.count[i];
        s1[i + 1] = s1[i] + p.count[i] * p.value[i];
        s2[i + 1] = s2[i] + p.count[i] * p.value[i] * p.value[i];
    }
    const auto cost = [&](size_t a, size_t b) {
        const double sw = w[b] - w[a], s = s1[b] - s1[a];
        return std::max(0.0, s2[b] - s2[a] - s * s / sw);
    };
    std::vector<double> prev(m + 1), cur(m + 1);
    for (size_t i = 1; i <= m; ++i) prev[i] = cost(0, i);
    std::function<void(int64_t, int64_t, int64_t, int64_t)> layer =
        [&](int64_t lo, int64_t hi, int64_t opt_lo, int64_t opt_hi) {
            if (lo > hi) return;
            const int64_t mid = (lo + hi) / 2;
            double best = std::numeric_limits<double>::infinity();
            int64_t best_s = opt_lo;
            for (int64_t s = opt_lo; s <= std::min(opt_hi, mid - 1); ++s) {
                const double c = prev[static_cast<size_t>(s)] +
                                 cost(static_cast<size_t>(s), static_cast<size_t>(mid));
                if (c < best) {
                    best = c;
                    best_s = s;
                }
            }
            cur[static_cast<size_t>(mid)] = best;
            layer(lo, mid - 1, opt_lo, best_s);
            layer(mid + 1, hi, best_s, opt_hi);
        };
    const auto mm = static_cast<int64_t>(m);
    for (int j = 1; j < k; ++j) {
        layer(j + 1, mm - (k - j - 1), j, mm - 1);
        std::swap(prev, cur);
    }
    return prev[m];
}

// The squared error of the points to their nearest centre.
double weighted_sse(const WeightedValues& p, const std::vector<double>& centers) {
    double sse = 0;
    for (size_t i = 0; i < p.value.size(); ++i) {
        double best = std::numeric_limits<double>::infinity();
        for (double c : centers) best = std::min(best, (p.value[i] - c) * (p.value[i] - c));
        sse += p.count[i] * best;
    }
    return sse;
}

TEST(KMeans, ReachesTheBruteForceOptimumOnSmallSets) {
    std::mt19937 rng(3);
    for (int trial = 0; trial < 60; ++trial) {
        const size_t n = 3 + trial % 6;  // up to 8 values: Bell(8) = 4140 partitions
        const int k = 1 + trial % 4;
        const auto values = random_values(rng, n, trial % 2 == 0);
        const double optimum = brute_force_optimum(values, k);
        const KMeansResult r = kmeans_1d(points_of(values), k, 11);
        EXPECT_TRUE(r.exact);
        EXPECT_NEAR(r.sse, optimum, 1e-9 * (1 + optimum)) << "trial " << trial;
        EXPECT_NEAR(sse_of(values, r.centers), optimum, 1e-9 * (1 + optimum)) << "trial " << trial;
        EXPECT_LE(static_cast<int>(r.centers.size()), k);
        EXPECT_TRUE(std::is_sorted(r.centers.begin(), r.centers.end()));
    }
}

TEST(KMeans, ExactProgrammeMatchesBruteForceOverSortedRuns) {
    // Larger sets: enumerate every split of the sorted values into k runs.
    std::mt19937 rng(4);
    for (int trial = 0; trial < 20; ++trial) {
        auto values = random_values(rng, 14, trial % 3 == 0);
        std::sort(values.begin(), values.end());
        const int k = 2 + trial % 4;
        double optimum = std::numeric_limits<double>::infinity();
        std::vector<size_t> cut(static_cast<size_t>(k + 1));
        std::function<void(int, size_t)> split = [&](int j, size_t from) {
            if (j == k) {
                cut[static_cast<size_t>(k)] = values.size();
                std::vector<double> centers;
                for (int c = 0; c < k; ++c) {
                    double sum = 0;
                    for (size_t i = cut[static_cast<size_t>(c)];
                         i < cut[static_cast<size_t>(c) + 1]; ++i)
                        sum += values[i];
                    centers.push_back(sum / static_cast<double>(cut[static_cast<size_t>(c) + 1] -
                                                                cut[static_cast<size_t>(c)]));
                }
                optimum = std::min(optimum, sse_of(values, centers));
                return;
            }
            for (size_t c = from + 1; c + (k - j - 1) < values.size(); ++c) {
                cut[static_cast<size_t>(j)] = c;
                split(j + 1, c);
            }
        };
        cut[0] = 0;
        split(1, 0);
        const KMeansResult r = kmeans_1d_exact(points_of(values), k);
        EXPECT_NEAR(r.sse, optimum, 1e-9 * (1 + optimum)) << "trial " << trial;
    }
}

TEST(KMeans, LayeredProgrammeMatchesBruteForceOnSmallSets) {
    // Ties, equal and unequal counts, k from 1 to beyond m, m from 1.
    std::mt19937 rng(10);
    int trials = 0;
    for (size_t m : {1u, 2u, 3u, 5u, 8u, 13u, 21u, 34u}) {
        for (int variant = 0; variant < 4; ++variant) {
            const WeightedValues p = random_points(rng, m, variant & 1, variant & 2);
            for (int k = 1; k <= static_cast<int>(m) + 2; k += k < 6 ? 1 : 5) {
                const double optimum = brute_force_programme(p, k);
                const double tolerance = 1e-9 * (1 + optimum);
                const KMeansResult r = kmeans_1d_layered(p, k);
                ASSERT_TRUE(r.exact);
                ASSERT_EQ(r.centers.size(), std::min(static_cast<size_t>(k), m));
                ASSERT_TRUE(std::is_sorted(r.centers.begin(), r.centers.end()));
                EXPECT_NEAR(r.sse, optimum, tolerance) << "m " << m << " k " << k;
                EXPECT_NEAR(weighted_sse(p, r.centers), optimum, tolerance);
                if (k == 1) {
                    EXPECT_NEAR(r.centers[0], mean_of(p), 1e-12);
                }
                EXPECT_NEAR(kmeans_1d_exact(p, k).sse, optimum, tolerance);
                if (const auto l = kmeans_1d_lagrangian(p, k)) {
                    ASSERT_EQ(l->centers.size(), std::min(static_cast<size_t>(k), m));
                    EXPECT_NEAR(l->sse, optimum, tolerance) << "m " << m << " k " << k;
                    EXPECT_NEAR(weighted_sse(p, l->centers), optimum, tolerance);
                }
                ++trials;
            }
        }
    }
    EXPECT_GT(trials, 150);
}

TEST(KMeans, LayeredAndLagrangianMatchTheDivideAndConquerProgramme) {
    std::mt19937 rng(11);
    int found = 0, trials = 0;
    for (size_t m : {40u, 150u, 600u, 2000u}) {
        for (int k : {2, 3, 8, 16, 37, 64}) {
            if (static_cast<size_t>(k) * 3 > m) continue;
            const WeightedValues p = random_points(rng, m, false, (m + k) % 2 == 0);
            const double reference = divide_and_conquer_programme(p, k);
            const double tolerance = 1e-9 * reference;
            EXPECT_NEAR(kmeans_1d_layered(p, k).sse, reference, tolerance) << m << " " << k;
            if (const auto l = kmeans_1d_lagrangian(p, k)) {
                ++found;
                ASSERT_EQ(l->centers.size(), static_cast<size_t>(k));
                EXPECT_NEAR(l->sse, reference, tolerance) << m << " " << k;
                EXPECT_NEAR(weighted_sse(p, l->centers), reference, tolerance);
            }
            EXPECT_NEAR(kmeans_1d_exact(p, k).sse, reference, tolerance);
            ++trials;
        }
    }
    // Distinct random values leave no ties: a price lands on every k.
    EXPECT_EQ(found, trials);
}

TEST(KMeans, LagrangianGivesUpOnCollinearOptima) {
    // 0, 1, 2, 3: two clusters cost 1, three 1/2, four 0. The three optima lie on a
    // line, so no price per cluster makes 3 the best count; exact falls back to the
    // layers.
    const WeightedValues p{{0, 1, 2, 3}, {1, 1, 1, 1}};
    EXPECT_FALSE(kmeans_1d_lagrangian(p, 3).has_value());
    const KMeansResult r = kmeans_1d_exact(p, 3);
    EXPECT_TRUE(r.exact);
    EXPECT_EQ(r.centers.size(), 3u);
    EXPECT_NEAR(r.sse, 0.5, 1e-12);
    ASSERT_TRUE(kmeans_1d_lagrangian(p, 2).has_value());
    EXPECT_NEAR(kmeans_1d_lagrangian(p, 2)->sse, 1.0, 1e-12);
}

TEST(KMeans, LloydEndsAtAFixedPointNoWorseThanSeeding) {
    std::mt19937 rng(5);
    const auto values = random_values(rng, 3000, false);
    const WeightedValues points = points_of(values);
    KMeansOptions lloyd_only;
    lloyd_only.exact_budget = 0;
    const KMeansResult r = kmeans_1d(points, 16, 1, lloyd_only);
    const KMeansResult exact = kmeans_1d_exact(points, 16);
    EXPECT_FALSE(r.exact);
    ASSERT_EQ(r.centers.size(), 16u);
    EXPECT_GE(r.sse, exact.sse * (1 - 1e-12));
    EXPECT_LE(r.sse, exact.sse * 1.05);  // seeding plus Lloyd lands close
    EXPECT_NEAR(sse_of(values, r.centers), r.sse, 1e-9 * r.sse);
    // Each centre is the mean of the values nearest to it.
    for (size_t j = 0; j < r.centers.size(); ++j) {
        double sum = 0, count = 0;
        for (float v : values) {
            size_t nearest = 0;
            for (size_t c = 1; c < r.centers.size(); ++c) {
                if (std::fabs(v - r.centers[c]) < std::fabs(v - r.centers[nearest])) nearest = c;
            }
            if (nearest != j) continue;
            sum += v;
            count += 1;
        }
        EXPECT_NEAR(r.centers[j], sum / count, 1e-9) << "centre " << j;
    }
}

TEST(KMeans, LloydFindsSeparatedClusters) {
    std::mt19937 rng(6);
    std::normal_distribution<float> noise(0.0f, 0.01f);
    std::vector<float> values;
    for (int c = 0; c < 8; ++c) {
        for (int i = 0; i < 200; ++i) values.push_back(static_cast<float>(c * 10) + noise(rng));
    }
    KMeansOptions lloyd_only;
    lloyd_only.exact_budget = 0;
    const WeightedValues points = points_of(values);
    const KMeansResult r = kmeans_1d(points, 8, 2, lloyd_only);
    EXPECT_NEAR(r.sse, kmeans_1d_exact(points, 8).sse, 1e-9);
    for (int c = 0; c < 8; ++c) EXPECT_NEAR(r.centers[static_cast<size_t>(c)], c * 10, 0.01);
}

TEST(KMeans, DeterministicForASeed) {
    std::mt19937 rng(7);
    const WeightedValues points = points_of(random_values(rng, 5000, false));
    KMeansOptions lloyd_only;
    lloyd_only.exact_budget = 0;
    const KMeansResult a = kmeans_1d(points, 16, 42, lloyd_only);
    const KMeansResult b = kmeans_1d(points, 16, 42, lloyd_only);
    EXPECT_EQ(a.centers, b.centers);
    EXPECT_EQ(mix_seed(42, 3), mix_seed(42, 3));
    EXPECT_NE(mix_seed(42, 3), mix_seed(42, 4));
    EXPECT_NE(mix_seed(42, 3), mix_seed(43, 3));
}

TEST(KMeans, FewDistinctValuesAreTheirOwnCentres) {
    const KMeansResult r = kmeans_1d(points_of({0.5f, -1.0f, 0.5f, 2.0f, -1.0f}), 16, 0);
    EXPECT_EQ(r.centers, (std::vector<double>{-1.0, 0.5, 2.0}));
    EXPECT_EQ(r.sse, 0.0);
}

TEST(KMeans, AutomaticChoiceIsExactForLut6GroupsOf4) {
    // LUT6 tables of 4 rows of 1024 and 3072 f16 weights (like q_proj and down_proj).
    std::mt19937 rng(8);
    std::normal_distribution<float> d(0.0f, 0.02f);
    for (int cols : {1024, 3072}) {
        std::vector<float> values(static_cast<size_t>(4 * cols));
        for (auto& v : values) v = round_to_f16(d(rng));
        const WeightedValues points = points_of(values);
        const KMeansResult r = kmeans_1d(points, 64, 0);
        EXPECT_TRUE(r.exact);
        ASSERT_EQ(r.centers.size(), 64u);
        EXPECT_NEAR(r.sse, kmeans_1d_layered(points, 64).sse, 1e-9 * r.sse);
        EXPECT_LT(r.sse, kmeans_1d_lloyd(points, 64, 0).sse);
    }
    // Beyond the budget, Lloyd.
    const WeightedValues large = points_of(random_values(rng, 20000, false));
    KMeansOptions small_budget;
    small_budget.exact_budget = 16 * 10000;
    EXPECT_TRUE(kmeans_1d(large, 16, 0).exact);
    EXPECT_FALSE(kmeans_1d(large, 16, 0, small_budget).exact);
}

TEST(SortFloats, MatchesStdSort) {
    std::mt19937 rng(9);
    std::normal_distribution<float> d(0.0f, 3.0f);
    for (size_t n : {0u, 5u, 300u, 5000u}) {
        for (int from_halves = 0; from_halves < 2; ++from_halves) {
            std::vector<float> v(n);
            for (auto& x : v) x = from_halves ? round_to_f16(d(rng)) : d(rng);
            if (n > 2) {
                v[0] = -0.0f;
                v[1] = 0.0f;
            }
            auto want = v;
            std::sort(want.begin(), want.end());
            sort_floats(v);
            ASSERT_EQ(v.size(), want.size());
            for (size_t i = 0; i < n; ++i) ASSERT_EQ(v[i], want[i]) << "n " << n << " at " << i;
        }
    }
}

TEST(DistinctValues, CountsEachValue) {
    const WeightedValues p = points_of({3, 1, 2, 3, 3, 1});
    EXPECT_EQ(p.value, (std::vector<double>{1, 2, 3}));
    EXPECT_EQ(p.count, (std::vector<double>{2, 1, 3}));
}

}  // namespace
}  // namespace anelm::quant
