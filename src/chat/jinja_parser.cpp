#include "chat/jinja_parser.h"

#include <algorithm>
#include <set>
#include <string_view>

#include "chat/jinja_error.h"

namespace anelm::jinja {
namespace {

// Python's recursion limit stops Jinja2 on deeply nested templates; this
// keeps the C++ stack safe the same way.
constexpr int max_nesting = 100;
constexpr int max_links = 1000;

std::string describe(const Token& t) {
    switch (t.type) {
        case TokenType::name:
        case TokenType::op:
            return t.value;
        case TokenType::string:
            return "string";
        case TokenType::integer:
            return "integer";
        case TokenType::floating:
            return "float";
        case TokenType::data:
            return "template data / text";
        case TokenType::variable_begin:
            return "begin of print statement";
        case TokenType::variable_end:
            return "end of print statement";
        case TokenType::block_begin:
            return "begin of statement block";
        case TokenType::block_end:
            return "end of statement block";
        case TokenType::eof:
            return "end of template";
    }
    return "?";
}

std::string quoted(std::string_view s) {
    return fmt::format("'{}'", s);
}

class Parser {
public:
    explicit Parser(std::vector<Token> tokens) : toks_(std::move(tokens)) {}

    Body parse_template() {
        Body body = subparse({});
        if (cur().type != TokenType::eof)
            fail(fmt::format("unexpected {}", quoted(describe(cur()))));
        for (const Unknown& u : unknown_)
            if (!u.soft) fail_at(u.line, u.message);
        return body;
    }

private:
    std::vector<Token> toks_;
    size_t i_ = 0;
    int depth_ = 0;
    int links_ = 0;  // operator links on the open expressions' left spines
    int loop_depth_ = 0;
    std::vector<std::vector<std::string>> end_stack_;
    std::vector<std::string> tag_stack_;
    std::vector<std::set<std::string>*> name_sinks_;  // names read inside open macros

    // Unknown filters and tests. Jinja2 rejects them when compiling, except
    // inside an if statement or an inline if in the same scope, where the
    // error waits until the filter runs.
    struct Unknown {
        int line;
        std::string message;
        bool soft;
    };
    std::vector<Unknown> unknown_;
    bool soft_ = false;

    // Parses a part of a statement with the given softness.
    template <typename F>
    auto with_soft(bool soft, F f) {
        const bool saved = soft_;
        soft_ = soft;
        auto result = f();
        soft_ = saved;
        return result;
    }

    struct Nest {
        explicit Nest(Parser& p) : p(p) {
            if (++p.depth_ > max_nesting) p.fail("template nested too deeply");
        }
        ~Nest() { --p.depth_; }
        Parser& p;
    };

    // A chain of left-associative operators (a + b + c, x.y[z](), v | f | g)
    // builds a tree as deep as the chain is long, and rendering recurses
    // through it: the links of all open chains are bounded together.
    struct Chain {
        explicit Chain(Parser& p) : p(p) {}
        void link() {
            ++added;
            if (++p.links_ > max_links) p.fail("expression too long");
        }
        ~Chain() { p.links_ -= added; }
        Parser& p;
        int added = 0;
    };

    const Token& cur() const { return toks_[i_]; }
    const Token& look() const { return toks_[std::min(i_ + 1, toks_.size() - 1)]; }
    const Token& next() {
        const Token& t = toks_[i_];
        if (i_ + 1 < toks_.size()) ++i_;
        return t;
    }
    bool is_op(std::string_view op) const {
        return cur().type == TokenType::op && cur().value == op;
    }
    bool is_name(std::string_view n) const {
        return cur().type == TokenType::name && cur().value == n;
    }
    bool skip_op(std::string_view op) {
        if (!is_op(op)) return false;
        next();
        return true;
    }
    bool skip_name(std::string_view n) {
        if (!is_name(n)) return false;
        next();
        return true;
    }

    [[noreturn]] void fail(const std::string& message) const { throw Failure(message, cur().line); }
    [[noreturn]] void fail_at(int line, const std::string& message) const {
        throw Failure(message, line);
    }

