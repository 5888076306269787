// Decoding literal MIL values (const op values, constexpr inputs), immediate
// or in a blob, into slots.
#pragma once

#include <string>

#include "coreml/blob_table.h"
#include "exec/mil/slot.h"

namespace anelm::milexec {

// Numbers become a Tensor (sub-byte codes one per element, int4 sign-extended),
// a string becomes text, and an fp16 tensor of weight_min_elements or more a
// Weight that points into the blob. `where` starts every error message.
Slot decode_literal(const mil::Value& value, const coreml::BlobTable& blobs,
                    const std::string& where);

}  // namespace anelm::milexec
