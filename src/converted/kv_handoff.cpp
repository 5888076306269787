#include "converted/kv_handoff.h"

#include <fmt/format.h>

#include <chrono>

#include "base/error.h"
#include "kernels/kernels.h"

namespace anelm {

int64_t hand_off_state(const milexec::Tensor& from, const ir::StateDecl& to_decl,
                       std::vector<uint16_t>& to, int64_t tokens) {
    const std::vector<int64_t>& shape = to_decl.shape;
    if (from.shape.size() != 4 || shape.size() != 4 || from.shape[0] != shape[0] ||
        from.shape[1] != shape[1] || from.shape[3] != shape[3])
        fail("KV hand-off: state {} is [{}] in the packages, [{}] on the CPU", to_decl.name,
             fmt::join(from.shape, ", "), fmt::join(shape, ", "));
    if (tokens > from.shape[2] || tokens > shape[2])
        fail("KV hand-off: {} positions, the states hold {} and {}", tokens, from.shape[2],
             shape[2]);
    const int64_t rows = shape[0] * shape[1], hd = shape[3];
    for (int64_t r = 0; r < rows; ++r)
        kernels::f32_to_f16_row(from.f.data() + r * from.shape[2] * hd, tokens * hd,
                                to.data() + r * shape[2] * hd);
    return rows * tokens * hd * 2;
}

KvHandoff hand_off_kv(const AnePipeline& packages, Session& cpu) {
    const auto start = std::chrono::steady_clock::now();
    KvHandoff h;
    h.tokens = packages.pos();
    if (h.tokens > cpu.n_ctx())
        fail("KV hand-off: {} positions, the CPU session's context holds {}", h.tokens,
             cpu.n_ctx());
    if (cpu.executor().kv_type() != KvType::f16)
        fail("KV hand-off: the CPU session keeps a {} KV cache, the hand-off writes f16 rows",
             kv_type_name(cpu.executor().kv_type()));
    const std::vector<ir::StateDecl>& states = cpu.program().states;
    for (size_t k = 0; k < states.size(); ++k) {
        if (!packages.has_state(states[k].name))
            fail(
                "KV hand-off: the packages carry {} as function inputs and outputs (conv "
                "windows, delta-rule states), which is not handed off: decode where the prompt ran",
                states[k].name);
        h.bytes += hand_off_state(packages.state(states[k].name), states[k],
                                  cpu.state().buffers.at(k), h.tokens);
    }
    cpu.advance_to(h.tokens);
    h.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return h;
}

}  // namespace anelm
