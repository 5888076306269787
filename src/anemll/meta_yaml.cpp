#include "anemll/meta_yaml.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <limits>
#include <optional>
#include <sstream>
#include <utility>
#include <vector>

#include "base/atomic_file.h"
#include "base/error.h"
#include "io/generation_config.h"
#include "io/json_file.h"

namespace anelm::anemll {

namespace {

using quant::QuantChoice;
using quant::QuantMethod;

// Opens the comment block; the reader takes `# key: value` lines after it.
constexpr std::string_view conversion_header =
    "# How this directory was converted (for troubleshooting; runners ignore it)";
constexpr std::string_view rule =
    "# ---------------------------------------------------------------------------";

// ANEMLL's LUT argument form: "none", or "BITS,GROUP" (group 0: per tensor).
std::string lut_argument(const QuantChoice& lut) {
    if (lut.method == QuantMethod::none) return "none";
    return fmt::format("{},{}", lut.nbits, lut.group_size);
}

// `key: BITS` or `key: none`, and `key_per_channel: GROUP` with a LUT.
void emit_lut(YAML::Emitter& out, const std::string& key, const std::string& group_key,
              const QuantChoice& lut) {
    if (lut.method == QuantMethod::none) {
        out << YAML::Key << key << YAML::Value << "none";
        return;
    }
    out << YAML::Key << key << YAML::Value << lut.nbits;
    out << YAML::Key << group_key << YAML::Value << lut.group_size;
}

// The keys both forms share after their file names.
void emit_head_and_flags(YAML::Emitter& out, const ConvertLayout& l) {
    out << YAML::Key << "split_lm_head" << YAML::Value << l.split_lm_head;
    out << YAML::Key << "argmax_in_model" << YAML::Value << l.argmax_in_model;
    out << YAML::Key << "vocab_size" << YAML::Value << l.vocab_size;
    out << YAML::Key << "lm_head_chunk_sizes" << YAML::Value << YAML::Flow << YAML::BeginSeq;
    for (int64_t s : l.lm_head_chunk_sizes) out << s;
    out << YAML::EndSeq;
    if (l.sliding_window > 0) {
        out << YAML::Key << "sliding_window" << YAML::Value << l.sliding_window;
    }
    // Without it (or update_mask_prefill) chat.py falls back to token-by-token prefill.
    out << YAML::Key << "prefill_dynamic_slice" << YAML::Value << true;
    if (l.single_cache) out << YAML::Key << "single_cache" << YAML::Value << true;
    // anelm's own: every package's verify function and its tokens.
    if (l.verify_tokens > 0) {
        out << YAML::Key << "verify_function" << YAML::Value << "verify";
        out << YAML::Key << "verify_tokens" << YAML::Value << l.verify_tokens;
    }
    // anelm's own: Gemma 4's per-layer table beside the packages.
    if (l.per_layer_bits > 0) {
        out << YAML::Key << "per_layer_table" << YAML::Value << l.per_layer_table_file();
        out << YAML::Key << "per_layer_table_bits" << YAML::Value << l.per_layer_bits;
    }
    // chat.py's causal-mask width and KV length: the context, as the functions take them.
    out << YAML::Key << "attention_size" << YAML::Value << l.context_length;
    out << YAML::Key << "state_length" << YAML::Value << l.context_length;
}

void emit_sampling(YAML::Emitter& out, const RecommendedSampling& s) {
    out << YAML::Key << "recommended_sampling" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "do_sample" << YAML::Value << s.do_sample;
    out << YAML::Key << "temperature" << YAML::Value << s.temperature;
    out << YAML::Key << "top_p" << YAML::Value << s.top_p;
    out << YAML::Key << "top_k" << YAML::Value << s.top_k;
    out << YAML::EndMap;
}

std::string description(const MetaYaml& meta) {
    const ConvertLayout& l = meta.layout;
    const std::string by =
        meta.anelm_version.empty() ? "anelm" : fmt::format("anelm {}", meta.anelm_version);
    return fmt::format(
        "{} converted by {} for the Apple Neural Engine\n"
        "Context length: {}\nBatch size: {}\n{}",
        meta.model_name, by, l.context_length, l.batch_size,
        l.monolithic ? "Type: monolithic (embeddings, layers and LM head in one file)"
                     : fmt::format("Chunks: {}", l.n_chunks));
}

std::string one_line(std::string s) {
    for (char& c : s)
        if (c == '\n' || c == '\r') c = ' ';
    return s;
}

std::string conversion_comments(const MetaYaml& meta) {
    const ConvertLayout& l = meta.layout;
    std::vector<std::pair<std::string, std::string>> lines = {
        {"model_path", meta.model_path},
        {"command_line", meta.command_line},
        {"context_length", std::to_string(l.context_length)},
        {"batch_size", std::to_string(l.batch_size)},
        {"num_chunks", std::to_string(l.n_chunks)},
        {"lut_part1", lut_argument(l.lut_embed)},
        {"lut_part2", lut_argument(l.lut_ffn)},
        {"lut_part3", lut_argument(l.lut_head)},
        {"prefix", l.prefix},
        {"architecture", l.architecture},
        {"argmax_in_model", l.argmax_in_model ? "true" : "false"},
        {"sliding_window", l.sliding_window > 0 ? std::to_string(l.sliding_window) : "none"},
        {"single_cache", l.single_cache ? "true" : "false"},
        {"verify_tokens", l.verify_tokens > 0 ? std::to_string(l.verify_tokens) : ""},
        {"fp16_scale", l.fp16_scale == 1 ? "none" : fmt::format("{}", l.fp16_scale)},
        {"dynamic_prefill_slice", "true"},
        {"monolithic", l.monolithic ? "true" : "false"},
        {"converter", "anelm"},
        {"anelm_version", meta.anelm_version},
    };
    std::string text = fmt::format("\n{}\n{}\n{}\n", rule, conversion_header, rule);
    for (const auto& [key, value] : lines)
        if (!value.empty()) text += fmt::format("# {}: {}\n", key, one_line(value));
    text += fmt::format("{}\n", rule);
    return text;
}

// Typed access to one YAML map, naming PATH and the key's full path in errors.
class Fields {
public:
    Fields(const std::string& path, YAML::Node node, std::string where)
        : path_(path), node_(std::move(node)), where_(std::move(where)) {}

