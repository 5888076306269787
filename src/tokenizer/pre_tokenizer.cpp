#include "tokenizer/pre_tokenizer.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <utility>

#include "base/error.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/json_fields.h"
#include "tokenizer/regex.h"
#include "tokenizer/utf8.h"

namespace anelm {

namespace {

enum class Behavior { removed, isolated, merged_with_previous, merged_with_next, contiguous };

Behavior parse_behavior(const nlohmann::json& j, const std::string& where) {
    const std::string b = string_field(j, "behavior", where);
    if (b == "Removed") return Behavior::removed;
    if (b == "Isolated") return Behavior::isolated;
    if (b == "MergedWithPrevious") return Behavior::merged_with_previous;
    if (b == "MergedWithNext") return Behavior::merged_with_next;
    if (b == "Contiguous") return Behavior::contiguous;
    fail("{}.behavior: unsupported split behavior \"{}\"", where, b);
}

struct Span {
    uint32_t begin, end;
    bool is_match;
};

// Hugging Face's NormalizedString::split: the text as alternating matched and
// unmatched spans, regrouped by behavior; removed spans are dropped.
void split_piece(const Regex* pattern, bool invert, Behavior behavior, std::string_view text,
                 std::vector<Span>& spans, std::vector<Span>& grouped) {
    spans.clear();
    if (text.empty()) {
        spans.push_back({0, 0, false});
    } else {
        uint32_t prev = 0;
        if (pattern)
            pattern->find_all(text, [&](size_t b, size_t e) {
                if (prev != b) spans.push_back({prev, static_cast<uint32_t>(b), false});
                spans.push_back({static_cast<uint32_t>(b), static_cast<uint32_t>(e), true});
                prev = static_cast<uint32_t>(e);
            });
        if (prev != text.size()) spans.push_back({prev, static_cast<uint32_t>(text.size()), false});
    }
    if (invert)
        for (Span& s : spans) s.is_match = !s.is_match;

    grouped.clear();
    bool previous = false;
    switch (behavior) {
        case Behavior::isolated:
            for (Span s : spans) grouped.push_back({s.begin, s.end, false});
            break;
        case Behavior::removed:
            grouped = spans;
            break;
        case Behavior::contiguous:
            for (Span s : spans) {
                if (s.is_match == previous && !grouped.empty())
                    grouped.back().end = s.end;
                else
                    grouped.push_back({s.begin, s.end, false});
                previous = s.is_match;
            }
            break;
        case Behavior::merged_with_previous:
            for (Span s : spans) {
                if (s.is_match && !previous && !grouped.empty())
                    grouped.back().end = s.end;
                else
                    grouped.push_back({s.begin, s.end, false});
                previous = s.is_match;
            }
            break;
        case Behavior::merged_with_next:
            for (size_t k = spans.size(); k-- > 0;) {
                const Span s = spans[k];
                if (s.is_match && !previous && !grouped.empty())
                    grouped.back().begin = s.begin;
                else
                    grouped.push_back({s.begin, s.end, false});
                previous = s.is_match;
            }
            std::reverse(grouped.begin(), grouped.end());
            break;
    }
}

// Splits every piece in place (the text is unchanged, only the cuts).
void split_all(const Regex* pattern, bool invert, Behavior behavior, PieceList& list,
               PieceList& scratch) {
    scratch.pieces.clear();
    std::vector<Span> spans, grouped;
    for (const auto& piece : list.pieces) {
        split_piece(pattern, invert, behavior, list.view(piece), spans, grouped);
        for (const Span& s : grouped) {
            if (s.is_match) continue;  // removed
            scratch.pieces.push_back(
                {piece.begin + s.begin, piece.begin + s.end, piece.at_start && s.begin == 0});
        }
    }
    list.pieces.swap(scratch.pieces);
}

class Split : public PreTokenizer {
public:
    Split(const nlohmann::json& j, const std::string& where)
        : pattern_(pattern_field(j, where)),
          behavior_(parse_behavior(j, where)),
          invert_(bool_field(j, "invert", false, where)) {}
    void apply(PieceList& list, PieceList& scratch) const override {
        split_all(pattern_.get(), invert_, behavior_, list, scratch);
    }

private:
    std::unique_ptr<Regex> pattern_;
    Behavior behavior_;
    bool invert_;
};

// GPT-2's own pattern, used when ByteLevel has use_regex.
constexpr std::string_view gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

class ByteLevel : public PreTokenizer {
public:
    ByteLevel(const nlohmann::json& j, const std::string& where)
        : add_prefix_space_(bool_field(j, "add_prefix_space", true, where)),
          regex_(bool_field(j, "use_regex", true, where)
                     ? std::make_unique<Regex>(gpt2_pattern, where + " (GPT-2 pattern)")
                     : nullptr) {}

