#include "anemll/per_layer_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "base/mapped_file.h"
#include "io/tensor_values.h"

namespace anelm::anemll {

namespace {

constexpr char magic[8] = {'A', 'N', 'E', 'L', 'M', 'P', 'L', 'T'};
constexpr uint32_t version = 1;
constexpr size_t header_bytes = 8 + 4 + 4 + 8 + 8 + 8;

size_t row_bytes(int bits, int64_t cols, int64_t group) {
    const auto c = static_cast<size_t>(cols);
    return bits == 16 ? 2 * c : c + 2 * (c / static_cast<size_t>(group));
}

template <typename T>
void put(std::vector<char>& out, T v) {
    const auto* p = reinterpret_cast<const char*>(&v);
    out.insert(out.end(), p, p + sizeof v);
}

template <typename T>
T get(const std::byte* p) {
    T v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// One row at 8 bits: codes, then a scale per group.
void quantize_row(std::span<const float> row, int64_t group, std::vector<char>& out) {
    const size_t n_groups = row.size() / static_cast<size_t>(group);
    std::vector<uint16_t> scales(n_groups);
    std::vector<int8_t> codes(row.size());
    for (size_t g = 0; g < n_groups; ++g) {
        const auto part = row.subspan(g * static_cast<size_t>(group), static_cast<size_t>(group));
        float peak = 0;
        for (float v : part) peak = std::max(peak, std::abs(v));
        // The scale is stored in half precision: quantize against that value.
        const float scale = round_to_f16(peak / 127.0f);
        scales[g] = f32_to_f16(scale);
        for (size_t i = 0; i < part.size(); ++i) {
            const float q = scale > 0 ? std::nearbyint(part[i] / scale) : 0.0f;
            codes[g * static_cast<size_t>(group) + i] =
                static_cast<int8_t>(std::clamp(q, -127.0f, 127.0f));
        }
    }
    const auto* c = reinterpret_cast<const char*>(codes.data());
    out.insert(out.end(), c, c + codes.size());
    const auto* s = reinterpret_cast<const char*>(scales.data());
    out.insert(out.end(), s, s + 2 * scales.size());
}

}  // namespace

void write_per_layer_table(const std::string& path, const TensorView& table, int bits,
                           int64_t group, const ProgressFn& progress) {
    if (table.shape.size() != 2) fail("{}: the per-layer table is not a matrix", path);
    const int64_t rows = table.shape[0], cols = table.shape[1];
    if (bits != 16 && bits != 8) fail("{}: {} bits, expected 16 or 8", path, bits);
    if (group < 1 || cols % group != 0)
        fail("{}: groups of {} do not divide {} columns", path, group, cols);
    std::ofstream out(path, std::ios::binary);
    if (!out) fail("{}: cannot write", path);
    std::vector<char> buf;
    buf.insert(buf.end(), magic, magic + 8);
    put(buf, version);
    put(buf, static_cast<uint32_t>(bits));
    put(buf, static_cast<uint64_t>(rows));
    put(buf, static_cast<uint64_t>(cols));
    put(buf, static_cast<uint64_t>(group));
    std::vector<float> row(static_cast<size_t>(cols));
    for (int64_t r = 0; r < rows; ++r) {
        read_f32(table, r * cols, cols, row.data());
        if (bits == 16) {
            for (float v : row) put(buf, f32_to_f16(v));
        } else {
            quantize_row(row, group, buf);
        }
        if (buf.size() >= (size_t{1} << 24) || r + 1 == rows) {
            out.write(buf.data(), static_cast<std::streamsize>(buf.size()));
            buf.clear();
        }
        if (progress && (r % 4096 == 0 || r + 1 == rows)) progress(r + 1, rows);
    }
    out.close();
    if (!out) fail("{}: cannot write", path);
}

PerLayerTable::PerLayerTable(const std::string& path) : file_(std::make_unique<MappedFile>(path)) {
    const std::byte* p = file_->data();
    if (file_->size() < header_bytes || std::memcmp(p, magic, 8) != 0)
        fail("{}: not a per-layer embedding table (no ANELMPLT header)", path);
    if (const auto v = get<uint32_t>(p + 8); v != version)
        fail("{}: field version: {}, expected {}", path, v, version);
    bits_ = static_cast<int>(get<uint32_t>(p + 12));
    const auto rows = get<uint64_t>(p + 16), cols = get<uint64_t>(p + 24),
               group = get<uint64_t>(p + 32);
    if (bits_ != 16 && bits_ != 8) fail("{}: field bits: {}, expected 16 or 8", path, bits_);
    constexpr uint64_t limit = uint64_t{1} << 32;
    if (rows == 0 || rows >= limit || cols == 0 || cols >= limit || group == 0 || cols % group != 0)
        fail("{}: fields rows/cols/group: {}/{}/{} do not describe a table", path, rows, cols,
             group);
    rows_ = static_cast<int64_t>(rows);
    cols_ = static_cast<int64_t>(cols);
    group_ = static_cast<int64_t>(group);
    row_bytes_ = row_bytes(bits_, cols_, group_);
    const size_t body = file_->size() - header_bytes;
    if (body % row_bytes_ != 0 || body / row_bytes_ != rows)
        fail("{}: {} bytes of rows, expected {} rows of {}", path, body, rows, row_bytes_);
    rows_begin_ = p + header_bytes;
}

PerLayerTable::~PerLayerTable() = default;

void PerLayerTable::lookup(std::span<const int32_t> ids, std::span<float> out) const {
    const auto cols = static_cast<size_t>(cols_);
    if (out.size() != ids.size() * cols)
        fail("{}: {} values for {} rows of {}", file_->path(), out.size(), ids.size(), cols);
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] < 0 || ids[i] >= rows_)
            fail("{}: token {} outside the table's {} rows", file_->path(), ids[i], rows_);
        const std::byte* row = rows_begin_ + static_cast<size_t>(ids[i]) * row_bytes_;
        float* dst = out.data() + i * cols;
        if (bits_ == 16) {
            for (size_t c = 0; c < cols; ++c) dst[c] = f16_to_f32(get<uint16_t>(row + 2 * c));
            continue;
        }
        const std::byte* scales = row + cols;
        for (size_t c = 0; c < cols; ++c) {
            const float scale =
                f16_to_f32(get<uint16_t>(scales + 2 * (c / static_cast<size_t>(group_))));
            dst[c] = static_cast<float>(static_cast<int8_t>(row[c])) * scale;
        }
    }
}

}  // namespace anelm::anemll
