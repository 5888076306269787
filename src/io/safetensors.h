// Reads .safetensors files in place: the file is mapped and every tensor is
// registered in a WeightStore as a view into the mapping, without a copy.
#pragma once

#include <string>
#include <vector>

#include "io/weight_store.h"

namespace anelm {

// Validates the header (offsets, sizes, dtypes F32/F16/BF16/I32) and adds the
// file's tensors to `store`. Returns their names in the order of their data.
std::vector<std::string> load_safetensors(const std::string& path, WeightStore& store);

// Loads every shard named in the weight_map of a model.safetensors.index.json
// (shard names are relative to the index's folder) and checks that each listed
// tensor is in the shard the index says.
void load_safetensors_index(const std::string& index_path, WeightStore& store);

}  // namespace anelm
