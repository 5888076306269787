#include "io/tensor_values.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "base/error.h"
#include "base/half.h"
#include "io/ggml_types.h"

namespace anelm {

namespace {

template <class Bits, class Widen>
void widen(const std::byte* data, int64_t begin, int64_t n, float* out, Widen to_f32) {
    for (int64_t i = 0; i < n; ++i) {
        Bits b;
        std::memcpy(&b, data + (begin + i) * static_cast<int64_t>(sizeof(Bits)), sizeof(Bits));
        out[i] = to_f32(b);
    }
}

// Whole blocks straight into out; a block the range only partly covers
// through a scratch block.
void read_blocks(const TensorView& w, int64_t begin, int64_t n, float* out) {
    const auto type = static_cast<GgmlType>(w.block_type);
    const int64_t per = w.block_elems;
    std::vector<float> scratch;
    int64_t i = begin;
    const int64_t end = begin + n;
    while (i < end) {
        const int64_t block = i / per, skip = i - block * per;
        const std::byte* src = w.data + block * w.block_bytes;
        if (skip == 0 && end - i >= per) {
            const int64_t whole = (end - i) / per;
            dequantize_row(type, src, out + (i - begin), whole * per);
            i += whole * per;
            continue;
        }
        scratch.resize(static_cast<size_t>(per));
        dequantize_row(type, src, scratch.data(), per);
        const int64_t take = std::min(per - skip, end - i);
        std::copy_n(scratch.data() + skip, take, out + (i - begin));
        i += take;
    }
}

}  // namespace

void read_f32(const TensorView& w, int64_t begin, int64_t n, float* out) {
    if (begin < 0 || n < 0 || begin + n > w.numel())
        fail("elements {} to {} of a tensor of {}", begin, begin + n, w.numel());
    switch (w.dtype) {
        case DType::f32:
            std::memcpy(out, w.data + begin * 4, static_cast<size_t>(n) * 4);
            return;
        case DType::f16:
            return widen<uint16_t>(w.data, begin, n, out, f16_to_f32);
        case DType::bf16:
            return widen<uint16_t>(w.data, begin, n, out, bf16_to_f32);
        case DType::blocks:
            return read_blocks(w, begin, n, out);
        default:
            fail("a tensor of dtype {} has no float values", dtype_name(w.dtype));
    }
}

}  // namespace anelm
