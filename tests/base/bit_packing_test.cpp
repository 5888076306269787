#include "base/bit_packing.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

namespace anelm {
namespace {

std::vector<uint8_t> pack(const std::vector<uint8_t>& codes, int nbits) {
    std::vector<uint8_t> out(
        static_cast<size_t>(packed_bytes(static_cast<int64_t>(codes.size()), nbits)), 0);
    pack_codes(codes.data(), static_cast<int64_t>(codes.size()), nbits, out.data());
    return out;
}

// The encodings coremltools writes (docs/research/coreml-format.md, section 4.4).
TEST(BitPacking, MatchesCoreMLBlobs) {
    EXPECT_EQ(pack({1, 2, 3, 4, 5}, 4), (std::vector<uint8_t>{0x21, 0x43, 0x05}));
    EXPECT_EQ(pack({1, 63, 2, 3, 4}, 6), (std::vector<uint8_t>{0xc1, 0x2f, 0x0c, 0x04}));
    EXPECT_EQ(pack({3, 0, 1}, 2), (std::vector<uint8_t>{0x13}));
    // int4 [-1, 7, -8] as two's complement nibbles.
    EXPECT_EQ(pack({0xf, 0x7, 0x8}, 4), (std::vector<uint8_t>{0x7f, 0x08}));
    // uint3: element 2 straddles bytes 0 and 1.
    EXPECT_EQ(pack({1, 2, 7, 5}, 3), (std::vector<uint8_t>{0xd1, 0x0b}));
    EXPECT_EQ(pack({1, 0, 1, 1, 0, 0, 0, 1, 1}, 1), (std::vector<uint8_t>{0x8d, 0x01}));
}

TEST(BitPacking, RoundTripsEveryWidthAtAnyOffset) {
    std::mt19937 rng(1);
    for (int nbits = 1; nbits <= 8; ++nbits) {
        for (int64_t n : {1, 7, 8, 9, 31, 100}) {
            std::vector<uint8_t> codes(static_cast<size_t>(n));
            for (auto& c : codes) c = static_cast<uint8_t>(rng() & ((1u << nbits) - 1));
            EXPECT_EQ(packed_bytes(n, nbits), (n * nbits + 7) / 8);
            const auto packed = pack(codes, nbits);
            std::vector<uint8_t> back(codes.size());
            unpack_codes(packed.data(), n, nbits, back.data());
            EXPECT_EQ(back, codes) << nbits << " bits, n " << n;
            // Unused bits of the last byte stay zero.
            if (n * nbits % 8 != 0) {
                EXPECT_EQ(packed.back() >> (n * nbits % 8), 0) << nbits;
            }

            // The same codes written after `first` others land in the same stream.
            const int64_t first = 5;
            std::vector<uint8_t> stream(static_cast<size_t>(packed_bytes(first + n, nbits)), 0);
            pack_codes(codes.data(), n, nbits, stream.data(), first);
            std::fill(back.begin(), back.end(), 0);
            unpack_codes(stream.data(), n, nbits, back.data(), first);
            EXPECT_EQ(back, codes) << nbits << " bits at offset " << first;
        }
    }
}

}  // namespace
}  // namespace anelm
