#include "coreml_info.h"

#include <fmt/core.h>
#include <fmt/ranges.h>

#include <filesystem>

#include "anemll/converted_files.h"
#include "coreml/summary.h"

namespace anelm::cli {

namespace {

void print_values(const char* kind, const std::vector<coreml::ValueInfo>& values) {
    for (const coreml::ValueInfo& v : values)
        fmt::print("  {:<7}{:<24} {} [{}]\n", kind, v.name, v.dtype, fmt::join(v.shape, ", "));
}

void print_summary(const std::string& path, const coreml::PackageSummary& s) {
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
}

nlohmann::ordered_json summary_with_path(const std::string& path, const coreml::PackageSummary& s) {
    nlohmann::ordered_json j;
    j["path"] = path;
    j.update(coreml::summary_json(s));
    return j;
}

}  // namespace

bool is_coreml_package(const std::string& path) {
    return std::filesystem::is_directory(path) &&
           std::filesystem::exists(std::filesystem::path(path) / "Manifest.json");
}

int run_coreml_info(const std::string& path, bool json) {
    const coreml::PackageSummary s = coreml::summarize(coreml::Package(path));
    if (json) {
        fmt::print("{}\n", summary_with_path(path, s).dump(2));
        return 0;
    }
    print_summary(path, s);
    return 0;
}

int run_converted_info(const std::string& dir, bool json) {
    const anemll::ConvertedFiles files =
        anemll::find_converted_files((std::filesystem::path(dir) / "meta.yaml").string());
    const anemll::ConvertLayout& l = files.meta.layout;
    std::vector<std::string> paths;
    if (l.monolithic) {
        paths.push_back(files.monolithic);
    } else {
        paths.push_back(files.embeddings);
        paths.insert(paths.end(), files.chunks.begin(), files.chunks.end());
        paths.push_back(files.lm_head);
    }
    if (json) {
        nlohmann::ordered_json j;
        j["path"] = dir;
        j["architecture"] = l.architecture;
        j["context_length"] = l.context_length;
        j["batch_size"] = l.batch_size;
        j["num_chunks"] = l.n_chunks;
        j["lut_embeddings"] = l.lut_embed.name();
        j["lut_ffn"] = l.lut_ffn.name();
        j["lut_lmhead"] = l.lut_head.name();
        j["argmax_in_model"] = l.argmax_in_model;
        j["lm_head_chunk_sizes"] = l.lm_head_chunk_sizes;
        j["packages"] = nlohmann::ordered_json::array();
        for (const std::string& p : paths)
            j["packages"].push_back(summary_with_path(p, coreml::summarize(coreml::Package(p))));
        fmt::print("{}\n", j.dump(2));
        return 0;
    }
    fmt::print("converted      {} ({}, context {}, batch {}, {} chunks)\n", dir, l.architecture,
               l.context_length, l.batch_size, l.n_chunks);
    fmt::print("LUT            embeddings {}, ffn {}, head {}\n", l.lut_embed.name(),
               l.lut_ffn.name(), l.lut_head.name());
    fmt::print("LM head        {} pieces [{}]{}\n", l.split_lm_head,
               fmt::join(l.lm_head_chunk_sizes, ", "),
               l.argmax_in_model ? ", argmax in model" : "");
    for (const std::string& p : paths) {
        fmt::print("\n");
        print_summary(p, coreml::summarize(coreml::Package(p)));
    }
    return 0;
}

}  // namespace anelm::cli
