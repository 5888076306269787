#include "exec/mil/constexpr_ops.h"

#include <algorithm>
#include <bit>
#include <map>
#include <mutex>

#include "base/bit_packing.h"
#include "base/error.h"
#include "base/half.h"
#include "exec/mil/literal.h"
#include "kernels/quant_isa.h"

namespace anelm::milexec {

namespace {

using Numbers = std::shared_ptr<const Tensor>;

// The numbers of a constant parameter, shared rather than copied (a weight's
// fp16 values are converted).
Numbers numbers(const ConstInput& in, const std::string& key, const coreml::BlobTable& blobs,
                const std::string& where) {
    const Slot s = in.literal ? decode_literal(*in.literal, blobs, where) : in.slot;
    if (s.tensor) return s.tensor;
    if (s.weight) return std::make_shared<const Tensor>(weight_to_tensor(*s.weight));
    fail("{}: missing input {}", where, key);
}

// The unsigned codes of a parameter, read in order; a blob's packed codes are
// unpacked a chunk at a time, so a large palettized weight's indices never
// exist as one int32 each.
class Codes {
public:
    Codes(const ConstInput& in, const coreml::BlobTable& blobs, const std::string& where) {
        if (in.literal && in.literal->has_blobfilevalue()) {
            const coreml::Blob b = blobs.blob(*in.literal);
            if (b.dtype != coreml::BlobDType::i4 && coreml::blob_dtype_bits(b.dtype) <= 8 &&
                b.dtype != coreml::BlobDType::i8) {
                blob_ = b;
                bits_ = coreml::blob_dtype_bits(b.dtype);
                shape_ = coreml::tensor_shape(in.literal->type().tensortype());
                return;
            }
        }
        tensor_ = numbers(in, "indices", blobs, where);
        if (!tensor_->f.empty()) fail("{}: indices must be integers", where);
        shape_ = tensor_->shape;
    }

    const std::vector<int64_t>& shape() const { return shape_; }

    int32_t at(int64_t k) {
        if (tensor_) return tensor_->i[static_cast<size_t>(k)];
        if (k < first_ || k >= first_ + static_cast<int64_t>(chunk_.size())) {
            constexpr int64_t chunk = int64_t{1} << 16;
            first_ = k / chunk * chunk;
            chunk_.resize(static_cast<size_t>(std::min(chunk, shape_numel(shape_) - first_)));
            unpack_codes(blob_.data.data(), static_cast<int64_t>(chunk_.size()), bits_,
                         chunk_.data(), first_);
        }
        return chunk_[static_cast<size_t>(k - first_)];
    }

private:
    Numbers tensor_;
    coreml::Blob blob_;
    int bits_ = 8;
    std::vector<int64_t> shape_;
    std::vector<uint8_t> chunk_;
    int64_t first_ = 0;
};

float value_at(const Tensor& t, int64_t k) {
    return t.f.empty() ? static_cast<float>(t.i[static_cast<size_t>(k)])
                       : t.f[static_cast<size_t>(k)];
}

// The op's declared result, written element by element: an fp16 result goes
// straight into fp16 bits, so a large weight never exists as f32.
class Dense {
public:
    Dense(const mil::Operation& op, const std::string& where)
        : where_(where), dtype_(op.outputs(0).type().tensortype().datatype()) {
        shape_ = coreml::tensor_shape(op.outputs(0).type().tensortype());
        for (int64_t d : shape_)
            if (d < 0) fail("{}: result of unknown shape {}", where, shape_text(shape_));
    }

    // Allocates the result once the inputs say how many elements the op
    // produces: a count other than the declared one fails before anything is
    // allocated or written, so set(k) has k below the declared count.
    void start(int64_t produced) {
        if (produced != shape_numel(shape_, where_))
            fail("{}: result has {} elements, declared {}", where_, produced, shape_text(shape_));
        if (is_f16())
            bits_.resize(static_cast<size_t>(produced));
        else
            t_ = make_tensor(dtype_, shape_);
    }

    bool is_f16() const { return dtype_ == mil::FLOAT16; }
    void set_bits(int64_t k, uint16_t h) { bits_[static_cast<size_t>(k)] = h; }

    void set(int64_t k, float v) {
        const size_t j = static_cast<size_t>(k);
        if (is_f16())
            bits_[j] = f32_to_f16(v);
        else if (!t_.f.empty())
            t_.f[j] = v;
        else
            t_.i[j] = static_cast<int32_t>(v);
    }

