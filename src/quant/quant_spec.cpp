#include "quant/quant_spec.h"

#include <fmt/format.h>

#include <charconv>

#include "base/error.h"

namespace anelm::quant {

namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
}

[[noreturn]] void bad_part(std::string_view part, std::string_view what) {
    fail("quant spec: '{}': {}", part, what);
}

// A whole non-negative decimal number, or nullopt.
std::optional<int64_t> parse_count(std::string_view s) {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || v < 0) return std::nullopt;
    return v;
}

constexpr QuantChoice lut(int nbits, int64_t group = default_group_size) {
    return {QuantMethod::lut, nbits, group};
}
constexpr QuantChoice none_choice{};
constexpr QuantChoice int8_choice{QuantMethod::int8, 8, 0};
constexpr QuantChoice int4_choice{QuantMethod::int4, 4, 0};

QuantChoice parse_choice(std::string_view part, std::string_view text) {
    if (text == "none") return none_choice;
    if (text == "int8") return int8_choice;
    if (text == "int4") return int4_choice;
    const size_t colon = text.find(':');
    const std::string_view bits_text = text.substr(0, colon);
    const std::optional<int64_t> bits = parse_count(bits_text);
    if (!bits) {
        bad_part(part, fmt::format("'{}' is not none, int8, int4, BITS or BITS:GROUP", text));
    }
    if (*bits != 1 && *bits != 2 && *bits != 3 && *bits != 4 && *bits != 6 && *bits != 8) {
        bad_part(part, fmt::format("{} bits, expected 1, 2, 3, 4, 6 or 8", *bits));
    }
    int64_t group = default_group_size;
    if (colon != std::string_view::npos) {
        const std::optional<int64_t> g = parse_count(text.substr(colon + 1));
        if (!g)
            bad_part(part, fmt::format("group '{}', expected a number of rows (0 = per tensor)",
                                       text.substr(colon + 1)));
        group = *g;
    }
    return lut(static_cast<int>(*bits), group);
}

struct Preset {
    std::string_view name;
    QuantChoice embed, ffn, head;
};

// ANEMLL's defaults are lut4: embeddings f16, layers LUT4, LM head LUT6, groups of 8.
const Preset presets[] = {
    {"none", none_choice, none_choice, none_choice},
    {"lut4", none_choice, lut(4), lut(6)},
    {"lut6", none_choice, lut(6), lut(6)},
    {"lut8", none_choice, lut(8), lut(8)},
    {"int8", none_choice, int8_choice, int8_choice},
    {"int4", none_choice, int4_choice, int8_choice},
};

// Sets the preset's choices, or returns false when `name` is none of them.
bool apply_preset(std::string_view name, QuantSpec& spec) {
    for (const Preset& p : presets) {
        if (p.name != name) continue;
        spec.embed = p.embed;
        spec.ffn = p.ffn;
        spec.head = p.head;
        return true;
    }
    return false;
}

// The choice as the grammar writes it.
std::string choice_text(const QuantChoice& c) {
    if (c.method == QuantMethod::lut) return fmt::format("{}:{}", c.nbits, c.group_size);
    return c.name();
}

}  // namespace

std::string QuantChoice::name() const {
    switch (method) {
        case QuantMethod::none:
            return "none";
        case QuantMethod::lut:
            return fmt::format("lut{}:{}", nbits, group_size);
        case QuantMethod::int8:
            return "int8";
        case QuantMethod::int4:
            return "int4";
    }
    return "?";
}

const char* component_name(Component c) {
    switch (c) {
        case Component::embed:
            return "embed";
        case Component::ffn:
            return "ffn";
        case Component::head:
            return "head";
    }
    return "?";
}

const QuantChoice& QuantSpec::choice(Component c) const {
    return c == Component::embed ? embed : c == Component::ffn ? ffn : head;
}

QuantChoice QuantSpec::choice_for(Component c, int64_t numel) const {
    return numel < min_elements ? none_choice : choice(c);
}

std::string QuantSpec::to_string() const {
    std::string s = fmt::format("embed={},ffn={},head={}", choice_text(embed), choice_text(ffn),
                                choice_text(head));
    if (min_elements != default_min_elements) s += fmt::format(",min={}", min_elements);
    return s;
}

QuantSpec parse_quant_spec(std::string_view text) {
    QuantSpec spec;
    if (trim(text).empty()) fail("quant spec: empty, expected a preset or COMPONENT=CHOICE parts");
    size_t begin = 0;
    while (begin <= text.size()) {
        size_t end = text.find(',', begin);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view part = trim(text.substr(begin, end - begin));
        begin = end + 1;
        if (part.empty()) fail("quant spec: '{}': empty part between commas", text);
        const size_t eq = part.find('=');
        if (eq == std::string_view::npos) {
            if (!apply_preset(part, spec)) {
                bad_part(part,
                         "unknown preset, expected none, lut4, lut6, lut8, int8, int4 "
                         "or COMPONENT=CHOICE");
            }
            continue;
        }
        const std::string_view key = trim(part.substr(0, eq)), value = trim(part.substr(eq + 1));
        if (key == "min") {
            const std::optional<int64_t> n = parse_count(value);
            if (!n) bad_part(part, "expected a number of elements");
            spec.min_elements = *n;
        } else if (key == "embed") {
            spec.embed = parse_choice(part, value);
        } else if (key == "ffn") {
            spec.ffn = parse_choice(part, value);
        } else if (key == "head") {
            spec.head = parse_choice(part, value);
        } else {
            bad_part(part,
                     fmt::format("unknown component '{}', expected embed, ffn, head or min", key));
        }
    }
    return spec;
}

std::optional<Component> tensor_component(std::string_view name) {
    name = name.substr(0, name.find(':'));  // rows of a stored matrix: "...in_proj.weight:0-64"
    if (name == "model.embed_tokens.weight") return Component::embed;
    if (name == "lm_head.weight") return Component::head;
    if (name.starts_with("model.layers.") && name.ends_with(".weight")) return Component::ffn;
    return std::nullopt;
}

}  // namespace anelm::quant
