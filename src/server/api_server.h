// The HTTP side of `anelm serve`: OpenAI's routes (chat and text completions,
// responses, models), Anthropic's messages, Ollama's /api routes, llama-server's helpers
// (health, tokenize, detokenize, apply-template) and the chat page, over cpp-httplib.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "chat/chat_template.h"
#include "server/completion_request.h"
#include "server/engine.h"
#include "server/model_facts.h"
#include "tokenizer/tokenizer.h"

namespace httplib {
class Server;
struct Request;
struct Response;
}  // namespace httplib

namespace anelm::server {

// A loaded model, ready to serve.
struct ServedModel {
    std::string name;  // the id /v1/models lists and requests may name
    const Tokenizer* tokenizer = nullptr;
    const ChatTemplate* chat_template = nullptr;  // null: chat completions refused
    Engine* engine = nullptr;
    SamplerParams defaults;  // fields a request leaves out
    // A request naming no seed draws its own unless the server was given one
    // (then defaults.seed, the same for every such request).
    bool fixed_seed = false;
    // The constraint a response_format asks for (throws ApiError for a bad schema).
    std::function<std::unique_ptr<Constraint>(const CompletionRequest&)> constraint;
    ModelFacts facts;
};

struct ServerOptions {
    std::string host = "127.0.0.1";
    int port = 8080;
    std::string api_key;  // "": none required
    size_t max_body = size_t{1} << 20;
    int timeout_seconds = 600;  // a socket read or write that stalls this long ends
    // Connections served at once, a thread each (beyond them, they queue): room
    // for 64 streaming clients with /health and the page still answered.
    int connections = 128;
};

class ApiServer {
public:
    explicit ApiServer(ServerOptions options);
    ~ApiServer();  // stops

    // Binds the socket, which no other may share; returns the port (the one
    // chosen when options.port is 0). Throws naming host:port and why not.
    int bind();
    // Answers requests on a thread of its own until stop(); /health says 503
    // until serve() is called.
    void start();
    void serve(std::shared_ptr<const ServedModel> model);
    // Stops answering and waits for the thread, also when called at once after start().
    void stop();

private:
    void routes();
    std::shared_ptr<const ServedModel> model() const;
    void completions(const std::string& body, httplib::Response& res, bool chat);
    // Anthropic's /v1/messages.
    void messages(const std::string& body, httplib::Response& res);
    // OpenAI's /v1/responses, stateless.
    void responses(const std::string& body, httplib::Response& res);
    // Ollama's /api/chat (chat) and /api/generate.
    void ollama(const std::string& body, httplib::Response& res, bool chat);

    ServerOptions options_;
    std::unique_ptr<httplib::Server> http_;
    mutable std::mutex mutex_;
    std::shared_ptr<const ServedModel> model_;
    std::thread thread_;
    std::atomic<bool> listen_ended_ = false;
};

}  // namespace anelm::server