    Slot finish() {
        if (is_f16()) return slot_from_f16(shape_, std::move(bits_));
        Slot s;
        s.tensor = std::make_shared<const Tensor>(std::move(t_));
        return s;
    }

private:
    const std::string& where_;
    mil::DataType dtype_;
    std::vector<int64_t> shape_;
    std::vector<uint16_t> bits_;
    Tensor t_;
};

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
    // Dimensions of size 1 do not move either index (conv weights end in 1, 1).
    std::vector<int64_t> dims, ratios, strides;
    for (size_t d = 0; d < shape.size(); ++d)
        if (shape[d] != 1) {
            dims.push_back(shape[d]);
            ratios.push_back(ratio[d]);
            strides.push_back(bstride[d]);
        }
    if (dims.empty()) return fn(0, 0);
    if (std::count(dims.begin(), dims.end(), 0)) return;  // no elements, nor a row width
    // Rows of the last dimension: the outer dimensions fix the row's first block.
    const size_t last = dims.size() - 1;
    const int64_t width = dims[last], rows = shape_numel(dims) / width;
    std::vector<int64_t> idx(last, 0);
    for (int64_t r = 0; r < rows; ++r) {
        int64_t base = 0;
        for (size_t d = 0; d < last; ++d) base += idx[d] / ratios[d] * strides[d];
        for (int64_t j = 0; j < width; ++j)
            fn(r * width + j, base + j / ratios[last] * strides[last]);
        for (size_t d = last; d-- > 0;) {
            if (++idx[d] < dims[d]) break;
            idx[d] = 0;
        }
    }
}

// iOS16: `indices` are the packed bytes of shape-many codes, `lut` one palette.
Slot lut_ios16(const Tensor& indices, const Tensor& lut, const Tensor& shape, Dense& out,
               const std::string& where) {
    const int64_t entries = lut.numel();
    if (entries < 2 || !std::has_single_bit(static_cast<uint64_t>(entries)) || entries > 256)
        fail("{}: a lut of {} entries", where, entries);
    const int nbits = std::countr_zero(static_cast<uint64_t>(entries));
    const int64_t n = shape_numel({shape.i.begin(), shape.i.end()}, where);
    const std::vector<uint8_t> packed(indices.i.begin(), indices.i.end());
    if (static_cast<int64_t>(packed.size()) < packed_bytes(n, nbits))
        fail("{}: {} index bytes for {} {}-bit codes", where, packed.size(), n, nbits);
    out.start(n);
    std::vector<uint8_t> codes(static_cast<size_t>(n));
    unpack_codes(packed.data(), n, nbits, codes.data());
    for (int64_t k = 0; k < n; ++k) out.set(k, value_at(lut, codes[static_cast<size_t>(k)]));
    return out.finish();
}

// iOS18: `lut` is [g0, .., g(K-1), 2^nbits, vector size]; element idx of
// `indices` [K dims] reads the palette of its group idx[d] / (dim d / g[d]).
Slot lut_ios18(Codes& indices, const Tensor& lut, Dense& out, const std::string& where) {
    const size_t rank = indices.shape().size();
    if (lut.shape.size() != rank + 2) fail("{}: lut rank must be indices rank + 2", where);
    if (lut.shape[rank + 1] != 1) fail("{}: vector palettization is not supported", where);
    const int64_t entries = lut.shape[rank];
    out.start(shape_numel(indices.shape(), where));
    std::vector<int64_t> groups(lut.shape.begin(), lut.shape.begin() + static_cast<long>(rank));
    // Palette entries converted once, not per element.
    std::vector<float> table(static_cast<size_t>(lut.numel()));
    std::vector<uint16_t> table_bits(table.size());
    for (size_t j = 0; j < table.size(); ++j) {
        table[j] = value_at(lut, static_cast<int64_t>(j));
        table_bits[j] = f32_to_f16(table[j]);
    }
    for_each_block(indices.shape(), groups, where, [&](int64_t k, int64_t g) {
        const int32_t code = indices.at(k);
        if (code < 0 || code >= entries)
            fail("{}: index {} outside a lut of {}", where, code, entries);
        const size_t j = static_cast<size_t>(g * entries + code);
        if (out.is_f16())
            out.set_bits(k, table_bits[j]);
        else
            out.set(k, table[j]);
    });
    return out.finish();
}

// An iOS18 lut of a weight [n_out, n_in, 1...] with a table per group of
// whole rows and its codes packed in a blob, whole bytes per row: the weight
// kept as those codes, which the quantized products read. Null otherwise.
std::shared_ptr<const Weight> palettized(const mil::Operation& op, const ConstInput& indices,
                                         const Tensor& lut, const coreml::BlobTable& blobs,
                                         QuantDot dot) {
    if (!indices.literal || !indices.literal->has_blobfilevalue() ||
        op.outputs(0).type().tensortype().datatype() != mil::FLOAT16)
        return nullptr;
    const coreml::Blob b = blobs.blob(*indices.literal);
    const int nbits = b.dtype == coreml::BlobDType::i4 || b.dtype == coreml::BlobDType::i8
                          ? 0
                          : coreml::blob_dtype_bits(b.dtype);
    if (nbits != 1 && nbits != 2 && nbits != 3 && nbits != 4 && nbits != 6 && nbits != 8)
        return nullptr;
    const std::vector<int64_t> shape = coreml::tensor_shape(indices.literal->type().tensortype());
    const size_t rank = shape.size();
    if (rank < 2 || shape != coreml::tensor_shape(op.outputs(0).type().tensortype()) ||
        lut.shape.size() != rank + 2 || lut.shape[rank] != int64_t{1} << nbits ||
        lut.shape[rank + 1] != 1)
        return nullptr;
    for (size_t d = 1; d < rank; ++d)
        if (lut.shape[d] != 1 || (d > 1 && shape[d] != 1)) return nullptr;
    const int64_t n_out = shape[0], n_in = shape[1], tables = lut.shape[0];
    if (n_out <= 0 || n_in <= 0 || tables <= 0 || n_out % tables != 0 || n_in * nbits % 8 != 0 ||
        static_cast<int64_t>(b.data.size()) < n_out * (n_in * nbits / 8))
        return nullptr;
    auto p = std::make_shared<Palettized>();
    p->nbits = nbits;
    p->group = n_out / tables;
    p->codes = b.data.data();
    p->tables.resize(static_cast<size_t>(lut.numel()));
    for (size_t j = 0; j < p->tables.size(); ++j)
        p->tables[j] = f32_to_f16(value_at(lut, static_cast<int64_t>(j)));
    auto w = std::make_shared<Weight>();
    w->shape = shape;
    w->palettized = p;
    if (dot == QuantDot::int8)
        p->int8_dot = std::make_unique<const quant::Int8DotParts>(
            quant::int8_dot_parts(quant_matrix(*w), kernels::quant_active()));
    return w;
}

// out = scale * (data - offset), scale and offset repeated over blocks of data.
Slot shift_scale(const Tensor& data, const Tensor& scale, const Tensor* offset, Dense& out,
                 const std::string& where) {
    if (offset && offset->shape != scale.shape) fail("{}: offset and scale shapes differ", where);
    out.start(data.numel());
    for_each_block(data.shape, scale.shape, where, [&](int64_t k, int64_t p) {
        const float zero = offset ? value_at(*offset, p) : 0.0f;
        out.set(k, value_at(scale, p) * (value_at(data, k) - zero));
    });
    return out.finish();
}

// A scalar or a vector along `axis` as a tensor of the data's rank, `like`'s
// shape when it is a scalar and `like` is given.
Tensor along_axis(const Tensor& t, const std::vector<int64_t>& data_shape, int64_t axis,
                  const Tensor* like, const std::string& where) {
    std::vector<int64_t> shape(data_shape.size(), 1);
    if (t.numel() != 1) {
        if (t.shape.size() != 1 || axis < 0 || axis >= static_cast<int64_t>(shape.size()))
            fail("{}: a parameter must be a scalar or a vector along the axis", where);
        shape[static_cast<size_t>(axis)] = t.shape[0];
    } else if (like) {
        Tensor out = make_tensor(mil::FLOAT32, like->shape);
        std::fill(out.f.begin(), out.f.end(), value_at(t, 0));
        return out;
    }
    Tensor out = t;
    out.shape = std::move(shape);
    return out;
}

}  // namespace

