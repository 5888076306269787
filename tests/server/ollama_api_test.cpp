// Ollama's /api/chat and /api/generate bodies translated into chat and
// completions requests: options, format, think, history with calls and tool
// results, the model check; the 400s and 404s; and the replies' lines.
#include <gtest/gtest.h>

#include "server/completion_request.h"
#include "server/ollama_api.h"
#include "server/ollama_stream.h"

namespace anelm::server {
namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

CompletionRequest chat(const std::string& fields,
                       const std::string& messages = R"([{"role": "user", "content": "hi"}])") {
    const OllamaRequest o = ollama_chat_request(
        parse_body("{\"messages\": " + messages + (fields.empty() ? "" : ", " + fields) + "}"));
    EXPECT_TRUE(o.chat);
    return parse_completion_request(o.body, o.chat, SamplerParams{});
}

// The status, param and message a body is refused with.
struct Refusal {
    int status = 0;
    std::string param, message;
};

Refusal refused(const std::function<void()>& read) {
    try {
        read();
    } catch (const ApiError& e) {
        return {e.status, e.param, e.what()};
    }
    return {0, "<accepted>", ""};
}

Refusal chat_refused(const std::string& body) {
    return refused([&] {
        const OllamaRequest o = ollama_chat_request(parse_body(body));
        parse_completion_request(o.body, o.chat, SamplerParams{});
    });
}

TEST(OllamaApi, ChatStreamsByDefaultAndReadsOptions) {
    EXPECT_TRUE(chat("").stream);
    EXPECT_FALSE(chat(R"("stream": false)").stream);
    const CompletionRequest r = chat(
        R"("options": {"num_predict": 7, "temperature": 0.25, "top_p": 0.5, "top_k": 3,
                       "seed": 42, "stop": ["END"], "num_ctx": 4096, "num_thread": 2},
           "keep_alive": "5m")");
    EXPECT_EQ(r.max_tokens, 7);
    EXPECT_FLOAT_EQ(r.sampler.temp, 0.25f);
    EXPECT_FLOAT_EQ(r.sampler.top_p, 0.5f);
    EXPECT_EQ(r.sampler.top_k, 3);
    EXPECT_TRUE(r.seed_given);
    EXPECT_EQ(r.sampler.seed, 42u);
    EXPECT_EQ(r.stop, std::vector<std::string>{"END"});
    // -1 and -2: until the context is full.
    EXPECT_EQ(chat(R"("options": {"num_predict": -1})").max_tokens, -1);
    EXPECT_EQ(chat(R"("options": {"num_predict": -2})").max_tokens, -1);
}

TEST(OllamaApi, FormatAndThink) {
    EXPECT_EQ(chat("").format, OutputFormat::text);
    EXPECT_EQ(chat(R"("format": "json")").format, OutputFormat::json_object);
    const CompletionRequest r = chat(R"("format": {"type": "object", "properties": {}})");
    EXPECT_EQ(r.format, OutputFormat::json_schema);
    EXPECT_EQ(r.schema["type"], "object");
    EXPECT_EQ(chat(R"("think": false)").template_kwargs["enable_thinking"], false);
    const CompletionRequest high = chat(R"("think": "high")");
    EXPECT_EQ(high.template_kwargs["enable_thinking"], true);
    EXPECT_EQ(high.template_kwargs["reasoning_effort"], "high");
}

