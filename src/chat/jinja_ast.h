// The syntax tree of a parsed template: expressions and statements, each
// knowing the template line it came from.
#pragma once

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "chat/jinja_builtins.h"
#include "chat/jinja_ops.h"
#include "chat/jinja_value.h"

namespace anelm::jinja {

enum class ExprKind {
    constant,
    name,
    list,
    tuple,
    dict,
    attribute,
    item,
    slice,
    call,
    filter,
    test,
    unary,
    binary,
    logical,
    concat,
    compare,
    conditional
};

struct Expr {
    Expr(ExprKind kind, int line) : kind(kind), line(line) {}
    virtual ~Expr() = default;
    ExprKind kind;
    int line;
};
using ExprPtr = std::unique_ptr<Expr>;

struct Arguments {
    std::vector<ExprPtr> positional;
    std::vector<std::pair<std::string, ExprPtr>> keyword;
    ExprPtr star;       // *args
    ExprPtr star_star;  // **kwargs
};

struct ConstantExpr : Expr {
    ConstantExpr(int line, Value value) : Expr(ExprKind::constant, line), value(std::move(value)) {}
    Value value;
};

struct NameExpr : Expr {
    NameExpr(int line, std::string name) : Expr(ExprKind::name, line), name(std::move(name)) {}
    std::string name;
};

// A list or tuple display.
struct SequenceExpr : Expr {
    using Expr::Expr;
    std::vector<ExprPtr> items;
};

struct DictExpr : Expr {
    explicit DictExpr(int line) : Expr(ExprKind::dict, line) {}
    std::vector<std::pair<ExprPtr, ExprPtr>> items;
};

struct AttributeExpr : Expr {
    AttributeExpr(int line, ExprPtr object, std::string name)
        : Expr(ExprKind::attribute, line), object(std::move(object)), name(std::move(name)) {}
    ExprPtr object;
    std::string name;
};

// object[index]; index may be a SliceExpr.
struct ItemExpr : Expr {
    ItemExpr(int line, ExprPtr object, ExprPtr index)
        : Expr(ExprKind::item, line), object(std::move(object)), index(std::move(index)) {}
    ExprPtr object;
    ExprPtr index;
};

struct SliceExpr : Expr {
    explicit SliceExpr(int line) : Expr(ExprKind::slice, line) {}
    ExprPtr start, stop, step;  // null when left out
};

struct CallExpr : Expr {
    CallExpr(int line, ExprPtr callee) : Expr(ExprKind::call, line), callee(std::move(callee)) {}
    ExprPtr callee;
    Arguments args;
};

// value | name(args). A null value stands for the body of a filter block.
struct FilterExpr : Expr {
    FilterExpr(int line, ExprPtr value, std::string name, FilterFn fn)
        : Expr(ExprKind::filter, line), value(std::move(value)), name(std::move(name)), fn(fn) {}
    ExprPtr value;
    std::string name;
    FilterFn fn;
    Arguments args;
};

// value is name(args)
struct TestExpr : Expr {
    TestExpr(int line, ExprPtr value, std::string name, TestFn fn)
        : Expr(ExprKind::test, line), value(std::move(value)), name(std::move(name)), fn(fn) {}
    ExprPtr value;
    std::string name;
    TestFn fn;
    Arguments args;
};

enum class UnaryOp { logical_not, negate, plus };

struct UnaryExpr : Expr {
    UnaryExpr(int line, UnaryOp op, ExprPtr operand)
        : Expr(ExprKind::unary, line), op(op), operand(std::move(operand)) {}
    UnaryOp op;
    ExprPtr operand;
};

struct BinaryExpr : Expr {
    BinaryExpr(int line, BinaryOp op, ExprPtr left, ExprPtr right)
        : Expr(ExprKind::binary, line), op(op), left(std::move(left)), right(std::move(right)) {}
    BinaryOp op;
    ExprPtr left, right;
};

// `and` / `or`: Python's short-circuit, returning an operand.
struct LogicalExpr : Expr {
    LogicalExpr(int line, bool is_and, ExprPtr left, ExprPtr right)
        : Expr(ExprKind::logical, line),
          is_and(is_and),
          left(std::move(left)),
          right(std::move(right)) {}
    bool is_and;
    ExprPtr left, right;
};

// a ~ b ~ c: the str() of each, joined.
struct ConcatExpr : Expr {
    explicit ConcatExpr(int line) : Expr(ExprKind::concat, line) {}
    std::vector<ExprPtr> parts;
};

// a < b <= c, chained as in Python.
struct CompareExpr : Expr {
    CompareExpr(int line, ExprPtr first) : Expr(ExprKind::compare, line), first(std::move(first)) {}
    ExprPtr first;
    std::vector<std::pair<CompareOp, ExprPtr>> rest;
};

// then if test else otherwise; otherwise may be null.
struct ConditionalExpr : Expr {
    explicit ConditionalExpr(int line) : Expr(ExprKind::conditional, line) {}
    ExprPtr test, then, otherwise;
};

// ---- statements ----

enum class StmtKind {
    text,
    output,
    if_,
    for_,
    set,
    set_block,
    macro,
    call_block,
    filter_block,
    with,
    scope,
    loop_break,
    loop_continue
};

struct Stmt {
    Stmt(StmtKind kind, int line) : kind(kind), line(line) {}
    virtual ~Stmt() = default;
    StmtKind kind;
    int line;
};
using StmtPtr = std::unique_ptr<Stmt>;
using Body = std::vector<StmtPtr>;

// Names a scope binds to Undefined on entry: Jinja2 resolves names statically,
// and a name the scope assigns before any read shadows outer values from the
// start (see jinja_scope.h).
using Unset = std::vector<std::string>;

// Where an assignment stores: a name, namespace.attribute, or a tuple of targets.
struct Target {
    std::string name;
    std::string attribute;      // set for `ns.attr`
    std::vector<Target> items;  // set for a tuple
    bool is_tuple = false;
};

struct TextStmt : Stmt {
    TextStmt(int line, std::string text) : Stmt(StmtKind::text, line), text(std::move(text)) {}
    std::string text;
};

// {{ expr }} or {% print a, b %}
struct OutputStmt : Stmt {
    explicit OutputStmt(int line) : Stmt(StmtKind::output, line) {}
    std::vector<ExprPtr> values;
};

struct IfStmt : Stmt {
    explicit IfStmt(int line) : Stmt(StmtKind::if_, line) {}
    std::vector<std::pair<ExprPtr, Body>> branches;
    Body otherwise;
};

struct ForStmt : Stmt {
    explicit ForStmt(int line) : Stmt(StmtKind::for_, line) {}
    Target target;
    ExprPtr iterable;
    ExprPtr condition;  // `for x in y if cond`, may be null
    bool recursive = false;
    Body body;
    Body otherwise;
    Unset body_unset, otherwise_unset;
};

struct SetStmt : Stmt {
    explicit SetStmt(int line) : Stmt(StmtKind::set, line) {}
    Target target;
    ExprPtr value;
};

// {% set x | filter %}...{% endset %}; filter may be null.
struct SetBlockStmt : Stmt {
    explicit SetBlockStmt(int line) : Stmt(StmtKind::set_block, line) {}
    Target target;
    ExprPtr filter;
    Body body;
    Unset unset;
};

struct MacroStmt : Stmt {
    explicit MacroStmt(int line) : Stmt(StmtKind::macro, line) {}
    std::string name;
    std::vector<std::string> params;
    std::vector<ExprPtr> defaults;  // for the last defaults.size() params
    Body body;
    Unset unset;
    bool uses_varargs = false;  // the body reads `varargs`, so extra arguments are allowed
    bool uses_kwargs = false;
    bool uses_caller = false;
};

// {% call(params) macro(args) %}body{% endcall %}: body is `caller` inside the macro.
struct CallBlockStmt : Stmt {
    explicit CallBlockStmt(int line) : Stmt(StmtKind::call_block, line) {}
    ExprPtr call;
    std::shared_ptr<MacroStmt> caller;
};

struct FilterBlockStmt : Stmt {
    explicit FilterBlockStmt(int line) : Stmt(StmtKind::filter_block, line) {}
    ExprPtr filter;
    Body body;
    Unset unset;
};

struct WithStmt : Stmt {
    explicit WithStmt(int line) : Stmt(StmtKind::with, line) {}
    std::vector<std::pair<Target, ExprPtr>> assignments;
    Body body;
    Unset unset;
};

// A body with a scope of its own ({% generation %}).
struct ScopeStmt : Stmt {
    explicit ScopeStmt(int line) : Stmt(StmtKind::scope, line) {}
    Body body;
    Unset unset;
};

}  // namespace anelm::jinja
