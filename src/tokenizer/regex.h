// Pre-tokenizer regexes as Hugging Face's tokenizers runs them (Oniguruma), on
// PCRE2 with UTF and UCP. PCRE2's Unicode \s also matches U+180E, which
// Oniguruma's does not, so \s and \S are rewritten to the White_Space property.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace anelm {

class Regex {
public:
    // where names the file and field for the error thrown on a bad pattern.
    Regex(std::string_view pattern, const std::string& where);
    ~Regex();
    Regex(const Regex&) = delete;
    Regex& operator=(const Regex&) = delete;

    // Calls on_match(begin, end) for each leftmost non-overlapping match in text,
    // which must be valid UTF-8. An empty match advances by one character.
    void find_all(std::string_view text, const std::function<void(size_t, size_t)>& on_match) const;

private:
    struct Impl;
    std::unique_ptr<Impl> impl_;
    std::string where_;
};

// The pattern with \s and \S replaced by \p{White_Space} and \P{White_Space}.
std::string rewrite_whitespace_classes(std::string_view pattern);

// A pattern matching text literally.
std::string escape_regex(std::string_view text);

}  // namespace anelm

namespace anelm {

// text with every match of pattern replaced by content.
std::string replace_all(const Regex& pattern, std::string_view text, std::string_view content);

}  // namespace anelm
