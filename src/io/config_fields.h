// Typed access to a config.json's fields, and the readings every family's
// config shares (rotation, token ids, layer kinds), with errors that name the
// file and the field.
#pragma once

#include <fmt/format.h>

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/error.h"
#include "io/json_file.h"
#include "io/model_spec.h"

namespace anelm {

// The fields of one JSON object, with errors that name the file and the field
// ("config.json: field rope_scaling.factor: ...").
class ConfigFields {
public:
    ConfigFields(const nlohmann::json& object, const std::string& path, std::string prefix = "")
        : object_(object), path_(path), prefix_(std::move(prefix)) {}

    // The value, or nullptr when the field is absent or null.
    const nlohmann::json* find(const char* name) const {
        auto it = object_.find(name);
        return it == object_.end() || it->is_null() ? nullptr : &*it;
    }
    bool has(const char* name) const { return object_.contains(name); }
    const nlohmann::json& object() const { return object_; }

    template <typename... Args>
    [[noreturn]] void fail_field(const char* name, fmt::format_string<Args...> what,
                                 Args&&... args) const {
        fail("{}: field {}{}: {}", path_, prefix_, name,
             fmt::format(what, std::forward<Args>(args)...));
    }

    std::optional<int64_t> integer(const char* name, int64_t lo, int64_t hi) const {
        const nlohmann::json* v = find(name);
        if (!v) return std::nullopt;
        if (!v->is_number_integer())
            fail_field(name, "expected an integer, got {}", json_type_words(*v));
        if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(hi))
            fail_field(name, "{} is out of range [{}, {}]", v->get<uint64_t>(), lo, hi);
        const int64_t i = v->get<int64_t>();
        if (i < lo || i > hi) fail_field(name, "{} is out of range [{}, {}]", i, lo, hi);
        return i;
    }
    int64_t required_integer(const char* name, int64_t lo, int64_t hi) const {
        if (auto i = integer(name, lo, hi)) return *i;
        fail_field(name, "missing");
    }

    // A finite number in (0, hi].
    std::optional<double> positive(const char* name, double hi) const {
        const nlohmann::json* v = find(name);
        if (!v) return std::nullopt;
        if (!v->is_number()) fail_field(name, "expected a number, got {}", json_type_words(*v));
        const double x = v->get<double>();
        if (!(x > 0.0) || !(x <= hi)) fail_field(name, "{} is out of range (0, {}]", x, hi);
        return x;
    }
    double required_positive(const char* name, double hi) const {
        if (auto x = positive(name, hi)) return *x;
        fail_field(name, "missing");
    }

    bool boolean(const char* name, bool fallback) const {
        const nlohmann::json* v = find(name);
        if (!v) return fallback;
        if (!v->is_boolean())
            fail_field(name, "expected true or false, got {}", json_type_words(*v));
        return v->get<bool>();
    }

    std::optional<std::string> string(const char* name) const {
        const nlohmann::json* v = find(name);
        if (!v) return std::nullopt;
        if (!v->is_string()) fail_field(name, "expected a string, got {}", json_type_words(*v));
        return v->get<std::string>();
    }

    // A token id, or a list of them (eos_token_id), each in [0, n_vocab).
    std::vector<int32_t> token_ids(const char* name, int64_t n_vocab) const {
        const nlohmann::json* v = find(name);
        if (!v) return {};
        const auto check = [&](const nlohmann::json& id) {
            if (!id.is_number_integer())
                fail_field(name, "expected a token id, got {}", json_type_words(id));
            const int64_t i = id.get<int64_t>();
            if (id.is_number_unsigned() ? id.get<uint64_t>() >= static_cast<uint64_t>(n_vocab)
                                        : i < 0 || i >= n_vocab)
                fail_field(name, "token id {} is outside the vocabulary [0, {})", id.dump(),
                           n_vocab);
            return static_cast<int32_t>(i);
        };
        std::vector<int32_t> ids;
        if (v->is_array()) {
            for (const nlohmann::json& id : *v) ids.push_back(check(id));
        } else {
            ids.push_back(check(*v));
        }
        return ids;
    }

private:
    const nlohmann::json& object_;
    const std::string& path_;
    std::string prefix_;
};

// Upper bounds that no real model reaches; past them a value is corrupt.
constexpr int64_t max_dim = int64_t{1} << 20;
constexpr int64_t max_layers = 4096;
constexpr int64_t max_vocab = int64_t{1} << 24;
constexpr int64_t max_ctx = int64_t{1} << 30;

RopeScaling parse_rope_scaling(const ConfigFields& r);
// rope_theta and rope scaling: transformers 5 groups both under rope_parameters;
// earlier configs have rope_theta and rope_scaling at the top level.
void parse_rope(const ConfigFields& f, const std::string& path, ModelSpec& spec);
std::optional<int32_t> bos_token_id(const ConfigFields& f, int64_t n_vocab);

// layer_types, when given: one entry a layer, `marked` (true) or
// "full_attention" (false).
std::optional<std::vector<bool>> layer_types(const ConfigFields& f, int64_t n_layer,
                                             std::string_view marked);
// The head size of a config that names none: hidden_size over the query heads.
int64_t derived_head_dim(const ConfigFields& f, const ModelSpec& spec);
// Grouped-query attention: each KV head serves the same number of query heads.
void check_kv_heads(const ConfigFields& f, const ModelSpec& spec);
// The layer_types transformers derives when a config lists none: every layer
// marked but each period-th, which attends fully.
std::vector<bool> all_but_every(int64_t n_layer, int64_t period);

// A multimodal config's language model: its fields under text_config (the
// prefix its error messages give them), else the top level's.
std::string text_prefix(const ConfigFields& top);
ConfigFields text_fields(const ConfigFields& top, const std::string& path);

}  // namespace anelm
