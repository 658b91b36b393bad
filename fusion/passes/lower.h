// lower: turns a decomposed graph into scheduler nodes over buffers.
//
// Pointwise results are inlined into each consumer (recomputed) unless
// realized into a buffer. Realized: reductions (always); inputs of extern
// kernels and collectives; graph outputs; what the decomposition marks
// (`@realize`: a layer norm's mean over rows shorter than 8); and, on
// Inductor's figures for a body (distinct loads by buffer and index,
// distinct values, an FX node's distinct users): a value with several
// users and > 4 loads or > 30 values; one with > 8 loads or > 30 values
// and more than one load of varying index; one with > 100 values. A
// reduction unrolled into a pointwise value is held to the same rules.
// Views (reshape, permute, transpose, slice, expand) become
// index arithmetic, or stay strided views of a buffer when they can, so
// they cost no kernel. Reductions with fewer than 8 elements are unrolled
// into pointwise code; with `split` on, a reduction Inductor would split
// becomes two reduction nodes (reduction_splits).
//
// Before: a verified, decomposed graph. After: scheduler nodes in a valid
// execution order, each with its reads, writes and dependencies (including
// write-after-read on buffers that collectives update in place).
#pragma once
#include "fusion/bisect.h"
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fusion/codegen/expr.h"
#include "fusion/ir/graph.h"

namespace fg {

struct Layout {
  Shape sizes;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  static Layout contiguous(const Shape& s) { return {s, contiguous_strides(s), 0}; }
  // dense, with dims laid out in `order` from outermost to innermost
  static Layout in_dim_order(const Shape& s, const std::vector<int64_t>& order);
  bool is_contiguous() const { return offset == 0 && strides == contiguous_strides(sizes); }
  // Dense in row-major order from its offset, as a kernel that takes a plain
  // pointer reads it (dims of one element may have any stride).
  bool row_major() const { return fg::is_contiguous(sizes, strides); }
  bool operator==(const Layout& o) const { return sizes == o.sizes && strides == o.strides && offset == o.offset; }
  std::string str() const;
};

// A view of `sizes` over `base` if it can be expressed with strides.
std::optional<Layout> view_reshape(const Layout& base, const Shape& sizes);

struct BufferInfo {
  int id = -1;
  std::string name;        // "buf3", or the graph input's name
  DType dtype = DType::F32;
  Layout layout;           // layout the buffer is allocated with (inputs: as given)
  int input_index = -1;    // >= 0: the graph input it is
  int64_t storage_numel = 0;
};

enum class SNKind { Pointwise, Reduction, Template, Extern, Collective };
const char* sn_kind_name(SNKind k);

struct SchedNode {
  int id = -1;
  std::string name;        // "buf3" (the buffer it writes) or "op7" for collectives
  SNKind kind = SNKind::Pointwise;
  int out_buffer = -1;
  SourceLoc loc;
  std::vector<std::string> origins;  // sorted ATen names of the graph nodes it covers
  std::vector<std::string> lines;    // sorted repro source locations of those nodes ("repros/x.cpp:42 (forward)")

  // Pointwise: `shape` is the output shape and `body` is over vars i0..ik.
  // Reduction: `shape` is the input shape, `body` is over its full coords
  // i0..ik, `reduce_dims` are reduced, the output is contiguous over the
  // remaining dims.
  Shape shape;
  ExprP body;
  // Pointwise on cuda: the order its loops run in, outermost first (dims of
  // `shape`); empty is row-major. The scheduler's reorder round sets it so
  // that the node reads and writes at the index a node it fuses with uses
  // (Inductor's loop ordering after fusion: passes/schedule.cpp).
  std::vector<int> loop_order;
  Op reduce_op = Op::Sum;
  bool descending = false;  // a sort: largest first
  std::vector<int64_t> reduce_dims;
  Layout store;            // where the result goes in out_buffer
  bool mutation = false;   // stores into a buffer another node wrote: a graph input (copy_), a scatter's copy of self
  // An indirect store (reduce_op scatter, scatter_add or index_add): a
  // reduction over src's coordinates whose one reduced dim is the dim the
  // index points along. `body` is src's element, `scatter_at` (i64, over the
  // same variables) the position along that dim of out_buffer (`store`)
  // where it goes; each row runs in order, so scatter_add's sums and
  // scatter's last write are the same on every run and backend.
  ExprP scatter_at;

  // Extern / collective: the op and its input views.
  Node op;
  std::vector<std::pair<int, Layout>> args;

  // Template (a generated GEMM, max-autotune): out[m, n] = sum_k A[m, k] *
  // B[n, k] (+ bias[n]) with A over vars m in [0, M), k in [0, K) written
  // as x and r, and B and bias over n and k.
  int64_t gemm_m = 0, gemm_n = 0, gemm_k = 0;
  ExprP gemm_a, gemm_b, gemm_bias;
  int a_buffer = -1;

  std::set<int> reads, writes;  // buffer ids
  std::set<int> deps;           // scheduler node ids that must run first

