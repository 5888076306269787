// OpenAI's Responses bodies translated into chat requests: input as text or
// items (messages, function_call, function_call_output, reasoning),
// instructions, flat function tools, tool_choice, text.format and reasoning;
// the 400s naming the Responses field; the reply as output items and the
// stream's events in order with their sequence numbers.
#include <gtest/gtest.h>

#include "server/responses_api.h"
#include "server/responses_stream.h"

namespace anelm::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

const std::string weather =
    R"({"type": "function", "name": "get_weather", "description": "The weather",
        "strict": true, "parameters": {"type": "object",
                                       "properties": {"city": {"type": "string"}}}})";

CompletionRequest read(const std::string& body) {
    return parse_responses_request(parse_body(body), SamplerParams{});
}

// The param a body is refused for, and the message.
std::pair<std::string, std::string> refused(const std::string& body) {
    try {
        read(body);
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status, 400);
        return {e.param, e.what()};
    }
    return {"<accepted>", ""};
}

TEST(ResponsesApi, TextInputAndSettings) {
    const CompletionRequest r = read(R"({"input": "Hello", "instructions": "Be brief.",
        "max_output_tokens": 9, "temperature": 0.5, "top_p": 0.8, "stream": true, "store": true,
        "reasoning": {"effort": "low"}, "metadata": {"a": "b"}})");
    EXPECT_TRUE(r.chat);
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[0], ojson::parse(R"({"role": "system", "content": "Be brief."})"));
    EXPECT_EQ(r.messages[1], ojson::parse(R"({"role": "user", "content": "Hello"})"));
    EXPECT_EQ(r.max_tokens, 9);
    EXPECT_FLOAT_EQ(r.sampler.temp, 0.5f);
    EXPECT_FLOAT_EQ(r.sampler.top_p, 0.8f);
    EXPECT_TRUE(r.stream);
    EXPECT_EQ(r.template_kwargs["reasoning_effort"], "low");
    EXPECT_FALSE(r.tools.active());
}

TEST(ResponsesApi, InputItems) {
    const CompletionRequest r =
        read("{\"instructions\": \"Be brief.\", \"tools\": [" + weather + R"(], "input": [
        {"role": "developer", "content": "Use tools."},
        {"type": "message", "role": "user",
         "content": [{"type": "input_text", "text": "Weather in "},
                     {"type": "input_text", "text": "Oslo?"}]},
        {"type": "reasoning", "id": "rs_1", "summary": [],
         "content": [{"type": "reasoning_text", "text": "hm"}]},
        {"type": "message", "role": "assistant",
         "content": [{"type": "output_text", "text": "Let me look."}]},
        {"type": "function_call", "call_id": "call_1", "name": "get_weather",
         "arguments": "{\"city\": \"Oslo\"}"},
        {"type": "function_call", "call_id": "call_2", "name": "get_weather",
         "arguments": "{\"city\": \"Lima\"}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "12 C"},
        {"type": "function_call_output", "call_id": "call_2",
         "output": [{"type": "input_text", "text": "20 C"}]}]})");
    ASSERT_EQ(r.messages.size(), 5u);
    // The developer message joins the instructions: one system turn.
    EXPECT_EQ(r.messages[0],
              ojson::parse(R"({"role": "system", "content": "Be brief.\n\nUse tools."})"));
    EXPECT_EQ(r.messages[1]["content"], "Weather in Oslo?");
    const ojson& assistant = r.messages[2];
    EXPECT_EQ(assistant["role"], "assistant");
    EXPECT_EQ(assistant["content"], "Let me look.");
    ASSERT_EQ(assistant["tool_calls"].size(), 2u);
    EXPECT_EQ(assistant["tool_calls"][0]["id"], "call_1");
    EXPECT_EQ(assistant["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(assistant["tool_calls"][1]["function"]["arguments"],
              ojson::parse(R"({"city": "Lima"})"));
    EXPECT_EQ(r.messages[3],
              ojson::parse(R"({"role": "tool", "tool_call_id": "call_1", "content": "12 C"})"));
    EXPECT_EQ(r.messages[4]["content"], "20 C");
}

