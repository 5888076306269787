#include "server/request_body.h"

#include <httplib.h>

#include "server/api_error.h"

namespace anelm::server {

std::string read_request_body(const httplib::Request& req, httplib::Response& res,
                              const httplib::ContentReader& reader, size_t max_body) {
    // A body left partly unread would be taken for the next request on the connection.
    const auto refuse = [&](const ApiError& error) {
        res.set_header("Connection", "close");
        throw error;
    };
    if (req.is_multipart_form_data())
        refuse(ApiError(400, "invalid_request_error", "", "",
                        "the body is multipart/form-data; send the JSON itself "
                        "(curl -d @body.json, not -F)"));
    std::string body;
    bool too_large = false;
    const bool read = reader([&](const char* data, size_t n) {
        too_large = n > max_body - body.size();
        if (!too_large) body.append(data, n);
        return !too_large;
    });
    // cpp-httplib says 413 itself for a declared length past its payload limit,
    // which is max_body too (the body is then skipped, not held).
    if (too_large || res.status == 413)
        refuse(ApiError(413, "invalid_request_error", "request_too_large", "",
                        "the request body is larger than --max-body"));
    if (!read)
        refuse(ApiError(400, "invalid_request_error", "", "",
                        "the request body could not be read (cut short or badly chunked)"));
    return body;
}

}  // namespace anelm::server
