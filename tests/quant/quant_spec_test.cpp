#include "quant/quant_spec.h"

#include <gtest/gtest.h>

#include <string>

#include "base/error.h"

namespace anelm::quant {
namespace {

const QuantChoice none{};
QuantChoice lut(int nbits, int64_t group = 8) {
    return {QuantMethod::lut, nbits, group};
}
const QuantChoice int8{QuantMethod::int8, 8, 0};
const QuantChoice int4{QuantMethod::int4, 4, 0};

// The message of the Error parse_quant_spec throws for `text`.
std::string error_of(const std::string& text) {
    try {
        parse_quant_spec(text);
    } catch (const Error& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(QuantSpec, ComponentChoices) {
    const QuantSpec s = parse_quant_spec("embed=none,ffn=4:8,head=6:16");
    EXPECT_EQ(s.embed, none);
    EXPECT_EQ(s.ffn, lut(4, 8));
    EXPECT_EQ(s.head, lut(6, 16));
    EXPECT_EQ(s.min_elements, 2048);

    const QuantSpec t = parse_quant_spec(" ffn = int8 , head=int4,embed=3 ,min=0");
    EXPECT_EQ(t.ffn, int8);
    EXPECT_EQ(t.head, int4);
    EXPECT_EQ(t.embed, lut(3, 8));  // default group
    EXPECT_EQ(t.min_elements, 0);
    EXPECT_EQ(parse_quant_spec("ffn=2:0").ffn, lut(2, 0));  // one table per tensor
}

// ANEMLL's BITS,GROUP (convert's --lut-* options) and the spec's BITS:GROUP
// are one choice, in a spec and alone.
TEST(QuantSpec, GroupAfterCommaOrColon) {
    EXPECT_EQ(parse_quant_spec("ffn=4,8").ffn, lut(4, 8));
    EXPECT_EQ(parse_quant_spec("ffn=4,16").ffn, lut(4, 16));
    const QuantSpec s = parse_quant_spec("lut4,ffn=2,4,head=6:16,embed=8, 0,min=0");
    EXPECT_EQ(s.ffn, lut(2, 4));
    EXPECT_EQ(s.head, lut(6, 16));
    EXPECT_EQ(s.embed, lut(8, 0));
    EXPECT_EQ(s.min_elements, 0);
    // A number after a choice that has its group is no group.
    EXPECT_NE(error_of("ffn=4:8,16").find("'16': unknown preset"), std::string::npos);
    EXPECT_NE(error_of("ffn=int8,16").find("'16': unknown preset"), std::string::npos);
    for (const char* text : {"4,8", "4:8", " 4 , 8 "})
        EXPECT_EQ(parse_quant_choice(text, "--lut-ffn"), lut(4, 8)) << text;
    EXPECT_EQ(parse_quant_choice("6", "--lut-head"), lut(6, 8));
    EXPECT_EQ(parse_quant_choice("none", "--lut-head"), none);
    try {
        parse_quant_choice("4;8", "--lut-ffn");
        FAIL() << "4;8 was accepted";
    } catch (const Error& e) {
        EXPECT_STREQ(e.what(),
                     "--lut-ffn: '4;8' is not none, int8, int4, BITS, BITS:GROUP or BITS,GROUP");
    }
    EXPECT_EQ(error_of("ffn=4,x"),
              "quant spec: 'x': unknown preset, expected none, lut4, lut6, "
              "lut8, int8, int4 or COMPONENT=CHOICE");
}

TEST(QuantSpec, PresetsFollowANEMLLDefaults) {
    const QuantSpec lut4 = parse_quant_spec("lut4");
    EXPECT_EQ(lut4.embed, none);
    EXPECT_EQ(lut4.ffn, lut(4));
    EXPECT_EQ(lut4.head, lut(6));
    EXPECT_EQ(parse_quant_spec("lut6").ffn, lut(6));
    EXPECT_EQ(parse_quant_spec("lut8").head, lut(8));
    EXPECT_EQ(parse_quant_spec("int8").ffn, int8);
    EXPECT_EQ(parse_quant_spec("int8").head, int8);
    EXPECT_EQ(parse_quant_spec("int4").ffn, int4);
    EXPECT_EQ(parse_quant_spec("none").head, none);
    // Later parts override the preset.
    const QuantSpec over = parse_quant_spec("lut4,head=8:4,embed=int8");
    EXPECT_EQ(over.ffn, lut(4));
    EXPECT_EQ(over.head, lut(8, 4));
    EXPECT_EQ(over.embed, int8);
}

TEST(QuantSpec, RoundTripsThroughText) {
    for (const char* text : {"lut4", "embed=int4,ffn=1:2,head=8:0,min=10", "none"}) {
        const QuantSpec s = parse_quant_spec(text);
        const QuantSpec back = parse_quant_spec(s.to_string());
        EXPECT_EQ(back.embed, s.embed) << text;
        EXPECT_EQ(back.ffn, s.ffn) << text;
        EXPECT_EQ(back.head, s.head) << text;
        EXPECT_EQ(back.min_elements, s.min_elements) << text;
    }
    EXPECT_EQ(parse_quant_spec("lut4").to_string(), "embed=none,ffn=4:8,head=6:8");
    EXPECT_EQ(lut(4, 8).name(), "lut4:8");
    EXPECT_EQ(int8.name(), "int8");
}

TEST(QuantSpec, BadSpecsNameTheBadPart) {
    EXPECT_EQ(error_of("ffn=5:8"), "quant spec: 'ffn=5:8': 5 bits, expected 1, 2, 3, 4, 6 or 8");
    EXPECT_EQ(error_of("lut4,bogus=4"),
              "quant spec: 'bogus=4': unknown component 'bogus', expected embed, ffn, head or min");
    EXPECT_NE(error_of("lut5").find("'lut5': unknown preset"), std::string::npos);
    EXPECT_NE(error_of("ffn=4:x").find("'ffn=4:x': group 'x'"), std::string::npos);
    EXPECT_NE(error_of("ffn=4:-1").find("'ffn=4:-1'"), std::string::npos);
    EXPECT_NE(error_of("head=int3").find("'head=int3'"), std::string::npos);
    EXPECT_NE(error_of("min=lots").find("'min=lots'"), std::string::npos);
    EXPECT_NE(error_of("lut4,,ffn=4").find("empty part"), std::string::npos);
    EXPECT_NE(error_of("").find("empty"), std::string::npos);
    for (const char* bad : {"ffn=5:8", "lut4,bogus=4", "ffn=", "ffn=4:8:2"}) {
        const std::string message = error_of(bad);
        EXPECT_EQ(message.find('\n'), std::string::npos) << message;
        EXPECT_EQ(message.rfind("quant spec: ", 0), 0u) << message;
    }
}

TEST(QuantSpec, ThresholdAndComponents) {
    const QuantSpec s = parse_quant_spec("lut4");
    EXPECT_EQ(s.choice_for(Component::ffn, 2047), none);
    EXPECT_EQ(s.choice_for(Component::ffn, 2048), lut(4));
    EXPECT_EQ(s.choice_for(Component::head, 1 << 20), lut(6));
    EXPECT_EQ(parse_quant_spec("ffn=4:0").choice_for(Component::ffn, 31 * 128), lut(4, 0));
    EXPECT_EQ(parse_quant_spec("ffn=int8").choice_for(Component::ffn, 31 * 128), int8);
    EXPECT_EQ(tensor_component("model.embed_tokens.weight"), Component::embed);
    EXPECT_EQ(tensor_component("lm_head.weight"), Component::head);
    EXPECT_EQ(tensor_component("model.layers.3.mlp.down_proj.weight"), Component::ffn);
    EXPECT_EQ(tensor_component("model.layers.3.self_attn.q_proj.bias"), std::nullopt);
    EXPECT_EQ(tensor_component("model.norm.weight"), std::nullopt);
    EXPECT_STREQ(component_name(Component::head), "head");
}

}  // namespace
}  // namespace anelm::quant
