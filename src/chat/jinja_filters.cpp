// Jinja2's built-in filters (plus transformers' tojson), with Python semantics.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <optional>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_format.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_json.h"
#include "chat/jinja_methods.h"
#include "chat/jinja_objects.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_printf.h"
#include "chat/jinja_text.h"

namespace anelm::jinja {
namespace {

constexpr int64_t max_batch_fill = 100000;

using Items = std::vector<Value>;

Value lowered(const Value& v) {
    return v.is_string() ? Value::string(text::lower(v.as_string())) : v;
}

// The getter behind `attribute=`: "a.b" reads item a then b; digits are indices.
struct AttrGetter {
    std::vector<Value> parts;
    std::optional<Value> fallback;  // used where a part is undefined
    bool ignore_case = false;

    AttrGetter(const Value* attribute, const Value* fallback, bool ignore_case)
        : ignore_case(ignore_case) {
        if (fallback) this->fallback = *fallback;
        if (!attribute || attribute->is_none()) return;
        if (!attribute->is_string()) {
            parts.push_back(*attribute);
            return;
        }
        const std::string sep = ".";
        for (const std::string& p : text::split(attribute->as_string(), &sep, -1)) {
            const bool digits = !p.empty() && std::all_of(p.begin(), p.end(), [](char c) {
                return c >= '0' && c <= '9';
            });
            parts.push_back(digits ? Value::integer(std::strtoll(p.c_str(), nullptr, 10))
                                   : Value::string(p));
        }
    }

