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

std::vector<int32_t> token_ids(const ojson& ids, const Tokenizer& tokenizer) {
    std::vector<int32_t> out;
    for (const ojson& id : ids) {
        if (!id.is_number_integer() || id.get<int64_t>() < 0 ||
            id.get<int64_t>() >= tokenizer.n_vocab())
            bad_field("input", "input: {} is not a token id of this vocabulary", id.dump());
        out.push_back(id.get<int32_t>());
    }
    return out;
}

// The inputs' tokens: a string, strings, or (OpenAI only) ids or arrays of ids.
std::vector<std::vector<int32_t>> read_inputs(const ojson& input, const Tokenizer& tokenizer,
                                              bool ids_allowed) {
    const char* expected = ids_allowed
                               ? "input: expected a string, an array of strings, an array of "
                                 "token ids or an array of arrays of them"
                               : "input: expected a string or an array of strings";
    if (input.is_string()) return {tokenizer.encode(input.get<std::string>(), true)};
    if (!input.is_array() || input.empty()) bad_field("input", "{}", expected);
    if (ids_allowed && input.front().is_number()) return {token_ids(input, tokenizer)};
    std::vector<std::vector<int32_t>> out;
    for (const ojson& item : input) {
        if (item.is_string())
            out.push_back(tokenizer.encode(item.get<std::string>(), true));
        else if (ids_allowed && item.is_array())
            out.push_back(token_ids(item, tokenizer));
        else
            bad_field("input", "{}", expected);
    }
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

json openai_embeddings(const ServedModel& model, const ojson& body) {
    std::vector<std::vector<int32_t>> inputs =
        read_inputs(body_field(body, "input"), *model.tokenizer, true);
    const ojson& format = body_field(body, "encoding_format");
    if (!format.is_null() && format != "float" && format != "base64")
        bad_field("encoding_format", "encoding_format: expected float or base64");
    const bool base64 = format == "base64";
    const int64_t dims = model.engine->embedding_dims();
    int64_t keep = dims;
    const ojson& dimensions = body_field(body, "dimensions");
    if (!dimensions.is_null()) {
        if (!dimensions.is_number_integer() || dimensions.get<int64_t>() < 1 ||
            dimensions.get<int64_t>() > dims)
            bad_field("dimensions", "dimensions: expected 1 to {}, this model's vector length",
                      dims);
        keep = dimensions.get<int64_t>();
    }
    const int64_t n_tokens = count_tokens(inputs);
    std::vector<std::vector<float>> vectors = model.engine->embed(std::move(inputs));
    json data = json::array();
    for (size_t i = 0; i < vectors.size(); ++i) {
        std::vector<float>& v = vectors[i];
        if (keep < dims) {
            v.resize(static_cast<size_t>(keep));
            l2_normalize(v);
        }
        data.push_back({{"object", "embedding"},
                        {"index", i},
                        {"embedding", base64 ? json(base64_floats(v)) : json(v)}});
    }
    return {{"object", "list"},
            {"data", std::move(data)},
            {"model", model.name},
            {"usage", {{"prompt_tokens", n_tokens}, {"total_tokens", n_tokens}}}};
}

json ollama_embed(const ServedModel& model, const ojson& body) {
    const auto began = std::chrono::steady_clock::now();
    std::vector<std::vector<int32_t>> inputs =
        read_inputs(body_field(body, "input"), *model.tokenizer, false);
    const ojson& truncate = body_field(body, "truncate");
    if (!truncate.is_null() && !truncate.is_boolean())
        bad_field("truncate", "truncate: expected true or false");
    if (truncate.is_null() || truncate.get<bool>())
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
