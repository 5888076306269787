// Writes a .safetensors file: 8-byte little-endian header length, JSON header,
// then the tensors' bytes in order. The file appears under its name only when
// complete (written to a temporary name, then renamed).
#pragma once

#include <cstddef>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "base/dtype.h"

namespace anelm {

struct TensorSpec {
    std::string name;
    DType dtype = DType::f32;
    std::vector<int64_t> shape;
};

// fill(i, out) writes tensor i's bytes into out, which has exactly its size.
void write_safetensors(const std::string& path, const std::vector<TensorSpec>& tensors,
                       const std::function<void(size_t index, std::span<std::byte> out)>& fill,
                       const std::map<std::string, std::string>& metadata = {});

}  // namespace anelm
