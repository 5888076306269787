#include "server/api_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <cerrno>
#include <chrono>
#include <functional>
#include <thread>

#include "base/error.h"
#include "server/anthropic_messages.h"
#include "server/anthropic_stream.h"
#include "server/api_error.h"
#include "server/chat_page.h"
#include "server/chat_prompt.h"
#include "server/ollama_api.h"
#include "server/ollama_stream.h"
#include "server/embeddings_api.h"
#include "server/openai_json.h"
#include "server/request_body.h"
#include "server/responses_api.h"
#include "server/responses_stream.h"

namespace anelm::server {

namespace {

using json = nlohmann::json;
using ojson = nlohmann::ordered_json;
using httplib::Request;
using httplib::Response;

void send_json(Response& res, int status, const json& body) {
    res.status = status;
    res.set_content(json_text(body), "application/json");
}

// The error body of an API: OpenAI's (error_body), Anthropic's (messages_error_body)
// or Ollama's (ollama_error_body).
using ErrorShape = json (*)(const ApiError&);

// Anthropic's and Ollama's clients read errors in their own shapes.
ErrorShape error_shape_of(const std::string& path) {
    if (path.starts_with("/api/")) return ollama_error_body;
    return path == "/v1/messages" ? messages_error_body : error_body;
}

void send_error(Response& res, const ApiError& e, ErrorShape shape = error_body) {
    send_json(res, e.status, shape(e));
}

// Runs a route's handler, answering its errors in the route's API's shape.
void answer(Response& res, const std::function<void()>& handler, ErrorShape shape = error_body) {
    try {
        handler();
    } catch (const ApiError& e) {
        send_error(res, e, shape);
    } catch (const Error& e) {
        send_error(res, ApiError(400, "invalid_request_error", "", "", e.what()), shape);
    } catch (const std::exception& e) {
        send_error(res, ApiError(500, "server_error", "", "", e.what()), shape);
    }
}

ApiError no_route(const Request& req) {
    return ApiError(404, "invalid_request_error", "not_found", "",
                    fmt::format("no route {} {}", req.method, req.path));
}

// cpp-httplib's default sets SO_REUSEPORT, with which a second server binds the
// same port and the kernel shares the connections out between the two.
// SO_REUSEADDR alone lets a restarted server bind past its old connections in
// TIME_WAIT, and on Linux refuses any port another socket listens on. On macOS
// (BSD) it refuses the same address and port too, but lets a specific address
// be bound beside a wildcard one on that port (the specific one then takes that
// address's connections); without it a restart would fail until TIME_WAIT ends.
void exclusive_socket(socket_t sock) {
    const int yes = 1;
    setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
}

// Why binding failed, from the errno bind(2) or listen(2) left (cpp-httplib keeps none).
std::string bind_failure(int err) {
    switch (err) {
        case EADDRINUSE:
            return "address already in use";
        case EADDRNOTAVAIL:
            return "not an address of this machine";
        case EACCES:
            return "permission denied";
        default:
            return "cannot listen there (not an address or host name of this machine?)";
    }
}

// Compares without stopping at the first difference, so the time taken does
// not tell how much of a guessed key was right.
bool same_secret(const std::string& a, const std::string& b) {
    if (a.size() != b.size()) return false;
    unsigned diff = 0;
    for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
    return diff == 0;
}

// What one request's generation has produced so far.
struct Progress {
    std::string text;
    std::vector<TokenLogprob> logprobs;
    std::string finish_reason;
    std::string stop_sequence;
};

// Adds events to progress; true once the last has come. A failed generation throws.
bool absorb(std::vector<Event>& events, Progress& p) {
    bool done = false;
    for (Event& ev : events) {
        if (!ev.error.empty())
            throw ApiError(500, "server_error", "", "", "generation failed: " + ev.error);
        p.text += ev.text;
        p.logprobs.insert(p.logprobs.end(), ev.logprobs.begin(), ev.logprobs.end());
        if (ev.done) {
            p.finish_reason = ev.finish_reason;
            p.stop_sequence = ev.stop_sequence;
            done = true;
        }
    }
    events.clear();
    return done;
}

// A chat reply read for reasoning and tool calls as it comes, and the ids
// given to its calls (OpenAI's call_..., or another API's).
struct Reply {
    ReplyParser parser;
    ReplyDeltas sent;
    std::vector<std::string> ids;
    std::string (*new_id)();