    [[noreturn]] void bad(std::string_view key, std::string_view what) const {
        fail("{}: {}{}: {}", path_, where_.empty() ? "" : where_ + ".", key, what);
    }

    bool has(std::string_view key) const { return static_cast<bool>(get(key)); }

    Fields map(std::string_view key) const {
        const YAML::Node n = get(key);
        if (!n) bad(key, "missing");
        if (!n.IsMap()) bad(key, "expected a mapping");
        return Fields(path_, n,
                      where_.empty() ? std::string(key) : fmt::format("{}.{}", where_, key));
    }

    int64_t integer(std::string_view key) const {
        const std::optional<int64_t> v = optional_integer(key);
        if (!v) bad(key, "missing");
        return *v;
    }

    std::optional<int64_t> optional_integer(std::string_view key) const {
        const YAML::Node n = get(key);
        if (!n) return std::nullopt;
        return as_integer(key, n);
    }

    bool flag(std::string_view key, bool fallback) const {
        const YAML::Node n = get(key);
        if (!n) return fallback;
        bool v = false;
        if (!n.IsScalar() || !YAML::convert<bool>::decode(n, v))
            bad(key, fmt::format("'{}' is not true or false", text_of(n)));
        return v;
    }

    std::optional<double> number(std::string_view key) const {
        const YAML::Node n = get(key);
        if (!n) return std::nullopt;
        double v = 0;
        if (!n.IsScalar() || !YAML::convert<double>::decode(n, v))
            bad(key, fmt::format("'{}' is not a number", text_of(n)));
        return v;
    }

