#include "fusion/codegen/expr.h"

#include <algorithm>
#include <functional>
#include <unordered_map>
#include <unordered_set>

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
    for (size_t i = 0; i < e.args.size(); ++i) k += (i ? ", " : "") + e.args[i]->key;
    k += ")";
  }
  e.key_hash = std::hash<std::string>{}(k);
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
  // decompositions in Inductor, counted as its op counter counts them:
  // torch's gelu (8 ops exact, 13 with tanh, its constants included) and
  // Inductor's silu, x / (1 + exp(-x)) (5); both compute a 16-bit input in
  // f32, a conversion in and one out (type promotion's and
  // pw_cast_for_opmath's convert_element_type nodes: 2 more)
  const int widen = e.dtype == DType::F16 || e.dtype == DType::BF16 ? 2 : 0;
  if (op == Op::Gelu) e.inductor_ops = (attr_str_or(e.attrs, "approximate", "none") == "tanh" ? 13 : 8) + widen;
  if (op == Op::Silu) e.inductor_ops = 5 + widen;
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

ExprP ex_where(ExprP c, ExprP a, ExprP b, DType out) { return ex_where_counted(c, a, b, out, 1); }

ExprP ex_where_counted(ExprP c, ExprP a, ExprP b, DType out, int ops) {
  Expr e;
  e.kind = Expr::Where;
  e.dtype = out;
  e.args = {std::move(c), std::move(a), std::move(b)};
  e.inductor_ops = ops;
  return finish(std::move(e));
}

ExprP ex_cast(ExprP a, DType to) { return ex_cast_counted(std::move(a), to, 1); }

ExprP ex_cast_counted(ExprP a, DType to, int ops) {
  if (a->dtype == to) return a;
  Expr e;
  e.kind = Expr::Cast;
  e.dtype = to;
  e.args = {std::move(a)};
  e.inductor_ops = ops;
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

namespace {
// An open-addressing set of values, kept between calls (the lowering asks
// for the figures of every value it makes; node-based sets spent most of
// that time in the allocator). `Same` says two entries are one.
template <class Hash, class Same>
class ValueSet {
 public:
  // false where an entry the same as `x` is in already
  bool insert(const Expr* x) {
    if ((used_.size() + 1) * 2 > slots_.size()) grow();
    size_t i = Hash{}(x) & (slots_.size() - 1);
    while (slots_[i]) {
      if (Same{}(slots_[i], x)) return false;
      i = (i + 1) & (slots_.size() - 1);
    }
    slots_[i] = x;
    used_.push_back(i);
    return true;
  }
  void clear() {
    for (size_t i : used_) slots_[i] = nullptr;
    used_.clear();
  }

 private:
  void grow() {
    std::vector<const Expr*> old;
    for (size_t i : used_) old.push_back(slots_[i]);
    slots_.assign(std::max<size_t>(64, slots_.size() * 2), nullptr);
    used_.clear();
    for (const Expr* x : old) insert(x);
  }
  std::vector<const Expr*> slots_;
  std::vector<size_t> used_;
};
struct ByAddress {
  size_t operator()(const Expr* x) const { return std::hash<const Expr*>{}(x) * 0x9E3779B97F4A7C15ull >> 7; }
};
struct SameAddress {
  bool operator()(const Expr* a, const Expr* b) const { return a == b; }
};
struct ByKey {
  size_t operator()(const Expr* x) const { return x->key_hash; }
};
// a chain's keys share long prefixes: texts are compared only where their
// hashes match (a value met twice)
struct SameKey {
  bool operator()(const Expr* a, const Expr* b) const { return a->key_hash == b->key_hash && a->key == b->key; }
};
}  // namespace

InlineStats ex_inline_stats(const ExprP& e) {
  // what is counted is the set of distinct keys reachable from e, so any
  // order of the walk gives the same figures
  thread_local ValueSet<ByAddress, SameAddress> seen;
  thread_local ValueSet<ByKey, SameKey> keys;
  thread_local std::vector<const Expr*> todo;
  seen.clear();
  keys.clear();
  todo.assign(1, e.get());
  InlineStats st;
  while (!todo.empty()) {
    const Expr* x = todo.back();
    todo.pop_back();
    if (!seen.insert(x)) continue;
    for (const auto& a : x->args) todo.push_back(a.get());
    if (!keys.insert(x)) continue;
    st.values += x->inductor_ops;
    if (x->kind == Expr::Load) {
      ++st.loads;
      if (!x->index->terms.empty()) ++st.nontrivial_loads;
    }
  }
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
    if (changed) r = finish(std::move(c));
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
