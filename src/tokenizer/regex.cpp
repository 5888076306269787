#include "tokenizer/regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <cctype>

#include "base/error.h"

namespace anelm {

std::string rewrite_whitespace_classes(std::string_view pattern) {
    std::string out;
    out.reserve(pattern.size() + 32);
    for (size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '\\' || i + 1 == pattern.size()) {
            out += pattern[i];
            continue;
        }
        const char next = pattern[++i];
        if (next == 's')
            out += "\\p{White_Space}";
        else if (next == 'S')
            out += "\\P{White_Space}";
        else {
            out += '\\';
            out += next;
        }
    }
    return out;
}

std::string escape_regex(std::string_view text) {
    // Every ASCII non-alphanumeric is escaped (control bytes by code), so the
    // result survives rewrite_whitespace_classes unchanged in meaning.
    std::string out;
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (u < 0x20 || u == 0x7F)
            out += fmt::format("\\x{{{:02x}}}", u);
        else if (u < 0x80 && !std::isalnum(u))
            out.append({'\\', c});
        else
            out += c;
    }
    return out;
}

struct Regex::Impl {
    pcre2_code* code = nullptr;
    bool jit = false;
};

Regex::Regex(std::string_view pattern, const std::string& where)
    : impl_(std::make_unique<Impl>()), where_(where) {
    const std::string rewritten = rewrite_whitespace_classes(pattern);
    int error = 0;
    PCRE2_SIZE offset = 0;
    impl_->code =
        pcre2_compile(reinterpret_cast<PCRE2_SPTR>(rewritten.data()), rewritten.size(),
                      PCRE2_UTF | PCRE2_UCP | PCRE2_NO_UTF_CHECK, &error, &offset, nullptr);
    if (!impl_->code) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error, message, sizeof message);
        fail("{}: regex does not compile at offset {}: {}", where_, offset,
             reinterpret_cast<const char*>(message));
    }
    impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

Regex::~Regex() {
    if (impl_ && impl_->code) pcre2_code_free(impl_->code);
}

namespace {

// Frees PCRE2 objects of one find_all call.
struct MatchState {
    pcre2_match_data* data = nullptr;
    pcre2_match_context* context = nullptr;
    pcre2_jit_stack* stack = nullptr;
    ~MatchState() {
        if (data) pcre2_match_data_free(data);
        if (context) pcre2_match_context_free(context);
        if (stack) pcre2_jit_stack_free(stack);
    }
    // Long runs of one class can exhaust the default 32 KiB JIT stack.
    void enlarge_stack() {
        if (!context) context = pcre2_match_context_create(nullptr);
        if (stack) pcre2_jit_stack_free(stack);
        stack = pcre2_jit_stack_create(64 * 1024, 64 * 1024 * 1024, nullptr);
        pcre2_jit_stack_assign(context, nullptr, stack);
    }
};

}  // namespace

void Regex::find_all(std::string_view text,
                     const std::function<void(size_t, size_t)>& on_match) const {
    MatchState state;
    state.data = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    size_t pos = 0;
    while (pos <= text.size()) {
        int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), pos, 0, state.data,
                                              state.context)
                            : pcre2_match(impl_->code, subject, text.size(), pos,
                                          PCRE2_NO_UTF_CHECK, state.data, state.context);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT && !state.stack) {
            state.enlarge_stack();
            continue;
        }
        if (rc == PCRE2_ERROR_NOMATCH) return;
        if (rc < 0) fail("{}: regex match failed with PCRE2 error {}", where_, rc);
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(state.data);
        const size_t begin = ov[0], end = ov[1];
        if (end > begin) {
            on_match(begin, end);
            pos = end;
        } else {
            // Empty match: skip one whole character, as Rust/Oniguruma iterators do.
            on_match(begin, end);
            if (begin >= text.size()) return;
            pos = begin + 1;
            while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) ++pos;
        }
    }
}

}  // namespace anelm

namespace anelm {

std::string replace_all(const Regex& pattern, std::string_view text, std::string_view content) {
    std::string out;
    size_t last = 0;
    pattern.find_all(text, [&](size_t begin, size_t end) {
        out.append(text.substr(last, begin - last));
        out.append(content);
        last = end;
    });
    out.append(text.substr(last));
    return out;
}

}  // namespace anelm
