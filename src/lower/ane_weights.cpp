#include "lower/ane_weights.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "base/error.h"
#include "base/half.h"
#include "io/tensor_values.h"
#include "quant/quantized_matrix.h"

namespace anelm::lower {

namespace mil = coreml::mil;
using coreml::MilValue;

namespace {

std::span<const uint8_t> bytes_of(const std::vector<uint16_t>& v) {
    return {reinterpret_cast<const uint8_t*>(v.data()), v.size() * sizeof(uint16_t)};
}

// f16 values times a power-of-two scale (exact unless it overflows).
std::shared_ptr<std::vector<uint16_t>> scaled_f16(std::span<const uint16_t> in, float scale) {
    auto out = std::make_shared<std::vector<uint16_t>>(in.size());
    for (size_t i = 0; i < in.size(); ++i) (*out)[i] = f32_to_f16(f16_to_f32(in[i]) * scale);
    return out;
}

}  // namespace

MilValue AneWeights::declare(coreml::MilBuilder& b, const Stored& stored, const std::string& name) {
    if (stored.constexpr_op.empty()) return b.const_value(name, stored.value);
    return b.op_literal(stored.constexpr_op, name, stored.inputs, mil::FLOAT16, stored.shape);
}

AneWeights::Stored AneWeights::store_dense(ir::WeightId id, float offset, float scale,
                                           int64_t begin, int64_t n, std::vector<int64_t> shape) {
    const TensorView& w = program_.weights.at(static_cast<size_t>(id)).view;
    Stored s;
    s.shape = shape;
    const size_t elem = dtype_size(w.dtype);
    if (w.dtype == DType::f16 && offset == 0 && scale == 1) {
        // Already what Core ML stores: the blob is the mapped bytes themselves.
        const std::span<const uint8_t> bytes(
            reinterpret_cast<const uint8_t*>(w.data) + begin * elem, static_cast<size_t>(n) * elem);
        s.value = coreml::blob_value(blobs_, mil::FLOAT16, shape, bytes);
        return s;
    }
    auto half = std::make_shared<std::vector<uint16_t>>(static_cast<size_t>(n));
    // In slices: a GGUF's blocks are decoded a slice at a time.
    constexpr int64_t slice = 1 << 16;
    std::vector<float> values(static_cast<size_t>(std::min(n, slice)));
    for (int64_t at = 0; at < n; at += slice) {
        const int64_t m = std::min(slice, n - at);
        read_f32(w, begin + at, m, values.data());
        for (int64_t i = 0; i < m; ++i)
            (*half)[static_cast<size_t>(at + i)] = f32_to_f16((offset + values[i]) * scale);
    }
    if (half->size() * 2 <= coreml::immediate_limit_bytes) {
        s.value.mutable_immediatevalue()->mutable_tensor()->mutable_bytes()->set_values(
            half->data(), half->size() * 2);
        *s.value.mutable_type() = coreml::tensor_value_type(mil::FLOAT16, shape);
        return s;
    }
    s.value = coreml::blob_value(blobs_, mil::FLOAT16, shape, bytes_of(*half), half);
    return s;
}

AneWeights::Stored AneWeights::store_quantized(ir::WeightId id, float scale, int64_t row0,
                                               int64_t rows, std::vector<int64_t> shape) {
    const ir::Weight& weight = program_.weights.at(static_cast<size_t>(id));
    const quant::QuantizedMatrix& q = *weight.quantized;
    if (q.n_in * q.nbits % 8 != 0)
        fail("{}: {} columns of {}-bit codes do not end rows on a byte", weight.name, q.n_in,
             q.nbits);
    const auto codes = std::make_shared<std::vector<uint8_t>>(
        q.codes.begin() + row0 * q.row_bytes(), q.codes.begin() + (row0 + rows) * q.row_bytes());
    Stored s;
    s.shape = shape;
    if (q.kind == quant::QuantKind::lut) {
        const int64_t g = q.rows_per_table();
        const bool one_table = q.n_tables() == 1;
        // Whole groups, but for the weight's partial last group, which is
        // padded with rows of code 0 (shape[0] grows: the caller slices them off).
        const int64_t padded = q.whole_group_rows(rows);
        if (!one_table && (row0 % g != 0 || (padded != rows && row0 + rows != q.n_out)))
            fail("{}: rows {}..{} do not split into LUT groups of {}", weight.name, row0,
                 row0 + rows, g);
        codes->resize(static_cast<size_t>(padded * q.row_bytes()), 0);
        shape[0] = padded;
        s.shape = shape;
        const int64_t entries = int64_t{1} << q.nbits;
        const int64_t t0 = one_table ? 0 : row0 / g;
        const int64_t nt = one_table ? 1 : padded / g;
        const auto lut = scaled_f16(std::span(q.lut).subspan(static_cast<size_t>(t0 * entries),
                                                             static_cast<size_t>(nt * entries)),
                                    scale);
        // The lut has the weight's rank plus two: [tables, 1 per other axis, entries, 1].
        std::vector<int64_t> lut_shape{nt};
        for (size_t i = 1; i < shape.size(); ++i) lut_shape.push_back(1);
        lut_shape.push_back(entries);
        lut_shape.push_back(1);
        const auto index_type = static_cast<mil::DataType>(
            q.nbits == 8
                ? mil::UINT8
                : (q.nbits == 6 ? mil::UINT6
                                : (q.nbits == 4 ? mil::UINT4
                                                : (q.nbits == 3 ? mil::UINT3
                                                                : (q.nbits == 2 ? mil::UINT2
                                                                                : mil::UINT1)))));
        s.constexpr_op = "constexpr_lut_to_dense";
        s.inputs = {
            {"indices", coreml::blob_value(blobs_, index_type, shape, *codes, codes)},
            {"lut", coreml::blob_value(blobs_, mil::FLOAT16, lut_shape, bytes_of(*lut), lut)}};
        return s;
    }
    const auto scales = scaled_f16(
        std::span(q.scales).subspan(static_cast<size_t>(row0), static_cast<size_t>(rows)), scale);
    std::vector<int64_t> scale_shape(shape.size(), 1);
    scale_shape[0] = rows;
    s.constexpr_op = "constexpr_blockwise_shift_scale";
    s.inputs = {{"data", coreml::blob_value(
                             blobs_, q.kind == quant::QuantKind::int8 ? mil::INT8 : mil::INT4,
                             shape, *codes, codes)},
                {"scale",
                 coreml::blob_value(blobs_, mil::FLOAT16, scale_shape, bytes_of(*scales), scales)}};
    return s;
}

MilValue AneWeights::conv_weight(coreml::MilBuilder& b, ir::WeightId id, float scale, int64_t row0,
                                 int64_t rows, const std::string& name) {
    const ir::Weight& w = program_.weights.at(static_cast<size_t>(id));
    const int64_t n_in = w.view.shape.at(1);
    const Key key{id, scale, 0.0f, row0, rows, 0};
    auto it = stored_.find(key);
    if (it == stored_.end()) {
        const std::vector<int64_t> shape{rows, n_in, 1, 1};
        it = stored_
                 .emplace(key, w.quantized
                                   ? store_quantized(id, scale, row0, rows, shape)
                                   : store_dense(id, 0, scale, row0 * n_in, rows * n_in, shape))
                 .first;
    }
    return declare(b, it->second, name);
}

MilValue AneWeights::vector(coreml::MilBuilder& b, ir::WeightId id, float offset, float scale,
                            int64_t begin, int64_t n, std::vector<int64_t> shape,
                            const std::string& name) {
    const Key key{id, scale, offset, begin, n, static_cast<int>(shape.size())};
    auto it = stored_.find(key);
    if (it == stored_.end())
        it = stored_.emplace(key, store_dense(id, offset, scale, begin, n, shape)).first;
    return declare(b, it->second, name);
}

MilValue AneWeights::table(coreml::MilBuilder& b, ir::WeightId id, float scale,
                           const std::string& name) {
    const ir::Weight& w = program_.weights.at(static_cast<size_t>(id));
    const std::vector<int64_t> shape = w.view.shape;
    const Key key{id, scale, 0.0f, 0, shape.at(0), 2};
    auto it = stored_.find(key);
    if (it == stored_.end())
        it = stored_
                 .emplace(key, w.quantized ? store_quantized(id, scale, 0, shape[0], shape)
                                           : store_dense(id, 0, scale, 0, w.view.numel(), shape))
                 .first;
    return declare(b, it->second, name);
}

}  // namespace anelm::lower