    void expect_failed(const std::string& what) const {
        if (cur().type == TokenType::eof)
            fail(fmt::format("unexpected end of template, expected {}.", quoted(what)));
        fail(fmt::format("expected token {}, got {}", quoted(what), quoted(describe(cur()))));
    }
    void expect_op(std::string_view op) {
        if (!skip_op(op)) expect_failed(std::string(op));
    }
    void expect_type(TokenType type, const char* what) {
        if (cur().type != type) expect_failed(what);
        next();
    }
    std::string expect_name() {
        if (cur().type != TokenType::name) expect_failed("name");
        return next().value;
    }
    void expect_keyword(std::string_view n) {
        if (!skip_name(n)) expect_failed(std::string(n));
    }

    // ---- statements ----

    [[noreturn]] void fail_unknown_tag(const std::string* name, int line) const {
        std::string message = name ? fmt::format("Encountered unknown tag {}.", quoted(*name))
                                   : "Unexpected end of template.";
        if (!end_stack_.empty()) {
            std::string looking;
            for (const std::string& t : end_stack_.back())
                looking += (looking.empty() ? "" : " or ") + quoted(t);
            bool expected = false;
            for (const auto& level : end_stack_)
                if (name && std::find(level.begin(), level.end(), *name) != level.end())
                    expected = true;
            message += expected
                           ? " You probably made a nesting mistake. Jinja is expecting this tag, "
                             "but currently looking for " +
                                 looking + "."
                           : " Jinja was looking for the following tags: " + looking + ".";
        }
        if (!tag_stack_.empty())
            message += " The innermost block that needs to be closed is " +
                       quoted(tag_stack_.back()) + ".";
        fail_at(line, message);
    }

    Body subparse(const std::vector<std::string>& end_tokens) {
        Nest nest(*this);
        Body body;
        if (!end_tokens.empty()) end_stack_.push_back(end_tokens);
        while (cur().type != TokenType::eof) {
            const Token& t = cur();
            if (t.type == TokenType::data) {
                body.push_back(std::make_unique<TextStmt>(t.line, t.value));
                next();
            } else if (t.type == TokenType::variable_begin) {
                next();
                auto out = std::make_unique<OutputStmt>(t.line);
                out->values.push_back(parse_tuple(false, true, {}, false));
                expect_type(TokenType::variable_end, "end of print statement");
                body.push_back(std::move(out));
            } else if (t.type == TokenType::block_begin) {
                next();
                if (cur().type == TokenType::name && std::find(end_tokens.begin(), end_tokens.end(),
                                                               cur().value) != end_tokens.end()) {
                    end_stack_.pop_back();
                    return body;
                }
                body.push_back(parse_statement());
                expect_type(TokenType::block_end, "end of statement block");
            } else {
                fail(fmt::format("unexpected {}", quoted(describe(t))));
            }
        }
        if (!end_tokens.empty()) end_stack_.pop_back();
        return body;
    }

    // A statement's body up to one of end_tokens; with drop_needle the end tag's
    // name is consumed as well.
    Body parse_statements(const std::vector<std::string>& end_tokens, bool drop_needle) {
        skip_op(":");
        expect_type(TokenType::block_end, "end of statement block");
        Body body = subparse(end_tokens);
        if (cur().type == TokenType::eof) fail_eof(end_tokens);
        if (drop_needle) next();
        return body;
    }

    [[noreturn]] void fail_eof(const std::vector<std::string>& end_tokens) {
        end_stack_.push_back(end_tokens);
        fail_unknown_tag(nullptr, cur().line);
    }

