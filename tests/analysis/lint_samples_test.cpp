// Lint on the packages coremltools wrote (../shared/coreml-samples), read from
// disk: the blockwise int4 sample is per-block quantization, the kitchen sink
// has gelu, masked attention and pow of a value clipped below at -10; the
// others break no rule.
#include <gtest/gtest.h>

#include "analysis/lint.h"
#include "coreml/package.h"
#include "test_support.h"

namespace anelm {
namespace {

std::vector<std::string> flagged(const std::string& sample) {
    const coreml::Package pkg(test::shared_path("coreml-samples/" + sample + ".mlpackage"));
    const LintPackage p{sample, &pkg.model(), &pkg, 0};
    std::vector<std::string> out;
    for (const LintFinding& f : lint_package(p, LintTarget::ios18))
        if (f.severity != LintSeverity::info)
            out.push_back(std::string(f.rule->id) + " " + f.function + ":" + f.op);
    std::sort(out.begin(), out.end());
    return out;
}

TEST(LintSamples, BlockwiseInt4IsPerBlockQuantization) {
    ANELM_REQUIRE_SHARED("coreml-samples/blockwise_int4.mlpackage");
    EXPECT_EQ(flagged("blockwise_int4"), std::vector<std::string>{"ANE003 main:w_q4"});
}

TEST(LintSamples, KitchenSinkHasGeluMaskedAttentionAndPow) {
    ANELM_REQUIRE_SHARED("coreml-samples/kitchen_sink.mlpackage");
    EXPECT_EQ(
        flagged("kitchen_sink"),
        (std::vector<std::string>{"ANE004 main:gelu", "ANE005 main:sdpa", "ANE011 main:pow"}));
}

TEST(LintSamples, OthersAreClean) {
    for (const char* s : {"affine_ios16", "kv_state", "multifunction", "palettized"}) {
        ANELM_REQUIRE_SHARED(std::string("coreml-samples/") + s + ".mlpackage");
        EXPECT_EQ(flagged(s), std::vector<std::string>{}) << s;
    }
}

}  // namespace
}  // namespace anelm