    Value operator()(Value item) const {
        for (const Value& part : parts) {
            item = get_item(item, part);
            if (fallback && item.is_undefined()) item = *fallback;
        }
        return ignore_case ? lowered(item) : item;
    }
};

bool is_true(const Value* v) {
    return v && truthy(*v);
}

Value list_of(Items items) {
    return Value::list(std::move(items));
}

Value generator(Interpreter& in, std::string type, std::string name, Generator::Next next) {
    auto g = std::make_shared<Generator>(std::move(type), std::move(name), std::move(next));
    in.track(g);
    return Value::object(g);
}

// Maps an item to what the generator yields; nullopt skips it.
using Step = std::function<std::optional<Value>(const Value&)>;

// A generator over `source` as a Python generator function makes it: nothing
// runs until the first pull, which calls `setup` (argument checks happen there)
// and starts iterating. With skip_falsy a false source yields nothing, as
// map and select do (`if value:`).
Value lazy(Interpreter& in, std::string name, Value source, bool skip_falsy,
           std::function<Step()> setup) {
    struct State {
        Value source;
        bool skip_falsy;
        std::function<Step()> setup;
        Step step;
        std::optional<Cursor> cursor;
        bool started = false;
    };
    auto st = std::make_shared<State>(
        State{std::move(source), skip_falsy, std::move(setup), {}, {}, false});
    return generator(in, "generator", std::move(name), [st]() -> std::optional<Value> {
        if (!st->started) {
            st->started = true;
            if (st->skip_falsy && !truthy(st->source)) return std::nullopt;
            st->step = st->setup();
            st->cursor.emplace(st->source);
        }
        if (!st->cursor) return std::nullopt;
        while (auto item = st->cursor->next())
            if (auto out = st->step(*item)) return out;
        return std::nullopt;
    });
}

// A generator yielding `items` once (a reverse iterator, or a whole result
// computed at the first pull by `produce`).
Value lazy_items(Interpreter& in, std::string type, std::string name,
                 std::function<Items()> produce) {
    struct State {
        std::function<Items()> produce;
        Items items;
        size_t pos = 0;
        bool started = false;
    };
    auto st = std::make_shared<State>(State{std::move(produce), {}, 0, false});
    return generator(in, std::move(type), std::move(name), [st]() -> std::optional<Value> {
        if (!st->started) {
            st->started = true;
            st->items = st->produce();
        }
        if (st->pos >= st->items.size()) return std::nullopt;
        return st->items[st->pos++];
    });
}

// ---- filters ----

Value f_abs(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder("abs", args, {});
    if (v.is_integral()) {
        if (v.as_int() == INT64_MIN) raise("integer overflow");
        return Value::integer(std::llabs(v.as_int()));
    }
    if (v.is_float()) return Value::number(std::fabs(v.as_float()));
    if (v.is_undefined()) raise_undefined(v);
    raise("bad operand type for abs(): '{}'", type_name(v));
}

Value f_attr(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("attr", args, {"name"});
    if (!bind.get(0)) raise("attr() missing required argument 'name'");
    const std::string name = py_str(*bind.get(0));
    if (v.is_undefined()) raise_undefined(v);
    if (v.is_object()) return v.as_object().attribute(name);
    switch (method_kind(v, name)) {
        case MethodKind::safe:
            return Value::object(std::make_shared<BoundMethod>(v, name));
        case MethodKind::unsafe:
            return unsafe_method(v, name);
        case MethodKind::none:
            break;
    }
    return undefined_attribute(v, name);
}

Value f_batch(Interpreter& in, const Value& v, CallArgs& args) {
    return lazy_items(in, "generator", "do_batch", [v, args]() {
        ArgBinder bind("batch", args, {"linecount", "fill_with"});
        if (!bind.get(0) || !bind.get(0)->is_integral())
            raise("batch() requires an integer linecount");
        const int64_t n = bind.get(0)->as_int();
        Items out, tmp;
        Cursor cursor(v);
        while (auto item = cursor.next()) {
            if (static_cast<int64_t>(tmp.size()) == n)
                out.push_back(list_of(std::move(tmp))), tmp.clear();
            tmp.push_back(std::move(*item));
        }
        if (!tmp.empty()) {
            if (bind.get(1) && !bind.get(1)->is_none()) {
                // The fill pads the last batch to linecount items: no more than range() allows.
                if (n > max_batch_fill) raise("batch() linecount too large to fill");
                while (static_cast<int64_t>(tmp.size()) < n) tmp.push_back(*bind.get(1));
            }
            out.push_back(list_of(std::move(tmp)));
        }
        return out;
    });
}

Value f_capitalize(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder("capitalize", args, {});
    return Value::string(text::capitalize(py_str(v)));
}

Value f_center(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("center", args, {"width"});
    CallArgs call;
    call.positional.push_back(bind.get_or(0, Value::integer(80)));
    return call_method(Value::string(py_str(v)), "center", call);
}

Value f_default(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("default", args, {"default_value", "boolean"});
    if (v.is_undefined() || (is_true(bind.get(1)) && !truthy(v)))
        return bind.get_or(0, Value::string(""));
    return v;
}

Value f_dictsort(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("dictsort", args, {"case_sensitive", "by", "reverse"});
    if (v.is_undefined()) raise_undefined(v);
    if (!v.is_dict()) raise("'{}' object has no attribute 'items'", type_name(v));
    const std::string by = bind.get(1) ? py_str(*bind.get(1)) : "key";
    if (by != "key" && by != "value") raise("You can only sort by either \"key\" or \"value\"");
    const bool ignore_case = !is_true(bind.get(0));
    std::vector<std::pair<Value, Value>> entries = v.as_dict().entries;
    auto key = [&](const std::pair<Value, Value>& e) {
        const Value& k = by == "key" ? e.first : e.second;
        return ignore_case ? lowered(k) : k;
    };
    const bool reverse = is_true(bind.get(2));
    std::stable_sort(entries.begin(), entries.end(), [&](const auto& a, const auto& b) {
        return reverse ? less(key(b), key(a)) : less(key(a), key(b));
    });
    Items out;
    for (auto& [k, val] : entries) out.push_back(Value::tuple({k, val}));
    return list_of(std::move(out));
}

Value f_escape(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder("escape", args, {});
    std::string out;
    for (char c : py_str(v)) {
        switch (c) {
            case '&':
                out += "&amp;";
                break;
            case '<':
                out += "&lt;";
                break;
            case '>':
                out += "&gt;";
                break;
            case '"':
                out += "&#34;";
                break;
            case '\'':
                out += "&#39;";
                break;
            default:
                out += c;
        }
    }
    return Value::string(std::move(out));
}

Value f_first(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder("first", args, {});
    if (auto item = Cursor(v).next()) return *item;
    return Value::undefined("No first item, sequence was empty.");
}

Value f_last(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder("last", args, {});
    if (!v.is_undefined() && !v.is_string() && !v.is_array() && !v.is_dict())
        raise("'{}' object is not reversible", type_name(v));
    Items items = iterate(v);
    if (items.empty()) return Value::undefined("No last item, sequence was empty.");
    return items.back();
}

// Python's float(str): surrounding whitespace allowed, underscores between digits.
bool parse_float(std::string s, double& out) {
    s = text::strip(s, nullptr, true, true);
    std::string clean;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '_') {
            if (i == 0 || i + 1 == s.size() ||
                !std::isdigit(static_cast<unsigned char>(s[i - 1])) ||
                !std::isdigit(static_cast<unsigned char>(s[i + 1])))
                return false;
            continue;
        }
        clean += s[i];
    }
    if (clean.empty()) return false;
    const std::string lower = text::lower(clean);
    const size_t sign = lower[0] == '+' || lower[0] == '-';
    const std::string body = lower.substr(sign);
    if (body == "inf" || body == "infinity" || body == "nan") {
        out = body == "nan" ? NAN : INFINITY;
        if (lower[0] == '-') out = -out;
        return true;
    }
    if (body.find_first_not_of("0123456789.e+-") != std::string::npos || body.find("0x") == 0)
        return false;
    char* end = nullptr;
    out = std::strtod(clean.c_str(), &end);
    return end && *end == 0;
}

