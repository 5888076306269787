// The registry finds each family by every name it answers to, and by its Arch.
#include "models/model_family.h"

#include <gtest/gtest.h>

namespace anelm {
namespace {

TEST(ModelFamilies, EachIsFoundByItsNamesAndArch) {
    ASSERT_FALSE(model_families().empty());
    for (const ModelFamily* family : model_families()) {
        EXPECT_EQ(model_family(family->arch), family) << arch_name(family->arch);
        for (std::string_view type : family->model_types)
            EXPECT_EQ(family_for_model_type(type), family) << type;
        for (std::string_view hf_class : family->hf_classes)
            EXPECT_EQ(family_for_class(hf_class), family) << hf_class;
        if (!family->gguf_arch.empty()) EXPECT_EQ(family_for_gguf(family->gguf_arch), family);
    }
}

TEST(ModelFamilies, Lfm2AnswersToItsConfigAndGgufNames) {
    const ModelFamily* lfm2 = family_for_model_type("lfm2");
    ASSERT_NE(lfm2, nullptr);
    EXPECT_EQ(lfm2->arch, Arch::lfm2);
    EXPECT_EQ(family_for_class("Lfm2ForCausalLM"), lfm2);
    EXPECT_EQ(family_for_gguf("lfm2"), lfm2);
    EXPECT_EQ(lfm2->gguf_tensor_name("token_embd_norm.weight"), "model.embedding_norm.weight");
    EXPECT_EQ(lfm2->gguf_tensor_name("blk.2.shortconv.in_proj.bias"),
              "model.layers.2.conv.in_proj.bias");
    EXPECT_EQ(lfm2->gguf_tensor_name("blk.2.unknown.weight"), "");
}

TEST(ModelFamilies, UnknownNamesFindNone) {
    EXPECT_EQ(family_for_model_type("mamba"), nullptr);
    EXPECT_EQ(family_for_class("MambaForCausalLM"), nullptr);
    EXPECT_EQ(family_for_gguf(""), nullptr);
}

}  // namespace
}  // namespace anelm
