// The op implementations, one function per family; op_table.cpp maps MIL op
// types to them. Each checks its inputs and its outputs' declared types.
#pragma once

#include "exec/mil/op_context.h"

namespace anelm::milexec::ops {

// ops_elementwise.cpp
// sqrt, rsqrt, exp, log, abs, square, relu, sigmoid, silu, tanh, gelu, sin, cos, erf, floor,
// ceil, round, sign, inverse
void unary(OpContext& ctx);
// add, sub, mul, real_div, pow, maximum, minimum, floor_div, mod, comparisons, logical_*
void binary(OpContext& ctx);
void logical_not(OpContext& ctx);
void select(OpContext& ctx);
void clip(OpContext& ctx);
void cast(OpContext& ctx);

// ops_reduce.cpp
void reduce(OpContext& ctx);      // reduce_sum, reduce_mean, reduce_max, reduce_min, reduce_prod
void reduce_arg(OpContext& ctx);  // reduce_argmax, reduce_argmin
void softmax(OpContext& ctx);
void topk(OpContext& ctx);
void layer_norm(OpContext& ctx);

// ops_shape.cpp
void reshape(OpContext& ctx);  // reshape, squeeze, expand_dims
void transpose(OpContext& ctx);
void concat(OpContext& ctx);
void stack(OpContext& ctx);
void split(OpContext& ctx);
void tile(OpContext& ctx);
void band_part(OpContext& ctx);
void fill(OpContext& ctx);
void range_1d(OpContext& ctx);

// ops_slice.cpp
void slice_by_index(OpContext& ctx);
void slice_by_size(OpContext& ctx);
void slice_update(OpContext& ctx);
void gather(OpContext& ctx);
void gather_along_axis(OpContext& ctx);

// ops_state.cpp
void read_state(OpContext& ctx);
void write_state(OpContext& ctx);

// ops_linear.cpp
void linear(OpContext& ctx);
void matmul(OpContext& ctx);
void conv(OpContext& ctx);
void scaled_dot_product_attention(OpContext& ctx);

// ops_delta.cpp
// One step of the delta rule written as ops (CompiledOp::delta_step), `ops`
// holding the contexts of the mul and the five after it: computed head by
// head in one pass with each op's rounding, or false when the values do not
// have the step's shapes (the caller then runs the ops one by one).
bool delta_step(std::array<OpContext*, 6> ops, Rounding rounding);

}  // namespace anelm::milexec::ops
