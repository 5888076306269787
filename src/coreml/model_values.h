// Visiting every literal Value of an ML Program (const op attributes, literal
// input bindings of constexpr ops, program attributes, nested blocks): the
// places a BlobFileValue can sit.
#pragma once

#include <functional>
#include <string>

#include "coreml/proto/model.pb.h"

namespace anelm::coreml {

namespace spec = ::CoreML::Specification;

// `where` locates the value for messages: "function main, op conv_0_weight, attribute val".
// The mutable form may change what a value holds but not add or remove the
// values nested in it.
void for_each_value(
    const spec::Model& model,
    const std::function<void(const spec::MILSpec::Value&, const std::string& where)>& visit);
void for_each_value(
    spec::Model& model,
    const std::function<void(spec::MILSpec::Value&, const std::string& where)>& visit);

// The value of an op's "name" attribute, or "" when it has none.
std::string op_name(const spec::MILSpec::Operation& op);

}  // namespace anelm::coreml
