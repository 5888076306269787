// Private page buffers and dropping a mapped file's pages from the resident
// set: the memory weights are copied into and the file they are copied from.
#include <gtest/gtest.h>

#include <cstdint>
#include <fstream>
#include <vector>

#include "base/mapped_file.h"
#include "base/page_buffer.h"
#include "test_support.h"

namespace anelm {
namespace {

TEST(PageBuffer, StartsOnAHugePageAndIsWritableToTheEnd) {
    const size_t bytes = (size_t{3} << 20) + 123;
    PageBuffer buffer(bytes);
    ASSERT_NE(buffer.data(), nullptr);
    EXPECT_EQ(buffer.size(), bytes);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(buffer.data()) % (size_t{2} << 20), 0u);
    for (size_t i = 0; i < bytes; i += 4096) buffer.data()[i] = std::byte{0x5a};
    buffer.data()[bytes - 1] = std::byte{0xa5};
    EXPECT_EQ(buffer.data()[0], std::byte{0x5a});
    EXPECT_EQ(buffer.data()[bytes - 1], std::byte{0xa5});
}

TEST(PageBuffer, EmptyHasNoMemory) {
    PageBuffer buffer(0);
    EXPECT_EQ(buffer.data(), nullptr);
    EXPECT_EQ(buffer.size(), 0u);
}

std::vector<uint8_t> pattern(size_t n) {
    std::vector<uint8_t> bytes(n);
    for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<uint8_t>(i * 131 + i / 4096);
    return bytes;
}

TEST(MappedFile, ReleasedPagesReadBackFromTheFile) {
    const auto path = test::temp_dir("mapped_file") / "pages.bin";
    const std::vector<uint8_t> expected = pattern(5 * 4096 + 100);
    std::ofstream(path, std::ios::binary)
        .write(reinterpret_cast<const char*>(expected.data()),
               static_cast<std::streamsize>(expected.size()));
    const MappedFile file(path.string());
    ASSERT_EQ(file.size(), expected.size());
    file.release(file.bytes().subspan(1000, 3 * 4096));
    file.release(file.bytes());
    const auto* data = reinterpret_cast<const uint8_t*>(file.data());
    EXPECT_EQ(std::vector<uint8_t>(data, data + file.size()), expected);
}

TEST(MappedFile, ReleaseLeavesMemoryOutsideTheMappingAlone) {
    const auto path = test::temp_dir("mapped_file") / "small.bin";
    std::ofstream(path, std::ios::binary) << "a few bytes";
    const MappedFile file(path.string());
    // Heap memory would be zeroed if its pages were dropped.
    const std::vector<uint8_t> heap = pattern(64 * 4096);
    std::vector<uint8_t> copy = heap;
    file.release(std::as_bytes(std::span(copy)));
    EXPECT_EQ(copy, heap);
}

}  // namespace
}  // namespace anelm
