// The RunRecord and the golden file as types (harness/RECORD.md says what
// each field means). One record type serves both: a run's record carries
// one environment (`env`) and one exact digest an output; a golden keeps
// every environment it was blessed in (`environments`) and each output's
// digest per environment. A field a record may lack is an optional: the
// comparisons decide what an absence means, and the golden loader
// (harness/record/golden.h) which fields a golden must hold.
//
// Each type lists its fields once (`list_fields` in record_json.cpp); reading,
// writing and the schema test (tests/unit/harness_record_types_test.cpp, against
// record.schema.json) follow from that list, so a field spelt differently
// by the writer and the reader cannot compile.
#pragma once
#include <nlohmann/json.hpp>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace fg::record {

// The environment key (harness/run/environment.h): strings only.
using Environment = std::map<std::string, std::string>;

struct Break {
  std::string reason, location;
};

// One launch of the compiled forward (a kernel, an extern, a collective, a
// fast path) and what really ran for it.
struct Launch {
  std::string name, kind;
  std::optional<std::vector<std::string>> ops;
  std::optional<long long> graph;
  std::optional<std::vector<std::string>> device_kernels;  // cuda
  std::optional<std::map<std::string, long long>> aten_ops;  // cpu externs and collectives
};

// An output's fingerprint (harness/run/digest.h); a sum over NaN is NaN
// (stored as null).
struct Fingerprint {
  std::optional<std::string> dtype;
  std::optional<std::vector<long long>> shape;
  std::optional<long long> numel, nan, inf;
  std::optional<double> sum, sumsq, max_abs;
  std::optional<std::vector<double>> samples;
};

// A sharded output gathered from every rank.
struct Gathered {
  std::optional<long long> shard;
  std::optional<std::string> exact;
  std::optional<Fingerprint> fingerprint;
};

struct OutputDigest {
  std::string name;
  // "exact": a run's digest (a string), or a golden's per environment
  // fingerprint (an object); one of the two
  std::optional<std::string> exact;
  std::optional<std::map<std::string, std::string>> exact_by_environment;
  std::optional<bool> replicated;
  std::optional<Fingerprint> fingerprint;
  std::optional<Gathered> gathered;
};

// One fusion candidate the scheduler considered.
struct LedgerEntry {
  std::vector<std::string> nodes;
  std::string outcome;  // "fused" or "rejected"
  std::optional<std::string> reason;
  std::optional<std::vector<long long>> score;
  std::optional<long long> graph, round;
  std::optional<std::vector<std::string>> source;  // "file:line (fn)"
};

struct FastPathStatus {
  std::string name, status;  // "used", "blocked: ...", "refused: ..."
  std::optional<std::vector<std::string>> shape_classes;
};

struct Hashes {
  std::optional<std::string> graphs, decisions, collectives;
};

// One output's accuracy against eager and fp64: `pass` and its figures
// (each a number, or null for NaN; allclose_eager a boolean).
struct AccuracyOutput {
  std::string name;
  std::optional<bool> pass;
  std::optional<bool> allclose_eager;
  std::optional<double> rmse_vs_fp64, eager_rmse_vs_fp64, max_abs_vs_eager;
};

struct Accuracy {
  std::optional<std::string> status;  // "pass" or what failed
  std::vector<AccuracyOutput> outputs;
};

// A repro that drives recompiles: the same shapes again, then a changed
// sequence length.
struct Recompiles {
  std::optional<long long> same_shapes, changed_shapes;
  std::optional<std::string> guard;
};

// One application of a compiler stage's rule (FUSEGATE_BISECT=
// decompositions, lowerings): the graph value it applied to.
struct StageApplication {
  std::optional<long long> graph;
  std::string stage, rule, node;
  std::optional<std::vector<std::string>> source;
  std::optional<bool> held_back;  // true: not made, the first its FUSEGATE_BISECT limit held back
};

struct CodegenVariant {
  std::optional<long long> graph;
  std::string kernel, variant;
  std::vector<std::string> nodes;
  std::optional<std::vector<std::string>> source;
  std::optional<bool> held_back;  // as StageApplication's
};

// How a GEMM algorithm was kept in the forward it serves.
struct GemmForward {
  std::optional<std::string> how, choice_config, choice_faster_rounds, kept;
  std::optional<bool> graph;
  std::optional<std::vector<std::string>> checked;
  std::optional<long long> choice;
  std::optional<double> choice_ms, top1_ms;
};

// A GEMM shape's cuBLASLt algorithm (max-autotune on cuda).
struct GemmAlgo {
  std::string shape, source;
  std::optional<std::string> type, algo, config, top1_algo, why;
  std::optional<long long> m, n, k, batch, choice, candidates, fallbacks;
  std::optional<bool> bias, gelu, addend;
  std::optional<double> us, top1_us;
  std::optional<GemmForward> forward;
};

// A GEMM shape's template-or-library choice (max-autotune on cpu).
struct GemmChoice {
  std::string shape, choice;
  std::optional<std::string> source;
  std::optional<double> template_us, library_us;
};

// A TP residual site's placement (max-autotune on cuda).
struct ResidualPlacement {
  std::string site, placement;  // "gemm" or "apart"
  std::optional<std::string> source, how, apart_faster_rounds;
  std::optional<double> gemm_ms, apart_ms;
};

