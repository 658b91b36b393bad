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
#include "harness/ab.h"
#include "harness/commands.h"
#include "harness/golden.h"
#include "harness/json_read.h"
#include "harness/proofs.h"
#include "harness/run.h"
#include "kernels/fastpaths/catalog.h"
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
  json record;
  AbVerdict verdict;
  std::vector<std::string> shape_classes;
};

// `spec` names the repro, mode, world size and backend; its ab_fast_path is
// set to `fp` here.
AbRun run_ab(const FastPathSpec& fp, RunSpec spec) {
  AbRun out;
  spec.ab_fast_path = fp.name;
  RunOutcome run = launch(spec);
  if (run.exit_code != 0) {
    out.exit_code = run.exit_code;
    out.message = run.message;
    return out;
  }
  out.record = run.record;
  // the fast path must have run on every rank, or there is nothing to compare
  std::set<std::string> classes;
  for (const auto& [rank, r] : ranks_by_id(run.record)) {
    std::string status = "missing from the record";
    if (const json* fps = field(*r, "fast_paths"))
      for (const auto& f : *fps)
        if (text_of(f, "name") == fp.name) {
          status = text_of(f, "status");
          for (const auto& c : f["shape_classes"]) classes.insert(c.get<std::string>());
        }
    if (status != "used") {
      out.exit_code = 2;
      out.message = "fast path " + fp.name + " does not apply to " + spec.repro + " in mode " +
                    mode_letter(spec.mode) + " at world size " + std::to_string(spec.world) + " (rank " +
                    std::to_string(rank) + ": " + status +
                    "); it matches: " + fp.pattern;
      return out;
    }
    if (text_of(*r, "source_hash") != fast_path_source_hash(fp.name, spec.backend)) {
      out.exit_code = 125;
      out.message = "rank " + std::to_string(rank) + " ran another source of " + fp.name + " than this process has";
      return out;
    }
  }
  out.shape_classes.assign(classes.begin(), classes.end());
  out.verdict = ab_verdict(run.record, fp.name, fp.generic_order(spec.backend));
  return out;
}

void print_ab(const FastPathSpec& fp, const RunSpec& spec, const AbRun& r) {
  std::cout << "fusegate ab: " << fp.name << " on " << spec.repro << ", mode " << mode_letter(spec.mode)
            << ", world size " << spec.world << ", " << backend_name(spec.backend) << "\n";
  std::cout << "  contract: " << fp.contract << "\n";
  std::string classes;
  for (const auto& c : r.shape_classes) classes += (classes.empty() ? "" : "; ") + c;
  std::cout << "  shape class: " << classes << "\n";
  const json* r0 = nullptr;
  for (const auto& [rank, rr] : ranks_by_id(r.record)) {
    r0 = rr;
    break;
  }
  if (r0)
    std::cout << "  launches: generic " << text_of(*r0, "kernel_count_generic") << ", with the fast path "
              << text_of(*r0, "kernel_count_fast") << " (rank 0)\n";
  std::cout << ab_table(r.record);
  std::cout << "  rule: " << r.verdict.rule << "\n";
  for (const auto& f : r.verdict.failures) std::cout << "  FAIL: " << f << "\n";
  std::cout << "verdict: " << (r.verdict.pass ? "PASS" : "FAIL") << "\n";
}

}  // namespace

int cmd_ab(const RunSpec& spec, const std::string& json_out) {
  const FastPathSpec& fp = known_fast_path(spec.ab_fast_path);
  if (spec.repro.empty()) user_error("ab needs --repro NAME (see `fusegate list`)");
  if (spec.mode == Mode::Eager) user_error("ab compares compiled graphs: use --mode B or C (eager runs no fast path)");
  AbRun r = run_ab(fp, spec);
  if (r.exit_code != 0) {
    std::cerr << "fusegate ab: " << r.message << "\n";
    return r.exit_code;
  }
  print_ab(fp, spec, r);
  if (!json_out.empty()) {
    json rep = r.record;
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
  auto repros = all_repros(sel.fg_dirs);
  json cases = json::array();
  std::set<std::string> all_classes;
  json env;
  std::vector<std::string> failed;
  int cannot = 0;
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
  for (int w : worlds) {
    for (const Repro* r : matched_at[w]) {
      std::cerr << "fusegate prove: " << name << " on " << r->name << " at world size " << w << "\n";
      RunSpec spec;
      spec.repro = r->name;
      spec.world = w;
      spec.backend = sel.backend;
      spec.fg_dirs = sel.fg_dirs;
      spec.golden_dir = sel.golden_dir;
      spec.timeout_s = sel.timeout_s;
      AbRun a = run_ab(fp, spec);
      if (a.exit_code != 0) {
        std::cerr << "fusegate prove: " << r->name << " w" << w << ": " << a.message << "\n";
        ++cannot;
        continue;
      }
      print_ab(fp, spec, a);
      if (env.is_null() && a.record.contains("env")) env = a.record["env"];
      json outs = json::array();
      for (const auto& [rank, rr] : ranks_by_id(a.record))
        for (const auto& o : (*rr)["ab"])
          outs.push_back({{"name", o["name"]},
                          {"rank", rank},
                          {"identical", o["identical"]},
                          {"rel_l2_generic", o["rel_l2_generic"]},
                          {"rel_l2_fast", o["rel_l2_fast"]},
                          {"max_abs_fast_vs_generic", o["max_abs_fast_vs_generic"]}});
      if (!a.verdict.pass) {
        for (const auto& f : a.verdict.failures) failed.push_back(r->name + " w" + std::to_string(w) + ": " + f);
        continue;
      }
      for (const auto& c : a.shape_classes) {
        all_classes.insert(c);
        cases.push_back({{"repro", r->name},
                         {"world_size", w},
                         {"shape_class", c},
                         {"verdict", "pass"},
                         {"rule", a.verdict.rule},
                         {"outputs", outs}});
      }
    }
  }
  // a cuda proof goes into the folder of the GPU model it ran on
  const std::string gpu =
      env.is_object() && env.contains("gpu") && env["gpu"].is_string() ? env["gpu"].get<std::string>() : "";
  const std::string path =
      sel.backend == Backend::Cuda && gpu.empty()
          ? (std::filesystem::path(sel.golden_dir) / "proofs" / "cuda" / "<this GPU>" / (name + ".json")).string()
          : proof_path(sel.golden_dir, backend_name(sel.backend), name, gpu);
  if (!failed.empty()) {
    std::cout << "fusegate prove: " << name << " FAILED the A/B:\n";
    for (const auto& f : failed) std::cout << "  " << f << "\n";
    std::cout << "no proof written (" << path << " is unchanged)\n";
    return 1;
  }
  if (cannot > 0) {
    std::cout << "fusegate prove: " << cannot << " A/B run(s) could not be completed; no proof written\n";
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
  proof["env"] = env;
  proof["source_hash"] = fast_path_source_hash(name, sel.backend);
  std::string cmd = "fusegate prove --fast-path " + name;
  for (int w : worlds) cmd += " --world-size " + std::to_string(w);
  if (sel.backend != Backend::Cpu) cmd += " --backend " + std::string(backend_name(sel.backend));
  proof["command"] = cmd;
  write_atomic(path, dump_record(proof));
  std::cout << "fusegate prove: " << name << " proven on " << backend_name(sel.backend) << " at world sizes";
  for (int w : worlds) std::cout << " " << w;
  std::cout << " (" << cases.size() << " cases); wrote " << path << "\n";
  return 0;
}

}  // namespace fg
