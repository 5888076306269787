#include "server/ollama_api.h"

#include <cctype>
#include <ctime>

#include "server/completion_request.h"
#include "server/reply_parser.h"

namespace anelm::server {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;

// Options that share their name and meaning with the chat body's fields.
constexpr const char* same_options[] = {
    "temperature",       "top_p", "top_k", "min_p", "repeat_penalty", "presence_penalty",
    "frequency_penalty", "seed",  "stop"};

// options: sampling fields, num_predict as max_tokens (-1 and -2, Ollama's
// "no limit" and "fill the context", generate until the context is full).
// The rest (num_ctx, num_thread, ...) set up Ollama's runner and are accepted.
void read_options(const ojson& options, ojson& chat) {
    if (options.is_null()) return;
    if (!options.is_object()) bad_field("options", "options: expected an object");
    for (const char* name : same_options)
        if (const ojson& v = body_field(options, name); !v.is_null()) chat[name] = v;
    const ojson& n = body_field(options, "num_predict");
    if (n.is_null()) return;
    if (!n.is_number_integer() ||
        (n.get<int64_t>() < 1 && n.get<int64_t>() != -1 && n.get<int64_t>() != -2))
        bad_field("options.num_predict",
                  "options.num_predict: {}, expected a count of tokens, -1 or -2", n.dump());
    if (n.get<int64_t>() > 0) chat["max_tokens"] = n;
}

// format: "json" (any object) or a JSON schema, as response_format.
void read_format(const ojson& format, ojson& chat) {
    if (format.is_null() || format == "") return;
    if (format == "json") {
        chat["response_format"] = {{"type", "json_object"}};
    } else if (format.is_object()) {
        chat["response_format"] = {{"type", "json_schema"},
                                   {"json_schema", {{"name", "format"}, {"schema", format}}}};
    } else {
        bad_field("format", "format: expected \"json\" or a JSON schema object, got {}",
                  format.dump());
    }
}

// think: true/false as the template's enable_thinking (Qwen3's); a level
// (low, medium, high, max) turns it on and goes as reasoning_effort.
void read_think(const ojson& think, ojson& chat) {
    if (think.is_null()) return;
    if (think.is_boolean()) {
        chat["chat_template_kwargs"] = {{"enable_thinking", think.get<bool>()}};
    } else if (think == "low" || think == "medium" || think == "high" || think == "max") {
        chat["chat_template_kwargs"] = {{"enable_thinking", true}};
        chat["reasoning_effort"] = think;
    } else {
        bad_field("think", "think: expected true, false, low, medium, high or max, got {}",
                  think.dump());
    }
}

// The fields /api/chat and /api/generate share; Ollama streams unless told not to.
ojson common_fields(const ojson& body) {
    ojson chat = ojson::object();
    chat["stream"] = true;
    if (const ojson& v = body_field(body, "stream"); !v.is_null()) chat["stream"] = v;
    read_options(body_field(body, "options"), chat);
    read_format(body_field(body, "format"), chat);
    read_think(body_field(body, "think"), chat);
    return chat;
}

std::string string_field(const ojson& v, const std::string& at) {
    if (v.is_null()) return "";
    if (!v.is_string()) bad_field(at, "{}: expected a string, got {}", at, v.type_name());
    return v.get<std::string>();
}

// One Ollama message as a chat message: thinking as reasoning_content, calls
// given their OpenAI shape, images dropped (the model reads text only).
ojson chat_message(const ojson& m, const std::string& at) {
    if (!m.is_object()) bad_field(at, "{}: expected an object", at);
    ojson out = {{"role", string_field(body_field(m, "role"), at + ".role")},
                 {"content", string_field(body_field(m, "content"), at + ".content")}};
    if (const std::string thinking = string_field(body_field(m, "thinking"), at + ".thinking");
        !thinking.empty())
        out["reasoning_content"] = thinking;
    if (const ojson& id = body_field(m, "tool_call_id"); !id.is_null()) out["tool_call_id"] = id;
    const ojson& calls = body_field(m, "tool_calls");
    if (calls.is_null()) return out;
    if (!calls.is_array()) bad_field(at + ".tool_calls", "{}.tool_calls: expected an array", at);
    ojson tool_calls = ojson::array();
    for (size_t i = 0; i < calls.size(); ++i) {
        const std::string call = fmt::format("{}.tool_calls[{}]", at, i);
        if (!calls[i].is_object())
            bad_field(call, "{}: expected {{function: {{name, arguments}}}}", call);
        ojson c = {{"type", "function"}, {"function", body_field(calls[i], "function")}};
        if (const ojson& id = body_field(calls[i], "id"); !id.is_null()) c["id"] = id;
        tool_calls.push_back(std::move(c));
    }
    out["tool_calls"] = std::move(tool_calls);
    return out;
}

std::string parameter_size(int64_t n) {
    if (n >= 1'000'000'000) return fmt::format("{:.1f}B", n / 1e9);
    if (n >= 1'000'000) return fmt::format("{:.1f}M", n / 1e6);
    return fmt::format("{:.1f}K", n / 1e3);
}

json details_json(const ModelFacts& f) {
    std::string level = f.dtype;
    for (char& c : level) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return {{"parent_model", ""},
            {"format", f.format},
            {"family", f.family},
            {"families", f.family.empty() ? json::array() : json::array({f.family})},
            {"parameter_size", f.parameters > 0 ? parameter_size(f.parameters) : ""},
            {"quantization_level", level}};
}

}  // namespace

void check_ollama_model(const ojson& body, const std::string& served) {
    const std::string model = string_field(body_field(body, "model"), "model");
    if (model.empty()) bad_field("model", "model is required");
    if (model != served && model != served + ":latest")
        throw ApiError(
            404, "invalid_request_error", "model_not_found", "model",
            fmt::format("model '{}' not found (this server serves '{}')", model, served));
}

OllamaRequest ollama_chat_request(const ojson& body) {
    OllamaRequest r;
    r.body = common_fields(body);
    const ojson& given = body_field(body, "messages");
    if (!given.is_null() && !given.is_array())
        bad_field("messages", "messages: expected an array of messages");
    r.load_only = given.empty();
    if (r.load_only) return r;
    ojson messages = ojson::array();
    for (size_t i = 0; i < given.size(); ++i)
        messages.push_back(chat_message(given[i], fmt::format("messages[{}]", i)));
    r.body["messages"] = std::move(messages);
    if (const ojson& v = body_field(body, "tools"); !v.is_null()) r.body["tools"] = v;
    return r;
}

OllamaRequest ollama_generate_request(const ojson& body, bool has_template) {
    OllamaRequest r;
    r.body = common_fields(body);
    if (!string_field(body_field(body, "suffix"), "suffix").empty())
        bad_field("suffix", "suffix: fill-in-the-middle is not supported");
    const std::string prompt = string_field(body_field(body, "prompt"), "prompt");
    const std::string system = string_field(body_field(body, "system"), "system");
    const ojson& raw = body_field(body, "raw");
    if (!raw.is_null() && !raw.is_boolean()) bad_field("raw", "raw: expected true or false");
    r.load_only = prompt.empty();
    if (r.load_only) return r;
    r.chat = has_template && !(raw.is_boolean() && raw.get<bool>());
    if (!r.chat) {
        r.body["prompt"] = prompt;
        return r;
    }
    ojson messages = ojson::array();
    if (!system.empty()) messages.push_back({{"role", "system"}, {"content", system}});
    messages.push_back({{"role", "user"}, {"content", prompt}});
    r.body["messages"] = std::move(messages);
    return r;
}

std::string ollama_time(std::chrono::system_clock::time_point t) {
    const auto since = t.time_since_epoch();
    const std::time_t seconds = std::chrono::duration_cast<std::chrono::seconds>(since).count();
    const auto nanos =
        std::chrono::duration_cast<std::chrono::nanoseconds>(since).count() % 1'000'000'000;
    std::tm tm{};
    gmtime_r(&seconds, &tm);
    char text[32];
    std::strftime(text, sizeof(text), "%Y-%m-%dT%H:%M:%S", &tm);
    return fmt::format("{}.{:09}Z", text, nanos);
}

json ollama_model_json(const std::string& name, const ModelFacts& facts) {
    return {
        {"name", name},
        {"model", name},
        {"modified_at",
         ollama_time(std::chrono::system_clock::time_point(std::chrono::seconds(facts.modified)))},
        {"size", facts.size},
        {"digest", ""},
        {"details", details_json(facts)}};
}

json ollama_show_json(const std::string& name, const ModelFacts& facts,
                      const std::string& template_source, int64_t n_ctx,
                      const SamplerParams& defaults) {
    const std::string parameters = fmt::format(
        "num_ctx {}\ntemperature {}\ntop_k {}\ntop_p {}\nmin_p {}\nrepeat_penalty {}", n_ctx,
        defaults.temp, defaults.top_k, defaults.top_p, defaults.min_p, defaults.repeat_penalty);
    json capabilities = json::array({"completion"});
    // Every template takes tools: one without a native format gets the tools
    // described in its system message.
    if (!template_source.empty()) capabilities.push_back("tools");
    if (reasoning_tags_for(template_source).active()) capabilities.push_back("thinking");
    const std::string arch = facts.family.empty() ? "model" : facts.family;
    json info = {{"general.architecture", arch}, {"general.parameter_count", facts.parameters}};
    const auto add = [&](const char* key, int64_t value) {
        if (value > 0) info[arch + "." + key] = value;
    };
    add("context_length", facts.n_ctx_train);
    add("embedding_length", facts.n_embd);
    add("block_count", facts.n_layer);
    add("attention.head_count", facts.n_head);
    add("attention.head_count_kv", facts.n_head_kv);
    add("vocab_size", facts.n_vocab);
    return {
        {"modelfile", fmt::format("# served by anelm\nFROM {}\n", name)},
        {"parameters", parameters},
        {"template", template_source},
        {"details", details_json(facts)},
        {"model_info", std::move(info)},
        {"capabilities", std::move(capabilities)},
        {"modified_at",
         ollama_time(std::chrono::system_clock::time_point(std::chrono::seconds(facts.modified)))}};
}

}  // namespace anelm::server
