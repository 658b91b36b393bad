// explain --graph FILE.fg: the compiler alone (no ranks, no LibTorch run):
// the graph after each pass, the fusion decisions, then every kernel with
// its source; optionally Graphviz DOT of the graph before and after fusion.
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "fusion/compile.h"
#include "fusion/errors.h"
#include "fusion/ir/text.h"
#include "harness/cli/commands.h"
#include "harness/record/golden.h"
#include "harness/record/files.h"
#include "harness/record/json_read.h"
#include "harness/run/placement.h"
#include "harness/record/proofs.h"
#include "kernels/cpu/jit.h"
#include "fusion/fastpaths/catalog.h"
#include "repros/registry.h"

namespace fg {

namespace {

std::string dot_before(const Graph& g) {
  std::ostringstream o;
  o << "digraph \"" << g.name << "\" {\n  rankdir=TB;\n  node [shape=box, fontname=monospace];\n";
  for (const auto& n : g.nodes)
    o << "  n" << n.id << " [label=\"" << g.ref(n.id) << " = " << op_name(n.op) << "\\n" << n.type.str() << "\"];\n";
  for (const auto& n : g.nodes)
    for (int i : n.inputs) o << "  n" << i << " -> n" << n.id << ";\n";
  return o.str() + "}\n";
}

std::string dot_after(const CompiledProgram& c) {
  const LoweredGraph& lg = c.lowered;
  std::ostringstream o;
  o << "digraph \"" << lg.name << "_fused\" {\n  rankdir=TB;\n  node [shape=box, fontname=monospace];\n";
  std::map<int, int> kernel_of;
  for (size_t k = 0; k < c.program.kernels.size(); ++k) {
    const Kernel& kr = c.program.kernels[k];
    o << "  subgraph cluster_k" << k << " {\n    label=\"" << kr.name << "\";\n";
    for (int n : kr.nodes) {
      kernel_of[n] = static_cast<int>(k);
      o << "    s" << n << " [label=\"" << lg.nodes[static_cast<size_t>(n)].name << "\\n"
        << sn_kind_name(lg.nodes[static_cast<size_t>(n)].kind) << "\"];\n";
    }
    o << "  }\n";
  }
  for (const auto& n : lg.nodes)
    for (int d : n.deps) o << "  s" << d << " -> s" << n.id << ";\n";
  return o.str() + "}\n";
}

// Captures without computing: values are only types, graphs are compiled
// and not run, item() reads 0. Enough to see graphs, breaks and kernels
// with no ranks and no LibTorch run.
struct TypeOnly : Concrete {
  explicit TypeOnly(TensorType t, std::vector<int64_t> order = {}) : type(std::move(t)), dim_order(std::move(order)) {}
  TensorType type;
  std::vector<int64_t> dim_order;  // a repro input's memory order (empty: row-major)
};

// The program Inductor runs for `g`, compiled where `own` (compiled with
// `o`) holds one of fusegate's own departures from it; none on cpu.
std::optional<CompiledProgram> compile_as_inductor(const Graph& g, CompileOptions o, const CompiledProgram& own) {
  if (o.backend != Backend::Cuda) return std::nullopt;
  bool departs = false;
  for (const auto& e : own.schedule.ledger) departs = departs || departs_from_inductor(e);
  if (!departs) return std::nullopt;
  o.inductor_program = true;
  return compile(g, o);
}

class DryExecutor : public Executor {
 public:
  DryExecutor(int rank, int world, FusionPolicy p, Backend backend, std::set<std::string> replicated,
              FastPathSelection fast = {}, FastPathProofs proofs = {}, std::set<std::string> apart = {})
      : rank_(rank), world_(world), policy_(p), backend_(backend), replicated_(std::move(replicated)),
        fast_(std::move(fast)), proofs_(std::move(proofs)), apart_(std::move(apart)) {}
  // each graph compiled a second time as the program Inductor runs, where
  // the first holds one of fusegate's own departures from it (cuda only)
  bool inductor_program = false;
  std::vector<std::optional<CompiledProgram>> as_inductor;
  ConcreteP eager(const Node& n, const std::vector<ConcreteP>&) override {
    TensorType t = n.type;
    for (auto& d : t.shape) d = d < 0 ? 0 : d;
    return std::make_shared<TypeOnly>(t);
  }
  std::vector<ConcreteP> run_graph(const Graph& g, const std::vector<ConcreteP>& inputs, int) override {
    CompileOptions o;
    for (const auto& c : inputs) {
      const auto* t = static_cast<TypeOnly*>(c.get());
      o.input_layouts.push_back(Layout::in_dim_order(t->type.shape, t->dim_order));
    }
    o.fusion = policy_;
    o.backend = backend_;
    o.replicated_inputs = replicated_;
    o.fast_paths = fast_;
    o.proofs = proofs_;
    o.world_size = world_;
    o.residuals_apart = apart_;
    o.graph = static_cast<int>(compiled.size());
    compiled.push_back(compile(g, o));
    as_inductor.push_back(inductor_program ? compile_as_inductor(g, o, compiled.back()) : std::nullopt);
    std::vector<ConcreteP> outs;
    for (int id : g.outputs) outs.push_back(std::make_shared<TypeOnly>(g.node(id).type));
    return outs;
  }
  TensorType type_of(const ConcreteP& t) override { return static_cast<TypeOnly*>(t.get())->type; }
  double item(const ConcreteP&) override { return 0; }
  std::string describe(const ConcreteP& t) override { return type_of(t).str(); }
  int world_size() const override { return world_; }
  int rank() const override { return rank_; }
  std::vector<CompiledProgram> compiled;

