#include "server/json_constraint.h"

#include "base/error.h"
#include "server/api_error.h"

namespace anelm::server {

namespace {

class JsonConstraint : public Constraint {
public:
    JsonConstraint(const grammar::TokenFilter& filter, const grammar::Grammar& grammar)
        : filter_(filter), matcher_(grammar) {}
    void mask(std::span<float> logits) override { filter_.apply(matcher_, logits); }
    void accept(int32_t token) override { filter_.advance(matcher_, token); }
    bool finished() const override { return matcher_.finished(); }

private:
    const grammar::TokenFilter& filter_;
    grammar::Matcher matcher_;
};

}  // namespace

std::unique_ptr<Constraint> JsonConstraints::make(const CompletionRequest& request) const {
    if (request.format == OutputFormat::json_object)
        return std::make_unique<JsonConstraint>(filter_, grammar::Grammar::any_object());
    const std::string& where = request.schema_param;
    try {
        return std::make_unique<JsonConstraint>(
            filter_, grammar::Grammar::from_json_schema(request.schema, where));
    } catch (const Error& e) {
        throw ApiError(400, "invalid_request_error", "", where, e.what());
    }
}

}  // namespace anelm::server
