#include "analysis/lint_program.h"

#include <cstring>

#include "base/error.h"
#include "base/half.h"
#include "coreml/model_values.h"

namespace anelm::lint {

LintFunction::LintFunction(std::string name, const mil::Function& fn,
                           const coreml::BlobTable& blobs)
    : name_(std::move(name)), fn_(fn), blobs_(blobs) {
    const auto it = fn.block_specializations().find(fn.opset());
    if (it == fn.block_specializations().end())
        fail("function {}: no block for opset {}", name_, fn.opset());
    block_ = &it->second;
    for (const mil::NamedValueType& in : fn.inputs()) types_[in.name()] = &in.type();
    for (const mil::Operation& op : block_->operations()) {
        for (const mil::NamedValueType& out : op.outputs()) {
            producers_[out.name()] = &op;
            types_[out.name()] = &out.type();
        }
        for (const std::string& in : all_input_names(op)) consumers_[in].push_back(&op);
    }
}

const mil::Operation* LintFunction::producer(const std::string& value) const {
    const auto it = producers_.find(value);
    return it == producers_.end() ? nullptr : it->second;
}

std::vector<const mil::Operation*> LintFunction::consumers(const std::string& value) const {
    const auto it = consumers_.find(value);
    return it == consumers_.end() ? std::vector<const mil::Operation*>{} : it->second;
}

std::vector<std::string> LintFunction::input_names(const mil::Operation& op,
                                                   const std::string& key) {
    std::vector<std::string> names;
    const auto it = op.inputs().find(key);
    if (it == op.inputs().end()) return names;
    for (const auto& b : it->second.arguments())
        if (b.has_name()) names.push_back(b.name());
    return names;
}

std::vector<std::string> LintFunction::all_input_names(const mil::Operation& op) {
    std::vector<std::string> names;
    for (const auto& [key, arg] : op.inputs())
        for (const auto& b : arg.arguments())
            if (b.has_name()) names.push_back(b.name());
    return names;
}

const mil::TensorType* LintFunction::tensor_type(const std::string& value) const {
    const auto it = types_.find(value);
    if (it == types_.end() || !it->second->has_tensortype()) return nullptr;
    return &it->second->tensortype();
}

std::optional<std::vector<float>> LintFunction::const_floats(const mil::Value& value) const {
    if (!value.type().has_tensortype()) return std::nullopt;
    const mil::DataType dtype = value.type().tensortype().datatype();
    if (dtype != mil::FLOAT16 && dtype != mil::FLOAT32) return std::nullopt;
    std::vector<float> out;
    auto from_bytes = [&](const uint8_t* p, size_t n) {
        if (dtype == mil::FLOAT32) {
            out.resize(n / 4);
            std::memcpy(out.data(), p, out.size() * 4);
            return;
        }
        out.resize(n / 2);
        for (size_t i = 0; i < out.size(); ++i) {
            uint16_t h;
            std::memcpy(&h, p + 2 * i, 2);
            out[i] = f16_to_f32(h);
        }
    };
    if (value.has_blobfilevalue()) {
        const coreml::Blob blob = blobs_.blob(value);
        from_bytes(blob.data.data(), blob.data.size());
        return out;
    }
    if (!value.has_immediatevalue() || !value.immediatevalue().has_tensor()) return std::nullopt;
    const mil::TensorValue& t = value.immediatevalue().tensor();
    if (t.has_floats())
        return std::vector<float>(t.floats().values().begin(), t.floats().values().end());
    if (t.has_bytes()) {
        const std::string& b = t.bytes().values();
        from_bytes(reinterpret_cast<const uint8_t*>(b.data()), b.size());
        return out;
    }
    return std::nullopt;
}

std::optional<std::vector<float>> LintFunction::const_floats_of(const std::string& value) const {
    const mil::Operation* op = producer(value);
    if (op == nullptr || op->type() != "const") return std::nullopt;
    const auto it = op->attributes().find("val");
    if (it == op->attributes().end()) return std::nullopt;
    return const_floats(it->second);
}

std::string lint_op_name(const mil::Operation& op) {
    std::string name = coreml::op_name(op);
    if (name.empty() && op.outputs_size() > 0) name = op.outputs(0).name();
    return name;
}

}  // namespace anelm::lint
