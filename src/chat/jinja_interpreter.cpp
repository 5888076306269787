#include "chat/jinja_interpreter.h"

#include <algorithm>

#include "chat/jinja_error.h"
#include "chat/jinja_format.h"
#include "chat/jinja_methods.h"
#include "chat/jinja_objects.h"

namespace anelm::jinja {
namespace {

// Macro calls and recursive loops nest at most this deep (Python would stop
// with RecursionError somewhat later).
constexpr int max_call_depth = 64;
// Loop iterations and calls a render may take in all: a chat template over a
// long conversation with tools takes thousands; nested ranges or a macro that
// calls itself twice would otherwise run for hours.
constexpr int64_t max_steps = 1'000'000;

class LoopContext;

// loop.cycle / loop.changed, bound to their loop.
class LoopMethod : public Object {
public:
    LoopMethod(std::shared_ptr<LoopContext> loop, std::string name)
        : loop_(std::move(loop)), name_(std::move(name)) {}
    std::string type_name() const override { return "method"; }
    bool is_callable() const override { return true; }
    Value call(Interpreter& interp, CallArgs& args) override;

private:
    std::shared_ptr<LoopContext> loop_;
    std::string name_;
};

// The `loop` variable of a for loop; one per loop, advanced each iteration.
class LoopContext : public Object, public std::enable_shared_from_this<LoopContext> {
public:
    LoopContext(std::vector<Value> items, int depth0, const ForStmt& stmt, const FramePtr& frame)
        : items_(std::move(items)), depth0_(depth0), stmt_(stmt), frame_(frame) {}

    size_t index0 = 0;
    const Value& item(size_t i) const { return items_[i]; }

    std::string type_name() const override { return "LoopContext"; }
    bool is_callable() const override { return true; }
    bool truthy() const override { return !items_.empty(); }
    void release() override { last_changed_ = Value::none(); }
    std::string repr() const override {
        return fmt::format("<LoopContext {}/{}>", index0 + 1, items_.size());
    }

    Value attribute(std::string_view name) override {
        const auto n = static_cast<int64_t>(items_.size());
        const auto i = static_cast<int64_t>(index0);
        if (name == "index") return Value::integer(i + 1);
        if (name == "index0") return Value::integer(i);
        if (name == "revindex") return Value::integer(n - i);
        if (name == "revindex0") return Value::integer(n - i - 1);
        if (name == "first") return Value::boolean(i == 0);
        if (name == "last") return Value::boolean(i == n - 1);
        if (name == "length") return Value::integer(n);
        if (name == "depth") return Value::integer(depth0_ + 1);
        if (name == "depth0") return Value::integer(depth0_);
        if (name == "previtem")
            return i > 0 ? items_[index0 - 1] : Value::undefined("there is no previous item");
        if (name == "nextitem")
            return i + 1 < n ? items_[index0 + 1] : Value::undefined("there is no next item");
        if (name == "cycle" || name == "changed")
            return Value::object(
                std::make_shared<LoopMethod>(shared_from_this(), std::string(name)));
        return Object::attribute(name);
    }

    Value call(Interpreter& interp, CallArgs& args) override {
        if (!stmt_.recursive) raise("The loop must be recursive to use this function");
        ArgBinder bind("loop", args, {"iterable"});
        if (!bind.get(0)) raise("loop() missing required argument 'iterable'");
        return Value::string(interp.call_loop(stmt_, frame_.lock(), *bind.get(0), depth0_ + 1));
    }

    Value cycle(const CallArgs& args) const {
        if (args.positional.empty()) raise("no items for cycling given");
        return args.positional[index0 % args.positional.size()];
    }

