// The types the lowering declares are the ones MIL's own type inference gives
// (coremltools' MIL loader, and Core ML on the device, reject a mismatch):
// every broadcasting op's output shape and data type follow from its inputs
// (select from a and b only, as MIL infers it), for every function of tiny
// models lowered with a context longer than Gemma 3's sliding window.
#include <gtest/gtest.h>

#include <map>

#include "coreml/mil_types.h"
#include "exec/tiny_model.h"
#include "lower/ane_lowering.h"
#include "models/models.h"
#include "passes/rope_halves.h"

namespace anelm {
namespace {

namespace mil = coreml::mil;

struct Declared {
    mil::DataType dtype;
    std::vector<int64_t> shape;
};

std::vector<int64_t> broadcast(std::vector<int64_t> a, std::vector<int64_t> b) {
    if (a.size() < b.size()) std::swap(a, b);
    b.insert(b.begin(), a.size() - b.size(), 1);
    for (size_t i = 0; i < a.size(); ++i) {
        if (a[i] == 1) a[i] = b[i];
        EXPECT_TRUE(b[i] == 1 || b[i] == a[i]) << "shapes do not broadcast";
    }
    return a;
}

class TypeTable {
public:
    explicit TypeTable(const mil::Function& fn) {
        for (const mil::NamedValueType& in : fn.inputs())
            if (in.type().has_tensortype()) add(in.name(), in.type().tensortype());
    }
    void add(const std::string& name, const mil::TensorType& t) {
        types_[name] = {t.datatype(), coreml::tensor_shape(t)};
    }
    Declared of(const mil::Operation& op, const std::string& key) const {
        const mil::Argument::Binding& b = op.inputs().at(key).arguments(0);
        if (b.has_value()) {
            const mil::TensorType& t = b.value().type().tensortype();
            return {t.datatype(), coreml::tensor_shape(t)};
        }
        return types_.at(b.name());
    }

private:
    std::map<std::string, Declared> types_;
};

void expect_inferred_types(const lower::AnePackage& package, const std::string& what) {
    static const std::map<std::string, std::pair<const char*, const char*>> broadcasting{
        {"add", {"x", "y"}},    {"sub", {"x", "y"}},  {"mul", {"x", "y"}},
        {"real_div", {"x", "y"}}, {"less", {"x", "y"}}, {"select", {"a", "b"}}};
    int checked = 0;
    for (const auto& [name, fn] : package.model.mlprogram().functions()) {
        TypeTable table(fn);
        for (const mil::Operation& op : fn.block_specializations().at(fn.opset()).operations()) {
            const mil::TensorType& out = op.outputs(0).type().tensortype();
            const auto it = broadcasting.find(op.type());
            if (it != broadcasting.end()) {
                const Declared a = table.of(op, it->second.first);
                const Declared b = table.of(op, it->second.second);
                EXPECT_EQ(coreml::tensor_shape(out), broadcast(a.shape, b.shape))
                    << what << ":" << name << ": " << op.type() << " " << op.outputs(0).name();
                if (op.type() != "less") {
                    EXPECT_EQ(out.datatype(), a.dtype) << op.outputs(0).name();
                }
                ++checked;
            }
            for (const mil::NamedValueType& o : op.outputs())
                if (o.type().has_tensortype()) table.add(o.name(), o.type().tensortype());
        }
    }
    EXPECT_GT(checked, 0) << what;
}

class DeclaredTypes : public testing::TestWithParam<const char*> {};

TEST_P(DeclaredTypes, BroadcastingOpsDeclareTheInferredShape) {
    const LoadedModel& m = test::tiny_model(GetParam());
    ProgramOptions po;
    po.n_ctx = 32;  // tiny-gemma3's window is 8
    po.functions = {{"decode", 1, false}};
    ir::Program program = build_program(m.spec, m.weights, po);
    passes::rope_halves(program);
    lower::AneOptions options;
    options.batch = 4;
    options.rotate = m.spec.sliding_window > 0;
    expect_inferred_types(lower::lower_chunk(program, 0, lower::layer_count(program), options),
                          "chunk");
    expect_inferred_types(lower::lower_monolithic(program, {m.spec.n_vocab}, options),
                          "monolithic");
}

INSTANTIATE_TEST_SUITE_P(Lower, DeclaredTypes,
                         testing::Values("tiny-llama", "tiny-qwen3", "tiny-gemma3"));

}  // namespace
}  // namespace anelm
