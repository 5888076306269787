// What the lint checks need to know about one function of an ML Program:
// which op makes each value and which ops read it, the type of every value,
// and the numbers a const op holds.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "coreml/blob_table.h"
#include "coreml/mil_types.h"

namespace anelm::lint {

namespace mil = coreml::mil;

class LintFunction {
public:
    LintFunction(std::string name, const mil::Function& fn, const coreml::BlobTable& blobs);

    const std::string& name() const { return name_; }
    const mil::Function& function() const { return fn_; }
    const mil::Block& block() const { return *block_; }

    // The op whose output `value` is; nullptr for a function input.
    const mil::Operation* producer(const std::string& value) const;
    std::vector<const mil::Operation*> consumers(const std::string& value) const;
    // The value names bound to one input of an op (several for variadic ones).
    static std::vector<std::string> input_names(const mil::Operation& op, const std::string& key);
    // Every value name an op reads.
    static std::vector<std::string> all_input_names(const mil::Operation& op);
    // The tensor type of a value, or nothing (a state, or unknown).
    const mil::TensorType* tensor_type(const std::string& value) const;
    // The fp16 or fp32 numbers a const op (or a literal input) holds.
    std::optional<std::vector<float>> const_floats(const mil::Value& value) const;
    std::optional<std::vector<float>> const_floats_of(const std::string& value) const;

private:
    std::string name_;
    const mil::Function& fn_;
    const mil::Block* block_ = nullptr;
    const coreml::BlobTable& blobs_;
    std::map<std::string, const mil::Operation*> producers_;
    std::map<std::string, std::vector<const mil::Operation*>> consumers_;
    std::map<std::string, const mil::ValueType*> types_;
};

// The op's name as the program spells it (its "name" attribute, else its first output).
std::string lint_op_name(const mil::Operation& op);

}  // namespace anelm::lint
