#include "exec/mil/ops.h"

namespace anelm::milexec::ops {

// A reference to the state's buffer, not a copy: readers that only slice it
// copy just their slice.
void read_state(OpContext& ctx) {
    const Slot& in = ctx.slot("input");
    if (!in.state) ctx.fail("input is not a state");
    Slot out;
    out.state = in.state;
    ctx.set_slot(0, std::move(out));
}

void write_state(OpContext& ctx) {
    Tensor* state = ctx.slot("input").state;
    if (!state) ctx.fail("input is not a state");
    if (ctx.slot("data").state == state) return;  // updated in place already
    const Tensor& data = ctx.tensor("data");
    if (data.shape != state->shape || is_float_type(data.dtype) != is_float_type(state->dtype))
        ctx.fail("data {}{} does not match the state {}{}", coreml::mil_dtype_name(data.dtype),
                 shape_text(data.shape), coreml::mil_dtype_name(state->dtype),
                 shape_text(state->shape));
    ctx.detach_readers(state, -1);
    state->f = data.f;
    state->i = data.i;
}

}  // namespace anelm::milexec::ops
