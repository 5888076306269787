#include "quant/kmeans_1d.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <random>
#include <vector>

#include "base/half.h"
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
    const size_t n = values.size();
    std::vector<int> label(n, 0);
    double best = std::numeric_limits<double>::infinity();
    std::function<void(size_t, int)> assign = [&](size_t i, int used) {
        if (i == n) {
            double sse = 0;
            for (int g = 0; g < used; ++g) {
                double sum = 0, count = 0;
                for (size_t j = 0; j < n; ++j) {
                    if (label[j] != g) continue;
                    sum += values[j];
                    count += 1;
                }
                const double mean = sum / count;
                for (size_t j = 0; j < n; ++j) {
                    if (label[j] == g) sse += (values[j] - mean) * (values[j] - mean);
                }
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

TEST(KMeans, AutomaticChoiceFollowsTheBudget) {
    std::mt19937 rng(8);
    const WeightedValues small = points_of(random_values(rng, 200, false));
    const WeightedValues large = points_of(random_values(rng, 20000, false));
    EXPECT_TRUE(kmeans_1d(small, 16, 0).exact);   // 16 * 200 * 8 < 2^18
    EXPECT_FALSE(kmeans_1d(large, 16, 0).exact);  // 16 * 20000 * 15 > 2^18
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