bool is_constexpr(std::string_view type) {
    return type == "constexpr_lut_to_dense" || type == "constexpr_blockwise_shift_scale" ||
           type == "constexpr_affine_dequantize" || type == "constexpr_cast";
}

namespace {

Slot evaluate(const mil::Operation& op, const ConstParam& param, const coreml::BlobTable& blobs,
              const std::string& where, bool keep_codes, QuantDot dot) {
    const std::string& type = op.type();
    auto get = [&](const std::string& key) { return numbers(param(key), key, blobs, where); };
    Dense out(op, where);
    if (type == "constexpr_lut_to_dense") {
        const Numbers lut = get("lut");
        if (const ConstInput shape = param("shape"); !shape.empty())
            return lut_ios16(*get("indices"), *lut, *numbers(shape, "shape", blobs, where), out,
                             where);
        if (keep_codes)
            if (std::shared_ptr<const Weight> w =
                    palettized(op, param("indices"), *lut, blobs, dot)) {
                Slot s;
                s.weight = std::move(w);
                return s;
            }
        Codes indices(param("indices"), blobs, where);
        return lut_ios18(indices, *lut, out, where);
    }
    if (type == "constexpr_blockwise_shift_scale") {
        const ConstInput offset = param("offset");
        const Numbers off = offset.empty() ? nullptr : numbers(offset, "offset", blobs, where);
        return shift_scale(*get("data"), *get("scale"), off.get(), out, where);
    }
    if (type == "constexpr_affine_dequantize") {
        const Numbers data = get("quantized_data");
        const Numbers axis = get("axis");
        const int64_t a = axis->i.empty() ? 0 : axis->i[0];
        const int64_t ax = a < 0 ? a + static_cast<int64_t>(data->shape.size()) : a;
        const Tensor scale = along_axis(*get("scale"), data->shape, ax, nullptr, where);
        // One zero point may serve every scale.
        const Tensor zero = along_axis(*get("zero_point"), data->shape, ax, &scale, where);
        return shift_scale(*data, scale, &zero, out, where);
    }
    // constexpr_cast: the source's values in the declared output type.
    const Numbers source = get("source");
    out.start(source->numel());
    for (int64_t k = 0; k < source->numel(); ++k) out.set(k, value_at(*source, k));
    return out.finish();
}

// What makes two constexpr ops equal: their type, result type and literal
// inputs (blobs by offset), in a given blob table. Empty when an input is
// another op's value.
std::string cache_key(const mil::Operation& op, const coreml::BlobTable& blobs, bool keep_codes,
                      QuantDot dot) {
    std::map<std::string, const mil::Value*> literals;
    for (const auto& [key, arg] : op.inputs()) {
        if (arg.arguments_size() != 1 || !arg.arguments(0).has_value()) return {};
        literals[key] = &arg.arguments(0).value();
    }
    for (const auto& [key, value] : op.attributes())
        if (key != "name") literals[key] = &value;
    std::string out = fmt::format("{}|{}|{}|{}|{}", static_cast<const void*>(&blobs), op.type(),
                                  coreml::value_type_text(op.outputs(0).type()), keep_codes,
                                  static_cast<int>(dot));
    for (const auto& [key, value] : literals) {
        if (value->has_blobfilevalue())
            out += fmt::format("|{}@{}:{}", key, value->blobfilevalue().filename(),
                               value->blobfilevalue().offset());
        else
            out += "|" + key + "=" + value->SerializeAsString();
    }
    return out;
}

}  // namespace

// The functions of one package (prefill and infer) dequantize the same blobs:
// a large result is shared while any function holds it, so it is in memory once.
Slot run_constexpr(const mil::Operation& op, const ConstParam& param,
                   const coreml::BlobTable& blobs, const std::string& where, bool keep_codes,
                   QuantDot dot) {
    static std::mutex mutex;
    static std::map<std::string, std::weak_ptr<const Weight>> shared;
    const std::string key = cache_key(op, blobs, keep_codes, dot);
    if (!key.empty()) {
        std::lock_guard lock(mutex);
        if (auto it = shared.find(key); it != shared.end()) {
            if (std::shared_ptr<const Weight> w = it->second.lock()) {
                Slot s;
                s.weight = std::move(w);
                return s;
            }
        }
    }
    Slot s = evaluate(op, param, blobs, where, keep_codes, dot);
    if (!key.empty() && s.weight) {
        std::lock_guard lock(mutex);
        std::erase_if(shared, [](const auto& e) { return e.second.expired(); });
        shared[key] = s.weight;
    }
    return s;
}

}  // namespace anelm::milexec
