#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "kernels/isa.h"
#include "kernels/kernel_testing.h"

namespace anelm::kernels {
namespace {

TEST(RmsNorm, ReferenceMatchesTheFormula) {
    const std::vector<float> x = {1.0f, -2.0f, 3.0f, 0.5f};
    const std::vector<float> gain = {1.0f, 0.5f, -1.0f, 2.0f};
    const float scale = 1.0f / std::sqrt((1.0f + 4.0f + 9.0f + 0.25f) / 4.0f + 1e-5f);
    std::vector<float> y(4);
    ref::rms_norm(x.data(), gain.data(), 0.0f, 4, 1e-5f, y.data());
    for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[i], x[i] * scale * gain[i]);
    ref::rms_norm(x.data(), gain.data(), 1.0f, 4, 1e-5f, y.data());
    for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[i], x[i] * scale * (1.0f + gain[i]));
    ref::rms_norm(x.data(), nullptr, 0.0f, 4, 1e-5f, y.data());
    for (int i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(y[i], x[i] * scale);
}

TEST(RmsNorm, DispatchedMatchesReference) {
    test::for_each_isa([&](const char*) {
        std::mt19937 rng(11);
        for (int64_t n = 1; n <= 300; n += 7) {
            const auto x = test::random_floats(rng, n, -3.0f, 3.0f);
            const auto gain = test::random_floats(rng, n);
            for (float offset : {0.0f, 1.0f}) {
                for (const float* g : {gain.data(), static_cast<const float*>(nullptr)}) {
                    std::vector<float> y(static_cast<size_t>(n)), want(y.size());
                    rms_norm(x.data(), g, offset, n, 1e-6f, y.data());
                    ref::rms_norm(x.data(), g, offset, n, 1e-6f, want.data());
                    test::expect_close(y, want, 1e-5f, "rms_norm");
                }
            }
        }
    });
}

TEST(Softmax, ReferenceSumsToOneAndKeepsOrder) {
    std::vector<float> x = {1.0f, 2.0f, 3.0f, 1000.0f, -1000.0f};
    ref::softmax(x.data(), 5);
    EXPECT_NEAR(x[3], 1.0f, 1e-6f);
    EXPECT_EQ(x[4], 0.0f);
    std::vector<float> y = {0.0f, std::log(3.0f)};
    ref::softmax(y.data(), 2);
    EXPECT_FLOAT_EQ(y[0], 0.25f);
    EXPECT_FLOAT_EQ(y[1], 0.75f);
}

TEST(Softmax, DispatchedMatchesReference) {
    test::for_each_isa([&](const char*) {
        std::mt19937 rng(12);
        for (int64_t n = 1; n <= 300; n += 5) {
            for (float range : {1.0f, 30.0f, 200.0f}) {
                auto x = test::random_floats(rng, n, -range, range);
                auto want = x;
                softmax(x.data(), n);
                ref::softmax(want.data(), n);
                test::expect_close(x, want, 1e-5f, "softmax");
            }
        }
    });
}

// The leaf also returns the row's log-sum-exp, which attention merges runs of keys by.
TEST(Softmax, LeafReturnsTheLogSumExp) {
    test::for_each_isa([&](const char* name) {
        const Isa* isa = active();
        if (!isa) return;  // the scalar reference has no leaf table
        std::mt19937 rng(14);
        for (int64_t n = 1; n <= 300; n += 7) {
            for (float range : {1.0f, 30.0f, 200.0f}) {
                auto x = test::random_floats(rng, n, -range, range);
                const double max = *std::max_element(x.begin(), x.end());
                double sum = 0.0;
                for (float v : x) sum += std::exp(double{v} - max);
                const float lse = isa->softmax(x.data(), n);
                EXPECT_NEAR(lse, max + std::log(sum), 1e-5 * std::max(1.0, std::abs(max))) << name;
            }
        }
        std::vector<float> none;
        EXPECT_EQ(isa->softmax(none.data(), 0), -INFINITY) << name;
    });
}

TEST(SiluMul, DispatchedMatchesReference) {
    test::for_each_isa([&](const char*) {
        std::mt19937 rng(13);
        for (int64_t n = 1; n <= 300; n += 9) {
            const auto gate = test::random_floats(rng, n, -20.0f, 20.0f);
            const auto up = test::random_floats(rng, n, -2.0f, 2.0f);
            std::vector<float> y(static_cast<size_t>(n)), want(y.size());
            silu_mul(gate.data(), up.data(), n, y.data());
            ref::silu_mul(gate.data(), up.data(), n, want.data());
            for (int64_t i = 0; i < n; ++i) {
                ASSERT_NEAR(y[i], want[i], 2e-6f * std::abs(want[i]) + 1e-30f)
                    << "n " << n << " i " << i;
            }
        }
        // Far negative gates go to zero, not to NaN; a NaN gate stays NaN.
        const float gate[3] = {-200.0f, 200.0f, NAN}, up[3] = {1.0f, 1.0f, 1.0f};
        float y[3];
        silu_mul(gate, up, 3, y);
        EXPECT_NEAR(y[0], 0.0f, 1e-30f);
        EXPECT_FLOAT_EQ(y[1], 200.0f);
        EXPECT_TRUE(std::isnan(y[2]));
    });
}

TEST(Sigmoid, DispatchedMatchesReference) {
    test::for_each_isa([&](const char*) {
        std::mt19937 rng(14);
        for (int64_t n = 1; n <= 300; n += 7) {
            auto x = test::random_floats(rng, n, -30.0f, 30.0f);
            std::vector<float> y(static_cast<size_t>(n)), want(y.size());
            sigmoid(x.data(), n, y.data());
            ref::sigmoid(x.data(), n, want.data());
            for (int64_t i = 0; i < n; ++i)
                ASSERT_NEAR(y[i], want[i], 2e-6f * want[i] + 1e-30f) << "n " << n << " i " << i;
            sigmoid(x.data(), n, x.data());  // in place
            EXPECT_EQ(x, y);
        }
        const float x[4] = {-200.0f, 0.0f, 200.0f, NAN};
        float y[4];
        sigmoid(x, 4, y);
        EXPECT_EQ(y[0], 0.0f);
        EXPECT_FLOAT_EQ(y[1], 0.5f);
        EXPECT_FLOAT_EQ(y[2], 1.0f);
        EXPECT_TRUE(std::isnan(y[3]));
    });
}

TEST(WeightedRows, ReferenceIsTheSum) {
    const float a[4] = {2.0f, -1.0f, 0.5f, 3.0f};  // two sets of two weights, lda 2
    const float rows[6] = {1.0f, 2.0f, 3.0f, 10.0f, 20.0f, 30.0f};
    float out[6];
    ref::weighted_rows(a, 2, 2, rows, 2, 3, out);
    EXPECT_EQ(std::vector<float>(out, out + 6),
              (std::vector<float>{-8.0f, -16.0f, -24.0f, 30.5f, 61.0f, 91.5f}));
}

// Sets of 1-9 (groups of four and their tails), widths with and without
// partial vectors, weights with a longer stride than the rows they use.
TEST(WeightedRows, DispatchedMatchesReference) {
    test::for_each_isa([&](const char*) {
        std::mt19937 rng(15);
        for (int64_t sets : {1, 2, 3, 4, 5, 9})
            for (int64_t width : {1, 7, 16, 37, 128})
                for (int64_t n_rows : {0, 1, 13, 65}) {
                    const int64_t lda = n_rows + 3;
                    const auto a = test::random_floats(rng, sets * lda, 0.0f, 1.0f);
                    const auto rows = test::random_floats(rng, n_rows * width, -2.0f, 2.0f);
                    std::vector<float> y(static_cast<size_t>(sets * width), NAN), want(y.size());
                    weighted_rows(a.data(), sets, lda, rows.data(), n_rows, width, y.data());
                    ref::weighted_rows(a.data(), sets, lda, rows.data(), n_rows, width,
                                       want.data());
                    test::expect_close(y, want, 1e-5f, "weighted_rows");
                }
    });
}

// The delta rule's step on one head, state rows of 128 (whole vector groups)
// and of 20 and 3 (tails), against the reference: new state and output.
TEST(DeltaRuleStep, DispatchedMatchesReference) {
    test::for_each_isa([&](const char*) {
        std::mt19937 rng(17);
        for (const auto& [dk, dv] : {std::pair<int64_t, int64_t>{128, 128}, {16, 20}, {5, 3}}) {
            auto s = test::random_floats(rng, dk * dv, -1.0f, 1.0f);
            auto want_s = s;
            const auto q = test::random_floats(rng, dk, -0.3f, 0.3f);
            const auto k = test::random_floats(rng, dk, -0.3f, 0.3f);
            const auto v = test::random_floats(rng, dv, -2.0f, 2.0f);
            std::vector<float> delta(static_cast<size_t>(dv)), o(delta.size()), want_o(o.size());
            for (int step = 0; step < 3; ++step) {
                delta_rule_step(s.data(), dk, dv, q.data(), k.data(), v.data(), 0.7f, 0.9f,
                                delta.data(), o.data());
                ref::delta_rule_step(want_s.data(), dk, dv, q.data(), k.data(), v.data(), 0.7f,
                                     0.9f, delta.data(), want_o.data());
            }
            test::expect_close(s, want_s, 1e-5f, "state");
            test::expect_close(o, want_o, 1e-5f, "output");
        }
    });
}

// One step by hand: dk = dv = 1, s = 2, decay 0.5, beta 0.5, k = 1, q = 3, v = 5:
// s = 1, delta = 0.5 (5 - 1) = 2, s = 3, o = 9.
TEST(DeltaRuleStep, ReferenceIsTheRule) {
    float s = 2, delta = 0, o = 0;
    const float q = 3, k = 1, v = 5;
    ref::delta_rule_step(&s, 1, 1, &q, &k, &v, 0.5f, 0.5f, &delta, &o);
    EXPECT_FLOAT_EQ(delta, 2.0f);
    EXPECT_FLOAT_EQ(s, 3.0f);
    EXPECT_FLOAT_EQ(o, 9.0f);
}

TEST(GeluTanhMul, ReferenceIsTheTanhFormula) {
    // gelu_tanh(1) = 0.5 (1 + tanh(sqrt(2 / pi) * 1.044715)) = 0.8411920, times up.
    const float gate[3] = {1.0f, 0.0f, -1.0f}, up[3] = {2.0f, 5.0f, 1.0f};
    float y[3];
    ref::gelu_tanh_mul(gate, up, 3, y);
    EXPECT_NEAR(y[0], 2 * 0.8411920f, 1e-6f);
    EXPECT_EQ(y[1], 0.0f);
    EXPECT_NEAR(y[2], 0.8411920f - 1.0f, 1e-6f);
}

TEST(GeluTanhMul, DispatchedMatchesReference) {
    test::for_each_isa([&](const char*) {
        std::mt19937 rng(16);
        for (int64_t n : {1, 3, 7, 8, 9, 15, 16, 17, 33, 100, 1001}) {
            const auto gate = test::random_floats(rng, n, -12.0f, 12.0f);
            const auto up = test::random_floats(rng, n, -2.0f, 2.0f);
            std::vector<float> y(static_cast<size_t>(n)), want(y.size());
            gelu_tanh_mul(gate.data(), up.data(), n, y.data());
            ref::gelu_tanh_mul(gate.data(), up.data(), n, want.data());
            for (int64_t i = 0; i < n; ++i)
                ASSERT_NEAR(y[i], want[i], 4e-6f * std::abs(gate[i] * up[i]) + 1e-7f)
                    << "n " << n << " i " << i;
        }
        // Far negative gates go to zero, far positive ones pass through.
        const float gate[2] = {-200.0f, 200.0f}, up[2] = {1.0f, 1.0f};
        float y[2];
        gelu_tanh_mul(gate, up, 2, y);
        EXPECT_NEAR(y[0], 0.0f, 1e-30f);
        EXPECT_FLOAT_EQ(y[1], 200.0f);
    });
}

TEST(Rope, ReferenceRotatesPairs) {
    // One head of 4: pairs (0, 2), (1, 3) split; (0, 1), (2, 3) interleaved.
    const float cos[2] = {0.0f, 1.0f}, sin[2] = {1.0f, 0.0f};
    std::vector<float> x = {1.0f, 2.0f, 3.0f, 4.0f};
    ref::rope(x.data(), 1, 4, cos, sin, false);
    EXPECT_EQ(x, (std::vector<float>{-3.0f, 2.0f, 1.0f, 4.0f}));
    x = {1.0f, 2.0f, 3.0f, 4.0f};
    ref::rope(x.data(), 1, 4, cos, sin, true);
    EXPECT_EQ(x, (std::vector<float>{-2.0f, 1.0f, 3.0f, 4.0f}));
}

TEST(Rope, DispatchedMatchesReference) {
    test::for_each_isa([&](const char*) {
        std::mt19937 rng(14);
        for (int64_t head_dim : {2, 6, 18, 32, 64, 80, 128, 130}) {
            for (int64_t n_heads : {1, 3}) {
                const auto angles = test::random_floats(rng, head_dim / 2, -3.0f, 3.0f);
                std::vector<float> cos(angles.size()), sin(angles.size());
                for (size_t i = 0; i < angles.size(); ++i) {
                    cos[i] = std::cos(angles[i]);
                    sin[i] = std::sin(angles[i]);
                }
                for (bool interleaved : {false, true}) {
                    auto x = test::random_floats(rng, n_heads * head_dim, -4.0f, 4.0f);
                    auto want = x;
                    rope(x.data(), n_heads, head_dim, cos.data(), sin.data(), interleaved);
                    ref::rope(want.data(), n_heads, head_dim, cos.data(), sin.data(), interleaved);
                    test::expect_close(x, want, 1e-6f, "rope");
                }
            }
        }
    });
}

// Floats that exercise every rounding case of f32 -> f16: every half value,
// the midpoints between neighbours, overflow, subnormals, NaN, infinities.
std::vector<float> conversion_cases() {
    std::vector<float> v;
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const float f = f16_to_f32(static_cast<uint16_t>(h));
        v.push_back(f);
        if (std::isfinite(f)) {
            v.push_back(std::nextafter(f, INFINITY));
            v.push_back(std::nextafter(f, -INFINITY));
            // Midpoint to the next half up (exact in f32), rounds to even.
            const float up = f16_to_f32(static_cast<uint16_t>(h + 1));
            if (std::isfinite(up) && (h & 0x7fff) != 0x7bff) v.push_back(f + (up - f) / 2);
        }
    }
    for (float f : {65504.0f, 65519.99f, 65520.0f, 65536.0f, 1e10f, 1e-10f, 1e-8f, 5.9604645e-8f,
                    2.9802322e-8f, 2.9802326e-8f, 0.0f, -0.0f}) {
        v.push_back(f);
        v.push_back(-f);
    }
    v.push_back(std::bit_cast<float>(0x7fc12345u));  // quiet NaN with payload
    v.push_back(std::bit_cast<float>(0xff812345u));  // signalling NaN
    v.push_back(INFINITY);
    v.push_back(-INFINITY);
    return v;
}

