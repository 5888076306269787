// Builds MIL programs in memory: typed values, const operations for
// parameters, and the blobs that large constants live in, laid out exactly as
// the package's weight.bin will hold them. The ANE lowering writes through this;
// the MIL interpreter runs what it builds without writing any file.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "coreml/blob_table.h"
#include "coreml/mil_types.h"

namespace anelm::coreml {

// A tensor value of a block: its name and its declared type.
struct MilValue {
    std::string name;
    mil::DataType dtype = mil::DataType::FLOAT16;
    std::vector<int64_t> shape;  // empty: a scalar; -1: a dimension known only at run time
};

mil::ValueType tensor_value_type(mil::DataType dtype, const std::vector<int64_t>& shape);

// The blobs of a program being built, at the offsets weight.bin will give them.
class BlobSet : public BlobTable {
public:
    // n elements whose payload is `data` (packed for sub-byte types); `owner`
    // keeps the bytes alive. Returns the record offset, for BlobFileValue.offset.
    uint64_t add(BlobDType dtype, uint64_t n, std::span<const uint8_t> data,
                 std::shared_ptr<const void> owner = {});
    Blob blob(const mil::Value& value) const override;

    bool empty() const { return blobs_.empty(); }
    uint64_t file_bytes() const { return end_; }  // the size weight.bin will have
    // Writes every blob in order; the writer's offsets equal ours.
    void write(BlobWriter& out) const;

private:
    struct Entry {
        Blob blob;
        std::shared_ptr<const void> owner;
    };
    std::vector<Entry> blobs_;
    uint64_t end_ = blob_alignment;  // after the header
};

// A value whose bytes are a new blob of `blobs`: what const ops and constexpr_*
// inputs hold for large tensors.
mil::Value blob_value(BlobSet& blobs, mil::DataType dtype, const std::vector<int64_t>& shape,
                      std::span<const uint8_t> bytes, std::shared_ptr<const void> owner = {});

// A constant parameter of an operation, which the builder turns into a const
// op named "<op>_<key>_0", as coremltools names them.
struct MilParam {
    mil::Value value;
    static MilParam i32(int32_t v);
    static MilParam i32s(std::vector<int32_t> v);  // rank 1
    static MilParam boolean(bool v);
    static MilParam bools(std::vector<bool> v);  // rank 1
    static MilParam fp16(float v);
    static MilParam fp32(float v);
    static MilParam string(std::string v);
};

// One input of an operation: a value, several values (concat's "values"), or a
// constant parameter.
struct MilInput {
    std::string key;
    std::vector<std::string> values;  // names; empty when `param` is used
    MilParam param;
    MilInput(std::string k, const MilValue& v) : key(std::move(k)), values{v.name} {}
    MilInput(std::string k, const std::vector<MilValue>& vs);
    MilInput(std::string k, MilParam p) : key(std::move(k)), param(std::move(p)) {}
};

class MilBuilder {
public:
    MilBuilder(mil::Block& block, BlobSet& blobs) : block_(block), blobs_(blobs) {}

    // Appends an operation with one output of the given type.
    MilValue op(std::string_view type, std::string name, const std::vector<MilInput>& inputs,
                mil::DataType dtype, std::vector<int64_t> shape);
    // An operation with several outputs (split): names and types in order.
    std::vector<MilValue> op_multi(std::string_view type, std::string name,
                                   const std::vector<MilInput>& inputs,
                                   const std::vector<MilValue>& outputs);

    // A const op holding a tensor. Immediate when small, otherwise a blob.
    MilValue constant(std::string name, mil::DataType dtype, std::vector<int64_t> shape,
                      std::span<const uint8_t> bytes, std::shared_ptr<const void> owner = {});
    // A const op holding a value made before (a blob shared between functions).
    MilValue const_value(std::string name, const mil::Value& value);
    MilValue const_i32(std::string name, std::vector<int64_t> shape, std::vector<int32_t> values);
    // A const fp16 tensor from f32 values (rounded to half).
    MilValue const_f16(std::string name, std::vector<int64_t> shape, std::span<const float> values);
    // An operation whose inputs are literal values (constexpr_lut_to_dense).
    MilValue op_literal(std::string_view type, std::string name,
                        const std::vector<std::pair<std::string, mil::Value>>& inputs,
                        mil::DataType dtype, std::vector<int64_t> shape);

    void output(const MilValue& value) { block_.add_outputs(value.name); }
    BlobSet& blobs() { return blobs_; }

private:
    void add_name(mil::Operation& op, const std::string& name);

    mil::Block& block_;
    BlobSet& blobs_;
};

// Tensors of at most this many bytes are stored inline in the program.
inline constexpr size_t immediate_limit_bytes = 64;

}  // namespace anelm::coreml
