// Data-aware palettization: the weighted k-means against brute force, the
// factor of the inverse Gram matrix against its definition, GPTQ-style codes
// against plain nearest-entry codes on correlated inputs, and the output
// target on inputs that drifted, and an embedding weighted by how often its
// rows are read.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <random>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "quant/gptq_lut.h"
#include "quant/gram_factor.h"
#include "quant/input_stats.h"
#include "quant/kmeans_1d.h"
#include "quant/kmeans_brute_force.h"
#include "quant/output_target.h"
#include "quant/quantize.h"

namespace anelm::quant {
namespace {

TEST(WeightedKMeans, MergesEqualValuesSummingTheirWeights) {
    const std::vector<float> v = {0.5f, -1.0f, 0.5f, 2.0f, -1.0f, 0.5f};
    const std::vector<double> w = {1.0, 2.0, 3.0, 0.5, 0.25, 4.0};
    WeightedValues p;
    weighted_distinct_values(v, w, p);
    EXPECT_EQ(p.value, (std::vector<double>{-1.0, 0.5, 2.0}));
    EXPECT_EQ(p.count, (std::vector<double>{2.25, 8.0, 0.5}));
}

TEST(WeightedKMeans, SumsWeightsOfManyValuesAsAMapDoes) {
    std::mt19937 rng(5);
    std::uniform_int_distribution<int> level(-300, 300);
    std::uniform_real_distribution<double> weight(0.01, 5.0);
    std::vector<float> v(5000);
    std::vector<double> w(v.size());
    std::map<double, double> expected;
    for (size_t i = 0; i < v.size(); ++i) {
        const int l = level(rng);
        v[i] = l == 0 && i % 2 ? -0.0f : static_cast<float>(l) * 0.013f;  // zeros of both signs
        w[i] = weight(rng);
        expected[v[i]] += w[i];
    }
    WeightedValues p;
    weighted_distinct_values(v, w, p);
    ASSERT_EQ(p.value.size(), expected.size());
    size_t j = 0;
    for (const auto& [value, count] : expected) {
        EXPECT_EQ(p.value[j], value);
        EXPECT_NEAR(p.count[j], count, 1e-9 * count) << value;
        ++j;
    }
}

TEST(WeightedKMeans, ExactSolverMatchesBruteForce) {
    std::mt19937 rng(11);
    std::normal_distribution<float> value(0.0f, 1.0f);
    std::uniform_real_distribution<double> weight(0.01, 5.0);
    for (int trial = 0; trial < 40; ++trial) {
        const size_t n = 3 + trial % 6;
        const int k = 1 + trial % 4;
        std::vector<float> v(n);
        std::vector<double> w(n);
        for (size_t i = 0; i < n; ++i) v[i] = std::round(value(rng) * 4) / 4, w[i] = weight(rng);
        WeightedValues p;
        weighted_distinct_values(v, w, p);
        const KMeansResult r = kmeans_1d_exact(p, k);
        double sse = 0;
        for (size_t i = 0; i < n; ++i) {
            double best = std::numeric_limits<double>::infinity();
            for (double c : r.centers) best = std::min(best, (v[i] - c) * (v[i] - c));
            sse += w[i] * best;
        }
        EXPECT_NEAR(sse, test::brute_force_kmeans(v, w, k), 1e-9 * (1 + sse)) << "trial " << trial;
    }
}

// Rows of inputs that share a few hidden factors: strongly correlated columns.
std::vector<float> correlated_inputs(std::mt19937& rng, int64_t rows, int64_t n_in) {
    std::normal_distribution<float> d(0.0f, 1.0f);
    constexpr int factors = 4;
    std::vector<float> mix(static_cast<size_t>(factors * n_in));
    for (float& m : mix) m = d(rng);
    std::vector<float> x(static_cast<size_t>(rows * n_in));
    for (int64_t t = 0; t < rows; ++t) {
        float f[factors];
        for (float& v : f) v = d(rng);
        for (int64_t i = 0; i < n_in; ++i) {
            float s = 0.3f * d(rng) * (1.0f + static_cast<float>(i % 5));
            for (int j = 0; j < factors; ++j) s += f[j] * mix[static_cast<size_t>(j * n_in + i)];
            x[static_cast<size_t>(t * n_in + i)] = s;
        }
    }
    return x;
}

// The direct product XᵀX in double.
std::vector<double> gram_of(const std::vector<float>& x, int64_t rows, int64_t n_in) {
    std::vector<double> g(static_cast<size_t>(n_in * n_in), 0.0);
    for (int64_t t = 0; t < rows; ++t)
        for (int64_t i = 0; i < n_in; ++i)
            for (int64_t j = 0; j < n_in; ++j)
                g[i * n_in + j] += static_cast<double>(x[t * n_in + i]) * x[t * n_in + j];
    return g;
}

TEST(InputStats, AccumulatesTheGramMatrixAndItsDiagonal) {
    std::mt19937 rng(3);
    const int64_t n_in = 37, rows = 53;
    const auto x = correlated_inputs(rng, rows, n_in);
    ThreadPool pool(2);
    InputStats stats(n_in);
    stats.add(x.data(), 20, pool);  // in two calls, as windows arrive
    stats.add(x.data() + 20 * n_in, rows - 20, pool);
    EXPECT_EQ(stats.rows, rows);
    const auto g = gram_of(x, rows, n_in);
    for (int64_t i = 0; i < n_in; ++i) {
        EXPECT_NEAR(stats.diag[i], g[i * n_in + i], 1e-9 * g[i * n_in + i]);
        for (int64_t j = 0; j < n_in; ++j)
            EXPECT_NEAR(stats.gram[i * n_in + j], g[i * n_in + j], 1e-4 * g[i * n_in + i]);
    }
}

TEST(GramFactor, CholeskyAndTriangularInverseAcrossBlocks) {
    std::mt19937 rng(5);
    const int64_t n = 301;  // past two of the factor's blocks, and not a multiple of them
    const auto x = correlated_inputs(rng, 400, n);
    const auto g = gram_of(x, 400, n);
    std::vector<float> a(g.size());
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) a[i * n + j] = static_cast<float>(g[i * n + j] + (i == j ? 10.0 : 0.0));
    const std::vector<float> original = a;
    ThreadPool pool(2);
    ASSERT_TRUE(cholesky_lower(a, n, pool));
    double worst = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j <= i; ++j) {
            double s = 0;
            for (int64_t p = 0; p < n; ++p) s += static_cast<double>(a[i * n + p]) * a[j * n + p];
            worst = std::max(worst, std::fabs(s - original[i * n + j]) / original[i * n + i]);
        }
    EXPECT_LT(worst, 1e-4);
    const std::vector<float> inv = lower_inverse(a, n, pool);
    worst = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (int64_t p = 0; p < n; ++p) s += static_cast<double>(inv[i * n + p]) * a[p * n + j];
            worst = std::max(worst, std::fabs(s - (i == j ? 1.0 : 0.0)));
        }
    EXPECT_LT(worst, 1e-3);

    std::vector<float> not_definite(static_cast<size_t>(4), 0.0f);
    not_definite[0] = 1, not_definite[3] = -1;
    EXPECT_FALSE(cholesky_lower(not_definite, 2, pool));
}

