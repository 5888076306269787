// Anthropic's Messages bodies translated into chat requests: system, text,
// tool_use and tool_result blocks, tools and tool_choice; the 400s naming the
// Messages field; stop reasons, the reply as blocks and the stream's events.
#include <gtest/gtest.h>

#include "server/anthropic_messages.h"
#include "server/anthropic_stream.h"

namespace anelm::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

const std::string weather =
    R"({"name": "get_weather", "description": "The weather", "input_schema": )"
    R"({"type": "object", "properties": {"city": {"type": "string"}}}})";

// A body with max_tokens, these fields and these messages.
ojson body(const std::string& fields,
           const std::string& messages = R"([{"role": "user", "content": "hi"}])") {
    return parse_body("{\"max_tokens\": 64, \"messages\": " + messages +
                      (fields.empty() ? "" : ", " + fields) + "}");
}

CompletionRequest read(const std::string& fields,
                       const std::string& messages = R"([{"role": "user", "content": "hi"}])") {
    return parse_messages_request(body(fields, messages), SamplerParams{});
}

// The param a body is refused for, and the message.
std::pair<std::string, std::string> refused(const ojson& b) {
    try {
        parse_messages_request(b, SamplerParams{});
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status, 400);
        return {e.param, e.what()};
    }
    return {"<accepted>", ""};
}

TEST(AnthropicMessages, SystemAndSampling) {
    const CompletionRequest r =
        read(R"("system": [{"type": "text", "text": "Be "}, {"type": "text", "text": "brief."}],
                "stop_sequences": ["END"], "temperature": 0.5, "top_k": 7, "stream": true)");
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[0]["role"], "system");
    EXPECT_EQ(r.messages[0]["content"], "Be brief.");
    EXPECT_EQ(r.messages[1]["content"], "hi");
    EXPECT_EQ(r.max_tokens, 64);
    EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
    EXPECT_FLOAT_EQ(r.sampler.temp, 0.5f);
    EXPECT_EQ(r.sampler.top_k, 7);
    EXPECT_TRUE(r.stream);
    EXPECT_EQ(read(R"("system": "Be brief.")").messages[0]["content"], "Be brief.");
}

TEST(AnthropicMessages, ToolsAndChoice) {
    const CompletionRequest r = read("\"tools\": [" + weather + "]");
    ASSERT_EQ(r.tools.tools.size(), 1u);
    EXPECT_EQ(r.tools.tools[0].name, "get_weather");
    EXPECT_EQ(r.tools.tools[0].parameters["properties"]["city"]["type"], "string");
    EXPECT_EQ(r.tools.choice, ToolChoice::auto_);
    const CompletionRequest named =
        read("\"tools\": [" + weather +
             R"(], "tool_choice": {"type": "tool", "name": "get_weather",
                                  "disable_parallel_tool_use": true})");
    EXPECT_EQ(named.tools.choice, ToolChoice::named);
    EXPECT_EQ(named.tools.named, "get_weather");
    EXPECT_FALSE(named.tools.parallel);
    EXPECT_EQ(read("\"tools\": [" + weather + R"(], "tool_choice": {"type": "any"})").tools.choice,
              ToolChoice::required);
    EXPECT_FALSE(
        read("\"tools\": [" + weather + R"(], "tool_choice": {"type": "none"})").tools.active());
}