Value f_float(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("float", args, {"default"});
    const Value fallback = bind.get_or(0, Value::number(0.0));
    if (v.is_undefined()) raise_undefined(v);
    if (v.is_number()) return Value::number(v.as_float());
    double d = 0;
    if (v.is_string() && parse_float(v.as_string(), d)) return Value::number(d);
    return fallback;
}

Value f_format(Interpreter&, const Value& v, CallArgs& args) {
    if (!args.positional.empty() && !args.keyword.empty())
        raise("can't handle positional and keyword arguments at the same time");
    if (!args.keyword.empty()) {
        Dict d;
        for (auto& [k, val] : args.keyword) d.set(Value::string(k), val);
        return Value::string(percent_format(py_str(v), Value::dict(std::move(d))));
    }
    return Value::string(percent_format(py_str(v), Value::tuple(args.positional)));
}

Value f_indent(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("indent", args, {"width", "first", "blank"});
    const Value width = bind.get_or(0, Value::integer(4));
    std::string indention;
    if (width.is_string()) {
        indention = width.as_string();
    } else if (width.is_integral()) {
        indention.assign(static_cast<size_t>(std::clamp<int64_t>(width.as_int(), 0, 10000)), ' ');
    } else {
        raise("can't multiply sequence by non-int of type '{}'", type_name(width));
    }
    // Python appends "\n" to the value itself, which only a str allows.
    if (v.is_undefined()) raise_undefined(v);
    if (v.is_list()) raise("'list' object has no attribute 'splitlines'");
    if (v.is_tuple()) raise("can only concatenate tuple (not \"str\") to tuple");
    if (!v.is_string()) raise("unsupported operand type(s) for +=: '{}' and 'str'", type_name(v));
    const std::string s = v.as_string() + "\n";
    const std::vector<std::string> lines = text::splitlines(s, false);
    std::string rv;
    if (is_true(bind.get(2))) {
        for (size_t i = 0; i < lines.size(); ++i) rv += (i ? "\n" + indention : "") + lines[i];
    } else {
        rv = lines.empty() ? "" : lines[0];
        for (size_t i = 1; i < lines.size(); ++i)
            rv += "\n" + (lines[i].empty() ? lines[i] : indention + lines[i]);
    }
    if (is_true(bind.get(1))) rv = indention + rv;
    return Value::string(std::move(rv));
}

