// A context past the model's trained length: the warning convert prints and
// lint's ANE019, only past the length and only when it is known.
#include <gtest/gtest.h>

#include "analysis/trained_context.h"

namespace anelm {
namespace {

TEST(TrainedContext, PastTheTrainedLengthOnly) {
    EXPECT_EQ(past_trained_context(100000, 2048)
                  .rfind("100000 is past the model's trained length 2048: positions past it", 0),
              0u);
    EXPECT_TRUE(past_trained_context(2048, 2048).empty());
    EXPECT_TRUE(past_trained_context(512, 2048).empty());
    EXPECT_TRUE(past_trained_context(100000, 0).empty());  // not known
}

TEST(TrainedContext, LintWarnsWithAne019) {
    const auto past = lint_trained_context(4096, 2048, "meta.yaml");
    ASSERT_EQ(past.size(), 1u);
    EXPECT_EQ(past[0].rule->id, "ANE019");
    EXPECT_EQ(past[0].severity, LintSeverity::warning);
    EXPECT_EQ(past[0].package, "meta.yaml");
    EXPECT_EQ(past[0].message.rfind("context 4096 is past the model's trained length 2048", 0), 0u);
    EXPECT_EQ(lint_exit_code(past), 3);
    EXPECT_TRUE(lint_trained_context(2048, 2048, "meta.yaml").empty());
    EXPECT_TRUE(lint_trained_context(4096, 0, "meta.yaml").empty());
}

}  // namespace
}  // namespace anelm
