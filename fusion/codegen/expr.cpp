#include "fusion/codegen/expr.h"

#include <functional>
#include <unordered_map>

#include "fusion/ir/text.h"

namespace fg {

namespace {
ExprP finish(Expr e) {
  std::string k;
  switch (e.kind) {
    case Expr::Load: k = "load(b" + std::to_string(e.buffer) + ", " + e.index->key + ")"; break;
    case Expr::Const: k = std::string("const(") + dtype_name(e.dtype) + ", " + format_double(e.value) + ")"; break;
    case Expr::Unary: case Expr::Binary:
      k = std::string(op_name(e.op)) + "[" + dtype_name(e.dtype) + "]";
      for (const auto& [n, v] : e.attrs)
        if (auto* s = std::get_if<std::string>(&v)) k += "{" + n + "=" + *s + "}";
      break;
    case Expr::Where: k = "where"; break;
    case Expr::Cast: k = std::string("cast[") + dtype_name(e.dtype) + "]"; break;
    case Expr::IndexLt: k = "lt(" + e.index->key + ", " + std::to_string(e.bound) + ")"; break;
    case Expr::IndexValue: k = std::string("index[") + dtype_name(e.dtype) + "](" + e.index->key + ")"; break;
  }
  if (!e.args.empty()) {
    k += "(";
    for (size_t i = 0; i < e.args.size(); ++i) {
      k += (i ? ", " : "") + e.args[i]->key;
      e.op_count += e.args[i]->op_count;
    }
    k += ")";
  }
  if (e.kind == Expr::Unary || e.kind == Expr::Binary || e.kind == Expr::Where || e.kind == Expr::Cast) e.op_count += 1;
  e.key = std::move(k);
  return std::make_shared<Expr>(std::move(e));
}
}  // namespace

ExprP ex_load(int buffer, DType t, IndexP index) {
  Expr e;
  e.kind = Expr::Load;
  e.dtype = t;
  e.buffer = buffer;
  e.index = std::move(index);
  return finish(std::move(e));
}

ExprP ex_load_indirect(int buffer, DType t, IndexP index, std::vector<std::pair<std::string, int64_t>> vars,
                       std::vector<ExprP> values) {
  Expr e;
  e.kind = Expr::Load;
  e.dtype = t;
  e.buffer = buffer;
  e.index = std::move(index);
  e.indirect = std::move(vars);
  e.args = std::move(values);
  return finish(std::move(e));
}

ExprP ex_const(double v, DType t) {
  Expr e;
  e.kind = Expr::Const;
  e.dtype = t;
  e.value = v;
  return finish(std::move(e));
}

ExprP ex_unary(Op op, ExprP a, const Attrs& attrs) {
  Expr e;
  e.kind = Expr::Unary;
  e.op = op;
  e.dtype = a->dtype;
  for (const auto& [k, v] : attrs)
    if (std::holds_alternative<std::string>(v)) e.attrs[k] = v;
  e.args = {std::move(a)};
  return finish(std::move(e));
}

ExprP ex_binary(Op op, ExprP a, ExprP b, DType out) {
  Expr e;
  e.kind = Expr::Binary;
  e.op = op;
  e.dtype = out;
  e.args = {std::move(a), std::move(b)};
  return finish(std::move(e));
}

ExprP ex_where(ExprP c, ExprP a, ExprP b, DType out) {
  Expr e;
  e.kind = Expr::Where;
  e.dtype = out;
  e.args = {std::move(c), std::move(a), std::move(b)};
  return finish(std::move(e));
}

ExprP ex_cast(ExprP a, DType to) {
  if (a->dtype == to) return a;
  Expr e;
  e.kind = Expr::Cast;
  e.dtype = to;
  e.args = {std::move(a)};
  return finish(std::move(e));
}

ExprP ex_index_lt(IndexP index, int64_t bound) {
  Expr e;
  e.kind = Expr::IndexLt;
  e.dtype = DType::Bool;
  e.index = std::move(index);
  e.bound = bound;
  return finish(std::move(e));
}

ExprP ex_index_value(IndexP index, DType t) {
  Expr e;
  e.kind = Expr::IndexValue;
  e.dtype = t;
  e.index = std::move(index);
  return finish(std::move(e));
}

std::set<int> ex_buffers(const ExprP& e) {
  std::map<std::string, std::pair<int, IndexP>> loads;
  ex_loads(e, &loads);
  std::set<int> r;
  for (const auto& [k, v] : loads) r.insert(v.first);
  return r;
}

InlineStats ex_inline_stats(const ExprP& e) {
  std::set<const Expr*> seen;
  std::set<std::string> keys;
  InlineStats st;
  std::function<void(const ExprP&)> walk = [&](const ExprP& x) {
    if (!seen.insert(x.get()).second) return;
    for (const auto& a : x->args) walk(a);
    if (!keys.insert(x->key).second) return;
    ++st.values;
    if (x->kind == Expr::Load) {
      ++st.loads;
      if (!x->index->terms.empty()) ++st.nontrivial_loads;
    }
  };
  walk(e);
  return st;
}

void ex_loads(const ExprP& e, std::map<std::string, std::pair<int, IndexP>>* out) {
  std::set<const Expr*> seen;
  std::function<void(const ExprP&)> walk = [&](const ExprP& x) {
    if (!seen.insert(x.get()).second) return;
    if (x->kind == Expr::Load) (*out)[x->key] = {x->buffer, x->index};
    for (const auto& a : x->args) walk(a);
  };
  walk(e);
}

ExprP ex_bind_indirect(const ExprP& e, const std::string& name, int64_t size, const ExprP& value) {
  std::unordered_map<const Expr*, ExprP> memo;
  std::function<ExprP(const ExprP&)> go = [&](const ExprP& x) -> ExprP {
    auto it = memo.find(x.get());
    if (it != memo.end()) return it->second;
    Expr c = *x;
    bool changed = false;
    for (auto& a : c.args) {
      ExprP n = go(a);
      changed = changed || n != a;
      a = n;
    }
    // any expression over an index: a load, and the index tests and values
    // that cat, pad and arange make of the coordinates
    if (c.index) {
      std::map<std::string, int64_t> vars;
      ix_vars(c.index, &vars);
      if (vars.count(name)) {
        c.indirect.push_back({name, size});
        c.args.push_back(value);
        changed = true;
      }
    }
    ExprP r = x;
    if (changed) {
      c.op_count = 0;
      r = finish(std::move(c));
    }
    memo[x.get()] = r;
    return r;
  };
  return go(e);
}

namespace {
struct Substituter {
  const std::map<std::string, IndexP>& m;
  std::unordered_map<const Expr*, ExprP> memo;
  std::unordered_map<const Index*, IndexP> index_memo;
  ExprP go(const ExprP& x) {
    auto it = memo.find(x.get());
    if (it != memo.end()) return it->second;
    Expr c = *x;
    if (c.index) {
      auto ii = index_memo.find(c.index.get());
      if (ii != index_memo.end()) {
        c.index = ii->second;
      } else {
        IndexP n = ix_subst(c.index, m);
        index_memo[x->index.get()] = n;
        c.index = n;
      }
    }
    for (auto& a : c.args) a = go(a);
    c.op_count = 0;
    ExprP r = finish(std::move(c));
    memo[x.get()] = r;
    return r;
  }
};
}  // namespace

ExprP ex_subst(const ExprP& e, const std::map<std::string, IndexP>& m) {
  Substituter s{m, {}, {}};
  return s.go(e);
}

}  // namespace fg
