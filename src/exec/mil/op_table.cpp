#include "exec/mil/ops.h"

namespace anelm::milexec {

namespace {

const std::vector<OpDef>& op_table() {
    static const std::vector<OpDef> table = {
        {"sqrt", ops::unary, {"x"}},
        {"rsqrt", ops::unary, {"x"}},
        {"exp", ops::unary, {"x"}},
        {"log", ops::unary, {"x"}},
        {"abs", ops::unary, {"x"}},
        {"square", ops::unary, {"x"}},
        {"relu", ops::unary, {"x"}},
        {"sigmoid", ops::unary, {"x"}},
        {"silu", ops::unary, {"x"}},
        {"softplus", ops::unary, {"x"}},
        {"tanh", ops::unary, {"x"}},
        {"gelu", ops::unary, {"x"}},
        {"sin", ops::unary, {"x"}},
        {"cos", ops::unary, {"x"}},
        {"erf", ops::unary, {"x"}},
        {"floor", ops::unary, {"x"}},
        {"ceil", ops::unary, {"x"}},
        {"round", ops::unary, {"x"}},
        {"sign", ops::unary, {"x"}},
        {"inverse", ops::unary, {"x"}},
        {"logical_not", ops::logical_not, {"x"}},
        {"add", ops::binary, {"x", "y"}},
        {"sub", ops::binary, {"x", "y"}},
        {"mul", ops::binary, {"x", "y"}},
        {"real_div", ops::binary, {"x", "y"}},
        {"pow", ops::binary, {"x", "y"}},
        {"maximum", ops::binary, {"x", "y"}},
        {"minimum", ops::binary, {"x", "y"}},
        {"equal", ops::binary, {"x", "y"}},
        {"not_equal", ops::binary, {"x", "y"}},
        {"less", ops::binary, {"x", "y"}},
        {"less_equal", ops::binary, {"x", "y"}},
        {"greater", ops::binary, {"x", "y"}},
        {"greater_equal", ops::binary, {"x", "y"}},
        {"floor_div", ops::binary, {"x", "y"}},
        {"mod", ops::binary, {"x", "y"}},
        {"logical_and", ops::binary, {"x", "y"}},
        {"logical_or", ops::binary, {"x", "y"}},
        {"logical_xor", ops::binary, {"x", "y"}},
        {"select", ops::select, {"cond", "a", "b"}},
        {"clip", ops::clip, {"x", "alpha", "beta"}},
        {"cast", ops::cast, {"x", "dtype"}},
        {"reduce_sum", ops::reduce, {"x"}},
        {"reduce_mean", ops::reduce, {"x"}},
        {"reduce_max", ops::reduce, {"x"}},
        {"reduce_min", ops::reduce, {"x"}},
        {"reduce_prod", ops::reduce, {"x"}},
        {"reduce_argmax", ops::reduce_arg, {"x"}},
        {"reduce_argmin", ops::reduce_arg, {"x"}},
        {"softmax", ops::softmax, {"x"}},
        {"topk", ops::topk, {"x"}},
        {"layer_norm", ops::layer_norm, {"x"}},
        {"reshape", ops::reshape, {"x", "shape"}},
        {"squeeze", ops::reshape, {"x"}},
        {"expand_dims", ops::reshape, {"x", "axes"}},
        {"transpose", ops::transpose, {"x", "perm"}},
        {"concat", ops::concat, {"values", "axis"}},
        {"stack", ops::stack, {"values", "axis"}},
        {"split", ops::split, {"x", "axis"}},
        {"tile", ops::tile, {"x", "reps"}},
        {"band_part", ops::band_part, {"x"}},
        {"fill", ops::fill, {"shape"}},
        {"range_1d", ops::range_1d, {"start", "end", "step"}},
        {"slice_by_index", ops::slice_by_index, {"x", "begin", "end"}},
        {"slice_by_size", ops::slice_by_size, {"x", "begin", "size"}},
        {"slice_update", ops::slice_update, {"x", "update", "begin", "end"}},
        {"gather", ops::gather, {"x", "indices"}},
        {"gather_along_axis", ops::gather_along_axis, {"x", "indices"}},
        {"read_state", ops::read_state, {"input"}},
        {"write_state", ops::write_state, {"input", "data"}},
        {"linear", ops::linear, {"x", "weight"}},
        {"matmul", ops::matmul, {"x", "y"}},
        {"conv", ops::conv, {"x", "weight"}},
        {"scaled_dot_product_attention",
         ops::scaled_dot_product_attention,
         {"query", "key", "value"}},
    };
    return table;
}

}  // namespace

const OpDef* find_op_def(std::string_view type) {
    for (const OpDef& def : op_table())
        if (def.type == type) return &def;
    return nullptr;
}

}  // namespace anelm::milexec
