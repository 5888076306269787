#include "passes/fp16_scale.h"

#include <cmath>
#include <vector>

#include "base/error.h"
#include "passes/fold_scales.h"

namespace anelm::passes {

bool is_power_of_two(float x) {
    int exponent = 0;
    return x > 0 && std::frexp(x, &exponent) == 0.5f;
}

float residual_scale_for_peak(double peak, double target) {
    if (!(peak > f16_max / 4)) return 1.0f;
    if (!std::isfinite(peak)) fail("fp16 scale: the residual peak is not finite");
    const double exponent = std::floor(std::log2(target / peak));
    return static_cast<float>(std::ldexp(1.0, static_cast<int>(std::min(0.0, exponent))));
}

namespace {

// Ops whose output is a residual value when their (single) input is one:
// they move the stream along without mixing it with anything else.
bool passes_stream_through(ir::Op op) {
    return op == ir::Op::last_row || op == ir::Op::scale;
}

void scale_function(ir::Function& fn, float alpha) {
    const size_t n = fn.nodes.size();
    std::vector<int> readers(n, 0);
    for (const ir::Node& node : fn.nodes)
        for (ir::ValueId in : node.inputs) ++readers[static_cast<size_t>(in)];

    std::vector<bool> residual(n, false);
    for (size_t i = 0; i < n; ++i) {
        ir::Node& node = fn.nodes[i];
        std::vector<size_t> stream_inputs;
        for (size_t k = 0; k < node.inputs.size(); ++k)
            if (residual[static_cast<size_t>(node.inputs[k])]) stream_inputs.push_back(k);

        if (node.op == ir::Op::embed) {
            residual[i] = true;
            node.attrs.out_scale *= alpha;
        } else if (stream_inputs.empty()) {
            continue;
        } else if (node.op == ir::Op::add) {
            residual[i] = true;
            if (stream_inputs.size() == 1) {
                const auto branch = static_cast<size_t>(node.inputs[1 - stream_inputs[0]]);
                ir::Node& producer = fn.nodes[branch];
                if (readers[branch] != 1)
                    fail("fp16 scale: {}: branch {} has other readers", node.name, producer.name);
                producer.attrs.out_scale *= alpha;
            }
        } else if (node.op == ir::Op::rms_norm) {
            node.attrs.eps *= alpha * alpha;
        } else if (passes_stream_through(node.op)) {
            residual[i] = true;
        } else {
            fail("fp16 scale: {} ({}) reads the residual stream and would not stay exact",
                 node.name, ir::op_name(node.op));
        }
    }
}

}  // namespace

void scale_residual(ir::Program& program, float alpha) {
    if (!is_power_of_two(alpha)) fail("fp16 scale: {} is not a power of two", alpha);
    if (alpha != 1.0f)
        for (ir::Function& fn : program.functions) scale_function(fn, alpha);
    fold_scales_into_weights(program);
}

}  // namespace anelm::passes
