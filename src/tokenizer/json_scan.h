// A forward-only JSON reader for the big arrays of tokenizer.json (a vocabulary
// of 262k strings and 515k merges): parsing them into a DOM takes most of a
// second, scanning them takes a fraction of that. Anything else can be skipped
// as raw text and handed to nlohmann::json.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace anelm {

class JsonScanner {
public:
    JsonScanner(std::string_view text, std::string path) : s_(text), path_(std::move(path)) {}

    // The next significant character (0 at the end), without consuming it.
    char peek();
    void expect(char c);
    // Consumes c if it is next.
    bool accept(char c);
    // Reads a string, unescaped, into out (replacing its contents).
    void read_string(std::string& out);
    int64_t read_int();
    // Skips one value of any kind and returns its raw text.
    std::string_view skip_value();
    size_t offset() const { return pos_; }

    // Iterates the members of an object: call with the '{' next; on_member(key)
    // must consume the value.
    template <typename F>
    void read_object(F&& on_member) {
        expect('{');
        if (accept('}')) return;
        std::string key;
        do {
            read_string(key);
            expect(':');
            on_member(key);
        } while (accept(','));
        expect('}');
    }
    // Iterates the elements of an array: on_element() must consume each one.
    template <typename F>
    void read_array(F&& on_element) {
        expect('[');
        if (accept(']')) return;
        do on_element();
        while (accept(','));
        expect(']');
    }

    [[noreturn]] void error(std::string_view expected) const;

private:
    void skip_ws();
    void skip_string();
    uint32_t read_hex4();

    std::string_view s_;
    std::string path_;
    size_t pos_ = 0;
};

}  // namespace anelm
