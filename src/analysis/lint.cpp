#include "analysis/lint.h"

#include <algorithm>
#include <charconv>

#include <fmt/core.h>

#include "analysis/lint_checks.h"
#include "base/error.h"

namespace anelm {

namespace {

namespace spec = coreml::spec;

// Per-file limits: about 1 GB on iOS, 2 GB on macOS (research/anemll.md).
constexpr uint64_t gib = uint64_t{1} << 30;

int metadata_int(const spec::Model& model, const std::string& key) {
    const auto& user = model.description().metadata().userdefined();
    const auto it = user.find(key);
    if (it == user.end()) return 0;
    int v = 0;
    const std::string& s = it->second;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    return ec == std::errc() && end == s.data() + s.size() ? v : 0;
}

// True when an input of the function may take several enumerated shapes.
bool has_enumerated_input(const spec::Model& model, const std::string& function) {
    const spec::ModelDescription& d = model.description();
    auto enumerated = [](const auto& inputs) {
        for (const spec::FeatureDescription& in : inputs)
            if (in.type().has_multiarraytype() && in.type().multiarraytype().has_enumeratedshapes())
                return true;
        return false;
    };
    if (d.functions_size() == 0) return enumerated(d.input());
    for (const spec::FunctionDescription& fd : d.functions())
        if (fd.name() == function) return enumerated(fd.input());
    return false;
}

}  // namespace

std::vector<LintFinding> lint_package(const LintPackage& package, LintTarget target) {
    if (package.model == nullptr || package.blobs == nullptr)
        fail("{}: lint needs a model and its blobs", package.name);
    const spec::Model& model = *package.model;
    std::vector<LintFinding> out;
    lint::Findings findings{package.name, out};

    const uint64_t limit = target == LintTarget::ios18 ? gib : 2 * gib;
    if (package.weight_file_bytes > limit)
        findings.add("ANE010", "", "weights/weight.bin",
                     fmt::format("{:.2f} GiB, over the {} GiB limit of {}",
                                 static_cast<double>(package.weight_file_bytes) / gib, limit / gib,
                                 target == LintTarget::ios18 ? "ios18" : "macos15"));

    const int chunk_no =
        package.chunk_no ? package.chunk_no : metadata_int(model, "com.anemll.chunk_no");
    const int n_chunks =
        package.n_chunks ? package.n_chunks : metadata_int(model, "com.anemll.num_chunks");
    const bool early_chunk = chunk_no > 0 && chunk_no < n_chunks;

    lint::check_names(model, findings);
    std::vector<std::string> names;
    for (const auto& [name, fn] : model.mlprogram().functions()) names.push_back(name);
    std::sort(names.begin(), names.end());
    for (const std::string& name : names) {
        const lint::LintFunction f(name, model.mlprogram().functions().at(name), *package.blobs);
        lint::check_states(f, findings);
        lint::check_ops(f, findings);
        lint::check_dynamic_shapes(f, has_enumerated_input(model, name), findings);
        if (early_chunk) lint::check_final_norm(f, findings);
        lint::check_dispatch(f, findings);
    }
    return out;
}

}  // namespace anelm
