// The ane precision stores values as the Neural Engine does: halves with the
// subnormals flushed, and the delta rule's output held times its q and v
// boosts (as the converted packages carry it into its RMSNorm), so that its
// small entries survive.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "base/half.h"
#include "exec/cpu/executor.h"
#include "models/models.h"
#include "tiny_model.h"

namespace anelm {
namespace {

// Every value of the named node in one 12-token run at `precision`.
std::vector<float> node_values(const LoadedModel& m, Precision precision, const std::string& name) {
    ProgramOptions po;
    po.n_ctx = 16;
    po.functions = {{"prefill", 12, true}};
    const ir::Program program = build_program(m.spec, m.weights, po);
    ThreadPool pool(2);
    Executor executor(program, pool, precision);
    std::vector<float> values;
    executor.set_observer([&](const ir::Node& node, std::span<const float> v) {
        if (node.name == name) values.assign(v.begin(), v.end());
    });
    ExecState state = executor.make_state();
    executor.run(0, test::random_tokens(m.spec.n_vocab, 12, 5), 0, state);
    return values;
}

int64_t count_if(const std::vector<float>& v, auto pred) {
    return std::ranges::count_if(v, pred);
}

TEST(AnePrecision, FlushesSubnormalsButHoldsTheDeltaOutputBoosted) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3.5");
    auto tiny = [](float x) { return x != 0.0f && std::fabs(x) < f16_min_normal; };
    // The delta output: many entries below half's smallest normal in f32,
    // which ane keeps (held boosted), where flushing them unboosted would
    // zero them all; only a few rounding-borderline ones come out zero.
    const auto exact = node_values(m, Precision::f32, "blk.0.ssm_delta");
    const auto held = node_values(m, Precision::ane, "blk.0.ssm_delta");
    ASSERT_EQ(exact.size(), held.size());
    int64_t small = 0, lost = 0;
    for (size_t i = 0; i < exact.size(); ++i) {
        small += tiny(exact[i]);
        lost += tiny(exact[i]) && held[i] == 0.0f;
    }
    EXPECT_GT(small, std::ssize(exact) / 10);
    EXPECT_LT(lost, small / 20);
    // Elsewhere nothing subnormal is left in ane, while f16 keeps subnormals.
    const auto ane_norm = node_values(m, Precision::ane, "blk.0.ssm_out");
    const auto f16_norm = node_values(m, Precision::f16, "blk.0.ssm_out");
    EXPECT_EQ(count_if(ane_norm, tiny), 0);
    EXPECT_GT(count_if(f16_norm, tiny), 0);
}

}  // namespace
}  // namespace anelm
