#include "quant/coreai_config.h"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <map>
#include <optional>
#include <set>

#include "base/error.h"

namespace anelm::quant {

namespace {

// What one weight is in the export's terms: a layer's module, or the head.
struct ModuleOf {
    std::optional<int> layer;  // none: the head
    std::string module;        // "self_attn.q_proj"; "lm_head" for the head
};

std::optional<ModuleOf> module_of(std::string_view name) {
    constexpr std::string_view layers = "model.layers.", weight = ".weight";
    if (name == "lm_head.weight") return ModuleOf{std::nullopt, "lm_head"};
    if (!name.starts_with(layers) || !name.ends_with(weight)) return std::nullopt;
    name.remove_prefix(layers.size());
    name.remove_suffix(weight.size());
    int layer = 0;
    const auto [end, ec] = std::from_chars(name.data(), name.data() + name.size(), layer);
    if (ec != std::errc() || end == name.data() + name.size() || *end != '.') return std::nullopt;
    return ModuleOf{layer, std::string(end + 1, name.data() + name.size())};
}

std::string escape_dots(std::string_view s) {
    std::string out;
    for (const char c : s) {
        if (c == '.') out += '\\';
        out += c;
    }
    return out;
}

// "(a|b|c)", or "a" alone.
std::string alternation(const std::vector<std::string>& parts) {
    std::string joined;
    for (const std::string& p : parts) joined += (joined.empty() ? "" : "|") + p;
    return parts.size() == 1 ? joined : "(" + joined + ")";
}

// The weight spec, indented under a `weight:` key at `indent` spaces; empty
// for a choice that leaves the weight f16.
using WeightSpec = std::string (*)(const QuantChoice&, int indent);

std::string palettization_spec(const QuantChoice& c, int indent) {
    const std::string pad(static_cast<size_t>(indent), ' ');
    // Linear int choices have no palette form: a LUT of the same width in
    // groups of the default size stands for them.
    const int64_t group = c.method == QuantMethod::lut ? c.group_size : default_group_size;
    std::string s = fmt::format("{}n_bits: {}\n{}granularity:\n", pad, c.nbits, pad);
    if (group == 0) return s + fmt::format("{}  type: per_tensor\n", pad);
    return s + fmt::format("{}  type: per_grouped_channel\n{}  axis: 0\n{}  group_size: {}\n", pad,
                           pad, pad, group);
}

std::string linear_spec(const QuantChoice& c, int indent) {
    const std::string pad(static_cast<size_t>(indent), ' ');
    // As Apple's macOS presets: int4 in blocks of 32 inputs, int8 per channel.
    if (c.nbits <= 4) {
        return fmt::format(
            "{}dtype: int4\n{}qscheme: symmetric_with_clipping\n{}granularity:\n{}  type: "
            "per_block\n{}  block_size: 32\n{}  axis: 1\n",
            pad, pad, pad, pad, pad, pad);
    }
    return fmt::format("{}dtype: int8\n{}qscheme: symmetric\n{}granularity:\n{}  type: per_channel\n",
                       pad, pad, pad, pad);
}

// A module config (the value of global_config or a module_name_configs key),
// at `indent`: op_state_spec's weight, activations untouched; "null" for f16.
std::string module_config(const QuantChoice& c, WeightSpec spec, bool weight_only, int indent) {
    if (c.method == QuantMethod::none) return " null\n";
    const std::string pad(static_cast<size_t>(indent), ' ');
    std::string s = "\n";
    if (weight_only) s += fmt::format("{}op_input_spec: null\n{}op_output_spec: null\n", pad, pad);
    return s + fmt::format("{}op_state_spec:\n{}  weight:\n", pad, pad) + spec(c, indent + 4);
}

// macOS stores int4 or int8: the widths a choice rounds up to.
QuantChoice macos_width(const QuantChoice& c) {
    if (c.method == QuantMethod::none) return c;
    return c.nbits <= 4 ? QuantChoice{QuantMethod::int4, 4, 0} : QuantChoice{QuantMethod::int8, 8, 0};
}

// Orders choices for map keys: by method, bits, then group.
struct ChoiceLess {
    bool operator()(const QuantChoice& a, const QuantChoice& b) const {
        return std::tie(a.method, a.nbits, a.group_size) < std::tie(b.method, b.nbits, b.group_size);
    }
};

// One entry of module_name_configs: a regex and the choice it sets.
struct NameConfig {
    std::string regex;
    QuantChoice choice;
};

// The choice covering the most weights.
QuantChoice commonest(const std::map<QuantChoice, int64_t, ChoiceLess>& weights_by_choice) {
    QuantChoice best;
    int64_t most = -1;
    for (const auto& [choice, n] : weights_by_choice) {
        if (n > most) best = choice, most = n;
    }
    return best;
}

// Regexes for the layers' weights whose choice differs from `global`: the
// modules sharing a choice and a set of layers go in one regex.
std::vector<NameConfig> layer_configs(
    const std::map<QuantChoice, std::map<std::string, std::set<int>>, ChoiceLess>& by_choice,
    const QuantChoice& global, std::string_view prefix) {
    std::vector<NameConfig> out;
    for (const auto& [choice, modules] : by_choice) {
        if (choice == global) continue;
        std::map<std::set<int>, std::vector<std::string>> by_layers;
        for (const auto& [module, layers] : modules) by_layers[layers].push_back(escape_dots(module));
        for (const auto& [layers, names] : by_layers) {
            std::vector<std::string> numbers;
            for (const int l : layers) numbers.push_back(std::to_string(l));
            out.push_back({fmt::format("{}model\\.layers\\.{}\\.{}", escape_dots(prefix),
                                       alternation(numbers), alternation(names)),
                           choice});
        }
    }
    return out;
}

struct Recipe {
    QuantChoice global;
    std::vector<NameConfig> names;
};

Recipe ios_recipe(const std::vector<RecipeWeight>& weights) {
    std::map<QuantChoice, int64_t, ChoiceLess> weights_by_choice;
    std::map<QuantChoice, std::map<std::string, std::set<int>>, ChoiceLess> by_choice;
    std::optional<QuantChoice> head;
    for (const RecipeWeight& w : weights) {
        const std::optional<ModuleOf> m = module_of(w.name);
        if (!m) continue;
        if (!m->layer) {
            head = w.choice;
            continue;
        }
        weights_by_choice[w.choice] += w.numel;
        by_choice[w.choice][m->module].insert(*m->layer);
    }
    Recipe r{commonest(weights_by_choice), {}};
    r.names = layer_configs(by_choice, r.global, "extend.");
    if (head && *head != r.global) r.names.push_back({"extend\\.lm_head", *head});
    return r;
}

// Every module of a layer at the widest width any of its matrices has.
Recipe macos_recipe(const std::vector<RecipeWeight>& weights) {
    std::map<int, QuantChoice> layer_width;
    std::map<int, int64_t> layer_weights;
    std::optional<QuantChoice> head;
    for (const RecipeWeight& w : weights) {
        const std::optional<ModuleOf> m = module_of(w.name);
        if (!m) continue;
        const QuantChoice width = macos_width(w.choice);
        if (!m->layer) {
            head = width;
            continue;
        }
        auto [it, fresh] = layer_width.try_emplace(*m->layer, width);
        if (!fresh && it->second.method != QuantMethod::none &&
            (width.method == QuantMethod::none || width.nbits > it->second.nbits))
            it->second = width;
        layer_weights[*m->layer] += w.numel;
    }
    std::map<QuantChoice, int64_t, ChoiceLess> weights_by_choice;
    std::map<QuantChoice, std::map<std::string, std::set<int>>, ChoiceLess> by_choice;
    for (const auto& [layer, width] : layer_width) {
        weights_by_choice[width] += layer_weights[layer];
        // Every projection of the layer, whatever the export fuses or names it.
        by_choice[width]["(self_attn|mlp).[a-z_]*proj"].insert(layer);
    }
    Recipe r{commonest(weights_by_choice), {}};
    r.names = layer_configs(by_choice, r.global, "");
    if (head && *head != r.global) r.names.push_back({"lm_head", *head});
    return r;
}

}  // namespace

CoreAiPlatform parse_coreai_platform(std::string_view text, std::string_view what) {
    if (text == "ios") return CoreAiPlatform::ios;
    if (text == "macos") return CoreAiPlatform::macos;
    fail("{}: '{}' is no platform (ios or macos)", what, text);
}

std::string coreai_compression_yaml(const std::vector<RecipeWeight>& weights,
                                    CoreAiPlatform platform,
                                    const std::vector<std::string>& header) {
    const bool ios = platform == CoreAiPlatform::ios;
    const Recipe recipe = ios ? ios_recipe(weights) : macos_recipe(weights);
    const WeightSpec spec = ios ? palettization_spec : linear_spec;
    std::string y;
    for (const std::string& line : header) y += "# " + line + "\n";
    if (ios) {
        y += "kmeans_palettization_config:\n  global_config:" +
             module_config(recipe.global, spec, false, 4) +
             // As Apple's iOS presets: the export stores embeddings itself.
             "  module_type_configs:\n"
             "    torch.nn.modules.sparse.Embedding: null\n"
             "    coreai_models.primitives.ios.embedding.LoadEmbeddings: null\n";
    } else {
        y += "quantization_config:\n  execution_mode: eager\n  global_config:" +
             module_config(recipe.global, spec, true, 4) +
             // As Apple's macOS presets: attention, rotary and norm modules
             // hold no weight to quantize.
             "  module_type_configs:\n"
             "    coreai_models.primitives.macos.sdpa.SDPA: null\n"
             "    coreai_models.primitives.macos.rope.RoPE: null\n"
             "    coreai_models.primitives.macos.rms_norm.RMSNorm: null\n"
             "    coreai_models.primitives.macos.rms_norm.RMSNormPlusOne: null\n"
             "    coreai_models.primitives.macos.rms_norm.RMSNormGated: null\n";
    }
    if (!recipe.names.empty()) {
        y += "  module_name_configs:\n";
        for (const NameConfig& c : recipe.names)
            y += fmt::format("    '{}':", c.regex) + module_config(c.choice, spec, !ios, 6);
    }
    return y;
}

}  // namespace anelm::quant