    StmtPtr parse_statement() {
        Nest nest(*this);
        const Token& t = cur();
        if (t.type != TokenType::name) fail("tag name expected");
        const std::string name = t.value;
        static const std::set<std::string_view> known = {"for",   "if",       "set",       "macro",
                                                         "call",  "filter",   "with",      "print",
                                                         "break", "continue", "generation"};
        static const std::set<std::string_view> unsupported = {"block", "extends", "include",
                                                               "from",  "import",  "autoescape"};
        if (unsupported.count(name)) fail(fmt::format("the {} tag is not supported", quoted(name)));
        if (!known.count(name)) fail_unknown_tag(&name, t.line);
        tag_stack_.push_back(name);
        StmtPtr s;
        if (name == "for")
            s = parse_for();
        else if (name == "if")
            s = parse_if();
        else if (name == "set")
            s = parse_set();
        else if (name == "macro")
            s = parse_macro();
        else if (name == "call")
            s = parse_call_block();
        else if (name == "filter")
            s = parse_filter_block();
        else if (name == "with")
            s = parse_with();
        else if (name == "print")
            s = parse_print();
        else if (name == "generation")
            s = parse_generation();
        else
            s = parse_loop_control();
        tag_stack_.pop_back();
        return s;
    }

    StmtPtr parse_loop_control() {
        const Token& t = next();
        if (loop_depth_ == 0) fail_at(t.line, fmt::format("{} outside loop", quoted(t.value)));
        return std::make_unique<Stmt>(
            t.value == "break" ? StmtKind::loop_break : StmtKind::loop_continue, t.line);
    }

    StmtPtr parse_for() {
        auto s = std::make_unique<ForStmt>(next().line);
        s->target = parse_assign_target({"in"}, false);
        expect_keyword("in");
        s->iterable = parse_tuple(false, false, {"recursive"}, false);
        if (skip_name("if"))
            s->condition = with_soft(false, [&] { return parse_expression(true); });
        s->recursive = skip_name("recursive");
        ++loop_depth_;
        s->body = with_soft(false, [&] { return parse_statements({"endfor", "else"}, false); });
        --loop_depth_;
        if (next().value != "endfor")
            s->otherwise = with_soft(false, [&] { return parse_statements({"endfor"}, true); });
        return s;
    }

    StmtPtr parse_if() {
        const bool saved = soft_;
        soft_ = true;
        auto s = std::make_unique<IfStmt>(next().line);
        while (true) {
            ExprPtr test = parse_tuple(false, false, {}, false);
            Body body = parse_statements({"elif", "else", "endif"}, false);
            s->branches.emplace_back(std::move(test), std::move(body));
            const std::string tag = next().value;
            if (tag == "elif") continue;
            if (tag == "else") s->otherwise = parse_statements({"endif"}, true);
            break;
        }
        soft_ = saved;
        return s;
    }

    StmtPtr parse_set() {
        const int line = next().line;
        Target target = parse_assign_target({}, true);
        if (skip_op("=")) {
            auto s = std::make_unique<SetStmt>(line);
            s->target = std::move(target);
            s->value = parse_tuple(false, true, {}, false);
            return s;
        }
        auto s = std::make_unique<SetBlockStmt>(line);
        s->target = std::move(target);
        if (is_op("|")) s->filter = with_soft(false, [&] { return parse_filter(nullptr, false); });
        s->body = with_soft(false, [&] { return parse_statements({"endset"}, true); });
        return s;
    }

    StmtPtr parse_with() {
        auto s = std::make_unique<WithStmt>(next().line);
        while (cur().type != TokenType::block_end) {
            if (!s->assignments.empty()) expect_op(",");
            Target target = parse_assign_target({}, false);
            expect_op("=");
            s->assignments.emplace_back(std::move(target), parse_expression(true));
        }
        s->body = with_soft(false, [&] { return parse_statements({"endwith"}, true); });
        return s;
    }

    StmtPtr parse_print() {
        auto s = std::make_unique<OutputStmt>(next().line);
        while (cur().type != TokenType::block_end) {
            if (!s->values.empty()) expect_op(",");
            s->values.push_back(parse_expression(true));
        }
        return s;
    }

    StmtPtr parse_generation() {
        auto s = std::make_unique<ScopeStmt>(next().line);
        s->body = with_soft(false, [&] { return parse_statements({"endgeneration"}, true); });
        return s;
    }

    void parse_signature(MacroStmt& m) {
        expect_op("(");
        while (!is_op(")")) {
            if (!m.params.empty()) expect_op(",");
            m.params.push_back(expect_name());
            if (skip_op("=")) {
                m.defaults.push_back(parse_expression(true));
            } else if (!m.defaults.empty()) {
                fail("non-default argument follows default argument");
            }
        }
        expect_op(")");
    }

