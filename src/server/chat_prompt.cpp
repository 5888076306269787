#include "server/chat_prompt.h"

namespace anelm::server {

namespace {

using ojson = nlohmann::ordered_json;

ojson call_schema(const ToolSpec& tool) {
    return {{"type", "object"},
            {"properties", {{"name", {{"const", tool.name}}}, {"arguments", tool.parameters}}},
            {"required", {"name", "arguments"}}};
}

}  // namespace

ChatPrompt chat_prompt(const ChatTemplate& chat_template, const CompletionRequest& r) {
    ChatPrompt p;
    const std::string& source = chat_template.source();
    const ToolFormat& format = tool_format_for(source);
    ojson messages = r.messages, variables = r.template_kwargs;
    format.add_tools(messages, variables, r.tools);
    p.text = chat_template.render(messages, true, variables);
    p.tags = reasoning_tags_for(source);
    p.in_reasoning = opens_reasoning(p.tags, p.text);
    if (r.tools.active()) p.format = &format;
    if (!r.tools.forced()) return p;
    // The call comes at once: an open think block is closed first.
    if (p.in_reasoning) p.text += "\n" + p.tags.close + "\n\n";
    p.in_reasoning = false;
    p.tags = {};
    p.text += format.forced_prefix();
    p.format = &forced_call_format();
    if (r.tools.choice == ToolChoice::named) {
        p.call_schema = call_schema(*r.tools.find(r.tools.named));
    } else {
        ojson any = ojson::array();
        for (const ToolSpec& t : r.tools.tools) any.push_back(call_schema(t));
        p.call_schema = {{"anyOf", any}};
    }
    return p;
}

}  // namespace anelm::server
