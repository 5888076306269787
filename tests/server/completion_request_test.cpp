// Request bodies are read as OpenAI documents them; every bad field is a 400
// that names it.
#include <gtest/gtest.h>

#include "server/api_error.h"
#include "server/completion_request.h"

namespace anelm::server {
namespace {

using ojson = nlohmann::ordered_json;

CompletionRequest chat(const std::string& body) {
    return parse_completion_request(parse_body(body), true, SamplerParams{});
}

CompletionRequest text(const std::string& body) {
    return parse_completion_request(parse_body(body), false, SamplerParams{});
}

// The param an invalid body is refused for.
std::string refused(const std::string& body, bool is_chat = true) {
    try {
        is_chat ? chat(body) : text(body);
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status, 400);
        return e.param.empty() ? "<none>" : e.param;
    }
    return "<accepted>";
}

TEST(CompletionRequest, RefusesBodiesNestedTooDeep) {
    const std::string deep = std::string(1000, '[') + std::string(1000, ']');
    try {
        parse_body(R"({"messages": [{"role": "user", "content": "x"}], "x": )" + deep + "}");
        FAIL() << "accepted";
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status, 400);
        EXPECT_NE(std::string(e.what()).find("nests more than 128 levels deep"), std::string::npos);
    }
    // Brackets inside strings do not count.
    EXPECT_NO_THROW(parse_body(R"({"prompt": ")" + deep + R"("})"));
}

TEST(CompletionRequest, ReadsAChatRequest) {
    const auto r = chat(R"({"model":"m","messages":[{"role":"system","content":"be brief"},
        {"role":"user","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}],
        "max_tokens":12,"temperature":0.5,"top_p":0.9,"top_k":20,"min_p":0.1,"seed":7,
        "presence_penalty":0.5,"frequency_penalty":-0.25,"stop":"\n\n","stream":true,
        "stream_options":{"include_usage":true},"logprobs":true,"top_logprobs":3,
        "chat_template_kwargs":{"enable_thinking":false}})");
    EXPECT_EQ(r.model, "m");
    ASSERT_EQ(r.messages.size(), 2u);
    EXPECT_EQ(r.messages[1]["content"], "ab");
    EXPECT_EQ(r.max_tokens, 12);
    EXPECT_FLOAT_EQ(r.sampler.temp, 0.5f);
    EXPECT_FLOAT_EQ(r.sampler.top_p, 0.9f);
    EXPECT_EQ(r.sampler.top_k, 20);
    EXPECT_FLOAT_EQ(r.sampler.min_p, 0.1f);
    EXPECT_EQ(r.sampler.seed, 7u);
    EXPECT_FLOAT_EQ(r.sampler.presence_penalty, 0.5f);
    EXPECT_FLOAT_EQ(r.sampler.frequency_penalty, -0.25f);
    EXPECT_EQ(r.stop, std::vector<std::string>{"\n\n"});
    EXPECT_TRUE(r.stream);
    EXPECT_TRUE(r.include_usage);
    EXPECT_TRUE(r.logprobs);
    EXPECT_EQ(r.top_logprobs, 3);
    EXPECT_EQ(r.template_kwargs["enable_thinking"], false);
}

TEST(CompletionRequest, LeftOutFieldsKeepTheServerDefaults) {
    SamplerParams defaults;
    defaults.temp = 0.3f;
    defaults.top_k = 7;
    const auto r = parse_completion_request(
        parse_body(R"({"messages":[{"role":"user","content":"x"}],"top_k":3})"), true, defaults);
    EXPECT_FLOAT_EQ(r.sampler.temp, 0.3f);
    EXPECT_EQ(r.sampler.top_k, 3);
    EXPECT_EQ(r.max_tokens, -1);
    EXPECT_FALSE(r.stream);
    EXPECT_EQ(r.format, OutputFormat::text);
}