    // A macro-like body: names it reads decide whether it takes extra arguments.
    void parse_macro_body(MacroStmt& m, const char* end_tag) {
        std::set<std::string> names;
        name_sinks_.push_back(&names);
        const int saved_loops = loop_depth_;
        loop_depth_ = 0;
        m.body = with_soft(false, [&] { return parse_statements({end_tag}, true); });
        loop_depth_ = saved_loops;
        name_sinks_.pop_back();
        m.uses_varargs = names.count("varargs") > 0;
        m.uses_kwargs = names.count("kwargs") > 0;
        m.uses_caller = names.count("caller") > 0;
    }

    StmtPtr parse_macro() {
        auto s = std::make_unique<MacroStmt>(next().line);
        s->name = expect_name();
        parse_signature(*s);
        parse_macro_body(*s, "endmacro");
        return s;
    }

    StmtPtr parse_call_block() {
        auto s = std::make_unique<CallBlockStmt>(next().line);
        s->caller = std::make_shared<MacroStmt>(s->line);
        s->caller->name = "caller";
        if (is_op("(")) parse_signature(*s->caller);
        s->call = parse_expression(true);
        if (s->call->kind != ExprKind::call) fail_at(s->line, "expected call");
        parse_macro_body(*s->caller, "endcall");
        return s;
    }

    StmtPtr parse_filter_block() {
        auto s = std::make_unique<FilterBlockStmt>(next().line);
        s->filter = with_soft(false, [&] { return parse_filter(nullptr, true); });
        s->body = with_soft(false, [&] { return parse_statements({"endfilter"}, true); });
        return s;
    }

    // ---- assignment targets ----

    Target to_target(const Expr& e) const {
        Target t;
        if (e.kind == ExprKind::name) {
            t.name = static_cast<const NameExpr&>(e).name;
            return t;
        }
        if (e.kind == ExprKind::tuple) {
            t.is_tuple = true;
            for (const auto& item : static_cast<const SequenceExpr&>(e).items)
                t.items.push_back(to_target(*item));
            return t;
        }
        fail_at(e.line, e.kind == ExprKind::constant ? "can't assign to 'const'"
                                                     : "can't assign to this expression");
    }

    Target parse_assign_target(const std::vector<std::string>& extra_end, bool with_namespace) {
        if (with_namespace && cur().type == TokenType::name && look().type == TokenType::op &&
            look().value == ".") {
            Target t;
            t.name = next().value;
            next();
            t.attribute = expect_name();
            return t;
        }
        ExprPtr e = parse_tuple(true, false, extra_end, false);
        return to_target(*e);
    }

    // ---- expressions ----

    bool is_tuple_end(const std::vector<std::string>& extra_end) const {
        const TokenType t = cur().type;
        if (t == TokenType::variable_end || t == TokenType::block_end || is_op(")")) return true;
        return cur().type == TokenType::name &&
               std::find(extra_end.begin(), extra_end.end(), cur().value) != extra_end.end();
    }

    ExprPtr parse_tuple(bool simplified, bool with_condexpr,
                        const std::vector<std::string>& extra_end, bool explicit_parentheses) {
        const int line = cur().line;
        std::vector<ExprPtr> items;
        bool is_tuple = false;
        while (true) {
            if (!items.empty()) expect_op(",");
            if (is_tuple_end(extra_end)) break;
            items.push_back(simplified ? parse_primary() : parse_expression(with_condexpr));
            if (!is_op(",")) break;
            is_tuple = true;
        }
        if (!is_tuple) {
            if (!items.empty()) return std::move(items[0]);
            if (!explicit_parentheses)
                fail(fmt::format("Expected an expression, got {}", quoted(describe(cur()))));
        }
        auto t = std::make_unique<SequenceExpr>(ExprKind::tuple, line);
        t->items = std::move(items);
        return t;
    }

    ExprPtr parse_expression(bool with_condexpr) {
        Nest nest(*this);
        return with_condexpr ? parse_condexpr() : parse_or();
    }

