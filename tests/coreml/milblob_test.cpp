// MILBlob v2: the encodings coremltools writes, every element width round
// trip, the file layout, and one-line errors for damaged files.
#include "coreml/milblob.h"

#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "io/io_test_util.h"

namespace anelm::coreml {
namespace {

using test::expect_error;
using test::read_file;
using test::write_file;

class MilBlobTest : public test::ScratchDir {
protected:
    // Writes one blob of codes and returns its payload bytes as read back.
    std::vector<uint8_t> one_blob(BlobDType dtype, std::vector<uint8_t> codes,
                                  Blob* out = nullptr) {
        const std::string file = path("weight.bin");
        {
            BlobWriter w(file);
            EXPECT_EQ(w.add_codes(dtype, codes), 64u);
            w.finish();
        }
        reader_ = std::make_unique<BlobFile>(file);
        const Blob b = reader_->blob(64);
        if (out) *out = b;
        return {b.data.begin(), b.data.end()};
    }

    std::unique_ptr<BlobFile> reader_;
};

// Encodings observed in files coremltools wrote (format reference, section 4.4).
TEST_F(MilBlobTest, SubByteEncodingsMatchCoreMLTools) {
    Blob b;
    EXPECT_EQ(one_blob(BlobDType::u4, {1, 2, 3, 4, 5}, &b),
              (std::vector<uint8_t>{0x21, 0x43, 0x05}));
    EXPECT_EQ(b.padding_bits, 4u);
    EXPECT_EQ(one_blob(BlobDType::u6, {1, 63, 2, 3, 4}, &b),
              (std::vector<uint8_t>{0xC1, 0x2F, 0x0C, 0x04}));
    EXPECT_EQ(b.padding_bits, 2u);
    EXPECT_EQ(one_blob(BlobDType::i4, {0xF, 7, 0x8}, &b), (std::vector<uint8_t>{0x7F, 0x08}));
    EXPECT_EQ(b.padding_bits, 4u);
    EXPECT_EQ(one_blob(BlobDType::u2, {3, 0, 1}, &b), (std::vector<uint8_t>{0x13}));
    EXPECT_EQ(b.padding_bits, 2u);
    EXPECT_EQ(b.numel(), 3u);
}

TEST_F(MilBlobTest, PrivateCopyKeepsWhatTheFileHeldWhenOpened) {
    const std::string file = path("weight.bin");
    const auto write = [&](std::vector<uint8_t> codes) {
        BlobWriter w(file);
        EXPECT_EQ(w.add_codes(BlobDType::u4, codes), 64u);
        w.finish();
    };
    write({1, 2, 3, 4, 5});
    const BlobFile copy(file, BlobMemory::private_copy);
    write({9, 8, 7, 6, 5});  // the file's pages change; the copy does not
    EXPECT_EQ(blob_codes(copy.blob(64)), (std::vector<uint8_t>{1, 2, 3, 4, 5}));
    EXPECT_EQ(blob_codes(BlobFile(file).blob(64)), (std::vector<uint8_t>{9, 8, 7, 6, 5}));
}

TEST_F(MilBlobTest, EveryWidthRoundTrips) {
    std::mt19937 rng(7);
    const std::string file = path("weight.bin");
    struct Written {
        BlobDType dtype;
        uint64_t n;
        std::vector<uint8_t> payload;  // codes for <= 8 bits, raw bytes otherwise
        uint64_t offset;
    };
    std::vector<Written> written;
    {
        BlobWriter w(file);
        for (uint32_t code = 1; code <= 17; ++code) {
            const auto dtype = static_cast<BlobDType>(code);
            const int bits = blob_dtype_bits(dtype);
            for (uint64_t n : {1, 3, 7, 13, 64, 101}) {
                Written x{dtype, n, {}, 0};
                if (bits <= 8) {
                    for (uint64_t i = 0; i < n; ++i)
                        x.payload.push_back(rng() & ((1u << bits) - 1));
                    x.offset = w.add_codes(dtype, x.payload);
                } else {
                    for (uint64_t i = 0; i < n * bits / 8; ++i) x.payload.push_back(rng());
                    x.offset = w.add(dtype, n, x.payload);
                }
                written.push_back(std::move(x));
            }
        }
        EXPECT_EQ(w.count(), written.size());
        w.finish();
    }
    const BlobFile r(file);
    ASSERT_EQ(r.count(), written.size());
    const std::vector<Blob> blobs = r.blobs();
    ASSERT_EQ(blobs.size(), written.size());
    for (size_t i = 0; i < written.size(); ++i) {
        const Written& x = written[i];
        SCOPED_TRACE(testing::Message() << blob_dtype_name(x.dtype) << " n=" << x.n);
        EXPECT_EQ(blobs[i].offset, x.offset);
        EXPECT_EQ(blobs[i].offset % 64, 0u);
        EXPECT_EQ(blobs[i].data_offset, x.offset + 64);
        EXPECT_EQ(blobs[i].dtype, x.dtype);
        EXPECT_EQ(blobs[i].numel(), x.n);
        EXPECT_EQ(blobs[i].data.size(), blob_payload_bytes(x.dtype, x.n));
        EXPECT_EQ(blob_codes(blobs[i]), x.payload);
    }
    // No padding after the last payload, as coremltools writes it.
    EXPECT_EQ(r.size(), blobs.back().data_offset + blobs.back().data.size());
}

TEST_F(MilBlobTest, HeaderAndRecordLayout) {
    const std::string file = path("weight.bin");
    {
        BlobWriter w(file);
        const std::vector<uint8_t> half_bytes(20 * 2, 0x3c);
        EXPECT_EQ(w.add(BlobDType::f16, 20, half_bytes), 64u);
        EXPECT_EQ(w.add_codes(BlobDType::u3, std::vector<uint8_t>(5, 7)), 192u);  // 128 + 40 → 192
        w.finish();
    }
    const std::string bytes = read_file(file);
    ASSERT_EQ(bytes.size(), 192u + 64 + 2);
    auto u32 = [&](size_t at) {
        uint32_t v;
        std::memcpy(&v, bytes.data() + at, 4);
        return v;
    };
    auto u64 = [&](size_t at) {
        uint64_t v;
        std::memcpy(&v, bytes.data() + at, 8);
        return v;
    };
    EXPECT_EQ(u32(0), 2u);  // count
    EXPECT_EQ(u32(4), 2u);  // version
    for (size_t at = 8; at < 64; ++at) EXPECT_EQ(bytes[at], 0) << at;
    EXPECT_EQ(u32(64), 0xDEADBEEFu);
    EXPECT_EQ(u32(68), 1u);
    EXPECT_EQ(u64(72), 40u);
    EXPECT_EQ(u64(80), 128u);
    EXPECT_EQ(u64(88), 0u);
    for (size_t at = 168; at < 192; ++at) EXPECT_EQ(bytes[at], 0) << at;  // gap
    EXPECT_EQ(u32(196), 12u);                                             // uint3
    EXPECT_EQ(u64(200), 2u);                                              // 15 bits in 2 bytes
    EXPECT_EQ(u64(216), 1u);                                              // 1 padding bit
}

TEST_F(MilBlobTest, DamagedFilesGiveOneLineErrors) {
    const std::string file = path("weight.bin");
    {
        BlobWriter w(file);
        w.add_codes(BlobDType::u8, std::vector<uint8_t>(100, 1));
        w.add_codes(BlobDType::u4, std::vector<uint8_t>(10, 3));
        w.finish();
    }
    const std::string good = read_file(file);
    auto damaged = [&](size_t at, std::string_view bytes) {
        std::string s = good;
        s.replace(at, bytes.size(), bytes);
        write_file(file, s);
    };

    write_file(file, good.substr(0, 10));
    expect_error([&] { BlobFile f(file); }, {file, "header truncated", "10 bytes"});

    damaged(4, std::string("\x01\0\0\0", 4));
    expect_error([&] { BlobFile f(file); }, {file, "version 1", "offset 4"});

    damaged(64, "XXXX");
    expect_error([&] { BlobFile(file).blob(64); }, {file, "offset 64", "sentinel"});

    damaged(256 + 4, std::string("\x63\0\0\0", 4));
    expect_error([&] { BlobFile(file).blobs(); },
                 {file, "offset 256", "unknown data type code 99"});

    damaged(256 + 24, std::string("\x03\0\0\0", 4));  // odd padding for 4-bit elements
    expect_error([&] { BlobFile(file).blob(256); }, {file, "offset 256", "padding of 3 bits"});

    write_file(file, good.substr(0, good.size() - 2));
    expect_error([&] { BlobFile(file).blob(256); }, {file, "offset 256", "outside the file"});

    write_file(file, good.substr(0, 200));
    expect_error([&] { BlobFile(file).blob(256); }, {file, "offset 256", "past the end"});

    damaged(0, std::string("\x03\0\0\0", 4));  // counts a third blob that is not there
    expect_error([&] { BlobFile(file).blobs(); }, {file, "3 blobs"});

    write_file(file, good);
    expect_error([&] { BlobFile(file).blob(100); }, {file, "offset 100"});
}

TEST_F(MilBlobTest, HeaderCountIsNotTrusted) {
    // A bare header claiming 2^32 - 1 blobs: refused without reserving room for them.
    const std::string file = path("weight.bin");
    std::string header(64, '\0');
    header.replace(0, 8, std::string("\xff\xff\xff\xff\x02\0\0\0", 8));
    write_file(file, header);
    expect_error([&] { BlobFile(file).blobs(); },
                 {file, "counts 4294967295 blobs but the file ends after 0"});
}

TEST_F(MilBlobTest, WriterRefusesMismatchedPayloads) {
    BlobWriter w(path("weight.bin"));
    const std::vector<uint8_t> three(3);
    expect_error([&] { w.add(BlobDType::f16, 2, three); }, {"weight.bin", "3 bytes, expected 4"});
    expect_error([&] { w.add_codes(BlobDType::u2, std::vector<uint8_t>{4}); },
                 {"weight.bin", "too large for uint2"});
}

}  // namespace
}  // namespace anelm::coreml
