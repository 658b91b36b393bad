// fusegate fuzz: differential fuzzing of the compiler. Random graphs
// (harness/tools/fuzz_gen.h) run compiled under each fusion policy against eager
// and the fp64 reference; a mismatch, a crash, a compile error, a graph
// break or a rank disagreement is a finding, shrunk to the smallest .fg that
// still shows it and written with the command that replays it.
//
// One job at world size 1 runs in this process. Otherwise (--jobs J, or a
// world size above 1) this process supervises: it serves one c10d store and
// starts J jobs, job j taking graphs j, j + J, j + 2J, ... at world size
// worlds[j % worlds.size()], each job one process a rank (`_fuzzjob`); a job
// that dies or stops answering is a finding named by the graph it was on
// (that graph written, unminimized), and starts again at its next graph.
#pragma once
#include <functional>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fusion/capture/session.h"
#include "fusion/ir/graph.h"
#include "fusion/options.h"
#include "fusion/passes/fast_paths.h"
#include "harness/tools/fuzz_gen.h"

namespace fg {

class Collectives;

struct FuzzOptions {
  double seconds = 60;   // stop after this long ...
  int64_t graphs = 0;    // ... or after this many graphs (0: no limit)
  uint64_t seed = 1;     // graph i comes from seed + i
  Backend backend = Backend::Cpu;
  std::vector<FusionPolicy> policies{FusionPolicy::Default};
  int max_ops = 12;
  std::string findings_dir = "fuzz-findings";
  std::string json_out;  // the summary as JSON (bench records)
  int max_findings = 1;  // stop after this many (each is minimized), a job
  std::vector<int> worlds{1};  // world sizes, one a job, in turn
  int jobs = 1;
  std::string fast_paths = "proven";  // --fast-paths: asked for; each runs only with a valid proof
  std::string golden_dir;        // where the proofs are read from
  int timeout_s = 120;           // a collective, or a job silent this long x3
  bool print_graphs = false;     // --print-graph: each graph's text on stderr before it runs
  // --emit DIR: write graphs seed .. seed + graphs - 1 as DIR/fuzz_<seed>.fg
  // and run nothing (the graphs another tool compiles: bench/inductor_parity.py)
  std::string emit_dir;
  // --graph FILE: judge this graph (a finding, after a fix) instead of
  // generated ones, once at each world size; its inputs are seeded by the
  // file's stem, as `fusegate run --graph FILE` seeds them
  std::string graph_text, graph_name;
  // set: this run is `fusegate minify` of that one graph: its failure is
  // shrunk keeping the output that failed (a mismatch), written here, and
  // the summary says what was minified
  std::string minify_out;
  // a mismatch is the gate's accuracy verdict alone (minify: the repro
  // failed `check`), without the slack random graphs get
  bool gate_accuracy = false;
  // the compiled runs' mode: C (the fuzzer's), or B for minify --mode B
  Mode mode = Mode::Compiled;
  // a graph break is not a finding (minify: a repro may be written to break)
  bool breaks_allowed = false;
};

// The graph index `index` of a run judges: generated from seed + index, or
// the --graph file's.
FuzzGraph fuzz_graph(const FuzzOptions& o, int64_t index, int world);

// Where one rank of a job stands: its group (null at world size 1) and
// proofs, and the count of verdicts it has exchanged (the ranks of a job
// run the same graphs and checks in lock step; each check's verdict is
// exchanged, so that every rank goes on with the same one).
struct FuzzRank {
  Collectives* coll = nullptr;
  int rank = 0, world = 1;
  FastPathProofs proofs;
  int64_t exchanged = 0;
};

// What one graph showed; kind empty: nothing.
struct FuzzFinding {
  std::string kind;    // mismatch | crash | compile error | graph break | rank disagreement
  FusionPolicy policy = FusionPolicy::Default;
  std::string detail;  // the output and its figures, or the message
  bool operator==(const FuzzFinding& o) const { return kind == o.kind && policy == o.policy; }
};

// Runs `g` (named `name`: its inputs are seeded by it, as `fusegate run
// NAME` seeds them) eager, in fp64 and compiled under each policy, on rank
// `r` (every rank of its job runs the same call; the verdict is the ranks'
// first finding, or a rank disagreement where their outputs differ).
// nullopt: eager itself refused the graph (not the compiler's fault).
std::optional<FuzzFinding> fuzz_check(const Graph& g, const std::string& name, const FuzzOptions& o, FuzzRank& r,
                                      std::string* eager_error = nullptr);

// The smallest graph found that still shows `f` (same kind, same policy):
// outputs dropped, nodes replaced by one of their operands or by a new
// input, until no step keeps the finding.
Graph minimize(const Graph& g, const FuzzFinding& f, const FuzzOptions& o, FuzzRank& r, int* checks);

// minimize's shrinking for any judge: the smallest graph found for which
// `shows` still holds (it holds for `g`); keep_output >= 0 first tries that
// output alone.
Graph shrink(const Graph& g, const std::function<bool(const Graph&)>& shows, int keep_output = -1);

// The name a graph's finding file and repro take: "f" and 12 hex digits of
// its text's hash.
std::string fuzz_name(const Graph& g);

int cmd_fuzz(const FuzzOptions& o);

// One rank of job `job` of a supervised run (the `_fuzzjob` command): reads
// the options the supervisor wrote to <dir>/options.json, joins its job's
// group through the supervisor's store on `port` and writes
// <dir>/job<job>.<life>.progress after each graph and .json when done
// (rank 0).
struct FuzzJobSpec {
  std::string dir;
  int job = 0, life = 0;  // life: the job's restarts so far (files and store keys carry it)
  int64_t first = 0;      // the job's first graph (job, or after the graph its last life died on)
  double seconds_left = 0;
  int rank = 0, port = 0;
};
int fuzz_job_main(const FuzzJobSpec& spec);

}  // namespace fg
