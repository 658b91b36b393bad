// fusegate ab: the generic path against one fast path and the fp64
// reference on the same inputs, rank by rank; fusegate prove: that A/B over
// every repro the fast path matches at each world size asked for, written
// as golden/proofs/cpu/NAME.json or golden/proofs/cuda/<GPU model>/NAME.json
// when every case passes.
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include "fusion/errors.h"
#include "harness/tools/ab.h"
#include "harness/cli/commands.h"
#include "harness/record/golden.h"
#include "harness/record/files.h"
#include "harness/record/json_read.h"
#include "harness/run/nodes.h"
#include "harness/record/proofs.h"
#include "harness/run/run.h"
#include "kernels/cpu/jit.h"
#include "fusion/fastpaths/catalog.h"
#include "kernels/fastpaths/sources.h"
#include "repros/registry.h"

namespace fg {

using nlohmann::json;

namespace {

const FastPathSpec& known_fast_path(const std::string& name) {
  if (name.empty()) user_error("--fast-path is required; fast paths: " + fast_path_names());
  const FastPathSpec* f = find_fast_path(name);
  if (!f) user_error("unknown fast path '" + name + "'; fast paths: " + fast_path_names());
  return *f;
}

// The A/B of one repro at one world size: exit code and the record.
struct AbRun {
  int exit_code = 0;
  std::string message;
  record::RunRecord header;                // the run's header and environment (no ranks)
  std::vector<record::AbRankRecord> ranks;
  AbVerdict verdict;
  std::vector<std::string> shape_classes;
};

// `spec` names the repro, mode, world size, backend and fast path
// (ab_fast_path); it runs as job `index` of `nodes`.
AbRun run_ab(const FastPathSpec& fp, const RunSpec& spec, CommandNodes& nodes, int index) {
  AbRun out;
  RunOutcome run = nodes.launch_job(spec, index);
  nodes.go_on(index);
  if (run.exit_code != 0) {
    out.exit_code = run.exit_code;
    out.message = run.message;
    return out;
  }
  out.header = run.record;
  out.ranks = run.ab_ranks;
  // the fast path must have run on every rank, or there is nothing to compare
  std::set<std::string> classes;
  for (const record::AbRankRecord& r : out.ranks) {
    const long long rank = r.rank.value_or(-1);
    std::string status = "missing from the record";
    for (const record::FastPathStatus& f : r.fast_paths.value_or(std::vector<record::FastPathStatus>{}))
      if (f.name == fp.name) {
        status = f.status;
        for (const std::string& c : f.shape_classes.value_or(std::vector<std::string>{})) classes.insert(c);
      }
    if (status != "used") {
      out.exit_code = 2;
      out.message = "fast path " + fp.name + " does not apply to " + spec.repro + " in mode " +
                    mode_letter(spec.mode) + " at world size " + std::to_string(spec.world) + " (rank " +
                    std::to_string(rank) + ": " + status +
                    "); it matches: " + fp.pattern;
      return out;
    }
    if (r.source_hash.value_or("") != fast_path_source_hash(fp.name, spec.backend)) {
      out.exit_code = 125;
      out.message = "rank " + std::to_string(rank) + " ran another source of " + fp.name + " than this process has";
      return out;
    }
  }
  out.shape_classes.assign(classes.begin(), classes.end());
  out.verdict = ab_verdict(out.ranks, fp.name, fp.generic_order(spec.backend));
  return out;
}

void print_ab(const FastPathSpec& fp, const RunSpec& spec, const AbRun& r) {
  std::cout << "fusegate ab: " << fp.name << " on " << spec.repro << ", mode " << mode_letter(spec.mode)
            << ", world size " << spec.world << ", " << backend_name(spec.backend) << "\n";
  std::cout << "  contract: " << fp.contract << "\n";
  std::string classes;
  for (const auto& c : r.shape_classes) classes += (classes.empty() ? "" : "; ") + c;
  std::cout << "  shape class: " << classes << "\n";
  auto count = [](const std::optional<long long>& n) { return n ? std::to_string(*n) : std::string(); };
  const auto r0 = std::min_element(r.ranks.begin(), r.ranks.end(), [](const auto& a, const auto& b) {
    return a.rank.value_or(-1) < b.rank.value_or(-1);
  });
  if (r0 != r.ranks.end())
    std::cout << "  launches: generic " << count(r0->kernel_count_generic) << ", with the fast path "
              << count(r0->kernel_count_fast) << " (rank 0)\n";
  std::cout << ab_table(r.ranks);
  std::cout << "  rule: " << r.verdict.rule << "\n";
  for (const auto& f : r.verdict.failures) std::cout << "  FAIL: " << f << "\n";
  std::cout << "verdict: " << (r.verdict.pass ? "PASS" : "FAIL") << "\n";
}

int prove_jobs(const FastPathSpec& fp, const std::set<int>& worlds, const Selection& sel,
               const std::vector<NodeJob>& jobs, CommandNodes& nodes, std::string* said);

}  // namespace

int cmd_ab(const RunSpec& spec, const std::string& json_out) {
  const FastPathSpec& fp = known_fast_path(spec.ab_fast_path);
  if (spec.repro.empty()) user_error("ab needs --repro NAME (see `fusegate list`)");
  if (spec.mode == Mode::Eager) user_error("ab compares compiled graphs: use --mode B or C (eager runs no fast path)");
  CommandNodes one(NodeSpec{}, spec.timeout_s);
  AbRun r = run_ab(fp, spec, one, 0);
  if (r.exit_code != 0) {
    std::cerr << "fusegate ab: " << r.message << "\n";
    return r.exit_code;
  }
  print_ab(fp, spec, r);
  if (!json_out.empty()) {
    // the run's header, each rank's figures in place of its record, the verdict
    json rep = record::to_json(r.header);
    rep["ranks"] = record::part_to_json(r.ranks);
    rep["fast_path"] = fp.name;
    rep["verdict"] = {{"pass", r.verdict.pass}, {"rule", r.verdict.rule}, {"failures", r.verdict.failures}};
    write_atomic(json_out, dump_record(rep));
  }
  return r.verdict.pass ? 0 : 1;
}

int cmd_prove(const std::string& name, const std::vector<int>& worlds_in, const Selection& sel) {
  const FastPathSpec& fp = known_fast_path(name);
  if (worlds_in.empty()) user_error("prove needs --world-size N (repeatable): a proof covers exactly those it ran");
  std::set<int> worlds(worlds_in.begin(), worlds_in.end());
  for (int w : worlds)
    if (w % sel.nodes.nnodes != 0)
      user_error("--world-size " + std::to_string(w) + " is not a multiple of --nnodes " +
                 std::to_string(sel.nodes.nnodes) + " (each node starts world size / nnodes ranks)");
  if (fp.one_host && sel.nodes.nnodes > 1)
    user_error("fast path " + name + " needs every rank on one host (its exchange is " +
               "over peer memory): it runs on no ranks spread over --nnodes " + std::to_string(sel.nodes.nnodes) +
               ", so there it has nothing to prove; prove it on one node");
  auto repros = all_repros(sel.fg_dirs);
  // every repro of this backend the pattern matches, per world size: all
  // found before anything runs, so a world size that matches nothing is bad
  // input before any A/B
  std::map<int, std::vector<const Repro*>> matched_at;
  for (int w : worlds) {
    for (const Repro& r : repros) {
      if (r.only_backend && *r.only_backend != sel.backend) continue;
      if (w < r.min_world || w > r.max_world) continue;
      RunSpec probe;
      probe.repro = r.name;
      probe.world = w;
      probe.backend = sel.backend;
      probe.fg_dirs = sel.fg_dirs;
      try {
        validate_spec(probe);
      } catch (const UserError&) {
        continue;  // a world size the repro's shards do not allow
      }
      if (!dry_fast_path_sites(r, w, sel.backend, name).empty()) matched_at[w].push_back(&r);
    }
    if (matched_at[w].empty())
      user_error("fast path " + name + " matches no repro at world size " + std::to_string(w) + " on " +
                 backend_name(sel.backend) + " (it matches: " + fp.pattern + "); nothing to prove there");
  }
  std::vector<NodeJob> jobs;
  for (int w : worlds)
    for (const Repro* r : matched_at[w]) {
      NodeJob j;
      j.spec.repro = r->name;
      j.spec.world = w;
      j.spec.backend = sel.backend;
      j.spec.fg_dirs = sel.fg_dirs;
      j.spec.golden_dir = sel.golden_dir;
      j.spec.timeout_s = sel.timeout_s;
      j.spec.ab_fast_path = name;
      static_cast<NodeSpec&>(j.spec) = sel.nodes;
      j.id = name + "/" + r->name + "/w" + std::to_string(w);
      jobs.push_back(j);
    }
  // across nodes every node runs its ranks of each A/B; node 0 judges and
  // writes the proof (a one-host fast path does not apply there: its A/B
  // says so, exit 2)
  CommandNodes nodes(sel.nodes, sel.timeout_s);
  if (!nodes.leader()) return follow_jobs(nodes, jobs, "prove");
  return lead_jobs(nodes, [&] {
    nodes.agree("prove", job_ids(jobs));
    std::string said;  // the verdict, printed here and handed to the other nodes
    const int rc = prove_jobs(fp, worlds, sel, jobs, nodes, &said);
    std::cout << said;
    nodes.hand_back(rc, said);
    return rc;
  });
}

namespace {

int prove_jobs(const FastPathSpec& fp, const std::set<int>& worlds, const Selection& sel,
               const std::vector<NodeJob>& jobs, CommandNodes& nodes, std::string* said) {
  const std::string& name = fp.name;
  json cases = json::array();
  std::set<std::string> all_classes;
  std::optional<record::Environment> env;
  std::vector<std::string> failed;
  int cannot = 0;
  for (size_t i = 0; i < jobs.size(); ++i) {
    const RunSpec& spec = jobs[i].spec;
    const std::string where = spec.repro + " w" + std::to_string(spec.world);
    std::cerr << "fusegate prove: " << name << " on " << spec.repro << " at world size " << spec.world << "\n";
    AbRun a = run_ab(fp, spec, nodes, static_cast<int>(i));
    if (a.exit_code != 0) {
      std::cerr << "fusegate prove: " << where << ": " << a.message << "\n";
      ++cannot;
      continue;
    }
    print_ab(fp, spec, a);
    if (!env) env = a.header.env;
    // what the proof keeps of each output's figures (proof.schema.json)
    json outs = json::array();
    for (const record::AbRankRecord& rr : a.ranks)
      for (const record::AbOutput& o : rr.ab.value_or(std::vector<record::AbOutput>{})) {
        json kept = {{"name", o.name}, {"rank", rr.rank.value_or(-1)}};
        if (o.identical) kept["identical"] = *o.identical;
        if (o.rel_l2_generic) kept["rel_l2_generic"] = *o.rel_l2_generic;
        if (o.rel_l2_fast) kept["rel_l2_fast"] = *o.rel_l2_fast;
        if (o.max_abs_fast_vs_generic) kept["max_abs_fast_vs_generic"] = *o.max_abs_fast_vs_generic;
        outs.push_back(kept);
      }
    if (!a.verdict.pass) {
      for (const auto& f : a.verdict.failures) failed.push_back(where + ": " + f);
      continue;
    }
    for (const auto& c : a.shape_classes) {
      all_classes.insert(c);
      cases.push_back({{"repro", spec.repro},
                       {"world_size", spec.world},
                       {"shape_class", c},
                       {"verdict", "pass"},
                       {"rule", a.verdict.rule},
                       {"outputs", outs}});
    }
  }
  // a cuda proof goes into the folder of the GPU model it ran on
  const std::string gpu = env && env->count("gpu") ? env->at("gpu") : "";
  const std::string path =
      sel.backend == Backend::Cuda && gpu.empty()
          ? (std::filesystem::path(sel.golden_dir) / "proofs" / "cuda" / "<this GPU>" / (name + ".json")).string()
          : proof_path(sel.golden_dir, backend_name(sel.backend), name, gpu);
  if (!failed.empty()) {
    *said += "fusegate prove: " + name + " FAILED the A/B:\n";
    for (const auto& f : failed) *said += "  " + f + "\n";
    *said += "no proof written (" + path + " is unchanged)\n";
    return 1;
  }
  if (cannot > 0) {
    *said += "fusegate prove: " + std::to_string(cannot) + " A/B run(s) could not be completed; no proof written\n";
    return 125;
  }
  json proof;
  proof["schema"] = kProofSchema;
  proof["fast_path"] = name;
  proof["backend"] = backend_name(sel.backend);
  proof["contract"] = fp.contract;
  proof["world_sizes"] = json(std::vector<int>(worlds.begin(), worlds.end()));
  proof["shape_classes"] = json(std::vector<std::string>(all_classes.begin(), all_classes.end()));
  proof["cases"] = cases;
  proof["env"] = env ? json(*env) : json();
  proof["source_hash"] = fast_path_source_hash(name, sel.backend);
  std::string cmd = "fusegate prove --fast-path " + name;
  for (int w : worlds) cmd += " --world-size " + std::to_string(w);
  if (sel.backend != Backend::Cpu) cmd += " --backend " + std::string(backend_name(sel.backend));
  if (sel.nodes.nnodes > 1) cmd += " --nnodes " + std::to_string(sel.nodes.nnodes);
  proof["command"] = cmd;
  write_inside(sel.golden_dir, path, dump_record(proof));
  *said += "fusegate prove: " + name + " proven on " + backend_name(sel.backend) + " at world sizes";
  for (int w : worlds) *said += " " + std::to_string(w);
  *said += " (" + std::to_string(cases.size()) + " cases); wrote " + path + "\n";
  return 0;
}

}  // namespace

// fusegate proofs: every fast path's proof file on each backend (cuda: each
// GPU model folder), as this tree would take it, so that a stale proof is
// seen before a GPU run blocks its fast path (2026-11-27: an H200 run found
// causal_attention's proof stale and allreduce_sum's missing only when it
// ran). 0 listed; --strict: 1 when a file is stale, none was found, or a
// fast path the cost model would run has none; 2 bad
// input (an unknown backend, a malformed proof).
int cmd_proofs(const std::string& golden_dir, const std::string& backend, bool strict) {
  if (backend != "cpu" && backend != "cuda" && backend != "all")
    user_error("proofs --backend '" + backend + "': cpu, cuda or all");
  std::vector<std::string> names;
  for (const auto& f : fast_path_catalog()) names.push_back(f.name);
  std::vector<ProofEntry> rows;
  for (const char* b : {"cpu", "cuda"}) {
    if (backend != "all" && backend != b) continue;
    const Backend be = std::string(b) == "cpu" ? Backend::Cpu : Backend::Cuda;
    auto got = proof_inventory(golden_dir, b, names, [&](const std::string& n) { return fast_path_source_hash(n, be); },
                               be == Backend::Cpu ? jit_compiler_version() : "");
    rows.insert(rows.end(), got.begin(), got.end());
  }
  std::cout << "proofs under " << golden_dir << "/proofs, against this tree's kernel sources (cpu: and this host's "
            << "compiler)\n| fast path | backend | GPU model | world sizes | cases | shape classes | status |\n"
            << "|---|---|---|---|---|---|---|\n";
  int files = 0, current = 0, stale = 0, none = 0, missing = 0;
  for (const auto& e : rows) {
    std::string worlds;
    for (int w : e.worlds) worlds += (worlds.empty() ? "" : " ") + std::to_string(w);
    const bool present = e.status != "none";
    // a proof is needed where the cost model lets the fast path run: on
    // cpu not a reference loop (cuda_gain_only), on cuda not measured slower
    const FastPathSpec* spec = find_fast_path(e.fast_path);
    const bool needed = !spec || (e.backend == "cpu" ? !spec->cuda_gain_only : !*spec->cuda_measured_slower);
    files += present;
    current += e.status == "current";
    stale += present && e.status != "current";
    none += !present;
    missing += !present && needed;
    // a row of no proof says whether that blocks anything: "none" blocks
    // the fast path where it runs (and fails --strict); "not needed" is no
    // proof where the cost model never runs it
    const std::string status =
        present || needed ? e.status : "not needed (no proof: the cost model refuses it on " + e.backend + ")";
    std::cout << "| " << e.fast_path << " | " << e.backend << " | " << e.gpu << " | " << (present ? worlds : "-")
              << " | " << (present ? std::to_string(e.cases) : "-") << " | "
              << (present ? std::to_string(e.shape_classes.size()) : "-") << " | " << status << " |\n";
  }
  if (files == 0) {
    std::cout << "no proof files under " << golden_dir << "/proofs" << (strict ? ": nothing vouches for a fast path"
                                                                             : "") << "\n";
    return strict ? 1 : 0;
  }
  std::cout << files << " proof file(s): " << current << " current, " << stale << " stale; " << none
            << " fast path(s) with none on a backend or GPU model that holds others, " << missing
            << " of them where it would run\n";
  if (stale || missing)
    std::cout << "a fast path whose proof is stale or missing is blocked where it runs: prove it on that backend or "
                 "GPU model (fusegate prove --fast-path NAME --world-size N... [--backend cuda])\n";
  if (strict)
    std::cout << "--strict: " << (stale || missing ? "fails" : "passes") << " (" << stale << " stale, " << missing
              << " missing where the fast path would run; rows 'not needed' do not count)\n";
  return strict && (stale || missing) ? 1 : 0;
}

}  // namespace fg
