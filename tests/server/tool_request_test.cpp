// The tool fields of a chat request: each malformed tool, a tool_choice that
// names no tool and a tool result without its call are 400s naming the field.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/completion_request.h"

namespace anelm::server {
namespace {

using ojson = nlohmann::ordered_json;

const std::string user = R"({"role": "user", "content": "hi"})";
const std::string weather =
    R"({"type": "function", "function": {"name": "get_weather", "parameters": )"
    R"({"type": "object", "properties": {"city": {"type": "string"}}}}})";

CompletionRequest chat(const std::string& fields, const std::string& messages = "[" + user + "]") {
    return parse_completion_request(parse_body("{\"messages\": " + messages + ", " + fields + "}"),
                                    true, SamplerParams{});
}

// The param a body is refused for, and the message.
std::pair<std::string, std::string> refused(const std::string& fields,
                                            const std::string& messages = "[" + user + "]") {
    try {
        chat(fields, messages);
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status, 400);
        EXPECT_EQ(e.type, "invalid_request_error");
        return {e.param, e.what()};
    }
    return {"<accepted>", ""};
}

TEST(ToolRequest, ReadsToolsAndChoice) {
    const CompletionRequest r = chat("\"tools\": [" + weather + "]");
    ASSERT_EQ(r.tools.tools.size(), 1u);
    EXPECT_EQ(r.tools.tools[0].name, "get_weather");
    EXPECT_EQ(r.tools.choice, ToolChoice::auto_);
    EXPECT_TRUE(r.tools.parallel);
    const CompletionRequest named =
        chat("\"tools\": [" + weather +
             R"(], "tool_choice": {"type": "function", "function": {"name": "get_weather"}}, )"
             R"("parallel_tool_calls": false)");
    EXPECT_EQ(named.tools.choice, ToolChoice::named);
    EXPECT_EQ(named.tools.named, "get_weather");
    EXPECT_FALSE(named.tools.parallel);
    EXPECT_TRUE(named.tools.forced());
    EXPECT_EQ(chat("\"tools\": [" + weather + "], \"tool_choice\": \"none\"").tools.active(),
              false);
}

TEST(ToolRequest, RefusesMalformedTools) {
    EXPECT_EQ(refused("\"tools\": {}").first, "tools");
    EXPECT_EQ(refused("\"tools\": [1]").first, "tools[0]");
    EXPECT_EQ(refused(R"("tools": [{"type": "code"}])").first, "tools[0].type");
    EXPECT_EQ(refused(R"("tools": [{"type": "function", "function": {"name": ""}}])").first,
              "tools[0].function.name");
    EXPECT_EQ(
        refused(R"("tools": [{"type": "function", "function": {"name": "f", "parameters": 3}}])")
            .first,
        "tools[0].function.parameters");
    EXPECT_EQ(refused(R"("tools": [{"type": "function", "function": {"name": "f", )"
                      R"("parameters": {"type": "string"}}}])")
                  .first,
              "tools[0].function.parameters");
    EXPECT_EQ(refused("\"tools\": [" + weather + ", " + weather + "]").first,
              "tools[1].function.name");
}

TEST(ToolRequest, RefusesAChoiceNamingNoTool) {
    const auto [param, message] =
        refused("\"tools\": [" + weather +
                R"(], "tool_choice": {"type": "function", "function": {"name": "get_time"}})");
    EXPECT_EQ(param, "tool_choice");
    EXPECT_EQ(message, "tool_choice: no tool is named 'get_time'");
    EXPECT_EQ(refused(R"("tool_choice": "required")").first, "tool_choice");
    EXPECT_EQ(refused("\"tools\": [" + weather + R"(], "tool_choice": "always")").first,
              "tool_choice");
}

TEST(ToolRequest, RefusesAToolResultWithoutItsCall) {
    const std::string result = R"({"role": "tool", "tool_call_id": "call_1", "content": "22 C"})";
    const auto [param, message] =
        refused("\"tools\": [" + weather + "]", "[" + user + ", " + result + "]");
    EXPECT_EQ(param, "messages[1]");
    EXPECT_EQ(message,
              "messages[1]: a tool result for 'call_1' answers no tool call made before it");

    const std::string asked =
        R"({"role": "assistant", "content": null, "tool_calls": [{"id": "call_1", "type": "function", )"
        R"("function": {"name": "get_weather", "arguments": "{\"city\": \"Paris\"}"}}]})";
    const CompletionRequest r =
        chat("\"tools\": [" + weather + "]", "[" + user + ", " + asked + ", " + result + "]");
    // The arguments reach the template as an object, as Hugging Face's templates expect.
    EXPECT_EQ(r.messages[1]["tool_calls"][0]["function"]["arguments"], ojson({{"city", "Paris"}}));
    EXPECT_EQ(refused("\"tools\": [" + weather + "]",
                      "[" + user + ", " + asked + ", " + result + ", " + result + "]")
                  .first,
              "<accepted>");
    EXPECT_EQ(refused("\"stream\": false",
                      R"([{"role": "assistant", "content": "", "tool_calls": [{"id": "x", )"
                      R"("type": "function", "function": {"name": "f", "arguments": "[1]"}}]}])")
                  .first,
              "messages[0].tool_calls[0].function.arguments");
}

}  // namespace
}  // namespace anelm::server
