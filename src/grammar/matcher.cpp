#include "grammar/matcher.h"

#include <algorithm>

#include "grammar/json_string.h"

namespace anelm::grammar {

namespace {

// A frame's kind is its node's, or key: the name of a property of node (an object).
constexpr uint8_t key_frame = 0x80;

enum Act { reject, stay, pop, push };
enum ObjectPhase : uint8_t {
    o_start,
    o_open,
    o_key,
    o_colon,
    o_colon_sp,
    o_value,
    o_comma,
    o_comma_sp
};
enum ArrayPhase : uint8_t { a_start, a_open, a_item, a_comma, a_comma_sp };
enum StringPhase : uint8_t { s_start, s_body };
enum NumberPhase : uint8_t {
    n_start,
    n_minus,
    n_zero,
    n_int,
    n_dot,
    n_frac,
    n_exp,
    n_exp_sign,
    n_exp_digits
};

constexpr uint32_t max_digits = 20;
constexpr uint32_t max_integer_digits = 18;  // always fits an int64
constexpr uint32_t max_exp_digits = 2;

bool is_digit(uint8_t c) {
    return c >= '0' && c <= '9';
}

}  // namespace

// The value a frame opens when it takes a byte: node (maybe any_of), or frame.
struct Matcher::Push {
    int32_t node = -1;
    Frame frame;
};

Matcher::Matcher(const Grammar& grammar) : grammar_(grammar) {
    const Node& root = grammar_.node(grammar_.root());
    for (int32_t option :
         root.kind == Kind::any_of ? root.options : std::vector<int32_t>{grammar_.root()}) {
        frames_.push_back(start(option));
        ends_.push_back(static_cast<uint32_t>(frames_.size()));
    }
}

Matcher::Frame Matcher::start(int32_t node) const {
    const Node& n = grammar_.node(node);
    Frame f;
    f.node = node;
    f.kind = static_cast<uint8_t>(n.kind);
    if (n.kind == Kind::literals) f.c = static_cast<uint32_t>(n.literals.size() - 1);
    return f;
}

bool Matcher::advance(std::string_view bytes) {
    Matcher cur = *this, next;
    next.grammar_ = grammar_;
    for (char c : bytes) {
        if (!next.step_from(cur, static_cast<uint8_t>(c))) return false;
        std::swap(cur, next);
    }
    *this = std::move(cur);
    return true;
}

bool Matcher::accepts_end() const {
    for (size_t k = 0; k < n_stacks(); ++k) {
        const auto st = stack(k);
        if (std::all_of(st.begin(), st.end(), [&](const Frame& f) { return can_end(f); }))
            return true;
    }
    return false;
}

bool Matcher::finished() const {
    if (!accepts_end()) return false;
    Matcher probe;
    probe.grammar_ = grammar_;
    for (int b = 0; b < 256; ++b)
        if (probe.step_from(*this, static_cast<uint8_t>(b))) return false;
    return true;
}

bool Matcher::can_end(const Frame& f) const {
    if (f.kind == uint8_t(Kind::number) || f.kind == uint8_t(Kind::integer))
        return f.phase == n_zero || f.phase == n_int || f.phase == n_frac ||
               f.phase == n_exp_digits;
    if (f.kind == uint8_t(Kind::literals))
        return f.a > 0 && grammar_.node(f.node).literals[f.b].size() == f.a;
    return false;
}

bool Matcher::step_from(const Matcher& from, uint8_t byte) {
    frames_.clear();
    ends_.clear();
    for (size_t k = 0; k < from.n_stacks(); ++k) {
        const auto st = from.stack(k);
        if (!st.empty()) step(st, byte);
    }
    if (ends_.size() > 1) dedup();
    return !ends_.empty();
}

// The top frame takes the byte, and when it may end there, so may the frame below.
void Matcher::step(std::span<const Frame> st, uint8_t byte) {
    const Frame& f = st.back();
    const auto prefix = st.first(st.size() - 1);
    const Frame* parent = prefix.empty() ? nullptr : &prefix.back();
    Frame t = f;
    Push p;
    switch (consume(t, parent, byte, p)) {
        case stay:
            emit(prefix, {&t, 1});
            break;
        case pop:
            if (f.kind == key_frame) {
                // The object learns which property it is in.
                Frame object = *parent;
                object.b = grammar_.node(f.node).key_props[t.b];
                object.a = object.b + 1;
                emit(prefix.first(prefix.size() - 1), {&object, 1});
            } else {
                emit(prefix, {});
            }
            break;
        case push:
            push_child(prefix, t, p.node, p.node < 0 ? &p.frame : nullptr, byte);
            break;
        default:
            break;
    }
    if (parent && can_end(f)) step(prefix, byte);
}

// The first byte of a child (one per alternative); no first byte opens another.
void Matcher::push_child(std::span<const Frame> prefix, const Frame& parent, int32_t node,
                         const Frame* child, uint8_t byte) {
    auto try_child = [&](Frame ch) {
        Push unused;
        const int act = consume(ch, &parent, byte, unused);
        if (act == stay) {
            const Frame both[2] = {parent, ch};
            emit(prefix, both);
        } else if (act == pop) {  // a one-byte literal
            emit(prefix, {&parent, 1});
        }
    };
    if (child) return try_child(*child);
    const Node& n = grammar_.node(node);
    if (n.kind != Kind::any_of) return try_child(start(node));
    for (int32_t option : n.options) try_child(start(option));
}

int Matcher::consume(Frame& t, const Frame* parent, uint8_t c, Push& p) const {
    const Node& n = grammar_.node(t.node);
    if (t.kind == uint8_t(Kind::object)) {
        const auto count = static_cast<uint32_t>(n.properties.size());
        const bool free = count == 0;
        const bool may_close = free || n.first_required[t.a] == count;
        const bool more = free ? n.extra >= 0 : t.a < count;
        auto key = [&] {
            if (free) {
                p.frame = start(grammar_.plain_string());
            } else {
                p.frame = Frame{};
                p.frame.node = t.node;
                p.frame.kind = key_frame;
                p.frame.c = count - 1;
            }
            t.phase = o_key;
            return push;
        };
        switch (t.phase) {
            case o_start:
                if (c != '{') return reject;
                t.phase = o_open;
                return stay;
            case o_open:
                if (c == '}' && may_close) return pop;
                return c == '"' && more ? key() : reject;
            case o_key:
                if (c != ':') return reject;
                t.phase = o_colon;
                return stay;
            case o_colon:
                if (c == ' ') {
                    t.phase = o_colon_sp;
                    return stay;
                }
                [[fallthrough]];
            case o_colon_sp:
                t.phase = o_value;
                p.node = free ? n.extra : n.properties[t.b].value;
                return push;
            case o_value:
                if (c == '}' && may_close) return pop;
                if (c != ',' || !more) return reject;
                t.phase = o_comma;
                return stay;
            case o_comma:
                if (c == ' ') {
                    t.phase = o_comma_sp;
                    return stay;
                }
                [[fallthrough]];
            default:
                return c == '"' ? key() : reject;
        }
    }
    if (t.kind == uint8_t(Kind::array)) {
        switch (t.phase) {
            case a_start:
                if (c != '[') return reject;
                t.phase = a_open;
                return stay;
            case a_open:
                if (c == ']' && n.min_items == 0) return pop;
                if (n.max_items == 0) return reject;
                t.a = 1;
                t.phase = a_item;
                p.node = n.items;
                return push;
            case a_item:
                if (c == ']' && t.a >= n.min_items) return pop;
                if (c != ',' || t.a >= n.max_items) return reject;
                t.phase = a_comma;
                return stay;
            case a_comma:
                if (c == ' ') {
                    t.phase = a_comma_sp;
                    return stay;
                }
                [[fallthrough]];
            default:
                ++t.a;
                t.phase = a_item;
                p.node = n.items;
                return push;
        }
    }
    if (t.kind == uint8_t(Kind::string)) {
        if (t.phase == s_start) {
            if (c != '"') return reject;
            t.phase = s_body;
            t.sub = json_string::normal;
            return stay;
        }
        const int8_t next = json_string::step(json_string::State(t.sub), c);
        if (next == json_string::reject) return reject;
        if (next == json_string::close) return t.a >= n.min_length ? pop : reject;
        if (t.sub == json_string::normal) {
            if (t.a >= n.max_length) return reject;
            ++t.a;
        }
        t.sub = static_cast<uint8_t>(next);
        return stay;
    }
    if (t.kind == uint8_t(Kind::number) || t.kind == uint8_t(Kind::integer)) {
        const bool integer = t.kind == uint8_t(Kind::integer);
        auto to = [&](uint8_t phase, uint32_t digits) {
            t.phase = phase;
            t.a = digits;
            return stay;
        };
        switch (t.phase) {
            case n_start:
                if (c == '-') return to(n_minus, 0);
                [[fallthrough]];
            case n_minus:
                if (c == '0') return to(n_zero, 1);
                return c >= '1' && c <= '9' ? to(n_int, 1) : reject;
            case n_zero:
            case n_int:
                if (is_digit(c) && t.phase == n_int &&
                    t.a < (integer ? max_integer_digits : max_digits))
                    return to(n_int, t.a + 1);
                if (integer) return reject;
                if (c == '.') return to(n_dot, 0);
                return c == 'e' || c == 'E' ? to(n_exp, 0) : reject;
            case n_dot:
                return is_digit(c) ? to(n_frac, 1) : reject;
            case n_frac:
                if (is_digit(c) && t.a < max_digits) return to(n_frac, t.a + 1);
                return c == 'e' || c == 'E' ? to(n_exp, 0) : reject;
            case n_exp:
                if (c == '+' || c == '-') return to(n_exp_sign, 0);
                [[fallthrough]];
            case n_exp_sign:
                return is_digit(c) ? to(n_exp_digits, 1) : reject;
            default:
                return is_digit(c) && t.a < max_exp_digits ? to(n_exp_digits, t.a + 1) : reject;
        }
    }
    // Literals or a key: those in [b, c] share their first a bytes and are sorted, so
    // the ones with byte c next are a sub-range.
    const auto& lits = n.literals;
    const uint32_t offset = t.a;
    auto byte_at = [&](uint32_t i) {
        return lits[i].size() > offset ? int(uint8_t(lits[i][offset])) : -1;
    };
    uint32_t lo = t.b, hi = t.c + 1;
    {
        uint32_t l = lo, h = hi;
        while (l < h) {
            const uint32_t m = (l + h) / 2;
            if (byte_at(m) < c)
                l = m + 1;
            else
                h = m;
        }
        lo = l;
        h = hi;
        while (l < h) {
            const uint32_t m = (l + h) / 2;
            if (byte_at(m) <= c)
                l = m + 1;
            else
                h = m;
        }
        hi = l;
    }
    if (lo == hi) return reject;
    if (t.kind == key_frame) {
        // Only properties from the next one up to the next required one may come.
        const uint32_t first = parent->a;
        const uint32_t last = std::min<uint32_t>(n.first_required[first],
                                                 static_cast<uint32_t>(n.properties.size()) - 1);
        bool any = false;
        for (uint32_t i = lo; i < hi && !any; ++i)
            any = n.key_props[i] >= first && n.key_props[i] <= last;
        if (!any) return reject;
    }
    t.a = offset + 1;
    t.b = lo;
    t.c = hi - 1;
    return lits[lo].size() == t.a && lo + 1 == hi ? pop : stay;
}

void Matcher::emit(std::span<const Frame> prefix, std::span<const Frame> top) {
    frames_.insert(frames_.end(), prefix.begin(), prefix.end());
    frames_.insert(frames_.end(), top.begin(), top.end());
    ends_.push_back(static_cast<uint32_t>(frames_.size()));
}

// Alternatives that met again (anyOf of equal schemas) would otherwise multiply.
void Matcher::dedup() {
    size_t kept = 0, write = 0, begin = 0;
    for (size_t k = 0; k < ends_.size(); ++k) {
        const size_t end = ends_[k];
        const std::span<const Frame> st(frames_.data() + begin, end - begin);
        bool seen = false;
        for (size_t j = 0; j < kept && !seen; ++j) {
            const auto other = stack(j);
            seen = std::equal(other.begin(), other.end(), st.begin(), st.end());
        }
        if (!seen) {
            std::copy(st.begin(), st.end(), frames_.begin() + write);
            write += st.size();
            ends_[kept++] = static_cast<uint32_t>(write);
        }
        begin = end;
    }
    frames_.resize(write);
    ends_.resize(kept);
}

const Matcher::Frame* Matcher::open_string(size_t k) const {
    const auto st = stack(k);
    if (st.empty()) return nullptr;
    const Frame& top = st.back();
    const bool open =
        top.kind == uint8_t(Kind::string) && top.phase == s_body && top.sub == json_string::normal;
    return open ? &top : nullptr;
}

void Matcher::assign_without_open_strings(const Matcher& from) {
    frames_.clear();
    ends_.clear();
    for (size_t k = 0; k < from.n_stacks(); ++k)
        if (!from.open_string(k)) emit(from.stack(k), {});
}

void Matcher::assign_closed(const Matcher& from, size_t k) {
    const auto st = from.stack(k);
    frames_.assign(st.begin(), st.end() - 1);
    ends_.assign(1, static_cast<uint32_t>(frames_.size()));
}

}  // namespace anelm::grammar
