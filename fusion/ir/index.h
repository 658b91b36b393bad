// Symbolic index expressions over loop variables, kept in a canonical
// linear form: constant + sum(coeff * atom), where an atom is a variable with
// a known range [0, range), or floor-div / modulo / clamp of a sub-expression.
//
// Views (reshape, permute, slice, expand) become index arithmetic through
// these, and the simplifier uses variable ranges to remove the div/mod that
// reshapes introduce ((x*256 + r) / 256 == x when 0 <= r < 256). Two accesses
// are "the same dependency" when their canonical keys are equal, which is
// what the scheduler's vertical-fusion gate compares.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace fg {

struct Index;
using IndexP = std::shared_ptr<const Index>;

struct IndexAtom {
  enum Kind { Var, Div, Mod, Clamp } kind = Var;
  std::string var;     // Var: name
  int64_t range = 0;   // Var: values are [0, range)
  IndexP arg;          // Div/Mod/Clamp
  int64_t d = 1;       // Div/Mod divisor; Clamp lower bound
  int64_t hi = 0;      // Clamp upper bound (inclusive)
  std::string key;     // canonical text
};
using AtomP = std::shared_ptr<const IndexAtom>;

struct Index {
  int64_t constant = 0;
  std::vector<std::pair<int64_t, AtomP>> terms;  // sorted by atom key, no zero coefficients
  std::string key;                               // canonical text, also valid C
  int64_t lo = 0, hi = 0;                        // inclusive bounds
};

IndexP ix_const(int64_t c);
IndexP ix_var(const std::string& name, int64_t range);
IndexP ix_add(const IndexP& a, const IndexP& b);
IndexP ix_mul(const IndexP& a, int64_t c);
IndexP ix_div(const IndexP& a, int64_t d);
IndexP ix_mod(const IndexP& a, int64_t d);
IndexP ix_clamp(const IndexP& a, int64_t lo, int64_t hi);
// The expression that is just this atom (1 * atom).
IndexP ix_atom(const AtomP& a);
// Replaces variables by expressions and re-simplifies.
IndexP ix_subst(const IndexP& a, const std::map<std::string, IndexP>& m);
// Variables the expression depends on.
void ix_vars(const IndexP& a, std::map<std::string, int64_t>* out);

// coords of a row-major shape from a flat index: c_k = (flat / stride_k) % size_k.
std::vector<IndexP> ix_unflatten(const IndexP& flat, const std::vector<int64_t>& shape);
// offset + sum(coords_k * strides_k)
IndexP ix_linear(const std::vector<IndexP>& coords, const std::vector<int64_t>& strides, int64_t offset = 0);
// Fresh variables i0..i{n-1} named with `prefix` over `shape`.
std::vector<IndexP> ix_coords(const std::string& prefix, const std::vector<int64_t>& shape);

}  // namespace fg
