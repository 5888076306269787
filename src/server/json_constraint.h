// Structured output: response_format's JSON schema (or any JSON object) as a
// Constraint, so every token generated keeps the text a prefix of a document
// that parses and validates.
#pragma once

#include <memory>
#include <span>

#include "grammar/token_filter.h"
#include "server/completion_request.h"
#include "server/engine.h"

namespace anelm::server {

class JsonConstraints {
public:
    // Indexes the vocabulary once; stop ids may end a complete document.
    JsonConstraints(const Tokenizer& tokenizer, std::span<const int32_t> stop_ids)
        : filter_(tokenizer, stop_ids) {}
    // The constraint a request's response_format asks for; ApiError (400) for
    // a schema the grammar cannot take.
    std::unique_ptr<Constraint> make(const CompletionRequest& request) const;

private:
    grammar::TokenFilter filter_;
};

}  // namespace anelm::server