// Python's int(str, base): whitespace, sign, underscores and (for base 0/16/8/2) prefixes.
bool parse_int(const std::string& raw, int64_t base, int64_t& out) {
    std::string s = text::strip(raw, nullptr, true, true);
    bool negative = false;
    if (!s.empty() && (s[0] == '+' || s[0] == '-')) negative = s[0] == '-', s.erase(0, 1);
    if (s.size() > 1 && s[0] == '0') {
        const char p = static_cast<char>(s[1] | 0x20);
        const int64_t prefixed = p == 'x' ? 16 : p == 'o' ? 8 : p == 'b' ? 2 : 0;
        if (prefixed && (base == 0 || base == prefixed)) s.erase(0, 2), base = prefixed;
    }
    if (base == 0) base = 10;
    if (base < 2 || base > 36 || s.empty() || s.front() == '_' || s.back() == '_') return false;
    uint64_t v = 0;
    for (size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '_') {
            if (s[i + 1] == '_') return false;
            continue;
        }
        const char c = static_cast<char>(s[i] | 0x20);
        const int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'z' ? c - 'a' + 10 : 99;
        if (d >= base) return false;
        if (v > (UINT64_MAX - d) / base) raise("int too large");
        v = v * base + d;
    }
    if (v > static_cast<uint64_t>(INT64_MAX) + negative) raise("int too large");
    out = negative ? static_cast<int64_t>(0 - v) : static_cast<int64_t>(v);
    return true;
}

Value float_to_int(double d, const Value& fallback) {
    if (std::isnan(d)) return fallback;
    if (std::isinf(d)) raise("cannot convert float infinity to integer");
    if (std::fabs(d) >= 9.2e18) raise("int too large");
    return Value::integer(static_cast<int64_t>(std::trunc(d)));
}

Value f_int(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("int", args, {"default", "base"});
    const Value fallback = bind.get_or(0, Value::integer(0));
    const Value base = bind.get_or(1, Value::integer(10));
    if (v.is_undefined()) raise_undefined(v);
    if (v.is_integral()) return Value::integer(v.as_int());
    if (v.is_float()) return float_to_int(v.as_float(), fallback);
    if (v.is_string()) {
        int64_t i = 0;
        if (base.is_integral() && parse_int(v.as_string(), base.as_int(), i))
            return Value::integer(i);
        double d = 0;
        if (parse_float(v.as_string(), d)) return float_to_int(d, fallback);
    }
    return fallback;
}

Value f_items(Interpreter& in, const Value& v, CallArgs& args) {
    ArgBinder("items", args, {});
    return lazy_items(in, "generator", "do_items", [v]() {
        Items out;
        if (v.is_undefined()) return out;
        if (!v.is_dict()) raise("Can only get item pairs from a mapping.");
        for (const auto& [k, val] : v.as_dict().entries) out.push_back(Value::tuple({k, val}));
        return out;
    });
}

Value f_join(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("join", args, {"d", "attribute"});
    const std::string sep = bind.get(0) ? py_str(*bind.get(0)) : "";
    const AttrGetter get(bind.get(1), nullptr, false);
    std::string out;
    bool first = true;
    for (const Value& item : iterate(v)) {
        if (!first) out += sep;
        first = false;
        out += py_str(get(item));
        if (out.size() > max_result_size) raise("result too large");
    }
    return Value::string(std::move(out));
}

Value f_length(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder("length", args, {});
    return Value::integer(static_cast<int64_t>(length(v)));
}

Value f_list(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder("list", args, {});
    return list_of(iterate(v));
}

Value f_lower(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder("lower", args, {});
    return Value::string(text::lower(py_str(v)));
}

