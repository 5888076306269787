#include "quant/quantize.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <random>
#include <vector>

#include "base/bit_packing.h"
#include "base/error.h"
#include "base/half.h"
#include "quant/quant_error.h"
#include "quant/quant_testing.h"

namespace anelm::quant {
namespace {

QuantChoice lut(int nbits, int64_t group) {
    return {QuantMethod::lut, nbits, group};
}

std::vector<float> dequantize(const QuantizedMatrix& q) {
    std::vector<float> out(static_cast<size_t>(q.n_out * q.n_in));
    for (int64_t o = 0; o < q.n_out; ++o) q.decode_row(o, out.data() + o * q.n_in);
    return out;
}

double relative_rmse(const std::vector<float>& w, const std::vector<float>& q) {
    double dd = 0, ww = 0;
    for (size_t i = 0; i < w.size(); ++i) {
        dd += (w[i] - q[i]) * double{w[i] - q[i]};
        ww += w[i] * double{w[i]};
    }
    return std::sqrt(dd / ww);
}

// Uniform asymmetric 4-bit quantization per group of rows: 16 levels from the
// group's min to its max, each weight rounded to the nearest level.
std::vector<float> uniform_4bit(const std::vector<float>& w, int64_t n_out, int64_t n_in,
                                int64_t group) {
    std::vector<float> out(w.size());
    for (int64_t g = 0; g < n_out / group; ++g) {
        const auto begin = w.begin() + g * group * n_in, end = begin + group * n_in;
        const float lo = *std::min_element(begin, end), hi = *std::max_element(begin, end);
        const float step = (hi - lo) / 15.0f;
        for (auto it = begin; it != end; ++it) {
            const float level = step > 0 ? std::round((*it - lo) / step) : 0.0f;
            out[static_cast<size_t>(it - w.begin())] = lo + level * step;
        }
    }
    return out;
}

TEST(Palettize, TablesCodesAndNearestEntries) {
    std::mt19937 rng(1);
    ThreadPool pool(2);
    for (int nbits : {1, 2, 3, 4, 6, 8}) {
        const auto w = test::gaussian_weight(rng, 32, 77);
        const QuantizedMatrix q = quantize_matrix(w.view, lut(nbits, 8), pool, 5);
        const int64_t k = int64_t{1} << nbits;
        EXPECT_EQ(q.n_tables(), 4);
        ASSERT_EQ(static_cast<int64_t>(q.lut.size()), 4 * k) << nbits;
        EXPECT_EQ(static_cast<int64_t>(q.codes.size()), 32 * q.row_bytes());
        for (int64_t g = 0; g < 4; ++g) {
            std::vector<float> table;
            for (int64_t e = 0; e < k; ++e) table.push_back(f16_to_f32(q.lut[g * k + e]));
            EXPECT_TRUE(std::is_sorted(table.begin(), table.end())) << nbits;
            for (int64_t o = g * 8; o < (g + 1) * 8; ++o) {
                for (int64_t i = 0; i < q.n_in; ++i) {
                    const uint32_t c = q.code(o, i);
                    ASSERT_LT(c, static_cast<uint32_t>(k));
                    // The code names an entry no farther from the weight than any other.
                    const float v = w.values[o * q.n_in + i];
                    for (float e : table) ASSERT_LE(std::fabs(v - table[c]), std::fabs(v - e));
                }
            }
        }
    }
}

TEST(Palettize, Lut4BeatsUniform4BitOnGaussianAndHeavyTails) {
    std::mt19937 rng(2);
    ThreadPool pool(2);
    for (int heavy = 0; heavy < 2; ++heavy) {
        const auto w =
            heavy ? test::student_t_weight(rng, 64, 512) : test::gaussian_weight(rng, 64, 512);
        const QuantizedMatrix q = quantize_matrix(w.view, lut(4, 8), pool, 1);
        const double lut_error = relative_rmse(w.values, dequantize(q));
        const double uniform_error = relative_rmse(w.values, uniform_4bit(w.values, 64, 512, 8));
        EXPECT_LE(lut_error, uniform_error) << (heavy ? "student-t" : "gaussian");
        // Lloyd-Max 16 levels for a Gaussian: about 0.095 relative RMS error.
        if (!heavy) {
            EXPECT_LT(lut_error, 0.11);
        }
        std::printf("%s: lut4:8 %.4f, uniform 4-bit %.4f\n", heavy ? "student-t" : "gaussian",
                    lut_error, uniform_error);
        const QuantError e = quant_error(w.view, q, pool);
        EXPECT_NEAR(e.rel_rmse(), lut_error, 1e-6);
        EXPECT_GT(e.cosine(), 0.98);
    }
}

TEST(Palettize, SameResultForAnyThreadCount) {
    std::mt19937 rng(3);
    // 8 x 1024 values per group: the Lloyd path; 8 x 24: the exact one.
    for (int64_t n_in : {1024, 24}) {
        const auto w = test::student_t_weight(rng, 48, n_in);
        QuantizedMatrix first;
        for (int threads : {1, 2, 3}) {
            ThreadPool pool(threads);
            const QuantizedMatrix q = quantize_matrix(w.view, lut(4, 8), pool, 9);
            if (threads == 1) {
                first = q;
                continue;
            }
            EXPECT_EQ(q.codes, first.codes) << threads << " threads, n_in " << n_in;
            EXPECT_EQ(q.lut, first.lut) << threads << " threads, n_in " << n_in;
        }
    }
}

TEST(Palettize, PerTensorTableAndHalfInputs) {
    std::mt19937 rng(4);
    ThreadPool pool(2);
    const auto w = test::gaussian_weight(rng, 20, 33);
    const QuantizedMatrix q = quantize_matrix(w.view, lut(6, 0), pool, 0);
    EXPECT_EQ(q.n_tables(), 1);
    EXPECT_EQ(q.lut.size(), 64u);

    // The same weights as f16 and bf16 give the tables of their rounded values.
    for (DType dtype : {DType::f16, DType::bf16}) {
        std::vector<uint16_t> halves(w.values.size());
        std::vector<float> rounded(w.values.size());
        for (size_t i = 0; i < halves.size(); ++i) {
            halves[i] = dtype == DType::f16 ? f32_to_f16(w.values[i]) : f32_to_bf16(w.values[i]);
            rounded[i] = dtype == DType::f16 ? f16_to_f32(halves[i]) : bf16_to_f32(halves[i]);
        }
        const TensorView view{dtype, {20, 33}, reinterpret_cast<const std::byte*>(halves.data())};
        const auto f32 = test::make_weight(rounded, 20, 33);
        const QuantizedMatrix a = quantize_matrix(view, lut(4, 4), pool, 3);
        const QuantizedMatrix b = quantize_matrix(f32.view, lut(4, 4), pool, 3);
        EXPECT_EQ(a.codes, b.codes);
        EXPECT_EQ(a.lut, b.lut);
    }
}

// Rows a group does not divide: the group size is kept and the last table is
// the k-means of the rows left; the whole groups come out as they do without
// those rows. Core ML's form pads the codes to whole groups with code 0.
TEST(Palettize, PartialLastGroupKeepsTheGroupSize) {
    std::mt19937 rng(9);
    ThreadPool pool(2);
    for (int nbits : {1, 2, 3, 4, 6, 8}) {
        for (int64_t group : {3, 5, 8, 16}) {
            const int64_t n_out = 3 * group + 2, n_in = 24, k = int64_t{1} << nbits;
            const auto w = test::gaussian_weight(rng, n_out, n_in);
            const QuantizedMatrix q = quantize_matrix(w.view, lut(nbits, group), pool, 3);
            ASSERT_EQ(q.group_size, group);
            ASSERT_EQ(q.n_tables(), 4);
            ASSERT_EQ(std::ssize(q.lut), 4 * k);

            auto whole = w;
            whole.view.shape[0] = 3 * group;
            const QuantizedMatrix w3 = quantize_matrix(whole.view, lut(nbits, group), pool, 3);
            EXPECT_TRUE(std::equal(w3.lut.begin(), w3.lut.end(), q.lut.begin()));
            EXPECT_TRUE(std::equal(w3.codes.begin(), w3.codes.end(), q.codes.begin()));

            // The last two rows read the fourth table, each weight its nearest entry.
            std::vector<float> table;
            for (int64_t e = 0; e < k; ++e) table.push_back(f16_to_f32(q.lut[3 * k + e]));
            std::vector<float> row(static_cast<size_t>(n_in));
            for (int64_t o = 3 * group; o < n_out; ++o) {
                q.decode_row(o, row.data());
                for (int64_t i = 0; i < n_in; ++i) {
                    const float v = w.values[o * n_in + i];
                    EXPECT_EQ(row[i], table[q.code(o, i)]);
                    for (float e : table) ASSERT_LE(std::fabs(v - row[i]), std::fabs(v - e));
                }
            }
            EXPECT_LT(relative_rmse(w.values, dequantize(q)), nbits >= 4 ? 0.2 : 0.9);

            EXPECT_EQ(coreml_lut_shape(q), (std::array<int64_t, 4>{4, 1, k, 1}));
            EXPECT_EQ(q.whole_group_rows(n_out), 4 * group);
            const std::vector<uint8_t> blob = coreml_codes(q);
            ASSERT_EQ(std::ssize(blob), 4 * group * n_in * nbits / 8);
            std::vector<uint8_t> all(static_cast<size_t>(4 * group * n_in));
            unpack_codes(blob.data(), 4 * group * n_in, nbits, all.data());
            for (int64_t o = 0; o < 4 * group; ++o)
                for (int64_t i = 0; i < n_in; ++i)
                    ASSERT_EQ(all[static_cast<size_t>(o * n_in + i)], o < n_out ? q.code(o, i) : 0)
                        << nbits << " " << group << " row " << o;
        }
    }
}

TEST(QuantizeInt, SymmetricPerRowScales) {
    std::mt19937 rng(5);
    ThreadPool pool(2);
    auto w = test::student_t_weight(rng, 17, 45);
    std::fill(w.values.begin() + 3 * 45, w.values.begin() + 4 * 45, 0.0f);  // an all-zero row
    for (QuantMethod method : {QuantMethod::int8, QuantMethod::int4}) {
        const int qmax = method == QuantMethod::int8 ? 127 : 7;
        const QuantizedMatrix q = quantize_matrix(w.view, {method, 0, 0}, pool);
        ASSERT_EQ(q.scales.size(), 17u);
        EXPECT_TRUE(q.lut.empty());
        std::vector<float> row(45);
        for (int64_t o = 0; o < 17; ++o) {
            float max_abs = 0;
            for (int64_t i = 0; i < 45; ++i)
                max_abs = std::max(max_abs, std::fabs(w.values[o * 45 + i]));
            const float scale = f16_to_f32(q.scales[static_cast<size_t>(o)]);
            EXPECT_EQ(scale, round_to_f16(max_abs / static_cast<float>(qmax)));
            q.decode_row(o, row.data());
            for (int64_t i = 0; i < 45; ++i) {
                // Signed codes within the symmetric range; each weight off by at most half a step
                // (or clamped at the range end when the f16 scale rounded down).
                const int code = q.kind == QuantKind::int8
                                     ? static_cast<int8_t>(q.code(o, i))
                                     : static_cast<int>(q.code(o, i) ^ 8u) - 8;
                EXPECT_LE(std::abs(code), qmax);
                EXPECT_EQ(row[static_cast<size_t>(i)], scale * static_cast<float>(code));
                const float v = w.values[o * 45 + i];
                const float limit = std::abs(code) == qmax ? std::fabs(v) - scale * qmax : 0.0f;
                EXPECT_LE(std::fabs(v - row[static_cast<size_t>(i)]),
                          scale / 2 + std::max(0.0f, limit) + 1e-7f);
            }
        }
        EXPECT_EQ(q.scales[3], 0);
    }
}

TEST(Quantize, RejectsWhatItCannotRepresent) {
    ThreadPool pool(1);
    std::mt19937 rng(6);
    auto w = test::gaussian_weight(rng, 12, 16);
    EXPECT_THROW(quantize_matrix(w.view, lut(5, 4), pool), Error);
    EXPECT_THROW(quantize_matrix(w.view, QuantChoice{}, pool), Error);
    TensorView vector = w.view;
    vector.shape = {12 * 16};
    EXPECT_THROW(quantize_matrix(vector, lut(4, 4), pool), Error);
    w.values[17] = NAN;
    try {
        quantize_matrix(w.view, lut(4, 4), pool);
        FAIL() << "a NaN weight was accepted";
    } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find("[1, 1]"), std::string::npos) << e.what();
    }
}