TEST(GramFactor, InverseFactorTimesItselfIsTheDampedInverse) {
    std::mt19937 rng(6);
    const int64_t n = 150;
    const auto x = correlated_inputs(rng, 300, n);
    const auto g = gram_of(x, 300, n);
    std::vector<float> gram(g.begin(), g.end());
    ThreadPool pool(2);
    const std::vector<float> u = inverse_gram_factor(gram, n, pool);
    double mean = 0;
    for (int64_t i = 0; i < n; ++i) mean += g[i * n + i] / n;
    // (UᵀU)(H + damping I) = I.
    std::vector<double> utu(static_cast<size_t>(n * n), 0.0);
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
            if (j > i) {
                EXPECT_EQ(u[j * n + i], 0.0f);
            }
            double s = 0;
            for (int64_t p = 0; p <= std::min(i, j); ++p) s += static_cast<double>(u[p * n + i]) * u[p * n + j];
            utu[i * n + j] = s;
        }
    double worst = 0;
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) {
            double s = 0;
            for (int64_t p = 0; p < n; ++p)
                s += utu[i * n + p] * (g[p * n + j] + (p == j ? gptq_damping * mean : 0.0));
            worst = std::max(worst, std::fabs(s - (i == j ? 1.0 : 0.0)));
        }
    EXPECT_LT(worst, 2e-3);
}