TEST(OllamaApi, HistoryWithCallsAndToolResults) {
    const CompletionRequest r = chat(
        R"("tools": [{"type": "function", "function": {"name": "get_weather",
              "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}}])",
        R"([{"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Weather?", "images": ["aGk="]},
            {"role": "assistant", "content": "", "thinking": "Look it up.",
             "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Oslo"}}}]},
            {"role": "tool", "content": "3 C", "tool_name": "get_weather"}])");
    ASSERT_EQ(r.messages.size(), 4u);
    EXPECT_EQ(r.messages[1]["content"], "Weather?");
    EXPECT_FALSE(r.messages[1].contains("images"));
    const ojson& assistant = r.messages[2];
    EXPECT_EQ(assistant["reasoning_content"], "Look it up.");
    EXPECT_EQ(assistant["tool_calls"][0]["type"], "function");
    EXPECT_EQ(assistant["tool_calls"][0]["function"]["name"], "get_weather");
    EXPECT_EQ(assistant["tool_calls"][0]["function"]["arguments"]["city"], "Oslo");
    EXPECT_EQ(r.messages[3]["role"], "tool");
    ASSERT_EQ(r.tools.tools.size(), 1u);
    EXPECT_EQ(r.tools.choice, ToolChoice::auto_);
}

TEST(OllamaApi, ChatRefusals) {
    const auto tool_alone = chat_refused(R"({"messages": [{"role": "tool", "content": "3 C"}]})");
    EXPECT_EQ(tool_alone.status, 400);
    EXPECT_EQ(tool_alone.param, "messages[0]");
    EXPECT_NE(tool_alone.message.find("answers no tool call"), std::string::npos);
    EXPECT_EQ(chat_refused(R"({"messages": "hi"})").param, "messages");
    EXPECT_EQ(chat_refused(R"({"messages": [{"role": "user", "content": 3}]})").param,
              "messages[0].content");
    EXPECT_EQ(chat_refused(R"({"messages": [{"role": "user", "content": "hi"}],
                               "format": "xml"})")
                  .param,
              "format");
    EXPECT_EQ(chat_refused(R"({"messages": [{"role": "user", "content": "hi"}],
                               "options": {"num_predict": 0}})")
                  .param,
              "options.num_predict");
    EXPECT_EQ(
        chat_refused(R"({"messages": [{"role": "user", "content": "hi"}], "options": 3})").param,
        "options");
    EXPECT_EQ(
        chat_refused(R"({"messages": [{"role": "user", "content": "hi"}], "think": "lots"})").param,
        "think");
    EXPECT_EQ(chat_refused(R"({"messages": [{"role": "user", "content": "hi"}],
                               "options": {"temperature": 9}})")
                  .param,
              "temperature");
    EXPECT_EQ(chat_refused(R"({"messages": [{"role": "user", "content": "hi"}],
                               "tools": [{"type": "function", "function": {"name": "f",
                                          "parameters": {"type": "string"}}}]})")
                  .status,
              400);
    EXPECT_EQ(chat_refused(R"({"messages": [{"role": "user", "content": "hi"}],
                               "format": {"type": "string", "pattern": "a+"}})")
                  .status,
              0);  // the grammar, not the translation, judges a schema's keywords
}

TEST(OllamaApi, ModelNamedAsServed) {
    EXPECT_EQ(
        refused([] { check_ollama_model(parse_body(R"({"model": "tiny"})"), "tiny"); }).status, 0);
    EXPECT_EQ(refused([] {
                  check_ollama_model(parse_body(R"({"model": "tiny:latest"})"), "tiny");
              }).status,
              0);
    const Refusal other =
        refused([] { check_ollama_model(parse_body(R"({"model": "llama3.2"})"), "tiny"); });
    EXPECT_EQ(other.status, 404);
    EXPECT_NE(other.message.find("'llama3.2' not found"), std::string::npos);
    EXPECT_EQ(refused([] { check_ollama_model(parse_body("{}"), "tiny"); }).status, 400);
}

