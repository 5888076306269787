#include "tokenizer/post_processor.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "tokenizer/json_fields.h"

namespace anelm {

namespace {

// A later processor in a Sequence wraps what the earlier ones produced.
void wrap(SpecialAffixes& out, const SpecialAffixes& outer) {
    out.before.insert(out.before.begin(), outer.before.begin(), outer.before.end());
    out.after.insert(out.after.end(), outer.after.begin(), outer.after.end());
}

void append_template(const nlohmann::json& j, const std::string& where, SpecialAffixes& out) {
    const auto& single = array_field(j, "single", where);
    const nlohmann::json empty = nlohmann::json::object();
    const auto specials_it = j.find("special_tokens");
    const nlohmann::json& specials =
        specials_it != j.end() && specials_it->is_object() ? *specials_it : empty;
    SpecialAffixes local;
    bool seen_sequence = false;
    for (size_t i = 0; i < single.size(); ++i) {
        const std::string item = fmt::format("{}.single[{}]", where, i);
        const nlohmann::json& piece = single[i];
        if (piece.contains("Sequence")) {
            seen_sequence = true;
            continue;
        }
        if (!piece.contains("SpecialToken")) fail("{}: expected Sequence or SpecialToken", item);
        const std::string name = string_field(piece["SpecialToken"], "id", item + ".SpecialToken");
        const auto it = specials.find(name);
        if (it == specials.end())
            fail("{}: special token \"{}\" is not in special_tokens", item, name);
        for (const auto& id : array_field(*it, "ids", fmt::format("{}.special_tokens", where)))
            (seen_sequence ? local.after : local.before).push_back(id.get<int32_t>());
    }
    wrap(out, local);
}

// RobertaProcessing and BertProcessing: "cls" and "sep" are [content, id].
void append_cls_sep(const nlohmann::json& j, const std::string& where, SpecialAffixes& out) {
    SpecialAffixes local;
    for (const char* key : {"cls", "sep"}) {
        const auto& pair = array_field(j, key, where);
        if (pair.size() != 2 || !pair[1].is_number_integer())
            fail("{}.{}: expected [token, id]", where, key);
        (key[0] == 'c' ? local.before : local.after).push_back(pair[1].get<int32_t>());
    }
    wrap(out, local);
}

void append_processor(const nlohmann::json& j, const std::string& where, SpecialAffixes& out) {
    if (j.is_null()) return;
    const std::string type = type_field(j, where);
    if (type == "TemplateProcessing") {
        append_template(j, where, out);
    } else if (type == "ByteLevel") {
        // Only adjusts offsets, which are not kept here.
    } else if (type == "RobertaProcessing" || type == "BertProcessing") {
        append_cls_sep(j, where, out);
    } else if (type == "Sequence") {
        const auto& list = array_field(j, "processors", where);
        for (size_t i = 0; i < list.size(); ++i)
            append_processor(list[i], fmt::format("{}.processors[{}]", where, i), out);
    } else {
        fail("{}: unsupported post_processor type \"{}\"", where, type);
    }
}

}  // namespace

SpecialAffixes read_post_processor(const nlohmann::json& j, const std::string& where) {
    SpecialAffixes out;
    append_processor(j, where, out);
    return out;
}

}  // namespace anelm