// sum over rows of |(w - ŵ) xᵀ|²: the layer's output error on the inputs.
double output_error(const std::vector<float>& w, const std::vector<float>& what, int64_t n_out,
                    int64_t n_in, const std::vector<double>& gram) {
    double e = 0;
    std::vector<double> d(static_cast<size_t>(n_in));
    for (int64_t o = 0; o < n_out; ++o) {
        for (int64_t i = 0; i < n_in; ++i) d[i] = w[o * n_in + i] - what[o * n_in + i];
        for (int64_t i = 0; i < n_in; ++i)
            for (int64_t j = 0; j < n_in; ++j) e += d[i] * gram[i * n_in + j] * d[j];
    }
    return e;
}

struct Problem {
    int64_t n_out = 48, n_in = 96, rows = 512;
    std::vector<float> w, x;
    std::vector<double> gram;
    InputStats stats{96};
};

Problem correlated_problem(uint64_t seed) {
    Problem p;
    std::mt19937 rng(static_cast<uint32_t>(seed));
    std::normal_distribution<float> d(0.0f, 0.05f);
    p.w.resize(static_cast<size_t>(p.n_out * p.n_in));
    for (float& v : p.w) v = round_to_f16(d(rng));
    p.x = correlated_inputs(rng, p.rows, p.n_in);
    p.gram = gram_of(p.x, p.rows, p.n_in);
    ThreadPool pool(2);
    p.stats.add(p.x.data(), p.rows, pool);
    return p;
}

std::vector<float> dequantized(const QuantizedMatrix& q) {
    std::vector<float> out(static_cast<size_t>(q.n_out * q.n_in));
    for (int64_t o = 0; o < q.n_out; ++o) q.decode_row(o, out.data() + o * q.n_in);
    return out;
}

TEST(GptqLut, LowersTheOutputErrorAgainstPlainKMeans) {
    ThreadPool pool(2);
    for (uint64_t seed : {1u, 2u, 3u}) {
        Problem p = correlated_problem(seed);
        const TensorView w{DType::f32, {p.n_out, p.n_in}, reinterpret_cast<const std::byte*>(p.w.data())};
        for (const int bits : {2, 3, 4}) {
            const QuantChoice choice{QuantMethod::lut, bits, 8};
            const auto plain = dequantized(quantize_matrix(w, choice, pool, 7));
            const auto gptq = dequantized(
                quantize_matrix(w, choice, pool, 7, {}, {&p.stats, CalibMethod::gptq}));
            const double e_plain = output_error(p.w, plain, p.n_out, p.n_in, p.gram);
            const double e_gptq = output_error(p.w, gptq, p.n_out, p.n_in, p.gram);
            EXPECT_LT(e_gptq, 0.8 * e_plain) << "seed " << seed << ", " << bits << " bits";
        }
    }
}

// Σ over rows and outputs of (ŵ x̃ − w x)²: a layer quantized as `what` on
// drifted inputs xq, against the f32 layer on its own inputs x.
double drift_error(const std::vector<float>& w, const std::vector<float>& what, int64_t n_out,
                   int64_t n_in, const std::vector<float>& x, const std::vector<float>& xq,
                   int64_t rows) {
    double e = 0;
    for (int64_t t = 0; t < rows; ++t)
        for (int64_t o = 0; o < n_out; ++o) {
            double d = 0;
            for (int64_t i = 0; i < n_in; ++i)
                d += static_cast<double>(what[o * n_in + i]) * xq[t * n_in + i] -
                     static_cast<double>(w[o * n_in + i]) * x[t * n_in + i];
            e += d * d;
        }
    return e;
}

TensorView f32_view(const std::vector<float>& w, int64_t n_out, int64_t n_in) {
    return {DType::f32, {n_out, n_in}, reinterpret_cast<const std::byte*>(w.data())};
}

