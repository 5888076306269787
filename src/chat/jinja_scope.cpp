#include "chat/jinja_scope.h"

#include <map>
#include <set>

namespace anelm::jinja {
namespace {

enum class Mode { param, resolve, alias, undefined };

// The names one scope refers to and how each starts out.
struct Symbols {
    const Symbols* parent = nullptr;
    std::map<std::string, Mode> refs;
    std::set<std::string> stores;

    bool find_ref(const std::string& name) const {
        for (const Symbols* s = this; s; s = s->parent)
            if (s->refs.count(name)) return true;
        return false;
    }
    bool outer_ref(const std::string& name) const { return parent && parent->find_ref(name); }
    void load(const std::string& name) {
        if (!find_ref(name)) refs[name] = Mode::resolve;
    }
    void store(const std::string& name) {
        stores.insert(name);
        if (!refs.count(name)) refs[name] = outer_ref(name) ? Mode::alias : Mode::undefined;
    }
    void param(const std::string& name) {
        stores.insert(name);
        refs[name] = Mode::param;
    }

    // Merges the scopes of an if's branches: a name a branch assigns resolves
    // outward instead of starting undefined.
    void branch_update(const std::vector<Symbols>& branches) {
        std::set<std::string> assigned;
        for (const Symbols& b : branches)
            for (const std::string& t : b.stores)
                if (!stores.count(t)) assigned.insert(t);
        for (const Symbols& b : branches) {
            for (const auto& [name, mode] : b.refs) refs[name] = mode;
            stores.insert(b.stores.begin(), b.stores.end());
        }
        for (const std::string& name : assigned)
            refs[name] = outer_ref(name) ? Mode::alias : Mode::resolve;
    }

