// Runs a parsed template: evaluates expressions, executes statements, keeps
// Jinja2's scopes (a for-loop iteration, macro, call, filter, set or with
// block is a scope of its own; an if body is not).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "chat/jinja_ast.h"

namespace anelm::jinja {

struct Frame {
    std::shared_ptr<Frame> parent;
    std::vector<std::pair<std::string, Value>> vars;

    Value* find_local(std::string_view name);
    void set(std::string_view name, Value value);
};
using FramePtr = std::shared_ptr<Frame>;

class Interpreter {
public:
    explicit Interpreter(std::vector<std::pair<std::string, Value>> variables);
    ~Interpreter();
    Interpreter(const Interpreter&) = delete;
    Interpreter& operator=(const Interpreter&) = delete;

    // `unset`: the template scope's names that start undefined (jinja_scope.h).
    std::string run(const Body& body, const Unset& unset);

    Value eval(const Expr& e);
    Value call(const Value& callee, CallArgs& args);
    Value call_filter(std::string_view name, const Value& value, CallArgs& args);
    bool call_test(std::string_view name, const Value& value, CallArgs& args);

    // Objects that may refer to themselves are released after the render.
    void track(const ObjectPtr& object) { tracked_.push_back(object); }

    // Renders a macro body with `args` bound to its parameters.
    std::string call_macro(const MacroStmt& macro, const FramePtr& closure, CallArgs& args);
    // loop(items) inside a recursive for loop.
    std::string call_loop(const ForStmt& loop, const FramePtr& frame, const Value& items,
                          int depth);

private:
    enum class Flow { normal, loop_break, loop_continue };

    Flow exec(const Body& body, std::string& out);
    Flow exec_stmt(const Stmt& s, std::string& out);
    Flow exec_for(const ForStmt& s, const Value& iterable, int depth, std::string& out);
    void exec_call_block(const CallBlockStmt& s, std::string& out);
    void enter_scope(const Unset& unset);
    std::string render_scoped(const Body& body, const Unset& unset);
    Value apply_block_filter(const Expr* filter, std::string text);
    Value eval_call(const CallExpr& e);
    CallArgs eval_args(const Arguments& a);
    Value lookup(std::string_view name) const;
    void assign(const Target& target, const Value& value);

    // One more loop iteration or call; a render is allowed max_steps of them.
    void step();

    struct Depth {
        explicit Depth(Interpreter& in);
        ~Depth() { --in.depth_; }
        Interpreter& in;
    };

    FramePtr root_;
    FramePtr frame_;
    const Value* block_input_ = nullptr;  // the body text a filter block filters
    int depth_ = 0;
    int64_t steps_ = 0;
    std::vector<std::weak_ptr<Object>> tracked_;
};

}  // namespace anelm::jinja
