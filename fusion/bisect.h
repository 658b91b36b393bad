// FUSEGATE_BISECT: how many applications of each switchable subsystem the
// compiler makes, for `fusegate bisect` and its replay commands. The value
// is a comma-separated list of SUBSYSTEM:K; a subsystem not listed is not
// limited. Subsystems, in pipeline order (the stages, and the rules inside
// them that bisect names):
//   decompositions composite ops rewritten into primitives (passes/
//                  decompose: rms_norm, softmax, ...), in graph order, per
//                  graph; an op past the limit stays whole and runs as a
//                  library (ATen) call
//   fast_paths     fast path sites taken (passes/fast_paths)
//   gemm_epilogue  GELU folds into GEMMs (cuda, max-autotune)
//   tp_rewrite     residual hoists onto rank 0's GEMM (cuda, max-autotune)
//   lowerings      pointwise, reduction and scatter ops lowered into
//                  generated code (passes/lower), in graph order, per graph;
//                  an op past the limit runs as a library (ATen) call, one
//                  kernel of its own. With decompositions and lowerings at 0
//                  every op is a library call: the graph as captured, run
//                  op by op inside the compiled program
//   decisions      fusions the scheduler applies, in ledger order, per graph
//   codegen_variants  generated kernels written in chunks of 8 (16-byte
//                  vector loads and stores; cuda) or, on the host, pointwise
//                  kernels whose loop is marked `omp simd`, in launch order,
//                  per graph
// An application past its limit is not made; the ledger records it as
// `bisect_limit`. Every rank reads the same environment, so every rank
// compiles alike. A bad value is bad input (exit 2).
//
// With graph breaks (mode B, or a repro with breaks) each graph counts its
// own applications, and SUBSYSTEM@G:K limits graph G only (G as the record
// numbers graphs, from 0), over SUBSYSTEM:K for every graph; K `all` is no
// limit: "decisions:0,decisions@0:all,decisions@1:3" makes every fusion of
// graph 0, the first three of graph 1 and none in the graphs after. The
// compiler reads the limits of the graph it compiles (BisectGraph).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace fg {

struct BisectLimits {
  int64_t decompositions = -1, fast_paths = -1, gemm_epilogue = -1, tp_rewrite = -1, lowerings = -1, decisions = -1,
          codegen_variants = -1;  // -1: no limit
  bool any() const {
    return decompositions >= 0 || fast_paths >= 0 || gemm_epilogue >= 0 || tp_rewrite >= 0 || lowerings >= 0 ||
           decisions >= 0 || codegen_variants >= 0;
  }
};

// One application of a stage's rule the record lists (decompositions,
// lowerings): the graph value it applied to ("%23", "%h"), the rule
// ("rms_norm", "pointwise mul") and the repro lines of that value.
struct StageApplication {
  std::string stage, rule, node;
  std::vector<std::string> lines;
  // the first application a limit held back (not made): what bisect names
  // when the run one application further has no record (a crash, a hang)
  bool held_back = false;
};

// The subsystems in pipeline order.
const std::vector<std::string>& bisect_subsystems();
// Parses a FUSEGATE_BISECT value into the limits of graph `graph`; throws
// UserError naming what is wrong.
BisectLimits parse_bisect(const std::string& text, int graph = 0);
// FUSEGATE_BISECT of this process (parsed once) for the graph being
// compiled on this thread (BisectGraph; graph 0 outside one).
const BisectLimits& bisect_limits();
// Whether FUSEGATE_BISECT limits some graph apart from the others: a graph
// compiled once and reused at another site must then compile again there.
bool bisect_per_graph();
// The graph being compiled on this thread, while one lives.
class BisectGraph {
 public:
  explicit BisectGraph(int graph);
  ~BisectGraph();
  BisectGraph(const BisectGraph&) = delete;
  BisectGraph& operator=(const BisectGraph&) = delete;

 private:
  int previous_;
};
// The limit of one subsystem in `l` (-1: none).
int64_t bisect_limit(const BisectLimits& l, const std::string& subsystem);

}  // namespace fg
