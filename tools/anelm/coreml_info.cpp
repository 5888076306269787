#include "coreml_info.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "coreml/summary.h"

namespace anelm::cli {

namespace {

void print_values(const char* kind, const std::vector<coreml::ValueInfo>& values) {
    for (const coreml::ValueInfo& v : values)
        fmt::print("  {:<7}{:<24} {} [{}]\n", kind, v.name, v.dtype, fmt::join(v.shape, ", "));
}

}  // namespace

bool is_coreml_package(const std::string& path) {
    return std::filesystem::is_directory(path) &&
           std::filesystem::exists(std::filesystem::path(path) / "Manifest.json");
}

int run_coreml_info(const std::string& path, bool json) {
    const coreml::PackageSummary s = coreml::summarize(coreml::Package(path));
    if (json) {
        nlohmann::ordered_json j;
        j["path"] = path;
        j.update(coreml::summary_json(s));
        fmt::print("{}\n", j.dump(2));
        return 0;
    }
    fmt::print("package        {}\n", path);
    fmt::print("spec version   {}\n", s.spec_version);
    fmt::print("weights        {} bytes ({:.1f} MiB) in {} blobs\n", s.weight_bytes,
               s.weight_bytes / 1048576.0, s.n_blobs);
    for (const coreml::FunctionSummary& f : s.functions) {
        fmt::print("function {} ({}){}\n", f.name, f.opset,
                   f.name == s.default_function ? ", the default" : "");
        print_values("input", f.inputs);
        print_values("state", f.states);
        print_values("output", f.outputs);
        std::vector<std::string> counts;
        for (const auto& [type, n] : f.op_counts) counts.push_back(fmt::format("{} {}", type, n));
        fmt::print("  ops    {}: {}\n", f.ops.size(), fmt::join(counts, ", "));
    }
    return 0;
}

}  // namespace anelm::cli
