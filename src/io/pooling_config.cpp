#include "io/pooling_config.h"

#include <filesystem>

#include "base/error.h"
#include "io/json_file.h"

namespace anelm {

namespace fs = std::filesystem;

const char* pooling_name(Pooling p) {
    switch (p) {
        case Pooling::mean:
            return "mean";
        case Pooling::last:
            return "last";
        case Pooling::cls:
            return "cls";
    }
    return "?";
}

Pooling pooling_from_name(const std::string& name) {
    for (Pooling p : {Pooling::mean, Pooling::last, Pooling::cls})
        if (name == pooling_name(p)) return p;
    fail("--pooling: {}, expected mean, last or cls", name);
}

namespace {

// The folder of the Pooling module modules.json lists, if it lists one.
std::optional<fs::path> pooling_folder(const fs::path& modules_path) {
    const nlohmann::json modules = read_json_file(modules_path.string());
    if (!modules.is_array()) fail("{}: expected an array of modules", modules_path.string());
    for (const nlohmann::json& m : modules) {
        const auto type = m.find("type");
        if (!m.is_object() || type == m.end() || !type->is_string())
            fail("{}: a module without a type", modules_path.string());
        if (type->get<std::string>() != "sentence_transformers.models.Pooling") continue;
        const auto path = m.find("path");
        if (path == m.end() || !path->is_string())
            fail("{}: the Pooling module has no path", modules_path.string());
        return modules_path.parent_path() / path->get<std::string>();
    }
    return std::nullopt;
}

}  // namespace

std::optional<Pooling> read_pooling(const std::string& dir) {
    const fs::path modules_path = fs::path(dir) / "modules.json";
    if (!fs::is_directory(dir) || !fs::exists(modules_path)) return std::nullopt;
    const std::optional<fs::path> folder = pooling_folder(modules_path);
    if (!folder) return std::nullopt;
    const std::string config_path = (*folder / "config.json").string();
    const nlohmann::json config = read_json_file(config_path);
    if (!config.is_object()) fail("{}: expected an object", config_path);
    const auto flag = [&](const char* key) {
        const auto it = config.find(key);
        if (it == config.end() || it->is_null()) return false;
        if (!it->is_boolean()) fail("{}: {}: expected true or false", config_path, key);
        return it->get<bool>();
    };
    if (flag("pooling_mode_lasttoken")) return Pooling::last;
    if (flag("pooling_mode_cls_token")) return Pooling::cls;
    if (flag("pooling_mode_mean_tokens")) return Pooling::mean;
    fail(
        "{}: no pooling_mode_lasttoken, pooling_mode_cls_token or pooling_mode_mean_tokens set "
        "(other modes are not supported)",
        config_path);
}

PoolingChoice choose_pooling(const std::string& path, const std::string& flag) {
    if (!flag.empty()) return {pooling_from_name(flag), "--pooling"};
    if (const std::optional<Pooling> declared = read_pooling(path))
        return {*declared, "the model's modules.json"};
    return {};
}

}  // namespace anelm
