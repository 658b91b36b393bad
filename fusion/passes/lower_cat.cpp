// lower, cat on cuda: one pointwise value that selects among its pieces
// (Inductor's pointwise_cat), or a buffer each piece is stored into by a
// node of its own (Inductor's ConcatKernel), chosen by Inductor's rules
// (lowering.py `cat`, torch 2.11):
//  - at most 8 pieces (more: the buffer), and then the pointwise form when
//    every user of the cat is pointwise (views followed; a graph output is
//    not) and some piece would need a copy anyway, or when every piece would
//    and none reads a reduction;
//  - a piece "needs a copy" unless it is a value already stored by a
//    generated kernel (Inductor writes that kernel's result straight into
//    the buffer) whose layout no graph output fixed (a returned value keeps
//    its own buffer); "reads a reduction": a reduction's stored result, or a
//    pointwise value that loads one (a sort's, a scan's or an indirect
//    store's result is none: Inductor's Sort and Scan are not reductions, its
//    Scatter is a pointwise store).
// Where Inductor retargets a stored value into its slice, the piece here is
// a copy from that value's buffer at the same index, which the scheduler
// fuses into the kernel that stores the value: the kernels are Inductor's.
#include "fusion/passes/lowerer.h"

namespace fg::lowering {

namespace {

// ATen ops tagged pointwise; cat and pad count too (Inductor's
// additional_pointwise_ops for cat)
bool pointwise_tagged(Op op) { return aten_pointwise(op) || op == Op::Cat || op == Op::Pad; }

}  // namespace

bool Lowerer::only_pointwise_uses(int id) const {
  if (extra_uses_.count(id)) return false;  // a graph output
  for (int u : users_[static_cast<size_t>(id)]) {
    const Op op = g_.node(u).op;
    if (fusion_kind(op) == FusionKind::View) {
      if (!only_pointwise_uses(u)) return false;
    } else if (!pointwise_tagged(op)) {
      return false;
    }
  }
  return true;
}

bool Lowerer::writer_is(int buffer, SNKind kind) const {
  auto it = last_writer_.find(buffer);
  return it != last_writer_.end() && out_.nodes[static_cast<size_t>(it->second)].kind == kind;
}

bool Lowerer::writer_is_reduction(int buffer) const {
  auto it = last_writer_.find(buffer);
  if (it == last_writer_.end()) return false;
  const SchedNode& w = out_.nodes[static_cast<size_t>(it->second)];
  // Inductor's sort and scan are loops of their own and its scatter a
  // pointwise store, none an ir.Reduction
  return w.kind == SNKind::Reduction && !w.mutation && w.reduce_op != Op::Sort && w.reduce_op != Op::Argsort &&
         w.reduce_op != Op::Cumsum;
}

bool Lowerer::concat_as_kernel(const Node& n) {
  if (!opts_.concat_kernels || n.inputs.size() < 2) return false;
  if (n.inputs.size() > 8) return true;
  bool any_copy = false, all_copy = true, reads_reduction = false;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Value& v = in(n, k);
    bool copy, reduction;
    if (v.storage()) {
      // stored by a generated kernel: written into the buffer, no copy,
      // unless a graph output fixed its layout
      const bool generated = writer_is(v.buffer, SNKind::Pointwise) || writer_is(v.buffer, SNKind::Reduction);
      copy = !generated || fixed_.count(v.buffer) > 0;
      reduction = writer_is_reduction(v.buffer);
    } else {
      copy = true;
      reduction = false;
      for (int b : ex_buffers((*v.load)(ix_coords("i", v.type.shape))))
        reduction = reduction || writer_is_reduction(b);
    }
    any_copy = any_copy || copy;
    all_copy = all_copy && copy;
    reads_reduction = reads_reduction || reduction;
  }
  const bool pointwise_use = any_copy && only_pointwise_uses(n.id);
  const bool horizontal = all_copy && !reads_reduction;
  return !(pointwise_use || horizontal);
}

Value Lowerer::lower_concat(const Node& n) {
  const Shape& out = n.type.shape;
  const DType t = n.type.dtype;
  const size_t d = static_cast<size_t>(norm_dim(attr_int(n.attrs, "dim", n.op), out.size(), n.op));
  // ConcatKernel's buffer: contiguous strides, padded (comprehensive
  // padding), unless the graph returns it
  const Layout whole = chosen_layout(n.id, out, t);
  const int b = new_buffer("", t, whole);
  std::set<std::string> origins;
  SourceLines lines;
  int64_t start = 0;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    const Value& v = in(n, k);
    Layout slice{v.type.shape, whole.strides, start * whole.strides[d]};
    start += v.type.shape[d];
    // one slice of a buffer the other pieces write too
    add_store(b, slice, v.type.shape, ex_cast((*v.load)(ix_coords("i", v.type.shape)), t), v, n, "cat", "cat");
    merge(origins, v.origins);
    merge(lines, v.lines);
  }
  origins.insert("cat");
  merge(lines, SourceLines(line_of(n)));
  return from_storage(b, whole, t, origins, lines);
}

}  // namespace fg::lowering
