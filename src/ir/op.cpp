#include "ir/op.h"

#include <iterator>

namespace anelm::ir {

namespace {

constexpr std::string_view names[] = {
    "input",
    "embed",
    "linear",
    "rms_norm",
    "add",
    "mul",
    "silu_mul",
    "gelu_tanh_mul",
    "scale",
    "softcap",
    "rope",
    "attention",
    "last_row",
    "causal_conv",
    "silu",
    "sigmoid_mul",
    "gated_delta",
    "columns",
    "shared_attention",
};
constexpr int arities[] = {0, 1, 1, 1, 2, 2, 2, 2, 1, 1, 2, 4, 1, 2, 1, 2, 4, 1, 2};

static_assert(std::size(names) == op_count && std::size(arities) == op_count);

}  // namespace

std::string_view op_name(Op op) {
    return names[static_cast<size_t>(op)];
}
int op_arity(Op op) {
    return arities[static_cast<size_t>(op)];
}

}  // namespace anelm::ir