Value f_upper(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder("upper", args, {});
    return Value::string(text::upper(py_str(v)));
}

Value f_map(Interpreter& in, const Value& v, CallArgs& args) {
    return lazy(in, "sync_do_map", v, true, [&in, args]() -> Step {
        const Value* attribute = nullptr;
        const Value* fallback = nullptr;
        for (const auto& [k, val] : args.keyword) {
            if (k == "attribute") attribute = &val;
            if (k == "default") fallback = &val;
        }
        if (args.positional.empty() && attribute) {
            for (const auto& [k, _] : args.keyword)
                if (k != "attribute" && k != "default")
                    raise("Unexpected keyword argument {}", string_repr(k));
            return [get = AttrGetter(attribute, fallback, false)](
                       const Value& item) -> std::optional<Value> { return get(item); };
        }
        if (args.positional.empty()) raise("map requires a filter argument");
        const std::string name = py_str(args.positional[0]);
        const CallArgs rest{{args.positional.begin() + 1, args.positional.end()}, args.keyword};
        return [&in, name, rest](const Value& item) -> std::optional<Value> {
            CallArgs call = rest;
            return in.call_filter(name, item, call);
        };
    });
}

Value min_or_max(const Value& v, CallArgs& args, const char* name, bool want_max) {
    ArgBinder bind(name, args, {"case_sensitive", "attribute"});
    const AttrGetter key(bind.get(1), nullptr, !is_true(bind.get(0)));
    Items items = iterate(v);
    if (items.empty()) return Value::undefined("No aggregated item, sequence was empty.");
    size_t best = 0;
    Value best_key = key(items[0]);
    for (size_t i = 1; i < items.size(); ++i) {
        Value k = key(items[i]);
        if (compare(want_max ? CompareOp::gt : CompareOp::lt, k, best_key))
            best = i, best_key = std::move(k);
    }
    return items[best];
}

Value f_max(Interpreter&, const Value& v, CallArgs& args) {
    return min_or_max(v, args, "max", true);
}
Value f_min(Interpreter&, const Value& v, CallArgs& args) {
    return min_or_max(v, args, "min", false);
}

// select / reject / selectattr / rejectattr.
Value select_items(Interpreter& in, const Value& v, CallArgs& args, bool keep, bool by_attr) {
    return lazy(in, "select_or_reject", v, true, [&in, args, keep, by_attr]() -> Step {
        size_t off = 0;
        std::optional<AttrGetter> get;
        if (by_attr) {
            if (args.positional.empty()) raise("Missing parameter for attribute name");
            get.emplace(&args.positional[0], nullptr, false);
            off = 1;
        }
        std::optional<std::string> test;
        CallArgs rest{{}, args.keyword};
        if (args.positional.size() > off) {
            test = py_str(args.positional[off]);
            rest.positional.assign(args.positional.begin() + off + 1, args.positional.end());
        }
        return [&in, get, test, rest, keep](const Value& item) -> std::optional<Value> {
            const Value subject = get ? (*get)(item) : item;
            CallArgs call = rest;
            const bool pass = test ? in.call_test(*test, subject, call) : truthy(subject);
            if (pass != keep) return std::nullopt;
            return item;
        };
    });
}

Value f_select(Interpreter& in, const Value& v, CallArgs& a) {
    return select_items(in, v, a, true, false);
}
Value f_reject(Interpreter& in, const Value& v, CallArgs& a) {
    return select_items(in, v, a, false, false);
}
Value f_selectattr(Interpreter& in, const Value& v, CallArgs& a) {
    return select_items(in, v, a, true, true);
}
Value f_rejectattr(Interpreter& in, const Value& v, CallArgs& a) {
    return select_items(in, v, a, false, true);
}