    bool changed(const CallArgs& args) {
        Value now = Value::tuple(args.positional);
        if (equals(now, last_changed_)) return false;
        last_changed_ = std::move(now);
        return true;
    }

private:
    std::vector<Value> items_;
    int depth0_;
    const ForStmt& stmt_;
    std::weak_ptr<Frame> frame_;
    Value last_changed_ = Value::undefined("");
};

Value LoopMethod::call(Interpreter&, CallArgs& args) {
    if (name_ == "cycle") return loop_->cycle(args);
    return Value::boolean(loop_->changed(args));
}

class MacroObject : public Object {
public:
    MacroObject(const MacroStmt& macro, const FramePtr& closure)
        : macro_(macro), closure_(closure) {}
    std::string type_name() const override { return "Macro"; }
    bool is_callable() const override { return true; }
    std::string repr() const override {
        return fmt::format("<Macro {}>", string_repr(macro_.name));
    }

    Value call(Interpreter& interp, CallArgs& args) override {
        return Value::string(interp.call_macro(macro_, closure_.lock(), args));
    }

    Value attribute(std::string_view name) override {
        if (name == "name") return Value::string(macro_.name);
        if (name == "arguments") {
            std::vector<Value> params;
            for (const auto& p : macro_.params) params.push_back(Value::string(p));
            return Value::tuple(std::move(params));
        }
        if (name == "catch_varargs") return Value::boolean(macro_.uses_varargs);
        if (name == "catch_kwargs") return Value::boolean(macro_.uses_kwargs);
        if (name == "caller") return Value::boolean(macro_.uses_caller);
        return Object::attribute(name);
    }

private:
    const MacroStmt& macro_;
    std::weak_ptr<Frame> closure_;  // weak: a macro stored in its own frame is no cycle
};

}  // namespace

Value* Frame::find_local(std::string_view name) {
    for (auto& [k, v] : vars)
        if (k == name) return &v;
    return nullptr;
}

void Frame::set(std::string_view name, Value value) {
    if (Value* v = find_local(name)) {
        *v = std::move(value);
    } else {
        vars.emplace_back(std::string(name), std::move(value));
    }
}

void Interpreter::step() {
    if (++steps_ > max_steps)
        raise("the template ran more than {} loop iterations and calls", max_steps);
}

Interpreter::Depth::Depth(Interpreter& in) : in(in) {
    in.step();
    if (++in.depth_ > max_call_depth) {
        --in.depth_;
        raise("maximum recursion depth exceeded");
    }
}

Interpreter::Interpreter(std::vector<std::pair<std::string, Value>> variables)
    : root_(std::make_shared<Frame>()), frame_(root_) {
    for (auto& [name, value] : variables) root_->set(name, std::move(value));
}

Interpreter::~Interpreter() {
    for (const auto& weak : tracked_)
        if (auto object = weak.lock()) object->release();
}

std::string Interpreter::run(const Body& body, const Unset& unset) {
    for (const std::string& name : unset) root_->set(name, undefined_name(name));
    std::string out;
    exec(body, out);
    return out;
}

Value Interpreter::lookup(std::string_view name) const {
    for (Frame* f = frame_.get(); f; f = f->parent.get())
        if (const Value* v = f->find_local(name)) return *v;
    if (const Value* g = find_global(name)) return *g;
    return undefined_name(name);
}

void Interpreter::assign(const Target& target, const Value& value) {
    if (!target.attribute.empty()) {
        const Value ns = lookup(target.name);
        auto* space = ns.is_object() ? dynamic_cast<Namespace*>(&ns.as_object()) : nullptr;
        if (!space) raise("cannot assign attribute on non-namespace object");
        space->set(target.attribute, value);
        return;
    }
    if (!target.is_tuple) {
        frame_->set(target.name, value);
        return;
    }
    const bool iterable = value.is_undefined() || value.is_string() || value.is_array() ||
                          value.is_dict() ||
                          (value.is_object() && dynamic_cast<Generator*>(&value.as_object()));
    if (!iterable) raise("cannot unpack non-iterable {} object", type_name(value));
    const std::vector<Value> items = iterate(value);
    const size_t n = target.items.size();
    if (items.size() > n) raise("too many values to unpack (expected {})", n);
    if (items.size() < n)
        raise("not enough values to unpack (expected {}, got {})", n, items.size());
    for (size_t i = 0; i < n; ++i) assign(target.items[i], items[i]);
}

Value Interpreter::call(const Value& callee, CallArgs& args) {
    if (callee.is_undefined()) raise_undefined(callee);
    if (!callee.is_object() || !callee.as_object().is_callable())
        raise("'{}' object is not callable", type_name(callee));
    return callee.as_object().call(*this, args);
}

Value Interpreter::call_filter(std::string_view name, const Value& value, CallArgs& args) {
    const FilterFn fn = find_filter(name);
    if (!fn) raise("No filter named {}.", string_repr(name));
    return fn(*this, value, args);
}

bool Interpreter::call_test(std::string_view name, const Value& value, CallArgs& args) {
    const TestFn fn = find_test(name);
    if (!fn) raise("No test named {}.", string_repr(name));
    return fn(*this, value, args);
}

CallArgs Interpreter::eval_args(const Arguments& a) {
    CallArgs args;
    for (const auto& e : a.positional) args.positional.push_back(eval(*e));
    if (a.star)
        for (Value& v : iterate(eval(*a.star))) args.positional.push_back(std::move(v));
    auto add_keyword = [&](std::string name, Value v) {
        for (const auto& [k, _] : args.keyword)
            if (k == name) raise("got multiple values for keyword argument {}", string_repr(name));
        args.keyword.emplace_back(std::move(name), std::move(v));
    };
    for (const auto& [name, e] : a.keyword) add_keyword(name, eval(*e));
    if (a.star_star) {
        const Value kw = eval(*a.star_star);
        if (!kw.is_dict()) raise("argument after ** must be a mapping, not {}", type_name(kw));
        for (const auto& [k, v] : kw.as_dict().entries) {
            if (!k.is_string()) raise("keywords must be strings");
            add_keyword(k.as_string(), v);
        }
    }
    return args;
}

Value Interpreter::eval_call(const CallExpr& e) {
    if (e.callee->kind == ExprKind::attribute) {
        // obj.method(...) on a str, list or dict calls the method directly.
        const auto& attr = static_cast<const AttributeExpr&>(*e.callee);
        Value obj = eval(*attr.object);
        if (!obj.is_object() && !obj.is_undefined() &&
            method_kind(obj, attr.name) == MethodKind::safe) {
            CallArgs args = eval_args(e.args);
            return call_method(obj, attr.name, args);
        }
        Value callee = get_attribute(obj, attr.name);
        CallArgs args = eval_args(e.args);
        return call(callee, args);
    }
    Value callee = eval(*e.callee);
    CallArgs args = eval_args(e.args);
    return call(callee, args);
}

Value Interpreter::eval(const Expr& e) {
    switch (e.kind) {
        case ExprKind::constant:
            return static_cast<const ConstantExpr&>(e).value;
        case ExprKind::name:
            return lookup(static_cast<const NameExpr&>(e).name);
        case ExprKind::list:
        case ExprKind::tuple: {
            std::vector<Value> items;
            for (const auto& item : static_cast<const SequenceExpr&>(e).items)
                items.push_back(eval(*item));
            return e.kind == ExprKind::list ? Value::list(std::move(items))
                                            : Value::tuple(std::move(items));
        }
        case ExprKind::dict: {
            Dict d;
            for (const auto& [k, v] : static_cast<const DictExpr&>(e).items) {
                Value key = eval(*k);
                require_hashable(key);
                d.set(std::move(key), eval(*v));
            }
            return Value::dict(std::move(d));
        }
        case ExprKind::attribute: {
            const auto& a = static_cast<const AttributeExpr&>(e);
            return get_attribute(eval(*a.object), a.name);
        }
        case ExprKind::item: {
            const auto& item = static_cast<const ItemExpr&>(e);
            const Value obj = eval(*item.object);
            if (item.index->kind == ExprKind::slice) {
                const auto& s = static_cast<const SliceExpr&>(*item.index);
                auto bound = [&](const ExprPtr& b) { return b ? eval(*b) : Value::none(); };
                const Value start = bound(s.start), stop = bound(s.stop), step = bound(s.step);
                return get_slice(obj, start, stop, step);
            }
            return get_item(obj, eval(*item.index));
        }
        case ExprKind::slice:
            return Value::undefined("slices are only supported in subscripts");
        case ExprKind::call:
            return eval_call(static_cast<const CallExpr&>(e));
        case ExprKind::filter: {
            const auto& f = static_cast<const FilterExpr&>(e);
            const Value value = f.value ? eval(*f.value) : *block_input_;
            CallArgs args = eval_args(f.args);
            if (!f.fn) raise("No filter named {} found.", string_repr(f.name));
            return f.fn(*this, value, args);
        }
        case ExprKind::test: {
            const auto& t = static_cast<const TestExpr&>(e);
            const Value value = eval(*t.value);
            CallArgs args = eval_args(t.args);
            if (!t.fn) raise("No test named {} found.", string_repr(t.name));
            return Value::boolean(t.fn(*this, value, args));
        }
        case ExprKind::unary: {
            const auto& u = static_cast<const UnaryExpr&>(e);
            const Value v = eval(*u.operand);
            switch (u.op) {
                case UnaryOp::logical_not:
                    return Value::boolean(!truthy(v));
                case UnaryOp::negate:
                    return negate(v);
                case UnaryOp::plus:
                    return unary_plus(v);
            }
            return v;
        }
        case ExprKind::binary: {
            const auto& b = static_cast<const BinaryExpr&>(e);
            const Value left = eval(*b.left);
            return binary_op(b.op, left, eval(*b.right));
        }
        case ExprKind::logical: {
            const auto& l = static_cast<const LogicalExpr&>(e);
            Value left = eval(*l.left);
            if (truthy(left) != l.is_and) return left;
            return eval(*l.right);
        }
        case ExprKind::concat: {
            std::string out;
            for (const auto& part : static_cast<const ConcatExpr&>(e).parts) {
                out += py_str(eval(*part));
                if (out.size() > max_result_size) raise("result too large");
            }
            return Value::string(std::move(out));
        }
        case ExprKind::compare: {
            const auto& c = static_cast<const CompareExpr&>(e);
            Value left = eval(*c.first);
            for (const auto& [op, expr] : c.rest) {
                Value right = eval(*expr);
                if (!compare(op, left, right)) return Value::boolean(false);
                left = std::move(right);
            }
            return Value::boolean(true);
        }
        case ExprKind::conditional: {
            const auto& c = static_cast<const ConditionalExpr&>(e);
            if (truthy(eval(*c.test))) return eval(*c.then);
            if (c.otherwise) return eval(*c.otherwise);
            return Value::undefined(fmt::format(
                "the inline if-expression on line {} evaluated to false and no else section was "
                "defined.",
                e.line));
        }
    }
    return Value::none();
}

Interpreter::Flow Interpreter::exec(const Body& body, std::string& out) {
    for (const auto& s : body) {
        const Flow flow = exec_stmt(*s, out);
        if (flow != Flow::normal) return flow;
        if (out.size() > max_result_size) raise("output too large");
    }
    return Flow::normal;
}

// Makes a new innermost scope whose `unset` names start undefined.
void Interpreter::enter_scope(const Unset& unset) {
    frame_ = std::make_shared<Frame>(Frame{frame_, {}});
    for (const std::string& name : unset) frame_->vars.emplace_back(name, undefined_name(name));
}

std::string Interpreter::render_scoped(const Body& body, const Unset& unset) {
    const FramePtr saved = frame_;
    enter_scope(unset);
    std::string out;
    exec(body, out);
    frame_ = saved;
    return out;
}

Value Interpreter::apply_block_filter(const Expr* filter, std::string text) {
    Value body = Value::string(std::move(text));
    if (!filter) return body;
    const Value* saved = block_input_;
    block_input_ = &body;
    Value result = eval(*filter);
    block_input_ = saved;
    return result;
}

Interpreter::Flow Interpreter::exec_stmt(const Stmt& s, std::string& out) {
    try {
        switch (s.kind) {
            case StmtKind::text:
                out += static_cast<const TextStmt&>(s).text;
                break;
            case StmtKind::output:
                // Jinja2 reports an error in {{ ... }} at the line its expression starts.
                for (const auto& v : static_cast<const OutputStmt&>(s).values) {
                    try {
                        out += py_str(eval(*v));
                    } catch (Failure& f) {
                        if (!f.line) f.line = v->line;
                        throw;
                    }
                }
                break;
            case StmtKind::if_: {
                const auto& st = static_cast<const IfStmt&>(s);
                for (size_t k = 0; k < st.branches.size(); ++k) {
                    const auto& [test, body] = st.branches[k];
                    bool pass = false;
                    try {
                        pass = truthy(eval(*test));
                    } catch (Failure& f) {
                        if (!f.line) f.line = k == 0 ? s.line : test->line;  // an elif's own line
                        throw;
                    }
                    if (pass) return exec(body, out);
                }
                return exec(st.otherwise, out);
            }
            case StmtKind::for_: {
                const auto& st = static_cast<const ForStmt&>(s);
                return exec_for(st, eval(*st.iterable), 0, out);
            }
            case StmtKind::set: {
                const auto& st = static_cast<const SetStmt&>(s);
                assign(st.target, eval(*st.value));
                break;
            }
            case StmtKind::set_block: {
                const auto& st = static_cast<const SetBlockStmt&>(s);
                assign(st.target,
                       apply_block_filter(st.filter.get(), render_scoped(st.body, st.unset)));
                break;
            }
            case StmtKind::macro: {
                const auto& st = static_cast<const MacroStmt&>(s);
                frame_->set(st.name, Value::object(std::make_shared<MacroObject>(st, frame_)));
                break;
            }
            case StmtKind::call_block:
                exec_call_block(static_cast<const CallBlockStmt&>(s), out);
                break;
            case StmtKind::filter_block: {
                const auto& st = static_cast<const FilterBlockStmt&>(s);
                out +=
                    py_str(apply_block_filter(st.filter.get(), render_scoped(st.body, st.unset)));
                break;
            }
            case StmtKind::with: {
                const auto& st = static_cast<const WithStmt&>(s);
                std::vector<Value> values;
                for (const auto& [_, e] : st.assignments) values.push_back(eval(*e));
                const FramePtr saved = frame_;
                enter_scope(st.unset);
                for (size_t i = 0; i < values.size(); ++i)
                    assign(st.assignments[i].first, values[i]);
                const Flow flow = exec(st.body, out);
                frame_ = saved;
                return flow;
            }
            case StmtKind::scope: {
                const auto& st = static_cast<const ScopeStmt&>(s);
                const FramePtr saved = frame_;
                enter_scope(st.unset);
                const Flow flow = exec(st.body, out);
                frame_ = saved;
                return flow;
            }
            case StmtKind::loop_break:
                return Flow::loop_break;
            case StmtKind::loop_continue:
                return Flow::loop_continue;
        }
    } catch (Failure& f) {
        if (!f.line) f.line = s.line;
        throw;
    }
    return Flow::normal;
}

Interpreter::Flow Interpreter::exec_for(const ForStmt& s, const Value& iterable, int depth,
                                        std::string& out) {
    std::vector<Value> items = iterate(iterable);
    const FramePtr saved = frame_;
    if (s.condition) {
        std::vector<Value> kept;
        for (Value& item : items) {
            step();
            frame_ = std::make_shared<Frame>(Frame{saved, {}});
            assign(s.target, item);
            if (truthy(eval(*s.condition))) kept.push_back(std::move(item));
        }
        frame_ = saved;
        items = std::move(kept);
    }
    // Jinja2 runs the else block unless some iteration reached the end of the
    // body: an iteration left by break or continue does not count.
    bool completed = false;
    if (!items.empty()) {
        const size_t n = items.size();
        auto loop = std::make_shared<LoopContext>(std::move(items), depth, s, saved);
        track(loop);
        const Value loop_value = Value::object(loop);
        for (size_t i = 0; i < n; ++i) {
            step();
            loop->index0 = i;
            enter_scope(s.body_unset);
            frame_->set("loop", loop_value);
            assign(s.target, loop->item(i));
            const Flow flow = exec(s.body, out);
            frame_ = saved;
            if (flow == Flow::normal) completed = true;
            if (flow == Flow::loop_break) break;
        }
    }
    if (!completed && !s.otherwise.empty()) {
        enter_scope(s.otherwise_unset);
        exec(s.otherwise, out);
        frame_ = saved;
    }
    return Flow::normal;
}

std::string Interpreter::call_loop(const ForStmt& loop, const FramePtr& frame, const Value& items,
                                   int depth) {
    Depth guard(*this);
    const FramePtr saved = frame_;
    frame_ = frame ? frame : root_;
    std::string out;
    exec_for(loop, items, depth, out);
    frame_ = saved;
    return out;
}

void Interpreter::exec_call_block(const CallBlockStmt& s, std::string& out) {
    const auto& call_expr = static_cast<const CallExpr&>(*s.call);
    Value callee = eval(*call_expr.callee);
    CallArgs args = eval_args(call_expr.args);
    for (const auto& [k, _] : args.keyword)
        if (k == "caller") raise("got multiple values for keyword argument 'caller'");
    args.keyword.emplace_back("caller",
                              Value::object(std::make_shared<MacroObject>(*s.caller, frame_)));
    out += py_str(call(callee, args));
}

std::string Interpreter::call_macro(const MacroStmt& m, const FramePtr& closure, CallArgs& args) {
    Depth guard(*this);
    const size_t n = m.params.size();
    std::vector<const Value*> bound(n, nullptr);
    for (size_t i = 0; i < n && i < args.positional.size(); ++i) bound[i] = &args.positional[i];
    std::vector<std::pair<std::string, Value>> rest;
    for (auto& [k, v] : args.keyword) {
        const auto it = std::find(m.params.begin(), m.params.end(), k);
        const size_t i = static_cast<size_t>(it - m.params.begin());
        if (it != m.params.end() && !bound[i]) {
            bound[i] = &v;
        } else if (it != m.params.end()) {
            raise("macro {} got multiple values for argument {}", string_repr(m.name),
                  string_repr(k));
        } else {
            rest.emplace_back(k, v);
        }
    }
    Value caller = Value::undefined("No caller defined");
    if (m.uses_caller && std::find(m.params.begin(), m.params.end(), "caller") == m.params.end()) {
        for (auto it = rest.begin(); it != rest.end(); ++it) {
            if (it->first == "caller") {
                caller = it->second;
                rest.erase(it);
                break;
            }
        }
    }
    if (!m.uses_kwargs && !rest.empty()) {
        for (const auto& [k, _] : rest)
            if (k == "caller")
                raise(
                    "macro {} was invoked with two values for the special caller argument. This is "
                    "most likely a bug.",
                    string_repr(m.name));
        raise("macro {} takes no keyword argument {}", string_repr(m.name),
              string_repr(rest[0].first));
    }
    if (!m.uses_varargs && args.positional.size() > n)
        raise("macro {} takes not more than {} argument(s)", string_repr(m.name), n);

    const FramePtr saved = frame_;
    frame_ = closure ? closure : root_;
    enter_scope(m.unset);
    const size_t first_default = n - m.defaults.size();
    for (size_t i = 0; i < n; ++i) {
        if (bound[i]) {
            frame_->set(m.params[i], *bound[i]);
        } else if (i >= first_default) {
            frame_->set(m.params[i], eval(*m.defaults[i - first_default]));
        } else {
            frame_->set(m.params[i], Value::undefined(fmt::format("parameter {} was not provided",
                                                                  string_repr(m.params[i]))));
        }
    }
    if (m.uses_varargs) {
        std::vector<Value> extra;
        for (size_t i = n; i < args.positional.size(); ++i) extra.push_back(args.positional[i]);
        frame_->set("varargs", Value::tuple(std::move(extra)));
    }
    if (m.uses_kwargs) {
        Dict kw;
        for (auto& [k, v] : rest) kw.set(Value::string(k), v);
        frame_->set("kwargs", Value::dict(std::move(kw)));
    }
    if (m.uses_caller && !frame_->find_local("caller")) frame_->set("caller", caller);
    std::string out;
    exec(m.body, out);
    frame_ = saved;
    return out;
}

}  // namespace anelm::jinja