    // A mapping of names to --quant choices (lut3:8, none), empty when absent.
    std::map<std::string, QuantChoice> choices(std::string_view key) const {
        std::map<std::string, QuantChoice> out;
        const YAML::Node n = get(key);
        if (!n) return out;
        if (!n.IsMap()) bad(key, "expected a mapping");
        for (const auto& entry : n) {
            const std::string name = entry.first.as<std::string>();
            if (!entry.second.IsScalar()) bad(fmt::format("{}.{}", key, name), "expected a choice");
            try {
                out[name] = quant::parse_quant_choice(entry.second.Scalar(), "choice");
            } catch (const Error& e) {
                bad(fmt::format("{}.{}", key, name), e.what());
            }
        }
        return out;
    }

    std::optional<std::string> optional_text(std::string_view key) const {
        const YAML::Node n = get(key);
        if (!n) return std::nullopt;
        if (!n.IsScalar() || n.Scalar().empty()) bad(key, "expected a non-empty string");
        return n.Scalar();
    }

    // `none` or LUT bits, with the group from `group_key` (default 8).
    std::optional<QuantChoice> lut(std::string_view key, std::string_view group_key) const {
        const YAML::Node n = get(key);
        if (!n) return std::nullopt;
        if (n.IsScalar() && n.Scalar() == "none") return QuantChoice{};
        const int64_t bits = as_integer(key, n, "an integer or none");
        if (bits != 1 && bits != 2 && bits != 3 && bits != 4 && bits != 6 && bits != 8)
            bad(key, fmt::format("{} bits, expected 1, 2, 3, 4, 6, 8 or none", bits));
        const int64_t group = optional_integer(group_key).value_or(quant::default_group_size);
        if (group < 0) bad(group_key, fmt::format("{} is negative", group));
        return QuantChoice{QuantMethod::lut, static_cast<int>(bits), group};
    }

    std::optional<std::vector<int64_t>> integers(std::string_view key) const {
        const YAML::Node n = get(key);
        if (!n) return std::nullopt;
        if (!n.IsSequence()) bad(key, "expected a list of integers");
        std::vector<int64_t> v;
        for (const YAML::Node& item : n) v.push_back(as_integer(key, item));
        return v;
    }

private:
    YAML::Node get(std::string_view key) const {
        const YAML::Node n = node_[std::string(key)];
        return n.IsDefined() && !n.IsNull() ? n : YAML::Node(YAML::NodeType::Undefined);
    }

    static std::string text_of(const YAML::Node& n) {
        if (n.IsScalar()) return n.Scalar();
        return n.IsSequence() ? "a list" : "a mapping";
    }

    int64_t as_integer(std::string_view key, const YAML::Node& n,
                       std::string_view expected = "an integer") const {
        int64_t v = 0;
        if (!n.IsScalar() || !YAML::convert<int64_t>::decode(n, v))
            bad(key, fmt::format("'{}' is not {}", text_of(n), expected));
        return v;
    }