Value f_replace(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("replace", args, {"old", "new", "count"});
    if (!bind.get(0) || !bind.get(1)) raise("replace() missing required arguments 'old' and 'new'");
    const Value count = bind.get_or(2, Value::none());
    if (!count.is_none() && !count.is_integral())
        raise("'{}' object cannot be interpreted as an integer", type_name(count));
    return Value::string(text::replace(py_str(v), py_str(*bind.get(0)), py_str(*bind.get(1)),
                                       count.is_none() ? -1 : count.as_int()));
}

Value f_reverse(Interpreter& in, const Value& v, CallArgs& args) {
    ArgBinder("reverse", args, {});
    if (v.is_string()) return get_slice(v, Value::none(), Value::none(), Value::integer(-1));
    if (v.is_array() || v.is_dict() || v.is_undefined()) {
        // reversed(): a one-pass iterator over the sequence backwards.
        const char* type = v.is_list()   ? "list_reverseiterator"
                           : v.is_dict() ? "dict_reversekeyiterator"
                                         : "reversed";
        Items items = iterate(v);
        std::reverse(items.begin(), items.end());
        return lazy_items(in, type, type, [items]() { return items; });
    }
    if (!v.is_object() || !dynamic_cast<Generator*>(&v.as_object()))
        raise("argument must be iterable");
    Items items = iterate(v);
    std::reverse(items.begin(), items.end());
    return list_of(std::move(items));
}

Value f_round(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("round", args, {"precision", "method"});
    const Value precision = bind.get_or(0, Value::integer(0));
    const std::string method = bind.get(1) ? py_str(*bind.get(1)) : "common";
    if (method != "common" && method != "ceil" && method != "floor")
        raise("method must be common, ceil or floor");
    if (!v.is_number()) raise("type {} doesn't define __round__ method", type_name(v));
    if (!precision.is_integral())
        raise("'{}' object cannot be interpreted as an integer", type_name(precision));
    const int64_t p = std::clamp<int64_t>(precision.as_int(), -400, 400);
    const double scale = std::pow(10.0, static_cast<double>(p));
    if (method != "common") {
        const double x = v.as_float() * scale;
        return Value::number((method == "ceil" ? std::ceil(x) : std::floor(x)) / scale);
    }
    if (v.is_integral()) {
        if (p >= 0) return Value::integer(v.as_int());
        return Value::integer(
            static_cast<int64_t>(std::nearbyint(double(v.as_int()) * scale) / scale));
    }
    const double d = v.as_float();
    if (!std::isfinite(d)) return v;
    if (p < 0) return Value::number(std::nearbyint(d * scale) / scale);
    // Python rounds the exact binary value half to even, as printf does.
    char buf[512];
    std::snprintf(buf, sizeof buf, "%.*f", static_cast<int>(std::min<int64_t>(p, 340)), d);
    return Value::number(std::strtod(buf, nullptr));
}

Value f_safe(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder("safe", args, {});
    return Value::string(py_str(v));
}

Value f_slice(Interpreter& in, const Value& v, CallArgs& args) {
    return lazy_items(in, "generator", "sync_do_slice", [v, args]() {
        ArgBinder bind("slice", args, {"slices", "fill_with"});
        if (!bind.get(0) || !bind.get(0)->is_integral())
            raise("slice() requires an integer number of slices");
        const Items seq = iterate(v);
        const int64_t slices = std::min<int64_t>(bind.get(0)->as_int(), 100000);
        if (slices <= 0) raise("integer division or modulo by zero");
        const int64_t n = static_cast<int64_t>(seq.size());
        const int64_t per = n / slices, extra = n % slices;
        const Value* fill = bind.get(1) && !bind.get(1)->is_none() ? bind.get(1) : nullptr;
        Items out;
        int64_t offset = 0;
        for (int64_t k = 0; k < slices; ++k) {
            const int64_t start = offset + k * per;
            if (k < extra) ++offset;
            const int64_t end = offset + (k + 1) * per;
            Items part(seq.begin() + start, seq.begin() + end);
            if (fill && k >= extra) part.push_back(*fill);
            out.push_back(list_of(std::move(part)));
        }
        return out;
    });
}

