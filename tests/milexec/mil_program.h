// Tiny MIL programs for the interpreter's tests: one function "main" built with
// MilBuilder, its blobs in memory, and helpers for inputs and expectations.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "coreml/mil_builder.h"
#include "exec/mil/function.h"

namespace anelm::milexec::test {

using coreml::MilBuilder;
using coreml::MilInput;
using coreml::MilParam;
using coreml::MilValue;

struct MilProgram {
    mil::Program program;
    coreml::BlobSet blobs;
    mil::Function* fn;
    MilBuilder b;

    MilProgram()
        : fn(&(*program.mutable_functions())["main"]),
          b((*fn->mutable_block_specializations())["CoreML8"], blobs) {
        program.set_version(1);
        fn->set_opset("CoreML8");
    }

    MilValue input(const std::string& name, mil::DataType dtype, std::vector<int64_t> shape) {
        mil::NamedValueType& in = *fn->add_inputs();
        in.set_name(name);
        *in.mutable_type() = coreml::tensor_value_type(dtype, shape);
        return {name, dtype, std::move(shape)};
    }

    MilValue state(const std::string& name, std::vector<int64_t> shape) {
        mil::NamedValueType& in = *fn->add_inputs();
        in.set_name(name);
        *in.mutable_type()->mutable_statetype()->mutable_wrappedtype() =
            coreml::tensor_value_type(mil::FLOAT16, shape);
        return {name, mil::FLOAT16, std::move(shape)};
    }

    // Compiles and runs main once on `inputs`.
    std::map<std::string, Tensor> run(const std::map<std::string, Tensor>& inputs,
                                      Rounding rounding = Rounding::none) {
        States states;
        Function f(program, "main", blobs, rounding);
        return f.run(inputs, states);
    }
};

inline Tensor floats(mil::DataType dtype, std::vector<int64_t> shape, std::vector<float> v) {
    Tensor t;
    t.dtype = dtype;
    t.shape = std::move(shape);
    t.f = std::move(v);
    return t;
}

inline Tensor ints(std::vector<int64_t> shape, std::vector<int32_t> v) {
    Tensor t;
    t.dtype = mil::INT32;
    t.shape = std::move(shape);
    t.i = std::move(v);
    return t;
}

// Deterministic values in [-1, 1) that are exact in fp16.
inline std::vector<float> ramp(int64_t n, float step = 0.125f) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t k = 0; k < n; ++k) v[static_cast<size_t>(k)] = std::fmod(step * k, 2.0f) - 1.0f;
    return v;
}

inline void expect_near(const std::vector<float>& got, const std::vector<float>& want,
                        float tol = 1e-5f) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t k = 0; k < got.size(); ++k)
        EXPECT_NEAR(got[k], want[k], tol * std::max(1.0f, std::fabs(want[k]))) << "at " << k;
}

}  // namespace anelm::milexec::test