TEST(ResponsesApi, ToolsAndChoice) {
    const CompletionRequest r = read("{\"input\": \"hi\", \"tools\": [" + weather + "]}");
    ASSERT_EQ(r.tools.tools.size(), 1u);
    EXPECT_EQ(r.tools.tools[0].name, "get_weather");
    EXPECT_EQ(r.tools.tools[0].parameters["properties"]["city"]["type"], "string");
    EXPECT_EQ(r.tools.choice, ToolChoice::auto_);
    EXPECT_EQ(r.tools.declared[0]["function"]["description"], "The weather");
    const CompletionRequest named =
        read("{\"input\": \"hi\", \"tools\": [" + weather +
             R"(], "tool_choice": {"type": "function", "name": "get_weather"},
                "parallel_tool_calls": false})");
    EXPECT_EQ(named.tools.choice, ToolChoice::named);
    EXPECT_EQ(named.tools.named, "get_weather");
    EXPECT_FALSE(named.tools.parallel);
    EXPECT_EQ(
        read("{\"input\": \"hi\", \"tools\": [" + weather + R"(], "tool_choice": "required"})")
            .tools.choice,
        ToolChoice::required);
    EXPECT_FALSE(read("{\"input\": \"hi\", \"tools\": [" + weather + R"(], "tool_choice": "none"})")
                     .tools.active());
}

TEST(ResponsesApi, TextFormat) {
    const CompletionRequest r = read(R"({"input": "hi", "text": {"format": {"type": "json_schema",
        "name": "answer", "strict": true,
        "schema": {"type": "object", "properties": {"n": {"type": "integer"}}}}}})");
    EXPECT_EQ(r.format, OutputFormat::json_schema);
    EXPECT_EQ(r.schema["properties"]["n"]["type"], "integer");
    EXPECT_EQ(r.schema_param, "text.format.schema");
    EXPECT_EQ(read(R"({"input": "hi", "text": {"format": {"type": "json_object"}}})").format,
              OutputFormat::json_object);
    EXPECT_EQ(read(R"({"input": "hi", "text": {"format": {"type": "text"}}})").format,
              OutputFormat::text);
}

TEST(ResponsesApi, Refusals) {
    EXPECT_EQ(refused(R"({"input": "hi", "previous_response_id": "resp_1"})").first,
              "previous_response_id");
    EXPECT_NE(
        refused(R"({"input": "hi", "previous_response_id": "resp_1"})").second.find("stateless"),
        std::string::npos);
    EXPECT_EQ(refused(R"({"instructions": "x"})").first, "input");
    EXPECT_EQ(refused(R"({"input": []})").first, "input");
    EXPECT_EQ(refused(R"({"input": "hi", "store": "yes"})").first, "store");
    // Tools: not function tools, no name, parameters that are not an object schema.
    EXPECT_EQ(refused(R"({"input": "hi", "tools": [{"type": "web_search"}]})").first,
              "tools[0].type");
    EXPECT_EQ(refused(R"({"input": "hi", "tools": [{"type": "function"}]})").first,
              "tools[0].name");
    EXPECT_EQ(
        refused(R"({"input": "hi", "tools": [{"type": "function", "name": "f", "parameters": 3}]})")
            .first,
        "tools[0].parameters");
    EXPECT_EQ(refused(R"({"input": "hi", "tools": [{"type": "function", "name": "f",
                          "parameters": {"type": "array"}}]})")
                  .first,
              "tools[0].parameters");
    EXPECT_EQ(refused(R"({"input": "hi", "tools": "f"})").first, "tools");
    // tool_choice naming no tool, or of another kind.
    const auto unknown = refused("{\"input\": \"hi\", \"tools\": [" + weather +
                                 R"(], "tool_choice": {"type": "function", "name": "nope"}})");
    EXPECT_EQ(unknown.first, "tool_choice");
    EXPECT_NE(unknown.second.find("nope"), std::string::npos);
    EXPECT_EQ(refused("{\"input\": \"hi\", \"tools\": [" + weather +
                      R"(], "tool_choice": {"type": "file_search"}})")
                  .first,
              "tool_choice.type");
    EXPECT_EQ(refused(R"({"input": "hi", "tool_choice": "sometimes"})").first, "tool_choice");
    // A function_call_output without its function_call.
    const auto orphan = refused(R"({"input": [{"role": "user", "content": "hi"},
        {"type": "function_call_output", "call_id": "call_9", "output": "x"}]})");
    EXPECT_EQ(orphan.first, "input[1].call_id");
    EXPECT_NE(orphan.second.find("call_9"), std::string::npos);
    // Items and parts the server cannot read.
    EXPECT_EQ(refused(R"({"input": [{"type": "item_reference", "id": "msg_1"}]})").first,
              "input[0].type");
    EXPECT_EQ(
        refused(R"({"input": [{"role": "user", "content": [{"type": "input_image"}]}]})").first,
        "input[0].content[0].type");
    EXPECT_EQ(refused(R"({"input": [{"role": "tool", "content": "x"}]})").first, "input[0].role");
    EXPECT_EQ(refused(R"({"input": [{"type": "function_call", "call_id": "c", "name": "f",
                          "arguments": "[1]"}]})")
                  .first,
              "input[0].arguments");
    EXPECT_EQ(refused(R"({"input": "hi", "text": {"format": {"type": "yaml"}}})").first,
              "text.format.type");
    EXPECT_EQ(refused(R"({"input": "hi", "reasoning": {"effort": 3}})").first, "reasoning.effort");
}

