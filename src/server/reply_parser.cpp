#include "server/reply_parser.h"

#include <algorithm>

namespace anelm::server {

namespace {

bool is_space(char c) {
    return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

std::string_view trim_left(std::string_view s) {
    while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
    return s;
}

std::string_view trim_right(std::string_view s) {
    while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
    return s;
}

// How much of the end of text may be the beginning of one of marks.
size_t held_back(std::string_view text, const std::vector<std::string_view>& marks) {
    size_t held = 0;
    for (std::string_view mark : marks)
        for (size_t n = std::min(text.size(), mark.size() - (mark.empty() ? 0 : 1)); n > held; --n)
            if (text.substr(text.size() - n) == mark.substr(0, n)) {
                held = n;
                break;
            }
    return held;
}

// What b adds to a, when a is a prefix of b.
std::string added(const std::string& a, const std::string& b) {
    return b.size() > a.size() && b.compare(0, a.size(), a) == 0 ? b.substr(a.size()) : "";
}

}  // namespace

ReasoningTags reasoning_tags_for(std::string_view source) {
    if (source.find("<|channel>") != std::string_view::npos)
        return {"<|channel>thought", "<channel|>"};
    if (source.find("<think>") != std::string_view::npos) return {"<think>", "</think>"};
    return {};
}

bool opens_reasoning(const ReasoningTags& tags, std::string_view prompt) {
    if (!tags.active()) return false;
    const size_t open = prompt.rfind(tags.open);
    if (open == std::string_view::npos) return false;
    const size_t close = prompt.rfind(tags.close);
    return close == std::string_view::npos || close < open;
}

ReplyParts ReplyParser::parts(bool final) const {
    ReplyParts out;
    std::string_view rest = text_;
    if (tags_.active()) {
        size_t start = std::string_view::npos;
        if (in_reasoning_) {
            start = 0;
        } else {
            size_t pos = 0;
            skip_space(rest, pos);
            const Scan s = expect(rest, pos, tags_.open);
            if (s == Scan::done) start = pos;
            if (s == Scan::more && !final) return out;  // may still open
        }
        if (start != std::string_view::npos) {
            const size_t close = rest.find(tags_.close, start);
            std::string_view inside = rest.substr(
                start, close == std::string_view::npos ? std::string_view::npos : close - start);
            if (close == std::string_view::npos && !final)
                inside.remove_suffix(held_back(inside, {tags_.close}));
            out.reasoning = trim_right(trim_left(inside));
            if (close == std::string_view::npos) return out;
            rest = trim_left(rest.substr(close + tags_.close.size()));
        }
    }
    if (!format_) {
        out.content = rest;
        return out;
    }
    const std::vector<std::string_view> marks = format_->markers();
    size_t at = std::string_view::npos;
    for (std::string_view mark : marks) at = std::min(at, rest.find(mark));
    if (at == std::string_view::npos) {
        if (!final) rest = trim_right(rest.substr(0, rest.size() - held_back(rest, marks)));
        out.content = rest;
        return out;
    }
    const std::string_view before = rest.substr(0, at), calls = rest.substr(at);
    const CallScan scan = format_->scan(calls, tools_);
    if (scan.calls.empty() && (scan.bad || final)) {
        out.content = rest;  // no call after all
        return out;
    }
    out.content = trim_right(before);
    out.calls = scan.calls;
    if (!tools_.parallel && out.calls.size() > 1) out.calls.resize(1);
    const std::string_view after = calls.substr(scan.end);
    if ((scan.bad || final) && !trim_left(after).empty()) out.content += after;
    return out;
}

ReplyDelta ReplyDeltas::next(const ReplyParts& parts) {
    ReplyDelta d;
    d.reasoning = added(sent_.reasoning, parts.reasoning);
    d.content = added(sent_.content, parts.content);
    sent_.reasoning += d.reasoning;
    sent_.content += d.content;
    for (size_t i = 0; i < parts.calls.size(); ++i) {
        const ToolCall& call = parts.calls[i];
        if (i >= sent_.calls.size()) {
            d.calls.push_back({i, true, call.name, call.arguments});
            sent_.calls.push_back(call);
            continue;
        }
        std::string more = added(sent_.calls[i].arguments, call.arguments);
        if (more.empty()) continue;
        sent_.calls[i].arguments += more;
        d.calls.push_back({i, false, "", std::move(more)});
    }
    return d;
}

}  // namespace anelm::server
