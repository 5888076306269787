// How the executor stores an attention layer's KV cache: rows of one head at
// one position, as f16, or as int8 with a scale and zero per row (quantized
// once when the row is written, so rewinding and sharing a prefix work as they
// do on f16 rows).
#pragma once

#include <cstdint>
#include <string>

#include "io/model_spec.h"
#include "kernels/kernels.h"

namespace anelm {

// f16: keys and values as half; q8: both int8; k16v8: f16 keys, int8 values.
enum class KvType { f16, q8, k16v8 };

const char* kv_type_name(KvType t);
KvType kv_type_from_name(const std::string& name);  // throws Error
// Bytes of one kv head's key and value rows at one position.
int64_t kv_row_pair_bytes(KvType t, int64_t head_dim);
// Bytes a position adds to the caches of the layers that compute K and V.
int64_t kv_bytes_per_position(const ModelSpec& spec, KvType t);

// One KV state buffer of shape [2 * n_layer, n_head_kv, n_ctx, head_dim] in
// the type's layout: every layer's keys, then every layer's values; an int8
// half holds its rows, their scales and their zeros (bfloat16), each 64-byte
// aligned.
struct KvLayout {
    KvType type = KvType::f16;
    int64_t n_layer = 0, rows = 0, head_dim = 0;  // rows: n_head_kv * n_ctx per layer

    // u16 units of one layer's keys or values, and of the whole buffer.
    int64_t half_units(bool int8) const;
    int64_t units() const;
    bool int8_keys() const { return type == KvType::q8; }
    bool int8_values() const { return type != KvType::f16; }

    // Writes row `row` (kv head * n_ctx + position) of layer's keys and values.
    void write(uint16_t* buffer, int64_t layer, int64_t row, const float* k, const float* v) const;
    // Points args' k, v (or k_i8, k_scales, k_zeros and v's) at the layer's rows.
    void point(uint16_t* buffer, int64_t layer, kernels::AttentionArgs& args) const;

private:
    uint16_t* keys(uint16_t* buffer, int64_t layer) const;
    uint16_t* values(uint16_t* buffer, int64_t layer) const;
    void write_row(uint16_t* half, bool int8, int64_t row, const float* x) const;
    uint16_t* scales(uint16_t* half) const;
    uint16_t* zeros(uint16_t* half) const;
};

}  // namespace anelm