TEST(ResponsesApi, ReplyAsItems) {
    ReplyParts parts;
    parts.reasoning = "hm";
    parts.content = "Hi";
    parts.calls.push_back({"get_weather", R"({"city": "Oslo"})", true});
    const json items = output_items(parts, {"call_a"}, "completed");
    ASSERT_EQ(items.size(), 3u);
    EXPECT_EQ(items[0]["type"], "reasoning");
    EXPECT_EQ(items[0]["content"][0], json::parse(R"({"type": "reasoning_text", "text": "hm"})"));
    EXPECT_EQ(items[1]["type"], "message");
    EXPECT_EQ(items[1]["role"], "assistant");
    EXPECT_EQ(items[1]["content"][0]["type"], "output_text");
    EXPECT_EQ(items[1]["content"][0]["text"], "Hi");
    EXPECT_EQ(items[2]["type"], "function_call");
    EXPECT_EQ(items[2]["call_id"], "call_a");
    EXPECT_EQ(items[2]["arguments"], R"({"city": "Oslo"})");
    EXPECT_EQ(items[2]["id"].get<std::string>().rfind("fc_", 0), 0u);

    const ResponseMeta meta = new_response_meta(
        parse_body(R"({"input": "hi", "instructions": "Be brief.", "max_output_tokens": 4})"),
        "tiny");
    EXPECT_EQ(meta.id.rfind("resp_", 0), 0u);
    const JobUsage usage{5, 0, 4};
    const json r = response_json(meta, response_status("length"), items, &usage);
    EXPECT_EQ(r["object"], "response");
    EXPECT_EQ(r["status"], "incomplete");
    EXPECT_EQ(r["incomplete_details"]["reason"], "max_output_tokens");
    EXPECT_EQ(r["instructions"], "Be brief.");
    EXPECT_EQ(r["model"], "tiny");
    EXPECT_EQ(r["usage"]["input_tokens"], 5);
    EXPECT_EQ(r["usage"]["output_tokens"], 4);
    EXPECT_EQ(r["usage"]["total_tokens"], 9);
    const json done = response_json(meta, response_status("stop"), json::array(), &usage);
    EXPECT_EQ(done["status"], "completed");
    EXPECT_TRUE(done["incomplete_details"].is_null());
}

// The events of a stream's text, each type from its event: line and its data.
std::vector<json> events(const std::string& text) {
    std::vector<json> out;
    size_t pos = 0;
    while ((pos = text.find("event: ", pos)) != std::string::npos) {
        const size_t eol = text.find('\n', pos);
        const std::string type = text.substr(pos + 7, eol - pos - 7);
        const size_t data = eol + 1 + 6;  // "data: "
        const size_t end = text.find("\n\n", data);
        json e = json::parse(text.substr(data, end - data));
        EXPECT_EQ(e["type"], type);
        out.push_back(std::move(e));
        pos = end;
    }
    return out;
}

