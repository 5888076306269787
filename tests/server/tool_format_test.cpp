// Each family's tool calls read back from the text its own template writes for
// them (two calls in one turn, arguments with nested JSON and escaped quotes),
// also when the text comes a byte at a time; reasoning split from content.
#include <gtest/gtest.h>

#include "chat/chat_template.h"
#include "server/reply_parser.h"
#include "test_support.h"

namespace anelm::server {
namespace {

using ojson = nlohmann::ordered_json;

const ojson weather_args = {{"city", "Paris"}, {"units", "celsius"}};
const ojson search_args = {{"query", "say \"hi\""},
                           {"filters", {{"tags", {"a", "b"}}, {"limit", 3}, {"exact", true}}}};

ToolRequest tools() {
    ToolRequest r;
    const ojson string = {{"type", "string"}};
    r.tools.push_back(
        {"get_weather",
         {{"type", "object"}, {"properties", {{"city", string}, {"units", string}}}}});
    r.tools.push_back({"search",
                       {{"type", "object"},
                        {"properties", {{"query", string}, {"filters", {{"type", "object"}}}}}}});
    r.declared = ojson::array();
    for (const ToolSpec& t : r.tools)
        r.declared.push_back(
            {{"type", "function"}, {"function", {{"name", t.name}, {"parameters", t.parameters}}}});
    r.choice = ToolChoice::auto_;
    return r;
}

ojson call(const std::string& id, const std::string& name, const ojson& args) {
    return {{"id", id}, {"type", "function"}, {"function", {{"name", name}, {"arguments", args}}}};
}

// The text a template writes for an assistant turn of these calls, after the
// prompt that asks for it.
std::string assistant_turn(const ChatTemplate& t, const ToolFormat& format, const ojson& calls) {
    ojson user = ojson::array({{{"role", "user"}, {"content", "Weather in Paris? And search."}}});
    ojson turn = user;
    turn.push_back({{"role", "assistant"}, {"content", ""}, {"tool_calls", calls}});
    ojson vars = ojson::object();
    const ToolRequest r = tools();
    format.add_tools(user, vars, r);
    vars = ojson::object();
    format.add_tools(turn, vars, r);
    const std::string prompt = t.render(user, true, vars), whole = t.render(turn, false, vars);
    EXPECT_EQ(whole.substr(0, prompt.size()), prompt);
    // The model's reply ends at the end-of-turn token, which is a stop token.
    std::string reply = whole.substr(prompt.size());
    for (const char* end : {"<|im_end|>", "<|eot_id|>", "<end_of_turn>"})
        reply = reply.substr(0, reply.find(end));
    return reply;
}

// Reads text whole, and a byte at a time as a stream does, and checks that the
// pieces join to the whole.
ReplyParts read_reply(const ToolFormat& format, const std::string& text, ReasoningTags tags = {},
                      bool in_reasoning = false) {
    const ToolRequest r = tools();
    ReplyParser whole(tags, in_reasoning, &format, r);
    whole.push(text);
    const ReplyParts parts = whole.parts(true);

    ReplyParser stream(tags, in_reasoning, &format, r);
    ReplyDeltas deltas;
    std::string reasoning, content;
    std::vector<std::pair<std::string, std::string>> calls;
    auto add = [&](const ReplyDelta& d) {
        reasoning += d.reasoning;
        content += d.content;
        for (const CallDelta& c : d.calls) {
            if (c.first) {
                EXPECT_EQ(c.index, calls.size());
                calls.push_back({c.name, ""});
            }
            calls.at(c.index).second += c.arguments;
        }
    };
    for (char c : text) {
        stream.push(std::string(1, c));
        add(deltas.next(stream.parts(false)));
    }
    add(deltas.next(stream.parts(true)));
    EXPECT_EQ(reasoning, parts.reasoning);
    EXPECT_EQ(content, parts.content);
    EXPECT_EQ(calls.size(), parts.calls.size());
    for (size_t i = 0; i < std::min(calls.size(), parts.calls.size()); ++i) {
        EXPECT_EQ(calls[i].first, parts.calls[i].name);
        EXPECT_EQ(calls[i].second, parts.calls[i].arguments);
    }
    return parts;
}

void expect_calls(const ReplyParts& parts, const std::vector<std::pair<std::string, ojson>>& want) {
    ASSERT_EQ(parts.calls.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
        EXPECT_TRUE(parts.calls[i].done);
        EXPECT_EQ(parts.calls[i].name, want[i].first);
        // Key order as the model wrote it (Gemma 4's template sorts keys).
        EXPECT_EQ(nlohmann::json::parse(parts.calls[i].arguments), nlohmann::json(want[i].second))
            << parts.calls[i].arguments;
    }
}

const std::vector<std::pair<std::string, ojson>> both = {{"get_weather", weather_args},
                                                         {"search", search_args}};
const ojson both_calls = {call("c1", "get_weather", weather_args),
                          call("c2", "search", search_args)};

ChatTemplate shared_template(const std::string& name) {
    return ChatTemplate::load(test::shared_path("tokenizers/chat-templates/" + name).string());
}

TEST(ToolFormat, PicksTheFamilyFromTheTemplate) {
    EXPECT_EQ(tool_format_for("{{ tools }}<tool_call>").name(), "hermes");
    EXPECT_EQ(tool_format_for("{{ tools }}<tool_call>\n<function=").name(), "qwen3.5");
    EXPECT_EQ(tool_format_for("{{ tools }}<|start_header_id|>").name(), "llama3");
    EXPECT_EQ(tool_format_for("{{ tools }}<|tool_call>call:").name(), "gemma4");
    EXPECT_EQ(tool_format_for("{{ tools }}List of tools: [").name(), "lfm2");
    EXPECT_EQ(tool_format_for("<start_of_turn>{{ messages }}").name(), "json");
}

// The calls read back from the turn a ../shared template writes for them,
// whose family's format is `format_name`.
ReplyParts shared_turn(const std::string& file, std::string_view format_name, const ojson& calls) {
    const ChatTemplate t = shared_template(file);
    const ToolFormat& format = tool_format_for(t.source());
    EXPECT_EQ(format.name(), format_name);
    return read_reply(format, assistant_turn(t, format, calls), reasoning_tags_for(t.source()));
}

TEST(ToolFormat, Qwen3CallsAsItsTemplateWritesThem) {
    ANELM_REQUIRE_SHARED("tokenizers/chat-templates/Qwen-Qwen3.jinja");
    // Its turn begins with an empty think block.
    const ReplyParts parts = shared_turn("Qwen-Qwen3.jinja", "hermes", both_calls);
    expect_calls(parts, both);
    EXPECT_EQ(parts.content, "");
    EXPECT_EQ(parts.reasoning, "");
}

TEST(ToolFormat, Qwen25CallsAsItsTemplateWritesThem) {
    ANELM_REQUIRE_SHARED("tokenizers/chat-templates/Qwen-Qwen2.5-7B-Instruct.jinja");
    expect_calls(shared_turn("Qwen-Qwen2.5-7B-Instruct.jinja", "hermes", both_calls), both);
}

TEST(ToolFormat, Llama3CallAsItsTemplatesWriteIt) {
    for (const char* name :
         {"meta-llama-Llama-3.1-8B-Instruct.jinja", "meta-llama-Llama-3.2-3B-Instruct.jinja"}) {
        ANELM_REQUIRE_SHARED(std::string("tokenizers/chat-templates/") + name);
        // Its templates write one call per turn.
        expect_calls(shared_turn(name, "llama3", ojson::array({call("c2", "search", search_args)})),
                     {{"search", search_args}});
    }
    // Llama 3.2 writes several after <|python_tag|>, separated by semicolons.
    const ReplyParts parts = read_reply(
        llama3_tool_format(),
        R"(<|python_tag|>{"name": "get_weather", "parameters": {"city": "Paris", "units": "celsius"}}; )"
        R"({"name": "search", "parameters": {"query": "say \"hi\"", "filters": {"tags": ["a", "b"], "limit": 3, "exact": true}}})");
    expect_calls(parts, both);
}

