#include "synth/random_fill.h"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <type_traits>

#include "base/error.h"
#include "base/half.h"

namespace anelm::synth {

namespace {

constexpr size_t block_elems = size_t{1} << 16;

uint64_t splitmix64(uint64_t& x) {
    uint64_t z = (x += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

uint64_t fnv1a(std::string_view s) {
    uint64_t h = 0xcbf29ce484222325u;
    for (unsigned char c : s) h = (h ^ c) * 0x100000001b3u;
    return h;
}

// xoshiro256**: small state, fast, and good enough for weights nobody trains.
class Xoshiro {
public:
    explicit Xoshiro(uint64_t key) {
        for (uint64_t& w : s_) w = splitmix64(key);
    }
    uint64_t next() {
        const uint64_t result = std::rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = std::rotl(s_[3], 45);
        return result;
    }

private:
    uint64_t s_[4];
};

template <typename T>
void store(std::byte* out, size_t i, T v) {
    std::memcpy(out + i * sizeof(T), &v, sizeof(T));
}

void store_value(std::byte* out, size_t i, DType dtype, float x) {
    switch (dtype) {
        case DType::f32:
            store(out, i, x);
            return;
        case DType::f16:
            store(out, i, f32_to_f16(x));
            return;
        case DType::bf16:
            store(out, i, f32_to_bf16(x));
            return;
        default:
            break;
    }
    fail("synth: cannot write weights as {}", dtype_name(dtype));
}

template <DType D>
void fill_block(std::byte* out, size_t begin, size_t end, float std, uint64_t key) {
    Xoshiro rng(key);
    // Four 16-bit uniforms sum to mean 131070 and variance (65536^2 - 1) / 3.
    const float scale = std / std::sqrt((65536.0f * 65536.0f - 1.0f) / 3.0f);
    for (size_t i = begin; i < end; ++i) {
        const uint64_t r = rng.next();
        const auto sum = static_cast<int32_t>((r & 0xffff) + ((r >> 16) & 0xffff) +
                                              ((r >> 32) & 0xffff) + (r >> 48));
        const float x = static_cast<float>(sum - 131070) * scale;
        if constexpr (D == DType::f32) store(out, i, x);
        if constexpr (D == DType::f16) store(out, i, f32_to_f16(x));
        if constexpr (D == DType::bf16) store(out, i, f32_to_bf16(x));
    }
}

}  // namespace

void fill_normal(std::span<std::byte> out, DType dtype, float std, uint64_t seed,
                 std::string_view name, ThreadPool& pool) {
    const size_t n = out.size() / dtype_size(dtype);
    uint64_t mix = seed;
    const uint64_t stream = splitmix64(mix) ^ fnv1a(name);
    const auto n_blocks = static_cast<int64_t>((n + block_elems - 1) / block_elems);
    auto fill = [&](auto tag) {
        constexpr DType D = decltype(tag)::value;
        pool.run(n_blocks, [&](int64_t block, int) {
            const size_t begin = static_cast<size_t>(block) * block_elems;
            const uint64_t key = stream ^ (static_cast<uint64_t>(block) * 0xd1342543de82ef95u);
            fill_block<D>(out.data(), begin, std::min(n, begin + block_elems), std, key);
        });
    };
    switch (dtype) {
        case DType::f32:
            return fill(std::integral_constant<DType, DType::f32>{});
        case DType::f16:
            return fill(std::integral_constant<DType, DType::f16>{});
        case DType::bf16:
            return fill(std::integral_constant<DType, DType::bf16>{});
        default:
            break;
    }
    fail("synth: cannot write weights as {}", dtype_name(dtype));
}

void fill_constant(std::span<std::byte> out, DType dtype, float value) {
    const size_t n = out.size() / dtype_size(dtype);
    for (size_t i = 0; i < n; ++i) store_value(out.data(), i, dtype, value);
}

}  // namespace anelm::synth
