// The weights of one package as MIL constants. Each weight is converted once
// (to fp16, or kept as LUT codes and tables, or int8/int4 data and scales),
// stored as blobs in the package's BlobSet, and declared again in every
// function that reads it, so infer and prefill share one blob per weight.
// A scale (the FP16 residual scaling's out_scale, a power of two) is folded
// into the stored numbers, which is exact.
#pragma once

#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "coreml/mil_builder.h"
#include "ir/program.h"

namespace anelm::lower {

class AneWeights {
public:
    AneWeights(const ir::Program& program, coreml::BlobSet& blobs)
        : program_(program), blobs_(blobs) {}

    // Rows [row0, row0 + rows) of a linear weight as a conv weight
    // fp16 [rows, n_in, 1, 1], times `scale`. A LUT weight whose last group is
    // partial gives more rows when the slice ends there: whole groups, as
    // constexpr_lut_to_dense needs (QuantizedMatrix::whole_group_rows).
    coreml::MilValue conv_weight(coreml::MilBuilder& b, ir::WeightId id, float scale, int64_t row0,
                                 int64_t rows, const std::string& name);
    // Elements [begin, begin + n) of a vector weight as fp16 of `shape`:
    // (offset + w) * scale (a norm's gain with Gemma's 1 + w, or a bias).
    coreml::MilValue vector(coreml::MilBuilder& b, ir::WeightId id, float offset, float scale,
                            int64_t begin, int64_t n, std::vector<int64_t> shape,
                            const std::string& name);
    // An embedding table fp16 [n_vocab, n_embd] times `scale` (more rows for a
    // LUT's partial last group, as conv_weight; no id reads them).
    coreml::MilValue table(coreml::MilBuilder& b, ir::WeightId id, float scale,
                           const std::string& name);

private:
    // What a weight became: one const value, or the literal inputs of a
    // constexpr op that makes it dense.
    struct Stored {
        std::string constexpr_op;  // empty: `value` is a const
        std::vector<std::pair<std::string, coreml::mil::Value>> inputs;
        coreml::mil::Value value;
        std::vector<int64_t> shape;
    };
    using Key = std::tuple<ir::WeightId, float, float, int64_t, int64_t, int>;

    coreml::MilValue declare(coreml::MilBuilder& b, const Stored& stored, const std::string& name);
    Stored store_dense(ir::WeightId id, float offset, float scale, int64_t begin, int64_t n,
                       std::vector<int64_t> shape);
    Stored store_quantized(ir::WeightId id, float scale, int64_t row0, int64_t rows,
                           std::vector<int64_t> shape);

    const ir::Program& program_;
    coreml::BlobSet& blobs_;
    std::map<Key, Stored> stored_;
};

}  // namespace anelm::lower
