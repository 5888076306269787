#include "chat/jinja_methods.h"

#include <algorithm>
#include <optional>
#include <set>
#include <tuple>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_format.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_printf.h"
#include "chat/jinja_text.h"

namespace anelm::jinja {
namespace {

using Names = std::set<std::string_view>;

// Every method of Python's types, so attribute lookup finds them before keys.
const Names str_methods = {
    "capitalize",   "casefold",    "center",    "count",      "encode",       "endswith",
    "expandtabs",   "find",        "format",    "format_map", "index",        "isalnum",
    "isalpha",      "isascii",     "isdecimal", "isdigit",    "isidentifier", "islower",
    "isnumeric",    "isprintable", "isspace",   "istitle",    "isupper",      "join",
    "ljust",        "lower",       "lstrip",    "maketrans",  "partition",    "removeprefix",
    "removesuffix", "replace",     "rfind",     "rindex",     "rjust",        "rpartition",
    "rsplit",       "rstrip",      "split",     "splitlines", "startswith",   "strip",
    "swapcase",     "title",       "translate", "upper",      "zfill"};
const Names dict_methods = {"clear", "copy",    "fromkeys",   "get",    "items", "keys",
                            "pop",   "popitem", "setdefault", "update", "values"};
const Names dict_unsafe = {"clear", "pop", "popitem", "setdefault", "update"};
const Names list_methods = {"append", "clear", "copy",   "count",   "extend", "index",
                            "insert", "pop",   "remove", "reverse", "sort"};
const Names list_unsafe = {"append", "clear",  "extend",  "insert",
                           "pop",    "remove", "reverse", "sort"};
const Names tuple_methods = {"count", "index"};

// A str argument; `what` names it in Python's message ("replace() argument 1").
const std::string& str_arg(const Value* v, std::string_view what = {}) {
    if (!v) raise("{} missing required argument", what.empty() ? "method" : what);
    if (!v->is_string())
        raise("{}must be str, not {}", what.empty() ? "" : std::string(what) + " ", type_name(*v));
    return v->as_string();
}

int64_t int_arg(const Value* v, int64_t fallback) {
    if (!v || v->is_none()) return fallback;
    if (!v->is_integral()) raise("'{}' object cannot be interpreted as an integer", type_name(*v));
    return v->as_int();
}

// A str in code points, for the methods that take start/end positions.
struct CodePoints {
    explicit CodePoints(const std::string& s) : s(s), at(text::boundaries(s)) {}
    const std::string& s;
    std::vector<size_t> at;
    int64_t size() const { return static_cast<int64_t>(at.size()) - 1; }
    // Python's slice clamping of [start, end).
    std::pair<int64_t, int64_t> range(const Value* start, const Value* end) const {
        auto clamp = [&](const Value* v, int64_t fallback) {
            int64_t i = int_arg(v, fallback);
            if (i < 0) i = std::max<int64_t>(i + size(), 0);
            return std::min(i, size());
        };
        return {clamp(start, 0), clamp(end, size())};
    }
    int64_t index_of_byte(size_t b) const {
        return static_cast<int64_t>(std::lower_bound(at.begin(), at.end(), b) - at.begin());
    }
    std::string_view view(int64_t from, int64_t to) const {
        if (to < from) return {};
        return std::string_view(s).substr(at[from], at[to] - at[from]);
    }
};

int64_t find(const std::string& s, CallArgs& args, bool reverse, const char* name) {
    ArgBinder bind(name, args, {"sub", "start", "end"});
    const std::string& sub = str_arg(bind.get(0));
    const CodePoints cp(s);
    const int64_t raw_start = int_arg(bind.get(1), 0);
    if (raw_start > cp.size()) return -1;
    const auto [from, to] = cp.range(bind.get(1), bind.get(2));
    if (to < from) return -1;
    const std::string_view range = cp.view(from, to);
    const size_t pos = reverse ? range.rfind(sub) : range.find(sub);
    if (pos == std::string_view::npos) return -1;
    return cp.index_of_byte(cp.at[from] + pos);
}

bool affix_match(const std::string& s, CallArgs& args, bool prefix) {
    const char* name = prefix ? "startswith" : "endswith";
    ArgBinder bind(name, args, {"prefix", "start", "end"});
    if (!bind.get(0)) raise("{}() takes at least 1 argument (0 given)", name);
    std::vector<Value> candidates;
    if (bind.get(0)->is_tuple()) {
        candidates = bind.get(0)->as_array().items;
    } else {
        candidates.push_back(*bind.get(0));
    }
    // Code point positions only matter when start or end is given.
    const bool whole = !bind.get(1) && !bind.get(2);
    std::optional<CodePoints> cp;
    int64_t from = 0, to = 0;
    if (!whole) {
        cp.emplace(s);
        std::tie(from, to) = cp->range(bind.get(1), bind.get(2));
        if (int_arg(bind.get(1), 0) > cp->size()) to = from - 1;  // never matches
    }
    for (const Value& c : candidates) {
        if (!c.is_string())
            raise("{} first arg must be str or a tuple of str, not {}", name, type_name(c));
        if (!whole && to < from) continue;
        const std::string_view range = whole ? std::string_view(s) : cp->view(from, to);
        const std::string& a = c.as_string();
        if (a.size() <= range.size() &&
            (prefix ? range.substr(0, a.size()) == a : range.substr(range.size() - a.size()) == a))
            return true;
    }
    return false;
}

std::string pad(const std::string& s, CallArgs& args, const char* name, char side) {
    ArgBinder bind(name, args, {"width", "fillchar"});
    const int64_t width = int_arg(bind.get(0), 0);
    std::string fill = " ";
    if (bind.get(1)) {
        if (!bind.get(1)->is_string())
            raise("The fill character must be a unicode character, not {}",
                  type_name(*bind.get(1)));
        fill = bind.get(1)->as_string();
        if (text::length(fill) != 1) raise("The fill character must be exactly one character long");
    }
    const int64_t len = static_cast<int64_t>(text::length(s));
    if (width <= len) return s;
    const int64_t marg = std::min<int64_t>(width, static_cast<int64_t>(max_result_size)) - len;
    int64_t left = side == '<' ? 0 : side == '>' ? marg : marg / 2 + (marg & width & 1);
    auto repeat = [&](int64_t n) {
        std::string out;
        for (int64_t i = 0; i < n; ++i) out += fill;
        return out;
    };
    return repeat(left) + s + repeat(marg - left);
}

bool all_chars(const std::string& s, bool (*pred)(char32_t)) {
    if (s.empty()) return false;
    for (size_t i = 0; i < s.size();)
        if (!pred(text::decode(s, i))) return false;
    return true;
}

bool is_title(const std::string& s) {
    bool cased = false, previous_cased = false;
    for (size_t i = 0; i < s.size();) {
        const char32_t c = text::decode(s, i);
        if (text::is_upper(c) || (text::is_cased(c) && !text::is_lower(c))) {
            if (previous_cased) return false;
            previous_cased = cased = true;
        } else if (text::is_lower(c)) {
            if (!previous_cased) return false;
            previous_cased = cased = true;
        } else {
            previous_cased = false;
        }
    }
    return cased;
}

bool has_case(const std::string& s, bool upper) {
    bool cased = false;
    for (size_t i = 0; i < s.size();) {
        const char32_t c = text::decode(s, i);
        const bool this_case = upper ? text::is_upper(c) : text::is_lower(c);
        if (text::is_cased(c) && !this_case) return false;
        cased = cased || this_case;
    }
    return cased;
}

Value strings(std::vector<std::string> parts) {
    std::vector<Value> items;
    for (auto& p : parts) items.push_back(Value::string(std::move(p)));
    return Value::list(std::move(items));
}

// str.format: {}, {0}, {name}, {0.attr}, {0[key]}, !r / !s, :spec.
std::string str_format(const std::string& f, const CallArgs& args) {
    std::string out;
    size_t auto_index = 0;
    bool manual = false, automatic = false;
    for (size_t i = 0; i < f.size();) {
        const char c = f[i];
        if (c == '}') {
            if (i + 1 < f.size() && f[i + 1] == '}') {
                out += '}';
                i += 2;
                continue;
            }
            raise("Single '}}' encountered in format string");
        }
        if (c != '{') {
            out += c;
            ++i;
            continue;
        }
        if (i + 1 < f.size() && f[i + 1] == '{') {
            out += '{';
            i += 2;
            continue;
        }
        const size_t close = f.find('}', i);
        if (close == std::string::npos) raise("Single '{{' encountered in format string");
        std::string field = f.substr(i + 1, close - i - 1);
        if (field.find('{') != std::string::npos) raise("nested format fields are not supported");
        i = close + 1;
        std::string spec, conversion;
        if (const size_t colon = field.find(':'); colon != std::string::npos) {
            spec = field.substr(colon + 1);
            field.resize(colon);
        }
        if (const size_t bang = field.find('!'); bang != std::string::npos) {
            conversion = field.substr(bang + 1);
            field.resize(bang);
        }
        const size_t name_end = std::min(field.find_first_of(".["), field.size());
        const std::string head = field.substr(0, name_end);
        Value v;
        if (head.empty() ||
            std::all_of(head.begin(), head.end(), [](char ch) { return ch >= '0' && ch <= '9'; })) {
            size_t index;
            if (head.empty()) {
                if (manual)
                    raise(
                        "cannot switch from manual field specification to automatic field "
                        "numbering");
                automatic = true;
                index = auto_index++;
            } else {
                if (automatic)
                    raise(
                        "cannot switch from automatic field numbering to manual field "
                        "specification");
                manual = true;
                index = static_cast<size_t>(std::stoull(head.substr(0, 9)));
            }
            if (index >= args.positional.size())
                raise("Replacement index {} out of range for positional args tuple", index);
            v = args.positional[index];
        } else {
            const auto it = std::find_if(args.keyword.begin(), args.keyword.end(),
                                         [&](const auto& kv) { return kv.first == head; });
            if (it == args.keyword.end()) raise("KeyError: {}", string_repr(head));
            v = it->second;
        }
        for (size_t k = name_end; k < field.size();) {
            if (field[k] == '.') {
                const size_t end = std::min(field.find_first_of(".[", k + 1), field.size());
                v = get_attribute(v, field.substr(k + 1, end - k - 1));
                k = end;
            } else {
                const size_t end = field.find(']', k);
                if (end == std::string::npos) raise("Missing ']' in format string");
                const std::string key = field.substr(k + 1, end - k - 1);
                const bool digits =
                    !key.empty() && std::all_of(key.begin(), key.end(),
                                                [](char ch) { return ch >= '0' && ch <= '9'; });
                v = get_item(
                    v, digits ? Value::integer(std::stoll(key.substr(0, 18))) : Value::string(key));
                k = end + 1;
            }
        }
        if (conversion == "r" || conversion == "a") {
            v = Value::string(py_repr(v));
        } else if (conversion == "s") {
            v = Value::string(py_str(v));
        } else if (!conversion.empty()) {
            raise("Unknown conversion specifier {}", conversion);
        }
        out += format_with_spec(v, spec);
        if (out.size() > max_result_size) raise("result too large");
    }
    return out;
}

// str methods that take no arguments.
const Names str_no_args = {"upper",   "lower",   "casefold",  "title",   "capitalize", "swapcase",
                           "isspace", "isalpha", "isdecimal", "isdigit", "isnumeric",  "isalnum",
                           "isascii", "islower", "isupper",   "istitle"};

Value str_method(const std::string& s, std::string_view name, CallArgs& args) {
    if (str_no_args.count(name) && (!args.positional.empty() || !args.keyword.empty()))
        raise("str.{}() takes no arguments ({} given)", name,
              args.positional.size() + args.keyword.size());
    if (name == "upper") return Value::string(text::upper(s));
    if (name == "lower" || name == "casefold") return Value::string(text::lower(s));
    if (name == "title") return Value::string(text::title(s));
    if (name == "capitalize") return Value::string(text::capitalize(s));
    if (name == "swapcase") return Value::string(text::swapcase(s));
    if (name == "strip" || name == "lstrip" || name == "rstrip") {
        ArgBinder bind(name, args, {"chars"});
        const Value* chars = bind.get(0);
        if (chars && !chars->is_none() && !chars->is_string())
            raise("{} arg must be None or str", name);
        const std::string* set = chars && chars->is_string() ? &chars->as_string() : nullptr;
        return Value::string(text::strip(s, set, name != "rstrip", name != "lstrip"));
    }
    if (name == "split" || name == "rsplit") {
        ArgBinder bind(name, args, {"sep", "maxsplit"});
        const Value* sep = bind.get(0);
        if (sep && !sep->is_none() && !sep->is_string())
            raise("must be str or None, not {}", type_name(*sep));
        const std::string* sep_s = sep && sep->is_string() ? &sep->as_string() : nullptr;
        if (sep_s && sep_s->empty()) raise("empty separator");
        const int64_t maxsplit = int_arg(bind.get(1), -1);
        return strings(name == "split" ? text::split(s, sep_s, maxsplit)
                                       : text::rsplit(s, sep_s, maxsplit));
    }
    if (name == "splitlines") {
        ArgBinder bind(name, args, {"keepends"});
        return strings(text::splitlines(s, bind.get(0) && truthy(*bind.get(0))));
    }
    if (name == "startswith" || name == "endswith")
        return Value::boolean(affix_match(s, args, name == "startswith"));
    if (name == "find" || name == "rfind")
        return Value::integer(find(s, args, name == "rfind", name == "find" ? "find" : "rfind"));
    if (name == "index" || name == "rindex") {
        const int64_t i = find(s, args, name == "rindex", name == "index" ? "index" : "rindex");
        if (i < 0) raise("substring not found");
        return Value::integer(i);
    }
    if (name == "count") {
        ArgBinder bind("count", args, {"sub", "start", "end"});
        const std::string& sub = str_arg(bind.get(0));
        const CodePoints cp(s);
        const auto [from, to] = cp.range(bind.get(1), bind.get(2));
        if (to < from || int_arg(bind.get(1), 0) > cp.size()) return Value::integer(0);
        if (sub.empty()) return Value::integer(to - from + 1);
        const std::string_view range = cp.view(from, to);
        int64_t n = 0;
        for (size_t p = range.find(sub); p != std::string_view::npos;
             p = range.find(sub, p + sub.size()))
            ++n;
        return Value::integer(n);
    }
    if (name == "replace") {
        ArgBinder bind("replace", args, {"old", "new", "count"});
        return Value::string(text::replace(s, str_arg(bind.get(0), "replace() argument 1"),
                                           str_arg(bind.get(1), "replace() argument 2"),
                                           int_arg(bind.get(2), -1)));
    }
    if (name == "join") {
        ArgBinder bind("join", args, {"iterable"});
        if (!bind.get(0)) raise("join() takes exactly one argument (0 given)");
        const Value& iterable = *bind.get(0);
        if (!iterable.is_undefined() && !iterable.is_string() && !iterable.is_array() &&
            !iterable.is_dict() && !iterable.is_object())
            raise("can only join an iterable");
        std::string out;
        size_t i = 0;
        for (const Value& item : iterate(*bind.get(0))) {
            if (!item.is_string())
                raise("sequence item {}: expected str instance, {} found", i, type_name(item));
            if (i++) out += s;
            out += item.as_string();
            if (out.size() > max_result_size) raise("result too large");
        }
        return Value::string(std::move(out));
    }
    if (name == "center") return Value::string(pad(s, args, "center", '^'));
    if (name == "ljust") return Value::string(pad(s, args, "ljust", '<'));
    if (name == "rjust") return Value::string(pad(s, args, "rjust", '>'));
    if (name == "zfill") {
        ArgBinder bind("zfill", args, {"width"});
        const int64_t width = std::min<int64_t>(int_arg(bind.get(0), 0), max_result_size);
        const int64_t len = static_cast<int64_t>(text::length(s));
        if (width <= len) return Value::string(s);
        const size_t sign = !s.empty() && (s[0] == '+' || s[0] == '-');
        std::string out = s;
        out.insert(sign, static_cast<size_t>(width - len), '0');
        return Value::string(std::move(out));
    }
    if (name == "partition" || name == "rpartition") {
        ArgBinder bind(name, args, {"sep"});
        const std::string& sep = str_arg(bind.get(0));
        if (sep.empty()) raise("empty separator");
        const size_t p = name == "partition" ? s.find(sep) : s.rfind(sep);
        if (p == std::string::npos) {
            if (name == "partition")
                return Value::tuple({Value::string(s), Value::string(""), Value::string("")});
            return Value::tuple({Value::string(""), Value::string(""), Value::string(s)});
        }
        return Value::tuple({Value::string(s.substr(0, p)), Value::string(sep),
                             Value::string(s.substr(p + sep.size()))});
    }
    if (name == "removeprefix" || name == "removesuffix") {
        ArgBinder bind(name, args, {"affix"});
        const std::string& a = str_arg(bind.get(0), std::string(name) + "() argument");
        const bool prefix = name == "removeprefix";
        if (a.size() <= s.size() && (prefix ? s.compare(0, a.size(), a) == 0
                                            : s.compare(s.size() - a.size(), a.size(), a) == 0))
            return Value::string(prefix ? s.substr(a.size()) : s.substr(0, s.size() - a.size()));
        return Value::string(s);
    }
    if (name == "format") return Value::string(str_format(s, args));
    if (name == "isspace") return Value::boolean(all_chars(s, text::is_space));
    if (name == "isalpha") return Value::boolean(all_chars(s, text::is_alpha));
    if (name == "isdecimal" || name == "isdigit")
        return Value::boolean(all_chars(s, text::is_decimal));
    if (name == "isnumeric") return Value::boolean(all_chars(s, text::is_numeric));
    if (name == "isalnum")
        return Value::boolean(
            all_chars(s, [](char32_t c) { return text::is_alpha(c) || text::is_numeric(c); }));
    if (name == "isascii") return Value::boolean(text::is_ascii(s));
    if (name == "islower") return Value::boolean(has_case(s, false));
    if (name == "isupper") return Value::boolean(has_case(s, true));
    if (name == "istitle") return Value::boolean(is_title(s));
    raise("str.{}() is not supported", name);
}

Value dict_method(const Value& self, std::string_view name, CallArgs& args) {
    const Dict& d = self.as_dict();
    if (name == "get") {
        ArgBinder bind("get", args, {"key", "default"});
        if (!bind.get(0)) raise("get expected at least 1 argument, got 0");
        require_hashable(*bind.get(0));
        const Value* v = d.find(*bind.get(0));
        return v ? *v : bind.get_or(1, Value::none());
    }
    ArgBinder(name, args, {});
    std::vector<Value> out;
    if (name == "copy") return self;
    for (const auto& [k, v] : d.entries) {
        if (name == "items")
            out.push_back(Value::tuple({k, v}));
        else if (name == "keys")
            out.push_back(k);
        else if (name == "values")
            out.push_back(v);
        else
            raise("dict.{}() is not supported", name);
    }
    return Value::list(std::move(out));
}

Value sequence_method(const Value& self, std::string_view name, CallArgs& args) {
    const auto& items = self.as_array().items;
    if (name == "copy") {
        ArgBinder("copy", args, {});
        return self;
    }
    ArgBinder bind(name, args, {"value", "start", "stop"});
    if (!bind.get(0)) raise("{} expected at least 1 argument, got 0", name);
    if (name == "count")
        return Value::integer(std::count_if(
            items.begin(), items.end(), [&](const Value& v) { return equals(v, *bind.get(0)); }));
    const int64_t n = static_cast<int64_t>(items.size());
    auto clamp = [&](const Value* v, int64_t fallback) {
        int64_t i = int_arg(v, fallback);
        if (i < 0) i = std::max<int64_t>(i + n, 0);
        return std::min(i, n);
    };
    for (int64_t i = clamp(bind.get(1), 0), end = clamp(bind.get(2), n); i < end; ++i)
        if (equals(items[i], *bind.get(0))) return Value::integer(i);
    raise("{} is not in {}", py_repr(*bind.get(0)), type_name(self));
}

}  // namespace

MethodKind method_kind(const Value& self, std::string_view name) {
    switch (self.kind()) {
        case Kind::string:
            return str_methods.count(name) ? MethodKind::safe : MethodKind::none;
        case Kind::dict:
            if (!dict_methods.count(name)) return MethodKind::none;
            return dict_unsafe.count(name) ? MethodKind::unsafe : MethodKind::safe;
        case Kind::array:
            if (self.is_tuple())
                return tuple_methods.count(name) ? MethodKind::safe : MethodKind::none;
            if (!list_methods.count(name)) return MethodKind::none;
            return list_unsafe.count(name) ? MethodKind::unsafe : MethodKind::safe;
        default:
            return MethodKind::none;
    }
}

Value unsafe_method(const Value& self, std::string_view name) {
    return Value::undefined(fmt::format("access to attribute {} of {} object is unsafe.",
                                        string_repr(name), string_repr(type_name(self))));
}

Value call_method(const Value& self, std::string_view name, CallArgs& args) {
    switch (self.kind()) {
        case Kind::string:
            return str_method(self.as_string(), name, args);
        case Kind::dict:
            if (name == "fromkeys") {
                ArgBinder bind("fromkeys", args, {"iterable", "value"});
                if (!bind.get(0)) raise("fromkeys expected at least 1 argument, got 0");
                Dict d;
                for (Value& k : iterate(*bind.get(0))) {
                    require_hashable(k);
                    d.set(std::move(k), bind.get_or(1, Value::none()));
                }
                return Value::dict(std::move(d));
            }
            return dict_method(self, name, args);
        case Kind::array:
            return sequence_method(self, name, args);
        default:
            raise("'{}' object has no attribute {}", type_name(self), string_repr(name));
    }
}

std::string BoundMethod::repr() const {
    return fmt::format("<built-in method {} of {} object>", name_, jinja::type_name(self_));
}

}  // namespace anelm::jinja
