#include "coreml/model_values.h"

#include <fmt/format.h>

#include <utility>
#include <vector>

namespace anelm::coreml {

namespace {

namespace mil = spec::MILSpec;
using Visitor = std::function<void(const mil::Value&, const std::string&)>;

void visit_value(const mil::Value& value, const std::string& where, const Visitor& visit) {
    visit(value, where);
    if (!value.has_immediatevalue()) return;
    const mil::Value::ImmediateValue& imm = value.immediatevalue();
    if (imm.has_tuple())
        for (const mil::Value& v : imm.tuple().values()) visit_value(v, where, visit);
    if (imm.has_list())
        for (const mil::Value& v : imm.list().values()) visit_value(v, where, visit);
    if (imm.has_dictionary())
        for (const auto& kv : imm.dictionary().values()) {
            visit_value(kv.key(), where, visit);
            visit_value(kv.value(), where, visit);
        }
}

void visit_block(const mil::Block& block, const std::string& function, const Visitor& visit) {
    for (const mil::Operation& op : block.operations()) {
        const std::string prefix = fmt::format("function {}, op {}", function, op_name(op));
        for (const auto& [key, value] : op.attributes())
            visit_value(value, fmt::format("{}, attribute {}", prefix, key), visit);
        for (const auto& [key, argument] : op.inputs())
            for (const mil::Argument::Binding& binding : argument.arguments())
                if (binding.has_value())
                    visit_value(binding.value(), fmt::format("{}, input {}", prefix, key), visit);
        for (const mil::Block& nested : op.blocks()) visit_block(nested, function, visit);
    }
}

}  // namespace

void for_each_value(const spec::Model& model, const Visitor& visit) {
    if (!model.has_mlprogram()) return;
    const mil::Program& program = model.mlprogram();
    for (const auto& [key, value] : program.attributes())
        visit_value(value, "program attribute " + key, visit);
    for (const auto& [name, function] : program.functions())
        for (const auto& [opset, block] : function.block_specializations())
            visit_block(block, name, visit);
}

void for_each_value(spec::Model& model,
                    const std::function<void(mil::Value&, const std::string&)>& visit) {
    std::vector<std::pair<const mil::Value*, std::string>> found;
    for_each_value(std::as_const(model), [&](const mil::Value& v, const std::string& where) {
        found.emplace_back(&v, where);
    });
    // The model itself is not const, so neither are the values found in it.
    for (const auto& [value, where] : found) visit(const_cast<mil::Value&>(*value), where);
}

std::string op_name(const mil::Operation& op) {
    const auto it = op.attributes().find("name");
    if (it == op.attributes().end()) return "";
    const mil::Value& v = it->second;
    if (!v.has_immediatevalue() || !v.immediatevalue().has_tensor()) return "";
    const mil::TensorValue& t = v.immediatevalue().tensor();
    return t.has_strings() && t.strings().values_size() == 1 ? t.strings().values(0) : "";
}

}  // namespace anelm::coreml
