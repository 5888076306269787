// Run-time choice between the SIMD leaves and the scalar reference.
#include <atomic>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "kernels/isa.h"

#if ANELM_HAVE_X86_KERNELS
#include <cpuid.h>
#endif

namespace anelm::kernels {

namespace {

#if ANELM_HAVE_X86_KERNELS
// Not every compiler's __builtin_cpu_supports knows F16C: ask CPUID leaf 1.
bool has_f16c() {
    unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
    return __get_cpuid(1, &eax, &ebx, &ecx, &edx) && (ecx & bit_F16C) != 0;
}
#endif

// The leaf tables this processor runs, best first, then null for the scalar reference.
std::vector<const Isa*> detect() {
    std::vector<const Isa*> found;
#if ANELM_HAVE_X86_KERNELS
    __builtin_cpu_init();
    const bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && has_f16c();
    if (avx2 && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq")) {
        found.push_back(&avx512_isa);
    }
    if (avx2) found.push_back(&avx2_isa);
#endif
#if ANELM_HAVE_ARM_KERNELS
    found.push_back(&neon_isa);  // NEON and half conversions are baseline on arm64
#endif
    found.push_back(nullptr);
    return found;
}

const std::vector<const Isa*>& available() {
    static const std::vector<const Isa*> tables = detect();
    return tables;
}

const char* name_of(const Isa* isa) {
    return isa ? isa->name : "scalar";
}

// The place in available() of the table called `name`.
int64_t index_of(std::string_view name, std::string_view what) {
    const auto& tables = available();
    std::string names;
    for (size_t i = 0; i < tables.size(); ++i) {
        if (name == name_of(tables[i])) return static_cast<int64_t>(i);
        names += (i ? ", " : "") + std::string(name_of(tables[i]));
    }
    fail("{}: instruction set '{}', this processor runs {}", what, name, names);
}

// ANELM_ISA if set, else the best.
int64_t default_index() {
    const char* env = std::getenv("ANELM_ISA");
    return env && *env ? index_of(env, "ANELM_ISA") : 0;
}

constexpr int64_t by_default = -1;
std::atomic<int64_t> forced{by_default};

}  // namespace

#if ANELM_HAVE_X86_KERNELS
bool has_avx512_vnni() {
    static const bool has = [] {
        __builtin_cpu_init();
        return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
               __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512dq") &&
               __builtin_cpu_supports("avx512vnni");
    }();
    return has;
}
#endif

const Isa* active() {
    static const int64_t default_choice = default_index();
    const int64_t i = forced.load(std::memory_order_relaxed);
    return available()[static_cast<size_t>(i == by_default ? default_choice : i)];
}

const char* active_isa() {
    return name_of(active());
}

std::vector<const char*> available_isas() {
    std::vector<const char*> names;
    for (const Isa* isa : available()) names.push_back(name_of(isa));
    return names;
}

void use_isa(std::string_view name) {
    forced.store(name.empty() ? by_default : index_of(name, "use_isa"));
}

void force_scalar(bool on) {
    forced.store(on ? static_cast<int64_t>(available().size()) - 1 : by_default);
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
    if (isa) {
        isa->softmax(x, n);
    } else {
        ref::softmax(x, n);
    }
}

void weighted_rows(const float* a, int64_t n_sets, int64_t lda, const float* rows, int64_t n_rows,
                   int64_t width, float* out) {
    const Isa* isa = active();
    isa ? isa->weighted_rows(a, n_sets, lda, rows, n_rows, width, out)
        : ref::weighted_rows(a, n_sets, lda, rows, n_rows, width, out);
}

void sigmoid(const float* x, int64_t n, float* y) {
    const Isa* isa = active();
    isa ? isa->sigmoid(x, n, y) : ref::sigmoid(x, n, y);
}

void delta_rule_step(float* s, int64_t dk, int64_t dv, const float* q, const float* k,
                     const float* v, float beta, float decay, float* delta, float* o) {
    const Isa* isa = active();
    isa ? isa->delta_rule_step(s, dk, dv, q, k, v, beta, decay, delta, o)
        : ref::delta_rule_step(s, dk, dv, q, k, v, beta, decay, delta, o);
}

void silu_mul(const float* gate, const float* up, int64_t n, float* out) {
    const Isa* isa = active();
    isa ? isa->silu_mul(gate, up, n, out) : ref::silu_mul(gate, up, n, out);
}

void gelu_tanh_mul(const float* gate, const float* up, int64_t n, float* out) {
    const Isa* isa = active();
    isa ? isa->gelu_tanh_mul(gate, up, n, out) : ref::gelu_tanh_mul(gate, up, n, out);
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
