// Run-time choice between the SIMD leaves and the scalar reference.
#include <atomic>

#include "base/error.h"
#include "exec/cpu/kernels/isa.h"

#if ANELM_HAVE_X86_KERNELS
#include <cpuid.h>
#endif

namespace anelm::kernels {

namespace {

std::atomic<bool> scalar_forced{false};

#if ANELM_HAVE_X86_KERNELS
// Not every compiler's __builtin_cpu_supports knows F16C: ask CPUID leaf 1.
bool has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif

const Isa* detect() {
#if ANELM_HAVE_X86_KERNELS
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c()) {
        return &avx2_isa;
    }
#endif
#if ANELM_HAVE_ARM_KERNELS
    return &neon_isa;  // NEON and half conversions are baseline on arm64
#endif
    return nullptr;
}

}  // namespace

const Isa* active() {
    static const Isa* const detected = detect();
    return scalar_forced.load(std::memory_order_relaxed) ? nullptr : detected;
}

const char* active_isa() {
    const Isa* isa = active();
    return isa ? isa->name : "scalar";
}

void force_scalar(bool on) {
    scalar_forced.store(on);
}

void check_matrix(const Matrix& w) {
    if (w.dtype != DType::f32 && w.dtype != DType::f16 && w.dtype != DType::bf16) {
        fail("matmul: weight dtype {}, expected f32, f16 or bf16", dtype_name(w.dtype));
    }
}

void rms_norm(const float* x, const float* gain, float gain_offset, int64_t n, float eps,
              float* y) {
    const Isa* isa = active();
    isa ? isa->rms_norm(x, gain, gain_offset, n, eps, y)
        : ref::rms_norm(x, gain, gain_offset, n, eps, y);
}

void softmax(float* x, int64_t n) {
    const Isa* isa = active();
    isa ? isa->softmax(x, n) : ref::softmax(x, n);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
    const Isa* isa = active();
    isa ? isa->silu_mul(gate, up, n, out) : ref::silu_mul(gate, up, n, out);
}

void rope(float* x, int64_t n_heads, int64_t head_dim, const float* cos, const float* sin,
          bool interleaved) {
    const Isa* isa = active();
    isa ? isa->rope(x, n_heads, head_dim, cos, sin, interleaved)
        : ref::rope(x, n_heads, head_dim, cos, sin, interleaved);
}

void f32_to_f16_row(const float* x, int64_t n, uint16_t* y) {
    const Isa* isa = active();
    isa ? isa->f32_to_f16_row(x, n, y) : ref::f32_to_f16_row(x, n, y);
}

void f16_to_f32_row(const uint16_t* x, int64_t n, float* y) {
    const Isa* isa = active();
    isa ? isa->f16_to_f32_row(x, n, y) : ref::f16_to_f32_row(x, n, y);
}

void round_to_f16_row(float* x, int64_t n) {
    const Isa* isa = active();
    isa ? isa->round_to_f16_row(x, n) : ref::round_to_f16_row(x, n);
}

}  // namespace anelm::kernels
