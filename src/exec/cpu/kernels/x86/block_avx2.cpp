// AVX2 leaves for ggml block-quantized weights (block_isa.h).
#include "exec/cpu/kernels/block_isa.h"

namespace anelm::kernels {

namespace {

BlockGemv leaf(BlockType) {
    return nullptr;
}

}  // namespace

const BlockIsa avx2_block_isa = {.name = "avx2", .pass_tokens = 4, .leaf = leaf};

}  // namespace anelm::kernels
