// What an ML Program holds, in plain C++: per function its inputs, outputs and
// states with types, its ops in order, op counts by type; the weight bytes.
#pragma once

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "coreml/package.h"

namespace anelm::coreml {

struct ValueInfo {
    std::string name;
    std::string dtype;           // fp16, int32, ... (a state's wrapped tensor type)
    std::vector<int64_t> shape;  // -1 for an unknown dimension
};

struct OpInfo {
    std::string type;
    std::string name;
};

struct FunctionSummary {
    std::string name;
    std::string opset;
    std::vector<ValueInfo> inputs;  // tensor inputs; states are listed apart
    std::vector<ValueInfo> outputs;
    std::vector<ValueInfo> states;
    std::vector<OpInfo> ops;  // the opset's block, in order
    std::map<std::string, int64_t> op_counts;
};

struct PackageSummary {
    int spec_version = 0;
    std::string default_function;            // empty for a single-function model
    std::vector<FunctionSummary> functions;  // in the description's order, else by name
    int64_t n_blobs = 0;                     // distinct blobs the program refers to
    uint64_t weight_bytes = 0;               // their payload bytes
};

PackageSummary summarize(const Package& package);

nlohmann::ordered_json summary_json(const PackageSummary& summary);

}  // namespace anelm::coreml
