#include "coreml/manifest.h"

#include <nlohmann/json.hpp>
#include <random>

#include "base/error.h"
#include "io/json_file.h"

namespace anelm::coreml {

namespace {

constexpr const char* core_ml_author = "com.apple.CoreML";

// A random (version 4) UUID in lowercase, as coremltools names items.
std::string random_uuid() {
    std::random_device rd;
    std::mt19937_64 rng((static_cast<uint64_t>(rd()) << 32) ^ rd());
    uint8_t b[16];
    for (auto& x : b) x = static_cast<uint8_t>(rng());
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    std::string s;
    for (int i = 0; i < 16; ++i) {
        if (i == 4 || i == 6 || i == 8 || i == 10) s += '-';
        s += fmt::format("{:02x}", b[i]);
    }
    return s;
}

const std::string& item_string(const std::string& path, const std::string& id,
                               const nlohmann::json& item, const char* key) {
    const auto it = item.find(key);
    if (it == item.end()) fail("{}: itemInfoEntries.{} has no \"{}\"", path, id, key);
    if (!it->is_string())
        fail("{}: itemInfoEntries.{}.{} is {}, expected a string", path, id, key,
             json_type_words(*it));
    return it->get_ref<const std::string&>();
}

// "1.0.0"-style versions: three non-negative integers.
bool version_at_most_1_0_0(const std::string& v, bool& well_formed) {
    unsigned major = 0, minor = 0, patch = 0;
    char extra = 0;
    well_formed = std::sscanf(v.c_str(), "%u.%u.%u%c", &major, &minor, &patch, &extra) == 3;
    return major < 1 || (major == 1 && minor == 0 && patch == 0);
}

}  // namespace

const ManifestItem& Manifest::root_model() const {
    for (const ManifestItem& item : items)
        if (item.id == root_model_id) return item;
    fail("Manifest.json: rootModelIdentifier {} names no item", root_model_id);
}

const ManifestItem* Manifest::find(const std::string& name, const std::string& author) const {
    for (const ManifestItem& item : items)
        if (item.name == name && item.author == author) return &item;
    return nullptr;
}

Manifest default_manifest() {
    Manifest m;
    m.items.push_back({random_uuid(), "com.apple.CoreML/model.mlmodel", "model.mlmodel",
                       core_ml_author, "CoreML Model Specification"});
    m.items.push_back({random_uuid(), "com.apple.CoreML/weights", "weights", core_ml_author,
                       "CoreML Model Weights"});
    m.root_model_id = m.items[0].id;
    return m;
}

Manifest read_manifest(const std::string& path) {
    const nlohmann::json j = read_json_file(path);
    if (!j.is_object()) fail("{}: top level is {}, expected an object", path, json_type_words(j));
    Manifest m;
    const auto version = j.find("fileFormatVersion");
    if (version == j.end() || !version->is_string())
        fail("{}: fileFormatVersion missing or not a string", path);
    m.file_format_version = version->get<std::string>();
    bool well_formed = false;
    const bool supported = version_at_most_1_0_0(m.file_format_version, well_formed);
    if (!well_formed || !supported)
        fail("{}: fileFormatVersion \"{}\", expected 1.0.0 or older", path, m.file_format_version);
    const auto entries = j.find("itemInfoEntries");
    if (entries == j.end() || !entries->is_object())
        fail("{}: itemInfoEntries missing or not an object", path);
    for (const auto& [id, item] : entries->items()) {
        if (!item.is_object())
            fail("{}: itemInfoEntries.{} is {}, expected an object", path, id,
                 json_type_words(item));
        m.items.push_back(
            {id, item_string(path, id, item, "path"), item_string(path, id, item, "name"),
             item_string(path, id, item, "author"), item_string(path, id, item, "description")});
    }
    const auto root = j.find("rootModelIdentifier");
    if (root == j.end() || !root->is_string())
        fail("{}: rootModelIdentifier missing or not a string", path);
    m.root_model_id = root->get<std::string>();
    bool found = false;
    for (const ManifestItem& item : m.items) found |= item.id == m.root_model_id;
    if (!found) fail("{}: rootModelIdentifier {} names no item", path, m.root_model_id);
    return m;
}

std::string manifest_json(const Manifest& manifest) {
    nlohmann::json entries = nlohmann::json::object();
    for (const ManifestItem& item : manifest.items)
        entries[item.id] = {{"author", item.author},
                            {"description", item.description},
                            {"name", item.name},
                            {"path", item.path}};
    const nlohmann::json j = {{"fileFormatVersion", manifest.file_format_version},
                              {"itemInfoEntries", entries},
                              {"rootModelIdentifier", manifest.root_model_id}};
    return j.dump(4) + "\n";
}

}  // namespace anelm::coreml
