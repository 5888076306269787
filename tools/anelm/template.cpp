// `anelm template MODEL --messages FILE.json [--add-generation-prompt] [--var NAME=JSON]...`:
// prints the prompt a model's chat template makes of a conversation, exactly.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "base/error.h"
#include "chat/chat_template.h"
#include "command.h"

namespace anelm::cli {
namespace {

using ojson = nlohmann::ordered_json;

struct TemplateOptions {
    std::string model;
    std::string messages_path;
    bool add_generation_prompt = false;
    std::vector<std::string> vars;
    std::string template_name;
    std::string template_file;
};

ojson read_json_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail("{}: cannot open file", path);
    std::ostringstream ss;
    ss << in.rdbuf();
    try {
        return ojson::parse(ss.str());
    } catch (const ojson::exception& e) {
        fail("{}: invalid JSON: {}", path, e.what());
    }
}

// NAME=JSON pairs; the value must be JSON (quote strings: date_string='"1 Jan 2025"').
ojson parse_vars(const std::vector<std::string>& vars) {
    ojson out = ojson::object();
    for (const std::string& var : vars) {
        const size_t eq = var.find('=');
        if (eq == std::string::npos || eq == 0) fail("--var {}: expected NAME=JSON", var);
        const std::string name = var.substr(0, eq);
        try {
            out[name] = ojson::parse(var.substr(eq + 1));
        } catch (const ojson::exception&) {
            fail("--var {}: the value is not JSON (write strings quoted: {}='\"text\"')", var,
                 name);
        }
    }
    return out;
}

int run(const TemplateOptions& o) {
    const ChatTemplate chat = ChatTemplate::load(o.model, o.template_file);
    const ojson messages = read_json_file(o.messages_path);
    if (!messages.is_array()) fail("{}: expected a JSON array of messages", o.messages_path);
    const std::string prompt =
        chat.render(messages, o.add_generation_prompt, parse_vars(o.vars), o.template_name);
    std::fwrite(prompt.data(), 1, prompt.size(), stdout);
    std::fflush(stdout);
    return 0;
}

const bool registered = register_command(
    {"template", "render a conversation with the model's chat template, as transformers does",
     [](CLI::App& app) -> std::function<int()> {
         auto o = std::make_shared<TemplateOptions>();
         app.add_option(
                "MODEL", o->model,
                "model folder (tokenizer_config.json, chat_template.jinja) or a .jinja file")
             ->required();
         app.add_option("--messages", o->messages_path,
                        "JSON array of {role, content, tool_calls, ...} messages")
             ->required();
         app.add_flag("--add-generation-prompt", o->add_generation_prompt,
                      "end with the header of the assistant's turn");
         app.add_option("--var", o->vars,
                        "template variable NAME=JSON, e.g. enable_thinking=false, tools=[...]")
             ->allow_extra_args(false);  // one value per --var; a path after it stays MODEL
         app.add_option("--template", o->template_file,
                        "a Jinja chat template file to use instead of the model's, with the "
                        "model's special tokens");
         app.add_option(
             "--template-name", o->template_name,
             "one of several named templates (default: tool_use with tools, else default)");
         return [o] { return run(*o); };
     }});

}  // namespace
}  // namespace anelm::cli
