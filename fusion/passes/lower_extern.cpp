// lower, library calls: GEMMs (generated templates, or extern calls with
// their operands in a layout the call can read), other externs,
// collectives, and copies into a graph input.
#include <map>

#include "fusion/errors.h"
#include "fusion/fastpaths/catalog.h"
#include "fusion/passes/lowerer.h"

namespace fg::lowering {

Value Lowerer::lower_gemm_template(const Node& n) {
  Value& a = values_[static_cast<size_t>(n.inputs[0])];
  if (!a.storage()) a = realize(a);
  const Value& w = in(n, 1);
  SchedNode sn;
  sn.kind = SNKind::Template;
  sn.op = n;
  const Shape& xs = a.type.shape;
  sn.gemm_k = xs.back();
  sn.gemm_n = w.type.shape[0];
  sn.gemm_m = numel(xs) / sn.gemm_k;
  IndexP m = ix_var("x", sn.gemm_m), k = ix_var("r", sn.gemm_k), nn = ix_var("n", sn.gemm_n);
  Coords ac = ix_unflatten(m, Shape(xs.begin(), xs.end() - 1));
  ac.push_back(k);
  sn.gemm_a = (*a.load)(ac);
  sn.a_buffer = a.buffer;
  sn.gemm_b = (*w.load)({nn, k});
  if (n.inputs.size() == 3) sn.gemm_bias = (*in(n, 2).load)({nn});
  for (int b : ex_buffers(sn.gemm_b)) sn.reads.insert(b);
  if (sn.gemm_bias)
    for (int b : ex_buffers(sn.gemm_bias)) sn.reads.insert(b);
  sn.reads.insert(a.buffer);
  sn.shape = n.type.shape;
  Layout l = Layout::contiguous(n.type.shape);
  int b = new_buffer("", n.type.dtype, l);
  sn.out_buffer = b;
  sn.store = l;
  sn.writes = {b};
  sn.origins = {n.inputs.size() == 3 ? "addmm" : "mm"};
  for (const auto& l2 : line_of(n)) sn.lines.push_back(l2);
  add_node(std::move(sn));
  return from_storage(b, l, n.type.dtype);
}

Value Lowerer::lower_extern(const Node& n) {
  // a linear that carries its own epilogue stays the library call that applies it
  if (opts_.gemm_templates && n.op == Op::Linear && attr_str_or(n.attrs, "epilogue", "").empty()) {
    const Shape& xs = in(n, 0).type.shape;
    const int64_t k = xs.back();
    if (!opts_.template_gemms || opts_.template_gemms->count(gemm_shape_key(
                                         n.type.dtype, numel(xs) / k, in(n, 1).type.shape[0], k, n.inputs.size() == 3)))
      return lower_gemm_template(n);
  }
  SchedNode sn;
  sn.kind = SNKind::Extern;
  sn.op = n;
  // a fast path whose kernel takes plain row-major pointers (all but those
  // that read their inputs through strides: FastPathSpec::strided_inputs)
  const FastPathSpec* fast = n.op == Op::FastPath ? find_fast_path(attr_str_or(n.attrs, "name", "")) : nullptr;
  const bool row_major_only = fast && !fast->strided_inputs;
  for (size_t k = 0; k < n.inputs.size(); ++k) {
    // realized once: every later reader of this value shares the buffer
    Value& v = values_[static_cast<size_t>(n.inputs[k])];
    if (!v.storage()) v = realize_for_extern(v);
    // a strided view (a transpose, attention's [B,S,H,D] memory, an input in
    // another dim order) is copied row-major for this reader alone, a kernel
    // of its own, counted as any other
    const Value arg = row_major_only && !v.layout.row_major() ? realize(v) : gemm_operand(n, k, v);
    sn.args.push_back({arg.buffer, arg.layout});
  }
  Layout l = Layout::contiguous(n.type.shape);
  if (n.op == Op::Sdpa) {
    // attention writes [B,S,H,D] memory and returns the [B,H,S,D] view, so
    // the usual transpose-and-merge-heads after it is a free view
    const Shape& s = n.type.shape;
    l.strides = {s[2] * s[1] * s[3], s[3], s[1] * s[3], 1};
  }
  int b = new_buffer("", n.type.dtype, l);
  sn.out_buffer = b;
  sn.writes = {b};
  sn.origins = {origin_of(n)};
  for (const auto& l2 : line_of(n)) sn.lines.push_back(l2);
  add_node(std::move(sn));
  return from_storage(b, l, n.type.dtype);
}

Value Lowerer::gemm_operand(const Node& n, size_t k, const Value& v) {
  if (!opts_.pad_strides || !v.storage() || (n.op != Op::Linear && n.op != Op::Matmul)) return v;
  const Shape& s = v.type.shape;
  // Inductor's GEMMs read a [..., K] linear input as [M, K] and a batched
  // operand of more than 3 dims as [B, M, K] (a view; a clone where the
  // strides cannot say it, as a padded stride between merged dims)
  Shape as;
  if (n.op == Op::Linear && k == 0 && s.size() > 2) as = {numel(s) / s.back(), s.back()};
  if (n.op == Op::Matmul && s.size() > 3) {
    const int64_t b = numel(s) / (s[s.size() - 2] * s.back());
    // its own batch, no broadcast: the batch dims it has are the output's
    if (Shape(s.begin(), s.end() - 2) == Shape(n.type.shape.begin(), n.type.shape.end() - 2))
      as = {b, s[s.size() - 2], s.back()};
  }
  if (as.empty() || view_reshape(v.layout, as)) return v;
  // A value row-major to ATen but padded here is read through that view (a
  // copy where the padding breaks it). One in another order (a permuted
  // input) that does not fold into [M, K] goes to ATen's batched matmul:
  // [B, M, K] over its batch dims merged, a copy only where they do not
  // merge (seed 527: [31, 2, 3, 128] strides (3, 93, 1, 186)); with one
  // batch dim it is read as it is (seed 92), no copy in Inductor either
  const Layout padded = flexible_layout(s, v.type.dtype);
  const bool aten_row_major = !padded.strides.empty() && padded.strides == v.layout.strides;
  if (!aten_row_major && n.op == Op::Linear) {
    const int64_t rows = s[s.size() - 2], cols = s.back();
    as = {numel(s) / (rows * cols), rows, cols};
    if (view_reshape(v.layout, as)) return v;
  } else if (!aten_row_major) {
    return v;
  }
  // the copy runs over the view's elements, as Inductor's copy_input does
  // (so it does not fuse with the kernel that stored the padded value: its
  // reads are not that kernel's writes at the same index), into a
  // row-major buffer the GEMM reads in v's own shape
  const Layout own = Layout::contiguous(s);
  const int b = new_buffer("", v.type.dtype, own);
  const Coords c = ix_coords("i", as);
  return store_copy(v, b, as, (*v.load)(ix_unflatten(ix_linear(c, contiguous_strides(as)), s)), Layout::contiguous(as),
                    own);
}

Value Lowerer::lower_collective(const Node& n) {
  Value v = in(n, 0);
  const Node& src = g_.node(n.inputs[0]);
  bool own = v.storage() && out_.buffers[static_cast<size_t>(v.buffer)].input_index < 0 && v.layout.is_contiguous() &&
             out_.buffers[static_cast<size_t>(v.buffer)].layout == v.layout && uses(src.id) == 1;
  SchedNode sn;
  sn.kind = SNKind::Collective;
  sn.op = n;
  if (n.op == Op::AllReduce) {
    // in place on a buffer nobody else reads; otherwise on a fresh copy
    // (the copy is a pointwise node the scheduler fuses with its producer)
    if (!own) v = realize(v);
    sn.args = {{v.buffer, v.layout}};
    sn.out_buffer = v.buffer;
    sn.writes = {v.buffer};
    sn.name = "op" + std::to_string(out_.nodes.size());
  } else {
    if (!v.storage() || !v.layout.is_contiguous()) v = realize(v);
    sn.args = {{v.buffer, v.layout}};
    sn.out_buffer = new_buffer("", n.type.dtype, Layout::contiguous(n.type.shape));
    sn.writes = {sn.out_buffer};
  }
  sn.origins = {origin_of(n)};
  for (const auto& l2 : line_of(n)) sn.lines.push_back(l2);
  int b = sn.out_buffer;
  add_node(std::move(sn));
  return from_storage(b, Layout::contiguous(n.type.shape), n.type.dtype);
}

Value Lowerer::lower_copy_into(const Node& n) {
  const Value& dst = in(n, 0);
  Value src = in(n, 1);
  FG_CHECK(dst.storage() && out_.buffers[static_cast<size_t>(dst.buffer)].input_index >= 0,
           "copy_ must write a graph input");
  {
    // a source that reads the destination anywhere but where the copy
    // writes (a[:] = flip(a)) must be whole before the copy starts: its own
    // node (Inductor keeps them apart unless every read is the write's index)
    const Coords c = ix_coords("i", n.type.shape);
    const IndexP at = ix_linear(c, dst.layout.strides, dst.layout.offset);
    std::map<std::string, std::pair<int, IndexP>> loads;
    ex_loads((*src.load)(broadcast_coords(c, n.type.shape, src.type.shape)), &loads);
    for (const auto& [k, ld] : loads)
      if (ld.first == dst.buffer && ld.second->key != at->key) {
        src = realize(src);
        break;
      }
  }
  add_store(dst.buffer, dst.layout, n.type.shape,
            ex_cast((*src.load)(broadcast_coords(ix_coords("i", n.type.shape), n.type.shape, src.type.shape)),
                    n.type.dtype),
            src, n, "copy_", "mut");
  return dst;
}

}  // namespace fg::lowering
