#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

namespace anelm {

namespace {

constexpr size_t max_held = 8;

// What text adds after prefix. Only invalid bytes (decoded as U+FFFD
// differently once more ids arrive) can make text not start with prefix; then
// the new part is cut at a character boundary.
std::string added_text(const std::string& text, const std::string& prefix) {
    if (text.size() <= prefix.size()) return {};
    if (text.compare(0, prefix.size(), prefix) == 0) return text.substr(prefix.size());
    return utf8::repair(std::string_view(text).substr(prefix.size()));
}

}  // namespace

std::string StreamDecoder::push(int32_t id) {
    ids_.push_back(id);
    const std::string text = tokenizer_.decode_window(ids_, at_start_, true);
    if (utf8::truncated_tail(text) > 0) {
        if (ids_.size() - emitted_ < max_held) return {};
        // A character has at most 4 bytes: ids that keep one open longer are
        // garbage, printed as U+FFFD rather than held (and re-decoded) forever.
        // The next piece starts afresh.
        std::string piece =
            added_text(tokenizer_.decode_window(ids_, at_start_, false), emitted_text_);
        ids_.clear();
        emitted_ = 0;
        emitted_text_.clear();
        at_start_ = false;
        return piece;
    }
    std::string piece = added_text(text, emitted_text_);
    // The ids just printed become the context of the next piece.
    if (emitted_ > 0) {
        ids_.erase(ids_.begin(), ids_.begin() + static_cast<ptrdiff_t>(emitted_));
        at_start_ = false;
    }
    emitted_ = ids_.size();
    emitted_text_ = tokenizer_.decode_window(ids_, at_start_, true);
    return piece;
}

std::string StreamDecoder::flush() {
    std::string piece;
    if (ids_.size() > emitted_)
        piece = added_text(tokenizer_.decode_window(ids_, at_start_, false), emitted_text_);
    ids_.clear();
    emitted_ = 0;
    emitted_text_.clear();
    at_start_ = true;
    return piece;
}

}  // namespace anelm