    ExprPtr parse_condexpr() {
        const int line = cur().line;
        const size_t first_unknown = unknown_.size();
        ExprPtr expr = parse_or();
        while (skip_name("if")) {
            auto c = std::make_unique<ConditionalExpr>(line);
            c->then = std::move(expr);
            c->test = parse_or();
            if (skip_name("else")) c->otherwise = parse_condexpr();
            expr = std::move(c);
            for (size_t i = first_unknown; i < unknown_.size(); ++i) unknown_[i].soft = true;
        }
        return expr;
    }

    ExprPtr parse_or() {
        const int line = cur().line;
        ExprPtr left = parse_and();
        Chain chain(*this);
        while (skip_name("or")) {
            chain.link();
            left = std::make_unique<LogicalExpr>(line, false, std::move(left), parse_and());
        }
        return left;
    }

    ExprPtr parse_and() {
        const int line = cur().line;
        ExprPtr left = parse_not();
        Chain chain(*this);
        while (skip_name("and")) {
            chain.link();
            left = std::make_unique<LogicalExpr>(line, true, std::move(left), parse_not());
        }
        return left;
    }

    ExprPtr parse_not() {
        if (is_name("not")) {
            Nest nest(*this);
            const int line = next().line;
            return std::make_unique<UnaryExpr>(line, UnaryOp::logical_not, parse_not());
        }
        return parse_compare();
    }

    ExprPtr parse_compare() {
        const int line = cur().line;
        ExprPtr first = parse_math1();
        std::unique_ptr<CompareExpr> cmp;
        while (true) {
            CompareOp op;
            if (is_op("=="))
                op = CompareOp::eq;
            else if (is_op("!="))
                op = CompareOp::ne;
            else if (is_op("<"))
                op = CompareOp::lt;
            else if (is_op("<="))
                op = CompareOp::le;
            else if (is_op(">"))
                op = CompareOp::gt;
            else if (is_op(">="))
                op = CompareOp::ge;
            else if (is_name("in"))
                op = CompareOp::in;
            else if (is_name("not") && look().type == TokenType::name && look().value == "in")
                op = CompareOp::not_in, next();
            else
                break;
            next();
            if (!cmp) cmp = std::make_unique<CompareExpr>(line, std::move(first));
            cmp->rest.emplace_back(op, parse_math1());
        }
        if (cmp) return cmp;
        return first;
    }

    ExprPtr parse_math1() {
        const int line = cur().line;
        ExprPtr left = parse_concat();
        Chain chain(*this);
        while (is_op("+") || is_op("-")) {
            chain.link();
            const BinaryOp op = next().value == "+" ? BinaryOp::add : BinaryOp::sub;
            left = std::make_unique<BinaryExpr>(line, op, std::move(left), parse_concat());
        }
        return left;
    }

    ExprPtr parse_concat() {
        const int line = cur().line;
        ExprPtr first = parse_math2();
        if (!is_op("~")) return first;
        auto c = std::make_unique<ConcatExpr>(line);
        c->parts.push_back(std::move(first));
        while (skip_op("~")) c->parts.push_back(parse_math2());
        return c;
    }

    ExprPtr parse_math2() {
        const int line = cur().line;
        ExprPtr left = parse_pow();
        Chain chain(*this);
        while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
            chain.link();
            const std::string op = next().value;
            const BinaryOp b = op == "*"    ? BinaryOp::mul
                               : op == "/"  ? BinaryOp::div
                               : op == "//" ? BinaryOp::floordiv
                                            : BinaryOp::mod;
            left = std::make_unique<BinaryExpr>(line, b, std::move(left), parse_pow());
        }
        return left;
    }

    ExprPtr parse_pow() {
        const int line = cur().line;
        ExprPtr left = parse_unary(true);
        Chain chain(*this);
        while (skip_op("**")) {
            chain.link();
            left = std::make_unique<BinaryExpr>(line, BinaryOp::pow, std::move(left),
                                                parse_unary(true));
        }
        return left;
    }

