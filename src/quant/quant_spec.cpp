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

// BITS,GROUP is ANEMLL's spelling (convert's --lut-* options), BITS:GROUP the spec's.
constexpr std::string_view choice_forms = "none, int8, int4, BITS, BITS:GROUP or BITS,GROUP";

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

QuantChoice QuantSpec::choice_for_weight(Component c, const std::string& name,
                                         int64_t numel) const {
    const auto it = per_weight.find(name);
    return it != per_weight.end() ? it->second : choice_for(c, numel);
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

QuantChoice parse_quant_choice(std::string_view text, std::string_view what) {
    text = trim(text);
    if (text == "none") return none_choice;
    if (text == "int8") return int8_choice;
    if (text == "int4") return int4_choice;
    const size_t sep = text.find_first_of(":,");
    const std::optional<int64_t> bits = parse_count(trim(text.substr(0, sep)));
    if (!bits) fail("{}: '{}' is not {}", what, text, choice_forms);
    if (*bits != 1 && *bits != 2 && *bits != 3 && *bits != 4 && *bits != 6 && *bits != 8)
        fail("{}: {} bits, expected 1, 2, 3, 4, 6 or 8", what, *bits);
    int64_t group = default_group_size;
    if (sep != std::string_view::npos) {
        const std::optional<int64_t> g = parse_count(trim(text.substr(sep + 1)));
        if (!g)
            fail("{}: group '{}', expected a number of rows (0 = per tensor) in {}", what,
                 text.substr(sep + 1), choice_forms);
        group = *g;
    }
    return lut(static_cast<int>(*bits), group);
}

QuantSpec parse_quant_spec(std::string_view text) {
    QuantSpec spec;
    if (trim(text).empty()) fail("quant spec: empty, expected a preset or COMPONENT=CHOICE parts");
    // The previous part while it is COMPONENT=BITS: a bare number after it is
    // its group, so that "ffn=4,8" reads as "ffn=4:8".
    QuantChoice* open = nullptr;
    std::string_view open_part;
    size_t begin = 0;
    while (begin <= text.size()) {
        size_t end = text.find(',', begin);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view part = trim(text.substr(begin, end - begin));
        begin = end + 1;
        if (part.empty()) fail("quant spec: '{}': empty part between commas", text);
        const size_t eq = part.find('=');
        if (open && eq == std::string_view::npos && parse_count(part)) {
            // The two parts and the comma between them, as the user wrote them.
            const std::string_view both(open_part.data(),
                                        part.data() + part.size() - open_part.data());
            *open = parse_quant_choice(both.substr(both.find('=') + 1),
                                       fmt::format("quant spec: '{}'", both));
            open = nullptr;
            continue;
        }
        open = nullptr;
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
            continue;
        }
        QuantChoice* choice = key == "embed"  ? &spec.embed
                              : key == "ffn"  ? &spec.ffn
                              : key == "head" ? &spec.head
                                              : nullptr;
        if (!choice)
            bad_part(part,
                     fmt::format("unknown component '{}', expected embed, ffn, head or min", key));
        *choice = parse_quant_choice(value, fmt::format("quant spec: '{}'", part));
        if (parse_count(value)) {
            open = choice;
            open_part = part;
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

double stored_bits(const QuantChoice& choice, int64_t n_out, int64_t n_in) {
    const auto numel = static_cast<double>(n_out * n_in);
    switch (choice.method) {
        case QuantMethod::none:
            return 16 * numel;
        case QuantMethod::lut: {
            const int64_t rows = choice.group_size > 0 ? choice.group_size : std::max<int64_t>(n_out, 1);
            const int64_t tables = (n_out + rows - 1) / rows;
            return numel * choice.nbits + static_cast<double>(tables) * (1 << choice.nbits) * 16;
        }
        case QuantMethod::int8:
            return numel * 8 + static_cast<double>(n_out) * 16;
        case QuantMethod::int4:
            return numel * 4 + static_cast<double>(n_out) * 16;
    }
    return 16 * numel;
}

}  // namespace anelm::quant