TEST(OllamaApi, GenerateThroughTheTemplateOrRaw) {
    const ojson body = parse_body(R"({"prompt": "Why?", "system": "Be brief.",
                                      "template": "ignored", "context": [1, 2]})");
    const OllamaRequest templated = ollama_generate_request(body, true);
    ASSERT_TRUE(templated.chat);
    EXPECT_EQ(templated.body["messages"][0]["role"], "system");
    EXPECT_EQ(templated.body["messages"][1]["content"], "Why?");
    EXPECT_FALSE(ollama_generate_request(body, false).chat);
    ojson raw = body;
    raw["raw"] = true;
    const OllamaRequest plain = ollama_generate_request(raw, true);
    EXPECT_FALSE(plain.chat);
    EXPECT_EQ(parse_completion_request(plain.body, false, SamplerParams{}).prompt, "Why?");
    EXPECT_TRUE(ollama_generate_request(parse_body("{}"), true).load_only);
    EXPECT_TRUE(ollama_chat_request(parse_body(R"({"messages": []})")).load_only);
    const Refusal suffix = refused(
        [] { ollama_generate_request(parse_body(R"({"prompt": "a", "suffix": "b"})"), true); });
    EXPECT_EQ(suffix.status, 400);
    EXPECT_EQ(suffix.param, "suffix");
    EXPECT_EQ(refused([] {
                  ollama_generate_request(parse_body(R"({"prompt": "a", "raw": 1})"), true);
              }).param,
              "raw");
}

TEST(OllamaApi, ErrorBody) {
    const json e = ollama_error_body(ApiError(404, "invalid_request_error", "", "", "gone"));
    EXPECT_EQ(e, json({{"error", "gone"}}));
}

TEST(OllamaReply, StreamLinesAndTheDoneLine) {
    const OllamaReply chat_lines("tiny", true);
    EXPECT_EQ(chat_lines.piece(ReplyDelta{}), "");
    const std::string piece = chat_lines.piece(ReplyDelta{"hmm", "Hi", {}});
    ASSERT_EQ(piece.back(), '\n');
    const json p = json::parse(piece);
    EXPECT_EQ(p["model"], "tiny");
    EXPECT_EQ(p["message"]["content"], "Hi");
    EXPECT_EQ(p["message"]["thinking"], "hmm");
    EXPECT_EQ(p["done"], false);

    ReplyParts parts;
    parts.calls.push_back({"get_weather", R"({"city": "Oslo"})", true});
    const json metrics = {{"eval_count", 3}};
    const std::string end = chat_lines.finish(parts, {"call_1"}, "stop", metrics);
    const size_t nl = end.find('\n');
    ASSERT_EQ(end.size(), end.find('\n', nl + 1) + 1);  // two lines
    const json calls = json::parse(end.substr(0, nl));
    EXPECT_EQ(calls["done"], false);
    const json& call = calls["message"]["tool_calls"][0];
    EXPECT_EQ(call["id"], "call_1");
    EXPECT_EQ(call["function"]["name"], "get_weather");
    EXPECT_EQ(call["function"]["arguments"]["city"], "Oslo");
    const json last = json::parse(end.substr(nl + 1));
    EXPECT_EQ(last["done"], true);
    EXPECT_EQ(last["done_reason"], "stop");
    EXPECT_EQ(last["eval_count"], 3);
    EXPECT_EQ(last["message"]["content"], "");

    const OllamaReply generate_lines("tiny", false);
    ReplyParts text;
    text.content = "Because.";
    const json whole = generate_lines.whole(text, {}, ollama_done_reason("length"), metrics);
    EXPECT_EQ(whole["response"], "Because.");
    EXPECT_EQ(whole["done_reason"], "length");
    EXPECT_FALSE(whole.contains("message"));
}

TEST(OllamaReply, TimerCountsInNanoseconds) {
    OllamaTimer timer;
    timer.tokens_came();
    const json m = timer.metrics(JobUsage{5, 0, 3});
    EXPECT_EQ(m["prompt_eval_count"], 5);
    EXPECT_EQ(m["eval_count"], 3);
    EXPECT_EQ(m["load_duration"], 0);
    EXPECT_EQ(m["total_duration"].get<int64_t>(),
              m["prompt_eval_duration"].get<int64_t>() + m["eval_duration"].get<int64_t>());
}

TEST(OllamaApi, TimeIsRfc3339InUtc) {
    EXPECT_EQ(ollama_time(std::chrono::system_clock::time_point(std::chrono::seconds(86400))),
              "1970-01-02T00:00:00.000000000Z");
}

}  // namespace
}  // namespace anelm::server