    ExprPtr parse_unary(bool with_filter) {
        Nest nest(*this);
        const int line = cur().line;
        ExprPtr node;
        if (is_op("-") || is_op("+")) {
            const UnaryOp op = next().value == "-" ? UnaryOp::negate : UnaryOp::plus;
            node = std::make_unique<UnaryExpr>(line, op, parse_unary(false));
        } else {
            node = parse_primary();
        }
        node = parse_postfix(std::move(node));
        if (with_filter) node = parse_filter_expr(std::move(node));
        return node;
    }

    ExprPtr parse_primary() {
        Nest nest(*this);
        const Token& t = cur();
        const int line = t.line;
        switch (t.type) {
            case TokenType::name: {
                const std::string& n = t.value;
                ExprPtr e;
                if (n == "true" || n == "True")
                    e = std::make_unique<ConstantExpr>(line, Value::boolean(true));
                else if (n == "false" || n == "False")
                    e = std::make_unique<ConstantExpr>(line, Value::boolean(false));
                else if (n == "none" || n == "None")
                    e = std::make_unique<ConstantExpr>(line, Value::none());
                else {
                    for (auto* sink : name_sinks_) sink->insert(n);
                    e = std::make_unique<NameExpr>(line, n);
                }
                next();
                return e;
            }
            case TokenType::string: {
                std::string s;
                while (cur().type == TokenType::string) s += next().value;
                return std::make_unique<ConstantExpr>(line, Value::string(std::move(s)));
            }
            case TokenType::integer:
                return std::make_unique<ConstantExpr>(line, Value::integer(next().int_value));
            case TokenType::floating:
                return std::make_unique<ConstantExpr>(line, Value::number(next().float_value));
            case TokenType::op:
                if (t.value == "(") {
                    next();
                    ExprPtr e = parse_tuple(false, true, {}, true);
                    expect_op(")");
                    return e;
                }
                if (t.value == "[") return parse_list();
                if (t.value == "{") return parse_dict();
                break;
            default:
                break;
        }
        fail(fmt::format("unexpected {}", quoted(describe(t))));
    }

    ExprPtr parse_list() {
        auto l = std::make_unique<SequenceExpr>(ExprKind::list, next().line);
        while (!is_op("]")) {
            if (!l->items.empty()) expect_op(",");
            if (is_op("]")) break;
            l->items.push_back(parse_expression(true));
        }
        expect_op("]");
        return l;
    }

    ExprPtr parse_dict() {
        auto d = std::make_unique<DictExpr>(next().line);
        while (!is_op("}")) {
            if (!d->items.empty()) expect_op(",");
            if (is_op("}")) break;
            ExprPtr key = parse_expression(true);
            expect_op(":");
            d->items.emplace_back(std::move(key), parse_expression(true));
        }
        expect_op("}");
        return d;
    }

