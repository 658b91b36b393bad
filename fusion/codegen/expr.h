// Value expressions: the bodies of pointwise and reduction nodes after
// inlining. A Load reads a buffer at a symbolic index; the other kinds
// compute. Expressions are immutable DAGs; `key` is a canonical text used
// for common-subexpression elimination when printing.
#pragma once
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "fusion/ir/index.h"
#include "fusion/ir/ops.h"

namespace fg {

struct Expr;
using ExprP = std::shared_ptr<const Expr>;

struct Expr {
  enum Kind { Load, Const, Unary, Binary, Where, Cast, IndexLt, IndexValue } kind = Const;
  DType dtype = DType::F32;  // logical type of the value
  Op op = Op::Add;           // Unary/Binary
  Attrs attrs;               // op attributes that change the math (gelu approximate)
  double value = 0;          // Const
  int buffer = -1;           // Load
  IndexP index;              // Load, IndexLt, IndexValue (the index as a value: arange)
  int64_t bound = 0;         // IndexLt: index < bound
  std::vector<ExprP> args;
  // An index that data gives (gather, index_select) in a Load, IndexLt or
  // IndexValue: each (name, size) is an index variable `index` uses, its
  // value args[k] clamped to [0, size): the kernel computes it first.
  std::vector<std::pair<std::string, int64_t>> indirect;
  std::string key;
  size_t key_hash = 0;       // std::hash of key, so sets of values compare texts only on a match
  // the ops Inductor's op counter sees for this value (ex_inline_stats): a
  // GELU or SiLU is a decomposition there, a cat's selection its masks
  int inductor_ops = 1;
};

ExprP ex_load(int buffer, DType t, IndexP index);
// A load whose index uses variables bound to computed values (Expr::indirect).
ExprP ex_load_indirect(int buffer, DType t, IndexP index, std::vector<std::pair<std::string, int64_t>> vars,
                       std::vector<ExprP> values);
// The variables an indirect load defines are named with this prefix.
constexpr const char* kIndirectVarPrefix = "ind";
ExprP ex_const(double v, DType t);
ExprP ex_unary(Op op, ExprP a, const Attrs& attrs = {});
ExprP ex_binary(Op op, ExprP a, ExprP b, DType out);
ExprP ex_where(ExprP c, ExprP a, ExprP b, DType out);
// ex_where counted as `ops` of Inductor's op counter (a cat's selection)
ExprP ex_where_counted(ExprP c, ExprP a, ExprP b, DType out, int ops);
ExprP ex_cast(ExprP a, DType to);
// a cast that Inductor's op counter counts as `ops` values (0: a conversion
// its own op does, as prims.iota's index_expr in the dtype)
ExprP ex_cast_counted(ExprP a, DType to, int ops);
ExprP ex_index_lt(IndexP index, int64_t bound);
ExprP ex_index_value(IndexP index, DType t);

// Distinct buffers read by loads.
std::set<int> ex_buffers(const ExprP& e);
// What inlining decides on, counted as Inductor's op counter counts a
// Loops body: distinct loads (buffer and index), those of them whose index
// is not a constant, and distinct values (loads and constants included),
// each common subexpression once, a GELU or SiLU as the ops Inductor
// decomposes it into.
struct InlineStats {
  int loads = 0;
  int nontrivial_loads = 0;
  int values = 0;
};
InlineStats ex_inline_stats(const ExprP& e);
// Every (buffer, index) load, de-duplicated by key.
void ex_loads(const ExprP& e, std::map<std::string, std::pair<int, IndexP>>* out);
// `e` with every load whose index uses variable `name` reading it as the
// value `value` clamped to [0, size) (an indirect load).
ExprP ex_bind_indirect(const ExprP& e, const std::string& name, int64_t size, const ExprP& value);
// Replaces index variables everywhere.
ExprP ex_subst(const ExprP& e, const std::map<std::string, IndexP>& m);

}  // namespace fg