TEST(ToolFormat, Gemma3UsesTheJsonConvention) {
    ANELM_REQUIRE_SHARED("tokenizers/chat-templates/google-gemma-3-it.jinja");
    expect_calls(shared_turn("google-gemma-3-it.jinja", "json", both_calls), both);

    // The tools reach the prompt in the system text, which Gemma 3 puts in the first user turn.
    ojson messages = ojson::array({{{"role", "user"}, {"content", "hi"}}});
    ojson vars = ojson::object();
    json_convention_format().add_tools(messages, vars, tools());
    const std::string prompt =
        shared_template("google-gemma-3-it.jinja").render(messages, true, vars);
    EXPECT_NE(prompt.find(
                  "<start_of_turn>user\nYou can call these functions:\n{\"name\": \"get_weather\""),
              std::string::npos)
        << prompt;
}

// The turns below are what the released templates write for both calls
// (Qwen3.5-4B's, Gemma 4 31B-it's and LFM2.5-8B-A1B's chat_template.jinja,
// rendered by Jinja2 as transformers does).
TEST(ToolFormat, Qwen35XmlCalls) {
    const std::string text =
        "\n</think>\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
        "<parameter=units>\ncelsius\n</parameter>\n</function>\n</tool_call>\n<tool_call>\n"
        "<function=search>\n<parameter=query>\nsay \"hi\"\n</parameter>\n<parameter=filters>\n"
        "{\"tags\": [\"a\", \"b\"], \"limit\": 3, \"exact\": true}\n</parameter>\n</function>\n"
        "</tool_call>";
    // Its prompt ends inside the think block it opens.
    const ReplyParts parts =
        read_reply(qwen_xml_tool_format(), text, {"<think>", "</think>"}, true);
    expect_calls(parts, both);
    EXPECT_EQ(parts.reasoning, "");
}

