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

// Eight xoshiro256** generators side by side: independent streams, so the
// processor overlaps them instead of waiting on one dependency chain.
class XoshiroLanes {
public:
    static constexpr size_t n = 8;

    explicit XoshiroLanes(uint64_t key) {
        for (size_t l = 0; l < n; ++l) {
            s0_[l] = splitmix64(key);
            s1_[l] = splitmix64(key);
            s2_[l] = splitmix64(key);
            s3_[l] = splitmix64(key);
        }
    }

    void next(uint64_t (&out)[n]) {
        for (size_t l = 0; l < n; ++l) {
            out[l] = std::rotl(s1_[l] * 5, 7) * 9;
            const uint64_t t = s1_[l] << 17;
            s2_[l] ^= s0_[l];
            s3_[l] ^= s1_[l];
            s1_[l] ^= s2_[l];
            s0_[l] ^= s3_[l];
            s2_[l] ^= t;
            s3_[l] = std::rotl(s3_[l], 45);
        }
    }

private:
    uint64_t s0_[n], s1_[n], s2_[n], s3_[n];
};

template <typename T>
void store(std::byte* out, size_t i, T v) {
    std::memcpy(out + i * sizeof(T), &v, sizeof(T));
}

template <DType D>
void store_as(std::byte* out, size_t i, float x) {
    if constexpr (D == DType::f32) store(out, i, x);
    if constexpr (D == DType::f16) store(out, i, f32_to_f16(x));
    if constexpr (D == DType::bf16) store(out, i, f32_to_bf16(x));
}

template <DType D>
void fill_block(std::byte* out, size_t begin, size_t end, float std, uint64_t key) {
    XoshiroLanes rng(key);
    // Four 16-bit uniforms sum to mean 131070 and variance (65536^2 - 1) / 3.
    const float scale = std / std::sqrt((65536.0f * 65536.0f - 1.0f) / 3.0f);
    uint64_t r[XoshiroLanes::n];
    float x[XoshiroLanes::n];
    for (size_t i = begin; i < end; i += XoshiroLanes::n) {
        rng.next(r);
        for (size_t l = 0; l < XoshiroLanes::n; ++l) {
            const uint64_t v = r[l];
            const auto sum = static_cast<int32_t>((v & 0xffff) + ((v >> 16) & 0xffff) +
                                                  ((v >> 32) & 0xffff) + (v >> 48));
            x[l] = static_cast<float>(sum - 131070) * scale;
        }
        const size_t count = std::min(XoshiroLanes::n, end - i);
        for (size_t l = 0; l < count; ++l) store_as<D>(out, i + l, x[l]);
    }
}

// Calls fn with the dtype as a compile-time constant, so inner loops are specialised.
template <typename Fn>
void with_dtype(DType dtype, Fn&& fn) {
    switch (dtype) {
        case DType::f32:
            return fn(std::integral_constant<DType, DType::f32>{});
        case DType::f16:
            return fn(std::integral_constant<DType, DType::f16>{});
        case DType::bf16:
            return fn(std::integral_constant<DType, DType::bf16>{});
        default:
            break;
    }
    fail("synth: cannot write weights as {}", dtype_name(dtype));
}

}  // namespace

void fill_normal(std::span<std::byte> out, DType dtype, float std, uint64_t seed,
                 std::string_view name, ThreadPool& pool) {
    const size_t n = out.size() / dtype_size(dtype);
    uint64_t mix = seed;
    const uint64_t stream = splitmix64(mix) ^ fnv1a(name);
    const auto n_blocks = static_cast<int64_t>((n + block_elems - 1) / block_elems);
    with_dtype(dtype, [&](auto tag) {
        pool.run(n_blocks, [&](int64_t block, int) {
            const size_t begin = static_cast<size_t>(block) * block_elems;
            const uint64_t key = stream ^ (static_cast<uint64_t>(block) * 0xd1342543de82ef95u);
            fill_block<tag()>(out.data(), begin, std::min(n, begin + block_elems), std, key);
        });
    });
}

void fill_constant(std::span<std::byte> out, DType dtype, float value) {
    const size_t n = out.size() / dtype_size(dtype);
    with_dtype(dtype, [&](auto tag) {
        for (size_t i = 0; i < n; ++i) store_as<tag()>(out.data(), i, value);
    });
}

}  // namespace anelm::synth
