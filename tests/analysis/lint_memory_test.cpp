// ANE017: a package, or a converted folder, whose loaded ANE memory (weights x
// functions loaded x 1.51, plus the states) is over the budget anelm plan gives the
// smallest device of the target warns; under it, lint is silent.
#include "analysis/lint_memory.h"

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "analysis/plan_cost.h"
#include "coreml/mil_builder.h"

namespace anelm {
namespace {

namespace mil = coreml::mil;
namespace spec = coreml::spec;

constexpr double gib = 1024.0 * 1024 * 1024;

// A chunk as ANEMLL writes it: functions sharing one f16 KV state, and a weight file.
struct Chunk {
    spec::Model model;
    coreml::BlobSet blobs;
    uint64_t weight_bytes = 0;

    Chunk(std::vector<std::string> functions, std::vector<int64_t> state, uint64_t weights)
        : weight_bytes(weights) {
        model.set_specificationversion(9);
        model.mutable_mlprogram()->set_version(1);
        for (const std::string& name : functions) {
            mil::Function& fn = (*model.mutable_mlprogram()->mutable_functions())[name];
            fn.set_opset("CoreML8");
            (*fn.mutable_block_specializations())["CoreML8"];
            if (state.empty()) continue;
            mil::NamedValueType& in = *fn.add_inputs();
            in.set_name("kv_cache_0");
            *in.mutable_type()->mutable_statetype()->mutable_wrappedtype() =
                coreml::tensor_value_type(mil::FLOAT16, state);
        }
    }
    LintMemory memory(const std::string& name = "chunk_01of02.mlpackage") const {
        return lint_package_memory({name, &model, &blobs, weight_bytes, 1, 2});
    }
};

int count_ane017(const std::vector<LintFinding>& findings) {
    int n = 0;
    for (const LintFinding& f : findings) n += f.rule->id == "ANE017";
    return n;
}

TEST(LintMemory, CountsEveryFunctionAndTheStatesOnce) {
    // 28 layers of K and V, 8 KV heads of 128 at 512 positions: 58.7 MB of f16.
    const Chunk c({"infer", "prefill"}, {56, 8, 512, 128}, uint64_t{700} << 20);
    const LintMemory m = c.memory();
    EXPECT_EQ(m.functions, 2);
    EXPECT_EQ(m.weight_bytes, uint64_t{700} << 20);
    EXPECT_DOUBLE_EQ(m.state_bytes, 56.0 * 8 * 512 * 128 * 2);
    EXPECT_DOUBLE_EQ(m.loaded_bytes(),
                     2 * plan::ane_wired_per_function * double(700 << 20) + m.state_bytes);
    // Four functions past a sliding window: twice the weights' copies, the same state.
    const Chunk rotating({"infer", "infer_rotate", "prefill", "prefill_rotate"}, {56, 8, 512, 128},
                         uint64_t{700} << 20);
    EXPECT_EQ(rotating.memory().functions, 4);
    EXPECT_DOUBLE_EQ(rotating.memory().state_bytes, m.state_bytes);
}

// The budgets are anelm plan's for its smallest device of each target.
TEST(LintMemory, BudgetIsThePlannersSmallestDevice) {
    EXPECT_EQ(lint_budget_chip(LintTarget::macos15).name, "M1");
    EXPECT_EQ(lint_budget_chip(LintTarget::ios18).name, "A17 Pro");
    EXPECT_DOUBLE_EQ(plan::memory_budget_bytes(lint_budget_chip(LintTarget::macos15)),
                     8 * gib * 2 / 3);
    EXPECT_DOUBLE_EQ(plan::memory_budget_bytes(lint_budget_chip(LintTarget::ios18)),
                     8 * gib * 3 / 4);
}

// One chunk: 1.8 GiB of weights loaded twice wires 5.85 GB, over M1's 5.73 GB (macos15) but
// under A17 Pro's 6.44 GB (ios18); 1.7 GiB is under both.
TEST(LintMemory, ChunkOverTheBudgetWarns) {
    const std::vector<int64_t> state{56, 8, 512, 128};
    const Chunk over({"infer", "prefill"}, state, uint64_t(1.8 * gib));
    ASSERT_GT(over.memory().loaded_bytes(), 8 * gib * 2 / 3);
    const auto f = lint_package_memory_check(over.memory(), LintTarget::macos15);
    ASSERT_EQ(count_ane017(f), 1);
    EXPECT_EQ(f[0].severity, LintSeverity::warning);
    EXPECT_EQ(f[0].package, "chunk_01of02.mlpackage");
    EXPECT_TRUE(f[0].function.empty());
    EXPECT_NE(f[0].message.find("2 function(s) x 1.51 x 1.93 GB of weights"), std::string::npos)
        << f[0].message;
    EXPECT_NE(f[0].message.find("over the 5.73 GB budget of the smallest macos15 device anelm "
                                "plan knows (M1, 8 GB: 2/3 of its RAM)"),
              std::string::npos)
        << f[0].message;
    EXPECT_NE(std::string(f[0].rule->fact).find("+2.09 GB"), std::string::npos);
    EXPECT_EQ(lint_exit_code(f), 3);
    EXPECT_EQ(count_ane017(lint_package_memory_check(over.memory(), LintTarget::ios18)), 0);

    const Chunk under({"infer", "prefill"}, state, uint64_t(1.7 * gib));
    EXPECT_EQ(count_ane017(lint_package_memory_check(under.memory(), LintTarget::macos15)), 0);
    // The same weights in a single-function package are far under.
    const Chunk single({"main"}, state, uint64_t(1.8 * gib));
    EXPECT_EQ(count_ane017(lint_package_memory_check(single.memory(), LintTarget::macos15)), 0);
}

// A folder: four packages each under the budget, together over it.
TEST(LintMemory, FolderOverTheBudgetWarnsOnce) {
    const std::vector<int64_t> state{28, 8, 512, 128};
    const Chunk chunk({"infer", "prefill"}, state, uint64_t(0.9 * gib));
    const Chunk embed({"main"}, {}, uint64_t(0.3 * gib));
    std::vector<LintMemory> folder{embed.memory("embeddings.mlpackage"), chunk.memory("c1"),
                                   chunk.memory("c2"), embed.memory("lm_head.mlpackage")};
    for (const LintMemory& m : folder)
        EXPECT_EQ(count_ane017(lint_package_memory_check(m, LintTarget::macos15)), 0);
    const auto f = lint_total_memory_check(folder, LintTarget::macos15, "out");
    ASSERT_EQ(count_ane017(f), 1);
    EXPECT_EQ(f[0].package, "out");
    EXPECT_NE(f[0].message.find("4 packages"), std::string::npos) << f[0].message;
    // Under it with one chunk fewer; one package alone is left to the package check.
    folder.erase(folder.begin() + 2);
    EXPECT_EQ(count_ane017(lint_total_memory_check(folder, LintTarget::macos15, "out")), 0);
    EXPECT_EQ(count_ane017(
                  lint_total_memory_check(std::span(folder).first(1), LintTarget::macos15, "out")),
              0);
}

}  // namespace
}  // namespace anelm
