// The TP micro-repros: each names its inputs (full shapes, how they are
// sharded across ranks, how they are initialised) and a forward written
// against the tensor API. `.fg` text graphs are repros too.
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "fusion/capture/session.h"
#include "fusion/options.h"

namespace fg {

// How a tensor is laid out across ranks: whole on every rank (dim < 0), or
// cut along `dim` into world-size equal shares, block by block for a fused
// tensor (q|k|v: `blocks` are the full sizes of its blocks along `dim`).
struct Sharding {
  Sharding(int d = -1, std::vector<int64_t> b = {}) : dim(d), blocks(std::move(b)) {}
  int dim;
  std::vector<int64_t> blocks;  // empty: one block
  bool replicated() const { return dim < 0; }
  // the full block sizes along `dim` of a tensor whose dim is `full` long
  std::vector<int64_t> block_sizes(int64_t full) const;
};

// How an input is filled, from a generator seeded by the repro and input
// names (the same full tensor at every world size and on every rank).
enum class Init { Normal, Uniform, Ones, Zeros, Arange };
struct InitSpec {
  Init kind = Init::Normal;
  // normal: mean, std (integer dtypes: uniform integers in [0, max(2, std)));
  // uniform: low, high (integers: [low, high)); arange: start, step over the
  // flattened elements
  double a = 0.0, b = 1.0;
  std::string str() const;  // "normal(0, 0.0625)"
};
inline InitSpec normal(double mean, double std) { return {Init::Normal, mean, std}; }

struct InputSpec {
  InputSpec(std::string n, Shape shape, DType t, InitSpec i, Sharding s = {}, std::vector<int64_t> order = {})
      : name(std::move(n)), full_shape(std::move(shape)), dtype(t), init(i), shard(std::move(s)),
        dim_order(std::move(order)) {}
  std::string name;
  Shape full_shape;       // before sharding
  DType dtype;
  InitSpec init;
  Sharding shard;
  std::vector<int64_t> dim_order;  // memory order of the dims, outermost first; empty: row-major
  SourceLoc loc;                   // where a .fg declares it (messages); unknown for C++ repros
  // the repro whose draw of an input of this name fills it (a .fg's `seed`:
  // an exported or minified graph keeps its repro's values); empty: its own
  std::string seed;
};

// The layout and init of an input as .fg attributes ({shard, blocks, init,
// ...}): how captured graphs show them.
Attrs input_annotations(const InputSpec& s);

using Inputs = std::map<std::string, Tensor>;

struct Repro {
  std::string name;
  std::string description;
  std::string file;        // where its forward is written
  std::function<std::vector<InputSpec>(int world)> inputs;
  std::function<std::vector<Tensor>(Session&, Inputs&)> forward;
  std::vector<std::string> outputs;  // names, in forward's order
  // Whether the repro says how its outputs are laid out: then an output is
  // replicated (bit-identical on every rank) unless `output_shards` cuts it,
  // and every output is compared with world size 1 (a sharded one gathered
  // first). False for a .fg that declares no layouts: every rank runs the
  // whole program on its own copy, and nothing is compared across ranks.
  bool replicated_outputs = true;
  std::vector<Sharding> output_shards;  // empty, or one per output
  int min_world = 1, max_world = 1 << 20;
  std::optional<Backend> only_backend;  // run only there (a GPU-sized block)
  // Set: after its counted forwards the worker calls the forward again with
  // the same inputs (must not recompile) and with these (a changed sequence
  // length: must recompile exactly once), recording both in `recompiles`.
  std::function<std::vector<InputSpec>(int world)> reshaped_inputs;
  // The graph breaks it is written to have in mode C, each a reason (the
  // start of the break's): without them mode C must compile one graph with
  // no break (harness/record/compare.h invariant_findings). A .fg declares them as
  // `expect break "REASON"` statements.
  std::vector<std::string> expected_breaks;
  // A .fg's values other than its inputs, in bytes at world size 1 (each
  // as if it were kept to the end); 0 for a C++ repro, which is not known
  // before it runs.
  int64_t value_bytes = 0;
};

// The sizes of a transformer block (per model, before sharding).
struct BlockDims {
  int64_t batch = 2, seq = 64, hidden = 256, heads = 8, head_dim = 32, mlp = 1024;
  std::string suffix;  // repro name suffix; empty for the CPU size
};
BlockDims cpu_block();     // hidden 256, 8 heads x 32, MLP 1024, batch 2 x seq 64
BlockDims anchor_block();  // hidden 2048, 16 heads x 128, MLP 8192, batch 2 x seq 512 (GPU)
// The anchor block's larger GPU sizes: _h2048_s2048 (batch 2 x seq 2048) and
// _h4096 (hidden 4096, 32 heads x 128, MLP 14336, batch 2 x seq 512).
BlockDims anchor_block_long();
BlockDims anchor_block_wide();

// Names of the inputs every rank holds whole (not sharded): what TP
// rewrites may rely on being the same on every rank.
std::set<std::string> replicated_inputs(const std::vector<InputSpec>& specs);

// Ranks are processes on one machine (or its GPUs): a typo must not start
// thousands.
constexpr int kMaxWorld = 256;
// A UserError unless `r` runs at world size `world`: within its range and
// kMaxWorld, and dividing each sharded input's blocks (what `run`, `check`
// and `explain` say alike).
void check_world_size(const Repro& r, int world);

// What a run of `r` at `world` needs in host memory, estimated before any
// rank starts: each of this node's `local` ranks holds its share of the
// inputs three times (the run's, eager's, the fp64 reference's, which is
// wider) and, for a .fg, its values twice (compiled and eager), at world
// size 1's sizes (an upper bound).
struct MemoryEstimate {
  int64_t input_bytes = 0;  // a rank's share of the inputs
  int64_t value_bytes = 0;  // a .fg's other values
  int64_t total = 0;        // over the node's ranks
};
MemoryEstimate estimate_memory(const Repro& r, int world, int local);

// Built-in repros, then every .fg file found in `fg_dirs`.
std::vector<Repro> all_repros(const std::vector<std::string>& fg_dirs);
const Repro* find_repro(const std::vector<Repro>& rs, const std::string& name);
std::string repro_names(const std::vector<Repro>& rs);

// A repro from a .fg file: each input as its attributes say (layout,
// init); without an init, by its first use: the weight of a linear
// fan_in (N(0, 1/sqrt(in features))) and its bias too, the weight of a norm
// N(1, 0.1), its bias N(0, 0.1), anything else N(0, 1). Without any layout
// every rank gets the same full inputs. Host ops break the graph.
Repro fg_repro(const std::string& path);
// A repro that runs graph `g` (as an .fg file named `name` would: the same
// inputs, seeded by `name`); the fuzzer's candidates.
Repro graph_repro(const Graph& g, const std::string& name, const std::string& description, const std::string& file);
// Runs one parsed graph through a session, op by op.
std::vector<Tensor> run_fg(Session& s, const Graph& g, Inputs& in);

// A pre-norm residual TP block: out = x2 + mlp(x2), x2 = x + attention(x).
// Inputs: x, ln1, w_qkv (q|k|v blocks, heads sharded), w_o (row-parallel),
// ln2, then the block's own. Sizes, world limits and the GPU-only flag of
// anchor-size blocks come from `d`.
using BlockPart = std::function<Tensor(Session&, const BlockDims&, const Tensor&, Inputs&)>;
Repro residual_block(const BlockDims& d, const std::string& name, const std::string& description,
                     const std::string& file, std::vector<InputSpec> own_inputs, BlockPart attention, BlockPart mlp);

// Built-in repro definitions, at a given size.
Repro tp_block_llama(const BlockDims& d = cpu_block());
// tp_block_llama, then called again at half the sequence length (recompiles).
Repro tp_block_llama_seq();
Repro tp_block_wan(const BlockDims& d = cpu_block());

}  // namespace fg