Value f_sort(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("sort", args, {"reverse", "case_sensitive", "attribute"});
    const bool reverse = is_true(bind.get(0));
    const bool ignore_case = !is_true(bind.get(1));
    std::vector<AttrGetter> getters;
    if (bind.get(2) && bind.get(2)->is_string()) {
        const std::string comma = ",";
        for (const std::string& part : text::split(bind.get(2)->as_string(), &comma, -1)) {
            const Value name = Value::string(part);
            getters.emplace_back(&name, nullptr, ignore_case);
        }
    } else {
        getters.emplace_back(bind.get(2), nullptr, ignore_case);
    }
    Items items = iterate(v);
    std::vector<std::pair<Value, size_t>> keyed;
    for (size_t i = 0; i < items.size(); ++i) {
        Items key;
        for (const auto& g : getters) key.push_back(g(items[i]));
        keyed.emplace_back(key.size() == 1 ? key[0] : Value::list(std::move(key)), i);
    }
    std::stable_sort(keyed.begin(), keyed.end(), [&](const auto& a, const auto& b) {
        return reverse ? less(b.first, a.first) : less(a.first, b.first);
    });
    Items out;
    for (const auto& [_, i] : keyed) out.push_back(items[i]);
    return list_of(std::move(out));
}

Value f_string(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder("string", args, {});
    return Value::string(py_str(v));
}

Value f_sum(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("sum", args, {"attribute", "start"});
    const AttrGetter get(bind.get(0), nullptr, false);
    Value total = bind.get_or(1, Value::integer(0));
    for (const Value& item : iterate(v)) total = binary_op(BinaryOp::add, total, get(item));
    return total;
}

Value f_title(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder("title", args, {});
    const std::string s = py_str(v);
    std::string out;
    bool word_start = true;
    for (size_t i = 0; i < s.size();) {
        const char32_t c = text::decode(s, i);
        const bool separator =
            c == '-' || c == '(' || c == '{' || c == '[' || c == '<' || text::is_space(c);
        if (separator) {
            text::append(out, c);
            word_start = true;
        } else {
            text::append(out, word_start ? text::to_upper(c) : text::to_lower(c));
            word_start = false;
        }
    }
    return Value::string(std::move(out));
}

Value f_tojson(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("tojson", args, {"ensure_ascii", "indent", "separators", "sort_keys"});
    JsonOptions options;
    options.ensure_ascii = is_true(bind.get(0));
    options.sort_keys = is_true(bind.get(3));
    const Value indent = bind.get_or(1, Value::none());
    if (indent.is_string()) {
        options.indent = indent.as_string();
    } else if (indent.is_integral()) {
        options.indent =
            std::string(static_cast<size_t>(std::clamp<int64_t>(indent.as_int(), 0, 1000)), ' ');
    } else if (!indent.is_none()) {
        raise("can't multiply sequence by non-int of type '{}'", type_name(indent));
    }
    if (options.indent) options.item_separator.assign(1, ',');  // json.dumps with an indent
    const Value separators = bind.get_or(2, Value::none());
    if (!separators.is_none()) {
        const Items parts = iterate(separators);
        if (parts.size() != 2 || !parts[0].is_string() || !parts[1].is_string())
            raise("separators must be a pair of strings");
        options.item_separator = parts[0].as_string();
        options.key_separator = parts[1].as_string();
    }
    return Value::string(to_json(v, options));
}

Value f_trim(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("trim", args, {"chars"});
    const Value chars = bind.get_or(0, Value::none());
    if (!chars.is_none() && !chars.is_string()) raise("strip arg must be None or str");
    return Value::string(
        text::strip(py_str(v), chars.is_string() ? &chars.as_string() : nullptr, true, true));
}

