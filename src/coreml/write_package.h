// Writes a model built in memory (a MIL program and its BlobSet) as a package.
#pragma once

#include <filesystem>

#include "coreml/mil_builder.h"
#include "coreml/package.h"

namespace anelm::coreml {

// Through a temporary folder renamed into place; an existing `dir` is refused
// unless `overwrite`.
void write_package(const std::filesystem::path& dir, const spec::Model& model, const BlobSet& blobs,
                   bool overwrite = false);

}  // namespace anelm::coreml