TEST(CoreMLLayout, CodesRepackContiguouslyForOddRows) {
    std::mt19937 rng(7);
    for (int nbits : {1, 2, 3, 4, 6, 8}) {
        for (int64_t n_in : {16, 13}) {
            const auto q = test::random_quantized(rng, QuantKind::lut, nbits, 8, n_in, 4);
            const std::vector<uint8_t> blob = coreml_codes(q);
            ASSERT_EQ(static_cast<int64_t>(blob.size()), packed_bytes(8 * n_in, nbits));
            std::vector<uint8_t> all(static_cast<size_t>(8 * n_in));
            unpack_codes(blob.data(), 8 * n_in, nbits, all.data());
            for (int64_t o = 0; o < 8; ++o) {
                for (int64_t i = 0; i < n_in; ++i) {
                    ASSERT_EQ(all[static_cast<size_t>(o * n_in + i)], q.code(o, i)) << nbits;
                }
            }
            if (n_in * nbits % 8 == 0) {
                EXPECT_TRUE(std::equal(blob.begin(), blob.end(), q.codes.begin(), q.codes.end()));
            }
            EXPECT_EQ(coreml_lut_shape(q), (std::array<int64_t, 4>{2, 1, int64_t{1} << nbits, 1}));
        }
    }
}

}  // namespace
}  // namespace anelm::quant