Value f_truncate(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder bind("truncate", args, {"length", "killwords", "end", "leeway"});
    const Value len_v = bind.get_or(0, Value::integer(255));
    const Value leeway_v = bind.get_or(3, Value::integer(5));
    if (!len_v.is_integral() || !leeway_v.is_integral())
        raise("truncate() needs integer arguments");
    const Value end = bind.get_or(2, Value::string("..."));
    const int64_t n = len_v.as_int(), end_len = static_cast<int64_t>(length(end));
    if (n < end_len) raise("expected length >= {}, got {}", end_len, n);
    if (leeway_v.as_int() < 0) raise("expected leeway >= 0, got {}", leeway_v.as_int());
    if (static_cast<int64_t>(length(v)) <= n + leeway_v.as_int()) return v;
    const Value head = get_slice(v, Value::none(), Value::integer(n - end_len), Value::none());
    if (is_true(bind.get(1))) return binary_op(BinaryOp::add, head, end);
    if (!head.is_string()) raise("'{}' object has no attribute 'rsplit'", type_name(head));
    const std::string space = " ";
    return binary_op(BinaryOp::add, Value::string(text::rsplit(head.as_string(), &space, 1)[0]),
                     end);
}

Value f_unique(Interpreter& in, const Value& v, CallArgs& args) {
    return lazy(in, "sync_do_unique", v, false, [args]() -> Step {
        ArgBinder bind("unique", args, {"case_sensitive", "attribute"});
        auto seen = std::make_shared<Items>();
        return [key = AttrGetter(bind.get(1), nullptr, !is_true(bind.get(0))),
                seen](const Value& item) -> std::optional<Value> {
            Value k = key(item);
            require_hashable(k);
            if (std::any_of(seen->begin(), seen->end(),
                            [&](const Value& s) { return equals(s, k); }))
                return std::nullopt;
            seen->push_back(std::move(k));
            return item;
        };
    });
}

Value f_wordcount(Interpreter&, const Value& v, CallArgs& args) {
    ArgBinder("wordcount", args, {});
    const std::string s = py_str(v);
    int64_t words = 0;
    bool in_word = false;
    for (size_t i = 0; i < s.size();) {
        const char32_t c = text::decode(s, i);
        const bool word_char = c == '_' || text::is_alpha(c) || text::is_numeric(c);
        if (word_char && !in_word) ++words;
        in_word = word_char;
    }
    return Value::integer(words);
}

const std::map<std::string_view, FilterFn>& filters() {
    static const std::map<std::string_view, FilterFn> table = {
        {"abs", f_abs},
        {"attr", f_attr},
        {"batch", f_batch},
        {"capitalize", f_capitalize},
        {"center", f_center},
        {"count", f_length},
        {"d", f_default},
        {"default", f_default},
        {"dictsort", f_dictsort},
        {"e", f_escape},
        {"escape", f_escape},
        {"first", f_first},
        {"float", f_float},
        {"forceescape", f_escape},
        {"format", f_format},
        {"indent", f_indent},
        {"int", f_int},
        {"items", f_items},
        {"join", f_join},
        {"last", f_last},
        {"length", f_length},
        {"list", f_list},
        {"lower", f_lower},
        {"map", f_map},
        {"max", f_max},
        {"min", f_min},
        {"reject", f_reject},
        {"rejectattr", f_rejectattr},
        {"replace", f_replace},
        {"reverse", f_reverse},
        {"round", f_round},
        {"safe", f_safe},
        {"select", f_select},
        {"selectattr", f_selectattr},
        {"slice", f_slice},
        {"sort", f_sort},
        {"string", f_string},
        {"sum", f_sum},
        {"title", f_title},
        {"tojson", f_tojson},
        {"trim", f_trim},
        {"truncate", f_truncate},
        {"unique", f_unique},
        {"upper", f_upper},
        {"wordcount", f_wordcount},
    };
    return table;
}

}  // namespace

FilterFn find_filter(std::string_view name) {
    const auto it = filters().find(name);
    return it == filters().end() ? nullptr : it->second;
}

}  // namespace anelm::jinja
