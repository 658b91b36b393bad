#include "fusion/compile.h"

#include <sstream>

#include "fusion/bisect.h"
#include "fusion/codegen/cpp_printer.h"
#include "fusion/codegen/cuda_printer.h"
#include "fusion/errors.h"
#include "fusion/ir/text.h"
#include "fusion/logs.h"
#include "fusion/passes/attention.h"
#include "fusion/passes/constant_fold.h"
#include "fusion/passes/dead_code.h"
#include "fusion/passes/decompose.h"
#include "fusion/passes/gemm_epilogue.h"
#include "fusion/passes/tp_rewrite.h"
#include "fusion/passes/verify_lowered.h"

namespace fg {

CompiledProgram compile(const Graph& g, const CompileOptions& opts) {
  const BisectGraph limits_of(opts.graph);
  CompiledProgram c;
  c.captured = g;
  verify(g);
  if (log_enabled("graph")) log_write("graph", print_graph(g));

  std::vector<LedgerEntry> rewrites;
  const Graph* source = &g;
  Graph folded, chosen;
  if (opts.backend == Backend::Cuda) {
    // values computed from constants alone are one full each, as Inductor's
    // joint-graph pass folds them in the graph a user wrote (before its
    // lowerings, whose constants are numbers, not nodes); on the graph with
    // its dead code out, so that a value's users are Inductor's
    std::vector<LedgerEntry> dead, folds;
    Graph live = eliminate_dead_code(g, &dead);
    Graph f = fold_uniform_constants(live, &folds);
    if (!folds.empty()) {
      verify(f);
      folded = std::move(f);
      source = &folded;
      rewrites.insert(rewrites.end(), dead.begin(), dead.end());
      rewrites.insert(rewrites.end(), folds.begin(), folds.end());
    }
    // on cuda, each attention as the kernel PyTorch picks for it runs it: a
    // fused call, flash over a padded head dim, or the math form (whose
    // softmax decompose then takes apart)
    chosen = lower_attention_choices(*source, &rewrites);
    verify(chosen);
    source = &chosen;
  }
  // max-autotune on cuda: coordinate-descent tuning, under which Inductor
  // decomposes a GEMM with one row or column into a sum (passes/vector_gemm)
  c.decomposed = decompose(*source, &c.decompositions, opts.backend == Backend::Cuda,
                           opts.backend == Backend::Cuda && opts.fusion == FusionPolicy::MaxAutotune);
  verify(c.decomposed);
  // on cuda a cast of a cast between floating types is one cast (Inductor's
  // joint-graph pointless_convert, on the decomposed graph it sees)
  if (opts.backend == Backend::Cuda) {
    c.decomposed = collapse_cast_chains(c.decomposed, &rewrites);
    verify(c.decomposed);
  }

  // dead code out first, as Inductor's graph is cleaned before lowering:
  // no fast path matches, and no kernel runs, for a value nothing reads
  c.decomposed = eliminate_dead_code(c.decomposed, &rewrites);
  verify(c.decomposed);

  // a GEMM epilogue the graph itself gives is split off: the program as a
  // user writes it (max-autotune on cuda folds it back below)
  c.decomposed = split_gemm_epilogues(c.decomposed, &rewrites);
  verify(c.decomposed);

  // hand-written fast paths first: the max-autotune rewrites below then see
  // them as the extern nodes they are
  // (none in the program Inductor runs)
  const FastPathSelection fast =
      opts.inductor_program ? FastPathSelection{FastPathSelection::Kind::None, {}} : opts.fast_paths;
  c.decomposed = apply_fast_paths(c.decomposed, fast, opts.proofs, &rewrites, &c.fast_paths,
                                  {opts.backend, opts.world_size, opts.fusion});
  verify(c.decomposed);

  // on cuda a bias added to a 2-D GEMM is the GEMM's (addmm), as Inductor's
  // post-grad pattern folds it
  if (opts.backend == Backend::Cuda) {
    c.decomposed = fold_gemm_bias_adds(c.decomposed, &rewrites);
    verify(c.decomposed);
  }

  // max-autotune on cuda: GEMMs are cuBLASLt calls, whose epilogue can apply
  // a GELU and whose C operand can carry a replicated residual in front of
  // the all-reduce
  if (opts.backend == Backend::Cuda && opts.fusion == FusionPolicy::MaxAutotune && !opts.inductor_program) {
    c.decomposed = fuse_gemm_epilogues(c.decomposed, &rewrites);
    verify(c.decomposed);
    c.decomposed = hoist_replicated_residuals(c.decomposed, opts.replicated_inputs, &rewrites, opts.residuals_apart);
    verify(c.decomposed);
  }

  // lower needs the decomposed graph: it only knows sum/amax reductions
  // GEMM templates are generated for the cpu backend; on cuda, GEMMs stay
  // library calls (cuBLASLt, with its epilogues)
  // reductions split in two only for cuda, as Inductor splits them for
  // Triton only (its C++ backend does not)
  LowerOptions lo{opts.input_layouts, opts.fusion == FusionPolicy::MaxAutotune && opts.backend == Backend::Cpu,
                  opts.template_gemms, {}};
  lo.split.enabled = opts.backend == Backend::Cuda;
  lo.concat_kernels = opts.backend == Backend::Cuda;
  lo.output_views_of_base = opts.backend == Backend::Cuda;
  lo.outputs_stored_when_lowered = opts.backend == Backend::Cuda;
  lo.scan_of_one_is_pointwise = opts.backend == Backend::Cuda;
  lo.pad_strides = opts.backend == Backend::Cuda;
  c.lowered = lower(c.decomposed, lo);

  const bool checked = verify_passes_enabled();
  if (checked) verify_lowered(c.lowered, "lower");

  FusionConfig fc;
  fc.loop_ordering_after_fusion = opts.backend == Backend::Cuda;
  fc.batch_sibling_gemms = !opts.inductor_program;
  c.schedule = schedule(c.lowered, opts.fusion, fc);
  // before the rewrite entries join the ledger: they name graph values, not
  // scheduler nodes
  if (checked) verify_schedule(c.lowered, c.schedule, "schedule");
  c.schedule.ledger.insert(c.schedule.ledger.begin(), rewrites.begin(), rewrites.end());
  if (log_enabled("fusion")) log_write("fusion", print_ledger(c.schedule));

  c.program = opts.backend == Backend::Cuda ? generate_cuda(c.lowered, c.schedule) : generate_cpp(c.lowered, c.schedule);
  if (log_enabled("output_code")) log_write("output_code", c.program.module_source);
  return c;
}

std::string print_lowered(const LoweredGraph& g) {
  std::ostringstream o;
  o << "lowered " << g.name << ": " << g.nodes.size() << " scheduler nodes, " << g.buffers.size() << " buffers\n";
  for (const auto& n : g.nodes) {
    o << "  " << n.name << " = " << sn_kind_name(n.kind);
    if (n.is_scatter()) o << "(" << op_name(n.reduce_op) << ", indirect store, numel=" << n.numel() << ", rnumel=" << n.rnumel() << ")";
    else if (n.kind == SNKind::Reduction) o << "(" << op_name(n.reduce_op) << ", numel=" << n.numel() << ", rnumel=" << n.rnumel() << ")";
    else if (n.kind == SNKind::Pointwise) o << "(numel=" << n.numel() << (n.mutation ? ", mutation" : "") << ")";
    else if (n.kind == SNKind::Template) o << "(gemm M=" << n.gemm_m << " N=" << n.gemm_n << " K=" << n.gemm_k << ")";
    else o << "(" << op_name(n.op.op) << ")";
    o << " ops=[";
    for (size_t i = 0; i < n.origins.size(); ++i) o << (i ? "," : "") << n.origins[i];
    o << "] reads=[";
    bool first = true;
    for (int b : n.reads) { o << (first ? "" : ",") << g.buffers[static_cast<size_t>(b)].name; first = false; }
    o << "]";
    if (n.body) o << "\n      body: " << n.body->key.substr(0, 400) << (n.body->key.size() > 400 ? "..." : "");
    o << "\n";
  }
  return o.str();
}

std::vector<std::string> agreement_items(const CompiledProgram& p, const std::string& graph_hash) {
  std::vector<std::string> items{"graph " + graph_hash};
  for (size_t i = 0; i < p.schedule.ledger.size(); ++i) {
    const LedgerEntry& e = p.schedule.ledger[i];
    items.push_back("decision " + std::to_string(i) + ": " + e.first + " + " + e.second + " " +
                    (e.fused ? "fused" : "rejected") + (e.reason == Reject::None ? "" : std::string(" (") +
                                                                                          reject_code(e.reason) + ")"));
  }
  for (const auto& [name, st] : p.fast_paths) items.push_back("fast path " + name + ": " + st.status);
  for (size_t i = 0; i < p.program.kernels.size(); ++i) {
    const Kernel& k = p.program.kernels[i];
    if (k.kind != "collective" && k.kind != "fast_path") continue;
    const SchedNode& sn = p.lowered.nodes[static_cast<size_t>(k.nodes.at(0))];
    items.push_back("launch " + std::to_string(i) + ": " + k.name + " " + sn.op.type.str());
  }
  return items;
}

std::string print_ledger(const Schedule& s) {
  std::ostringstream o;
  o << "fusion decisions (" << s.ledger.size() << "):\n";
  for (const auto& e : s.ledger) {
    o << "  round " << e.round << " " << e.first << " + " << e.second << " score=(" << e.score[0] << ", " << e.score[1]
      << ", " << e.score[2] << ", " << e.score[3] << ") "
      << (e.fused ? std::string("fused") + (e.reason == Reject::None ? "" : std::string(": ") + reject_reason(e.reason))
                  : std::string("rejected: ") + reject_reason(e.reason))
      << "\n";
  }
  return o.str();
}

std::string print_schedule(const LoweredGraph& g, const Schedule& s, const KernelProgram& p) {
  std::ostringstream o;
  o << "kernels (" << p.kernels.size() << " launches):\n";
  for (const auto& k : p.kernels) {
    o << "  " << k.name << "  [" << k.kind << "]  nodes:";
    for (int n : k.nodes) o << " " << g.nodes[static_cast<size_t>(n)].name;
    o << "\n";
  }
  return o.str();
}

bool departs_from_inductor(const LedgerEntry& e) {
  return e.fused && (e.reason == Reject::GemmEpilogue || e.reason == Reject::TpResidualHoisted ||
                     e.reason == Reject::FastPathUsed || e.reason == Reject::BatchedSiblings);
}

}  // namespace fg
