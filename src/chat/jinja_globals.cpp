// Global functions: Jinja2's range, dict, namespace, cycler, joiner and the two
// transformers adds, raise_exception and strftime_now.
#include <cmath>
#include <ctime>
#include <map>

#include "chat/jinja_builtins.h"
#include "chat/jinja_error.h"
#include "chat/jinja_format.h"
#include "chat/jinja_interpreter.h"
#include "chat/jinja_objects.h"
#include "chat/jinja_ops.h"

namespace anelm::jinja {
namespace {

// The sandbox refuses longer ranges.
constexpr int64_t max_range = 100000;

int64_t as_index(const Value& v) {
    if (!v.is_integral()) raise("'{}' object cannot be interpreted as an integer", type_name(v));
    return v.as_int();
}

Value g_range(Interpreter&, CallArgs& args) {
    if (!args.keyword.empty()) raise("range() takes no keyword arguments");
    const auto& p = args.positional;
    if (p.empty() || p.size() > 3) raise("range expected 1 to 3 arguments, got {}", p.size());
    const int64_t start = p.size() == 1 ? 0 : as_index(p[0]);
    const int64_t stop = as_index(p.size() == 1 ? p[0] : p[1]);
    const int64_t step = p.size() == 3 ? as_index(p[2]) : 1;
    if (step == 0) raise("range() arg 3 must not be zero");
    const double count = std::max(0.0, std::ceil((double(stop) - double(start)) / double(step)));
    if (count > max_range)
        raise("Range too big. The sandbox blocks ranges larger than MAX_RANGE ({}).", max_range);
    std::vector<Value> items;
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step)
        items.push_back(Value::integer(i));
    return Value::list(std::move(items));
}

// dict(mapping_or_pairs, **kwargs) as Python builds it.
Dict build_dict(const CallArgs& args, const char* function) {
    if (args.positional.size() > 1)
        raise("{} expected at most 1 argument, got {}", function, args.positional.size());
    Dict d;
    if (!args.positional.empty()) {
        const Value& src = args.positional[0];
        if (src.is_dict()) {
            d = src.as_dict();
        } else {
            for (const Value& pair : iterate(src)) {
                const std::vector<Value> kv = iterate(pair);
                if (kv.size() != 2)
                    raise("dictionary update sequence element has length {}; 2 is required",
                          kv.size());
                require_hashable(kv[0]);
                d.set(kv[0], kv[1]);
            }
        }
    }
    for (const auto& [k, v] : args.keyword) d.set(Value::string(k), v);
    return d;
}

Value g_dict(Interpreter&, CallArgs& args) {
    return Value::dict(build_dict(args, "dict"));
}

Value g_namespace(Interpreter& in, CallArgs& args) {
    auto ns = std::make_shared<Namespace>();
    for (const auto& [k, v] : build_dict(args, "namespace").entries) ns->set(py_str(k), v);
    in.track(ns);
    return Value::object(ns);
}

Value g_raise_exception(Interpreter&, CallArgs& args) {
    ArgBinder bind("raise_exception", args, {"message"});
    if (!bind.get(0)) raise("raise_exception() missing 1 required positional argument: 'message'");
    throw Failure(py_str(*bind.get(0)));
}

Value g_strftime_now(Interpreter&, CallArgs& args) {
    ArgBinder bind("strftime_now", args, {"format"});
    if (!bind.get(0) || !bind.get(0)->is_string()) raise("strftime_now() needs a format string");
    const std::time_t now = std::time(nullptr);
    std::tm local{};
    localtime_r(&now, &local);
    const std::string& format = bind.get(0)->as_string();
    if (format.empty()) return Value::string("");
    std::string buf(format.size() * 8 + 64, '\0');
    const size_t n = std::strftime(buf.data(), buf.size(), format.c_str(), &local);
    buf.resize(n);
    return Value::string(std::move(buf));
}

// cycler(a, b): .next() walks the items round and round; .current peeks.
class Cycler : public Object, public std::enable_shared_from_this<Cycler> {
public:
    explicit Cycler(std::vector<Value> items) : items_(std::move(items)) {}
    std::string type_name() const override { return "Cycler"; }
    void release() override { items_.clear(); }
    Value attribute(std::string_view name) override;

    Value next() {
        if (items_.empty()) return Value::none();
        Value v = items_[pos_];
        pos_ = (pos_ + 1) % items_.size();
        return v;
    }
    void reset() { pos_ = 0; }
    Value current() const { return items_.empty() ? Value::none() : items_[pos_]; }

private:
    std::vector<Value> items_;
    size_t pos_ = 0;
};

class CyclerMethod : public Object {
public:
    CyclerMethod(std::shared_ptr<Cycler> cycler, bool is_next)
        : cycler_(std::move(cycler)), is_next_(is_next) {}
    std::string type_name() const override { return "method"; }
    bool is_callable() const override { return true; }
    Value call(Interpreter&, CallArgs& args) override {
        ArgBinder(is_next_ ? "next" : "reset", args, {});
        if (is_next_) return cycler_->next();
        cycler_->reset();
        return Value::none();
    }

private:
    std::shared_ptr<Cycler> cycler_;
    bool is_next_;
};

Value Cycler::attribute(std::string_view name) {
    if (name == "current") return current();
    if (name == "next" || name == "reset")
        return Value::object(std::make_shared<CyclerMethod>(shared_from_this(), name == "next"));
    return Object::attribute(name);
}

Value g_cycler(Interpreter& in, CallArgs& args) {
    if (!args.keyword.empty()) raise("cycler() takes no keyword arguments");
    if (args.positional.empty()) raise("at least one item has to be provided");
    auto c = std::make_shared<Cycler>(args.positional);
    in.track(c);
    return Value::object(c);
}

// joiner(sep): "" on the first call, sep afterwards.
class Joiner : public Object {
public:
    explicit Joiner(std::string sep) : sep_(std::move(sep)) {}
    std::string type_name() const override { return "Joiner"; }
    bool is_callable() const override { return true; }
    Value call(Interpreter&, CallArgs& args) override {
        ArgBinder("joiner", args, {});
        if (!used_) {
            used_ = true;
            return Value::string("");
        }
        return Value::string(sep_);
    }

private:
    std::string sep_;
    bool used_ = false;
};

Value g_joiner(Interpreter&, CallArgs& args) {
    ArgBinder bind("joiner", args, {"sep"});
    return Value::object(std::make_shared<Joiner>(bind.get(0) ? py_str(*bind.get(0)) : ", "));
}

const std::map<std::string_view, Value>& globals() {
    static const std::map<std::string_view, Value> table = [] {
        std::map<std::string_view, Value> t;
        auto add = [&](std::string_view name, Function::Fn fn) {
            t.emplace(name, Value::object(std::make_shared<Function>(std::string(name), fn)));
        };
        add("range", g_range);
        add("dict", g_dict);
        add("namespace", g_namespace);
        add("cycler", g_cycler);
        add("joiner", g_joiner);
        add("raise_exception", g_raise_exception);
        add("strftime_now", g_strftime_now);
        return t;
    }();
    return table;
}

}  // namespace

const Value* find_global(std::string_view name) {
    const auto it = globals().find(name);
    return it == globals().end() ? nullptr : &it->second;
}

}  // namespace anelm::jinja
