#include "server/completion_request.h"

#include <algorithm>

#include <limits>

#include "io/json_file.h"
#include "server/api_error.h"

namespace anelm::server {

namespace {

using ojson = nlohmann::ordered_json;

double number(const ojson& v, const std::string& name, ValueRange range) {
    if (!v.is_number()) bad_field(name, "{}: expected a number, got {}", name, v.type_name());
    const double x = v.get<double>();
    if (!range.contains(x)) bad_field(name, "{}", range_violation(name, x, range));
    return x;
}

int64_t integer(const ojson& v, const std::string& name, int64_t lo, int64_t hi) {
    if (!v.is_number_integer())
        bad_field(name, "{}: expected an integer, got {}", name, v.dump());
    const int64_t x = v.is_number_unsigned() && v.get<uint64_t>() > uint64_t(INT64_MAX)
                          ? std::numeric_limits<int64_t>::max()
                          : v.get<int64_t>();
    if (x < lo || x > hi) bad_field(name, "{}: {} is outside [{}, {}]", name, x, lo, hi);
    return x;
}

bool boolean(const ojson& v, const std::string& name) {
    if (!v.is_boolean()) bad_field(name, "{}: expected true or false, got {}", name, v.dump());
    return v.get<bool>();
}

std::string string(const ojson& v, const std::string& name) {
    if (!v.is_string()) bad_field(name, "{}: expected a string, got {}", name, v.type_name());
    return v.get<std::string>();
}

ojson read_messages(const ojson& v) {
    if (!v.is_array() || v.empty())
        bad_field("messages", "messages: expected a non-empty array of messages");
    ojson out = ojson::array();
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string name = fmt::format("messages[{}]", i);
        if (!v[i].is_object()) bad_field(name, "{}: expected an object", name);
        ojson m = v[i];
        const std::string role = string(body_field(m, "role"), name + ".role");
        if (role.empty()) bad_field(name + ".role", "{}.role: empty", name);
        m["content"] = joined_text(body_field(m, "content"), name + ".content", {"text"});
        out.push_back(std::move(m));
    }
    return out;
}

void read_prompt(const ojson& v, CompletionRequest& r) {
    auto ids = [&](const ojson& a, const std::string& name) {
        for (size_t i = 0; i < a.size(); ++i)
            r.prompt_ids.push_back(static_cast<int32_t>(
                integer(a[i], fmt::format("{}[{}]", name, i), 0, INT32_MAX)));
        r.prompt_is_ids = true;
    };
    if (v.is_string()) {
        r.prompt = v.get<std::string>();
    } else if (v.is_array() && v.size() == 1 && v[0].is_string()) {
        r.prompt = v[0].get<std::string>();
    } else if (v.is_array() && !v.empty() && v[0].is_number()) {
        ids(v, "prompt");
    } else if (v.is_array() && v.size() == 1 && v[0].is_array() && !v[0].empty()) {
        ids(v[0], "prompt[0]");
    } else if (v.is_array() && v.size() > 1) {
        bad_field("prompt", "prompt: one prompt per request (got {})", v.size());
    } else {
        bad_field("prompt", "prompt: expected a string or an array of token ids");
    }
    if (!r.prompt_is_ids && r.prompt.empty()) bad_field("prompt", "prompt: empty");
}

void read_stop(const ojson& v, CompletionRequest& r) {
    if (v.is_null()) return;
    if (v.is_string()) {
        r.stop.push_back(v.get<std::string>());
    } else if (v.is_array()) {
        if (v.size() > 16) bad_field("stop", "stop: at most 16 strings, got {}", v.size());
        for (size_t i = 0; i < v.size(); ++i)
            r.stop.push_back(string(v[i], fmt::format("stop[{}]", i)));
    } else {
        bad_field("stop", "stop: expected a string or an array of strings");
    }
    for (const std::string& s : r.stop)
        if (s.empty()) bad_field("stop", "stop: empty strings never match");
}

void read_response_format(const ojson& v, CompletionRequest& r) {
    if (v.is_null()) return;
    if (!v.is_object()) bad_field("response_format", "response_format: expected an object");
    const std::string type = string(body_field(v, "type"), "response_format.type");
    if (type == "text") return;
    if (type == "json_object") {
        r.format = OutputFormat::json_object;
        return;
    }
    if (type != "json_schema")
        bad_field("response_format.type",
                  "response_format.type: '{}', expected text, json_object or json_schema", type);
    r.format = OutputFormat::json_schema;
    const ojson& spec = body_field(v, "json_schema");
    if (!spec.is_object())
        bad_field("response_format.json_schema", "response_format.json_schema: expected an object");
    r.schema = body_field(spec, "schema");
    if (!r.schema.is_object())
        bad_field("response_format.json_schema.schema",
                  "response_format.json_schema.schema: expected a JSON schema object");
}

void read_sampler(const ojson& body, SamplerParams& s, bool& seed_given) {
    namespace lim = sampler_limits;
    const auto read = [&](const char* name, auto& field, ValueRange range) {
        if (const ojson& v = body_field(body, name); !v.is_null())
            field = static_cast<std::remove_reference_t<decltype(field)>>(number(v, name, range));
    };
    read("temperature", s.temp, lim::temp);
    read("top_p", s.top_p, lim::top_p);
    read("min_p", s.min_p, lim::min_p);
    read("repeat_penalty", s.repeat_penalty, lim::repeat_penalty);
    read("presence_penalty", s.presence_penalty, lim::presence_penalty);
    read("frequency_penalty", s.frequency_penalty, lim::frequency_penalty);
    if (const ojson& v = body_field(body, "top_k"); !v.is_null())
        s.top_k = static_cast<int>(integer(v, "top_k", 0, static_cast<int64_t>(lim::top_k.hi)));
    const ojson& seed = body_field(body, "seed");
    seed_given = !seed.is_null();
    if (seed_given) s.seed = static_cast<uint64_t>(integer(seed, "seed", INT64_MIN, INT64_MAX));
}

}  // namespace

