// Gemma 4's per-layer embedding table, kept beside the packages rather than in
// one: E2B's is 262,144 x 8,960 (4.7 GB in f16), too large for a package the
// ANE keeps, and only one row is read per token. The runner looks rows up and
// passes them to the embeddings package (CoreML-LLM reads an INT8 table the
// same way).
//
// File: "ANELMPLT", then u32 version (1), u32 bits, u64 rows, u64 cols, u64
// group, all little-endian; then each row: 16 bits: cols f16 values; 8 bits:
// cols int8 codes, then one f16 scale per `group` columns (value = code x scale,
// the scale being the group's largest magnitude / 127).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "base/progress.h"
#include "base/tensor.h"

namespace anelm {
class MappedFile;
}

namespace anelm::anemll {

// The IR node of the table's lookup, and the name of the input the embeddings
// (or monolithic) function takes the looked-up rows as.
inline constexpr std::string_view per_layer_lookup = "per_layer_token_embd";

// Writes `table` [rows, cols] (f32, f16 or bf16) at 16 or 8 bits; group must
// divide cols (the per-layer width: one scale per layer's slice).
void write_per_layer_table(const std::string& path, const TensorView& table, int bits,
                           int64_t group, const ProgressFn& progress = {});

class PerLayerTable {
public:
    explicit PerLayerTable(const std::string& path);  // throws Error naming the file and field
    ~PerLayerTable();

    int64_t rows() const { return rows_; }
    int64_t cols() const { return cols_; }
    int bits() const { return bits_; }
    // out[i * cols .. (i + 1) * cols) = row ids[i]; throws for an id outside the table.
    void lookup(std::span<const int32_t> ids, std::span<float> out) const;

private:
    std::unique_ptr<MappedFile> file_;
    int bits_ = 16;
    int64_t rows_ = 0, cols_ = 0, group_ = 0;
    size_t row_bytes_ = 0;
    const std::byte* rows_begin_ = nullptr;
};

}  // namespace anelm::anemll