TEST(CompletionRequest, ReadsEveryFormOfAPrompt) {
    EXPECT_EQ(text(R"({"prompt":"once"})").prompt, "once");
    EXPECT_EQ(text(R"({"prompt":["once"]})").prompt, "once");
    const auto ids = text(R"({"prompt":[1,2,3],"logprobs":2,"max_completion_tokens":4})");
    EXPECT_TRUE(ids.prompt_is_ids);
    EXPECT_EQ(ids.prompt_ids, (std::vector<int32_t>{1, 2, 3}));
    EXPECT_TRUE(ids.logprobs);
    EXPECT_EQ(ids.top_logprobs, 2);
    EXPECT_EQ(ids.max_tokens, 4);
    EXPECT_EQ(text(R"({"prompt":[[5,6]]})").prompt_ids, (std::vector<int32_t>{5, 6}));
}

TEST(CompletionRequest, ReadsResponseFormats) {
    const auto object = chat(R"({"messages":[{"role":"user","content":"x"}],
        "response_format":{"type":"json_object"}})");
    EXPECT_EQ(object.format, OutputFormat::json_object);
    const auto schema = chat(R"({"messages":[{"role":"user","content":"x"}],
        "response_format":{"type":"json_schema","json_schema":{"name":"n",
        "schema":{"type":"object","properties":{"a":{"type":"integer"}}}}}})");
    EXPECT_EQ(schema.format, OutputFormat::json_schema);
    EXPECT_EQ(schema.schema["properties"]["a"]["type"], "integer");
}

TEST(CompletionRequest, NamesTheFieldAtFault) {
    const std::string m = R"("messages":[{"role":"user","content":"x"}])";
    EXPECT_EQ(refused("{" + m + R"(,"temperature":"hot"})"), "temperature");
    EXPECT_EQ(refused("{" + m + R"(,"temperature":3})"), "temperature");
    EXPECT_EQ(refused("{" + m + R"(,"max_tokens":0})"), "max_tokens");
    EXPECT_EQ(refused("{" + m + R"(,"max_tokens":1.5})"), "max_tokens");
    EXPECT_EQ(refused("{" + m + R"(,"n":2})"), "n");
    EXPECT_EQ(refused("{" + m + R"(,"stop":[""]})"), "stop");
    EXPECT_EQ(refused("{" + m + R"(,"stop":5})"), "stop");
    EXPECT_EQ(refused("{" + m + R"(,"stream":"yes"})"), "stream");
    EXPECT_EQ(refused("{" + m + R"(,"top_logprobs":2})"), "top_logprobs");
    EXPECT_EQ(refused("{" + m + R"(,"logprobs":true,"top_logprobs":21})"), "top_logprobs");
    EXPECT_EQ(refused("{" + m + R"(,"response_format":{"type":"yaml"}})"),
              "response_format.type");
    EXPECT_EQ(refused("{" + m + R"(,"response_format":{"type":"json_schema"}})"),
              "response_format.json_schema");
    EXPECT_EQ(refused(R"({"messages":[]})"), "messages");
    EXPECT_EQ(refused(R"({"messages":[{"content":"x"}]})"), "messages[0].role");
    EXPECT_EQ(refused(R"({"messages":[{"role":"user","content":[{"type":"image_url"}]}]})"),
              "messages[0].content[0].type");
    EXPECT_EQ(refused(R"({"prompt":["a","b"]})", false), "prompt");
    EXPECT_EQ(refused(R"({"prompt":[1,-2]})", false), "prompt[1]");
    EXPECT_EQ(refused(R"({})", false), "prompt");
    EXPECT_EQ(refused(R"({"prompt":"x","logprobs":true})", false), "logprobs");
}

TEST(CompletionRequest, MalformedBodiesAreRefused) {
    EXPECT_THROW(parse_body("{\"messages\": ["), ApiError);
    EXPECT_THROW(parse_body("[1, 2]"), ApiError);
    EXPECT_THROW(parse_body(""), ApiError);
    EXPECT_THROW(parse_body(R"({"max_tokens": 1e999})"), ApiError);  // past double's range
}

}  // namespace
}  // namespace anelm::server
