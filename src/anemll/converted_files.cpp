#include "anemll/converted_files.h"

#include <fmt/format.h>

#include <filesystem>
#include <optional>

#include "base/error.h"

namespace anelm::anemll {

namespace {

namespace fs = std::filesystem;

constexpr std::string_view compiled_ext = ".mlmodelc";
constexpr std::string_view first_chunk = "_chunk_01of";

// dir/name, or the .mlpackage of the same stem when a .mlmodelc is absent.
std::optional<std::string> existing(const fs::path& dir, const std::string& name) {
    const fs::path path = dir / name;
    if (fs::exists(path)) return path.string();
    if (name.ends_with(compiled_ext)) {
        const fs::path package =
            dir / package_name(std::string_view(name).substr(0, name.size() - compiled_ext.size()));
        if (fs::exists(package)) return package.string();
    }
    return std::nullopt;
}

constexpr std::string_view package_ext = ".mlpackage";

std::string stem_of(const std::string& name) {
    for (std::string_view ext : {compiled_ext, package_ext})
        if (name.ends_with(ext)) return name.substr(0, name.size() - ext.size());
    return name;
}

class Finder {
public:
    Finder(const std::string& meta_path, fs::path dir)
        : meta_path_(meta_path), dir_(std::move(dir)) {}

    std::string find(std::string_view key, const std::string& name) const {
        if (auto path = existing(dir_, name)) return *path;
        missing(key, name);
    }

    // Chunk i of n from the first chunk's name; a name without a chunk part
    // gets one, as the Swift runner derives it (a single chunk may also be
    // named without one).
    std::vector<std::string> chunks(const std::string& ffn, int n) const {
        std::string stem = stem_of(ffn);
        size_t at = stem.find(first_chunk);
        if (at == std::string::npos) {
            if (n == 1) {
                if (auto path = existing(dir_, ffn)) return {*path};
            }
            at = stem.size();
            stem += fmt::format("{}{:02d}", first_chunk, n);
        }
        const std::string total = stem.substr(at + first_chunk.size(), 2);
        if (total != fmt::format("{:02d}", n))
            bad("ffn", fmt::format("{} names {} chunks, num_chunks is {}", ffn, total, n));
        std::vector<std::string> paths;
        for (int c = 1; c <= n; ++c) {
            const std::string name = stem.substr(0, at) + fmt::format("_chunk_{:02d}of", c) +
                                     stem.substr(at + first_chunk.size()) +
                                     std::string(compiled_ext);
            paths.push_back(find("ffn", name));
        }
        return paths;
    }

private:
    [[noreturn]] void bad(std::string_view key, std::string_view what) const {
        fail("{}: model_info.parameters.{}: {}", meta_path_, key, what);
    }

    [[noreturn]] void missing(std::string_view key, const std::string& name) const {
        if (name.ends_with(compiled_ext))
            bad(key, fmt::format("neither {} nor {} exists", (dir_ / name).string(),
                                 (dir_ / package_name(stem_of(name))).string()));
        bad(key, fmt::format("{} does not exist", (dir_ / name).string()));
    }

    const std::string& meta_path_;
    fs::path dir_;
};

}  // namespace

ConvertedFiles find_converted_files(const std::string& meta_path) {
    ConvertedFiles files;
    files.meta = read_meta_yaml(meta_path);
    const fs::path dir = fs::path(meta_path).parent_path();
    files.dir = dir.empty() ? "." : dir.string();
    const Finder finder(meta_path, files.dir);
    const MetaYaml& meta = files.meta;
    if (meta.layout.monolithic) {
        files.monolithic = finder.find("monolithic_model", meta.monolithic_model);
        return files;
    }
    files.embeddings = finder.find("embeddings", meta.embeddings);
    files.chunks = finder.chunks(meta.ffn, meta.layout.n_chunks);
    files.lm_head = finder.find("lm_head", meta.lm_head);
    return files;
}

}  // namespace anelm::anemll
