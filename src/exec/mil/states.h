// The state tensors (KV caches) of one sequence, by name. A state is created
// zero-filled the first time a function that declares it runs; several
// functions and packages can share one States (chunks of a model, prefill and
// decode) as long as they agree on each state's type and shape.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "exec/mil/tensor.h"

namespace anelm::milexec {

class States {
public:
    // The state called `name`, created zero-filled with this type when absent;
    // throws Error when it exists with another type or shape.
    Tensor& get(const std::string& name, mil::DataType dtype, const std::vector<int64_t>& shape);

    bool contains(const std::string& name) const { return states_.contains(name); }
    // The state called `name`; throws Error when there is none.
    const Tensor& at(const std::string& name) const;
    void reset();  // every state back to zeros

private:
    std::map<std::string, Tensor> states_;  // nodes stay put: ops hold pointers into them
};

}  // namespace anelm::milexec
