// Running one repro x mode x world size: the launcher starts one process
// per rank (like torchrun), joined through a c10d TCPStore it hosts; each
// rank writes its part of the RunRecord.
#pragma once
#include <nlohmann/json.hpp>

#include <set>
#include <string>
#include <vector>

#include "fusion/options.h"
#include "fusion/passes/fast_paths.h"
#include "harness/record/record.h"

namespace c10d { class TCPStore; }

namespace fg {

// Multi-node (as torchrun): the world's ranks over `nnodes` launchers, this
// one node `node_rank`, starting ranks node_rank * world / nnodes onward.
// Node 0 serves the c10d store at master_addr:master_port, gathers every
// rank's record through it and decides; the others report and wait.
struct NodeSpec {
  int nnodes = 1;
  int node_rank = 0;
  std::string master_addr = "127.0.0.1";
  int master_port = 0;  // 0: any free port (one node only)
};

struct RunSpec : NodeSpec {
  std::string repro;
  Mode mode = Mode::Compiled;
  int world = 1;
  Backend backend = Backend::Cpu;
  FusionPolicy fusion = FusionPolicy::Default;
  std::vector<std::string> fg_dirs;
  int timeout_s = 120;
  int iters = 3;             // timed forwards (after warm-up and the counted one)
  bool cuda_graphs = false;  // time CUDA-graph replays of a one-graph forward
  // untimed forwards run for at least this long before the timed ones, as
  // the timed ones run: a GPU under sustained load settles at its power cap
  // (an H100 took its median forward 10% above its fastest within 50 ms of
  // load, bench/RESULTS.md), and a median that straddles the change moves
  // from process to process
  int warmup_ms = 0;
  std::string profile;       // cuda: write the per-kernel profile (rank 0) here
  // rank 0 writes its inputs and the outputs (whole, where a shard is
  // gathered) into this folder as raw tensors with tensors.json: what the
  // .fg -> PyTorch translator's check compares with (harness/run/forward.h)
  std::string save_tensors;
  std::string golden_dir;    // proofs are read from <golden_dir>/proofs/<backend>/ (harness/record/proofs.h)
  FastPathSelection fast_paths;  // default: the proven ones
  // `fusegate ab`: each rank runs the generic path, this fast path (forced,
  // proof or not) and the fp64 reference on the same inputs, and records
  // their comparison instead of the usual figures (harness/tools/ab.cpp)
  std::string ab_fast_path;
  // Multi-node (NodeSpec): this node's slice of the `world` ranks.
  int local_world() const { return world / nnodes; }
  int first_rank() const { return node_rank * local_world(); }
  // A command that runs several jobs across nodes (check, bless, prove:
  // harness/run/nodes.h) shares one store for all of them: the launcher then
  // uses `store` instead of serving its own, and every key of the job, its
  // ranks' included, lives under `store_prefix`.
  c10d::TCPStore* store = nullptr;
  std::string store_prefix;
};

struct RunOutcome {
  int exit_code = 0;     // 0 ok, 2 bad input, 125 cannot test
  std::string message;   // why not 0
  bool node_lost = false;  // multi-node: a node never arrived or stopped reporting
  // how a run that did not finish failed, for `fusegate bisect`'s
  // predicates: "crash" (a rank died of a signal, an internal error or an
  // exit nothing explains), "hang" (a rank did not finish within the
  // timeout), "disagree" (the ranks compiled differently); "" otherwise
  std::string failure;
  record::RunRecord record;  // exit_code 0: the ranks' records, gathered
  // `fusegate ab` (RunSpec::ab_fast_path): each rank's figures of the two
  // paths (harness/run/ab_rank.h), in place of record.ranks
  std::vector<record::AbRankRecord> ab_ranks;
};

// Starts the ranks and gathers their records; never leaves a process behind.
RunOutcome launch(const RunSpec& spec);
// SIGINT, SIGTERM and SIGHUP stop a run without leftovers: its ranks,
// scratch folder, shared memory and a golden half written (launcher.cpp).
void install_stop_handlers();
// While one lives, SIGINT, SIGTERM and SIGHUP only note the signal
// (stop_signal()) for its holder to clean up and then die_of_signal();
// without one they end the process at once (a launch has its own).
struct StopDeferred {
  StopDeferred();
  ~StopDeferred();
  StopDeferred(const StopDeferred&) = delete;
  StopDeferred& operator=(const StopDeferred&) = delete;
};
int stop_signal();  // 0: none yet
[[noreturn]] void die_of_signal(int sig);

// The body of one rank process (`fusegate _worker`). Returns its exit code.
int worker_main(const RunSpec& spec, int rank, int port, const std::string& out_path);

// What the proofs beside the goldens (<golden_dir>/proofs/<backend>/, read by
// harness/record/proofs.h) allow at `world`: checked against the fast paths'
// sources as built, the host compiler (cpu) and, on cuda, the GPU model
// `gpu` (a run passes its device's name, cuda_device_name(); explain runs no
// device and passes "").
FastPathProofs fast_path_proofs(const std::string& golden_dir, Backend backend, int world, const std::string& gpu);
// The same for a run on this machine: on cuda, its device's model.
FastPathProofs device_fast_path_proofs(const std::string& golden_dir, Backend backend, int world);

// Each fast path's status in the graphs a forward ran, with the shape classes
// of its sites: [{"name", "status", "shape_classes"}], by name.
struct CompiledGraphRt;
nlohmann::json fast_path_statuses(const std::vector<const CompiledGraphRt*>& graphs, const FastPathSelection& sel,
                                  const std::set<std::string>& forced);

// Checks repro name, mode and world size before anything starts; throws
// UserError naming what is wrong and listing what is known.
void validate_spec(const RunSpec& spec);
// The host memory a run may be estimated to need before it is refused
// (exit 2, with the estimate); 0: the machine's (MemTotal).
void set_max_memory_gib(double gib);

}  // namespace fg
