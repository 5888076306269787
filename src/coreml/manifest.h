// Manifest.json at the root of a .mlpackage: the package's items (the model
// specification, the weights folder) by identifier, and which one is the model.
#pragma once

#include <string>
#include <vector>

namespace anelm::coreml {

struct ManifestItem {
    std::string id;    // coremltools writes a random UUID
    std::string path;  // relative to the package's Data/ folder
    std::string name;
    std::string author;
    std::string description;
};

struct Manifest {
    std::string file_format_version = "1.0.0";
    std::vector<ManifestItem> items;
    std::string root_model_id;

    const ManifestItem& root_model() const;
    // The item with this name and author, or nullptr.
    const ManifestItem* find(const std::string& name, const std::string& author) const;
};

// The two items Core ML packages hold: model.mlmodel (the root) and weights/,
// with fresh random identifiers.
Manifest default_manifest();

// Reads and checks Manifest.json: version 1.0.0 or older, the four string keys
// of every item, a root identifier that names an item.
Manifest read_manifest(const std::string& path);

// The JSON text, pretty-printed with 4 spaces as Core ML's own writer does.
std::string manifest_json(const Manifest& manifest);

}  // namespace anelm::coreml
