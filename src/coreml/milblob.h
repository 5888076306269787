// MILBlob storage, version 2: the weight.bin file of an ML Program package.
// A 64-byte header (blob count, version 2), then per blob a 64-byte metadata
// record (sentinel 0xDEADBEEF, dtype, payload size and absolute offset, padding
// bits) followed by its payload; records and payloads start 64-byte aligned.
// Sub-byte payloads are packed LSB-first as in base/bit_packing.h.
#pragma once

#include <cstdint>
#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/mapped_file.h"
#include "base/page_buffer.h"

namespace anelm::coreml {

// MILBlob's BlobDataType codes.
enum class BlobDType : uint32_t {
    f16 = 1,
    f32 = 2,
    u8 = 3,
    i8 = 4,
    bf16 = 5,
    i16 = 6,
    u16 = 7,
    i4 = 8,
    u1 = 9,
    u2 = 10,
    u4 = 11,
    u3 = 12,
    u6 = 13,
    i32 = 14,
    u32 = 15,
    f8e4m3fn = 16,
    f8e5m2 = 17,
};

constexpr uint64_t blob_alignment = 64;
constexpr uint32_t blob_sentinel = 0xDEADBEEF;
constexpr uint32_t blob_version = 2;

bool blob_dtype_known(uint32_t code);
int blob_dtype_bits(BlobDType dtype);  // element width: 1..32
std::string_view blob_dtype_name(BlobDType dtype);

// Bytes that hold n elements of the type; sub-byte types round up.
uint64_t blob_payload_bytes(BlobDType dtype, uint64_t n);

// One blob as its metadata record describes it, with its payload mapped.
struct Blob {
    uint64_t offset = 0;  // of the metadata record: what BlobFileValue.offset holds
    BlobDType dtype = BlobDType::f16;
    uint64_t data_offset = 0;   // absolute file offset of the payload
    uint64_t padding_bits = 0;  // unused high bits of the last byte (sub-byte types)
    std::span<const uint8_t> data;

    uint64_t numel() const;
};

// Where a weight.bin's payloads are read: the file's mapping, or a private
// copy in huge pages (base/page_buffer.h) for weights streamed every token.
enum class BlobMemory { mapped, private_copy };

// A weight.bin opened for reading; every accessor checks what it reads and
// throws an Error naming the file and offset.
class BlobFile {
public:
    explicit BlobFile(const std::string& path, BlobMemory memory = BlobMemory::mapped);

    const std::string& path() const { return file_.path(); }
    uint32_t count() const { return count_; }
    uint64_t size() const { return file_.size(); }

    // The blob whose metadata record is at `offset`.
    Blob blob(uint64_t offset) const;
    // Every blob, walking the records from the header as Core ML lays them out.
    std::vector<Blob> blobs() const;

private:
    MappedFile file_;
    std::unique_ptr<PageBuffer> copy_;  // BlobMemory::private_copy
    const std::byte* payloads_;         // the file's bytes: the mapping or the copy
    uint32_t count_ = 0;
};

// Sub-byte elements (u1..u6, i4) as one byte each, in the low bits; other types
// are returned as their raw payload bytes.
std::vector<uint8_t> blob_codes(const Blob& blob);

// Writes a weight.bin front to back; the header's count is set by finish().
class BlobWriter {
public:
    explicit BlobWriter(const std::string& path);
    ~BlobWriter();
    BlobWriter(const BlobWriter&) = delete;
    BlobWriter& operator=(const BlobWriter&) = delete;

    // Appends n elements whose payload is `data` (already packed for sub-byte
    // types) and returns the record's offset, for BlobFileValue.offset.
    uint64_t add(BlobDType dtype, uint64_t n, std::span<const uint8_t> data);
    // One code per byte (each < 2^bits) of a type of at most 8 bits, packed for
    // the sub-byte types.
    uint64_t add_codes(BlobDType dtype, std::span<const uint8_t> codes);

    uint32_t count() const { return count_; }
    void finish();  // writes the count and closes; throws on I/O errors

private:
    void write(const void* data, size_t n);

    std::string path_;
    std::FILE* file_ = nullptr;
    uint64_t end_ = 0;
    uint32_t count_ = 0;
};

}  // namespace anelm::coreml
