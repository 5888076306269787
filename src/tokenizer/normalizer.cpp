#include "tokenizer/normalizer.h"

#include <utf8proc.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <vector>

#include "base/error.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace anelm {

namespace {

// A code point that every Unicode normal form leaves alone and never joins to a
// neighbour: normalization can restart before it. Conservative (a character
// in any composition counts as unstable), except ASCII, which never composes
// with what precedes it.
bool is_stable(uint32_t cp) {
    if (cp < 0x80) return true;
    if ((cp >= 0x1100 && cp <= 0x11FF) || (cp >= 0xAC00 && cp <= 0xD7A3)) return false;  // Hangul
    const utf8proc_property_t* p = utf8proc_get_property(static_cast<utf8proc_int32_t>(cp));
    return p->combining_class == 0 && p->decomp_seqindex == UINT16_MAX &&
           p->comb_index == UINT16_MAX;
}

class UnicodeForm : public Normalizer {
public:
    explicit UnicodeForm(int options) : options_(options) {}

    // Only stretches around unstable characters go through utf8proc; each
    // stretch starts at the character before the first unstable one (it may
    // compose with it) and ends before the next stable one.
    void normalize(std::string& text) const override {
        size_t i = 0;
        while (i < text.size() && static_cast<uint8_t>(text[i]) < 0x80) ++i;
        if (i == text.size()) return;
        std::string out;
        out.reserve(text.size() + 16);
        size_t copied = 0, prev = 0;  // prev: start of the last character seen
        i = 0;
        while (i < text.size()) {
            const size_t start = i;
            if (is_stable(utf8::decode(text, i))) {
                prev = start;
                continue;
            }
            const size_t region = start == 0 ? 0 : prev;
            while (i < text.size()) {
                size_t j = i;
                if (is_stable(utf8::decode(text, j))) break;
                i = j;
            }
            out.append(text, copied, region - copied);
            append_normalized(out, std::string_view(text).substr(region, i - region));
            copied = i;
            prev = i;
        }
        if (copied == 0) return;
        out.append(text, copied, std::string::npos);
        text = std::move(out);
    }

private:
    void append_normalized(std::string& out, std::string_view s) const {
        utf8proc_uint8_t* result = nullptr;
        const utf8proc_ssize_t n = utf8proc_map(reinterpret_cast<const utf8proc_uint8_t*>(s.data()),
                                                static_cast<utf8proc_ssize_t>(s.size()), &result,
                                                static_cast<utf8proc_option_t>(options_));
        if (n < 0) {
            out.append(s);  // unreachable for valid UTF-8; keep the text as it was
            return;
        }
        out.append(reinterpret_cast<const char*>(result), static_cast<size_t>(n));
        std::free(result);
    }

    int options_;
};

class Prepend : public Normalizer {
public:
    explicit Prepend(std::string prefix) : prefix_(std::move(prefix)) {}
    void normalize(std::string& text) const override {
        if (!text.empty()) text.insert(0, prefix_);
    }

private:
    std::string prefix_;
};

class Replace : public Normalizer {
public:
    Replace(const nlohmann::json& j, const std::string& where)
        : pattern_(pattern_field(j, where)), content_(string_field(j, "content", where)) {}
    void normalize(std::string& text) const override {
        if (pattern_) text = replace_all(*pattern_, text, content_);
    }

private:
    std::unique_ptr<Regex> pattern_;
    std::string content_;
};

class Sequence : public Normalizer {
public:
    Sequence(const nlohmann::json& j, const std::string& where) {
        const auto& list = array_field(j, "normalizers", where);
        for (size_t i = 0; i < list.size(); ++i)
            parts_.push_back(make_normalizer(list[i], fmt::format("{}.normalizers[{}]", where, i)));
    }
    void normalize(std::string& text) const override {
        for (const auto& part : parts_)
            if (part) part->normalize(text);
    }

private:
    std::vector<std::unique_ptr<Normalizer>> parts_;
};

}  // namespace

std::unique_ptr<Normalizer> make_normalizer(const nlohmann::json& j, const std::string& where) {
    if (j.is_null()) return nullptr;
    const std::string type = type_field(j, where);
    constexpr int stable = UTF8PROC_STABLE;
    if (type == "NFC") return std::make_unique<UnicodeForm>(stable | UTF8PROC_COMPOSE);
    if (type == "NFD") return std::make_unique<UnicodeForm>(stable | UTF8PROC_DECOMPOSE);
    if (type == "NFKC")
        return std::make_unique<UnicodeForm>(stable | UTF8PROC_COMPOSE | UTF8PROC_COMPAT);
    if (type == "NFKD")
        return std::make_unique<UnicodeForm>(stable | UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT);
    if (type == "Prepend") return std::make_unique<Prepend>(string_field(j, "prepend", where));
    if (type == "Replace") return std::make_unique<Replace>(j, where);
    if (type == "Sequence") return std::make_unique<Sequence>(j, where);
    fail("{}: unsupported normalizer type \"{}\"", where, type);
}

}  // namespace anelm
