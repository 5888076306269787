#include "base/half.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace anelm {
namespace {

TEST(Half, ExactValuesRoundTrip) {
    for (uint32_t h = 0; h < 0x10000; ++h) {
        const auto bits = static_cast<uint16_t>(h);
        const float f = f16_to_f32(bits);
        if (std::isnan(f)) {
            EXPECT_TRUE(std::isnan(f16_to_f32(f32_to_f16(f))));
            continue;
        }
        EXPECT_EQ(f32_to_f16(f), bits) << "half bits " << h;
    }
}

TEST(Half, KnownValues) {
    EXPECT_EQ(f32_to_f16(1.0f), 0x3c00);
    EXPECT_EQ(f32_to_f16(-2.0f), 0xc000);
    EXPECT_EQ(f32_to_f16(65504.0f), 0x7bff);
    EXPECT_EQ(f16_to_f32(0x0001), std::ldexp(1.0f, -24));  // smallest subnormal
}

TEST(Half, OverflowBecomesInfinity) {
    EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);  // rounds down to the largest finite
    EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // ties to even: infinity
    EXPECT_EQ(f32_to_f16(1e6f), 0x7c00);
    EXPECT_EQ(f32_to_f16(-1e6f), 0xfc00);
    EXPECT_TRUE(std::isinf(round_to_f16(70000.0f)));
}

TEST(Half, RoundsToNearestEven) {
    // 1 + 2^-11 lies halfway between 1 and the next half (1 + 2^-10): goes to 1.
    EXPECT_EQ(f32_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3c00);
    // 1 + 3 * 2^-11 lies halfway between 1 + 2^-10 and 1 + 2^-9: goes to the even one.
    EXPECT_EQ(f32_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3c02);
    // Subnormal halfway: 1.5 * 2^-24 rounds to 2 * 2^-24.
    EXPECT_EQ(f32_to_f16(1.5f * std::ldexp(1.0f, -24)), 0x0002);
    EXPECT_EQ(f32_to_f16(0.5f * std::ldexp(1.0f, -24)), 0x0000);
}

TEST(BFloat16, RoundsToNearestEven) {
    EXPECT_EQ(f32_to_bf16(1.0f), 0x3f80);
    EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
    EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f808000u)), 0x3f80);  // tie, even stays
    EXPECT_EQ(f32_to_bf16(std::bit_cast<float>(0x3f818000u)), 0x3f82);  // tie, odd rounds up
    EXPECT_TRUE(std::isnan(bf16_to_f32(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()))));
}

}  // namespace
}  // namespace anelm
