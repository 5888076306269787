// A model's chat template, rendered byte for byte as Hugging Face transformers'
// apply_chat_template(messages, tokenize=False, ...) renders it: Jinja2's
// immutable sandbox with trim_blocks and lstrip_blocks, tojson as json.dumps,
// raise_exception and strftime_now.
#pragma once

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <vector>

namespace anelm {

namespace jinja {
class Template;
}

class ChatTemplate {
public:
    // Reads a model folder, a .jinja file or a tokenizer_config.json. In a folder,
    // chat_template.jinja (with additional_chat_templates/NAME.jinja) takes
    // precedence over tokenizer_config.json's "chat_template" (a string, or a list
    // of {"name", "template"}), as in transformers; chat_template.json (written by
    // processors) is the last resort. Special tokens (bos_token, eos_token, ...;
    // strings or {"content": ...} objects) come from tokenizer_config.json. A
    // GGUF file gives tokenizer.chat_template, with its BOS and EOS tokens; a
    // llama2.c checkpoint has none. Throws Error naming the file ("MODEL: no chat
    // template; use generate, or --template FILE"), or "TEMPLATE:LINE: message"
    // for syntax errors.
    static ChatTemplate load(const std::string& path);
    // The Jinja file template_file with the special tokens of the model at
    // `path`; load(path) when template_file is empty.
    static ChatTemplate load(const std::string& path, const std::string& template_file);

    // One template from source. `name` is used in error messages; special_tokens
    // is an object of token strings (bos_token, eos_token, ...).
    ChatTemplate(const std::string& source, const std::string& name,
                 const nlohmann::ordered_json& special_tokens = nlohmann::ordered_json::object());

    // The prompt for `messages` (an array of {role, content, ...}; objects keep their
    // key order, so tool schemas print as given — a plain nlohmann::json sorts them). `variables`
    // adds template variables: tools, documents, enable_thinking, date_string ...
    // (tools and documents default to None, as transformers passes them).
    // template_name picks one of several named templates; empty means "tool_use"
    // when tools are given and the model has one, else "default".
    // Throws Error "TEMPLATE:LINE: message" when the template raises.
    std::string render(const nlohmann::ordered_json& messages, bool add_generation_prompt,
                       const nlohmann::ordered_json& variables = nlohmann::ordered_json::object(),
                       const std::string& template_name = "") const;

    // Special token strings ("" when the model has none).
    std::string bos_token() const;
    std::string eos_token() const;
    const nlohmann::ordered_json& special_tokens() const { return special_tokens_; }

    // Names of the templates ("default", "tool_use", ...) in the order found.
    std::vector<std::string> names() const;
    const std::string& source(const std::string& template_name = "default") const;

private:
    struct Named {
        std::string name;
        std::string source;
        std::shared_ptr<const jinja::Template> compiled;
    };

    ChatTemplate() = default;
    void add(const std::string& name, const std::string& source, const std::string& label);
    const Named& pick(const std::string& template_name, bool has_tools) const;

    std::vector<Named> templates_;
    nlohmann::ordered_json special_tokens_ = nlohmann::ordered_json::object();
    std::string path_;
};

}  // namespace anelm
