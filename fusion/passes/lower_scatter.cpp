// lower, indirect stores: scatter, scatter_add and index_add become a copy
// of self (a pointwise node, fused as any other) and one node that walks
// src, storing each element where the index says along its dim. What
// computes src and the index is inlined into that node, as Inductor's
// scatter lowering inlines its source; the store is a mutation of the copy,
// so a reader of the result waits for it.
//
// Inductor stores with atomic adds where it can and falls back to ATen
// under deterministic algorithms. A gate compares bits, so here each row
// along the dim runs in order on one thread (a scan's serial rows): the sums
// land in the order torch's CPU kernel adds them, the same on every run, on
// either backend.
#include "fusion/errors.h"
#include "fusion/passes/lowerer.h"

namespace fg::lowering {

Value Lowerer::lower_scatter(const Node& n) {
  const Value& self = in(n, 0);
  const Value& index = in(n, 1);
  const Value& src = in(n, 2);
  const int64_t d = norm_dim(attr_int(n.attrs, "dim", n.op), n.type.shape.size(), n.op);
  // the copy of self the stores go into: always a buffer of its own (self
  // may be an input, or read by others)
  Value base = realize(self);
  SchedNode sn;
  sn.kind = SNKind::Reduction;
  sn.reduce_op = n.op;
  sn.mutation = true;
  sn.shape = src.type.shape;
  sn.reduce_dims = {d};
  const Coords c = ix_coords("i", src.type.shape);
  sn.body = ex_cast((*src.load)(c), n.type.dtype);
  // index_add's index is 1-D, read at the position along dim
  sn.scatter_at = ex_cast((*index.load)(n.op == Op::IndexAdd ? Coords{c[static_cast<size_t>(d)]} : c), DType::I64);
  sn.store = base.layout;
  sn.out_buffer = base.buffer;
  sn.writes = {base.buffer};
  std::set<std::string> origins = src.origins;
  merge(origins, index.origins);
  origins.insert(origin_of(n));
  sn.origins.assign(origins.begin(), origins.end());
  SourceLines lines = src.lines;
  merge(lines, index.lines);
  merge(lines, line_of(n));
  sn.lines = lines.flat();
  sn.name = "sca" + std::to_string(out_.nodes.size());
  add_node(std::move(sn));
  Value v = from_storage(base.buffer, base.layout, n.type.dtype);
  return v;
}

}  // namespace fg::lowering
