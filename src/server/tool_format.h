// How a model family writes tool calls, taken from its chat template: the text
// that begins its calls, a scanner that reads them back (also while they are
// still being written), and how the tools reach its prompt. One format per
// family; tool_format_for picks one from the template's text.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "server/tool_call.h"
#include "server/tool_request.h"

namespace anelm::server {

// The calls read from text that begins with a format's marker.
struct CallScan {
    std::vector<ToolCall> calls;  // the last one may be unfinished
    size_t end = 0;               // where the text after the finished calls begins
    bool bad = false;             // the text at `end` is no call of this format
};

// Reads one call at pos.
using ReadCall = std::function<Scan(std::string_view text, size_t& pos, ToolCall& call)>;

// Calls one after another, space between them.
CallScan scan_calls(std::string_view text, const ReadCall& read_call);

// A list of calls: the literals of open (space between them), calls separated
// by commas, the literals of close.
CallScan scan_list(std::string_view text, const std::vector<std::string_view>& open,
                   const std::vector<std::string_view>& close, const ReadCall& read_call);

class ToolFormat {
public:
    virtual ~ToolFormat() = default;
    virtual std::string_view name() const = 0;
    // The texts that begin the model's calls.
    virtual std::vector<std::string_view> markers() const = 0;
    // Reads calls from text beginning with a marker.
    virtual CallScan scan(std::string_view text, const ToolRequest& tools) const = 0;
    // Puts the tools into the template's input: by default the variable
    // `tools`, as Hugging Face's apply_chat_template passes them.
    virtual void add_tools(nlohmann::ordered_json& messages, nlohmann::ordered_json& variables,
                           const ToolRequest& tools) const;
    // A forced call is generated as the JSON {"name": ..., "arguments": ...}
    // after this text, which begins the family's calls where its calls are JSON.
    virtual std::string forced_prefix() const { return ""; }
};

// The format of the template's family; a template that says nothing of tools
// gets the JSON convention (tools in the system message, replies as
// {"tool_calls": [{"name": ..., "arguments": ...}]}).
const ToolFormat& tool_format_for(std::string_view template_source);

// Reads the one JSON call a forced request generates.
const ToolFormat& forced_call_format();

// The families' formats, for tests and for the choice above.
const ToolFormat& hermes_tool_format();      // Qwen2.5, Qwen3: <tool_call>{json}</tool_call>
const ToolFormat& qwen_xml_tool_format();    // Qwen3.5: <tool_call><function=...>
const ToolFormat& llama3_tool_format();      // Llama 3.x: {"name", "parameters"}, <|python_tag|>
const ToolFormat& json_convention_format();  // Gemma 3 and templates without tools
const ToolFormat& gemma4_tool_format();      // Gemma 4: <|tool_call>call:NAME{...}<tool_call|>
const ToolFormat& lfm2_tool_format();        // LFM2: <|tool_call_start|>[f(a=1)]<|tool_call_end|>

}  // namespace anelm::server
