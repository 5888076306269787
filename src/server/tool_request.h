// The tool fields of a chat request (tools, tool_choice, parallel_tool_calls)
// and the tool turns of its history, read and checked: a malformed tool, a
// tool_choice naming no tool, or a tool result without its call is a 400.
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace anelm::server {

enum class ToolChoice { none, auto_, required, named };

struct ToolSpec {
    std::string name;
    nlohmann::ordered_json parameters;  // a JSON schema object
};

struct ToolRequest {
    std::vector<ToolSpec> tools;
    nlohmann::ordered_json declared;  // the tools as given, for the template; null when none
    ToolChoice choice = ToolChoice::none;
    std::string named;  // the function tool_choice names
    bool parallel = true;

    bool active() const { return choice != ToolChoice::none && !tools.empty(); }
    bool forced() const { return choice == ToolChoice::required || choice == ToolChoice::named; }
    const ToolSpec* find(const std::string& name) const;
};

// Reads tools, tool_choice and parallel_tool_calls from a chat body.
ToolRequest read_tool_request(const nlohmann::ordered_json& body);

// Checks the tool turns of messages and writes each assistant call's arguments
// as an object, as Hugging Face's templates expect them: every role "tool"
// message must answer a call made before it (by tool_call_id when the call has an id).
void read_tool_turns(nlohmann::ordered_json& messages);

}  // namespace anelm::server
