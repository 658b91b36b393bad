// KernelEmitter: the body of one generated kernel, written through a
// printer's dialect table (codegen/cstyle_printer.h). The printers use it;
// nothing outside codegen/ does.
#pragma once
#include <functional>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "fusion/codegen/cstyle_printer.h"

namespace fg {

// Emits the nodes of one kernel: values as local variables (common
// subexpressions once per scope), in-kernel reads of a value as that
// variable when it is visible at the same index, stores where anything
// outside needs the value.
class KernelEmitter {
 public:
  KernelEmitter(const CStylePrinter& p, const LoweredGraph& g, Kernel& k,
                std::function<std::string(const ExprP&)> custom_load)
      : p_(p), g_(g), k_(k), custom_load_(std::move(custom_load)) {}

  std::vector<std::string> lines;
  int indent = 1;
  std::map<int, std::string> value;     // node -> variable holding its value, while visible
  std::map<int, int> producer;          // buffer -> node in this kernel
  std::map<int, std::vector<int>> writers;  // buffer -> nodes of this kernel writing it, in order
  // node n of this kernel writes `buffer` (after the nodes already noted)
  void writes(int buffer, int n) {
    producer[buffer] = n;
    writers[buffer].push_back(n);
  }
  std::map<int, IndexP> store_at;       // node -> store index (kernel vars)
  std::map<int, ExprP> scatter_at;      // indirect store -> its position along its dim (kernel vars)
  std::map<int, bool> stored;

  void line(const std::string& s) { lines.push_back(std::string(static_cast<size_t>(indent) * 2, ' ') + s); }
  // A block: `head {` ... `}`, with its own scope of common subexpressions.
  void open(const std::string& head);
  void close() { scopes_.pop_back(); --indent; line("}"); }

  std::string ptr(int b);

  // Loads of kernel inputs that several loops over r read at the same index
  // are kept in per-thread register arrays (row_registers elements) when the
  // dialect keeps rows in registers: the second pass reads no memory.
  std::map<std::string, std::string> row_cache;        // load key -> array
  std::map<std::string, size_t> row_cache_first;       // load key -> phase that fills it
  static constexpr size_t kFilledBefore = static_cast<size_t>(-1);  // filled by a loop of loads alone
  std::set<std::string> row_chunked;                    // cached as chunks (in storage type), not as values
  // A value an earlier loop over r of this kernel computes and stores, read
  // back at the same element by a later loop: its row cache is filled with
  // the value where it is computed (in the compute type, as a load in the
  // same loop gets it), and the later loop reads registers, not memory
  // (node -> the load keys it fills).
  std::map<int, std::vector<std::string>> row_forward;
  // Loads only a later loop reads (a norm's weight, read after the row's
  // sum), prefetched in chunks by the first loop so that the later one waits
  // on no memory after the block-wide combine (load keys; each is a chunked
  // row cache, its place in row_chunk_at).
  std::set<std::string> row_prefetch;
  // Every row cache kept in chunks: load key -> its buffer and the chunk's
  // start (an index over q). When a thread holds two or more chunks of a row,
  // the loop that fills the caches is preceded by a loop of their loads alone
  // (loads first), so that every chunk is in flight at once: fused with the
  // arithmetic, the second chunk's load followed the first chunk's use
  // behind the alignment branch, two waits on memory a row instead of one.
  std::map<std::string, std::pair<int, std::string>> row_chunk_at;
  // 32-bit registers a thread the row caches and prefetches hold (-1: the
  // kernel holds no row in registers): what CudaPrinter::signature weighs
  // before it asks for full occupancy
  int64_t row_words = -1;
  size_t current_phase = 0;
  bool in_row_loop = false;  // emitting inside a loop over r (an inner phase)
  // Chunk accesses of the current chunk (see CStylePrinter::chunked).
  std::map<std::string, std::string> vec_load;                   // load key -> chunk variable
  std::map<int, std::pair<std::string, std::string>> vec_store;  // node -> chunk variable, pointer to its start

  std::string emit(const ExprP& e);

  // A value as the given dtype would hold it (what a store and reload give).
  std::string round_to(DType t, const std::string& x) const;

  void store(int n, const std::string& v, bool per_row = false);

  // FUSEGATE_FAULT=perturb:NODE (fusion/fault.h): whether node n is
  // perturbed here, and its value as the kernel then uses it.
  bool perturbs(int n) const;
  std::string perturb(int n, const std::string& v);

  // The nodes of one frame (numel X, rnumel R) for the current x: runs of
  // nodes share a loop over r; a node that needs a reduction finished in the
  // current run starts a new one. `on_value` sees each pointwise value.
  void phases(const std::vector<int>& nodes, const std::map<int, ExprP>& body, const std::map<int, bool>& inner,
              int64_t R, const std::function<void(int, const std::string&)>& on_value);

  // Puts nodes in a frame (numel X, rnumel R): their bodies in the kernel's
  // variables, where each stores, and whether it runs inside the r loop.
  void place(const std::vector<int>& nodes, int64_t X, int64_t R, std::map<int, ExprP>* body,
             std::map<int, bool>* inner);

  // The kernel's text; buffers no store reached are reported as removed.
  std::string finish(const std::string& signature, const std::vector<int>& nodes, std::set<int>* removed);

  // the types whose chunks the printers move as one wide access (floating)
  static bool wide(DType t) { return t == DType::BF16 || t == DType::F16 || t == DType::F32; }

  // Whether `index` moves by one element per lane when `var` (of `range`
  // values) runs over chunks q*8 + v, from a chunk start that is a multiple
  // of 8 elements (16 bytes for 2-byte types) for every q and every value
  // of the other variables. `base` gets the chunk start, in q.
  static bool chunk_access(const IndexP& index, const std::string& var, int64_t range, IndexP* base);

  // Opens a chunk of `nodes`: the chunk's wide loads of kernel inputs, and
  // the chunk variables that stores fill lane by lane. Values and their
  // order are what scalar accesses give.
  void chunk_begin(const std::vector<int>& nodes, const std::map<int, ExprP>& body, const std::string& var,
                   int64_t range);

  void chunk_end();

  std::string arg_decls(const std::set<int>& written) const;

 private:
  const CStylePrinter& p_;
  const LoweredGraph& g_;
  Kernel& k_;
  std::function<std::string(const ExprP&)> custom_load_;
  std::map<int, std::string> arg_name_;
  std::vector<std::map<std::string, std::string>> scopes_{1};
  int tmp_ = 0;
};

}  // namespace fg