    Unset unset() const {
        Unset out;
        for (const auto& [name, mode] : refs)
            if (mode == Mode::undefined) out.push_back(name);
        return out;
    }
};

void visit_args(const Arguments& a, Symbols& s);

void visit_expr(const Expr* e, Symbols& s) {
    if (!e) return;
    switch (e->kind) {
        case ExprKind::constant:
            return;
        case ExprKind::name:
            s.load(static_cast<const NameExpr*>(e)->name);
            return;
        case ExprKind::list:
        case ExprKind::tuple:
            for (const auto& item : static_cast<const SequenceExpr*>(e)->items)
                visit_expr(item.get(), s);
            return;
        case ExprKind::dict:
            for (const auto& [k, v] : static_cast<const DictExpr*>(e)->items) {
                visit_expr(k.get(), s);
                visit_expr(v.get(), s);
            }
            return;
        case ExprKind::attribute:
            visit_expr(static_cast<const AttributeExpr*>(e)->object.get(), s);
            return;
        case ExprKind::item: {
            const auto* i = static_cast<const ItemExpr*>(e);
            visit_expr(i->object.get(), s);
            visit_expr(i->index.get(), s);
            return;
        }
        case ExprKind::slice: {
            const auto* sl = static_cast<const SliceExpr*>(e);
            visit_expr(sl->start.get(), s);
            visit_expr(sl->stop.get(), s);
            visit_expr(sl->step.get(), s);
            return;
        }
        case ExprKind::call: {
            const auto* c = static_cast<const CallExpr*>(e);
            visit_expr(c->callee.get(), s);
            visit_args(c->args, s);
            return;
        }
        case ExprKind::filter: {
            const auto* f = static_cast<const FilterExpr*>(e);
            visit_expr(f->value.get(), s);
            visit_args(f->args, s);
            return;
        }
        case ExprKind::test: {
            const auto* t = static_cast<const TestExpr*>(e);
            visit_expr(t->value.get(), s);
            visit_args(t->args, s);
            return;
        }
        case ExprKind::unary:
            visit_expr(static_cast<const UnaryExpr*>(e)->operand.get(), s);
            return;
        case ExprKind::binary: {
            const auto* b = static_cast<const BinaryExpr*>(e);
            visit_expr(b->left.get(), s);
            visit_expr(b->right.get(), s);
            return;
        }
        case ExprKind::logical: {
            const auto* l = static_cast<const LogicalExpr*>(e);
            visit_expr(l->left.get(), s);
            visit_expr(l->right.get(), s);
            return;
        }
        case ExprKind::concat:
            for (const auto& p : static_cast<const ConcatExpr*>(e)->parts) visit_expr(p.get(), s);
            return;
        case ExprKind::compare: {
            const auto* c = static_cast<const CompareExpr*>(e);
            visit_expr(c->first.get(), s);
            for (const auto& [_, rhs] : c->rest) visit_expr(rhs.get(), s);
            return;
        }
        case ExprKind::conditional: {
            const auto* c = static_cast<const ConditionalExpr*>(e);
            visit_expr(c->test.get(), s);
            visit_expr(c->then.get(), s);
            visit_expr(c->otherwise.get(), s);
            return;
        }
    }
}

void visit_args(const Arguments& a, Symbols& s) {
    for (const auto& e : a.positional) visit_expr(e.get(), s);
    for (const auto& [_, e] : a.keyword) visit_expr(e.get(), s);
    visit_expr(a.star.get(), s);
    visit_expr(a.star_star.get(), s);
}

void visit_target(const Target& t, Symbols& s) {
    if (!t.attribute.empty()) {
        s.load(t.name);
    } else if (t.is_tuple) {
        for (const Target& item : t.items) visit_target(item, s);
    } else {
        s.store(t.name);
    }
}

void visit_stmt(const Stmt& st, Symbols& s);

void visit_body(const Body& body, Symbols& s) {
    for (const auto& st : body) visit_stmt(*st, s);
}

// Jinja2's If node holds its elifs as a list of nested Ifs without else.
void visit_if(const IfStmt& st, size_t branch, Symbols& s) {
    visit_expr(st.branches[branch].first.get(), s);
    auto in_copy = [&](auto visit) {
        Symbols copy = s;
        visit(copy);
        return copy;
    };
    std::vector<Symbols> branches;
    branches.push_back(in_copy([&](Symbols& c) { visit_body(st.branches[branch].second, c); }));
    if (branch == 0) {
        branches.push_back(in_copy([&](Symbols& c) {
            for (size_t k = 1; k < st.branches.size(); ++k) visit_if(st, k, c);
        }));
        branches.push_back(in_copy([&](Symbols& c) { visit_body(st.otherwise, c); }));
    } else {
        branches.push_back(s);
        branches.push_back(s);
    }
    s.branch_update(branches);
}

void visit_stmt(const Stmt& st, Symbols& s) {
    switch (st.kind) {
        case StmtKind::output:
            for (const auto& v : static_cast<const OutputStmt&>(st).values) visit_expr(v.get(), s);
            return;
        case StmtKind::if_:
            visit_if(static_cast<const IfStmt&>(st), 0, s);
            return;
        case StmtKind::for_:
            visit_expr(static_cast<const ForStmt&>(st).iterable.get(), s);
            return;
        case StmtKind::set: {
            const auto& set = static_cast<const SetStmt&>(st);
            visit_expr(set.value.get(), s);
            visit_target(set.target, s);
            return;
        }
        case StmtKind::set_block:
            visit_target(static_cast<const SetBlockStmt&>(st).target, s);
            return;
        case StmtKind::macro:
            s.store(static_cast<const MacroStmt&>(st).name);
            return;
        case StmtKind::call_block:
            visit_expr(static_cast<const CallBlockStmt&>(st).call.get(), s);
            return;
        case StmtKind::filter_block:
            visit_expr(static_cast<const FilterBlockStmt&>(st).filter.get(), s);
            return;
        case StmtKind::with:
            for (const auto& [_, v] : static_cast<const WithStmt&>(st).assignments)
                visit_expr(v.get(), s);
            return;
        default:
            return;
    }
}

void target_names(const Target& t, std::vector<std::string>& out) {
    if (t.is_tuple) {
        for (const Target& item : t.items) target_names(item, out);
    } else if (t.attribute.empty()) {
        out.push_back(t.name);
    }
}

void annotate(Body& body, const Symbols& scope);

// Analyses a nested scope with the given parameters, then the scopes inside it.
Unset nested_scope(Body& body, const Symbols& parent, const std::vector<std::string>& params) {
    Symbols s;
    s.parent = &parent;
    for (const std::string& p : params) s.param(p);
    visit_body(body, s);
    annotate(body, s);
    return s.unset();
}

std::vector<std::string> macro_params(const MacroStmt& m) {
    std::vector<std::string> params = m.params;
    if (m.uses_varargs) params.push_back("varargs");
    if (m.uses_kwargs) params.push_back("kwargs");
    if (m.uses_caller) params.push_back("caller");
    return params;
}

void annotate(Body& body, const Symbols& scope) {
    for (auto& st : body) {
        switch (st->kind) {
            case StmtKind::if_: {
                auto& s = static_cast<IfStmt&>(*st);
                for (auto& [_, b] : s.branches) annotate(b, scope);
                annotate(s.otherwise, scope);
                break;
            }
            case StmtKind::for_: {
                auto& s = static_cast<ForStmt&>(*st);
                std::vector<std::string> params{"loop"};
                target_names(s.target, params);
                s.body_unset = nested_scope(s.body, scope, params);
                s.otherwise_unset = nested_scope(s.otherwise, scope, {});
                break;
            }
            case StmtKind::macro: {
                auto& m = static_cast<MacroStmt&>(*st);
                m.unset = nested_scope(m.body, scope, macro_params(m));
                break;
            }
            case StmtKind::call_block: {
                auto& c = static_cast<CallBlockStmt&>(*st);
                c.caller->unset = nested_scope(c.caller->body, scope, macro_params(*c.caller));
                break;
            }
            case StmtKind::set_block: {
                auto& s = static_cast<SetBlockStmt&>(*st);
                s.unset = nested_scope(s.body, scope, {});
                break;
            }
            case StmtKind::filter_block: {
                auto& s = static_cast<FilterBlockStmt&>(*st);
                s.unset = nested_scope(s.body, scope, {});
                break;
            }
            case StmtKind::with: {
                auto& s = static_cast<WithStmt&>(*st);
                std::vector<std::string> params;
                for (const auto& [t, _] : s.assignments) target_names(t, params);
                s.unset = nested_scope(s.body, scope, params);
                break;
            }
            case StmtKind::scope: {
                auto& s = static_cast<ScopeStmt&>(*st);
                s.unset = nested_scope(s.body, scope, {});
                break;
            }
            default:
                break;
        }
    }
}

}  // namespace

Unset analyze_scopes(Body& body) {
    Symbols root;
    visit_body(body, root);
    annotate(body, root);
    return root.unset();
}

}  // namespace anelm::jinja