TEST(ToolFormat, Qwen35ReadsValuesByTheirSchema) {
    const ReplyParts parts =
        read_reply(qwen_xml_tool_format(),
                   "<tool_call>\n<function=get_weather>\n<parameter=city>\n42\n</parameter>\n"
                   "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>");
    expect_calls(parts, {{"get_weather", {{"city", "42"}, {"days", 3}}}});
}

TEST(ToolFormat, Gemma4FunctionCallTokens) {
    const std::string text =
        "<|tool_call>call:get_weather{city:<|\"|>Paris<|\"|>,units:<|\"|>celsius<|\"|>}<tool_call|>"
        "<|tool_call>call:search{filters:{exact:true,limit:3,tags:[<|\"|>a<|\"|>,<|\"|>b<|\"|>]},"
        "query:<|\"|>say \"hi\"<|\"|>}<tool_call|>";
    expect_calls(read_reply(gemma4_tool_format(), text), both);
}

TEST(ToolFormat, Lfm2PythonCalls) {
    const std::string text =
        "<|tool_call_start|>[get_weather(city='Paris', units='celsius'), search(query='say "
        "\"hi\"', "
        "filters={\"tags\": [\"a\", \"b\"], \"limit\": 3, \"exact\": true})]<|tool_call_end|>";
    expect_calls(read_reply(lfm2_tool_format(), text), both);
    // Asked for JSON, LFM2 writes a JSON list in the same tokens.
    const std::string json =
        "<|tool_call_start|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", "
        "\"units\": \"celsius\"}}]<|tool_call_end|>";
    expect_calls(read_reply(lfm2_tool_format(), json), {{"get_weather", weather_args}});
}

TEST(ReplyParser, SplitsReasoningContentAndCalls) {
    const ReplyParts parts =
        read_reply(hermes_tool_format(),
                   "<think>\nThe user wants weather.\n</think>\n\nLet me check.\n\n<tool_call>\n"
                   "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"units\": "
                   "\"celsius\"}}\n"
                   "</tool_call>",
                   {"<think>", "</think>"});
    EXPECT_EQ(parts.reasoning, "The user wants weather.");
    EXPECT_EQ(parts.content, "Let me check.");
    expect_calls(parts, {{"get_weather", weather_args}});
}

TEST(ReplyParser, TextThatIsNoCallStaysContent) {
    const std::string text = "I use <tool_call> tags like <tool_call>this</tool_call>.";
    const ReplyParts parts = read_reply(hermes_tool_format(), text);
    EXPECT_EQ(parts.content, text);
    EXPECT_TRUE(parts.calls.empty());
}

TEST(ReplyParser, OneCallWithoutParallelCalls) {
    ToolRequest r = tools();
    r.parallel = false;
    ReplyParser p({}, false, &lfm2_tool_format(), r);
    p.push(
        "<|tool_call_start|>[get_weather(city='Paris', units='celsius'), search(query='x')]"
        "<|tool_call_end|>");
    expect_calls(p.parts(true), {{"get_weather", weather_args}});
}

TEST(ReplyParser, ReasoningUntilTheEndWhenNeverClosed) {
    ReplyParser p({"<think>", "</think>"}, true, nullptr, ToolRequest{});
    p.push("still thinking\n");
    EXPECT_EQ(p.parts(false).reasoning, "still thinking");
    EXPECT_EQ(p.parts(true).content, "");
}

}  // namespace
}  // namespace anelm::server