 private:
  int rank_, world_;
  FusionPolicy policy_;
  Backend backend_;
  std::set<std::string> replicated_;
  FastPathSelection fast_;
  FastPathProofs proofs_;
  std::set<std::string> apart_;
};

void explain_one(const CompiledProgram& c, const std::string& fusion, const std::string& dot_dir, bool svg,
                 const std::optional<CompiledProgram>& as_inductor) {
  const Graph& g = c.captured;
  {
    std::cout << "=== graph " << g.name << " (fusion policy " << fusion << ")\n\n";
    bool templates = false;
    for (const auto& sn : c.lowered.nodes) templates = templates || sn.is_template();
    if (templates)
      std::cout << "note: every linear is shown as a generated GEMM template; a run times each template shape "
                   "against the library call and keeps the faster (the record's gemm_choices; a check takes the "
                   "golden's)\n\n";
    bool hoists = false;
    for (const auto& e : c.schedule.ledger) hoists = hoists || e.reason == Reject::TpResidualHoisted;
    if (hoists)
      std::cout << "note: each residual add moved onto a GEMM is shown moved; a run times the forward with it "
                   "there and with the add left after the all-reduce, and keeps the faster (the record's "
                   "residual_placement; a check takes the golden's)\n\n";
    std::cout << "--- captured\n" << print_graph(c.captured) << "\n";
    std::cout << "--- fast paths\n";
    for (const auto& [name, st] : c.fast_paths) {
      std::cout << "  " << name << ": " << st.status;
      for (const auto& sc : st.shape_classes) std::cout << " [" << sc << "]";
      std::cout << "\n";
    }
    std::cout << "\n--- after decompose and fast paths\n" << print_graph(c.decomposed) << "\n";
    std::cout << "--- after lower\n" << print_lowered(c.lowered) << "\n";
    std::cout << "--- after schedule\n" << print_ledger(c.schedule) << "\n";
    std::cout << print_schedule(c.lowered, c.schedule, c.program);
    int gen = 0;
    for (const auto& k : c.program.kernels) gen += k.generated();
    std::cout << "  " << c.program.kernels.size() << " launches: " << gen << " generated, "
              << c.program.kernels.size() - static_cast<size_t>(gen) << " extern/collective\n";
    if (as_inductor) {
      // what Inductor runs: the same graph without fusegate's departures
      // (their ledger entries, by code), the count its parity compares
      std::map<std::string, int> why;
      for (const auto& e : c.schedule.ledger)
        if (departs_from_inductor(e)) ++why[reject_code(e.reason)];
      std::vector<std::string> parts;
      for (const auto& [code, n] : why) parts.push_back(code + std::string(" ") + std::to_string(n));
      int igen = 0;
      for (const auto& k : as_inductor->program.kernels) igen += k.generated();
      const size_t n = as_inductor->program.kernels.size();
      std::cout << "  Inductor's program, without fusegate's own (" << join(parts, ", ") << "): " << n
                << " launches: " << igen << " generated, " << n - static_cast<size_t>(igen) << " extern/collective\n";
    }
    std::cout << "\n";
    std::cout << "--- kernels\n";
    std::set<std::string> shown;  // a function launched twice is printed once
    for (const auto& k : c.program.kernels)
      if (k.generated() && shown.insert(k.name).second)
        std::cout << "// " << k.name << ": " << k.kind << "\n" << k.source << "\n";
    if (!dot_dir.empty()) {
      std::filesystem::create_directories(dot_dir);
      std::string before = dot_dir + "/" + g.name + ".before.dot", after = dot_dir + "/" + g.name + ".after.dot";
      write_atomic(before, dot_before(c.captured));
      write_atomic(after, dot_after(c));
      std::cout << "wrote " << before << " and " << after << "\n";
      if (svg)
        for (const auto& f : {before, after}) {
          std::string cmd = "dot -Tsvg -o '" + f.substr(0, f.size() - 4) + ".svg' '" + f + "'";
          if (std::system(cmd.c_str()) != 0) user_error("graphviz `dot` failed on " + f + " (apt-get install graphviz)");
        }
    }
  }
}

}  // namespace


// Captures a repro with the dry executor (its header printed when `print`):
// the graphs it compiled.
static std::vector<CompiledProgram> dry_capture(const Repro& r, Mode m, int world, DryExecutor& ex, bool print) {
  Session s(m, &ex, r.file);
  Inputs in;
  for (const auto& spec : r.inputs(world)) {
    TensorType t{spec.dtype, spec.full_shape};
    if (!spec.shard.replicated()) t.shape[static_cast<size_t>(spec.shard.dim)] /= world;
    in[spec.name] = s.wrap(std::make_shared<TypeOnly>(t, spec.dim_order), spec.name, input_annotations(spec));
  }
  s.finish(r.forward(s, in));
  if (print) {
    std::cout << "=== repro " << r.name << ", mode " << mode_letter(m) << ", world size " << world << " (rank 0): "
              << s.graph_count() << " graph(s), " << s.breaks().size() << " graph break(s)\n";
    for (const auto& b : s.breaks()) std::cout << "  break: " << b.reason << " at " << b.loc.str() << "\n";
    std::cout << "\n";
  }
  return ex.compiled;
}

std::vector<std::string> dry_fast_path_sites(const Repro& r, int world, Backend backend, const std::string& name) {
  FastPathProofs forced;
  forced.forced = {name};
  DryExecutor ex(0, world, FusionPolicy::Default, backend, replicated_inputs(r.inputs(world)), parse_fast_paths(name),
                 forced);
  std::set<std::string> classes;
  for (const auto& c : dry_capture(r, Mode::Compiled, world, ex, false)) {
    auto it = c.fast_paths.find(name);
    if (it != c.fast_paths.end() && it->second.status == kFastPathUsed)
      classes.insert(it->second.shape_classes.begin(), it->second.shape_classes.end());
  }
  return {classes.begin(), classes.end()};
}

int cmd_explain(const std::string& graph_file, FusionPolicy p, const std::string& dot_dir, bool svg, Backend backend,
                const FastPathSelection& fast, const std::string& golden_dir) {
  std::vector<Graph> graphs = parse_graph_file(graph_file);
  for (const Graph& g : graphs) {
    for (const auto& n : g.nodes)
      if (fusion_kind(n.op) == FusionKind::Host)
        user_error(graph_file + ":" + std::to_string(n.loc.line) + ": " + g.ref(n.id) + " = " + op_name(n.op) +
                   " is a host op: the graph breaks there. explain --graph compiles one graph; split the file at the "
                   "break, or explain it as a repro (fusegate explain NAME --repro-dir DIR) to see the breaks");
    CompileOptions o;
    o.fusion = p;
    o.backend = backend;
    o.fast_paths = fast;
    o.proofs = fast_path_proofs(golden_dir, backend, 1, "");
    o.world_size = 1;
    // a .fg repro gives every rank the same inputs (repros/registry.cpp),
    // laid out in memory as their dim_order says
    for (int id : g.input_ids()) {
      const Node& n = g.node(id);
      o.replicated_inputs.insert(n.name);
      o.input_layouts.push_back(Layout::in_dim_order(
          n.type.shape, n.attrs.count("dim_order") ? attr_ints(n.attrs, "dim_order", Op::Input) : std::vector<int64_t>{}));
    }
    CompiledProgram c = compile(g, o);
    explain_one(c, policy_name(p), dot_dir, svg, compile_as_inductor(g, o, c));
  }
  return 0;
}

int cmd_explain_repro(const Repro& r, Mode m, int world, FusionPolicy p, const std::string& dot_dir, bool svg,
                      Backend backend, const FastPathSelection& fast, const std::string& golden_dir) {
  check_world_size(r, world);  // as run says it
  // the residual placement a check runs: the golden's table, where it has one
  std::set<std::string> apart;
  std::string placement_note;
  if (backend == Backend::Cuda && p == FusionPolicy::MaxAutotune && m != Mode::Eager && !golden_dir.empty()) {
    const std::string path = golden_path(golden_dir, backend_name(backend), r.name, mode_letter(m), world,
                                         policy_name(p), fast.text());
    try {
      std::optional<record::RunRecord> g = load_golden(path);
      const std::vector<record::ResidualPlacement>* table = g ? placement_table(*g) : nullptr;
      if (table) {
        apart = apart_sites(*table);
        std::vector<std::string> sites;
        for (const record::ResidualPlacement& e : *table) sites.push_back(e.site + " " + e.placement);
        // the file under the golden folder: the same text wherever the checkout is
        const std::string rel = path.substr(std::min(path.size(), golden_dir.size() + (golden_dir.back() == '/' ? 0 : 1)));
        placement_note = "note: residual placement as the golden " + rel + " records it: " + join(sites, ", ") + "\n\n";
      }
    } catch (const UserError& e) {
      placement_note = std::string("note: residual placement not read from the golden (") + e.what() +
                       "): every hoist is shown\n\n";
    }
  }
  DryExecutor ex(0, world, p, backend, replicated_inputs(r.inputs(world)), fast,
                 fast_path_proofs(golden_dir, backend, world, ""), apart);
  ex.inductor_program = true;
  const std::vector<CompiledProgram> compiled = dry_capture(r, m, world, ex, true);
  for (size_t i = 0; i < compiled.size(); ++i) {
    std::cout << placement_note;
    explain_one(compiled[i], policy_name(p), dot_dir, svg, ex.as_inductor[i]);
  }
  return 0;
}

}  // namespace fg
