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
  std::string key;
  int op_count = 0;          // computing ops in the tree (inline heuristics)
};

ExprP ex_load(int buffer, DType t, IndexP index);
ExprP ex_const(double v, DType t);
ExprP ex_unary(Op op, ExprP a, const Attrs& attrs = {});
ExprP ex_binary(Op op, ExprP a, ExprP b, DType out);
ExprP ex_where(ExprP c, ExprP a, ExprP b, DType out);
ExprP ex_cast(ExprP a, DType to);
ExprP ex_index_lt(IndexP index, int64_t bound);
ExprP ex_index_value(IndexP index, DType t);

// Distinct buffers read by loads.
std::set<int> ex_buffers(const ExprP& e);
// Every (buffer, index) load, de-duplicated by key.
void ex_loads(const ExprP& e, std::map<std::string, std::pair<int, IndexP>>* out);
// Replaces index variables everywhere.
ExprP ex_subst(const ExprP& e, const std::map<std::string, IndexP>& m);

}  // namespace fg