const ojson& body_field(const ojson& body, const char* name) {
    static const ojson null;
    const auto it = body.find(name);
    return it == body.end() ? null : *it;
}

std::string string_value(const ojson& v, const std::string& at) {
    return string(v, at);
}

const ojson& object_member(const ojson& v, const std::string& at, const char* name) {
    if (!v.is_object()) bad_field(at, "{}: expected an object", at);
    return body_field(v, name);
}

std::string joined_text(const ojson& v, const std::string& at,
                        std::initializer_list<std::string_view> accepted) {
    if (v.is_null()) return "";
    if (v.is_string()) return v.get<std::string>();
    if (!v.is_array()) bad_field(at, "{}: expected a string or an array of text parts", at);
    std::string text;
    for (size_t i = 0; i < v.size(); ++i) {
        const std::string part = fmt::format("{}[{}]", at, i);
        const std::string type = string(object_member(v[i], part, "type"), part + ".type");
        if (std::find(accepted.begin(), accepted.end(), type) == accepted.end())
            bad_field(part + ".type", "{}.type: '{}' parts are not supported (text only)", part,
                      type);
        text += string(body_field(v[i], "text"), part + ".text");
    }
    return text;
}

nlohmann::ordered_json parse_body(const std::string& body) {
    if (const size_t at = json_too_deep_at(body); at != std::string::npos)
        throw ApiError(
            400, "invalid_request_error", "", "",
            fmt::format("the body nests more than {} levels deep (byte {})", max_json_depth, at));
    try {
        ojson j = ojson::parse(body);
        if (!j.is_object())
            throw ApiError(400, "invalid_request_error", "", "", "the body is not a JSON object");
        return j;
    } catch (const nlohmann::json::parse_error& e) {
        throw ApiError(400, "invalid_request_error", "", "",
                       fmt::format("the body is not valid JSON (byte {})", e.byte));
    } catch (const nlohmann::json::exception&) {  // a number past double's range
        throw ApiError(400, "invalid_request_error", "", "",
                       "the body is not valid JSON (a number out of range)");
    }
}

CompletionRequest parse_completion_request(const nlohmann::ordered_json& body, bool chat,
                                           const SamplerParams& defaults) {
    CompletionRequest r;
    r.chat = chat;
    r.sampler = defaults;
    if (const ojson& v = body_field(body, "model"); !v.is_null()) r.model = string(v, "model");
    if (chat) {
        r.messages = read_messages(body_field(body, "messages"));
        if (const ojson& v = body_field(body, "chat_template_kwargs"); !v.is_null()) {
            if (!v.is_object())
                bad_field("chat_template_kwargs", "chat_template_kwargs: expected an object");
            r.template_kwargs = v;
        }
        r.tools = read_tool_request(body);
        read_tool_turns(r.messages);
        // As vLLM and llama-server pass it: a template variable, for templates that read it.
        if (const ojson& v = body_field(body, "reasoning_effort");
            !v.is_null() && !r.template_kwargs.contains("reasoning_effort"))
            r.template_kwargs["reasoning_effort"] = string(v, "reasoning_effort");
    } else {
        read_prompt(body_field(body, "prompt"), r);
    }
    if (const ojson& v = body_field(body, "n"); !v.is_null() && integer(v, "n", 1, 1 << 20) != 1)
        bad_field("n", "n: only one choice per request is supported");
    for (const char* name : {"max_completion_tokens", "max_tokens"})
        if (const ojson& v = body_field(body, name); !v.is_null())
            r.max_tokens = integer(v, name, 1, INT32_MAX);
    read_sampler(body, r.sampler, r.seed_given);
    read_stop(body_field(body, "stop"), r);
    if (const ojson& v = body_field(body, "stream"); !v.is_null()) r.stream = boolean(v, "stream");
    if (const ojson& v = body_field(body, "stream_options"); !v.is_null()) {
        if (!v.is_object()) bad_field("stream_options", "stream_options: expected an object");
        if (const ojson& u = body_field(v, "include_usage"); !u.is_null())
            r.include_usage = boolean(u, "stream_options.include_usage");
    }
    // Chat asks with logprobs: true and top_logprobs: N; completions with logprobs: N.
    if (const ojson& v = body_field(body, "logprobs"); !v.is_null()) {
        if (chat) {
            r.logprobs = boolean(v, "logprobs");
        } else {
            r.top_logprobs = static_cast<int>(integer(v, "logprobs", 0, 20));
            r.logprobs = true;
        }
    }
    if (const ojson& v = body_field(body, "top_logprobs"); chat && !v.is_null()) {
        r.top_logprobs = static_cast<int>(integer(v, "top_logprobs", 0, 20));
        if (!r.logprobs && r.top_logprobs > 0)
            bad_field("top_logprobs", "top_logprobs: needs logprobs: true");
    }
    read_response_format(body_field(body, "response_format"), r);
    return r;
}

}  // namespace anelm::server