TEST(OutputTarget, TheMapUndoesALinearDriftOfTheInputs) {
    ThreadPool pool(2);
    std::mt19937 rng(5);
    std::normal_distribution<float> d(0.0f, 1.0f);
    const int64_t rows = 512, n = 32, n_out = 16;
    const std::vector<float> x = correlated_inputs(rng, rows, n);
    // x̃ = x S, S = I + a small random matrix.
    std::vector<float> s(static_cast<size_t>(n * n)), xq(x.size(), 0.0f), w(static_cast<size_t>(n_out * n));
    for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < n; ++j) s[i * n + j] = (i == j ? 1.0f : 0.0f) + 0.05f * d(rng);
    for (int64_t t = 0; t < rows; ++t)
        for (int64_t j = 0; j < n; ++j)
            for (int64_t i = 0; i < n; ++i) xq[t * n + j] += x[t * n + i] * s[i * n + j];
    for (float& v : w) v = d(rng);
    InputStats quantized(n);
    quantized.add(xq.data(), rows, pool);
    CrossStats cross(n);
    cross.add(x.data(), xq.data(), rows, pool);
    std::vector<float> aimed = w;
    retarget(aimed, n_out, target_map(cross, quantized, pool), pool);
    double energy = 0;
    for (int64_t t = 0; t < rows; ++t)
        for (int64_t o = 0; o < n_out; ++o) {
            double y = 0;
            for (int64_t i = 0; i < n; ++i) y += static_cast<double>(w[o * n + i]) * x[t * n + i];
            energy += y * y;
        }
    // The layer as it is on the drifted inputs is far off; aimed, it gives the f32 outputs.
    EXPECT_GT(drift_error(w, w, n_out, n, x, xq, rows), 0.05 * energy);
    EXPECT_LT(drift_error(w, aimed, n_out, n, x, xq, rows), 1e-3 * energy);
}

TEST(OutputTarget, AimingAtTheF32OutputsLowersTheQuantizedLayersError) {
    ThreadPool pool(2);
    for (uint64_t seed : {1u, 2u}) {
        Problem p = correlated_problem(seed);
        // The inputs as quantized layers before would leave them: each off by
        // a share of itself and by noise of its own.
        std::mt19937 rng(static_cast<uint32_t>(seed + 10));
        std::normal_distribution<float> d(0.0f, 1.0f);
        std::vector<float> xq(p.x.size());
        for (size_t k = 0; k < xq.size(); ++k) xq[k] = p.x[k] * (1.0f + 0.1f * d(rng)) + 0.3f * d(rng);
        InputStats quantized(p.n_in);
        quantized.add(xq.data(), p.rows, pool);
        CrossStats cross(p.n_in);
        cross.add(p.x.data(), xq.data(), p.rows, pool);
        std::vector<float> aimed = p.w;
        retarget(aimed, p.n_out, target_map(cross, quantized, pool), pool);
        for (const int bits : {3, 4}) {
            const QuantChoice choice{QuantMethod::lut, bits, 8};
            const Calibration calib{&quantized, CalibMethod::gptq};
            const auto as_is = dequantized(quantize_matrix(f32_view(p.w, p.n_out, p.n_in), choice, pool, 7, {}, calib));
            const auto aimed_q = dequantized(quantize_matrix(f32_view(aimed, p.n_out, p.n_in), choice, pool, 7, {}, calib));
            const double e_as_is = drift_error(p.w, as_is, p.n_out, p.n_in, p.x, xq, p.rows);
            const double e_aimed = drift_error(p.w, aimed_q, p.n_out, p.n_in, p.x, xq, p.rows);
            EXPECT_LT(e_aimed, 0.8 * e_as_is) << "seed " << seed << ", " << bits << " bits";
            // The same through the statistics' own target.
            InputStats with_target = quantized;
            with_target.target = target_map(cross, quantized, pool);
            EXPECT_EQ(dequantized(quantize_matrix(f32_view(p.w, p.n_out, p.n_in), choice, pool, 7,
                                                  {}, {&with_target, CalibMethod::gptq})),
                      aimed_q);
        }
    }
}

// Σ over rows of counts[o] · ‖w_o − ŵ_o‖²: an embedding's error on the text
// the counts came from.
double looked_up_error(const std::vector<float>& w, const std::vector<float>& what,
                       int64_t n_in, const std::vector<double>& counts) {
    double e = 0;
    for (size_t o = 0; o < counts.size(); ++o)
        for (int64_t i = 0; i < n_in; ++i) {
            const double d = w[o * n_in + i] - what[o * n_in + i];
            e += counts[o] * d * d;
        }
    return e;
}

