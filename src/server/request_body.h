// The body of a request with one, read as sent. Every route takes JSON whatever
// the Content-Type says (`curl -d @body.json` sends
// application/x-www-form-urlencoded), so the body is read raw: cpp-httplib's
// own reading parses such a body as a form and refuses one past 8 KiB, and
// bounds neither a chunked body nor one without a length.
#pragma once

#include <cstddef>
#include <string>

namespace httplib {
class ContentReader;
struct Request;
struct Response;
}  // namespace httplib

namespace anelm::server {

// Throws ApiError: 413 past max_body bytes (declared, chunked or neither), 400
// for a body cut short, badly chunked or multipart.
std::string read_request_body(const httplib::Request& req, httplib::Response& res,
                              const httplib::ContentReader& reader, size_t max_body);

}  // namespace anelm::server
