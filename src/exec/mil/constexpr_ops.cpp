#include "exec/mil/constexpr_ops.h"

#include <algorithm>
#include <bit>

#include "base/error.h"
#include "base/half.h"
#include "quant/bit_packing.h"

namespace anelm::milexec {

namespace {

// The numbers of a constant parameter (weights converted from fp16).
Tensor numbers(const Slot& s, const std::string& key, const std::string& where) {
    if (s.tensor) return *s.tensor;
    if (s.weight) return weight_to_tensor(*s.weight);
    fail("{}: missing input {}", where, key);
}

float value_at(const Tensor& t, int64_t k) {
    return t.f.empty() ? static_cast<float>(t.i[static_cast<size_t>(k)])
                       : t.f[static_cast<size_t>(k)];
}

// Calls fn(k, p) for every element k of `shape`, with p the flat index of its
// block in a tensor of shape `blocks` (each dimension of `shape` a multiple).
template <typename Fn>
void for_each_block(const std::vector<int64_t>& shape, const std::vector<int64_t>& blocks,
                    const std::string& where, Fn fn) {
    if (blocks.size() != shape.size()) fail("{}: parameter rank differs from the data's", where);
    std::vector<int64_t> ratio(shape.size());
    for (size_t d = 0; d < shape.size(); ++d) {
        if (blocks[d] <= 0 || shape[d] % blocks[d] != 0)
            fail("{}: dimension {} of {} is not a multiple of {}", where, d, shape_text(shape),
                 shape_text(blocks));
        ratio[d] = shape[d] / blocks[d];
    }
    const std::vector<int64_t> bstride = [&] {
        std::vector<int64_t> s(blocks.size(), 1);
        for (size_t d = blocks.size(); d-- > 1;) s[d - 1] = s[d] * blocks[d];
        return s;
    }();
    std::vector<int64_t> idx(shape.size(), 0);
    const int64_t n = shape_numel(shape);
    for (int64_t k = 0; k < n; ++k) {
        int64_t p = 0;
        for (size_t d = 0; d < shape.size(); ++d) p += idx[d] / ratio[d] * bstride[d];
        fn(k, p);
        for (size_t d = shape.size(); d-- > 0;) {
            if (++idx[d] < shape[d]) break;
            idx[d] = 0;
        }
    }
}

// The op's declared result from f32 values: fp16 results as fp16 bits.
Slot result(const mil::Operation& op, std::vector<float> values, const std::string& where) {
    const mil::TensorType& type = op.outputs(0).type().tensortype();
    std::vector<int64_t> shape = coreml::tensor_shape(type);
    if (shape_numel(shape) != static_cast<int64_t>(values.size()))
        fail("{}: result has {} elements, declared {}", where, values.size(), shape_text(shape));
    if (type.datatype() == mil::FLOAT16) {
        std::vector<uint16_t> bits(values.size());
        for (size_t k = 0; k < values.size(); ++k) bits[k] = f32_to_f16(values[k]);
        return slot_from_f16(std::move(shape), std::move(bits));
    }
    Tensor t = make_tensor(type.datatype(), std::move(shape));
    for (size_t k = 0; k < values.size(); ++k) {
        if (is_float_type(t.dtype))
            t.f[k] = values[k];
        else
            t.i[k] = static_cast<int32_t>(values[k]);
    }
    Slot s;
    s.tensor = std::make_shared<const Tensor>(std::move(t));
    return s;
}

// iOS16: `indices` are the packed bytes of shape-many codes, `lut` one palette.
std::vector<float> lut_ios16(const Tensor& indices, const Tensor& lut, const Tensor& shape,
                             const std::string& where) {
    const int64_t entries = lut.numel();
    if (entries < 2 || !std::has_single_bit(static_cast<uint64_t>(entries)) || entries > 256)
        fail("{}: a lut of {} entries", where, entries);
    const int nbits = std::countr_zero(static_cast<uint64_t>(entries));
    int64_t n = 1;
    for (int32_t d : shape.i) n *= d;
    std::vector<uint8_t> packed(indices.i.begin(), indices.i.end());
    if (static_cast<int64_t>(packed.size()) < quant::packed_bytes(n, nbits))
        fail("{}: {} index bytes for {} {}-bit codes", where, packed.size(), n, nbits);
    std::vector<uint8_t> codes(static_cast<size_t>(n));
    quant::unpack_codes(packed.data(), n, nbits, codes.data());
    std::vector<float> out(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) out[k] = value_at(lut, codes[k]);
    return out;
}

// iOS18: `lut` is [g0, .., g(K-1), 2^nbits, vector size]; element idx of
// `indices` [K dims] reads the palette of its group idx[d] / (dim d / g[d]).
std::vector<float> lut_ios18(const Tensor& indices, const Tensor& lut, const std::string& where) {
    const size_t rank = indices.shape.size();
    if (lut.shape.size() != rank + 2) fail("{}: lut rank must be indices rank + 2", where);
    if (lut.shape[rank + 1] != 1) fail("{}: vector palettization is not supported", where);
    const int64_t entries = lut.shape[rank];
    std::vector<int64_t> groups(lut.shape.begin(), lut.shape.begin() + static_cast<long>(rank));
    std::vector<float> out(static_cast<size_t>(indices.numel()));
    for_each_block(indices.shape, groups, where, [&](int64_t k, int64_t g) {
        const int32_t code = indices.i[static_cast<size_t>(k)];
        if (code < 0 || code >= entries)
            fail("{}: index {} outside a lut of {}", where, code, entries);
        out[static_cast<size_t>(k)] = value_at(lut, g * entries + code);
    });
    return out;
}

// out = scale * (data - offset), scale and offset repeated over blocks of data.
std::vector<float> shift_scale(const Tensor& data, const Tensor& scale, const Tensor* offset,
                               const std::string& where) {
    std::vector<float> out(static_cast<size_t>(data.numel()));
    if (offset && offset->shape != scale.shape) fail("{}: offset and scale shapes differ", where);
    for_each_block(data.shape, scale.shape, where, [&](int64_t k, int64_t p) {
        const float zero = offset ? value_at(*offset, p) : 0.0f;
        out[static_cast<size_t>(k)] = value_at(scale, p) * (value_at(data, k) - zero);
    });
    return out;
}

// A scalar or a vector along `axis` as a tensor of the data's rank.
Tensor along_axis(Tensor t, const std::vector<int64_t>& data_shape, int64_t axis,
                  const std::string& where) {
    std::vector<int64_t> shape(data_shape.size(), 1);
    if (t.numel() != 1) {
        if (t.shape.size() != 1 || axis < 0 || axis >= static_cast<int64_t>(shape.size()))
            fail("{}: a parameter must be a scalar or a vector along the axis", where);
        shape[static_cast<size_t>(axis)] = t.shape[0];
    }
    t.shape = std::move(shape);
    return t;
}

}  // namespace

bool is_constexpr(std::string_view type) {
    return type == "constexpr_lut_to_dense" || type == "constexpr_blockwise_shift_scale" ||
           type == "constexpr_affine_dequantize" || type == "constexpr_cast";
}

Slot run_constexpr(const mil::Operation& op, const ConstParam& param, const std::string& where) {
    const std::string& type = op.type();
    auto get = [&](const std::string& key) { return numbers(param(key), key, where); };
    if (type == "constexpr_lut_to_dense") {
        const Tensor indices = get("indices");
        const Tensor lut = get("lut");
        if (Slot shape = param("shape"); !shape.empty())
            return result(op, lut_ios16(indices, lut, numbers(shape, "shape", where), where),
                          where);
        return result(op, lut_ios18(indices, lut, where), where);
    }
    if (type == "constexpr_blockwise_shift_scale") {
        const Slot offset = param("offset");
        const Tensor off = offset.empty() ? Tensor{} : numbers(offset, "offset", where);
        return result(
            op, shift_scale(get("data"), get("scale"), offset.empty() ? nullptr : &off, where),
            where);
    }
    if (type == "constexpr_affine_dequantize") {
        const Tensor data = get("quantized_data");
        const Tensor axis = get("axis");
        const int64_t a = axis.i.empty() ? 0 : axis.i[0];
        const int64_t ax = a < 0 ? a + static_cast<int64_t>(data.shape.size()) : a;
        const Tensor scale = along_axis(get("scale"), data.shape, ax, where);
        Tensor zero = along_axis(get("zero_point"), data.shape, ax, where);
        if (zero.shape != scale.shape && zero.numel() == 1) {  // one zero point for every scale
            const float z = value_at(zero, 0);
            zero = make_tensor(mil::FLOAT32, scale.shape);
            std::fill(zero.f.begin(), zero.f.end(), z);
        }
        return result(op, shift_scale(data, scale, &zero, where), where);
    }
    // constexpr_cast: the source's values in the declared output type.
    const Tensor source = get("source");
    std::vector<float> values(static_cast<size_t>(source.numel()));
    for (int64_t k = 0; k < source.numel(); ++k)
        values[static_cast<size_t>(k)] = value_at(source, k);
    return result(op, std::move(values), where);
}

}  // namespace anelm::milexec
