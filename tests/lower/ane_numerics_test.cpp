// The ANE numerics rewrites, each against the form it replaces, evaluated the
// way the Neural Engine stores values (fp16, subnormals flushed).
#include "lower/ane_numerics.h"

#include <gtest/gtest.h>

#include <cmath>

#include "exec/mil/function.h"
#include "exec/tiny_model.h"
#include "lower/function_lowering.h"
#include "lower/lowering_support.h"
#include "runtime/session.h"

namespace anelm {
namespace {

namespace mil = coreml::mil;

// One MIL function y = activation(x) over x fp16 [n], lowered with `numerics`
// for a program that carries states (where every rewrite applies).
class Activation {
public:
    Activation(const lower::AneNumerics& numerics, bool softplus, int64_t n)
        : program_(test::decode_program(test::tiny_model("tiny-lfm2"))), n_(n) {
        context_ = std::make_unique<lower::PackageContext>(program_, 1, numerics);
        mil::Function& fn = (*model_.mutable_mlprogram()->mutable_functions())["main"];
        fn.set_opset("CoreML8");
        mil::Block& block = (*fn.mutable_block_specializations())["CoreML8"];
        lower::FunctionLowering f(*context_, program_.functions.at(0), block, 1);
        const coreml::MilValue x{"x", mil::FLOAT16, {n}};
        mil::NamedValueType& in = *fn.add_inputs();
        in.set_name("x");
        *in.mutable_type() = coreml::tensor_value_type(mil::FLOAT16, {n});
        f.builder().output(softplus ? f.softplus(x, "y") : f.silu(x, "y"));
        for (const mil::Operation& op : block.operations()) op_types_.push_back(op.type());
    }

    std::vector<float> run(const std::vector<float>& x) const {
        const milexec::Function fn(model_.mlprogram(), "main", context_->blobs,
                                   milexec::Rounding::f16_flush);
        milexec::Tensor t = milexec::make_tensor(mil::FLOAT16, {n_});
        t.f = x;
        milexec::States states;
        return fn.run({{"x", t}}, states).at("y").f;
    }
    bool uses(const std::string& type) const {
        return std::ranges::find(op_types_, type) != op_types_.end();
    }

private:
    ir::Program program_;
    int64_t n_;
    std::unique_ptr<lower::PackageContext> context_;
    coreml::spec::Model model_;
    std::vector<std::string> op_types_;
};

std::vector<float> range(float from, float to, float step) {
    std::vector<float> v;
    for (float x = from; x <= to; x += step) v.push_back(x);
    return v;
}

// Above x of about 11, exp(x) overflows fp16: log(1 + exp(x)) as written is
// inf, and the decay it feeds is 0. The stable form stays within fp16's
// rounding of the exact value everywhere.
TEST(AneNumerics, StableSoftplusIsExactWhereTheWrittenFormOverflows) {
    const std::vector<float> x = range(-20.0f, 20.0f, 0.25f);
    lower::AneNumerics off;
    off.stable_softplus = false;
    const Activation stable({}, true, std::ssize(x)), written(off, true, std::ssize(x));
    EXPECT_FALSE(stable.uses("softplus"));
    const std::vector<float> good = stable.run(x), bad = written.run(x);
    int overflowed = 0;
    for (size_t i = 0; i < x.size(); ++i) {
        const double exact = std::log1p(std::exp(static_cast<double>(x[i])));
        EXPECT_NEAR(good[i], exact, 2e-3 * std::max(1.0, exact)) << "x = " << x[i];
        if (x[i] >= 11.5f) overflowed += std::isinf(bad[i]) ? 1 : 0;
    }
    EXPECT_EQ(overflowed, std::ranges::count_if(x, [](float v) { return v >= 11.5f; }));
}

// The tanh form is silu to fp16's rounding, built without the sigmoid (or
// silu) op the compiler would turn into its inaccurate native silu; the
// switch brings back x * sigmoid(x).
TEST(AneNumerics, TanhSiluIsSiluWithoutTheNativeOp) {
    const std::vector<float> x = range(-8.0f, 8.0f, 1.0f / 64);
    lower::AneNumerics off;
    off.tanh_silu = false;
    const Activation tanh_form({}, false, std::ssize(x)), sigmoid_form(off, false, std::ssize(x));
    EXPECT_TRUE(tanh_form.uses("tanh"));
    EXPECT_FALSE(tanh_form.uses("sigmoid"));
    EXPECT_FALSE(tanh_form.uses("silu"));
    EXPECT_TRUE(sigmoid_form.uses("sigmoid"));
    const std::vector<float> y = tanh_form.run(x);
    for (size_t i = 0; i < x.size(); ++i) {
        const double exact = x[i] / (1.0 + std::exp(-static_cast<double>(x[i])));
        EXPECT_NEAR(y[i], exact, 4e-3 * std::max(1.0, std::fabs(exact))) << "x = " << x[i];
    }
}

}  // namespace
}  // namespace anelm