    ExprPtr parse_postfix(ExprPtr node) {
        Chain chain(*this);
        while (true) {
            chain.link();
            if (is_op(".") || is_op("[")) {
                node = parse_subscript(std::move(node));
            } else if (is_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_filter_expr(ExprPtr node) {
        Chain chain(*this);
        while (true) {
            chain.link();
            if (is_op("|")) {
                node = parse_filter(std::move(node), false);
            } else if (is_name("is")) {
                node = parse_test(std::move(node));
            } else if (is_op("(")) {
                node = parse_call(std::move(node));
            } else {
                return node;
            }
        }
    }

    ExprPtr parse_subscript(ExprPtr node) {
        const Token& t = next();
        const int line = t.line;
        if (t.value == ".") {
            const Token& attr = next();
            if (attr.type == TokenType::name)
                return std::make_unique<AttributeExpr>(line, std::move(node), attr.value);
            if (attr.type != TokenType::integer) fail_at(attr.line, "expected name or number");
            return std::make_unique<ItemExpr>(
                line, std::move(node),
                std::make_unique<ConstantExpr>(line, Value::integer(attr.int_value)));
        }
        std::vector<ExprPtr> args;
        while (!is_op("]")) {
            if (!args.empty()) expect_op(",");
            args.push_back(parse_subscribed());
        }
        expect_op("]");
        ExprPtr index;
        if (args.size() == 1) {
            index = std::move(args[0]);
        } else {
            auto t2 = std::make_unique<SequenceExpr>(ExprKind::tuple, line);
            t2->items = std::move(args);
            index = std::move(t2);
        }
        return std::make_unique<ItemExpr>(line, std::move(node), std::move(index));
    }

    ExprPtr parse_subscribed() {
        const int line = cur().line;
        ExprPtr start;
        if (!is_op(":")) {
            ExprPtr e = parse_expression(true);
            if (!is_op(":")) return e;
            start = std::move(e);
        }
        next();  // the colon
        auto s = std::make_unique<SliceExpr>(line);
        s->start = std::move(start);
        if (!is_op(":") && !is_op("]") && !is_op(",")) s->stop = parse_expression(true);
        if (skip_op(":"))
            if (!is_op("]") && !is_op(",")) s->step = parse_expression(true);
        return s;
    }

    Arguments parse_call_args() {
        const int line = cur().line;
        expect_op("(");
        Arguments a;
        auto ensure = [&](bool ok) {
            if (!ok) fail_at(line, "invalid syntax for function call expression");
        };
        bool require_comma = false;
        while (!is_op(")")) {
            if (require_comma) {
                expect_op(",");
                if (is_op(")")) break;
            }
            if (is_op("*")) {
                ensure(!a.star && !a.star_star);
                next();
                a.star = parse_expression(true);
            } else if (is_op("**")) {
                ensure(!a.star_star);
                next();
                a.star_star = parse_expression(true);
            } else if (cur().type == TokenType::name && look().type == TokenType::op &&
                       look().value == "=") {
                ensure(!a.star_star);
                std::string key = next().value;
                next();
                a.keyword.emplace_back(std::move(key), parse_expression(true));
            } else {
                ensure(!a.star && !a.star_star && a.keyword.empty());
                a.positional.push_back(parse_expression(true));
            }
            require_comma = true;
        }
        expect_op(")");
        return a;
    }

    ExprPtr parse_call(ExprPtr node) {
        auto c = std::make_unique<CallExpr>(cur().line, std::move(node));
        c->args = parse_call_args();
        return c;
    }

    std::string parse_dotted_name() {
        std::string name = expect_name();
        while (skip_op(".")) name += "." + expect_name();
        return name;
    }

    ExprPtr parse_filter(ExprPtr node, bool start_inline) {
        Chain chain(*this);
        while (is_op("|") || start_inline) {
            chain.link();
            if (!start_inline) next();
            start_inline = false;
            const int line = cur().line;
            std::string name = parse_dotted_name();
            const FilterFn fn = find_filter(name);
            if (!fn)
                unknown_.push_back({line, fmt::format("No filter named {}.", quoted(name)), soft_});
            auto f = std::make_unique<FilterExpr>(line, std::move(node), std::move(name), fn);
            if (is_op("(")) f->args = parse_call_args();
            node = std::move(f);
        }
        return node;
    }

    ExprPtr parse_test(ExprPtr node) {
        const int line = next().line;  // `is`
        const bool negated = skip_name("not");
        std::string name = parse_dotted_name();
        const TestFn fn = find_test(name);
        if (!fn) unknown_.push_back({line, fmt::format("No test named {}.", quoted(name)), soft_});
        auto t = std::make_unique<TestExpr>(line, std::move(node), std::move(name), fn);
        const TokenType type = cur().type;
        if (is_op("(")) {
            t->args = parse_call_args();
        } else if ((type == TokenType::name || type == TokenType::string ||
                    type == TokenType::integer || type == TokenType::floating || is_op("[") ||
                    is_op("{")) &&
                   !is_name("else") && !is_name("or") && !is_name("and")) {
            if (is_name("is")) fail("You cannot chain multiple tests with is");
            t->args.positional.push_back(parse_postfix(parse_primary()));
        }
        if (negated) return std::make_unique<UnaryExpr>(line, UnaryOp::logical_not, std::move(t));
        return t;
    }
};

}  // namespace

Body parse(std::vector<Token> tokens) {
    return Parser(std::move(tokens)).parse_template();
}

}  // namespace anelm::jinja
