#include "exec/cpu/kv_cache.h"

#include "base/error.h"

namespace anelm {

namespace {

int64_t align64(int64_t bytes) {
    return (bytes + 63) & ~int64_t{63};
}

}  // namespace

const char* kv_type_name(KvType t) {
    switch (t) {
        case KvType::f16:
            return "f16";
        case KvType::q8:
            return "q8";
        case KvType::k16v8:
            return "k16v8";
    }
    return "?";
}

KvType kv_type_from_name(const std::string& name) {
    for (KvType t : {KvType::f16, KvType::q8, KvType::k16v8})
        if (name == kv_type_name(t)) return t;
    fail("unknown KV cache type '{}' (expected f16, q8 or k16v8)", name);
}

int64_t kv_row_pair_bytes(KvType t, int64_t head_dim) {
    const int64_t int8_row = head_dim + 4, f16_row = 2 * head_dim;  // codes, bf16 scale and zero
    switch (t) {
        case KvType::f16:
            return 2 * f16_row;
        case KvType::q8:
            return 2 * int8_row;
        case KvType::k16v8:
            return f16_row + int8_row;
    }
    return 0;
}

int64_t kv_bytes_per_position(const ModelSpec& spec, KvType t) {
    int64_t n = 0;
    for (int64_t head_dim : kv_head_dims(spec))
        n += spec.n_head_kv * kv_row_pair_bytes(t, head_dim);
    return n;
}

int64_t KvLayout::half_units(bool int8) const {
    if (!int8) return rows * head_dim;
    return (align64(rows * head_dim) + 2 * align64(rows * 2)) / 2;
}

int64_t KvLayout::units() const {
    return n_layer * (half_units(int8_keys()) + half_units(int8_values()));
}

uint16_t* KvLayout::keys(uint16_t* buffer, int64_t layer) const {
    return buffer + half_units(int8_keys()) * layer;
}

uint16_t* KvLayout::values(uint16_t* buffer, int64_t layer) const {
    return buffer + half_units(int8_keys()) * n_layer + half_units(int8_values()) * layer;
}

uint16_t* KvLayout::scales(uint16_t* half) const {
    return half + align64(rows * head_dim) / 2;
}

uint16_t* KvLayout::zeros(uint16_t* half) const {
    return scales(half) + align64(rows * 2) / 2;
}

void KvLayout::write_row(uint16_t* half, bool int8, int64_t row, const float* x) const {
    if (int8) {
        kernels::quantize_kv_row(x, head_dim, reinterpret_cast<int8_t*>(half) + row * head_dim,
                                 scales(half) + row, zeros(half) + row);
    } else {
        kernels::f32_to_f16_row(x, head_dim, half + row * head_dim);
    }
}

void KvLayout::write(uint16_t* buffer, int64_t layer, int64_t row, const float* k,
                     const float* v) const {
    write_row(keys(buffer, layer), int8_keys(), row, k);
    write_row(values(buffer, layer), int8_values(), row, v);
}

void KvLayout::point(uint16_t* buffer, int64_t layer, kernels::AttentionArgs& args) const {
    uint16_t* k = keys(buffer, layer);
    uint16_t* v = values(buffer, layer);
    if (int8_keys()) {
        args.k_i8 = reinterpret_cast<const int8_t*>(k);
        args.k_scales = scales(k);
        args.k_zeros = zeros(k);
    } else {
        args.k = k;
    }
    if (int8_values()) {
        args.v_i8 = reinterpret_cast<const int8_t*>(v);
        args.v_scales = scales(v);
        args.v_zeros = zeros(v);
    } else {
        args.v = v;
    }
}

}  // namespace anelm
