// The HTTP side before and after its model is ready: /health says 503 while
// loading and 200 after; the other routes answer 503 with an OpenAI-style
// error until then; the page at / is there from the start.
#include <gtest/gtest.h>
#include <httplib.h>

#include <thread>

#include "server/api_server.h"

namespace anelm::server {
namespace {

TEST(ApiServer, SaysLoadingUntilItServes) {
    ServerOptions options;
    options.port = 0;
    ApiServer api(options);
    const int port = api.bind();
    std::thread http([&] { api.run(); });
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
    http.join();
}

}  // namespace
}  // namespace anelm::server
