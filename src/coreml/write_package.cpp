#include "coreml/write_package.h"

namespace anelm::coreml {

void write_package(const std::filesystem::path& dir, const spec::Model& model, const BlobSet& blobs,
                   bool overwrite) {
    PackageWriter writer(dir, default_manifest(), overwrite);
    if (!blobs.empty()) blobs.write(writer.weights());
    writer.finish(model);
}

}  // namespace anelm::coreml