  int64_t numel() const;   // outer iteration size
  int64_t rnumel() const;  // reduction size (1 for pointwise)
  bool is_reduction() const { return kind == SNKind::Reduction; }
  // A scan (cumsum): a reduction whose running value is stored at every
  // element of the reduced dim, so its output has the input's shape.
  bool is_scan() const { return kind == SNKind::Reduction && reduce_op == Op::Cumsum; }
  bool is_scatter() const { return kind == SNKind::Reduction && scatter_at != nullptr; }
  // A sort (reduce_op sort or argsort) of the one reduced dim: each row
  // sorted whole, then stored at every element (values or positions), so
  // its output too has the input's shape; a reader sees it once its loop ends.
  bool is_sort() const { return kind == SNKind::Reduction && (reduce_op == Op::Sort || reduce_op == Op::Argsort); }
  // A reduction stored at every element of the reduced dim: a scan or a sort.
  bool keeps_shape() const { return is_scan() || is_sort(); }
  // Each row in order, by one thread: a scan, a sort or an indirect store.
  bool serial() const { return is_scan() || is_sort() || is_scatter(); }
  // The variable an indirect store binds its position to.
  std::string scatter_var() const { return "ind_s" + std::to_string(id); }
  bool is_template() const { return kind == SNKind::Template; }
  bool fusable() const { return kind == SNKind::Pointwise || kind == SNKind::Reduction || kind == SNKind::Template; }
  Shape out_shape() const;  // reduction output without kept dims
};

struct LoweredGraph {
  std::string name;
  std::vector<BufferInfo> buffers;
  std::vector<SchedNode> nodes;
  std::vector<std::pair<int, Layout>> outputs;
  std::vector<int> input_buffers;  // buffer id of graph input k
  // the ops lowered into generated code, in graph order (the applications
  // of the stage `lowerings`: fusion/bisect.h)
  std::vector<StageApplication> lowerings;
};

// Inductor's split reductions (ir.py, Reduction.num_splits): on a GPU a
// reduction with few outputs over many elements runs as two kernels, the
// first reducing `split` blocks of each output's elements in parallel, the
// second the blocks' results. The numbers are Inductor's; num_sm is the
// device's SM count, fixed here so that a graph compiles alike everywhere
// (explain has no GPU): 132 on the H100 SXM and the H200.
struct SplitReductions {
  bool enabled = false;       // config.split_reductions; Triton (cuda) only
  int64_t num_sm = 132;
  int64_t min_rnumel = 8192;  // inner reductions over this many or fewer never split
  int64_t min_elements_per_thread = 32, max_elements_per_thread = 512, threads_per_sm = 2048;
};
// How many blocks Inductor splits a reduction of `numel` outputs over
// `rnumel` elements into (1: not split); `inner`: its reads walk the reduced
// elements with stride 1 (ReductionHint.INNER), else OUTER.
int64_t reduction_splits(int64_t numel, int64_t rnumel, bool inner, const SplitReductions& c);

struct LowerOptions {
  // Layouts of the graph inputs at run time; missing entries are contiguous.
  std::vector<Layout> input_layouts;
  // Linear layers become generated GEMM templates (max-autotune) instead of
  // extern GEMM calls; once template_gemms is set, only those whose shape
  // (gemm_shape_key) it holds: the shapes a template was measured faster
  // for (cpu max-autotune chooses per shape at run time:
  // kernels/cpu/gemm_choice.h). A shape first seen after the choice runs
  // the library call.
  bool gemm_templates = false;
  std::optional<std::set<std::string>> template_gemms;
  SplitReductions split;
  // cat as Inductor lowers it for Triton: a buffer each piece is stored
  // into where its rules say so (lower_cat.cpp), else one pointwise value
  bool concat_kernels = false;
  // a graph output that is a view of a value no buffer holds yet stores
  // that value and is a strided view of its buffer (Inductor: a view keeps
  // its base's StorageBox, and realize_input of an output realizes the
  // base and returns a ReinterpretView), so a view of another output costs
  // no kernel; else the view is stored on its own, as the cpu backend does
  bool output_views_of_base = false;
  // a graph output is stored as soon as it is lowered, its layout fixed
  // (Inductor's run_node): others read its buffer, a cat copies it
  bool outputs_stored_when_lowered = false;
  // a scan over one element is a copy, a pointwise value (Inductor's
  // Scan.create for the GPU; its cpu backend has no scan and calls ATen's)
  bool scan_of_one_is_pointwise = false;
  // Inductor's comprehensive padding (cuda): a buffer whose layout the
  // compiler chooses (a stored value, a reduction, a cat's buffer; not a
  // graph output, which keeps eager's strides) has each stride over 1024
  // elements that is not a multiple of 128 bytes rounded up to one
  bool pad_strides = false;
};

LoweredGraph lower(const Graph& g, const LowerOptions& opts = {});

// One GEMM shape as the template-or-library choice names it:
// "bf16 m1024 n1536 k512" (+ " bias" for addmm). m is every row of the
// input (the batch dimensions flattened), n the weight's rows.
std::string gemm_shape_key(DType dtype, int64_t m, int64_t n, int64_t k, bool bias);

}  // namespace fg
