#include "tokenizer/decoder.h"

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace anelm {

namespace {

void fuse(DecodeState& state) {
    std::string all;
    for (const std::string& t : state.tokens) all += t;
    state.tokens.assign(1, std::move(all));
    state.fused = true;
}

// Token strings of byte-level characters back to bytes; a token holding any
// other character (an added token such as "<|im_end|>" with a space) is taken
// as it is. Invalid UTF-8 in the result becomes U+FFFD unless keep_invalid.
class ByteLevel : public Decoder {
public:
    void apply(DecodeState& state) const override {
        std::string bytes;
        std::string token_bytes;
        for (const std::string& t : state.tokens) {
            token_bytes.clear();
            bool all_mapped = true;
            for (size_t i = 0; i < t.size();) {
                const utf8::Step st = utf8::step(t, i);
                size_t j = i;
                const int b = st.valid ? byte_level::byte_of(utf8::decode(t, j)) : -1;
                if (b < 0) {
                    all_mapped = false;
                    break;
                }
                token_bytes += static_cast<char>(b);
                i += st.length;
            }
            bytes += all_mapped ? token_bytes : t;
        }
        if (!state.keep_invalid) bytes = utf8::repair(bytes, state.keep_truncated_tail);
        state.tokens.assign(1, std::move(bytes));
        state.fused = true;
    }
};

// Runs of <0xXX> tokens become the bytes they stand for; a run that is not
// valid UTF-8 becomes one U+FFFD per byte (Hugging Face's rule) unless keep_invalid.
class ByteFallback : public Decoder {
public:
    void apply(DecodeState& state) const override {
        std::vector<std::string> out;
        std::string run;
        size_t run_tokens = 0;
        auto flush = [&](bool at_end) {
            if (run_tokens == 0) return;
            const size_t bad = utf8::find_invalid(run);
            const bool tail_only = bad != std::string::npos && at_end &&
                                   state.keep_truncated_tail &&
                                   utf8::truncated_tail(run) == run.size() - bad;
            if (bad == std::string::npos || tail_only || state.keep_invalid) {
                out.push_back(run);
            } else {
                for (size_t k = 0; k < run_tokens; ++k) out.emplace_back(utf8::replacement);
            }
            run.clear();
            run_tokens = 0;
        };
        for (std::string& t : state.tokens) {
            const int byte = byte_token(t);
            if (byte >= 0) {
                run += static_cast<char>(byte);
                ++run_tokens;
                continue;
            }
            flush(false);
            out.push_back(std::move(t));
        }
        flush(true);
        state.tokens = std::move(out);
    }

private:
    static int hex(char c) {
        if (c >= '0' && c <= '9') return c - '0';
        if (c >= 'a' && c <= 'f') return c - 'a' + 10;
        if (c >= 'A' && c <= 'F') return c - 'A' + 10;
        return -1;
    }
    static int byte_token(const std::string& t) {
        if (t.size() != 6 || t.compare(0, 3, "<0x") != 0 || t[5] != '>') return -1;
        const int hi = hex(t[3]), lo = hex(t[4]);
        return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
    }
};

class Fuse : public Decoder {
public:
    void apply(DecodeState& state) const override { fuse(state); }
};

// Removes up to start leading and stop trailing copies of one character from
// every token. Once tokens are fused, the leading ones are only removed at the
// start of the whole sequence.
class Strip : public Decoder {
public:
    Strip(const nlohmann::json& j, const std::string& where)
        : content_(string_field(j, "content", where)),
          start_(static_cast<size_t>(int_field(j, "start", 0, where))),
          stop_(static_cast<size_t>(int_field(j, "stop", 0, where))) {
        if (utf8::find_invalid(content_) != std::string::npos || content_.empty() ||
            utf8::step(content_, 0).length != content_.size())
            fail("{}.content: expected one character", where);
    }
    void apply(DecodeState& state) const override {
        for (size_t k = 0; k < state.tokens.size(); ++k) {
            std::string& t = state.tokens[k];
            size_t begin = 0, end = t.size();
            const bool lead = !(k == 0 && state.fused && !state.at_start);
            for (size_t n = 0;
                 lead && n < start_ && t.compare(begin, content_.size(), content_) == 0; ++n)
                begin += content_.size();
            for (size_t n = 0; n < stop_ && end >= begin + content_.size() &&
                               t.compare(end - content_.size(), content_.size(), content_) == 0;
                 ++n)
                end -= content_.size();
            t = t.substr(begin, end - begin);
        }
    }

private:
    std::string content_;
    size_t start_, stop_;
};

class Replace : public Decoder {
public:
    Replace(const nlohmann::json& j, const std::string& where)
        : pattern_(pattern_field(j, where)), content_(string_field(j, "content", where)) {}
    void apply(DecodeState& state) const override {
        if (!pattern_) return;
        for (std::string& t : state.tokens) {
            // Only a kept cut-off character can make a token invalid UTF-8; the
            // regex runs on the valid part.
            const size_t tail = utf8::truncated_tail(t);
            std::string out =
                replace_all(*pattern_, std::string_view(t).substr(0, t.size() - tail), content_);
            out.append(t, t.size() - tail, tail);
            t = std::move(out);
        }
    }

private:
    std::unique_ptr<Regex> pattern_;
    std::string content_;
};

// The replacement character becomes a space, except in the first token of the
// sequence, where it is dropped (it was the prefix added when encoding).
class Metaspace : public Decoder {
public:
    Metaspace(const nlohmann::json& j, const std::string& where)
        : replacement_(string_field(j, "replacement", where)) {
        const std::string scheme =
            j.contains("prepend_scheme") ? string_field(j, "prepend_scheme", where) : "always";
        drop_first_ = scheme != "never" && bool_field(j, "add_prefix_space", true, where);
    }
    void apply(DecodeState& state) const override {
        for (size_t k = 0; k < state.tokens.size(); ++k) {
            std::string& t = state.tokens[k];
            const bool drop = k == 0 && state.at_start && drop_first_;
            std::string out;
            for (size_t i = 0; i < t.size();) {
                if (t.compare(i, replacement_.size(), replacement_) == 0) {
                    if (!drop) out += ' ';
                    i += replacement_.size();
                } else {
                    out += t[i++];
                }
            }
            t = std::move(out);
        }
    }

private:
    std::string replacement_;
    bool drop_first_;
};

class Sequence : public Decoder {
public:
    Sequence(const nlohmann::json& j, const std::string& where) {
        const auto& list = array_field(j, "decoders", where);
        for (size_t i = 0; i < list.size(); ++i)
            parts_.push_back(make_decoder(list[i], fmt::format("{}.decoders[{}]", where, i)));
    }
    void apply(DecodeState& state) const override {
        for (const auto& part : parts_)
            if (part) part->apply(state);
    }

private:
    std::vector<std::unique_ptr<Decoder>> parts_;
};

}  // namespace

std::unique_ptr<Decoder> make_decoder(const nlohmann::json& j, const std::string& where) {
    if (j.is_null()) return nullptr;
    const std::string type = type_field(j, where);
    if (type == "ByteLevel") return std::make_unique<ByteLevel>();
    if (type == "ByteFallback") return std::make_unique<ByteFallback>();
    if (type == "Fuse") return std::make_unique<Fuse>();
    if (type == "Strip") return std::make_unique<Strip>(j, where);
    if (type == "Replace") return std::make_unique<Replace>(j, where);
    if (type == "Metaspace") return std::make_unique<Metaspace>(j, where);
    if (type == "Sequence") return std::make_unique<Sequence>(j, where);
    fail("{}: unsupported decoder type \"{}\"", where, type);
}

}  // namespace anelm
