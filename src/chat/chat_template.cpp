#include "chat/chat_template.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "chat/jinja_template.h"
#include "io/gguf.h"
#include "io/json_file.h"
#include "io/model_format.h"

namespace anelm {
namespace fs = std::filesystem;
using ojson = nlohmann::ordered_json;

namespace {

std::string read_file(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot open file", path.string());
    std::ostringstream ss;
    ss << in.rdbuf();
    if (in.bad()) fail("{}: read error", path.string());
    return ss.str();
}

ojson read_json(const fs::path& path) {
    const std::string text = read_file(path);
    check_json_depth(text, path.string());
    try {
        return ojson::parse(text);
    } catch (const ojson::exception& e) {
        fail("{}: invalid JSON: {}", path.string(), e.what());
    }
}

// The special tokens transformers puts into the template context: the ones set
// (non-empty) in tokenizer_config.json, as strings.
ojson special_tokens_of(const ojson& config, const fs::path& path) {
    static const char* const names[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                        "pad_token", "cls_token", "mask_token"};
    auto content = [&](const ojson& v, const std::string& field) -> ojson {
        if (v.is_string()) return v;
        if (v.is_object() && v.contains("content") && v["content"].is_string()) return v["content"];
        if (v.is_null()) return nullptr;
        fail("{}: {}: expected a string or an object with \"content\"", path.string(), field);
    };
    ojson tokens = ojson::object();
    for (const char* name : names) {
        if (!config.contains(name)) continue;
        ojson v = content(config[name], name);
        if (v.is_string() && !v.get<std::string>().empty()) tokens[name] = v;
    }
    if (config.contains("additional_special_tokens") &&
        config["additional_special_tokens"].is_array()) {
        ojson extra = ojson::array();
        for (const auto& t : config["additional_special_tokens"]) {
            ojson v = content(t, "additional_special_tokens");
            if (v.is_string()) extra.push_back(v);
        }
        if (!extra.empty()) tokens["additional_special_tokens"] = extra;
    }
    return tokens;
}

// What a model without a chat template is told.
constexpr const char* no_template_hint = "use generate, or --template FILE";

// A GGUF file's BOS and EOS tokens' text.
ojson gguf_special_tokens(const GgufFile& gguf) {
    const std::vector<std::string_view> tokens = gguf.strings("tokenizer.ggml.tokens");
    ojson special = ojson::object();
    for (const auto& [name, key] : {std::pair{"bos_token", "tokenizer.ggml.bos_token_id"},
                                    std::pair{"eos_token", "tokenizer.ggml.eos_token_id"}}) {
        const auto id = gguf.find_int(key);
        if (id && *id >= 0 && static_cast<size_t>(*id) < tokens.size())
            special[name] = std::string(tokens[static_cast<size_t>(*id)]);
    }
    return special;
}

// A GGUF file's tokenizer.chat_template, with its BOS and EOS tokens' text.
ChatTemplate gguf_chat_template(const std::string& path) {
    const GgufFile gguf(path);
    const auto source = gguf.find_string("tokenizer.chat_template");
    if (!source)
        fail("{}: no chat template (no metadata tokenizer.chat_template); {}", path,
             no_template_hint);
    return ChatTemplate(*source, path + ":tokenizer.chat_template", gguf_special_tokens(gguf));
}

// A template file: Jinja text, never a checkpoint read as one.
std::string read_template_file(const fs::path& path) {
    if (!is_text_file(path.string()))
        fail("{}: not a text file (expected a Jinja chat template)", path.string());
    return read_file(path);
}

// The special tokens of the model at `path` (a folder's tokenizer_config.json, a
// GGUF file's BOS and EOS), for a template given apart from it.
ojson model_special_tokens(const fs::path& path) {
    if (fs::is_directory(path)) {
        const fs::path config_path = path / "tokenizer_config.json";
        if (!fs::exists(config_path)) return ojson::object();
        const ojson config = read_json(config_path);
        if (!config.is_object()) fail("{}: expected a JSON object", config_path.string());
        return special_tokens_of(config, config_path);
    }
    if (is_gguf_file(path.string())) return gguf_special_tokens(GgufFile(path.string()));
    return ojson::object();
}

std::string token_string(const ojson& tokens, const char* name) {
    if (!tokens.contains(name) || !tokens[name].is_string()) return {};
    return tokens[name].get<std::string>();
}

}  // namespace

ChatTemplate::ChatTemplate(const std::string& source, const std::string& name,
                           const ojson& special_tokens)
    : special_tokens_(special_tokens), path_(name) {
    if (!special_tokens_.is_object()) fail("{}: special tokens must be a JSON object", name);
    add("default", source, name);
}

void ChatTemplate::add(const std::string& name, const std::string& source,
                       const std::string& label) {
    templates_.push_back({name, source, std::make_shared<const jinja::Template>(source, label)});
}

ChatTemplate ChatTemplate::load(const std::string& path_str) {
    const fs::path path(path_str);
    ChatTemplate t;
    t.path_ = path_str;
    if (!fs::exists(path)) fail("{}: no such file or directory", path_str);
    if (!fs::is_directory(path)) {
        if (is_gguf_file(path_str)) return gguf_chat_template(path_str);
        if (path.extension() != ".json") {
            if (!is_text_file(path_str)) {
                // A checkpoint has no template; anything else is named for what it is.
                detect_model_format(path_str);
                fail("{}: no chat template; {}", path_str, no_template_hint);
            }
            t.add("default", read_file(path), path_str);
            return t;
        }
    }
    const fs::path config_path = fs::is_directory(path) ? path / "tokenizer_config.json" : path;
    const fs::path dir = fs::is_directory(path) ? path : path.parent_path();
    ojson config = ojson::object();
    if (fs::exists(config_path)) {
        config = read_json(config_path);
        if (!config.is_object()) fail("{}: expected a JSON object", config_path.string());
        t.special_tokens_ = special_tokens_of(config, config_path);
    }

    // Template files beside the config replace its entry, as in transformers.
    if (fs::is_directory(path)) {
        const fs::path jinja = dir / "chat_template.jinja";
        if (fs::exists(jinja)) t.add("default", read_file(jinja), jinja.string());
        const fs::path extra_dir = dir / "additional_chat_templates";
        if (fs::is_directory(extra_dir)) {
            std::vector<fs::path> files;
            for (const auto& entry : fs::directory_iterator(extra_dir))
                if (entry.path().extension() == ".jinja") files.push_back(entry.path());
            std::sort(files.begin(), files.end());
            for (const auto& f : files) t.add(f.stem().string(), read_file(f), f.string());
        }
    }
    if (t.templates_.empty() && config.contains("chat_template")) {
        const ojson& ct = config["chat_template"];
        const std::string label = config_path.string() + ":chat_template";
        if (ct.is_string()) {
            t.add("default", ct.get<std::string>(), label);
        } else if (ct.is_array()) {
            for (const auto& entry : ct) {
                if (!entry.is_object() || !entry.contains("name") || !entry["name"].is_string() ||
                    !entry.contains("template") || !entry["template"].is_string())
                    fail("{}: chat_template: expected a list of {{\"name\", \"template\"}} objects",
                         config_path.string());
                const std::string name = entry["name"].get<std::string>();
                t.add(name, entry["template"].get<std::string>(), label + "[" + name + "]");
            }
        } else if (!ct.is_null()) {
            fail("{}: chat_template: expected a string or a list", config_path.string());
        }
    }
    if (t.templates_.empty() && fs::is_directory(path) && fs::exists(dir / "chat_template.json")) {
        const fs::path processor = dir / "chat_template.json";
        const ojson j = read_json(processor);
        if (j.is_object() && j.contains("chat_template") && j["chat_template"].is_string())
            t.add("default", j["chat_template"].get<std::string>(),
                  processor.string() + ":chat_template");
    }
    if (t.templates_.empty())
        fail(
            "{}: no chat template (no chat_template.jinja, and tokenizer_config.json has no "
            "\"chat_template\"); {}",
            path_str, no_template_hint);
    return t;
}

ChatTemplate ChatTemplate::load(const std::string& path, const std::string& template_file) {
    if (template_file.empty()) return load(path);
    if (!fs::exists(path)) fail("{}: no such file or directory", path);
    if (!fs::exists(template_file)) fail("{}: no such file", template_file);
    return ChatTemplate(read_template_file(template_file), template_file,
                        model_special_tokens(path));
}

const ChatTemplate::Named& ChatTemplate::pick(const std::string& template_name,
                                              bool has_tools) const {
    auto find = [&](const std::string& name) -> const Named* {
        for (const Named& n : templates_)
            if (n.name == name) return &n;
        return nullptr;
    };
    if (!template_name.empty()) {
        if (const Named* n = find(template_name)) return *n;
        fail("{}: no chat template named \"{}\"", path_, template_name);
    }
    if (templates_.size() == 1) return templates_[0];
    if (has_tools)
        if (const Named* n = find("tool_use")) return *n;
    if (const Named* n = find("default")) return *n;
    fail("{}: this model has several chat templates and none is named \"default\"", path_);
}

std::string ChatTemplate::render(const ojson& messages, bool add_generation_prompt,
                                 const ojson& variables, const std::string& template_name) const {
    if (!messages.is_array()) fail("{}: messages must be a JSON array", path_);
    if (!variables.is_object()) fail("{}: template variables must be a JSON object", path_);
    for (const char* reserved : {"messages", "add_generation_prompt"})
        if (variables.contains(reserved))
            fail("{}: \"{}\" cannot be set as a variable", path_, reserved);
    const bool has_tools = variables.contains("tools") && !variables["tools"].is_null();
    const Named& t = pick(template_name, has_tools);

    // transformers: render(messages=, tools=, documents=, add_generation_prompt=,
    // **special_tokens_map, **kwargs).
    std::vector<std::pair<std::string, jinja::Value>> vars;
    vars.emplace_back("messages", jinja::from_json(messages));
    vars.emplace_back("tools", jinja::Value::none());
    vars.emplace_back("documents", jinja::Value::none());
    vars.emplace_back("add_generation_prompt", jinja::Value::boolean(add_generation_prompt));
    for (const auto& [k, v] : special_tokens_.items()) vars.emplace_back(k, jinja::from_json(v));
    for (const auto& [k, v] : variables.items()) vars.emplace_back(k, jinja::from_json(v));
    return t.compiled->render(std::move(vars));
}

std::string ChatTemplate::bos_token() const {
    return token_string(special_tokens_, "bos_token");
}
std::string ChatTemplate::eos_token() const {
    return token_string(special_tokens_, "eos_token");
}

std::vector<std::string> ChatTemplate::names() const {
    std::vector<std::string> out;
    for (const Named& n : templates_) out.push_back(n.name);
    return out;
}

const std::string& ChatTemplate::source(const std::string& template_name) const {
    return pick(template_name, false).source;
}

}  // namespace anelm
