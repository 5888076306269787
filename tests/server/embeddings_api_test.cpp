// The fields of /v1/embeddings and /api/embed requests and their 400s.
#include "server/embeddings_api.h"

#include <gtest/gtest.h>

#include "server/api_error.h"

namespace anelm::server {
namespace {

using ojson = nlohmann::ordered_json;

EmbeddingRequest openai(const char* body) {
    return parse_embedding_request(ojson::parse(body), 100, 64);
}

std::string bad_param(const char* body, bool ollama = false) {
    try {
        if (ollama)
            parse_ollama_embed_request(ojson::parse(body));
        else
            openai(body);
    } catch (const ApiError& e) {
        EXPECT_EQ(e.status, 400);
        return e.param;
    }
    return "accepted";
}

TEST(EmbeddingRequest, TakesEveryInputShapeOfOpenAI) {
    EXPECT_EQ(openai(R"({"input": "a cat"})").texts, std::vector<std::string>{"a cat"});
    EXPECT_EQ(openai(R"({"input": ["a", "b"]})").texts, (std::vector<std::string>{"a", "b"}));
    EXPECT_EQ(openai(R"({"input": [1, 2, 3]})").ids,
              (std::vector<std::vector<int32_t>>{{1, 2, 3}}));
    EXPECT_EQ(openai(R"({"input": [[1], [2, 3]]})").ids,
              (std::vector<std::vector<int32_t>>{{1}, {2, 3}}));
    const EmbeddingRequest r =
        openai(R"({"input": "x", "encoding_format": "base64", "dimensions": 32})");
    EXPECT_TRUE(r.base64);
    EXPECT_EQ(r.dimensions, 32);
}

TEST(EmbeddingRequest, RefusesWhatOpenAIDoesNotDefine) {
    EXPECT_EQ(bad_param(R"({})"), "input");
    EXPECT_EQ(bad_param(R"({"input": []})"), "input");
    EXPECT_EQ(bad_param(R"({"input": ["a", [1]]})"), "input");
    EXPECT_EQ(bad_param(R"({"input": [100]})"), "input");  // past n_vocab
    EXPECT_EQ(bad_param(R"({"input": [-1]})"), "input");
    EXPECT_EQ(bad_param(R"({"input": "x", "encoding_format": "int8"})"), "encoding_format");
    EXPECT_EQ(bad_param(R"({"input": "x", "dimensions": 65})"), "dimensions");
    EXPECT_EQ(bad_param(R"({"input": "x", "dimensions": 0})"), "dimensions");
}

TEST(EmbeddingRequest, OllamaTakesTextsAndTruncate) {
    const EmbeddingRequest r = parse_ollama_embed_request(ojson::parse(R"({"input": ["a", "b"]})"));
    EXPECT_EQ(r.texts.size(), 2u);
    EXPECT_TRUE(r.truncate);
    EXPECT_FALSE(
        parse_ollama_embed_request(ojson::parse(R"({"input": "a", "truncate": false})")).truncate);
    EXPECT_EQ(bad_param(R"({"input": [1, 2]})", true), "input");
    EXPECT_EQ(bad_param(R"({"input": "a", "truncate": "yes"})", true), "truncate");
}

}  // namespace
}  // namespace anelm::server
