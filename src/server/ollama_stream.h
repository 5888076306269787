// Ollama's replies: for /api/chat objects with a message {role, content,
// thinking, tool_calls}, for /api/generate with response and thinking; streamed
// as NDJSON, one object a line, calls whole in a line of their own after the
// text, then a done line with done_reason, the token counts and durations in
// nanoseconds.
#pragma once

#include <nlohmann/json.hpp>

#include <chrono>
#include <string>
#include <vector>

#include "server/engine.h"
#include "server/reply_parser.h"

namespace anelm::server {

// The durations Ollama's done line reports, timed from the request's arrival:
// the prompt until the first token came, the generation from then on.
class OllamaTimer {
public:
    OllamaTimer() : start_(std::chrono::steady_clock::now()) {}
    // Call as each piece of the reply arrives.
    void tokens_came();
    // total_duration, load_duration (0: the model stays loaded),
    // prompt_eval_count and _duration, eval_count and _duration.
    nlohmann::json metrics(const JobUsage& usage) const;

private:
    std::chrono::steady_clock::time_point start_, first_, last_;
    bool began_ = false;
};

// stop or length, as Ollama's done_reason.
std::string ollama_done_reason(const std::string& finish_reason);

class OllamaReply {
public:
    OllamaReply(std::string model, bool chat) : model_(std::move(model)), chat_(chat) {}

    // A line with what a split adds to the text and thinking; "" when nothing.
    std::string piece(const ReplyDelta& delta) const;
    // The stream's end: a line with the calls when there are some, then the done line.
    std::string finish(const ReplyParts& parts, const std::vector<std::string>& ids,
                       const std::string& done_reason, const nlohmann::json& metrics) const;
    // The whole reply as one object (stream: false).
    nlohmann::json whole(const ReplyParts& parts, const std::vector<std::string>& ids,
                         const std::string& done_reason, const nlohmann::json& metrics) const;

private:
    nlohmann::json object(const std::string& content, const std::string& thinking,
                          nlohmann::json calls, bool done) const;

    std::string model_;
    bool chat_;
};

// Serialized with a newline, as NDJSON frames an object.
std::string ndjson_line(const nlohmann::json& value);

}  // namespace anelm::server
