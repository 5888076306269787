// The delta rule's step as the ANE lowering writes it per token, on a state
// S [1, H, dk, dv] with per-head rows k, q, beta k [1, H, 1, dk] and v
// [1, H, 1, dv]:
//   S' = S * decay; recalled = k @ S'; error = v - recalled;
//   write = (beta k)ᵀ @ error; S'' = S' + write; out = q @ S''.
// Op by op that is six passes over the state and six outputs to allocate;
// here each head's rows are walked while they are in L1, with the same
// arithmetic: every intermediate rounded as its op's output would be, the
// products by the same kernel as matmul's.
#include "exec/mil/ops.h"
#include "kernels/kernels.h"

namespace anelm::milexec::ops {

namespace {

// `shape` with its last two dimensions replaced.
std::vector<int64_t> with_last(std::vector<int64_t> shape, int64_t rows, int64_t cols) {
    shape[shape.size() - 2] = rows;
    shape.back() = cols;
    return shape;
}

}  // namespace

bool delta_step(std::span<OpContext* const> ops, Rounding rounding) {
    if (ops.size() != 6) return false;
    OpContext &decayed = *ops[0], &recall = *ops[1], &error = *ops[2], &write = *ops[3],
              &state = *ops[4], &out = *ops[5];
    const FloatSpan s = decayed.floats("x"), decay = decayed.floats("y");
    const FloatSpan k = recall.floats("x"), v = error.floats("x"), bk = write.floats("x"),
                    q = out.floats("x");
    if (s.shape.size() < 3) return false;
    const int64_t dk = s.shape[s.shape.size() - 2], dv = s.shape.back();
    const int64_t heads = shape_numel(s.shape) / std::max<int64_t>(dk * dv, 1);
    const std::vector<int64_t> key_rows = with_last(s.shape, 1, dk);
    if (decay.shape != with_last(s.shape, 1, 1) || k.shape != key_rows || bk.shape != key_rows ||
        q.shape != key_rows || v.shape != with_last(s.shape, 1, dv))
        return false;
    // matmul's x @ y reads y's rows up to the last column any row of x uses.
    const int64_t k_used = last_column_unlike(k.data, heads, dk, 0.0f);
    const int64_t q_used = last_column_unlike(q.data, heads, dk, 0.0f);
    // A carried state's layer viewed in place (CompiledOp::carried_step): the
    // new state is written over the old, which nothing else reads (each head
    // reads its own rows before writing them). The view is of a tensor the
    // run made, created non-const.
    const Slot view = decayed.slot("x");
    const bool in_place = decayed.op().carried_step && view.block;
    Tensor next = in_place ? Tensor{} : state.output(0, s.shape);
    float* next_data = in_place ? const_cast<float*>(s.data) : next.f.data();
    Tensor o = out.output(0, v.shape);
    decayed.pool().run(heads, [&](int64_t h, int) {
        thread_local std::vector<float> row, e;
        row.resize(static_cast<size_t>(dv));
        e.resize(static_cast<size_t>(dv));
        const float* sh = s.data + h * dk * dv;
        float* nh = next_data + h * dk * dv;
        const float d = decay.data[h];
        for (int64_t i = 0; i < dk * dv; ++i) nh[i] = sh[i] * d;
        round_as(decayed, rounding, nh, dk * dv);
        kernels::weighted_rows(k.data + h * dk, 1, dk, nh, k_used, dv, e.data());
        round_as(recall, rounding, e.data(), dv);
        const float* vh = v.data + h * dv;
        for (int64_t j = 0; j < dv; ++j) e[j] = vh[j] - e[j];
        round_as(error, rounding, e.data(), dv);
        for (int64_t i = 0; i < dk; ++i) {
            const float b = bk.data[h * dk + i];
            // matmul's sum of one product starts at 0 (a -0 product becomes +0).
            for (int64_t j = 0; j < dv; ++j) row[j] = 0.0f + b * e[j];
            round_as(write, rounding, row.data(), dv);
            float* nr = nh + i * dv;
            for (int64_t j = 0; j < dv; ++j) nr[j] += row[j];
            round_as(state, rounding, nr, dv);
        }
        kernels::weighted_rows(q.data + h * dk, 1, dk, nh, q_used, dv, o.f.data() + h * dv);
        round_as(out, rounding, o.f.data() + h * dv, dv);
    });
    if (in_place)
        state.set_slot(0, view);
    else
        state.set(0, std::move(next));
    out.set(0, std::move(o));
    return true;
}

}  // namespace anelm::milexec::ops
