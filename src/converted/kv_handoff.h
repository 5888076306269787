// Hands a KV cache over from the converted packages (the Neural Engine's form,
// run here on the MIL interpreter) to a CPU session, which goes on decoding:
// the hybrid of an ANE prefill and a GPU decode, with the CPU executor
// standing in for the GPU.
#pragma once

#include <cstdint>

#include "converted/ane_pipeline.h"
#include "runtime/session.h"

namespace anelm {

struct KvHandoff {
    int64_t tokens = 0;  // positions handed over
    int64_t bytes = 0;   // fp16 bytes of K and V they hold
    double seconds = 0;
};

// Both sides keep one fp16 state [2L, kv_heads, ctx, head_dim] (K of layer i at
// slot i, V at L + i); the interpreter holds its fp16 values as f32, and the
// contexts may differ. Copies the packages' first pos() positions of every
// state into the session's and moves the session there. Throws Error when a
// state is missing or shaped otherwise, or the session's context is shorter.
KvHandoff hand_off_kv(const AnePipeline& packages, Session& cpu);

// One state: the first `tokens` positions of `from` (the interpreter's f32
// values) into `to` (f16, shaped `to_shape`). Returns the fp16 bytes they hold.
int64_t hand_off_state(const milexec::Tensor& from, const ir::StateDecl& to_decl,
                       std::vector<uint16_t>& to, int64_t tokens);

}  // namespace anelm
