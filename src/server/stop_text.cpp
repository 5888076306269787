#include "server/stop_text.h"

#include <algorithm>

namespace anelm::server {

std::string StopText::push(std::string_view text) {
    if (stopped_) return {};
    pending_ += text;
    size_t first = std::string::npos;
    for (const std::string& s : stops_)
        if (const size_t at = pending_.find(s); at < first) {
            first = at;
            matched_ = s;
        }
    if (first != std::string::npos) {
        stopped_ = true;
        std::string out = pending_.substr(0, first);
        pending_.clear();
        return out;
    }
    // The longest tail of pending_ that begins some stop string stays.
    size_t hold = 0;
    for (const std::string& s : stops_)
        for (size_t k = std::min(s.size() - 1, pending_.size()); k > hold; --k)
            if (std::string_view(pending_).substr(pending_.size() - k) ==
                std::string_view(s).substr(0, k)) {
                hold = k;
                break;
            }
    std::string out = pending_.substr(0, pending_.size() - hold);
    pending_.erase(0, pending_.size() - hold);
    return out;
}

std::string StopText::flush() {
    std::string out;
    out.swap(pending_);
    return stopped_ ? std::string() : out;
}

}  // namespace anelm::server
