#include "fusion/ir/index.h"

#include <algorithm>

#include "fusion/errors.h"

namespace fg {

namespace {

int64_t floordiv(int64_t a, int64_t d) { return a >= 0 ? a / d : -((-a + d - 1) / d); }

std::string atom_key(const IndexAtom& a) {
  switch (a.kind) {
    case IndexAtom::Var: return a.var;
    case IndexAtom::Div: return "((" + a.arg->key + ") / " + std::to_string(a.d) + ")";
    case IndexAtom::Mod: return "((" + a.arg->key + ") % " + std::to_string(a.d) + ")";
    case IndexAtom::Clamp:
      return "fg_clamp(" + a.arg->key + ", " + std::to_string(a.d) + ", " + std::to_string(a.hi) + ")";
  }
  return "?";
}

void atom_bounds(const IndexAtom& a, int64_t* lo, int64_t* hi) {
  switch (a.kind) {
    case IndexAtom::Var: *lo = 0; *hi = a.range - 1; return;
    case IndexAtom::Div: *lo = floordiv(a.arg->lo, a.d); *hi = floordiv(a.arg->hi, a.d); return;
    case IndexAtom::Mod: *lo = 0; *hi = a.d - 1; return;
    case IndexAtom::Clamp: *lo = a.d; *hi = a.hi; return;
  }
}

// Builds the canonical Index from a constant and unsorted terms: merges equal
// atoms, drops zeros, sorts, and computes key and bounds.
IndexP make(int64_t constant, std::vector<std::pair<int64_t, AtomP>> terms);

// k*d*(e / d) + k*(e % d) == k*e: undoes the split a reshape makes when the
// dims are merged again.
bool recombine(int64_t* constant, std::vector<std::pair<int64_t, AtomP>>* terms) {
  // k*d*(E / (a*d)) + k*((E / a) % d) == k*(E / a): dims merged again after
  // a split of a split
  for (size_t j = 0; j < terms->size(); ++j) {
    const auto& [cj, aj] = (*terms)[j];
    if (aj->kind != IndexAtom::Mod) continue;
    const IndexP& inner = aj->arg;
    if (inner->constant != 0 || inner->terms.size() != 1 || inner->terms[0].first != 1 ||
        inner->terms[0].second->kind != IndexAtom::Div)
      continue;
    const AtomP& div_a = inner->terms[0].second;  // E / a
    for (size_t i = 0; i < terms->size(); ++i) {
      const auto& [ci, ai] = (*terms)[i];
      if (i == j || ai->kind != IndexAtom::Div || ai->arg->key != div_a->arg->key || ai->d != div_a->d * aj->d ||
          ci != cj * aj->d)
        continue;
      int64_t k = cj;
      std::vector<std::pair<int64_t, AtomP>> rest;
      for (size_t m = 0; m < terms->size(); ++m)
        if (m != i && m != j) rest.push_back((*terms)[m]);
      rest.push_back({k, div_a});
      *terms = std::move(rest);
      return true;
    }
  }
  for (size_t i = 0; i < terms->size(); ++i) {
    const auto& [ci, ai] = (*terms)[i];
    if (ai->kind != IndexAtom::Div) continue;
    for (size_t j = 0; j < terms->size(); ++j) {
      const auto& [cj, aj] = (*terms)[j];
      if (aj->kind != IndexAtom::Mod || aj->d != ai->d || aj->arg->key != ai->arg->key) continue;
      if (ci != cj * ai->d) continue;
      IndexP e = aj->arg;
      int64_t k = cj;
      std::vector<std::pair<int64_t, AtomP>> rest;
      for (size_t m = 0; m < terms->size(); ++m)
        if (m != i && m != j) rest.push_back((*terms)[m]);
      for (const auto& t : e->terms) rest.push_back({t.first * k, t.second});
      *constant += e->constant * k;
      *terms = std::move(rest);
      return true;
    }
  }
  return false;
}

IndexP make(int64_t constant, std::vector<std::pair<int64_t, AtomP>> terms) {
  {
    // merge equal atoms first so that recombination sees whole coefficients
    std::map<std::string, std::pair<int64_t, AtomP>> merged;
    for (auto& t : terms) {
      auto it = merged.find(t.second->key);
      if (it == merged.end()) merged[t.second->key] = t;
      else it->second.first += t.first;
    }
    terms.clear();
    for (auto& [k, t] : merged)
      if (t.first != 0) terms.push_back(t);
    if (recombine(&constant, &terms)) return make(constant, std::move(terms));
  }
  std::sort(terms.begin(), terms.end(), [](const auto& a, const auto& b) { return a.second->key < b.second->key; });
  auto r = std::make_shared<Index>();
  r->constant = constant;
  for (auto& t : terms) {
    if (!r->terms.empty() && r->terms.back().second->key == t.second->key) r->terms.back().first += t.first;
    else r->terms.push_back(t);
  }
  r->terms.erase(std::remove_if(r->terms.begin(), r->terms.end(), [](const auto& t) { return t.first == 0; }),
                 r->terms.end());
  r->lo = r->hi = constant;
  std::string key;
  for (const auto& [c, a] : r->terms) {
    int64_t alo = 0, ahi = 0;
    atom_bounds(*a, &alo, &ahi);
    r->lo += c > 0 ? c * alo : c * ahi;
    r->hi += c > 0 ? c * ahi : c * alo;
    if (!key.empty()) key += " + ";
    key += c == 1 ? a->key : std::to_string(c) + "*" + a->key;
  }
  if (key.empty()) key = std::to_string(constant);
  else if (constant != 0) key += " + " + std::to_string(constant);
  r->key = key;
  return r;
}

AtomP make_atom(IndexAtom a) {
  a.key = atom_key(a);
  return std::make_shared<IndexAtom>(std::move(a));
}

IndexP from_atom(AtomP a) { return make(0, {{1, std::move(a)}}); }

// Splits e into (q, rem) with e == d*q + rem, moving every term whose
// coefficient is a multiple of d (and the multiple-of-d part of the
// constant) into q.
void split(const IndexP& e, int64_t d, IndexP* q, IndexP* rem) {
  std::vector<std::pair<int64_t, AtomP>> qt, rt;
  for (const auto& t : e->terms) {
    if (t.first % d == 0) qt.push_back({t.first / d, t.second});
    else rt.push_back(t);
  }
  int64_t qc = floordiv(e->constant, d);
  *q = make(qc, qt);
  *rem = make(e->constant - qc * d, rt);
}

int64_t gcd(int64_t a, int64_t b) {
  a = a < 0 ? -a : a;
  b = b < 0 ? -b : b;
  while (b) { int64_t t = a % b; a = b; b = t; }
  return a;
}

// Finds g dividing d such that e == g*big + small with 0 <= small < g, taking
// the terms with the largest coefficients into `big`. Then
// e / d == big / (d/g) and e % d == (big % (d/g))*g + small.
bool split_gcd(const IndexP& e, int64_t d, int64_t* g_out, IndexP* big, IndexP* small) {
  auto terms = e->terms;
  std::sort(terms.begin(), terms.end(), [](const auto& a, const auto& b) {
    return std::abs(a.first) > std::abs(b.first);
  });
  int64_t g = 0;
  for (size_t k = 1; k <= terms.size(); ++k) {
    g = gcd(g, terms[k - 1].first);
    if (g <= 1 || d % g != 0) continue;
    std::vector<std::pair<int64_t, AtomP>> bt(terms.begin(), terms.begin() + static_cast<long>(k));
    std::vector<std::pair<int64_t, AtomP>> st(terms.begin() + static_cast<long>(k), terms.end());
    int64_t bc = e->constant >= 0 ? e->constant / g : 0;
    IndexP s = make(e->constant - bc * g, st);
    if (s->lo < 0 || s->hi >= g) continue;
    for (auto& t : bt) t.first /= g;
    *big = make(bc, bt);
    if ((*big)->lo < 0) continue;
    *small = s;
    *g_out = g;
    return true;
  }
  return false;
}

}  // namespace

IndexP ix_const(int64_t c) { return make(c, {}); }

IndexP ix_atom(const AtomP& a) { return from_atom(a); }

IndexP ix_var(const std::string& name, int64_t range) {
  if (range <= 1) return ix_const(0);
  IndexAtom a;
  a.kind = IndexAtom::Var;
  a.var = name;
  a.range = range;
  return from_atom(make_atom(a));
}

IndexP ix_add(const IndexP& a, const IndexP& b) {
  auto t = a->terms;
  t.insert(t.end(), b->terms.begin(), b->terms.end());
  return make(a->constant + b->constant, t);
}

IndexP ix_mul(const IndexP& a, int64_t c) {
  auto t = a->terms;
  for (auto& x : t) x.first *= c;
  return make(a->constant * c, t);
}

IndexP ix_div(const IndexP& a, int64_t d) {
  FG_CHECK(d > 0, "index division by a non-positive number");
  if (d == 1) return a;
  if (a->lo >= 0 && a->hi < d) return ix_const(0);
  IndexP q, rem;
  split(a, d, &q, &rem);
  if (rem->lo >= 0 && rem->hi < d) return q;
  int64_t g;
  IndexP big, small;
  if (split_gcd(a, d, &g, &big, &small)) return ix_div(big, d / g);
  // (x / a) / b == x / (a*b) for non-negative x
  if (a->terms.size() == 1 && a->constant == 0 && a->terms[0].first == 1 &&
      a->terms[0].second->kind == IndexAtom::Div && a->lo >= 0)
    return ix_div(a->terms[0].second->arg, a->terms[0].second->d * d);
  IndexAtom at;
  at.kind = IndexAtom::Div;
  at.arg = a;
  at.d = d;
  return from_atom(make_atom(at));
}

IndexP ix_mod(const IndexP& a, int64_t d) {
  FG_CHECK(d > 0, "index modulo by a non-positive number");
  if (d == 1) return ix_const(0);
  if (a->lo >= 0 && a->hi < d) return a;
  IndexP q, rem;
  split(a, d, &q, &rem);
  if (rem->lo >= 0 && rem->hi < d) return rem;
  int64_t g;
  IndexP big, small;
  if (split_gcd(a, d, &g, &big, &small)) return ix_add(ix_mul(ix_mod(big, d / g), g), small);
  IndexAtom at;
  at.kind = IndexAtom::Mod;
  at.arg = rem->lo >= 0 ? rem : a;
  at.d = d;
  return from_atom(make_atom(at));
}

IndexP ix_clamp(const IndexP& a, int64_t lo, int64_t hi) {
  if (a->lo >= lo && a->hi <= hi) return a;
  if (a->hi <= lo) return ix_const(lo);
  if (a->lo >= hi) return ix_const(hi);
  IndexAtom at;
  at.kind = IndexAtom::Clamp;
  at.arg = a;
  at.d = lo;
  at.hi = hi;
  return from_atom(make_atom(at));
}

IndexP ix_subst(const IndexP& a, const std::map<std::string, IndexP>& m) {
  IndexP r = ix_const(a->constant);
  for (const auto& [c, at] : a->terms) {
    IndexP v;
    switch (at->kind) {
      case IndexAtom::Var: {
        auto it = m.find(at->var);
        v = it == m.end() ? from_atom(at) : it->second;
        break;
      }
      case IndexAtom::Div: v = ix_div(ix_subst(at->arg, m), at->d); break;
      case IndexAtom::Mod: v = ix_mod(ix_subst(at->arg, m), at->d); break;
      case IndexAtom::Clamp: v = ix_clamp(ix_subst(at->arg, m), at->d, at->hi); break;
    }
    r = ix_add(r, ix_mul(v, c));
  }
  return r;
}

void ix_vars(const IndexP& a, std::map<std::string, int64_t>* out) {
  for (const auto& t : a->terms) {
    if (t.second->kind == IndexAtom::Var) (*out)[t.second->var] = t.second->range;
    else ix_vars(t.second->arg, out);
  }
}

std::vector<IndexP> ix_unflatten(const IndexP& flat, const std::vector<int64_t>& shape) {
  std::vector<IndexP> c(shape.size());
  int64_t stride = 1;
  for (int k = static_cast<int>(shape.size()) - 1; k >= 0; --k) {
    c[k] = shape[k] == 1 ? ix_const(0) : ix_mod(ix_div(flat, stride), shape[k]);
    stride *= shape[k];
  }
  return c;
}

IndexP ix_linear(const std::vector<IndexP>& coords, const std::vector<int64_t>& strides, int64_t offset) {
  FG_CHECK(coords.size() == strides.size(), "rank mismatch in an index");
  IndexP r = ix_const(offset);
  for (size_t k = 0; k < coords.size(); ++k) r = ix_add(r, ix_mul(coords[k], strides[k]));
  return r;
}

std::vector<IndexP> ix_coords(const std::string& prefix, const std::vector<int64_t>& shape) {
  std::vector<IndexP> c;
  for (size_t k = 0; k < shape.size(); ++k) c.push_back(ix_var(prefix + std::to_string(k), shape[k]));
  return c;
}

}  // namespace fg
