#include "exec/mil/literal.h"

#include <cstring>
#include <span>

#include "base/bit_packing.h"
#include "base/error.h"
#include "base/half.h"

namespace anelm::milexec {

namespace {

int sub_byte_bits(mil::DataType dtype) {
    switch (dtype) {
        case mil::UINT1:
            return 1;
        case mil::UINT2:
            return 2;
        case mil::UINT3:
            return 3;
        case mil::UINT4:
            return 4;
        case mil::INT4:
            return 4;
        case mil::UINT6:
            return 6;
        default:
            return 0;
    }
}

template <typename T>
void read_ints(std::span<const uint8_t> bytes, std::vector<int32_t>& out) {
    for (size_t k = 0; k < out.size(); ++k) {
        T v;
        std::memcpy(&v, bytes.data() + k * sizeof(T), sizeof(T));
        out[k] = static_cast<int32_t>(v);
    }
}

size_t element_bytes(mil::DataType dtype) {
    switch (dtype) {
        case mil::FLOAT32:
        case mil::INT32:
        case mil::UINT32:
            return 4;
        case mil::FLOAT16:
        case mil::BFLOAT16:
        case mil::INT16:
        case mil::UINT16:
            return 2;
        case mil::INT8:
        case mil::UINT8:
        case mil::BOOL:
            return 1;
        default:
            return 0;
    }
}

// The elements of a tensor stored as raw little-endian bytes. A blob's fp16
// payload is borrowed, not copied, when large.
Slot bytes_to_slot(mil::DataType dtype, std::vector<int64_t> shape, std::span<const uint8_t> bytes,
                   bool borrow, const std::string& where) {
    const int64_t n = shape_numel(shape, where);
    if (const int bits = sub_byte_bits(dtype)) {
        if (static_cast<int64_t>(bytes.size()) < packed_bytes(n, bits))
            fail("{}: {} bytes hold fewer than {} {}-bit elements", where, bytes.size(), n, bits);
        std::vector<uint8_t> codes(static_cast<size_t>(n));
        unpack_codes(bytes.data(), n, bits, codes.data());
        Tensor t = make_tensor(dtype, std::move(shape));
        for (int64_t k = 0; k < n; ++k)
            t.i[k] = dtype == mil::INT4 && codes[k] >= 8 ? codes[k] - 16 : codes[k];
        Slot s;
        s.tensor = std::make_shared<const Tensor>(std::move(t));
        return s;
    }
    const size_t width = element_bytes(dtype);
    if (width == 0) fail("{}: {} literals are not supported", where, coreml::mil_dtype_name(dtype));
    if (bytes.size() != static_cast<size_t>(n) * width)
        fail("{}: {} bytes for {} {} elements", where, bytes.size(), n,
             coreml::mil_dtype_name(dtype));
    if (dtype == mil::FLOAT16) {
        if (borrow && n >= weight_min_elements &&
            reinterpret_cast<uintptr_t>(bytes.data()) % alignof(uint16_t) == 0) {
            auto w = std::make_shared<Weight>();
            w->shape = std::move(shape);
            w->bits = reinterpret_cast<const uint16_t*>(bytes.data());
            Slot s;
            s.weight = std::move(w);
            return s;
        }
        std::vector<uint16_t> bits(static_cast<size_t>(n));
        std::memcpy(bits.data(), bytes.data(), bytes.size());
        return slot_from_f16(std::move(shape), std::move(bits));
    }
    Tensor t = make_tensor(dtype, std::move(shape));
    switch (dtype) {
        case mil::FLOAT32:
            std::memcpy(t.f.data(), bytes.data(), bytes.size());
            break;
        case mil::BFLOAT16:
            for (int64_t k = 0; k < n; ++k) {
                uint16_t b;
                std::memcpy(&b, bytes.data() + 2 * k, 2);
                t.f[k] = bf16_to_f32(b);
            }
            break;
        case mil::INT32:
            read_ints<int32_t>(bytes, t.i);
            break;
        case mil::UINT32:
            read_ints<uint32_t>(bytes, t.i);
            break;
        case mil::INT16:
            read_ints<int16_t>(bytes, t.i);
            break;
        case mil::UINT16:
            read_ints<uint16_t>(bytes, t.i);
            break;
        case mil::INT8:
            read_ints<int8_t>(bytes, t.i);
            break;
        default:
            read_ints<uint8_t>(bytes, t.i);
            break;  // UINT8, BOOL
    }
    Slot s;
    s.tensor = std::make_shared<const Tensor>(std::move(t));
    return s;
}

template <typename Values>
Slot repeated_to_slot(mil::DataType dtype, std::vector<int64_t> shape, const Values& values,
                      const std::string& where) {
    // Counted before allocating: one value must not zero-fill a huge declared shape.
    const int64_t n = shape_numel(shape, where);
    if (static_cast<int64_t>(values.size()) != n)
        fail("{}: {} values for a tensor of {} elements", where, values.size(), n);
    Tensor t = make_tensor(dtype, std::move(shape));
    for (int64_t k = 0; k < n; ++k) {
        if (is_float_type(dtype))
            t.f[k] = static_cast<float>(values[static_cast<int>(k)]);
        else
            t.i[k] = static_cast<int32_t>(values[static_cast<int>(k)]);
    }
    Slot s;
    s.tensor = std::make_shared<const Tensor>(std::move(t));
    return s;
}

}  // namespace

Slot decode_literal(const mil::Value& value, const coreml::BlobTable& blobs,
                    const std::string& where) {
    if (!value.type().has_tensortype()) fail("{}: only tensor literals are supported", where);
    const mil::DataType dtype = value.type().tensortype().datatype();
    std::vector<int64_t> shape = coreml::tensor_shape(value.type().tensortype());
    for (int64_t d : shape)
        if (d < 0) fail("{}: a literal of unknown shape {}", where, shape_text(shape));
    if (value.has_blobfilevalue()) {
        const coreml::Blob blob = blobs.blob(value);
        return bytes_to_slot(dtype, std::move(shape), blob.data, true, where);
    }
    if (!value.has_immediatevalue() || !value.immediatevalue().has_tensor())
        fail("{}: neither an immediate tensor nor a blob", where);
    const mil::TensorValue& t = value.immediatevalue().tensor();
    switch (t.value_case()) {
        case mil::TensorValue::kFloats:
            return repeated_to_slot(dtype, std::move(shape), t.floats().values(), where);
        case mil::TensorValue::kDoubles:
            return repeated_to_slot(dtype, std::move(shape), t.doubles().values(), where);
        case mil::TensorValue::kInts:
            return repeated_to_slot(dtype, std::move(shape), t.ints().values(), where);
        case mil::TensorValue::kLongInts:
            return repeated_to_slot(dtype, std::move(shape), t.longints().values(), where);
        case mil::TensorValue::kBools:
            return repeated_to_slot(dtype, std::move(shape), t.bools().values(), where);
        case mil::TensorValue::kStrings: {
            if (t.strings().values_size() != 1)
                fail("{}: only single strings are supported", where);
            Slot s;
            s.text = t.strings().values(0);
            return s;
        }
        case mil::TensorValue::kBytes: {
            const std::string& b = t.bytes().values();
            return bytes_to_slot(dtype, std::move(shape),
                                 {reinterpret_cast<const uint8_t*>(b.data()), b.size()}, false,
                                 where);
        }
        default:
            fail("{}: an empty immediate tensor", where);
    }
}

}  // namespace anelm::milexec
