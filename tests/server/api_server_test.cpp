// The HTTP side before and after its model is ready: /health says 503 while
// loading and 200 after; the other routes answer 503 with an OpenAI-style
// error until then; the page at / is there from the start. Its port is its
// own, it stops however soon it is stopped, and it reads a body of any type up
// to max_body.
#include <gtest/gtest.h>
#include <httplib.h>

#include "base/error.h"
#include "server/api_server.h"

namespace anelm::server {
namespace {

ServerOptions any_port() {
    ServerOptions options;
    options.port = 0;
    return options;
}

TEST(ApiServer, SaysLoadingUntilItServes) {
    ApiServer api(any_port());
    const int port = api.bind();
    api.start();
    httplib::Client client("127.0.0.1", port);

    auto health = client.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 503);
    auto models = client.Get("/v1/models");
    ASSERT_TRUE(models);
    EXPECT_EQ(models->status, 503);
    const auto error = nlohmann::json::parse(models->body);
    EXPECT_EQ(error["error"]["code"], "model_loading");
    auto chat = client.Post("/v1/chat/completions", R"({"messages":[]})", "application/json");
    ASSERT_TRUE(chat);
    EXPECT_EQ(chat->status, 503);
    auto page = client.Get("/");
    ASSERT_TRUE(page);
    EXPECT_EQ(page->status, 200);
    EXPECT_NE(page->body.find("<html"), std::string::npos);

    api.serve(std::make_shared<ServedModel>());
    health = client.Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 200);
    api.stop();
}

TEST(ApiServer, RefusesAPortAnotherHolds) {
    ApiServer first(any_port());
    const int port = first.bind();
    first.start();
    ServerOptions options;
    options.port = port;
    ApiServer second(options);
    try {
        second.bind();
        ADD_FAILURE() << "a second server bound port " << port;
    } catch (const Error& e) {
        EXPECT_EQ(std::string(e.what()), fmt::format("127.0.0.1:{}: address already in use", port));
    }
    auto health = httplib::Client("127.0.0.1", port).Get("/health");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->status, 503);
}

// A model that fails to load stops the server before its thread has begun to listen.
TEST(ApiServer, StopsRightAfterStart) {
    for (int i = 0; i < 20; ++i) {
        ApiServer api(any_port());
        api.bind();
        api.start();
        api.stop();
    }
}

TEST(ApiServer, ReadsABodyOfAnyTypeUpToMaxBody) {
    ServerOptions options = any_port();
    options.max_body = 32768;
    ApiServer api(options);
    const int port = api.bind();
    api.start();
    httplib::Client client("127.0.0.1", port);
    // What `curl -d @body.json` sends: read whole, so the loading model answers.
    const std::string body = "{" + std::string(20000, ' ') + R"("messages":[]})";
    auto r = client.Post("/v1/chat/completions", body, "application/x-www-form-urlencoded");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 503) << r->body;
    r = client.Post("/v1/nowhere", body, "application/x-www-form-urlencoded");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 404) << r->body;

    const std::string big(options.max_body + 1, ' ');
    r = client.Post("/v1/completions", big, "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
    EXPECT_EQ(nlohmann::json::parse(r->body)["error"]["code"], "request_too_large");
    // Chunked, with no length declared up front.
    httplib::Client chunked("127.0.0.1", port);
    r = chunked.Post(
        "/v1/completions",
        [&](size_t offset, httplib::DataSink& sink) {
            if (offset < big.size())
                return sink.write(big.data() + offset, std::min<size_t>(4096, big.size() - offset));
            sink.done();
            return true;
        },
        "application/json");
    ASSERT_TRUE(r);
    EXPECT_EQ(r->status, 413);
}

}  // namespace
}  // namespace anelm::server