TEST(ResponsesApi, StreamEvents) {
    ResponseStream s(new_response_meta(parse_body(R"({"input": "hi"})"), "tiny"));
    std::string text = s.start();
    ReplyDelta thought;
    thought.reasoning = "hm";
    text += s.add(thought, {});
    ReplyDelta words;
    words.content = "H";
    text += s.add(words, {});
    words.content = "i";
    text += s.add(words, {});
    ReplyDelta call;
    call.calls.push_back({0, true, "get_weather", "{\"ci"});
    text += s.add(call, {"call_a"});
    call.calls = {{0, false, "", "ty\": \"Oslo\"}"}};
    text += s.add(call, {"call_a"});
    text += s.finish("stop", JobUsage{5, 0, 7});
    const std::vector<json> e = events(text);
    std::vector<std::string> types;
    for (const json& j : e) types.push_back(j["type"]);
    ASSERT_EQ(types, (std::vector<std::string>{"response.created",
                                               "response.in_progress",
                                               "response.output_item.added",
                                               "response.content_part.added",
                                               "response.reasoning_text.delta",
                                               "response.reasoning_text.done",
                                               "response.content_part.done",
                                               "response.output_item.done",
                                               "response.output_item.added",
                                               "response.content_part.added",
                                               "response.output_text.delta",
                                               "response.output_text.delta",
                                               "response.output_text.done",
                                               "response.content_part.done",
                                               "response.output_item.done",
                                               "response.output_item.added",
                                               "response.function_call_arguments.delta",
                                               "response.function_call_arguments.delta",
                                               "response.function_call_arguments.done",
                                               "response.output_item.done",
                                               "response.completed"}));
    for (size_t i = 0; i < e.size(); ++i) EXPECT_EQ(e[i]["sequence_number"], i);
    EXPECT_EQ(e[0]["response"]["status"], "in_progress");
    EXPECT_EQ(e[0]["response"]["output"], json::array());
    EXPECT_EQ(e[8]["output_index"], 1);
    EXPECT_EQ(e[8]["item"]["type"], "message");
    EXPECT_EQ(e[10]["item_id"], e[8]["item"]["id"]);
    EXPECT_EQ(e[10]["delta"], "H");
    EXPECT_EQ(e[12]["text"], "Hi");
    EXPECT_EQ(e[14]["item"]["content"][0]["text"], "Hi");
    EXPECT_EQ(e[15]["item"]["call_id"], "call_a");
    EXPECT_EQ(e[15]["item"]["name"], "get_weather");
    EXPECT_EQ(e[15]["output_index"], 2);
    EXPECT_EQ(e[18]["arguments"], R"({"city": "Oslo"})");
    const json& response = e.back()["response"];
    EXPECT_EQ(response["status"], "completed");
    ASSERT_EQ(response["output"].size(), 3u);
    EXPECT_EQ(response["output"][0]["content"][0]["text"], "hm");
    EXPECT_EQ(response["output"][1], e[14]["item"]);
    EXPECT_EQ(response["output"][2]["arguments"], R"({"city": "Oslo"})");
    EXPECT_EQ(response["output"][2]["status"], "completed");
    EXPECT_EQ(response["usage"]["output_tokens"], 7);

    ResponseStream cut(new_response_meta(parse_body(R"({"input": "hi"})"), "tiny"));
    std::string cut_text = cut.start();
    cut_text += cut.add(words, {});
    cut_text += cut.finish("length", JobUsage{});
    const std::vector<json> c = events(cut_text);
    ASSERT_EQ(c.size(), 9u);
    EXPECT_EQ(c.back()["type"], "response.incomplete");
    EXPECT_EQ(c.back()["response"]["output"][0]["status"], "incomplete");
}

}  // namespace
}  // namespace anelm::server