    const std::string& path_;
    YAML::Node node_;
    std::string where_;
};

// The `# key: value` lines after the comment block's header.
std::vector<std::pair<std::string, std::string>> read_conversion_comments(std::string_view text) {
    std::vector<std::pair<std::string, std::string>> entries;
    std::istringstream lines{std::string(text)};
    bool inside = false;
    for (std::string line; std::getline(lines, line);) {
        if (line == conversion_header) inside = true;
        if (!inside || !line.starts_with("# ")) continue;
        const size_t colon = line.find(": ");
        if (colon == std::string::npos) continue;
        entries.emplace_back(line.substr(2, colon - 2), line.substr(colon + 2));
    }
    return entries;
}

float parse_fp16_scale(const std::string& path, const std::string& value) {
    if (value == "none") return 1;
    float v = 0;
    const auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
    if (ec != std::errc() || end != value.data() + value.size() || !(v > 0 && v <= 1))
        fail("{}: # fp16_scale: '{}', expected none or a value in (0, 1]", path, value);
    return v;
}

// model_info.name is anemll-NAME-ctxC[-monolithic]; a name of another form is kept whole.
std::string model_name_of(const std::string& name, const ConvertLayout& l) {
    const std::string tail =
        fmt::format("-ctx{}{}", l.context_length, l.monolithic ? "-monolithic" : "");
    if (name.starts_with("anemll-") && name.ends_with(tail) && name.size() > 7 + tail.size())
        return name.substr(7, name.size() - 7 - tail.size());
    return name;
}

void read_chunked(const Fields& p, MetaYaml& meta) {
    ConvertLayout& l = meta.layout;
    // chat.py indexes these three directly: they are required.
    const auto required_lut = [&](std::string_view key, std::string_view group_key) {
        const std::optional<QuantChoice> lut = p.lut(key, group_key);
        if (!lut) p.bad(key, "missing");
        return *lut;
    };
    l.lut_embed = required_lut("lut_embeddings", "lut_embeddings_per_channel");
    l.lut_ffn = required_lut("lut_ffn", "lut_ffn_per_channel");
    l.lut_head = required_lut("lut_lmhead", "lut_lmhead_per_channel");
    const int64_t n_chunks = p.integer("num_chunks");
    if (n_chunks < 1 || n_chunks > 99)
        p.bad("num_chunks", fmt::format("{}, expected 1 to 99", n_chunks));
    l.n_chunks = static_cast<int>(n_chunks);
    meta.embeddings = p.optional_text("embeddings").value_or(compiled_name(l.embeddings_stem()));
    meta.lm_head = p.optional_text("lm_head").value_or(compiled_name(l.lm_head_stem()));
    meta.ffn = p.optional_text("ffn").value_or(compiled_name(l.ffn_chunk_stem(1)));
}

void read_monolithic(const Fields& p, MetaYaml& meta) {
    ConvertLayout& l = meta.layout;
    l.monolithic = true;
    l.n_chunks = 1;
    l.lut_ffn = p.lut("lut_bits", "lut_per_channel").value_or(QuantChoice{});
    l.lut_embed = p.lut("lut_embeddings", "lut_embeddings_per_channel").value_or(l.lut_ffn);
    l.lut_head = p.lut("lut_lmhead", "lut_lmhead_per_channel").value_or(l.lut_ffn);
    meta.monolithic_model =
        p.optional_text("monolithic_model").value_or(compiled_name(l.monolithic_stem()));
}

}  // namespace

std::optional<RecommendedSampling> read_recommended_sampling(const std::string& path) {
    const GenerationSampling g = read_generation_sampling(path);
    if (!g.do_sample && !g.temperature && !g.top_p && !g.top_k) return std::nullopt;
    RecommendedSampling r;
    r.do_sample = g.do_sample.value_or(r.do_sample);
    r.temperature = g.temperature.value_or(r.temperature);
    r.top_p = g.top_p.value_or(r.top_p);
    r.top_k = g.top_k.value_or(r.top_k);
    return r;
}

MetaYaml make_meta_yaml(const ConvertLayout& layout, std::string model_name) {
    MetaYaml meta;
    meta.layout = layout;
    meta.model_name = std::move(model_name);
    if (layout.monolithic) {
        meta.monolithic_model = compiled_name(layout.monolithic_stem());
    } else {
        meta.embeddings = compiled_name(layout.embeddings_stem());
        meta.lm_head = compiled_name(layout.lm_head_stem());
        meta.ffn = compiled_name(layout.ffn_chunk_stem(1));
    }
    return meta;
}

std::string meta_yaml_text(const MetaYaml& meta) {
    const ConvertLayout& l = meta.layout;
    l.check("meta.yaml");
    YAML::Emitter out;
    out << YAML::BeginMap << YAML::Key << "model_info" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "name" << YAML::Value
        << fmt::format("anemll-{}-ctx{}{}", meta.model_name, l.context_length,
                       l.monolithic ? "-monolithic" : "");
    out << YAML::Key << "version" << YAML::Value << std::string(anemll_contract_version);
    out << YAML::Key << "description" << YAML::Value << YAML::Literal << description(meta);
    out << YAML::Key << "license" << YAML::Value << "as the source model";
    out << YAML::Key << "author" << YAML::Value << "anelm";
    out << YAML::Key << "framework" << YAML::Value << "Core ML";
    out << YAML::Key << "language" << YAML::Value << "C++";
    out << YAML::Key << "architecture" << YAML::Value << l.architecture;
    if (l.monolithic) out << YAML::Key << "model_type" << YAML::Value << "monolithic";

    out << YAML::Key << "parameters" << YAML::Value << YAML::BeginMap;
    out << YAML::Key << "context_length" << YAML::Value << l.context_length;
    if (meta.n_ctx_train > 0) out << YAML::Key << "n_ctx_train" << YAML::Value << meta.n_ctx_train;
    out << YAML::Key << "batch_size" << YAML::Value << l.batch_size;
    if (l.monolithic) {
        // The layers' LUT names the file; the other two are written where they differ.
        emit_lut(out, "lut_bits", "lut_per_channel", l.lut_ffn);
        if (l.lut_embed != l.lut_ffn)
            emit_lut(out, "lut_embeddings", "lut_embeddings_per_channel", l.lut_embed);
        if (l.lut_head != l.lut_ffn)
            emit_lut(out, "lut_lmhead", "lut_lmhead_per_channel", l.lut_head);
        out << YAML::Key << "model_prefix" << YAML::Value << l.prefix;
        out << YAML::Key << "monolithic_model" << YAML::Value << meta.monolithic_model;
    } else {
        emit_lut(out, "lut_embeddings", "lut_embeddings_per_channel", l.lut_embed);
        emit_lut(out, "lut_ffn", "lut_ffn_per_channel", l.lut_ffn);
        emit_lut(out, "lut_lmhead", "lut_lmhead_per_channel", l.lut_head);
        out << YAML::Key << "num_chunks" << YAML::Value << l.n_chunks;
        out << YAML::Key << "model_prefix" << YAML::Value << l.prefix;
        out << YAML::Key << "embeddings" << YAML::Value << meta.embeddings;
        out << YAML::Key << "lm_head" << YAML::Value << meta.lm_head;
        out << YAML::Key << "ffn" << YAML::Value << meta.ffn;
    }
    emit_head_and_flags(out, l);
    if (meta.sampling) emit_sampling(out, *meta.sampling);
    if (!meta.quant_recipe.empty()) {
        out << YAML::Key << "quant_recipe" << YAML::Value << YAML::BeginMap;
        for (const auto& [name, choice] : meta.quant_recipe)
            out << YAML::Key << name << YAML::Value
                << (choice.method == quant::QuantMethod::lut
                        ? fmt::format("{}:{}", choice.nbits, choice.group_size)
                        : choice.name());
        out << YAML::EndMap;
    }
    if (l.monolithic) {
        out << YAML::Key << "functions" << YAML::Value << YAML::BeginSeq;
        for (const std::string& f : l.function_names()) out << f;
        out << YAML::EndSeq;
    }
    out << YAML::EndMap << YAML::EndMap << YAML::EndMap;
    if (!out.good()) fail("meta.yaml: cannot emit: {}", out.GetLastError());
    return std::string(out.c_str()) + "\n" + conversion_comments(meta);
}

void write_meta_yaml(const std::string& path, const MetaYaml& meta) {
    write_file_atomic(path, meta_yaml_text(meta));
}

MetaYaml read_meta_yaml(const std::string& path) {
    const std::string text = read_text_file(path);
    YAML::Node root;
    try {
        root = YAML::Load(text);
    } catch (const YAML::Exception& e) {
        fail("{}: not valid YAML at line {}, column {}: {}", path, e.mark.line + 1,
             e.mark.column + 1, e.msg);
    }
    if (!root.IsMap()) fail("{}: expected a mapping with model_info", path);
    const Fields info = Fields(path, root, "").map("model_info");
    const Fields p = info.map("parameters");

    MetaYaml meta;
    ConvertLayout& l = meta.layout;
    l.prefix = p.optional_text("model_prefix").value_or("llama");
    l.architecture = info.optional_text("architecture").value_or(l.prefix);
    // Runners size buffers from these numbers: each has a ceiling far above any
    // model's, so a hostile file cannot ask for terabytes.
    const auto in_range = [&](std::string_view key, int64_t v, int64_t lo, int64_t hi) {
        if (v < lo || v > hi) p.bad(key, fmt::format("{}, expected {} to {}", v, lo, hi));
        return v;
    };
    constexpr int64_t max_context = int64_t{1} << 20, max_vocab = int64_t{1} << 24;
    l.context_length = in_range("context_length", p.integer("context_length"), 1, max_context);
    l.batch_size = in_range("batch_size", p.integer("batch_size"), 1, max_context);
    // Only compared with context_length, never allocated: any positive length will do.
    meta.n_ctx_train = in_range("n_ctx_train", p.optional_integer("n_ctx_train").value_or(0), 0,
                                std::numeric_limits<int64_t>::max());

    const std::optional<std::string> model_type = info.optional_text("model_type");
    if (model_type && *model_type == "monolithic") {
        read_monolithic(p, meta);
    } else {
        read_chunked(p, meta);
    }

    l.split_lm_head = static_cast<int>(
        in_range("split_lm_head", p.optional_integer("split_lm_head").value_or(8), 1, 1024));
    l.argmax_in_model = p.flag("argmax_in_model", false);
    l.vocab_size =
        in_range("vocab_size", p.optional_integer("vocab_size").value_or(0), 0, max_vocab);
    if (auto sizes = p.integers("lm_head_chunk_sizes")) {
        if (std::ssize(*sizes) != l.split_lm_head)
            p.bad("lm_head_chunk_sizes",
                  fmt::format("{} pieces, split_lm_head is {}", sizes->size(), l.split_lm_head));
        int64_t sum = 0;
        for (int64_t s : *sizes) {
            if (s < 1 || s > max_vocab)
                p.bad("lm_head_chunk_sizes", fmt::format("a piece of {}", s));
            sum += s;
        }
        in_range("lm_head_chunk_sizes", sum, 1, max_vocab);
        if (l.vocab_size != 0 && sum != l.vocab_size)
            p.bad("lm_head_chunk_sizes",
                  fmt::format("sum {}, vocab_size is {}", sum, l.vocab_size));
        l.vocab_size = sum;
        l.lm_head_chunk_sizes = std::move(*sizes);
    } else if (l.vocab_size >= l.split_lm_head) {
        // The runners' fallback: an even split of vocab_size.
        auto sizes = lm_head_chunk_sizes(l.vocab_size, l.split_lm_head);
        if (std::ssize(sizes) == l.split_lm_head) l.lm_head_chunk_sizes = std::move(sizes);
    }
    // Both runners assume Gemma 3's 512 when a gemma3-prefixed model states none.
    l.sliding_window =
        p.optional_integer("sliding_window").value_or(l.prefix.starts_with("gemma3") ? 512 : 0);
    if (l.sliding_window < 0)
        p.bad("sliding_window", fmt::format("{} is negative", l.sliding_window));
    l.single_cache = p.flag("single_cache", false);
    l.verify_tokens = p.optional_integer("verify_tokens").value_or(0);
    if (!valid_verify_tokens(l.verify_tokens, l.context_length))
        p.bad("verify_tokens", fmt::format("{}, expected 2 to the context of {}", l.verify_tokens,
                                           l.context_length));
    l.per_layer_bits = static_cast<int>(p.optional_integer("per_layer_table_bits").value_or(0));
    if (l.per_layer_bits != 0 && l.per_layer_bits != 16 && l.per_layer_bits != 8)
        p.bad("per_layer_table_bits", fmt::format("{}, expected 16 or 8", l.per_layer_bits));
    if (p.has("recommended_sampling")) {
        const Fields s = p.map("recommended_sampling");
        RecommendedSampling r;
        r.do_sample = s.flag("do_sample", false);
        r.temperature = s.number("temperature").value_or(r.temperature);
        r.top_p = s.number("top_p").value_or(r.top_p);
        r.top_k = s.optional_integer("top_k").value_or(r.top_k);
        meta.sampling = r;
    }

    meta.quant_recipe = p.choices("quant_recipe");

    for (const auto& [key, value] : read_conversion_comments(text)) {
        if (key == "model_path") meta.model_path = value;
        if (key == "command_line") meta.command_line = value;
        if (key == "anelm_version") meta.anelm_version = value;
        if (key == "fp16_scale") l.fp16_scale = parse_fp16_scale(path, value);
    }
    meta.model_name = model_name_of(info.optional_text("name").value_or(""), l);
    return meta;
}

}  // namespace anelm::anemll
