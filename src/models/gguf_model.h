// A GGUF model (a family's general.architecture) as a ModelSpec and
// weights under Hugging Face's names, so everything downstream reads it as it
// reads a Hugging Face folder.
#pragma once

#include <string>

#include "io/gguf.h"
#include "io/model_spec.h"
#include "io/weight_store.h"

namespace anelm {

// The spec from the file's metadata. llama's q/k rows stay in the order
// llama.cpp's converter wrote them (each head's rotate-half pairs interleaved),
// so the spec says RopeStyle::interleaved; Gemma's norm weights are stored
// with Gemma's +1 folded in and are read back without it.
ModelSpec gguf_model_spec(const GgufFile& gguf);

// Registers every tensor under its Hugging Face name. F32, F16 and BF16
// tensors are read in place, block-quantized matrices too (as DType::blocks:
// the CPU multiplies them as stored, io/tensor_values.h decodes them where
// values are needed); the few other block tensors (Gemma's norms, which lose
// their +1) are dequantized to f32. A tensor of a type anelm does not read, or
// a name no architecture uses, is an Error naming it.
void load_gguf_weights(const GgufFile& gguf, const ModelSpec& spec, WeightStore& store);

}  // namespace anelm