    explicit Reply(ReplyParser p, std::string (*new_id)() = new_call_id)
        : parser(std::move(p)), new_id(new_id) {}
    ReplyParts parts(bool final) {
        ReplyParts parts = parser.parts(final);
        while (ids.size() < parts.calls.size()) ids.push_back(new_id());
        return parts;
    }
    // The delta of what the text pushed adds; final: all that is left.
    json delta(const std::string& text, bool final) {
        parser.push(text);
        return chat_delta_json(sent.next(parts(final)), ids);
    }
};

// finish_reason once the reply is read: a stop after calls is tool_calls.
std::string finish_reason_of(const std::string& reason, const ReplyParts& parts) {
    return reason == "stop" && !parts.calls.empty() ? "tool_calls" : reason;
}

// The stream of one request, as its chunks are written.
struct Stream {
    std::shared_ptr<Job> job;
    std::shared_ptr<const ServedModel> model;
    ResponseHead head;
    bool include_usage = false;
    bool started = false;
    size_t text_offset = 0;
    std::unique_ptr<Reply> reply;  // null: the text is all content
};

// Waits for the job's next events; false (the job cancelled) once the client has left.
bool next_events(Job& job, httplib::DataSink& sink, std::vector<Event>& events) {
    while (!job.wait(events, std::chrono::milliseconds(250)))
        if (!sink.is_writable()) {
            job.cancel();
            return false;
        }
    return true;
}

// Writes text to the stream; false (the job cancelled) when the client has left.
// Nothing is written for no text: an empty chunk would end a chunked response.
bool write_to(Job& job, httplib::DataSink& sink, const std::string& text) {
    if (text.empty() || sink.write(text.data(), text.size())) return true;
    job.cancel();
    return false;
}

// Writes what the job has produced; false ends the response (the client left).
bool write_stream(Stream& s, httplib::DataSink& sink) {
    auto write = [&](const std::string& text) { return write_to(*s.job, sink, text); };
    if (!s.started) {
        s.started = true;
        if (s.head.chat && !write(sse_event(chunk_json(s.head, nullptr, true, "", nullptr))))
            return false;
    }
    std::vector<Event> events;
    if (!next_events(*s.job, sink, events)) return false;
    for (const Event& ev : events) {
        if (!ev.error.empty()) {
            const ApiError error(500, "server_error", "", "", "generation failed: " + ev.error);
            write(sse_event(error_body(error)));
            sink.done();
            return true;
        }
        if (!ev.text.empty() || !ev.logprobs.empty()) {
            json lp = ev.logprobs.empty()
                          ? json()
                          : logprobs_json(s.head, *s.model->tokenizer, ev.logprobs, s.text_offset);
            s.text_offset += ev.text.size();
            if (!s.reply) {
                if (!write(sse_event(chunk_json(s.head, &ev.text, false, "", lp)))) return false;
            } else if (json delta = s.reply->delta(ev.text, false);
                       !delta.empty() || !lp.is_null()) {
                if (!write(sse_event(chunk_json(s.head, std::move(delta), "", lp)))) return false;
            }
        }
        if (ev.done) {
            const std::string empty;
            std::string reason = ev.finish_reason;
            if (s.reply) {
                if (json delta = s.reply->delta("", true); !delta.empty())
                    if (!write(sse_event(chunk_json(s.head, std::move(delta), "", nullptr))))
                        return false;
                reason = finish_reason_of(reason, s.reply->parts(true));
            }
            if (!write(sse_event(
                    chunk_json(s.head, s.head.chat ? nullptr : &empty, false, reason, nullptr))))
                return false;
            if (s.include_usage && !write(sse_event(usage_chunk_json(s.head, s.job->usage()))))
                return false;
            if (!write("data: [DONE]\n\n")) return false;
            sink.done();
            return true;
        }
    }
    return true;
}

// A reply streamed in another API's events (Anthropic's, the Responses API's),
// as they are written.
struct EventStream {
    std::shared_ptr<Job> job;
    Reply reply;
    std::function<std::string(const JobUsage&)> start;
    std::function<std::string(const ReplyDelta&, const std::vector<std::string>& ids)> add;
    std::function<std::string(const Event& last, const ReplyParts&, const JobUsage&)> finish;
    std::function<std::string(const ApiError&)> error;
    bool started = false;
};

bool write_event_stream(EventStream& s, httplib::DataSink& sink) {
    auto write = [&](const std::string& text) { return write_to(*s.job, sink, text); };
    if (!s.started) {
        s.started = true;
        if (!write(s.start(s.job->usage()))) return false;
    }
    std::vector<Event> events;
    if (!next_events(*s.job, sink, events)) return false;
    for (const Event& ev : events) {
        if (!ev.error.empty()) {
            write(s.error(ApiError(500, "server_error", "", "", "generation failed: " + ev.error)));
            sink.done();
            return true;
        }
        s.reply.parser.push(ev.text);
        const ReplyParts parts = s.reply.parts(ev.done);
        if (!write(s.add(s.reply.sent.next(parts), s.reply.ids))) return false;
        if (ev.done) {
            if (!write(s.finish(ev, parts, s.job->usage()))) return false;
            sink.done();
            return true;
        }
    }
    return true;
}

void send_event_stream(Response& res, std::shared_ptr<EventStream> stream) {
    res.set_header("Cache-Control", "no-cache");
    std::shared_ptr<Job> job = stream->job;
    res.set_chunked_content_provider(
        "text/event-stream",
        [stream](size_t, httplib::DataSink& sink) { return write_event_stream(*stream, sink); },
        [job](bool) { job->cancel(); });
}

// Waits for the whole of a job that is not streamed.
// on_events: called as each batch of events arrives (Ollama times them).
Progress wait_for(Job& job, const std::function<void()>& on_events = {}) {
    Progress p;
    std::vector<Event> events;
    for (bool done = false; !done;) {
        if (!job.wait(events, std::chrono::seconds(1))) continue;
        if (on_events) on_events();
        done = absorb(events, p);
    }
    return p;
}

// A streamed Ollama reply, as its lines are written.
struct OllamaStreamState {
    std::shared_ptr<Job> job;
    OllamaReply lines;
    Reply reply;
    OllamaTimer timer;
};

bool write_ollama_stream(OllamaStreamState& s, httplib::DataSink& sink) {
    auto write = [&](const std::string& text) { return write_to(*s.job, sink, text); };
    std::vector<Event> events;
    if (!next_events(*s.job, sink, events)) return false;
    s.timer.tokens_came();
    for (const Event& ev : events) {
        if (!ev.error.empty()) {
            const ApiError error(500, "server_error", "", "", "generation failed: " + ev.error);
            write(ndjson_line(ollama_error_body(error)));
            sink.done();
            return true;
        }
        s.reply.parser.push(ev.text);
        const ReplyParts parts = s.reply.parts(ev.done);
        if (!write(s.lines.piece(s.reply.sent.next(parts)))) return false;
        if (ev.done) {
            write(s.lines.finish(parts, s.reply.ids, ollama_done_reason(ev.finish_reason),
                                 s.timer.metrics(s.job->usage())));
            sink.done();
            return true;
        }
    }
    return true;
}

}  // namespace

ApiServer::ApiServer(ServerOptions options)
    : options_(std::move(options)), http_(std::make_unique<httplib::Server>()) {
    const int connections = std::max(options_.connections, 1);
    http_->new_task_queue = [connections] { return new httplib::ThreadPool(connections); };
    http_->set_socket_options(exclusive_socket);
    http_->set_payload_max_length(options_.max_body);
    http_->set_read_timeout(options_.timeout_seconds, 0);
    http_->set_write_timeout(options_.timeout_seconds, 0);
    routes();
}

ApiServer::~ApiServer() {
    stop();
}

int ApiServer::bind() {
    errno = 0;
    int port = options_.port;
    if (port == 0)
        port = http_->bind_to_any_port(options_.host);
    else if (!http_->bind_to_port(options_.host, port))
        port = -1;
    if (port < 0) fail("{}:{}: {}", options_.host, options_.port, bind_failure(errno));
    return port;
}

void ApiServer::start() {
    thread_ = std::thread([this] {
        http_->listen_after_bind();
        listen_ended_ = true;
    });
}

void ApiServer::serve(std::shared_ptr<const ServedModel> model) {
    std::lock_guard lock(mutex_);
    model_ = std::move(model);
}

void ApiServer::stop() {
    if (!thread_.joinable()) return;
    // cpp-httplib's stop() does nothing before its accept loop has begun, so a
    // stop that comes first (a model that fails to load at once) waits for it.
    while (!http_->is_running() && !listen_ended_)
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    http_->stop();
    thread_.join();
}

std::shared_ptr<const ServedModel> ApiServer::model() const {
    std::lock_guard lock(mutex_);
    if (!model_) throw ApiError(503, "server_error", "model_loading", "", "the model is loading");
    return model_;
}

void ApiServer::routes() {
    auto handle = [](std::function<void(const Request&, Response&)> fn) {
        return [fn = std::move(fn)](const Request& req, Response& res) {
            answer(
                res, [&] { fn(req, res); }, error_shape_of(req.path));
        };
    };
    // Routes with a body get it whole (read_request_body), not from req.body.
    using BodyHandler = std::function<void(const Request&, Response&, const std::string& body)>;
    auto handle_body = [this](BodyHandler fn) {
        return [this, fn = std::move(fn)](const Request& req, Response& res,
                                          const httplib::ContentReader& reader) {
            answer(
                res, [&] { fn(req, res, read_request_body(req, res, reader, options_.max_body)); },
                error_shape_of(req.path));
        };
    };

    http_->set_default_headers({{"Access-Control-Allow-Origin", "*"}});
    http_->Options(".*", [](const Request&, Response& res) {
        res.set_header("Access-Control-Allow-Headers",
                       "Authorization, Content-Type, x-api-key, anthropic-version");
        res.set_header("Access-Control-Allow-Methods", "GET, POST, OPTIONS");
        res.status = 204;
    });
    // The key guards everything but /health and the page itself (which asks for
    // the key and sends it with its own requests).
    http_->set_pre_routing_handler([this](const Request& req, Response& res) {
        if (options_.api_key.empty() || req.path == "/health" || req.path == "/" ||
            req.method == "OPTIONS")
            return httplib::Server::HandlerResponse::Unhandled;
        const std::string auth = req.get_header_value("Authorization");
        const std::string bearer = "Bearer ";
        if (auth.rfind(bearer, 0) == 0 && same_secret(auth.substr(bearer.size()), options_.api_key))
            return httplib::Server::HandlerResponse::Unhandled;
        // Anthropic's clients send the key so.
        if (req.has_header("x-api-key") &&
            same_secret(req.get_header_value("x-api-key"), options_.api_key))
            return httplib::Server::HandlerResponse::Unhandled;
        send_error(res,
                   ApiError(401, "invalid_request_error", "invalid_api_key", "",
                            "a valid API key is required (Authorization: Bearer KEY or x-api-key)"),
                   error_shape_of(req.path));
        return httplib::Server::HandlerResponse::Handled;
    });
    http_->set_error_handler([](const Request& req, Response& res) {
        if (!res.body.empty()) return;
        if (res.status == 404)
            send_error(res, no_route(req), error_shape_of(req.path));
        else
            send_error(res,
                       ApiError(res.status, "invalid_request_error", "", "",
                                fmt::format("HTTP {}", res.status)),
                       error_shape_of(req.path));
    });

    http_->Get("/health", [this](const Request&, Response& res) {
        std::lock_guard lock(mutex_);
        if (model_ && model_->engine) {
            const EngineLoad load = model_->engine->load();
            send_json(res, 200,
                      {{"status", "ok"},
                       {"slots_idle", model_->engine->slots() - load.processing},
                       {"slots_processing", load.processing},
                       {"requests_waiting", load.waiting}});
        } else if (model_)
            send_json(res, 200, {{"status", "ok"}});
        else
            send_json(res, 503, {{"status", "loading"}});
    });
    // Prometheus' text format, as llama-server's /metrics.
    http_->Get(
        "/metrics", handle([this](const Request&, Response& res) {
            const auto m = model();
            const EngineStats stats = m->engine ? m->engine->stats() : EngineStats{};
            const EngineLoad load = m->engine ? m->engine->load() : EngineLoad{};
            std::string text;
            const auto metric = [&](const char* name, const char* type, const char* help,
                                    double value) {
                text += fmt::format("# HELP anelm:{0} {1}\n# TYPE anelm:{0} {2}\nanelm:{0} {3}\n",
                                    name, help, type, value);
            };
            metric("prompt_tokens_total", "counter", "Prompt tokens processed.",
                   static_cast<double>(stats.prompt_tokens));
            metric("prompt_seconds_total", "counter",
                   "Time of the steps that carried prompt tokens.", stats.prompt_seconds);
            metric("tokens_predicted_total", "counter", "Tokens generated.",
                   static_cast<double>(stats.tokens_predicted));
            metric("decode_tokens_total", "counter", "Tokens generated by steps of decoding alone.",
                   static_cast<double>(stats.decode_tokens));
            metric("decode_seconds_total", "counter", "Time of the steps of decoding alone.",
                   stats.decode_seconds);
            metric("requests_processing", "gauge", "Requests in a slot.", load.processing);
            metric("requests_deferred", "gauge", "Requests waiting for a slot.",
                   static_cast<double>(load.waiting));
            res.set_content(text, "text/plain; version=0.0.4");
        }));
    http_->Get("/", [](const Request&, Response& res) {
        res.set_content(std::string(chat_page_html()), "text/html; charset=utf-8");
    });
    http_->Get("/v1/models", handle([this](const Request&, Response& res) {
                   const auto m = model();
                   const json entry = {{"id", m->name},
                                       {"object", "model"},
                                       {"created", 0},
                                       {"owned_by", "anelm"},
                                       {"meta",
                                        {{"n_ctx", m->engine->n_ctx()},
                                         {"slots", m->engine->slots()},
                                         {"n_vocab", m->tokenizer->n_vocab()}}}};
                   send_json(res, 200, {{"object", "list"}, {"data", json::array({entry})}});
               }));
    http_->Post("/v1/chat/completions",
                handle_body([this](const Request&, Response& res, const std::string& body) {
                    completions(body, res, true);
                }));
    http_->Post("/v1/messages",
                handle_body([this](const Request&, Response& res, const std::string& body) {
                    messages(body, res);
                }));
    http_->Post("/v1/responses",
                handle_body([this](const Request&, Response& res, const std::string& body) {
                    responses(body, res);
                }));
    http_->Post("/v1/completions",
                handle_body([this](const Request&, Response& res, const std::string& body) {
                    completions(body, res, false);
                }));
    http_->Post("/v1/embeddings",
                handle_body([this](const Request&, Response& res, const std::string& body) {
                    send_json(res, 200, openai_embeddings(*model(), parse_body(body)));
                }));
    http_->Post("/api/embed",
                handle_body([this](const Request&, Response& res, const std::string& body) {
                    send_json(res, 200, ollama_embed(*model(), parse_body(body)));
                }));
    http_->Post("/tokenize", handle_body([this](const Request&, Response& res,
                                                const std::string& text) {
                    const auto m = model();
                    const ojson body = parse_body(text);
                    const ojson& content = body_field(body, "content");
                    if (!content.is_string()) bad_field("content", "content: expected a string");
                    const ojson& special = body_field(body, "add_special");
                    if (!special.is_null() && !special.is_boolean())
                        bad_field("add_special", "add_special: expected true or false");
                    const auto ids = m->tokenizer->encode(
                        content.get<std::string>(), special.is_boolean() && special.get<bool>());
                    send_json(res, 200, {{"tokens", ids}});
                }));
    http_->Post(
        "/detokenize", handle_body([this](const Request&, Response& res, const std::string& text) {
            const auto m = model();
            const ojson body = parse_body(text);
            const ojson& tokens = body_field(body, "tokens");
            if (!tokens.is_array()) bad_field("tokens", "tokens: expected an array of ids");
            std::vector<int32_t> ids;
            for (const ojson& t : tokens) {
                if (!t.is_number_integer() || t.get<int64_t>() < 0 ||
                    t.get<int64_t>() >= m->tokenizer->n_vocab())
                    bad_field("tokens", "tokens: {} is not an id of this vocabulary", t.dump());
                ids.push_back(t.get<int32_t>());
            }
            send_json(res, 200, {{"content", m->tokenizer->decode(ids)}});
        }));
    http_->Post("/apply-template",
                handle_body([this](const Request&, Response& res, const std::string& text) {
                    const auto m = model();
                    if (!m->chat_template) bad_field("messages", "this model has no chat template");
                    const CompletionRequest r =
                        parse_completion_request(parse_body(text), true, m->defaults);
                    send_json(res, 200, {{"prompt", chat_prompt(*m->chat_template, r).text}});
                }));
    // Ollama's API. The version is the Ollama release whose API these routes
    // follow, which its clients compare against.
    http_->Get("/api/version", [](const Request&, Response& res) {
        send_json(res, 200, {{"version", "0.9.0"}});
    });
    http_->Get(
        "/api/tags", handle([this](const Request&, Response& res) {
            const auto m = model();
            send_json(res, 200, {{"models", json::array({ollama_model_json(m->name, m->facts)})}});
        }));
    // The model stays loaded while the server runs: it never expires.
    http_->Get("/api/ps", handle([this](const Request&, Response& res) {
                   const auto m = model();
                   json entry = ollama_model_json(m->name, m->facts);
                   entry["expires_at"] = "9999-12-31T23:59:59Z";
                   entry["size_vram"] = 0;
                   entry["context_length"] = m->engine->n_ctx();
                   send_json(res, 200, {{"models", json::array({std::move(entry)})}});
               }));
    http_->Post("/api/show",
                handle_body([this](const Request&, Response& res, const std::string& text) {
                    const auto m = model();
                    check_ollama_model(parse_body(text), m->name);
                    send_json(res, 200,
                              ollama_show_json(m->name, m->facts,
                                               m->chat_template ? m->chat_template->source() : "",
                                               m->engine->n_ctx(), m->defaults));
                }));
    http_->Post("/api/chat",
                handle_body([this](const Request&, Response& res, const std::string& body) {
                    ollama(body, res, true);
                }));
    http_->Post("/api/generate",
                handle_body([this](const Request&, Response& res, const std::string& body) {
                    ollama(body, res, false);
                }));
    // Any other route with a body, after those above: read, so that --max-body
    // alone says 413, then 404.
    const auto elsewhere =
        handle_body([](const Request& req, Response&, const std::string&) { throw no_route(req); });
    http_->Post(".*", elsewhere);
    http_->Put(".*", elsewhere);
    http_->Patch(".*", elsewhere);
    http_->Delete(".*", elsewhere);
}

namespace {

// The job a request asks for; a chat request's prompt is rendered into prompt.
JobSpec job_spec(const ServedModel& m, const CompletionRequest& r, ChatPrompt* prompt) {
    if (!r.model.empty() && r.model != m.name)
        throw ApiError(
            404, "invalid_request_error", "model_not_found", "model",
            fmt::format("model '{}' is not served here (/v1/models lists '{}')", r.model, m.name));
    JobSpec spec;
    if (r.chat) {
        if (!m.chat_template)
            bad_field("messages", "this model has no chat template; use /v1/completions");
        *prompt = chat_prompt(*m.chat_template, r);
        spec.prompt = m.tokenizer->encode(prompt->text, false);
        if (r.tools.forced()) {
            if (r.format != OutputFormat::text)
                bad_field("response_format",
                          "response_format: not with a forced tool call (tool_choice {})",
                          r.tools.choice == ToolChoice::named ? "naming a function" : "required");
            if (!m.constraint)
                bad_field("tool_choice", "tool_choice: forced calls are not available");
            CompletionRequest call = r;
            call.format = OutputFormat::json_schema;
            call.schema = prompt->call_schema;
            call.schema_param = "tools";
            spec.constraint = m.constraint(call);
        }
    } else if (r.prompt_is_ids) {
        for (int32_t id : r.prompt_ids)
            if (id >= m.tokenizer->n_vocab())
                bad_field("prompt", "prompt: {} is not an id of this vocabulary", id);
        spec.prompt = r.prompt_ids;
    } else {
        spec.prompt = m.tokenizer->encode(r.prompt, true);
    }
    spec.max_tokens = r.max_tokens;
    spec.sampler = r.sampler;
    if (!r.seed_given && !m.fixed_seed) spec.sampler.seed = random_seed();
    spec.stop = r.stop;
    spec.logprobs = r.logprobs;
    spec.top_logprobs = r.top_logprobs;
    if (r.format != OutputFormat::text) {
        if (!m.constraint)
            bad_field("response_format", "response_format: structured output is not available");
        spec.constraint = m.constraint(r);
    }
    return spec;
}

}  // namespace

void ApiServer::completions(const std::string& body, Response& res, bool chat) {
    const auto m = model();
    const CompletionRequest r = parse_completion_request(parse_body(body), chat, m->defaults);
    ChatPrompt prompt;
    JobSpec spec = job_spec(*m, r, &prompt);
    std::unique_ptr<Reply> reply;
    if (chat && (prompt.format || prompt.tags.active()))
        reply = std::make_unique<Reply>(prompt.parser(r.tools));
    const ResponseHead head = new_response_head(chat, m->name);
    std::shared_ptr<Job> job = m->engine->submit(std::move(spec));

    if (r.stream) {
        auto stream = std::make_shared<Stream>();
        stream->job = job;
        stream->model = m;
        stream->head = head;
        stream->include_usage = r.include_usage;
        stream->reply = std::move(reply);
        res.set_header("Cache-Control", "no-cache");
        res.set_chunked_content_provider(
            "text/event-stream",
            [stream](size_t, httplib::DataSink& sink) { return write_stream(*stream, sink); },
            [job](bool) { job->cancel(); });
        return;
    }
    const Progress p = wait_for(*job);
    const json lp = r.logprobs ? logprobs_json(head, *m->tokenizer, p.logprobs, 0) : json();
    if (!reply) {
        send_json(res, 200, completion_json(head, p.text, p.finish_reason, job->usage(), lp));
        return;
    }
    reply->parser.push(p.text);
    const ReplyParts parts = reply->parts(true);
    send_json(res, 200,
              completion_json(head, chat_message_json(parts, reply->ids),
                              finish_reason_of(p.finish_reason, parts), job->usage(), lp));
}

void ApiServer::messages(const std::string& body, Response& res) {
    const auto m = model();
    const CompletionRequest r = parse_messages_request(parse_body(body), m->defaults);
    ChatPrompt prompt;
    JobSpec spec = job_spec(*m, r, &prompt);
    const std::string id = "msg_" + random_id();
    std::shared_ptr<Job> job = m->engine->submit(std::move(spec));
    if (r.stream) {
        auto events = std::make_shared<MessageStream>(id, m->name);
        send_event_stream(
            res, std::make_shared<EventStream>(EventStream{
                     job, Reply(prompt.parser(r.tools), new_tool_use_id),
                     [events](const JobUsage& usage) { return events->start(usage); },
                     [events](const ReplyDelta& d, const std::vector<std::string>& ids) {
                         return events->add(d, ids);
                     },
                     [events](const Event& last, const ReplyParts& parts, const JobUsage& usage) {
                         return events->finish(
                             stop_reason(last.finish_reason, last.stop_sequence, parts),
                             last.stop_sequence, usage);
                     },
                     [](const ApiError& e) { return message_event(messages_error_body(e)); }}));
        return;
    }
    const Progress p = wait_for(*job);
    Reply reply(prompt.parser(r.tools), new_tool_use_id);
    reply.parser.push(p.text);
    const ReplyParts parts = reply.parts(true);
    send_json(res, 200,
              message_json(id, m->name, parts, reply.ids,
                           stop_reason(p.finish_reason, p.stop_sequence, parts), p.stop_sequence,
                           job->usage()));
}

void ApiServer::responses(const std::string& body, Response& res) {
    const auto m = model();
    const ojson request = parse_body(body);
    const CompletionRequest r = parse_responses_request(request, m->defaults);
    ChatPrompt prompt;
    JobSpec spec = job_spec(*m, r, &prompt);
    const ResponseMeta meta = new_response_meta(request, m->name);
    std::shared_ptr<Job> job = m->engine->submit(std::move(spec));
    if (r.stream) {
        auto events = std::make_shared<ResponseStream>(meta);
        send_event_stream(
            res, std::make_shared<EventStream>(EventStream{
                     job, Reply(prompt.parser(r.tools)),
                     [events](const JobUsage&) { return events->start(); },
                     [events](const ReplyDelta& d, const std::vector<std::string>& ids) {
                         return events->add(d, ids);
                     },
                     [events](const Event& last, const ReplyParts&, const JobUsage& usage) {
                         return events->finish(last.finish_reason, usage);
                     },
                     [events](const ApiError& e) { return events->error(e); }}));
        return;
    }
    const Progress p = wait_for(*job);
    Reply reply(prompt.parser(r.tools));
    reply.parser.push(p.text);
    const std::string status = response_status(p.finish_reason);
    const JobUsage usage = job->usage();
    send_json(
        res, 200,
        response_json(meta, status, output_items(reply.parts(true), reply.ids, status), &usage));
}

void ApiServer::ollama(const std::string& body, Response& res, bool chat) {
    OllamaTimer timer;
    const auto m = model();
    const ojson given = parse_body(body);
    check_ollama_model(given, m->name);
    const OllamaRequest o = chat ? ollama_chat_request(given)
                                 : ollama_generate_request(given, m->chat_template != nullptr);
    OllamaReply lines(m->name, chat);
    if (o.load_only) return send_json(res, 200, lines.whole({}, {}, "load", json::object()));
    const CompletionRequest r = parse_completion_request(o.body, o.chat, m->defaults);
    ChatPrompt prompt;
    JobSpec spec = job_spec(*m, r, &prompt);
    std::shared_ptr<Job> job = m->engine->submit(std::move(spec));
    if (r.stream) {
        auto stream = std::make_shared<OllamaStreamState>(
            OllamaStreamState{job, std::move(lines), Reply(prompt.parser(r.tools)), timer});
        res.set_chunked_content_provider(
            "application/x-ndjson",
            [stream](size_t, httplib::DataSink& sink) {
                return write_ollama_stream(*stream, sink);
            },
            [job](bool) { job->cancel(); });
        return;
    }
    const Progress p = wait_for(*job, [&] { timer.tokens_came(); });
    Reply reply(prompt.parser(r.tools));
    reply.parser.push(p.text);
    send_json(res, 200,
              lines.whole(reply.parts(true), reply.ids, ollama_done_reason(p.finish_reason),
                          timer.metrics(job->usage())));
}

}  // namespace anelm::server
