#include "fusion/passes/loop_order.h"

#include <algorithm>
#include <set>
#include <string>
#include <utility>

#include "fusion/codegen/expr.h"

namespace fg {

int64_t LoopDep::numel() const {
  int64_t n = 1;
  for (int64_t s : sizes) n *= s;
  return n;
}

namespace {

// The node's dims in the order its loops run (size-1 dims included).
std::vector<int> dims_in_loop_order(const SchedNode& n) {
  std::vector<int> dims;
  if (n.is_reduction()) {
    for (size_t d = 0; d < n.shape.size(); ++d)
      if (std::find(n.reduce_dims.begin(), n.reduce_dims.end(), static_cast<int64_t>(d)) == n.reduce_dims.end())
        dims.push_back(static_cast<int>(d));
    for (int64_t d : n.reduce_dims) dims.push_back(static_cast<int>(d));
  } else if (!n.loop_order.empty()) {
    dims = n.loop_order;
  } else {
    for (size_t d = 0; d < n.shape.size(); ++d) dims.push_back(static_cast<int>(d));
  }
  return dims;
}

// Adds c * (the index) to the dep's coefficients; false where it is not linear.
bool add_terms(const IndexP& index, int64_t c, std::map<std::string, int64_t>* coef, int64_t* offset) {
  *offset += c * index->constant;
  for (const auto& [k, atom] : index->terms) {
    if (atom->kind == IndexAtom::Var) (*coef)[atom->var] += c * k;
    else if (atom->kind == IndexAtom::Clamp) {
      if (!add_terms(atom->arg, c * k, coef, offset)) return false;
    } else {
      return false;
    }
  }
  return true;
}

LoopDep dep_of(const IndexP& index, const std::vector<std::pair<std::string, int64_t>>& loops) {
  LoopDep dep;
  std::map<std::string, int64_t> coef;
  dep.linear = add_terms(index, 1, &coef, &dep.offset);
  std::set<std::string> loop_names;
  for (const auto& [name, size] : loops) {
    loop_names.insert(name);
    auto it = coef.find(name);
    dep.strides.push_back(it == coef.end() ? 0 : it->second);
    dep.sizes.push_back(size);
  }
  for (const auto& [name, c] : coef)
    if (!loop_names.count(name) && c != 0) dep.indirect_coefs.push_back(c);
  std::sort(dep.indirect_coefs.begin(), dep.indirect_coefs.end());
  // loops after the last one the access uses are not part of it
  while (!dep.strides.empty() && dep.strides.back() == 0) {
    dep.strides.pop_back();
    dep.sizes.pop_back();
  }
  return dep;
}

}  // namespace

std::map<int, std::vector<LoopDep>> loop_deps(const SchedNode& n) {
  std::map<int, std::vector<LoopDep>> out;
  if (n.kind != SNKind::Pointwise && n.kind != SNKind::Reduction) return out;
  if (n.is_scatter()) return out;
  std::vector<IndexP> coords(n.shape.size(), ix_const(0));
  std::vector<std::pair<std::string, int64_t>> loops;
  for (int d : dims_in_loop_order(n)) {
    const int64_t size = n.shape[static_cast<size_t>(d)];
    if (size <= 1) continue;
    std::string name = "l" + std::to_string(loops.size());
    coords[static_cast<size_t>(d)] = ix_var(name, size);
    loops.push_back({name, size});
  }
  std::map<std::string, IndexP> m;
  for (size_t k = 0; k < coords.size(); ++k) m["i" + std::to_string(k)] = coords[k];
  std::map<std::string, std::pair<int, IndexP>> loads;
  ex_loads(ex_subst(n.body, m), &loads);
  for (const auto& [key, l] : loads)
    if (l.first != n.out_buffer) out[l.first].push_back(dep_of(l.second, loops));
  IndexP store;
  if (n.is_reduction() && !n.keeps_shape()) {
    std::vector<IndexP> kept;
    for (size_t d = 0; d < n.shape.size(); ++d)
      if (std::find(n.reduce_dims.begin(), n.reduce_dims.end(), static_cast<int64_t>(d)) == n.reduce_dims.end())
        kept.push_back(coords[d]);
    const IndexP flat = ix_linear(kept, contiguous_strides(n.out_shape()));
    store = ix_linear(ix_unflatten(flat, n.store.sizes), n.store.strides, n.store.offset);
  } else {
    store = ix_linear(coords, n.store.strides, n.store.offset);
  }
  out[n.out_buffer] = {dep_of(store, loops)};
  return out;
}

std::optional<std::vector<OwnDep>> own_loop_deps(const SchedNode& n) {
  if (n.kind != SNKind::Pointwise && n.kind != SNKind::Reduction) return std::nullopt;
  if (n.is_scatter()) return std::nullopt;
  std::vector<OwnDep> out;
  for (auto& [buf, list] : loop_deps(n))
    for (LoopDep& d : list) {
      if (!d.linear) return std::nullopt;
      out.push_back({buf, std::move(d)});
    }
  return out;
}

namespace {

std::vector<std::pair<int64_t, int64_t>> by_stride_merged(const LoopDep& d) {
  std::vector<std::pair<int64_t, int64_t>> loops;  // (stride, size)
  for (size_t k = 0; k < d.strides.size(); ++k) loops.push_back({d.strides[k], d.sizes[k]});
  std::stable_sort(loops.begin(), loops.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::pair<int64_t, int64_t>> merged;
  for (const auto& l : loops) {
    if (!merged.empty() && merged.back().first == l.first * l.second) {
      merged.back() = {l.first, merged.back().second * l.second};
      continue;
    }
    merged.push_back(l);
  }
  return merged;
}

}  // namespace

bool same_up_to_loop_order(const LoopDep& a, const LoopDep& b) {
  if (!a.linear || !b.linear || a.offset != b.offset || a.indirect_coefs != b.indirect_coefs) return false;
  return by_stride_merged(a) == by_stride_merged(b);
}

std::optional<std::vector<int>> loop_order_to_match(const SchedNode& n, const LoopDep& self, const LoopDep& other) {
  if (n.kind != SNKind::Pointwise || !self.linear || !other.linear) return std::nullopt;
  std::vector<int> unit, loops;
  for (int d : dims_in_loop_order(n)) (n.shape[static_cast<size_t>(d)] > 1 ? loops : unit).push_back(d);
  if (loops.size() != self.strides.size() || self.strides.size() != other.strides.size()) return std::nullopt;
  for (const LoopDep* d : {&self, &other}) {
    // every loop a symbol of the index, as Inductor counts them (an indirect
    // variable counts as one)
    int used = static_cast<int>(d->indirect_coefs.size());
    for (size_t k = 0; k < d->strides.size(); ++k) {
      if (d->sizes[k] <= 1) return std::nullopt;
      used += d->strides[k] != 0;
    }
    if (used != static_cast<int>(d->strides.size())) return std::nullopt;
  }
  std::set<int64_t> ss(self.strides.begin(), self.strides.end()), os(other.strides.begin(), other.strides.end());
  if (ss.size() != self.strides.size() || os.size() != other.strides.size() || ss != os) return std::nullopt;
  std::vector<int> order = unit;
  for (int64_t s : other.strides) {
    const size_t k = static_cast<size_t>(std::find(self.strides.begin(), self.strides.end(), s) - self.strides.begin());
    order.push_back(loops[k]);
  }
  return order;
}

namespace {

// A group's deps on each buffer: its writes where it writes the buffer,
// else the reads of it, of buffers the group does not write.
std::map<int, std::vector<LoopDep>> group_deps(const LoweredGraph& g, const std::vector<int>& nodes) {
  std::set<int> written;
  for (int n : nodes) written.insert(g.nodes[static_cast<size_t>(n)].out_buffer);
  std::map<int, std::vector<LoopDep>> out;
  for (int n : nodes) {
    const SchedNode& sn = g.nodes[static_cast<size_t>(n)];
    for (auto& [b, deps] : loop_deps(sn)) {
      if (b == sn.out_buffer) out[b] = deps;
      else if (!written.count(b)) out[b].insert(out[b].end(), deps.begin(), deps.end());
    }
  }
  return out;
}

}  // namespace

std::optional<std::vector<int>> loop_order_to_meet(const LoweredGraph& g, const std::vector<int>& self,
                                                   const std::vector<int>& other) {
  const SchedNode& first = g.nodes[static_cast<size_t>(self.front())];
  for (int n : self) {
    const SchedNode& sn = g.nodes[static_cast<size_t>(n)];
    if (sn.kind != SNKind::Pointwise || sn.shape != first.shape || sn.loop_order != first.loop_order)
      return std::nullopt;
  }
  const auto mine = group_deps(g, self), theirs = group_deps(g, other);
  // a node reading through a reshape of what is not contiguous (a division
  // in its index) copies at the shape before the reshape in Inductor, which
  // then views it: its loops are not the ones its output shape gives here
  for (const auto& [b, deps] : mine)
    for (const LoopDep& d : deps)
      if (!d.linear) return std::nullopt;
  const LoopDep* best_self = nullptr;
  const LoopDep* best_other = nullptr;
  for (const auto& [b, deps] : mine) {
    auto it = theirs.find(b);
    if (it == theirs.end()) continue;
    for (const LoopDep& d : deps)
      for (const LoopDep& o : it->second)
        if (same_up_to_loop_order(d, o) && (!best_self || d.numel() > best_self->numel())) {
          best_self = &d;
          best_other = &o;
        }
  }
  if (!best_self || best_self->strides.size() != best_other->strides.size()) return std::nullopt;
  return loop_order_to_match(first, *best_self, *best_other);
}

}  // namespace fg
