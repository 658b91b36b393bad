// The fusegate command line. Exit codes: 0 pass, 1 regression, 2 bad usage
// or bad input, 125 cannot test.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <vector>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "fusion/bisect.h"
#include "fusion/errors.h"
#include "fusion/fault.h"
#include "fusion/logs.h"
#include "harness/cli/commands.h"
#include "harness/cli/flags.h"
#include "harness/cli/process.h"
#include "harness/tools/export.h"
#include "harness/tools/fuzz.h"
#include "harness/tools/minify.h"
#include "harness/record/golden.h"
#include "harness/record/compare.h"
#include "harness/record/files.h"
#include "harness/record/quarantine.h"
#include "harness/run/environment.h"
#include "harness/run/run.h"
#include "fusion/fastpaths/catalog.h"
#include "repros/registry.h"

#ifndef FUSEGATE_SOURCE_DIR
#define FUSEGATE_SOURCE_DIR "."
#endif

namespace {

using fg::cli::batch_depth;
using fg::cli::require_writable_dir;
using fg::cli::require_writable_file;
using fg::cli::settle_fuzz_options;
using fg::cli::command_batch;

}  // namespace

// The command line, parsed and run; errors as exceptions (entry.cpp turns
// them into messages and exit codes).
int fg::cli::run_main(int argc, char** argv) {
  using namespace fg;
  CLI::App app{"fusegate: a CI gate and compile-invariant harness for tensor-parallel transformer blocks"};
  app.require_subcommand(1);
  Selection sel;
  // the defaults are this build's source tree, wherever the command runs
  // from: --help says so, and check and bless name the folder they used
  const std::string default_goldens = std::string(FUSEGATE_SOURCE_DIR) + "/golden";
  const std::string default_repros = std::string(FUSEGATE_SOURCE_DIR) + "/repros/fg";
  sel.golden_dir = default_goldens;
  std::vector<std::string> extra_dirs;
  // Options arrive as text and are parsed once, below, into their enums
  // (fusion/options.h): bad values are bad input (exit 2) with one message.
  std::string backend_text = "cpu", fusion_text = "default", mode_text = "C", fast_text = "proven";
  std::vector<std::string> mode_texts;
  std::vector<std::string> required;
  auto add_fast = [&](CLI::App* c) {
    c->add_option("--fast-paths", fast_text,
                  "none, proven, all or NAME[,NAME]: fast paths asked for; each runs only with a valid proof")
        ->capture_default_str();
  };
  auto add_require = [&](CLI::App* c) {
    c->add_option("--require-fast-path", required, "fail (exit 1) unless this fast path runs (repeatable)")
        ->allow_extra_args(false);
  };
  const std::string golden_help = "folder of golden files and proofs (default: " + default_goldens +
                                  ", this build's source tree)";
  const std::string repro_help = "a folder of .fg repros, in place of the shipped " + default_repros +
                                 " (repeatable); the C++ repros are always there";
  double max_memory_gib = 0;
  auto add_common = [&](CLI::App* c) {
    c->add_option("--golden-dir", sel.golden_dir, golden_help);
    c->add_option("--repro-dir", extra_dirs, repro_help)->allow_extra_args(false);
    c->add_option("--timeout", sel.timeout_s, "seconds a run may take before its ranks are stopped")->capture_default_str();
    c->add_option("--backend", backend_text, "cpu or cuda")->capture_default_str();
    c->add_option("--max-memory", max_memory_gib,
                  "GiB of host memory a run may be estimated to need (cpu; default: the machine's MemTotal)");
  };
  // across nodes, as torchrun: every node runs the same command
  auto add_nodes = [&](CLI::App* c, NodeSpec* n) {
    c->add_option("--nnodes", n->nnodes, "nodes the world's ranks are spread over (as torchrun)")
        ->capture_default_str();
    c->add_option("--node-rank", n->node_rank,
                  "this node (0 serves the store, gathers the records, decides and writes)")
        ->capture_default_str();
    c->add_option("--master-addr", n->master_addr, "node 0's address")->capture_default_str();
    c->add_option("--master-port", n->master_port, "the store's port on node 0 (needed with --nnodes > 1)");
  };
  auto add_filters = [&](CLI::App* c) {
    c->add_option("repros", sel.repros, "repros (default: all)");
    // a repeatable option takes one value a time, so that the repros may
    // follow it ("--world-size 1 --world-size 2 NAME": before, CLI11 took
    // NAME as a second world size and failed to convert it)
    c->add_option("--mode", mode_texts, "A, B or C (repeatable; default all)")->allow_extra_args(false);
    c->add_option("--world-size", sel.worlds, "world sizes (repeatable; default 1 2 4)")->allow_extra_args(false);
    c->add_option("--fusion", fusion_text, "default, max-autotune or none")->capture_default_str();
    add_common(c);
    add_fast(c);
    add_require(c);
  };

  auto* list = app.add_subcommand("list", "list the repros");
  add_common(list);

  std::string ops_name;
  auto* ops = app.add_subcommand("ops", "the .fg ops: what each reads and gives, its attributes with their values "
                                        "and defaults (docs/OPS.md)");
  ops->add_option("name", ops_name, "one op");

  RunSpec spec;
  std::string out_file;
  auto* run = app.add_subcommand("run", "run one repro and print its RunRecord");
  std::string graph_path;
  // a .fg file as a repro: its folder joins the repro folders, its stem names it
  auto add_graph = [&](CLI::App* c, CLI::Option* repro_opt) {
    c->add_option("--graph", graph_path, "an .fg file to run as a repro (a fuzz finding)")->excludes(repro_opt);
  };
  auto* run_repro = run->add_option("repro", spec.repro, "repro name");
  add_graph(run, run_repro);
  run->add_option("--mode", mode_text, "A, B or C")->capture_default_str();
  run->add_option("--world-size", spec.world, "ranks")->capture_default_str();
  run->add_option("--fusion", fusion_text, "default, max-autotune or none")->capture_default_str();
  run->add_option("--out", out_file, "write the record here instead of stdout");
  run->add_option("--iters", spec.iters, "timed forwards after warm-up")->capture_default_str();
  run->add_flag("--cuda-graphs", spec.cuda_graphs, "time CUDA-graph replays of a one-graph forward (cuda)");
  run->add_option("--warmup-ms", spec.warmup_ms,
                  "untimed forwards for about this long before the timed ones (as many as fill it at the pace of "
                  "ten run as the timed ones run, on cuda CUDA-graph replays with --cuda-graphs), run as they run: "
                  "a GPU under sustained load settles at its power cap")
      ->capture_default_str();
  run->add_option("--profile", spec.profile,
                  "cuda: write each device kernel's median time over 20 more steps (at most --iters) run as the "
                  "timed ones, with its spread, GB/s or TFLOP/s against the device's ceilings, and the idle gaps "
                  "(JSON)");
  run->add_option("--save-tensors", spec.save_tensors, "write rank 0's inputs and the outputs here (raw, tensors.json)");
  std::string run_batch_file;
  run->add_option("--batch", run_batch_file,
                  "FILE ('-': standard input) of runs, one a line (the arguments after `run`), run in this one "
                  "process, each framed as explain --batch frames its cases ('#fusegate-run-case N exit C out "
                  "BYTES err BYTES'; no other run argument with it)")
      ->excludes(run_repro);
  add_nodes(run, &spec);
  add_common(run);
  add_fast(run);
  add_require(run);

  CheckOptions copts;
  auto* check = app.add_subcommand("check", "run and compare with the goldens; print verdicts");
  add_filters(check);
  add_nodes(check, &sel.nodes);
  check->add_flag("--strict", copts.strict, "IMPROVED and MISSING fail too (the ratchet)");
  check->add_flag("--exact", copts.exact,
                  "exact digests must be compared: a golden that does not hold this machine's environment fails "
                  "(without it, such a golden is compared by fingerprint, with a note)");
  check->add_option("--junit", copts.junit, "write JUnit XML here");
  check->add_option("--markdown", copts.markdown, "write a Markdown summary here");
  check->add_option("--records", copts.records_dir, "keep every RunRecord in this folder");
  check->add_flag("--verbose", copts.verbose, "every line of every finding (a long diff of decisions is cut to its first)");
  check->add_option("--as-of", copts.as_of,
                    "judge quarantine expiry at this date, YYYY-MM-DD (bisecting old commits); default today (UTC)");

  std::string why;
  auto* bless = app.add_subcommand("bless", "run and write the goldens (atomically), showing the diff");
  add_filters(bless);
  add_nodes(bless, &sel.nodes);
  bless->add_option("--why", why, "why the goldens change (printed)");
  bool bless_missing = false;
  bless->add_flag("--missing", bless_missing, "only the selected checks that have no golden file yet");
  bool bless_verbose = false;
  bless->add_flag("--verbose", bless_verbose, "each golden's whole diff (a new one whole), not its first lines");

  std::string graph_file, dot_dir, erepro;
  int eworld = 1;
  bool svg = false;
  auto* explain = app.add_subcommand("explain", "compile a repro or a .fg graph (no run) and show every step, "
                                                "decision and kernel");
  auto* erepro_opt = explain->add_option("repro", erepro, "repro name");
  explain->add_option("--graph", graph_file, ".fg file")->excludes(erepro_opt);
  explain->add_option("--mode", mode_text, "B or C (repro only)")->capture_default_str();
  explain->add_option("--world-size", eworld, "world size (repro only)")->capture_default_str();
  explain->add_option("--repro-dir", extra_dirs, repro_help)->allow_extra_args(false);
  explain->add_option("--backend", backend_text, "cpu or cuda: the code printer and backend passes")->capture_default_str();
  explain->add_option("--fusion", fusion_text, "default, max-autotune or none")->capture_default_str();
  explain->add_option("--dot", dot_dir, "write Graphviz DOT before/after fusion here");
  explain->add_flag("--svg", svg, "also render the DOT files with Graphviz");
  explain->add_option("--golden-dir", sel.golden_dir, golden_help);
  add_fast(explain);
  std::string batch_file;
  explain->add_option("--batch", batch_file,
                      "FILE ('-': standard input) of explain cases, one a line (the arguments after `explain`, "
                      "separated by spaces), run in this one process; each case is written as a line "
                      "'#fusegate-explain-case N exit C out BYTES err BYTES' and then that many bytes of its "
                      "standard output and of its standard error (no other explain argument with it)")
      ->excludes(erepro_opt);

  std::string ab_json;
  auto* abc = app.add_subcommand("ab", "generic path vs a fast path vs fp64 on the same inputs, per output and rank");
  abc->add_option("--fast-path", spec.ab_fast_path, "the fast path")->required();
  abc->add_option("--repro", spec.repro, "repro name")->required();
  abc->add_option("--world-size", spec.world, "ranks")->capture_default_str();
  abc->add_option("--mode", mode_text, "B or C")->capture_default_str();
  abc->add_option("--json", ab_json, "write the full report here");
  add_common(abc);

  std::string prove_name;
  std::vector<int> prove_worlds;
  auto* prove = app.add_subcommand("prove", "A/B a fast path on every repro it matches at each world size; write "
                                            "its proof when all pass");
  prove->add_option("--fast-path", prove_name, "the fast path")->required();
  prove->add_option("--world-size", prove_worlds, "world sizes to prove (repeatable)")->required()->allow_extra_args(false);
  add_common(prove);
  add_nodes(prove, &sel.nodes);

  std::string proofs_backend = "all";
  bool proofs_strict = false;
  auto* proofs = app.add_subcommand("proofs", "list every fast path's proof files (cpu; cuda, per GPU model) and "
                                              "whether this tree takes them");
  proofs->add_option("--golden-dir", sel.golden_dir, golden_help);
  proofs->add_option("--backend", proofs_backend, "cpu, cuda or all")->capture_default_str();
  proofs->add_flag("--strict", proofs_strict, "exit 1 when a proof file is stale, or missing where its fast path would run");

  BisectOptions bisect_opts;
  auto* bisect = app.add_subcommand("bisect", "find the stage and the application of its rule (a decomposition, "
                                              "lowering, fusion decision, rewrite, fast path site or codegen "
                                              "variant) that makes a repro fail");
  auto* bisect_repro = bisect->add_option("repro", spec.repro, "repro name");
  add_graph(bisect, bisect_repro);
  bisect->add_option("--mode", mode_text, "B or C")->capture_default_str();
  bisect->add_option("--world-size", spec.world, "ranks")->capture_default_str();
  bisect->add_option("--fusion", fusion_text, "default, max-autotune or none")->capture_default_str();
  bisect->add_option("--json", bisect_opts.json_out, "write the search and its result here");
  bisect->add_option("--predicate", bisect_opts.predicate,
                     "what is bad: auto (how the run fails), accuracy, crash, hang (within --timeout), ranks "
                     "(they compile differently), kernels or graphs (against the golden)")->capture_default_str();
  add_common(bisect);
  add_fast(bisect);

  std::string export_out;
  auto* exp = app.add_subcommand("export", "write a repro as a .fg text graph (mode C at world size 1, its inputs' "
                                           "layouts and values; its shapes hold at every world size it runs at)");
  exp->add_option("repro", spec.repro, "repro name")->required();
  exp->add_option("--out", export_out, "the .fg file (default: standard output)");
  exp->add_option("--repro-dir", extra_dirs, repro_help)->allow_extra_args(false);

  MinifySpec mspec;
  auto* minify = app.add_subcommand("minify", "shrink a failing repro to the smallest .fg that fails the same way "
                                              "(in mode B or C; the same verdict class, and for a mismatch the same output)");
  add_graph(minify, minify->add_option("repro", spec.repro, "repro name"));
  minify->add_option("--mode", mode_text, "B or C")->capture_default_str();
  minify->add_option("--world-size", spec.world, "ranks")->capture_default_str();
  minify->add_option("--fusion", fusion_text, "default, max-autotune or none")->capture_default_str();
  minify->add_option("--out", mspec.out, "the minified .fg (default: REPRO.min.fg here)");
  minify->add_option("--predicate", mspec.predicate,
                     "judge each smaller graph with this command instead of running it: CMD FILE.fg exits 0 "
                     "where the graph still shows what is sought, 1 where not (bench/inductor_parity.py minimize "
                     "gives \"its kernel count differs from Inductor's\")");
  add_common(minify);
  add_fast(minify);

  FuzzOptions fopts;
  cli::FuzzFlags fflags;
  auto* fuzz = app.add_subcommand("fuzz", "differential fuzzing: random graphs compiled under each fusion policy "
                                          "against eager and fp64; findings minimized to .fg files");
  fuzz->add_option("--seconds", fopts.seconds, "stop after this long")->capture_default_str();
  fuzz->add_option("--graphs", fopts.graphs, "or after this many graphs (0: no limit)")->capture_default_str();
  fuzz->add_option("--seed", fflags.seed, "graph i comes from seed + i (0..2^64-1)")->capture_default_str();
  fuzz->add_option("--fusion", fflags.fusion, "default, max-autotune, none or all")->capture_default_str();
  fuzz->add_option("--max-ops", fopts.max_ops, "nodes a graph adds to its inputs, at most")->capture_default_str();
  fuzz->add_option("--findings", fopts.findings_dir, "folder the minimized findings are written to")
      ->capture_default_str();
  fuzz->add_option("--max-findings", fopts.max_findings, "stop after this many findings")->capture_default_str();
  fuzz->add_option("--json", fopts.json_out, "write the summary here (JSON)");
  fuzz->add_flag("--print-graph", fopts.print_graphs, "print each graph (.fg text) on stderr before it runs");
  fuzz->add_option("--emit", fopts.emit_dir, "write the --graphs N graphs here as fuzz_SEED.fg, run nothing");
  fuzz->add_option("--backend", backend_text, "cpu or cuda")->capture_default_str();
  fuzz->add_option("--world-size", fflags.worlds,
                   "ranks a graph runs on: 1, 2, ... or a list (1,2): job j runs at the (j mod n)-th")
      ->capture_default_str();
  fuzz->add_option("--jobs", fopts.jobs, "jobs at once, each its own processes (job j takes graphs j, j + J, ...)")
      ->capture_default_str();
  fuzz->add_option("--timeout", fopts.timeout_s, "seconds a collective may wait; a job silent 3x this long is hung")
      ->capture_default_str();
  fuzz->add_option("--golden-dir", sel.golden_dir, golden_help);
  fuzz->add_option("--graph", fflags.graph,
                   "judge this .fg (a finding, after a fix) as a generated graph is, once at each world size")
      ->excludes("--graphs")
      ->excludes("--seed")
      ->excludes("--max-ops")
      ->excludes("--jobs");
  add_fast(fuzz);
  FuzzJobSpec fjob;
  auto* fuzzjob = app.add_subcommand("_fuzzjob", "(internal) one rank of a fuzz job");
  fuzzjob->group("");
  fuzzjob->add_option("--dir", fjob.dir)->required();
  fuzzjob->add_option("--job", fjob.job)->required();
  fuzzjob->add_option("--life", fjob.life)->required();
  fuzzjob->add_option("--from", fjob.first)->required();
  fuzzjob->add_option("--seconds-left", fjob.seconds_left)->required();
  fuzzjob->add_option("--rank", fjob.rank)->required();
  fuzzjob->add_option("--port", fjob.port)->required();

  int rank = 0, port = 0;
  std::string wout;
  auto* worker = app.add_subcommand("_worker", "(internal) one rank of a run");
  worker->group("");
  worker->add_option("repro", spec.repro)->required();
  worker->add_option("--mode", mode_text);
  worker->add_option("--world-size", spec.world);
  worker->add_option("--fusion", fusion_text);
  worker->add_option("--rank", rank);
  worker->add_option("--port", port);
  worker->add_option("--out", wout);
  worker->add_option("--iters", spec.iters);
  worker->add_flag("--cuda-graphs", spec.cuda_graphs);
  worker->add_option("--warmup-ms", spec.warmup_ms);
  worker->add_option("--profile", spec.profile);
  worker->add_option("--save-tensors", spec.save_tensors);
  worker->add_option("--fast-paths", fast_text);
  worker->add_option("--ab", spec.ab_fast_path);
  worker->add_option("--master-addr", spec.master_addr);
  worker->add_option("--nnodes", spec.nnodes);
  worker->add_option("--node-rank", spec.node_rank);
  worker->add_option("--store-prefix", spec.store_prefix);
  add_common(worker);

  if (argc > 1 && argv[1][0] != '-') {
    std::string cmd = argv[1];
    bool known = false;
    for (const auto* sub : app.get_subcommands([](CLI::App*) { return true; })) known = known || sub->get_name() == cmd;
    if (!known) user_error("unknown command '" + cmd + "'; commands: list, ops, run, check, bless, explain, ab, prove, proofs, bisect, minify, export, fuzz (see --help)");
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  {
    // what a bless hint must repeat for the same checks to be blessed
    auto quoted = [](const std::string& s) {
      bool plain = !s.empty();
      for (char c : s) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || std::strchr("/._-+=:,", c));
      if (plain) return s;
      std::string q = "'";
      for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      return q + "'";
    };
    for (const auto& d : extra_dirs) sel.repeat_flags += " --repro-dir " + quoted(d);
    if (sel.golden_dir != default_goldens)
      sel.repeat_flags += " --golden-dir " + quoted(sel.golden_dir);
    if (sel.timeout_s != 120) sel.repeat_flags += " --timeout " + std::to_string(sel.timeout_s);
    if (sel.nodes.nnodes > 1)  // bless_command() gives --nnodes; each node adds its --node-rank
      sel.repeat_flags += " --master-addr " + quoted(sel.nodes.master_addr) + " --master-port " +
                          std::to_string(sel.nodes.master_port) + " (on every node, each with its --node-rank)";
  }
  if (*ops) {
    const std::string text = op_reference(ops_name);
    if (text.empty()) {
      std::string names;
      for (int i = 0; i < kOpCount; ++i) names += (i ? ", " : "") + std::string(op_name(static_cast<Op>(i)));
      user_error("ops: no op '" + ops_name + "'; ops: " + names);
    }
    std::cout << text;
    return 0;
  }
  // COMMAND --batch FILE: every other argument goes on the cases' lines
  auto batch_of = [](CLI::App* c, const std::string& file) {
    const std::string name = c->get_name();
    if (batch_depth > 0) user_error("a case of " + name + " --batch holds --batch");
    for (const auto* o : c->get_options())
      if (o->get_name() != "--batch" && o->get_name() != "--help" && o->count() > 0)
        user_error(name + " --batch takes its cases from " + file + ": " + o->get_name() +
                   " goes on each case's line, not beside --batch");
    return command_batch(name, file);
  };
  if (*run && run->count("--batch")) return batch_of(run, run_batch_file);
  for (const auto& d : extra_dirs) {
    // a folder that is not there checked only the shipped repros, and
    // passed (an audit, 2026-11-27)
    // (one .fg file is taken too: ranks get `run --graph FILE.fg`'s file so;
    // the shipped folder, which ranks are passed too, is not asked for by a
    // user: a build whose source tree is gone runs without it, as before)
    if (d == default_repros) continue;
    std::error_code ec;
    const bool one_graph =
        std::filesystem::path(d).extension() == ".fg" && std::filesystem::is_regular_file(d, ec);
    if (!one_graph && !std::filesystem::is_directory(d, ec))
      user_error("--repro-dir " + d + ": error: " +
                 (std::filesystem::exists(d, ec) ? "is not a folder" : "no such folder") +
                 "; name a folder of .fg repros");
  }
  if (!graph_path.empty()) {
    namespace fs = std::filesystem;
    if (fs::path(graph_path).extension() != ".fg" || !fs::is_regular_file(graph_path))
      user_error("--graph " + graph_path + ": not an .fg file");
    // the file alone (all_repros reads an .fg file named in fg_dirs), not
    // its folder, whose other graphs are none of this run's business
    extra_dirs.insert(extra_dirs.begin(), fs::absolute(graph_path).string());
    spec.repro = fs::path(graph_path).stem().string();
  }
  if ((*run || *bisect || *minify) && spec.repro.empty()) user_error("name a repro, or give --graph FILE.fg");
  // --repro-dir (or --graph) replaces the shipped folder: a repro is one
  // file, and a name two repros share is an error (all_repros)
  sel.fg_dirs = extra_dirs.empty() ? std::vector<std::string>{default_repros} : extra_dirs;
  sel.shipped_fg_dir = default_repros;
  sel.fg_dirs_given = !extra_dirs.empty();
  spec.fg_dirs = sel.fg_dirs;
  spec.timeout_s = sel.timeout_s;
  spec.golden_dir = sel.golden_dir;
  sel.fast_paths = spec.fast_paths = parse_fast_paths(fast_text);
  for (const auto& n : required)
    if (!find_fast_path(n)) user_error("--require-fast-path: unknown fast path '" + n + "'; fast paths: " + fast_path_names());
  sel.require_fast_paths = required;
  sel.backend = spec.backend = parse_backend(backend_text);
  sel.fusion = spec.fusion = parse_fusion(fusion_text);
  spec.mode = parse_mode(mode_text);
  for (const auto& m : mode_texts) sel.modes.push_back(parse_mode(m));

#ifndef FUSEGATE_FRONT
  set_max_memory_gib(max_memory_gib);
#endif
  // the environment's switches, once at the process edge: an unknown
  // FUSEGATE_LOGS view or FUSEGATE_FAULT item is bad input before any rank starts
  check_log_views();
  fault_active("");
  bisect_limits();  // a bad FUSEGATE_BISECT is bad input here, not in every rank
  if (!fault_argument("fastpath_edit").empty() && !find_fast_path(fault_argument("fastpath_edit")))
    user_error("FUSEGATE_FAULT: fastpath_edit:" + fault_argument("fastpath_edit") + " names no fast path; fast paths: " +
               fast_path_names());
#ifndef FUSEGATE_FRONT
  if (*run || *check || *bless || *abc || *prove || *bisect || *fuzz || *minify)
    if (const std::string why = aten_capability_problem(); !why.empty()) cannot_test(why);
#endif
  // every output path is checked before anything runs: a report that cannot
  // be written must not turn a regression's exit 1 into a late exit 2
  if (*run && !out_file.empty()) require_writable_file("--out", out_file);
  if (*check) {
    if (!copts.junit.empty()) require_writable_file("--junit", copts.junit);
    if (!copts.markdown.empty()) require_writable_file("--markdown", copts.markdown);
    if (!copts.records_dir.empty()) require_writable_dir("--records", copts.records_dir);
    if (!copts.as_of.empty() && parse_date(copts.as_of).empty())
      user_error("--as-of '" + copts.as_of + "' is not a date YYYY-MM-DD");
  }
  if (*explain && !dot_dir.empty()) require_writable_dir("--dot", dot_dir);

  if (*list) {
    // with --backend, only the repros that run there (what a script such
    // as ci/premerge.sh checks on the cpu)
    const bool only = list->count("--backend") > 0;
    for (const auto& r : all_repros(sel.fg_dirs))
      if (!only || !r.only_backend || *r.only_backend == sel.backend)
        std::cout << r.name << "\t" << r.description << "\n";
    return 0;
  }
  if (*explain) {
    if (explain->count("--batch")) return batch_of(explain, batch_file);
    if (!graph_file.empty())
      return cmd_explain(graph_file, sel.fusion, dot_dir, svg, sel.backend, sel.fast_paths, sel.golden_dir);
    if (erepro.empty()) user_error("explain needs a repro name or --graph FILE.fg");
    auto repros = all_repros(sel.fg_dirs);
    const Repro* r = find_repro(repros, erepro);
    if (!r) user_error("unknown repro '" + erepro + "'; known repros: " + repro_names(repros));
    return cmd_explain_repro(*r, spec.mode, eworld, sel.fusion, dot_dir, svg, sel.backend, sel.fast_paths,
                             sel.golden_dir);
  }
#ifdef FUSEGATE_FRONT
  // the front takes explain, ops and list alone; every other command line
  // went to fusegate-full before it was parsed (harness/cli/entry.cpp)
  internal_error("the front was given a command it hands over: " + std::string(argc > 1 ? argv[1] : ""));
#else
  if (*worker) return worker_main(spec, rank, port, wout);
  if (*fuzzjob) return fuzz_job_main(fjob);
  install_stop_handlers();
  if ((*check || *bless) && sel.golden_dir == default_goldens) {
    // a binary run from another checkout reads, and blesses, its own build's
    // tree: said when the working folder is inside another fusegate tree
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path ours = fs::weakly_canonical(FUSEGATE_SOURCE_DIR, ec);
    for (fs::path p = fs::current_path(ec); !p.empty(); p = p.parent_path()) {
      if (fs::exists(p / "harness" / "RECORD.md", ec) && fs::is_directory(p / "golden", ec)) {
        if (fs::weakly_canonical(p, ec) != ours)
          std::cerr << "fusegate: note: the working folder is inside the fusegate tree " << p.string()
                    << ", but this fusegate was built from " << ours.string() << " and uses its goldens ("
                    << default_goldens << "); for this tree's, pass --golden-dir " << (p / "golden").string()
                    << " (and --repro-dir " << (p / "repros" / "fg").string() << ")\n";
        break;
      }
      if (p == p.parent_path()) break;
    }
  }
  // temporaries of a bless or prove that was killed mid-write
  if (*check || *bless || *prove) sweep_stale_writes(sel.golden_dir);
  if (*run) {
    RunOutcome o = launch(spec);
    if (o.exit_code != 0) {
      std::cerr << "fusegate run: " << o.message << "\n";
      return o.exit_code;
    }
    if (spec.node_rank != 0) {  // node 0 writes the record and decides
      std::cerr << "fusegate run: " << o.message << "\n";
      return 0;
    }
    std::string text = dump_record(o.record);
    if (out_file.empty()) std::cout << text;
    else write_atomic(out_file, text);
    int rc = 0;
    // what a run must hold whatever a golden says (accuracy, mode C's one
    // graph, ranks that agree): a record that fails it is exit 1, as check's
    for (const Finding& f : invariant_findings(o.record))
      if (f.kind == VerdictKind::Fail) {
        std::cerr << "fusegate run: FAIL: " << f.message << "\n";
        rc = 1;
      }
    for (const auto& name : required)
      for (const auto& [rank, rk] : record::ranks_by_id(o.record))
        for (const record::FastPathStatus& f : rk->fast_paths.value_or(std::vector<record::FastPathStatus>{}))
          if (f.name == name && f.status != "used") {
            std::cerr << "fusegate run: required fast path " << name << " did not run on rank " << rank << ": "
                      << f.status << "\n";
            rc = 1;
          }
    return rc;
  }
  if (*check) return cmd_check(sel, copts);
  if (*bless) return cmd_bless(sel, why, bless_missing, bless_verbose);
  if (*abc) {
    if (!ab_json.empty()) require_writable_file("--json", ab_json);
    return cmd_ab(spec, ab_json);
  }
  if (*prove) return cmd_prove(prove_name, prove_worlds, sel);
  if (*proofs) return cmd_proofs(sel.golden_dir, proofs_backend, proofs_strict);
  if (*fuzz) {
    fopts.backend = sel.backend;
    fopts.golden_dir = sel.golden_dir;
    fflags.seconds_given = fuzz->count("--seconds") > 0;
    fflags.graphs_given = fuzz->count("--graphs") > 0;
    fflags.jobs_given = fuzz->count("--jobs") > 0;
    if (fflags.seconds_given) fflags.seconds_text = fuzz->get_option("--seconds")->as<std::string>();
    fflags.fast_paths = fast_text;
    settle_fuzz_options(fopts, fflags);
    return cmd_fuzz(fopts);
  }

  if (*exp) {
    if (!export_out.empty()) require_writable_file("--out", export_out);
    auto repros = all_repros(sel.fg_dirs);
    const Repro* r = find_repro(repros, spec.repro);
    if (!r) user_error("unknown repro '" + spec.repro + "'; known repros: " + repro_names(repros));
    return cmd_export(*r, export_out);
  }
  if (*minify) {
    if (!mspec.out.empty()) require_writable_file("--out", mspec.out);
    mspec.repro = graph_path.empty() ? spec.repro : "";
    mspec.graph_file = graph_path;
    mspec.fg_dirs = sel.fg_dirs;
    mspec.world = spec.world;
    mspec.mode = spec.mode;
    mspec.fusion = sel.fusion;
    mspec.backend = sel.backend;
    mspec.fast_paths = fast_text;
    mspec.golden_dir = sel.golden_dir;
    mspec.timeout_s = sel.timeout_s;
    return cmd_minify(mspec);
  }
  if (*bisect) {
    if (!bisect_opts.json_out.empty()) require_writable_file("--json", bisect_opts.json_out);
    spec.iters = 1;
    return cmd_bisect(spec, bisect_opts);
  }
  return 2;
#endif
}
