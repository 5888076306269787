// Dense weights copied out of the model's file mapping at load: the copies
// hold the same bytes, only streamed dense matrices move, and the logits do
// not change.
#include "runtime/private_weights.h"

#include <gtest/gtest.h>

#include <cstring>
#include <set>

#include "exec/tiny_model.h"
#include "runtime/session.h"

namespace anelm {
namespace {

using test::random_tokens;

SessionOptions options(bool mmap, const std::string& quant = "none") {
    SessionOptions so = test::tiny_session_options(quant);
    so.prefill_batch = 16;
    so.mmap = mmap;
    return so;
}

bool in_file(const WeightStore& store, const std::byte* p) {
    for (const auto& file : store.files())
        if (file->contains(p)) return true;
    return false;
}

std::set<ir::WeightId> linear_weights(const ir::Program& program) {
    std::set<ir::WeightId> ids;
    for (const ir::Function& fn : program.functions)
        for (const ir::Node& node : fn.nodes)
            if (node.op == ir::Op::linear) ids.insert(node.weight);
    return ids;
}

TEST(PrivateWeights, DenseLinearWeightsMoveWithTheirBytes) {
    const LoadedModel& m = test::tiny_model("tiny-llama");
    ASSERT_FALSE(m.weights.files().empty());
    Session session(m.spec, m.weights, options(false));
    const ir::Program& program = session.program();
    const std::set<ir::WeightId> linear = linear_weights(program);
    ASSERT_FALSE(linear.empty());
    for (size_t id = 0; id < program.weights.size(); ++id) {
        const ir::Weight& w = program.weights[id];
        const TensorView& original = *m.weights.find(w.name);
        if (linear.count(static_cast<ir::WeightId>(id))) {
            EXPECT_FALSE(in_file(m.weights, w.view.data)) << w.name;
            EXPECT_EQ(reinterpret_cast<uintptr_t>(w.view.data) % 4096, 0u) << w.name;
            EXPECT_EQ(std::memcmp(w.view.data, original.data, original.n_bytes()), 0) << w.name;
        } else {
            EXPECT_EQ(w.view.data, original.data) << w.name;  // norms and the embedding stay
        }
    }
}

TEST(PrivateWeights, MappedAndCopiedWeightsGiveTheSameLogits) {
    const LoadedModel& m = test::tiny_model("tiny-qwen3");
    Session copied(m.spec, m.weights, options(false));
    Session mapped(m.spec, m.weights, options(true));
    for (const ir::Weight& w : mapped.program().weights)
        EXPECT_TRUE(in_file(m.weights, w.view.data)) << w.name;
    const auto tokens = random_tokens(m.spec.n_vocab, 20, 3);
    const auto a = copied.prefill(tokens);
    const std::vector<float> first(a.begin(), a.end());
    const auto b = mapped.prefill(tokens);
    EXPECT_EQ(first, std::vector<float>(b.begin(), b.end()));
    const auto c = copied.decode(tokens[0]);
    const std::vector<float> step(c.begin(), c.end());
    const auto d = mapped.decode(tokens[0]);
    EXPECT_EQ(step, std::vector<float>(d.begin(), d.end()));
}

TEST(PrivateWeights, QuantizedWeightsAreNotCopied) {
    const LoadedModel& m = test::tiny_model("tiny-llama");
    Session session(m.spec, m.weights, options(false, "embed=none,ffn=4:8,head=none"));
    int n_quantized = 0, n_copied = 0;
    for (const ir::Weight& w : session.program().weights) {
        if (w.quantized) {
            ++n_quantized;
            EXPECT_FALSE(w.storage) << w.name;
        } else if (!in_file(m.weights, w.view.data)) {
            ++n_copied;
        }
    }
    EXPECT_GT(n_quantized, 0);
    EXPECT_GT(n_copied, 0);  // the head
}

}  // namespace
}  // namespace anelm
