// The op implementations, one function per family; op_table.cpp maps MIL op
// types to them. Each checks its inputs and its outputs' declared types.
#pragma once

#include <span>

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
// Products of one input by palettized weights (CompiledOp::Fusion::stacked: a layer's
// query, key and value convs; its gate and up; a split LM head's parts), `ops`
// the contexts of the first op and the ones stacked on it, in one
// quant_matmul_stacked call: the input rounded once and every matrix in one
// pool run. False when they are not all pointwise convs of one position row
// or all linears of palettized weights (the caller then runs them one by one).
bool stacked_products(std::span<OpContext* const> ops);

// ops_delta.cpp
// One step of the delta rule written as ops (CompiledOp::Fusion::delta_step),
// `ops` holding the contexts of the mul and the five after it: computed head
// by head in one pass with each op's rounding, or false when the values do
// not have the step's shapes (the caller then runs the ops one by one).
bool delta_step(std::span<OpContext* const> ops, Rounding rounding);

// ops_reduce.cpp
// An RMSNorm as the layer_norm of [x, -x] (CompiledOp::Fusion::rms_norm),
// `ops` the contexts of mul(x, -1), concat, layer_norm, slice_by_index and
// the gain's mul when there is one: row by row with the ops' arithmetic and
// rounding, or false when the values do not have those shapes.
bool rms_norm_step(std::span<OpContext* const> ops, Rounding rounding);

}  // namespace anelm::milexec::ops