    void apply(PieceList& list, PieceList& scratch) const override {
        if (add_prefix_space_) {
            scratch.clear();
            for (const auto& piece : list.pieces) {
                const std::string_view s = list.view(piece);
                const auto begin = static_cast<uint32_t>(scratch.text.size());
                if (!s.empty() && s[0] != ' ') scratch.text += ' ';
                scratch.text.append(s);
                scratch.pieces.push_back(
                    {begin, static_cast<uint32_t>(scratch.text.size()), piece.at_start});
            }
            std::swap(list, scratch);
        }
        if (regex_) split_all(regex_.get(), false, Behavior::isolated, list, scratch);
        scratch.clear();
        for (const auto& piece : list.pieces) {
            const auto begin = static_cast<uint32_t>(scratch.text.size());
            for (char c : list.view(piece)) scratch.text.append(byte_level::char_of(uint8_t(c)));
            scratch.pieces.push_back(
                {begin, static_cast<uint32_t>(scratch.text.size()), piece.at_start});
        }
        std::swap(list, scratch);
    }

private:
    bool add_prefix_space_;
    std::unique_ptr<Regex> regex_;
};

enum class Prepend { always, first, never };

class Metaspace : public PreTokenizer {
public:
    Metaspace(const nlohmann::json& j, const std::string& where)
        : replacement_(string_field(j, "replacement", where)),
          split_(bool_field(j, "split", true, where)) {
        const std::string scheme =
            j.contains("prepend_scheme") ? string_field(j, "prepend_scheme", where) : "always";
        if (scheme == "always")
            prepend_ = Prepend::always;
        else if (scheme == "first")
            prepend_ = Prepend::first;
        else if (scheme == "never")
            prepend_ = Prepend::never;
        else
            fail("{}.prepend_scheme: expected always, first or never, got \"{}\"", where, scheme);
        if (!bool_field(j, "add_prefix_space", true, where)) prepend_ = Prepend::never;
        if (split_) split_pattern_ = std::make_unique<Regex>(escape_regex(replacement_), where);
    }

    void apply(PieceList& list, PieceList& scratch) const override {
        scratch.clear();
        for (const auto& piece : list.pieces) {
            const std::string_view s = list.view(piece);
            const auto begin = static_cast<uint32_t>(scratch.text.size());
            const bool starts = s.starts_with(' ') || s.starts_with(replacement_);
            const bool prepend =
                !s.empty() && !starts &&
                (prepend_ == Prepend::always || (prepend_ == Prepend::first && piece.at_start));
            if (prepend) scratch.text += replacement_;
            for (char c : s) {
                if (c == ' ')
                    scratch.text += replacement_;
                else
                    scratch.text += c;
            }
            scratch.pieces.push_back(
                {begin, static_cast<uint32_t>(scratch.text.size()), piece.at_start});
        }
        std::swap(list, scratch);
        if (split_)
            split_all(split_pattern_.get(), false, Behavior::merged_with_next, list, scratch);
    }

private:
    std::string replacement_;
    bool split_;
    Prepend prepend_ = Prepend::always;
    std::unique_ptr<Regex> split_pattern_;
};

class Sequence : public PreTokenizer {
public:
    Sequence(const nlohmann::json& j, const std::string& where) {
        const auto& list = array_field(j, "pretokenizers", where);
        for (size_t i = 0; i < list.size(); ++i)
            parts_.push_back(
                make_pre_tokenizer(list[i], fmt::format("{}.pretokenizers[{}]", where, i)));
    }
    void apply(PieceList& list, PieceList& scratch) const override {
        for (const auto& part : parts_)
            if (part) part->apply(list, scratch);
    }

private:
    std::vector<std::unique_ptr<PreTokenizer>> parts_;
};

}  // namespace

std::unique_ptr<PreTokenizer> make_pre_tokenizer(const nlohmann::json& j,
                                                 const std::string& where) {
    if (j.is_null()) return nullptr;
    const std::string type = type_field(j, where);
    if (type == "Split") return std::make_unique<Split>(j, where);
    if (type == "ByteLevel") return std::make_unique<ByteLevel>(j, where);
    if (type == "Metaspace") return std::make_unique<Metaspace>(j, where);
    if (type == "Sequence") return std::make_unique<Sequence>(j, where);
    fail("{}: unsupported pre_tokenizer type \"{}\"", where, type);
}

}  // namespace anelm
