// Code printers: one C-style base that turns fused groups into kernel
// functions, and dialects that override the op->text table, the types and
// the loop headers (STYLE 12): the host C++ dialect (codegen/cpp_printer.h)
// and the CUDA one (codegen/cuda_printer.h). The kernel bodies are written
// by codegen/kernel_emitter.h through this table.
#pragma once
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fusion/codegen/kernel.h"

namespace fg {

class CStylePrinter {
 public:
  explicit CStylePrinter(const LoweredGraph& g) : g_(g) {}
  virtual ~CStylePrinter() = default;
  KernelProgram print(const Schedule& s);

 protected:
  virtual std::string backend() const = 0;
  virtual std::string prelude() const = 0;
  virtual std::string signature(const std::string& name) const = 0;
  // The kernel being printed runs over (numel, rnumel): what signature() may
  // need (CUDA: its block size).
  int64_t sig_numel_ = 0, sig_rnumel_ = 1;
  // 32-bit registers a thread its rows hold in registers (-1: none held;
  // KernelEmitter::row_words)
  int64_t sig_row_words_ = -1;

 public:
  // The dialect's table, used by the emitter that prints kernel bodies.
  // `reduction`: the kernel reduces, so x is one row per block of threads
  // on a GPU, and values of the row are combined across threads.
  virtual std::string outer_loop(int64_t numel, bool reduction) const = 0;
  virtual std::string inner_loop(int64_t rnumel) const = 0;
  // Combines a per-thread partial result across the threads of a row
  // (empty where one thread does a whole row).
  virtual std::string combine_partials(const std::string& acc, Op reduce_op) const { return ""; }
  // Guards a store of a per-row value that every thread of the row holds.
  virtual std::string row_store_guard() const { return ""; }
  // Between loops over r that may read what an earlier loop stored.
  virtual std::string loop_barrier() const { return ""; }
  // Elements of a row each thread keeps in registers across the loops over
  // r (0: none; loops then stride over r and reload).
  virtual int64_t row_registers(int64_t rnumel) const { return 0; }
  // The type a reduction accumulates in: the compute type (float for every
  // floating dtype but f64), int64_t for integers.
  virtual std::string accumulator_type(DType t, Op reduce_op) const {
    (void)reduce_op;
    return t == DType::F64 ? "double" : (is_floating(t) ? "float" : "int64_t");
  }
  // Elements of a chunk: where a dialect gives each thread chunks of
  // consecutive elements (of r in a row kernel, of x in a pointwise one),
  // loads and stores that are contiguous and 16-byte aligned over a chunk
  // move as one wide access.
  static constexpr int64_t kChunkLanes = 8;
  // Whether a kernel over (numel, rnumel) runs in chunks (never for a
  // kernel past FUSEGATE_BISECT=codegen_variants:K).
  bool chunked(int64_t numel, int64_t rnumel) const { return chunks_allowed_ && can_chunk(numel, rnumel); }
  // Whether the dialect can run a kernel over (numel, rnumel) in chunks.
  virtual bool can_chunk(int64_t numel, int64_t rnumel) const { return false; }
  // Whether the dialect marks a pointwise kernel's loop over `numel`
  // elements for vectorization (`omp simd`: the host's; the same values,
  // element by element, as the plain loop).
  virtual bool can_vectorize(int64_t numel) const { return false; }
  // FUSEGATE_FAULT=broken_codegen:VARIANT: the kernel being printed is a
  // variant whose stores write 1.5x their value (a miscompile `bisect` must
  // name at the codegen stage).
  bool broken_variant() const { return broken_variant_; }
  // The loop over this thread's chunks, and the lines that open it (they
  // define q, the chunk's index, and skip chunks past the end).
  virtual std::string chunk_loop(int64_t numel, int64_t rnumel) const { return ""; }
  virtual std::string chunk_prologue(int64_t numel, int64_t rnumel) const { return ""; }
  // The loop over the lanes (v) of a chunk, and the line defining the
  // kernel variable (x or r) and j, the lane's register slot.
  virtual std::string lane_loop() const { return ""; }
  virtual std::string lane_prologue(int64_t numel, int64_t rnumel) const { return ""; }
  // Declaration of a chunk `name` of storage type `st` loaded from
  // `ptr_at` (a pointer to the chunk's first element); a load into a
  // declared chunk (element v reads as `name[v]`). A chunk of computed
  // values for stores (`name.s[v] = value`), and its store to a buffer of
  // dtype `t`, converting as a scalar store would.
  virtual std::string chunk_load(const std::string& st, const std::string& name, const std::string& ptr_at) const {
    return "";
  }
  virtual std::string chunk_assign(const std::string& name, const std::string& ptr_at) const { return ""; }
  virtual std::string chunk_decl(const std::string& st, const std::string& name) const { return ""; }
  virtual std::string out_chunk_decl(const std::string& name) const { return ""; }
  virtual std::string chunk_store(DType t, const std::string& name, const std::string& ptr_at) const { return ""; }
  // Lines opening each loop over r (after its header).
  virtual std::string inner_loop_prologue(int64_t rnumel) const { return ""; }
  // Expression for argument i of the kernel.
  virtual std::string arg_ref(size_t i) const { return "args[" + std::to_string(i) + "]"; }
  // Text of an op on already-printed operands of compute type `t`.
  virtual std::string op_text(Op op, DType t, const std::vector<std::string>& a, const Attrs& attrs) const;
  virtual std::string compute_type(DType t) const;
  virtual std::string storage_type(DType t) const;
  virtual std::string load_text(DType t, const std::string& ptr, const std::string& idx) const;
  virtual std::string store_text(DType t, const std::string& ptr, const std::string& idx, const std::string& v) const;
  std::string const_text(double v, DType t) const;

 protected:
  // A group holding a GEMM template; a dialect without templates (the base)
  // never gets one from the scheduler, so reaching it is a compiler bug.
  virtual Kernel print_template(const FusedGroup& gr, int index, std::set<int>* removed);
  // Which values of `nodes` leave the kernel (must be stored).
  std::map<int, bool> needs_store(const std::vector<int>& nodes) const;

  // The kernel being printed holds a scan: each row runs in order, every
  // thread of a row's block walking the whole row (the same values, stored
  // alike), with no partials to combine and no chunks.
  bool serial_rows_ = false;

  // The C type of the kernel variables (x, r, q) and so of the index
  // arithmetic: int where every index of the kernel being printed fits in
  // 32 bits, as Inductor narrows its index dtype (32-bit division and
  // remainder by a constant are far cheaper on a GPU); int64_t otherwise.
  // A dialect that narrows calls it; the host printer keeps int64_t.
  std::string index_type() const { return narrow_index_ ? "int" : "int64_t"; }

  const LoweredGraph& g_;
  std::vector<std::vector<int>> readers_;  // buffer -> scheduler nodes reading it

 private:
  bool chunks_allowed_ = true;
  bool broken_variant_ = false;
  bool narrow_index_ = false;
  int64_t variants_ = 0;  // kernels of this graph that could run as a variant, for FUSEGATE_BISECT
  Kernel print_group(const FusedGroup& gr, int index, std::set<int>* removed);
};

// The generated kernels' row sort (a sort node, SchedNode::is_sort), with
// the qualifier of a function of the backend's prelude ("static inline",
// "__device__"): fg_sort_row(v, ix, descending) sorts the row v of N values
// in place, stable, NaN the largest, each element's position in ix moved
// with it.
std::string sort_row_helper(const std::string& qualifier);

}  // namespace fg
