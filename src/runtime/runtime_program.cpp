#include "runtime/runtime_program.h"

#include "passes/rope_halves.h"

namespace anelm {

ir::Program runtime_program(const ModelSpec& spec, const WeightStore& weights,
                            const ProgramOptions& options) {
    ir::Program program = build_program(spec, weights, options);
    passes::rope_halves(program);
    return program;
}

}  // namespace anelm
