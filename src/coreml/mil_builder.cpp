#include "coreml/mil_builder.h"

#include <algorithm>
#include <cstring>

#include "base/error.h"
#include "base/half.h"
#include "coreml/package.h"

namespace anelm::coreml {

namespace {

uint64_t align_up(uint64_t n) {
    return (n + blob_alignment - 1) / blob_alignment * blob_alignment;
}

mil::Value immediate(mil::DataType dtype, const std::vector<int64_t>& shape) {
    mil::Value v;
    *v.mutable_type() = tensor_value_type(dtype, shape);
    v.mutable_immediatevalue()->mutable_tensor();
    return v;
}

mil::Value string_value(const std::string& s) {
    mil::Value v = immediate(mil::STRING, {});
    v.mutable_immediatevalue()->mutable_tensor()->mutable_strings()->add_values(s);
    return v;
}

// The bytes of an immediate tensor of a type coremltools stores as bytes.
void set_immediate_bytes(mil::Value& v, mil::DataType dtype, std::span<const uint8_t> bytes) {
    mil::TensorValue& t = *v.mutable_immediatevalue()->mutable_tensor();
    switch (dtype) {
        case mil::FLOAT32: {
            auto& out = *t.mutable_floats()->mutable_values();
            out.Resize(static_cast<int>(bytes.size() / 4), 0.0f);
            std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
            break;
        }
        case mil::INT32: {
            auto& out = *t.mutable_ints()->mutable_values();
            out.Resize(static_cast<int>(bytes.size() / 4), 0);
            std::memcpy(out.mutable_data(), bytes.data(), bytes.size());
            break;
        }
        default:
            t.mutable_bytes()->set_values(bytes.data(), bytes.size());
    }
}

}  // namespace

mil::ValueType tensor_value_type(mil::DataType dtype, const std::vector<int64_t>& shape) {
    mil::ValueType type;
    mil::TensorType& t = *type.mutable_tensortype();
    t.set_datatype(dtype);
    t.set_rank(static_cast<int64_t>(shape.size()));
    for (int64_t d : shape) {
        if (d < 0)
            t.add_dimensions()->mutable_unknown();
        else
            t.add_dimensions()->mutable_constant()->set_size(static_cast<uint64_t>(d));
    }
    return type;
}

uint64_t BlobSet::add(BlobDType dtype, uint64_t n, std::span<const uint8_t> data,
                      std::shared_ptr<const void> owner) {
    if (data.size() != blob_payload_bytes(dtype, n))
        fail("blob {}: {} {} elements need {} bytes, got {}", blobs_.size(), n,
             blob_dtype_name(dtype), blob_payload_bytes(dtype, n), data.size());
    Blob b;
    b.offset = align_up(end_);
    b.dtype = dtype;
    b.data_offset = b.offset + blob_alignment;
    b.padding_bits = data.size() * 8 - n * static_cast<uint64_t>(blob_dtype_bits(dtype));
    b.data = data;
    end_ = b.data_offset + data.size();
    blobs_.push_back({b, std::move(owner)});
    return b.offset;
}

Blob BlobSet::blob(const mil::Value& value) const {
    const uint64_t offset = value.blobfilevalue().offset();
    // Offsets grow with the index, so a binary search finds the record.
    auto it = std::lower_bound(blobs_.begin(), blobs_.end(), offset,
                               [](const Entry& e, uint64_t o) { return e.blob.offset < o; });
    if (it == blobs_.end() || it->blob.offset != offset)
        fail("blob at offset {}: no such blob in the program being built", offset);
    const Blob& b = it->blob;
    const auto expected = blob_dtype_of(value.type().tensortype().datatype());
    if (!expected || *expected != b.dtype)
        fail("blob at offset {} holds {}, the value's type is {}", offset, blob_dtype_name(b.dtype),
             value_type_text(value.type()));
    const std::optional<int64_t> n = element_count(tensor_shape(value.type().tensortype()));
    if (!n || b.numel() != static_cast<uint64_t>(*n))
        fail("blob at offset {} holds {} elements, the value's type is {}", offset, b.numel(),
             value_type_text(value.type()));
    return b;
}

void BlobSet::write(BlobWriter& out) const {
    for (const Entry& e : blobs_) {
        const uint64_t offset = out.add(e.blob.dtype, e.blob.numel(), e.blob.data);
        if (offset != e.blob.offset)
            fail("blob written at offset {}, expected {}", offset, e.blob.offset);
    }
}

MilParam MilParam::i32(int32_t v) {
    MilParam p{immediate(mil::INT32, {})};
    p.value.mutable_immediatevalue()->mutable_tensor()->mutable_ints()->add_values(v);
    return p;
}

MilParam MilParam::i32s(std::vector<int32_t> v) {
    MilParam p{immediate(mil::INT32, {static_cast<int64_t>(v.size())})};
    auto& out = *p.value.mutable_immediatevalue()->mutable_tensor()->mutable_ints();
    for (int32_t x : v) out.add_values(x);
    return p;
}

MilParam MilParam::boolean(bool v) {
    MilParam p{immediate(mil::BOOL, {})};
    p.value.mutable_immediatevalue()->mutable_tensor()->mutable_bools()->add_values(v);
    return p;
}

MilParam MilParam::bools(std::vector<bool> v) {
    MilParam p{immediate(mil::BOOL, {static_cast<int64_t>(v.size())})};
    auto& out = *p.value.mutable_immediatevalue()->mutable_tensor()->mutable_bools();
    for (bool x : v) out.add_values(x);
    return p;
}

MilParam MilParam::fp16(float v) {
    MilParam p{immediate(mil::FLOAT16, {})};
    const uint16_t h = f32_to_f16(v);
    p.value.mutable_immediatevalue()->mutable_tensor()->mutable_bytes()->set_values(&h, sizeof h);
    return p;
}

MilParam MilParam::fp32(float v) {
    MilParam p{immediate(mil::FLOAT32, {})};
    p.value.mutable_immediatevalue()->mutable_tensor()->mutable_floats()->add_values(v);
    return p;
}

MilParam MilParam::string(std::string v) {
    return MilParam{string_value(v)};
}

MilInput::MilInput(std::string k, const std::vector<MilValue>& vs) : key(std::move(k)) {
    for (const MilValue& v : vs) values.push_back(v.name);
}

void MilBuilder::add_name(mil::Operation& op, const std::string& name) {
    (*op.mutable_attributes())["name"] = string_value(name);
}

MilValue MilBuilder::op(std::string_view type, std::string name,
                        const std::vector<MilInput>& inputs, mil::DataType dtype,
                        std::vector<int64_t> shape) {
    return op_multi(type, std::move(name), inputs, {MilValue{"", dtype, std::move(shape)}})[0];
}

std::vector<MilValue> MilBuilder::op_multi(std::string_view type, std::string name,
                                           const std::vector<MilInput>& inputs,
                                           const std::vector<MilValue>& outputs) {
    // Parameters first, as const ops before the op that reads them.
    std::vector<std::pair<std::string, std::vector<std::string>>> args;
    for (const MilInput& in : inputs) {
        if (!in.values.empty()) {
            args.emplace_back(in.key, in.values);
            continue;
        }
        const std::string const_name = fmt::format("{}_{}_0", name, in.key);
        mil::Operation& c = *block_.add_operations();
        c.set_type("const");
        mil::NamedValueType& out = *c.add_outputs();
        out.set_name(const_name);
        *out.mutable_type() = in.param.value.type();
        add_name(c, const_name);
        (*c.mutable_attributes())["val"] = in.param.value;
        args.emplace_back(in.key, std::vector<std::string>{const_name});
    }
    mil::Operation& op = *block_.add_operations();
    op.set_type(std::string(type));
    for (const auto& [key, names] : args) {
        mil::Argument& arg = (*op.mutable_inputs())[key];
        for (const std::string& n : names) arg.add_arguments()->set_name(n);
    }
    std::vector<MilValue> result = outputs;
    for (size_t i = 0; i < result.size(); ++i) {
        if (result[i].name.empty())
            result[i].name = result.size() == 1 ? name : fmt::format("{}_{}", name, i);
        mil::NamedValueType& out = *op.add_outputs();
        out.set_name(result[i].name);
        *out.mutable_type() = tensor_value_type(result[i].dtype, result[i].shape);
    }
    add_name(op, name);
    return result;
}

mil::Value blob_value(BlobSet& blobs, mil::DataType dtype, const std::vector<int64_t>& shape,
                      std::span<const uint8_t> bytes, std::shared_ptr<const void> owner) {
    const auto code = blob_dtype_of(dtype);
    if (!code) fail("a {} tensor cannot be stored as a blob", mil_dtype_name(dtype));
    mil::Value v;
    *v.mutable_type() = tensor_value_type(dtype, shape);
    const std::optional<int64_t> n = element_count(shape);
    if (!n) fail("a {} tensor cannot be stored as a blob", value_type_text(v.type()));
    mil::Value::BlobFileValue& ref = *v.mutable_blobfilevalue();
    ref.set_filename(weight_file_name);
    ref.set_offset(blobs.add(*code, static_cast<uint64_t>(*n), bytes, std::move(owner)));
    return v;
}

MilValue MilBuilder::constant(std::string name, mil::DataType dtype, std::vector<int64_t> shape,
                              std::span<const uint8_t> bytes, std::shared_ptr<const void> owner) {
    mil::Value val;
    if (bytes.size() <= immediate_limit_bytes) {
        val = immediate(dtype, shape);
        set_immediate_bytes(val, dtype, bytes);
    } else {
        val = blob_value(blobs_, dtype, shape, bytes, std::move(owner));
    }
    return const_value(std::move(name), val);
}

MilValue MilBuilder::const_value(std::string name, const mil::Value& val) {
    const mil::TensorType& type = val.type().tensortype();
    mil::Operation& c = *block_.add_operations();
    c.set_type("const");
    mil::NamedValueType& out = *c.add_outputs();
    out.set_name(name);
    *out.mutable_type() = val.type();
    add_name(c, name);
    (*c.mutable_attributes())["val"] = val;
    return MilValue{std::move(name), type.datatype(), tensor_shape(type)};
}

MilValue MilBuilder::const_i32(std::string name, std::vector<int64_t> shape,
                               std::vector<int32_t> values) {
    auto owned = std::make_shared<std::vector<int32_t>>(std::move(values));
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(owned->data()),
                                         owned->size() * sizeof(int32_t));
    return constant(std::move(name), mil::INT32, std::move(shape), bytes, owned);
}

MilValue MilBuilder::const_f16(std::string name, std::vector<int64_t> shape,
                               std::span<const float> values) {
    auto owned = std::make_shared<std::vector<uint16_t>>(values.size());
    for (size_t i = 0; i < values.size(); ++i) (*owned)[i] = f32_to_f16(values[i]);
    const std::span<const uint8_t> bytes(reinterpret_cast<const uint8_t*>(owned->data()),
                                         owned->size() * sizeof(uint16_t));
    return constant(std::move(name), mil::FLOAT16, std::move(shape), bytes, owned);
}

MilValue MilBuilder::op_literal(std::string_view type, std::string name,
                                const std::vector<std::pair<std::string, mil::Value>>& inputs,
                                mil::DataType dtype, std::vector<int64_t> shape) {
    mil::Operation& op = *block_.add_operations();
    op.set_type(std::string(type));
    for (const auto& [key, value] : inputs)
        *(*op.mutable_inputs())[key].add_arguments()->mutable_value() = value;
    mil::NamedValueType& out = *op.add_outputs();
    out.set_name(name);
    *out.mutable_type() = tensor_value_type(dtype, shape);
    add_name(op, name);
    return MilValue{std::move(name), dtype, std::move(shape)};
}

}  // namespace anelm::coreml