TEST(Convert, F32ToF16IsBitExact) {
    test::for_each_isa([&](const char*) {
        const auto cases = conversion_cases();
        // Several lengths and offsets so the vector bodies and tails all see cases.
        for (int64_t offset : {0, 3}) {
            const int64_t n = static_cast<int64_t>(cases.size()) - offset;
            std::vector<uint16_t> y(static_cast<size_t>(n)), want(y.size());
            f32_to_f16_row(cases.data() + offset, n, y.data());
            ref::f32_to_f16_row(cases.data() + offset, n, want.data());
            for (int64_t i = 0; i < n; ++i) {
                ASSERT_EQ(y[i], want[i])
                    << "float bits " << std::hex << std::bit_cast<uint32_t>(cases[offset + i]);
                ASSERT_EQ(want[i], f32_to_f16(cases[offset + i]));
            }
        }
    });
}

TEST(Convert, F16ToF32IsBitExactForAllHalves) {
    test::for_each_isa([&](const char*) {
        std::vector<uint16_t> all(0x10000);
        for (uint32_t h = 0; h < 0x10000; ++h) all[h] = static_cast<uint16_t>(h);
        for (int64_t offset : {0, 5}) {
            const int64_t n = static_cast<int64_t>(all.size()) - offset;
            std::vector<float> y(static_cast<size_t>(n)), want(y.size());
            f16_to_f32_row(all.data() + offset, n, y.data());
            ref::f16_to_f32_row(all.data() + offset, n, want.data());
            for (int64_t i = 0; i < n; ++i) {
                ASSERT_EQ(std::bit_cast<uint32_t>(y[i]), std::bit_cast<uint32_t>(want[i]))
                    << "half bits " << std::hex << all[offset + i];
            }
        }
    });
}

