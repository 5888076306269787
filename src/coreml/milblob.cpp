#include "coreml/milblob.h"

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>

#include "base/bit_packing.h"
#include "base/error.h"

namespace anelm::coreml {

static_assert(std::endian::native == std::endian::little, "MILBlob fields are little-endian");

namespace {

constexpr uint64_t header_size = 64;
constexpr uint64_t record_size = 64;

// The 64-byte header and per-blob metadata record, as laid out in the file.
struct Header {
    uint32_t count;
    uint32_t version;
    uint64_t reserved[7];
};

struct Record {
    uint32_t sentinel;
    uint32_t dtype;
    uint64_t size_bytes;
    uint64_t data_offset;
    uint64_t padding_bits;
    uint64_t reserved[4];
};

static_assert(sizeof(Header) == header_size && sizeof(Record) == record_size);

constexpr uint64_t align_up(uint64_t x) {
    return (x + blob_alignment - 1) / blob_alignment * blob_alignment;
}

bool is_sub_byte(BlobDType dtype) {
    return blob_dtype_bits(dtype) < 8;
}

}  // namespace

bool blob_dtype_known(uint32_t code) {
    return code >= 1 && code <= 17;
}

int blob_dtype_bits(BlobDType dtype) {
    switch (dtype) {
        case BlobDType::u1:
            return 1;
        case BlobDType::u2:
            return 2;
        case BlobDType::u3:
            return 3;
        case BlobDType::i4:
        case BlobDType::u4:
            return 4;
        case BlobDType::u6:
            return 6;
        case BlobDType::u8:
        case BlobDType::i8:
        case BlobDType::f8e4m3fn:
        case BlobDType::f8e5m2:
            return 8;
        case BlobDType::f16:
        case BlobDType::bf16:
        case BlobDType::i16:
        case BlobDType::u16:
            return 16;
        case BlobDType::f32:
        case BlobDType::i32:
        case BlobDType::u32:
            return 32;
    }
    fail("MILBlob: unknown data type code {}", static_cast<uint32_t>(dtype));
}

std::string_view blob_dtype_name(BlobDType dtype) {
    static constexpr std::string_view names[] = {
        "?",     "fp16",  "fp32",  "uint8", "int8",  "bf16",  "int16",  "uint16",    "int4",
        "uint1", "uint2", "uint4", "uint3", "uint6", "int32", "uint32", "fp8e4m3fn", "fp8e5m2"};
    const auto code = static_cast<uint32_t>(dtype);
    return blob_dtype_known(code) ? names[code] : names[0];
}

uint64_t blob_payload_bytes(BlobDType dtype, uint64_t n) {
    return (n * blob_dtype_bits(dtype) + 7) / 8;
}

uint64_t Blob::numel() const {
    return (data.size() * 8 - padding_bits) / blob_dtype_bits(dtype);
}

BlobFile::BlobFile(const std::string& path, BlobMemory memory)
    : file_(path), payloads_(file_.data()) {
    if (memory == BlobMemory::private_copy && file_.size() > 0) {
        copy_ = std::make_unique<PageBuffer>(file_.size());
        std::memcpy(copy_->data(), file_.data(), file_.size());
        file_.release(file_.bytes());
        payloads_ = copy_->data();
    }
    if (file_.size() < header_size)
        fail("{}: MILBlob header truncated: {} bytes, expected at least {}", path, file_.size(),
             header_size);
    Header h;
    std::memcpy(&h, payloads_, sizeof h);
    if (h.version != blob_version)
        fail("{}: MILBlob version {} at offset 4, expected {}", path, h.version, blob_version);
    count_ = h.count;
}

Blob BlobFile::blob(uint64_t offset) const {
    const std::string& p = path();
    if (offset < header_size || offset % blob_alignment != 0)
        fail("{}: blob offset {} is not a 64-byte aligned record offset past the header", p,
             offset);
    if (offset > file_.size() || file_.size() - offset < record_size)
        fail("{}: blob record at offset {} runs past the end of the file ({} bytes)", p, offset,
             file_.size());
    Record r;
    std::memcpy(&r, payloads_ + offset, sizeof r);
    if (r.sentinel != blob_sentinel)
        fail("{}: blob record at offset {}: sentinel 0x{:08x}, expected 0x{:08x}", p, offset,
             r.sentinel, blob_sentinel);
    if (!blob_dtype_known(r.dtype))
        fail("{}: blob record at offset {}: unknown data type code {}", p, offset, r.dtype);
    Blob b;
    b.offset = offset;
    b.dtype = static_cast<BlobDType>(r.dtype);
    b.data_offset = r.data_offset;
    b.padding_bits = r.padding_bits;
    if (r.data_offset < offset + record_size || r.data_offset > file_.size() ||
        file_.size() - r.data_offset < r.size_bytes)
        fail(
            "{}: blob record at offset {}: payload of {} bytes at offset {} is outside the file "
            "({} bytes)",
            p, offset, r.size_bytes, r.data_offset, file_.size());
    const int bits = blob_dtype_bits(b.dtype);
    if (is_sub_byte(b.dtype)) {
        const bool padding_ok = r.padding_bits < 8 && r.padding_bits <= r.size_bytes * 8 &&
                                (r.size_bytes * 8 - r.padding_bits) % bits == 0;
        if (!padding_ok)
            fail("{}: blob record at offset {}: padding of {} bits does not fit {} bytes of {}", p,
                 offset, r.padding_bits, r.size_bytes, blob_dtype_name(b.dtype));
    } else if (r.padding_bits != 0 || r.size_bytes % (bits / 8) != 0) {
        fail(
            "{}: blob record at offset {}: {} bytes with {} padding bits is not a whole number "
            "of {}",
            p, offset, r.size_bytes, r.padding_bits, blob_dtype_name(b.dtype));
    }
    b.data = {reinterpret_cast<const uint8_t*>(payloads_) + r.data_offset, r.size_bytes};
    return b;
}

std::vector<Blob> BlobFile::blobs() const {
    std::vector<Blob> out;
    // The header's count is not trusted: each blob takes a record in the file.
    out.reserve(std::min<uint64_t>(count_, (file_.size() - header_size) / record_size));
    uint64_t offset = header_size;
    for (uint32_t i = 0; i < count_; ++i) {
        if (offset >= file_.size())
            fail("{}: header counts {} blobs but the file ends after {}", path(), count_, i);
        out.push_back(blob(offset));
        offset = align_up(out.back().data_offset + out.back().data.size());
    }
    return out;
}

std::vector<uint8_t> blob_codes(const Blob& blob) {
    if (!is_sub_byte(blob.dtype)) return {blob.data.begin(), blob.data.end()};
    std::vector<uint8_t> codes(blob.numel());
    unpack_codes(blob.data.data(), static_cast<int64_t>(codes.size()), blob_dtype_bits(blob.dtype),
                 codes.data());
    return codes;
}

BlobWriter::BlobWriter(const std::string& path) : path_(path) {
    file_ = std::fopen(path.c_str(), "wb");
    if (!file_) fail("{}: cannot create: {}", path, std::strerror(errno));
    const Header h{0, blob_version, {}};
    write(&h, sizeof h);
}

BlobWriter::~BlobWriter() {
    if (file_) std::fclose(file_);
}

void BlobWriter::write(const void* data, size_t n) {
    if (!file_) fail("{}: written after finish()", path_);
    if (n != 0 && std::fwrite(data, 1, n, file_) != n)
        fail("{}: cannot write: {}", path_, std::strerror(errno));
    end_ += n;
}

uint64_t BlobWriter::add(BlobDType dtype, uint64_t n, std::span<const uint8_t> data) {
    if (!blob_dtype_known(static_cast<uint32_t>(dtype)))
        fail("{}: unknown blob data type code {}", path_, static_cast<uint32_t>(dtype));
    if (data.size() != blob_payload_bytes(dtype, n))
        fail("{}: blob {} of {} {} elements has {} bytes, expected {}", path_, count_, n,
             blob_dtype_name(dtype), data.size(), blob_payload_bytes(dtype, n));
    static constexpr uint8_t zeros[blob_alignment] = {};
    write(zeros, align_up(end_) - end_);
    const uint64_t offset = end_;
    const Record r{blob_sentinel,
                   static_cast<uint32_t>(dtype),
                   data.size(),
                   offset + record_size,
                   data.size() * 8 - n * blob_dtype_bits(dtype),
                   {}};
    write(&r, sizeof r);
    write(data.data(), data.size());
    ++count_;
    return offset;
}

uint64_t BlobWriter::add_codes(BlobDType dtype, std::span<const uint8_t> codes) {
    const int bits = blob_dtype_bits(dtype);
    if (bits > 8)
        fail("{}: blob {}: {} elements are not one byte codes", path_, count_,
             blob_dtype_name(dtype));
    std::vector<uint8_t> packed(blob_payload_bytes(dtype, codes.size()));
    for (size_t i = 0; i < codes.size(); ++i)
        if (codes[i] >> bits)
            fail("{}: code {} of blob {} is {}, too large for {}", path_, i, count_, codes[i],
                 blob_dtype_name(dtype));
    pack_codes(codes.data(), static_cast<int64_t>(codes.size()), bits, packed.data());
    return add(dtype, codes.size(), packed);
}

void BlobWriter::finish() {
    if (!file_) return;
    const bool ok =
        std::fseek(file_, 0, SEEK_SET) == 0 && std::fwrite(&count_, sizeof count_, 1, file_) == 1;
    const bool closed = std::fclose(file_) == 0;
    file_ = nullptr;
    if (!ok || !closed) fail("{}: cannot write: {}", path_, std::strerror(errno));
}

}  // namespace anelm::coreml
