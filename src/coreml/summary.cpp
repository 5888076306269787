#include "coreml/summary.h"

#include <algorithm>
#include <set>

#include "base/error.h"
#include "coreml/mil_types.h"
#include "coreml/model_values.h"

namespace anelm::coreml {

namespace {

namespace mil = spec::MILSpec;

ValueInfo value_info(const std::string& name, const mil::ValueType& type) {
    const mil::ValueType& tensor = type.has_statetype() ? type.statetype().wrappedtype() : type;
    ValueInfo info{name, "", {}};
    if (tensor.has_tensortype()) {
        info.dtype = mil_dtype_name(tensor.tensortype().datatype());
        info.shape = tensor_shape(tensor.tensortype());
    } else {
        info.dtype = value_type_text(tensor);
    }
    return info;
}

FunctionSummary summarize_function(const std::string& path, const std::string& name,
                                   const mil::Function& function) {
    FunctionSummary s;
    s.name = name;
    s.opset = function.opset();
    std::map<std::string, const mil::ValueType*> types;
    for (const mil::NamedValueType& input : function.inputs()) {
        types[input.name()] = &input.type();
        (input.type().has_statetype() ? s.states : s.inputs)
            .push_back(value_info(input.name(), input.type()));
    }
    const mil::Block& block = function.block_specializations().at(function.opset());
    for (const mil::Operation& op : block.operations()) {
        s.ops.push_back({op.type(), op_name(op)});
        ++s.op_counts[op.type()];
        for (const mil::NamedValueType& out : op.outputs()) types[out.name()] = &out.type();
    }
    for (const std::string& out : block.outputs()) {
        const auto it = types.find(out);
        if (it == types.end())
            fail("{}: function {}: output {} is not a value of the function", path, name, out);
        s.outputs.push_back(value_info(out, *it->second));
    }
    return s;
}

nlohmann::ordered_json values_json(const std::vector<ValueInfo>& values) {
    nlohmann::ordered_json j = nlohmann::ordered_json::array();
    for (const ValueInfo& v : values)
        j.push_back({{"name", v.name}, {"dtype", v.dtype}, {"shape", v.shape}});
    return j;
}

}  // namespace

PackageSummary summarize(const Package& package) {
    const spec::Model& model = package.model();
    const std::string path = package.model_path().string();
    PackageSummary s;
    s.spec_version = model.specificationversion();
    s.default_function = model.description().defaultfunctionname();
    std::vector<std::string> names;
    for (const spec::FunctionDescription& f : model.description().functions())
        names.push_back(f.name());
    const auto& functions = model.mlprogram().functions();
    if (names.size() != static_cast<size_t>(functions.size())) {
        names.clear();
        for (const auto& [name, function] : functions) names.push_back(name);
        std::sort(names.begin(), names.end());
    }
    for (const std::string& name : names) {
        const auto it = functions.find(name);
        if (it == functions.end())
            fail("{}: description.functions names {}, which mlProgram does not define", path, name);
        s.functions.push_back(summarize_function(path, name, it->second));
    }
    std::set<std::pair<std::string, uint64_t>> seen;
    for_each_value(model, [&](const mil::Value& v, const std::string&) {
        if (!v.has_blobfilevalue()) return;
        if (!seen.emplace(v.blobfilevalue().filename(), v.blobfilevalue().offset()).second) return;
        ++s.n_blobs;
        s.weight_bytes += package.blob(v).data.size();
    });
    return s;
}

nlohmann::ordered_json summary_json(const PackageSummary& s) {
    nlohmann::ordered_json j;
    j["spec_version"] = s.spec_version;
    if (!s.default_function.empty()) j["default_function"] = s.default_function;
    j["n_blobs"] = s.n_blobs;
    j["weight_bytes"] = s.weight_bytes;
    nlohmann::ordered_json functions = nlohmann::ordered_json::array();
    for (const FunctionSummary& f : s.functions) {
        nlohmann::ordered_json counts = nlohmann::ordered_json::object();
        for (const auto& [type, n] : f.op_counts) counts[type] = n;
        functions.push_back({{"name", f.name},
                             {"opset", f.opset},
                             {"inputs", values_json(f.inputs)},
                             {"outputs", values_json(f.outputs)},
                             {"states", values_json(f.states)},
                             {"n_ops", f.ops.size()},
                             {"op_counts", counts}});
    }
    j["functions"] = functions;
    return j;
}

}  // namespace anelm::coreml