// What a forward spent on the GPU, where the device gave it (cuda, after
// --warmup-ms): a figure it did not give is left out, never 0; `why` in
// place of the figures where none was read.
struct Energy {
  std::optional<long long> forwards, counter_periods, sm_mhz;
  std::optional<double> ms, mj_per_forward, watts, read_over_ms, power_limit_w;
  std::optional<std::string> clock_reasons, why;
};

// The run's timings (a golden keeps none: they vary run to run).
struct Times {
  std::optional<double> compile, forward_median, forward_min;
  std::optional<long long> iters;
  std::optional<std::string> how;
  std::optional<Energy> energy;
};

struct RankRecord {
  std::optional<long long> rank;
  std::optional<long long> graph_count, graph_break_count, kernel_count, recompile_count;
  std::optional<long long> device_kernel_count, aten_op_count;
  // why the run could not count what really ran
  std::optional<std::string> device_kernels_not_counted, aten_ops_not_counted;
  std::optional<std::vector<std::string>> expected_breaks;
  std::vector<Break> breaks;
  std::vector<Launch> kernels;
  std::optional<std::map<std::string, long long>> kernel_count_by_kind;
  std::vector<OutputDigest> outputs;
  std::optional<std::vector<LedgerEntry>> ledger;
  std::optional<std::vector<FastPathStatus>> fast_paths;
  std::optional<Hashes> hashes;
  std::optional<Accuracy> accuracy;
  std::optional<Recompiles> recompiles;
  std::optional<std::vector<CodegenVariant>> codegen_variants;
  std::optional<std::vector<StageApplication>> stage_applications;
  std::optional<std::vector<GemmAlgo>> gemm_algos;
  std::optional<std::vector<GemmChoice>> gemm_choices;
  std::optional<std::vector<ResidualPlacement>> residual_placement;
  std::optional<std::vector<std::string>> device_kernels_outside_launches;  // "launch: kernel"
  std::optional<Times> times_ms;
};

struct RunRecord {
  std::optional<long long> format_version;
  std::optional<std::string> repro, mode, backend, fusion, fast_paths;
  std::optional<long long> world_size, nodes;
  std::optional<Environment> env;                                  // a run
  std::optional<std::map<std::string, Environment>> environments;  // a golden
  std::vector<RankRecord> ranks;
};

// `fusegate ab`'s record of a rank (harness/run/ab_rank.h): the generic
// path's and the fast path's outputs against each other and against the
// fp64 reference (harness/tools/ab_stats.h says each figure), judged by
// harness/tools/ab.h. Not part of a RunRecord: ab writes it in place of the
// ranks (ab --json) and prove keeps some of its figures in the proof.
struct AbWorst {  // one of the elements farthest from fp64
  std::optional<long long> index;
  std::optional<std::vector<long long>> at;
  std::optional<double> fast, generic, fp64;
};

struct AbOutput {
  std::string name;
  std::optional<bool> replicated, identical;
  std::optional<std::string> dtype, exact_generic, exact_fast;
  std::optional<long long> numel, differing, nonfinite_fast;
  std::optional<double> max_abs_fast_vs_generic, max_abs_generic, max_abs_fast, rel_l2_generic, rel_l2_fast;
  // ulps by bin ("0", "1", "2", "3-4", "5-8", "9-16", "17-64", ">64")
  std::optional<std::map<std::string, long long>> ulps_fast_vs_generic, ulps_fast_vs_fp64, ulps_generic_vs_fp64;
  std::vector<AbWorst> worst;
};

struct AbRankRecord {
  std::optional<long long> rank, kernel_count_generic, kernel_count_fast;
  std::optional<std::vector<FastPathStatus>> fast_paths;
  std::optional<std::string> source_hash;  // the fast path's source this rank ran
  std::optional<std::vector<AbOutput>> ab;
};

// A value of the wrong type, named by its JSON path
// ("ranks[0].kernels[1].name") so that a loader can point at its line.
struct RecordError : std::runtime_error {
  RecordError(std::string path, std::string problem)
      : std::runtime_error(path + ": " + problem), path(std::move(path)), problem(std::move(problem)) {}
  std::string path;     // "ranks[0].kernels[1].name"
  std::string problem;  // "an integer, expected a string"
};

// Reads every field the types define; a field that is absent stays unset,
// keys the types do not define are left alone. A value of another type
// throws RecordError.
RunRecord from_json(const nlohmann::json& j);
// One part of a record read or written alone (a rank's record, a ledger
// entry, a fingerprint, a list of GEMM algorithms ...): instantiated for
// each type above and each list a rank record holds.
template <class T> T part_from_json(const nlohmann::json& j);
template <class T> nlohmann::json part_to_json(const T& v);
// Writes every field that is set, nothing else.
nlohmann::json to_json(const RunRecord& r);

// What the types read and write, for the schema test: for RunRecord and
// each type inside it, {"properties": {key: {"type": ...}}, "required":
// [...]}, nested types inline ("type" one of integer, number, string,
// boolean, array (with "items"), object (with "properties", or
// "additionalProperties" for a map)).
nlohmann::json type_shape();

// Ranks keyed by their id (their place where a rank lacks one), outputs by
// name: the record's order is not a promise.
std::map<long long, const RankRecord*> ranks_by_id(const RunRecord& r);
std::map<std::string, const OutputDigest*> outputs_by_name(const RankRecord& r);

}  // namespace fg::record