TEST(AnthropicMessages, ToolTurns) {
    const CompletionRequest r = read("\"tools\": [" + weather + "]", R"([
        {"role": "user", "content": [{"type": "text", "text": "Weather in Oslo?"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "Ask the tool.", "signature": ""},
            {"type": "text", "text": "Checking."},
            {"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Oslo"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1",
             "content": [{"type": "text", "text": "-3 C"}]},
            {"type": "text", "text": "And now?"}]}])");
    ASSERT_EQ(r.messages.size(), 4u);
    const ojson& assistant = r.messages[1];
    EXPECT_EQ(assistant["role"], "assistant");
    EXPECT_EQ(assistant["content"], "Checking.");
    EXPECT_EQ(assistant["reasoning_content"], "Ask the tool.");
    EXPECT_EQ(assistant["tool_calls"][0]["id"], "toolu_1");
    EXPECT_EQ(assistant["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(assistant["tool_calls"][0]["function"]["arguments"]["city"], "Oslo");
    EXPECT_EQ(r.messages[2]["role"], "tool");
    EXPECT_EQ(r.messages[2]["tool_call_id"], "toolu_1");
    EXPECT_EQ(r.messages[2]["content"], "-3 C");
    EXPECT_EQ(r.messages[3]["role"], "user");
    EXPECT_EQ(r.messages[3]["content"], "And now?");
}

TEST(AnthropicMessages, Refusals) {
    EXPECT_EQ(refused(parse_body(R"({"messages": [{"role": "user", "content": "hi"}]})")).first,
              "max_tokens");
    EXPECT_EQ(refused(body(R"("tools": [{"name": "f"}])")).first, "tools[0].input_schema");
    EXPECT_EQ(refused(body(R"("tools": [{"name": "f", "input_schema": {"type": "array"}}])")).first,
              "tools[0].input_schema");
    EXPECT_EQ(refused(body(R"("tools": [{"name": "", "input_schema": {}}])")).first,
              "tools[0].name");
    EXPECT_EQ(refused(body(R"("tools": [{"type": "bash_20250124", "name": "bash"}])")).first,
              "tools[0].type");
    const auto unknown = refused(
        body("\"tools\": [" + weather + R"(], "tool_choice": {"type": "tool", "name": "f"})"));
    EXPECT_EQ(unknown.first, "tool_choice");
    EXPECT_NE(unknown.second.find("'f'"), std::string::npos);
    EXPECT_EQ(
        refused(body("\"tools\": [" + weather + R"(], "tool_choice": {"type": "some"})")).first,
        "tool_choice.type");
    EXPECT_EQ(refused(body(R"("tool_choice": {"type": "any"})")).first, "tool_choice");
    const auto orphan = refused(body("", R"([{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "toolu_9", "content": "1"}]}])"));
    EXPECT_EQ(orphan.first, "messages[0].content[0].tool_use_id");
    EXPECT_NE(orphan.second.find("toolu_9"), std::string::npos);
    EXPECT_EQ(refused(body("", R"([{"role": "system", "content": "hi"}])")).first,
              "messages[0].role");
    EXPECT_EQ(refused(body("", R"([{"role": "user", "content": [{"type": "image"}]}])")).first,
              "messages[0].content[0].type");
}

TEST(AnthropicMessages, StopReasons) {
    ReplyParts text, call;
    call.calls.push_back({"get_weather", "{}", true});
    EXPECT_EQ(stop_reason("stop", "", text), "end_turn");
    EXPECT_EQ(stop_reason("stop", "END", text), "stop_sequence");
    EXPECT_EQ(stop_reason("length", "", text), "max_tokens");
    EXPECT_EQ(stop_reason("stop", "", call), "tool_use");
}

TEST(AnthropicMessages, ReplyAsBlocks) {
    ReplyParts parts;
    parts.reasoning = "hmm";
    parts.content = "Sure.";
    parts.calls.push_back({"get_weather", R"({"city": "Oslo"})", true});
    parts.calls.push_back({"get_weather", R"({"city": "Li)", false});
    const json m = message_json("msg_1", "tiny", parts, {"toolu_a", "toolu_b"}, "tool_use", "",
                                JobUsage{5, 0, 9});
    EXPECT_EQ(m["type"], "message");
    EXPECT_EQ(m["stop_reason"], "tool_use");
    EXPECT_TRUE(m["stop_sequence"].is_null());
    EXPECT_EQ(m["usage"], json::parse(R"({"input_tokens": 5, "output_tokens": 9})"));
    ASSERT_EQ(m["content"].size(), 4u);
    EXPECT_EQ(m["content"][0]["thinking"], "hmm");
    EXPECT_EQ(m["content"][1]["text"], "Sure.");
    EXPECT_EQ(m["content"][2]["id"], "toolu_a");
    EXPECT_EQ(m["content"][2]["input"]["city"], "Oslo");
    EXPECT_EQ(m["content"][3]["input"], json::object());  // cut short
}

TEST(AnthropicMessages, ErrorShape) {
    EXPECT_EQ(messages_error_body(ApiError(400, "invalid_request_error", "", "tools", "bad")),
              json::parse(R"({"type": "error",
                              "error": {"type": "invalid_request_error", "message": "bad"}})"));
    EXPECT_EQ(
        messages_error_body(ApiError(401, "invalid_request_error", "", "", "key"))["error"]["type"],
        "authentication_error");
    EXPECT_EQ(
        messages_error_body(ApiError(404, "invalid_request_error", "", "", "x"))["error"]["type"],
        "not_found_error");
}

// The data of each event, checked against its event: line.
std::vector<json> events(const std::string& text) {
    std::vector<json> out;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t end = text.find("\n\n", pos);
        const std::string frame = text.substr(pos, end - pos);
        const size_t data = frame.find("\ndata: ");
        const json j = json::parse(frame.substr(data + 7));
        EXPECT_EQ(frame.substr(7, data - 7), j["type"].get<std::string>());
        out.push_back(j);
        pos = end + 2;
    }
    return out;
}

TEST(AnthropicMessages, StreamEvents) {
    MessageStream s("msg_1", "tiny");
    std::string text = s.start(JobUsage{5, 0, 0});
    ReplyDelta thought;
    thought.reasoning = "hm";
    text += s.add(thought, {});
    ReplyDelta words;
    words.content = "Hi";
    text += s.add(words, {});
    text += s.add(words, {});
    ReplyDelta call;
    call.calls.push_back({0, true, "get_weather", "{\"ci"});
    text += s.add(call, {"toolu_a"});
    call.calls = {{0, false, "", "ty\": \"Oslo\"}"}};
    text += s.add(call, {"toolu_a"});
    text += s.finish("tool_use", "", JobUsage{5, 0, 7});
    const std::vector<json> e = events(text);
    std::vector<std::string> types;
    for (const json& j : e) types.push_back(j["type"]);
    EXPECT_EQ(types, (std::vector<std::string>{
                         "message_start", "content_block_start", "content_block_delta",
                         "content_block_stop", "content_block_start", "content_block_delta",
                         "content_block_delta", "content_block_stop", "content_block_start",
                         "content_block_delta", "content_block_delta", "content_block_stop",
                         "message_delta", "message_stop"}));
    EXPECT_EQ(e[0]["message"]["usage"]["input_tokens"], 5);
    EXPECT_EQ(e[2]["delta"]["type"], "thinking_delta");
    EXPECT_EQ(e[4]["index"], 1);
    EXPECT_EQ(e[5]["delta"], json::parse(R"({"type": "text_delta", "text": "Hi"})"));
    EXPECT_EQ(e[8]["content_block"]["id"], "toolu_a");
    EXPECT_EQ(e[8]["content_block"]["name"], "get_weather");
    EXPECT_EQ(e[9]["delta"]["type"], "input_json_delta");
    EXPECT_EQ(json::parse(e[9]["delta"]["partial_json"].get<std::string>() +
                          e[10]["delta"]["partial_json"].get<std::string>()),
              json::parse(R"({"city": "Oslo"})"));
    EXPECT_EQ(e[11]["index"], 2);
    EXPECT_EQ(e[12]["delta"]["stop_reason"], "tool_use");
    EXPECT_EQ(e[12]["usage"]["output_tokens"], 7);
}

}  // namespace
}  // namespace anelm::server
