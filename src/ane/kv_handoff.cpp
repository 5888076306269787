#include "ane/kv_handoff.h"

#include <fmt/format.h>

#include <chrono>

#include "base/error.h"
#include "exec/cpu/kernels/kernels.h"

namespace anelm {

KvHandoff hand_off_kv(const AnePipeline& packages, Session& cpu) {
    const auto start = std::chrono::steady_clock::now();
    KvHandoff h;
    h.tokens = packages.pos();
    if (h.tokens > cpu.n_ctx())
        fail("KV hand-off: {} positions, the CPU session's context holds {}", h.tokens,
             cpu.n_ctx());
    const std::vector<ir::StateDecl>& states = cpu.program().states;
    for (size_t k = 0; k < states.size(); ++k) {
        const ir::StateDecl& decl = states[k];
        const milexec::Tensor& from = packages.state(decl.name);
        const std::vector<int64_t>& to_shape = decl.shape;
        if (from.shape.size() != 4 || to_shape.size() != 4 || from.shape[0] != to_shape[0] ||
            from.shape[1] != to_shape[1] || from.shape[3] != to_shape[3])
            fail("KV hand-off: state {} is [{}] in the packages, [{}] on the CPU", decl.name,
                 fmt::join(from.shape, ", "), fmt::join(to_shape, ", "));
        if (h.tokens > from.shape[2])
            fail("KV hand-off: {} positions, the packages' state holds {}", h.tokens,
                 from.shape[2]);
        std::vector<uint16_t>& to = cpu.state().buffers.at(k);
        const int64_t rows = to_shape[0] * to_shape[1], hd = to_shape[3];
        for (int64_t r = 0; r < rows; ++r)
            kernels::f32_to_f16_row(from.f.data() + r * from.shape[2] * hd, h.tokens * hd,
                                    to.data() + r * to_shape[2] * hd);
        h.bytes += rows * h.tokens * hd * 2;
    }
    cpu.advance_to(h.tokens);
    h.seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return h;
}

}  // namespace anelm
