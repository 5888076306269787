// Stop strings in generated text: text that could still be the start of a stop
// string is held back, so one split across tokens is found and never emitted.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace anelm::server {

class StopText {
public:
    explicit StopText(std::vector<std::string> stops) : stops_(std::move(stops)) {}

    // Appends text (whole UTF-8 characters); returns what may be shown now:
    // everything before a stop string once one is complete (then stopped()).
    std::string push(std::string_view text);
    // What is still held back, at the end of a generation that did not stop.
    std::string flush();
    bool stopped() const { return stopped_; }
    // The stop string that ended the text, "" before one has.
    const std::string& matched() const { return matched_; }

private:
    std::vector<std::string> stops_;
    std::string pending_;
    bool stopped_ = false;
    std::string matched_;
};

}  // namespace anelm::server
