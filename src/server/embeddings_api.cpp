#include "server/embeddings_api.h"

#include <bit>
#include <chrono>
#include <cstdint>

#include "runtime/embedder.h"
#include "server/api_error.h"
#include "server/completion_request.h"

namespace anelm::server {

namespace {

using ojson = nlohmann::ordered_json;
using json = nlohmann::json;

std::vector<int32_t> token_ids(const ojson& ids, int64_t n_vocab) {
    std::vector<int32_t> out;
    for (const ojson& id : ids) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 || id.get<int64_t>() >= n_vocab)
            bad_field("input", "input: {} is not a token id of this vocabulary", id.dump());
        out.push_back(id.get<int32_t>());
    }
    return out;
}

// A string or strings into texts, or (with ids_allowed) ids or arrays of them into ids.
void read_inputs(const ojson& input, int64_t n_vocab, bool ids_allowed, EmbeddingRequest& r) {
    const char* expected = ids_allowed
                               ? "input: expected a string, an array of strings, an array of "
                                 "token ids or an array of arrays of them"
                               : "input: expected a string or an array of strings";
    if (input.is_string()) {
        r.texts.push_back(input.get<std::string>());
        return;
    }
    if (!input.is_array() || input.empty()) bad_field("input", "{}", expected);
    if (ids_allowed && input.front().is_number()) {
        r.ids.push_back(token_ids(input, n_vocab));
        return;
    }
    const bool texts = input.front().is_string();
    for (const ojson& item : input) {
        if (texts && item.is_string())
            r.texts.push_back(item.get<std::string>());
        else if (!texts && ids_allowed && item.is_array())
            r.ids.push_back(token_ids(item, n_vocab));
        else
            bad_field("input", "{}", expected);
    }
}

std::vector<std::vector<int32_t>> tokens_of(EmbeddingRequest& r, const Tokenizer& tokenizer) {
    if (!r.ids.empty()) return std::move(r.ids);
    std::vector<std::vector<int32_t>> out;
    for (const std::string& text : r.texts) out.push_back(tokenizer.encode(text, true));
    return out;
}

int64_t count_tokens(const std::vector<std::vector<int32_t>>& inputs) {
    int64_t n = 0;
    for (const auto& v : inputs) n += static_cast<int64_t>(v.size());
    return n;
}

const char base64_digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

// The vector's f32 values, little-endian, in base64 as OpenAI's clients decode it.
std::string base64_floats(const std::vector<float>& v) {
    std::vector<uint8_t> bytes;
    for (float x : v) {
        const auto bits = std::bit_cast<uint32_t>(x);
        for (int b = 0; b < 4; ++b) bytes.push_back(static_cast<uint8_t>(bits >> (8 * b)));
    }
    std::string out;
    for (size_t i = 0; i < bytes.size(); i += 3) {
        const size_t n = std::min<size_t>(3, bytes.size() - i);
        uint32_t group = 0;
        for (size_t k = 0; k < 3; ++k) group = group << 8 | (k < n ? bytes[i + k] : 0);
        for (size_t k = 0; k < 4; ++k)
            out += k <= n ? base64_digits[(group >> (18 - 6 * k)) & 63] : '=';
    }
    return out;
}

}  // namespace

EmbeddingRequest parse_embedding_request(const ojson& body, int64_t n_vocab, int64_t dims) {
    EmbeddingRequest r;
    read_inputs(body_field(body, "input"), n_vocab, true, r);
    const ojson& format = body_field(body, "encoding_format");
    if (!format.is_null() && format != "float" && format != "base64")
        bad_field("encoding_format", "encoding_format: expected float or base64");
    r.base64 = format == "base64";
    const ojson& dimensions = body_field(body, "dimensions");
    if (!dimensions.is_null()) {
        if (!dimensions.is_number_integer() || dimensions.get<int64_t>() < 1 ||
            dimensions.get<int64_t>() > dims)
            bad_field("dimensions", "dimensions: expected 1 to {}, this model's vector length",
                      dims);
        r.dimensions = dimensions.get<int64_t>();
    }
    return r;
}

EmbeddingRequest parse_ollama_embed_request(const ojson& body) {
    EmbeddingRequest r;
    read_inputs(body_field(body, "input"), 0, false, r);
    const ojson& truncate = body_field(body, "truncate");
    if (!truncate.is_null() && !truncate.is_boolean())
        bad_field("truncate", "truncate: expected true or false");
    r.truncate = !truncate.is_boolean() || truncate.get<bool>();
    return r;
}

json openai_embeddings(const ServedModel& model, const ojson& body) {
    const int64_t dims = model.engine->embedding_dims();
    EmbeddingRequest r = parse_embedding_request(body, model.tokenizer->n_vocab(), dims);
    std::vector<std::vector<int32_t>> inputs = tokens_of(r, *model.tokenizer);
    const int64_t n_tokens = count_tokens(inputs);
    std::vector<std::vector<float>> vectors = model.engine->embed(std::move(inputs));
    json data = json::array();
    for (size_t i = 0; i < vectors.size(); ++i) {
        std::vector<float>& v = vectors[i];
        if (r.dimensions > 0 && r.dimensions < dims) {
            v.resize(static_cast<size_t>(r.dimensions));
            l2_normalize(v);
        }
        data.push_back({{"object", "embedding"},
                        {"index", i},
                        {"embedding", r.base64 ? json(base64_floats(v)) : json(v)}});
    }
    return {{"object", "list"},
            {"data", std::move(data)},
            {"model", model.name},
            {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}};
}

json ollama_embed(const ServedModel& model, const ojson& body) {
    const auto began = std::chrono::steady_clock::now();
    EmbeddingRequest r = parse_ollama_embed_request(body);
    std::vector<std::vector<int32_t>> inputs = tokens_of(r, *model.tokenizer);
    if (r.truncate)
        for (auto& v : inputs)
            if (static_cast<int64_t>(v.size()) > model.engine->n_ctx())
                v.resize(static_cast<size_t>(model.engine->n_ctx()));
    const int64_t n_tokens = count_tokens(inputs);
    const std::vector<std::vector<float>> vectors = model.engine->embed(std::move(inputs));
    const auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now() - began)
                        .count();
    return {{"model", model.name},
            {"embeddings", vectors},
            {"total_duration", ns},
            {"load_duration", 0},
            {"prompt_eval_count", n_tokens}};
}

}  // namespace anelm::server