TEST(Convert, RoundToF16IsBitExact) {
    test::for_each_isa([&](const char*) {
        const auto cases = conversion_cases();
        for (int64_t n : {int64_t{1}, int64_t{7}, int64_t{9}, static_cast<int64_t>(cases.size())}) {
            std::vector<float> x(cases.begin(), cases.begin() + n), want = x;
            round_to_f16_row(x.data(), n);
            ref::round_to_f16_row(want.data(), n);
            for (int64_t i = 0; i < n; ++i) {
                ASSERT_EQ(std::bit_cast<uint32_t>(x[i]), std::bit_cast<uint32_t>(want[i]))
                    << "float bits " << std::hex << std::bit_cast<uint32_t>(cases[i]);
                ASSERT_EQ(std::bit_cast<uint32_t>(want[i]),
                          std::bit_cast<uint32_t>(round_to_f16(cases[i])));
            }
        }
    });
}

TEST(Convert, ShortRowsTouchOnlyTheirElements) {
    test::for_each_isa([&](const char*) {
        for (int64_t n = 0; n <= 17; ++n) {
            std::vector<float> x(20, 1.5f);
            std::vector<uint16_t> h(20, 0xabcd);
            f32_to_f16_row(x.data(), n, h.data());
            for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(h[i], i < n ? 0x3e00 : 0xabcd);
            std::vector<float> back(20, -7.0f);
            f16_to_f32_row(h.data(), n, back.data());
            for (int64_t i = 0; i < 20; ++i) EXPECT_EQ(back[i], i < n ? 1.5f : -7.0f);
        }
    });
}

}  // namespace
}  // namespace anelm::kernels