TEST(EmbeddingLut, RowsReadOftenAreKeptCloser) {
    // Rows of different spreads share each table; one row in eight is read
    // a hundred times as often as the rest, and is not the widest.
    const int64_t n_out = 64, n_in = 48;
    std::mt19937 rng(5);
    std::normal_distribution<float> d(0.0f, 1.0f);
    std::vector<float> w(static_cast<size_t>(n_out * n_in));
    std::vector<double> counts(static_cast<size_t>(n_out));
    for (int64_t o = 0; o < n_out; ++o) {
        for (int64_t i = 0; i < n_in; ++i)
            w[o * n_in + i] = round_to_f16(0.01f * static_cast<float>(1 + o % 8) * d(rng));
        counts[o] = o % 8 == 2 ? 100.0 : 1.0;
    }
    ThreadPool pool(2);
    for (const int bits : {2, 3, 4}) {
        const QuantChoice choice{QuantMethod::lut, bits, 8};
        Calibration by_counts;
        by_counts.row_counts = &counts;
        const auto plain = dequantized(quantize_matrix(f32_view(w, n_out, n_in), choice, pool, 3));
        const auto weighted =
            dequantized(quantize_matrix(f32_view(w, n_out, n_in), choice, pool, 3, {}, by_counts));
        EXPECT_LT(looked_up_error(w, weighted, n_in, counts),
                  0.7 * looked_up_error(w, plain, n_in, counts))
            << bits << " bits";
    }
}

TEST(PalettizeWidths, EqualsEachWidthQuantizedAlone) {
    ThreadPool pool(2);
    Problem p = correlated_problem(4);
    const TensorView w = f32_view(p.w, p.n_out, p.n_in);
    std::vector<double> counts(static_cast<size_t>(p.n_out));
    for (size_t o = 0; o < counts.size(); ++o) counts[o] = static_cast<double>(o % 5);
    Calibration by_counts;
    by_counts.row_counts = &counts;
    const std::vector<int> widths = {2, 3, 4, 6};
    for (const Calibration& calib :
         {Calibration{}, Calibration{&p.stats, CalibMethod::weighted}, by_counts})
        for (const int64_t group : {int64_t{8}, int64_t{32}}) {
            const auto made = palettize_widths(w, group, widths, pool, 9, calib);
            ASSERT_EQ(made.size(), widths.size());
            for (size_t i = 0; i < widths.size(); ++i) {
                const auto alone = quantize_matrix(
                    w, {QuantMethod::lut, widths[i], group}, pool, 9, {}, calib);
                EXPECT_EQ(made[i].nbits, widths[i]);
                EXPECT_EQ(made[i].lut, alone.lut) << widths[i] << " bits, group " << group;
                EXPECT_EQ(made[i].codes, alone.codes) << widths[i] << " bits, group " << group;
            }
        }
}

TEST(GptqLut, SameResultOnAnyNumberOfThreads) {
    Problem p = correlated_problem(4);
    const TensorView w{DType::f32, {p.n_out, p.n_in}, reinterpret_cast<const std::byte*>(p.w.data())};
    const QuantChoice choice{QuantMethod::lut, 4, 8};
    for (const CalibMethod method : {CalibMethod::gptq, CalibMethod::weighted}) {
        ThreadPool one(1), two(2);
        const QuantizedMatrix a = quantize_matrix(w, choice, one, 3, {}, {&p.stats, method});
        const QuantizedMatrix b = quantize_matrix(w, choice, two, 3, {}, {&p.stats, method});
        EXPECT_EQ(a.codes, b.codes) << calib_method_name(method);
        EXPECT_EQ(a.lut, b.lut) << calib_method_name(method);
    }
}

TEST(GptqLut, RefusesStatisticsOfAnotherWidth) {
    Problem p = correlated_problem(4);
    ThreadPool pool(1);
    InputStats narrow(p.n_in - 1);
    const TensorView w{DType::f32, {p.n_out, p.n_in}, reinterpret_cast<const std::byte*>(p.w.data())};
    EXPECT_THROW(quantize_matrix(w, {QuantMethod::lut, 4, 8}, pool, 0, {}, {&narrow, CalibMethod::gptq}),
                 Error);
}

TEST(NearestEntry, PicksTheClosestAndTheLowerOnATie) {
    const std::vector<float> table = {-1.0f, 0.0f, 0.5f, 2.0f};
    EXPECT_EQ(nearest_entry(table.data(), 4, -5.0f), 0);
    EXPECT_EQ(nearest_entry(table.data(), 4, -0.5f), 0);  // the tie goes low
    EXPECT_EQ(nearest_entry(table.data(), 4, -0.49f), 1);
    EXPECT_EQ(nearest_entry(table.data(), 4, 0.3f), 2);
    EXPECT_EQ(nearest_entry(table.data(), 4, 1.3f), 3);
    EXPECT_EQ(nearest_entry(table.data(), 4, 9.0f), 3);
}

}  // namespace
}  // namespace anelm::quant
