// check and bless: run every selected repro x mode x world size, compare
// with the goldens (check) or write them (bless).
#include <algorithm>
#include <regex>
#include <set>
#include <sstream>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <optional>

#include "fusion/errors.h"
#include "fusion/options.h"
#include "harness/cli/commands.h"
#include "harness/record/compare.h"
#include "harness/record/golden.h"
#include "harness/record/files.h"
#include "harness/record/diff.h"
#include "harness/record/golden_env.h"
#include "harness/record/json_read.h"
#include "harness/run/nodes.h"
#include "harness/record/quarantine.h"
#include "harness/cli/report.h"
#include "repros/registry.h"

namespace fg {

namespace {

using Job = NodeJob;

// `not_run`, when given, gets one "REPRO wN (...)" for each world size the
// selection asked for by --world-size that a repro does not allow, so the
// check can say what it left out.
std::vector<Job> expand(const Selection& sel, std::vector<std::string>* not_run = nullptr) {
  auto repros = all_repros(sel.fg_dirs);
  std::vector<std::string> names = sel.repros;
  if (names.empty())
    for (const auto& r : repros) names.push_back(r.name);
  std::vector<Mode> modes =
      sel.modes.empty() ? std::vector<Mode>{Mode::Eager, Mode::CompiledDisabled, Mode::Compiled} : sel.modes;
  std::vector<int> worlds = sel.worlds.empty() ? std::vector<int>{1, 2, 4} : sel.worlds;
  // ascending, so that world size 1 runs before the others compare with it
  std::sort(worlds.begin(), worlds.end());
  worlds.erase(std::unique(worlds.begin(), worlds.end()), worlds.end());
  if (sel.worlds.empty() && sel.nodes.nnodes > 1) {
    // across nodes, the default world sizes that every node has ranks of
    std::vector<int> spread;
    for (int w : worlds)
      if (w % sel.nodes.nnodes == 0) spread.push_back(w);
    worlds = spread;
  }
  std::vector<Job> jobs;
  for (const auto& n : names) {
    const Repro* r = find_repro(repros, n);
    if (!r) user_error("unknown repro '" + n + "'; known repros: " + repro_names(repros) + " (see `fusegate list`)");
    // a GPU-sized block runs only where asked for by name, or on its backend
    if (r->only_backend && *r->only_backend != sel.backend) {
      if (!sel.repros.empty())
        user_error(n + " runs only with --backend " + backend_name(*r->only_backend) + " (it is sized for a GPU)");
      continue;
    }
    const bool any_allowed =
        std::any_of(worlds.begin(), worlds.end(), [&](int w) { return w <= r->max_world; });
    // named beside others and allowed none of the world sizes: it would get
    // no check while the others' kept the selection from being empty
    if (!any_allowed && sel.repros.size() > 1)
      user_error(n + " runs at world sizes " + std::to_string(r->min_world) + ".." + std::to_string(r->max_world) +
                 ", none of those asked: it would not be checked; drop it or add a world size it allows");
    for (int w : worlds)
      if (w > r->max_world && !sel.worlds.empty()) {
        // asked for by name and by world size, beside one it allows: bad
        // input (none it allows: the selection of nothing below says so);
        // asked for by world size alone: said in the output
        const std::string allowed = std::to_string(r->min_world) + ".." + std::to_string(r->max_world);
        if (!sel.repros.empty() && any_allowed)
          user_error(n + " runs at world sizes " + allowed + ", not " + std::to_string(w) +
                     ": drop --world-size " + std::to_string(w) + " or name repros that allow it");
        if (not_run) not_run->push_back(n + " w" + std::to_string(w) + " (its world sizes " + allowed + ")");
      }
    for (const auto& m : modes)
      for (int w : worlds) {
        if (w > r->max_world) continue;
        Job j;
        j.spec.repro = n;
        j.spec.mode = m;
        j.spec.world = w;
        j.spec.backend = sel.backend;
        j.spec.fusion = sel.fusion;
        j.spec.fg_dirs = sel.fg_dirs;
        j.spec.timeout_s = sel.timeout_s;
        j.spec.golden_dir = sel.golden_dir;
        j.spec.fast_paths = sel.fast_paths;
        static_cast<NodeSpec&>(j.spec) = sel.nodes;
        validate_spec(j.spec);
        j.id = n + "/" + mode_letter(m) + "/w" + std::to_string(w) + "/" + backend_name(sel.backend) +
               (sel.fusion == FusionPolicy::Default ? "" : std::string("/") + policy_name(sel.fusion)) +
               (sel.fast_paths.is_default() || m == Mode::Eager ? "" : "/fp-" + sel.fast_paths.text()) +
               (sel.nodes.nnodes > 1 ? "/nodes" + std::to_string(sel.nodes.nnodes) : "");
        jobs.push_back(j);
      }
  }
  if (jobs.empty()) {
    // a selection that checks nothing must not read as a pass
    std::string known;
    for (const auto& r : repros) {
      if (r.only_backend && *r.only_backend != sel.backend) continue;
      known += (known.empty() ? "" : ", ") + r.name + " (world sizes " + std::to_string(r.min_world) + ".." +
               std::to_string(std::min(r.max_world, kMaxWorld)) + ")";
    }
    std::string ws;
    for (int w : worlds) ws += (ws.empty() ? "" : " ") + std::to_string(w);
    user_error("the selection matches no check (world sizes " + ws + ", backend " + backend_name(sel.backend) +
               "): nothing would be run or compared. Repros on this backend: " +
               (known.empty() ? std::string("none") : known));
  }
  return jobs;
}

// Over the whole selection (no repro named): the golden files of this
// backend that no check of any selection would read: a folder that names no
// repro, a file whose name is no golden's, or a world size its repro does
// not allow. Each is a FAIL, so that a golden left behind is never taken
// for a checked one (found by an audit: a golden folder of a deleted repro
// passed `check --strict` with nothing said).
std::vector<Verdict> unread_goldens(const Selection& sel, const std::vector<Repro>& repros) {
  namespace fs = std::filesystem;
  std::vector<Verdict> out;
  const fs::path root = fs::path(sel.golden_dir) / backend_name(sel.backend);
  std::error_code ec;
  if (!fs::is_directory(root, ec)) return out;
  auto stale = [&](const fs::path& p, const std::string& why) {
    Verdict v;
    // named from the golden folder's name on, the same on every machine
    fs::path gd = fs::path(sel.golden_dir).lexically_normal();
    if (gd.filename().empty()) gd = gd.parent_path();
    v.check_id = (gd.filename() / p.lexically_normal().lexically_relative(gd)).generic_string();
    v.kind = VerdictKind::Fail;
    v.findings.push_back({v.kind, why});
    out.push_back(v);
  };
  // A golden's name is what golden_path() writes for its parts: the name is
  // cut into mode, world size and suffixes, each suffix read by the parser
  // the command line uses, and the name written again from them; a name
  // that does not come back the same (a policy or selection spelt that is
  // never spelt, mode A with a suffix, an unknown policy) no check reads.
  static const std::regex kName(R"(([ABC])_w([0-9]{1,9})((\.[^.]+)*)\.json)");
  auto golden_name_world = [&](const Repro& r, const std::string& name) -> int {
    std::smatch m;
    if (!std::regex_match(name, m, kName)) return 0;
    std::string fusion = "default", fast = "proven";
    int nodes = 1;
    std::stringstream parts(m[3].str().empty() ? "" : m[3].str().substr(1));
    try {
      for (std::string part; std::getline(parts, part, '.');) {
        if (part.rfind("fp-", 0) == 0) {
          std::string names = part.substr(3);
          std::replace(names.begin(), names.end(), '+', ',');
          fast = parse_fast_paths(names).text();
        } else if (part.rfind("nodes", 0) == 0 && part.size() > 5 && part.size() < 10 &&
                   part.find_first_not_of("0123456789", 5) == std::string::npos) {
          nodes = std::stoi(part.substr(5));
        } else {
          fusion = policy_name(parse_fusion(part));
        }
      }
    } catch (const UserError&) {
      return 0;
    }
    const int w = std::stoi(m[2].str());
    const fs::path again = golden_path(sel.golden_dir, backend_name(sel.backend), r.name, m[1].str(), w, fusion,
                                       fast, nodes);
    return again.filename() == name ? w : 0;
  };
  std::vector<std::string> left_out;
  std::vector<fs::path> entries;
  for (const auto& e : fs::directory_iterator(root, ec)) entries.push_back(e.path());
  std::sort(entries.begin(), entries.end());
  for (const fs::path& d : entries) {
    if (!fs::is_directory(d, ec)) {
      if (d.filename().string()[0] != '.') stale(d, "a file beside the repro folders: no check reads it; delete it");
      continue;
    }
    const Repro* r = find_repro(repros, d.filename().string());
    if (!r && sel.fg_dirs_given &&
        fs::exists(fs::path(sel.shipped_fg_dir) / (d.filename().string() + ".fg"), ec)) {
      // a shipped .fg repro that --repro-dir left out: not stale
      left_out.push_back(d.filename().string());
      continue;
    }
    if (!r) {
      stale(d, "golden folder of no repro: no check reads it; delete it, or restore the repro (known: " +
                   repro_names(repros) + ")");
      continue;
    }
    if (r->only_backend && *r->only_backend != sel.backend) {
      stale(d, r->name + " runs only with --backend " + backend_name(*r->only_backend) +
                   ": no check reads its goldens here; delete the folder");
      continue;
    }
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(d, ec))
      if (e.path().filename().string()[0] != '.') files.push_back(e.path());
    std::sort(files.begin(), files.end());
    for (const fs::path& f : files) {
      const int w = fs::is_regular_file(f, ec) ? golden_name_world(*r, f.filename().string()) : 0;
      if (w == 0) {
        stale(f, "not a golden's name (A_w<N>[.nodes<K>].json, or B/C_w<N>[.max-autotune|.none][.fp-<selection>]"
                 "[.nodes<K>].json): no check reads it; rename or delete it");
        continue;
      }
      if (w < r->min_world || w > r->max_world)
        stale(f, "world size " + std::to_string(w) + ", which " + r->name + " does not allow (" +
                     std::to_string(r->min_world) + ".." +
                     std::to_string(std::min(r->max_world, kMaxWorld)) +
                     "): no check reads it; delete it");
    }
  }
  if (!left_out.empty() && sel.nodes.node_rank == 0) {
    std::string names;
    for (const auto& n : left_out) names += (names.empty() ? "" : ", ") + n;
    std::cerr << "fusegate check: not in this selection: the goldens of the shipped .fg repros " << names
              << ", as --repro-dir took the place of " << sel.shipped_fg_dir << " (add --repro-dir "
              << sel.shipped_fg_dir << " to check them too)\n";
  }
  return out;
}

// --golden-dir must be a folder, and for check one that is there (bless
// creates it): a file there, or a typo, made every check MISSING and exit 0
// (an audit, 2026-11-27).
void golden_dir_is_a_folder(const Selection& sel, bool must_exist) {
  std::error_code ec;
  const bool there = std::filesystem::exists(sel.golden_dir, ec);
  if (there && !std::filesystem::is_directory(sel.golden_dir, ec))
    user_error("--golden-dir " + sel.golden_dir + ": error: is not a folder; name the folder of the goldens");
  if (!there && must_exist)
    user_error("--golden-dir " + sel.golden_dir + ": error: no such folder; name the folder of the goldens "
               "(bless creates it)");
}

std::string golden_of_job(const Selection& sel, const Job& j);

// Every place a golden of `jobs` goes must take a file, inside the golden
// folder, before any run (bless --missing would have taken a folder there
// for a golden).
void golden_paths_take_files(const Selection& sel, const std::vector<Job>& jobs) {
  golden_dir_is_a_folder(sel, false);
  for (const Job& j : jobs) {
    const std::string path = golden_of_job(sel, j);
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec))
      user_error(path + ": error: is a folder where the golden file goes; move it away and bless again");
    // and none is a link out of the golden folder (write_inside would refuse
    // it after its run)
    if (const std::string lands = link_leaves(sel.golden_dir, path); !lands.empty())
      user_error(path + ": error: is a link that leaves " + sel.golden_dir + " (it would write " + lands +
                 "); nothing was run or written: replace the link with a file, or remove it, and bless again");
  }
}

std::string golden_of_job(const Selection& sel, const Job& j) {
  return golden_path(sel.golden_dir, backend_name(sel.backend), j.spec.repro, mode_letter(j.spec.mode), j.spec.world,
                     policy_name(sel.fusion), sel.fast_paths.text(), sel.nodes.nnodes);
}

// --require-fast-path: a fast path that did not run on every rank fails.
// Eager (mode A) runs no fast path: the requirement is for compiled modes.
// A required fast path that did not run on a rank fails the check.
void require_fast_paths(const Selection& sel, const record::RunRecord& rec, Verdict* v) {
  if (sel.require_fast_paths.empty()) return;
  if (rec.mode.value_or("") == "A") {
    v->findings.push_back({VerdictKind::Pass, "--require-fast-path not asked of mode A (eager runs no fast path)"});
    return;
  }
  for (const auto& name : sel.require_fast_paths)
    for (const auto& [rank, rk] : record::ranks_by_id(rec)) {
      std::string status = "missing from the record";
      if (rk->fast_paths)
        for (const record::FastPathStatus& f : *rk->fast_paths)
          if (f.name == name) status = f.status;
      if (status == "used") continue;
      v->findings.push_back({VerdictKind::Fail, "rank " + std::to_string(rank) + ": required fast path " + name +
                                                    " did not run (" + status + ")"});
      v->kind = VerdictKind::Fail;
    }
}

}  // namespace

namespace {
int check_jobs(const Selection& sel, const CheckOptions& opts, const std::vector<Job>& jobs, CommandNodes& nodes);
int bless_jobs(const Selection& sel, const std::string& why, const std::vector<Job>& jobs, CommandNodes& nodes,
               bool verbose);
}  // namespace

int cmd_check(const Selection& sel, const CheckOptions& opts) {
  if (!sel.require_fast_paths.empty() && !sel.modes.empty() &&
      std::all_of(sel.modes.begin(), sel.modes.end(), [](Mode m) { return m == Mode::Eager; }))
    user_error("--require-fast-path asks for a fast path, and mode A (eager) runs none: add --mode B or --mode C");
  golden_dir_is_a_folder(sel, true);
  std::vector<std::string> not_run;
  std::vector<Job> jobs = expand(sel, &not_run);
  if (!not_run.empty() && sel.nodes.node_rank == 0) {
    std::string list;
    for (const auto& x : not_run) list += (list.empty() ? "" : ", ") + x;
    std::cerr << "fusegate check: not in this selection, as their repros do not allow the world size asked: " << list
              << "\n";
  }
  CommandNodes nodes(sel.nodes, sel.timeout_s);
  if (!nodes.leader()) {
    if (!opts.junit.empty() || !opts.markdown.empty() || !opts.records_dir.empty())
      std::cerr << "fusegate check: node " << nodes.node_rank()
                << ": --junit, --markdown and --records are written by node 0\n";
    return follow_jobs(nodes, jobs, "check");
  }
  return lead_jobs(nodes, [&] { return check_jobs(sel, opts, jobs, nodes); });
}

namespace {

int check_jobs(const Selection& sel, const CheckOptions& opts, const std::vector<Job>& jobs, CommandNodes& nodes) {
  // the quarantine is read (and refused if malformed) before any run
  const std::string qpath = sel.golden_dir + "/quarantine.json";
  const std::vector<QuarantineEntry> quarantine = load_quarantine(qpath);
  const auto repros = all_repros(sel.fg_dirs);
  for (const auto& e : quarantine)
    if (!find_repro(repros, e.id.substr(0, e.id.find('/'))))
      user_error(qpath + ": error: quarantined check '" + e.id + "' names no repro; known repros: " +
                 repro_names(repros));
  const std::string as_of = opts.as_of.empty() ? today_utc() : opts.as_of;
  // the horizon runs from today, whatever --as-of says: a past --as-of
  // (bisecting old commits) must not turn a valid entry into bad input
  check_quarantine_horizon(quarantine, qpath, today_utc());
  // every golden is read (a corrupted one is bad input: exit 2) before any run
  std::vector<std::optional<record::RunRecord>> goldens;
  for (const Job& j : jobs) goldens.push_back(load_golden(golden_of_job(sel, j)));
  nodes.agree("check", job_ids(jobs));
  std::vector<Verdict> verdicts;
  std::map<std::string, record::RunRecord> world1;  // repro/mode -> record at world size 1
  std::set<std::string> with_world1;              // repro/mode pairs the selection runs at world size 1
  for (const Job& j : jobs)
    if (j.spec.world == 1) with_world1.insert(j.spec.repro + "/" + mode_letter(j.spec.mode));
  std::string lost;  // a node that is gone: the jobs after it are not run
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    if (!lost.empty()) {
      Verdict v;
      v.check_id = j.id;
      v.kind = VerdictKind::CannotTest;
      v.findings.push_back({v.kind, "not run: " + lost});
      verdicts.push_back(v);
      continue;
    }
    std::cerr << "fusegate: running " << j.id << "\n";
    const std::string path = golden_of_job(sel, j);
    const std::optional<record::RunRecord>& golden = goldens[i];
    std::string bless = bless_command(j.spec.repro, mode_letter(j.spec.mode), j.spec.world, backend_name(sel.backend),
                                      policy_name(sel.fusion), sel.fast_paths.text(), sel.nodes.nnodes) +
                        sel.repeat_flags;
    RunOutcome run = nodes.launch_job(j.spec, static_cast<int>(i));
    if (run.node_lost) lost = run.message;
    else nodes.go_on(static_cast<int>(i));
    if (run.exit_code == 2) {
      // bad input inside a rank (a fault naming no node, a cache folder that
      // cannot be written): bad input of the command, as `run` says it, and
      // never a skip (`git bisect run` would skip the commit on 125)
      const std::string msg = "fusegate check: " + j.id + ": bad input: " + run.message + "\n";
      std::cerr << msg;
      nodes.hand_back(2, msg);
      return 2;
    }
    if (run.exit_code != 0) {
      // exit 1: the ranks compiled differently (a regression found before a
      // collective could hang on it); anything else: cannot test
      Verdict v;
      v.check_id = j.id;
      v.kind = run.exit_code == 1 ? VerdictKind::Fail : VerdictKind::CannotTest;
      v.findings.push_back({v.kind, run.message});
      verdicts.push_back(v);
      continue;
    }
    if (!opts.records_dir.empty())
      write_inside(opts.records_dir, opts.records_dir + "/" + j.spec.repro + "_" + mode_letter(j.spec.mode) + "_w" +
                       std::to_string(j.spec.world) + "_" + backend_name(sel.backend) + "_" + policy_name(sel.fusion) +
                       (sel.fast_paths.is_default() ? "" : "_fp-" + sel.fast_paths.text()) + ".json",
                   dump_record(run.record));
    Verdict v = compare_with_golden(run.record, golden ? &*golden : nullptr, path, j.id, bless, opts.exact);
    std::string key = j.spec.repro + "/" + mode_letter(j.spec.mode);
    if (j.spec.world == 1) {
      world1[key] = run.record;
    } else if (world1.count(key)) {
      Verdict w = compare_across_worlds(world1[key], run.record, j.id);
      for (const auto& f : w.findings) v.findings.push_back(f);
      if (golden || v.kind != VerdictKind::Missing) v.kind = overall_kind(v.findings);
    } else if (const Repro* r = find_repro(repros, j.spec.repro); r && r->replicated_outputs) {
      // never a comparison skipped with nothing said
      const std::string why = r->min_world > 1              ? "this repro has none"
                              : sel.nodes.nnodes > 1        ? "world size 1 is not run across nodes"
                              : with_world1.count(key) != 0 ? "its run did not finish (above)"
                                                            : "not in this selection (add --world-size 1)";
      v.findings.push_back({VerdictKind::Pass, "rank 0 not compared with world size 1: " + why});
    }
    require_fast_paths(sel, run.record, &v);
    verdicts.push_back(v);
  }
  // a check that compared nothing with a golden fails whatever the flags:
  // every golden MISSING (a typo in --golden-dir's tree, a new checkout of
  // the wrong branch) passed without --strict. Judged on the runs, before
  // the quarantine turns a run that could not be tested into FLAKY
  const bool compared = std::any_of(verdicts.begin(), verdicts.end(), [](const Verdict& v) {
    return v.kind == VerdictKind::Pass || v.kind == VerdictKind::Fail || v.kind == VerdictKind::Improved;
  });
  const bool all_missing = !compared && std::any_of(verdicts.begin(), verdicts.end(), [](const Verdict& v) {
    return v.kind == VerdictKind::Missing;
  });
  if (sel.repros.empty())
    for (Verdict& v : unread_goldens(sel, repros)) verdicts.push_back(std::move(v));
  for (Verdict& v : verdicts) apply_quarantine(quarantine, as_of, &v);
  std::string table = verdict_table(verdicts, opts.verbose) + "goldens read from " + sel.golden_dir + "\n";
  if (all_missing)
    table += "fusegate check: nothing was compared: no golden file in " + sel.golden_dir +
             " holds any of these checks; bless them (the commands above), or name the folder that holds them "
             "(--golden-dir)\n";
  std::cout << table;
  if (!opts.junit.empty()) write_atomic(opts.junit, junit_xml(verdicts, "fusegate", opts.strict));
  if (!opts.markdown.empty()) write_atomic(opts.markdown, markdown_summary(verdicts, opts.strict));
  int rc = exit_code(verdicts, opts.strict);
  if (all_missing && rc == 0) rc = 1;
  nodes.hand_back(rc, table);
  return rc;
}

}  // namespace

// a golden's diff as bless shows it without --verbose: its first lines
constexpr size_t kBlessDiffLines = 40;

int cmd_bless(const Selection& sel, const std::string& why, bool missing_only, bool verbose) {
  std::vector<Job> jobs = expand(sel);
  golden_paths_take_files(sel, jobs);
  if (missing_only) {
    // --missing: only the selected checks no golden file holds yet (a world
    // size or repro added); every node filters the same way, and the nodes
    // agree on the job list before anything runs
    std::vector<Job> missing;
    for (const Job& j : jobs)
      if (!std::filesystem::exists(golden_of_job(sel, j))) missing.push_back(j);
    if (missing.empty()) {
      std::cerr << "fusegate bless --missing: every one of the " << jobs.size()
                << " selected checks has its golden file; nothing to bless (the files were left as they are)\n";
      return 0;
    }
    std::cerr << "fusegate bless --missing: " << missing.size() << " of " << jobs.size()
              << " selected checks have no golden file yet\n";
    jobs = std::move(missing);
  }
  CommandNodes nodes(sel.nodes, sel.timeout_s);
  if (!nodes.leader()) return follow_jobs(nodes, jobs, "bless");
  return lead_jobs(nodes, [&] { return bless_jobs(sel, why, jobs, nodes, verbose); });
}

namespace {

int bless_jobs(const Selection& sel, const std::string& why, const std::vector<Job>& jobs, CommandNodes& nodes,
               bool verbose) {
  nodes.agree("bless", job_ids(jobs));
  // a job that cannot be blessed stops the command, on every node, before
  // any golden is written: every job runs and is judged first
  auto stop = [&](int code, const std::string& msg) {
    const std::string text = "fusegate bless: " + msg + "\nnothing was written: a bless writes its goldens only once "
                             "every job of it can be blessed\n";
    std::cerr << text;
    nodes.hand_back(code, text);
    return code;
  };
  struct Write {
    std::string path, old_text, text, said;
  };
  std::vector<Write> writes;
  std::map<std::string, record::RunRecord> world1;  // repro/mode -> record at world size 1
  for (size_t i = 0; i < jobs.size(); ++i) {
    const Job& j = jobs[i];
    std::cerr << "fusegate: running " << j.id << "\n";
    RunOutcome run = nodes.launch_job(j.spec, static_cast<int>(i));
    if (run.exit_code != 0) return stop(run.exit_code, j.id + ": " + run.message);
    for (const auto& [rank, rk] : record::ranks_by_id(run.record))
      for (const std::optional<std::string>* why : {&rk->device_kernels_not_counted, &rk->aten_ops_not_counted})
        if (*why)
          return stop(125, j.id + ": rank " + std::to_string(rank) + " could not count what really runs (" + **why +
                               "): a golden without that figure would vouch for nothing");
    nodes.go_on(static_cast<int>(i));
    // a state `check` fails whatever its golden says is never written: a
    // golden records a good state, it does not make a broken one acceptable
    Verdict v;
    v.findings = invariant_findings(run.record);
    const std::string key = j.spec.repro + "/" + mode_letter(j.spec.mode);
    if (j.spec.world == 1) world1[key] = run.record;
    else if (world1.count(key))
      for (const Finding& f : compare_across_worlds(world1[key], run.record, j.id).findings) v.findings.push_back(f);
    require_fast_paths(sel, run.record, &v);
    std::vector<std::string> wrong;
    for (const Finding& f : v.findings)
      if (f.kind == VerdictKind::Fail) wrong.push_back(f.message);
    if (!wrong.empty())
      return stop(1, j.id + ": refused: check would fail it whatever the golden says:\n  " + join(wrong, "\n  ") +
                         "\nfix the repro or the compiler, then bless again");
    Write w;
    w.path = golden_of_job(sel, j);
    std::optional<record::RunRecord> old;
    std::string unreadable;
    if (std::filesystem::exists(w.path)) {
      std::ifstream f(w.path);
      w.old_text.assign(std::istreambuf_iterator<char>(f), {});
      // a golden that cannot be read is replaced (re-blessing is how it is
      // recovered), and the summary says so
      try {
        old = load_golden(w.path);
      } catch (const UserError& e) {
        unreadable = e.what();
      }
    }
    const BlessPlan plan = plan_bless(old ? &*old : nullptr, golden_of(run.record));
    if (plan.kind == BlessPlan::Unchanged) continue;
    w.text = dump_record(plan.golden);
    if (w.text == w.old_text) continue;
    const size_t envs = plan.golden.environments ? plan.golden.environments->size() : 0;
    const std::string older = plan.unmatchable > 0 ? std::to_string(plan.unmatchable) +
                                                         " recorded under an older environment key, which no run "
                                                         "matches, dropped"
                                                   : "";
    if (!unreadable.empty())
      w.said = "replaced: the old file could not be read as a golden (" + unreadable + ")";
    else if (plan.kind == BlessPlan::Added)
      w.said = "this environment's exact digests added (" + std::to_string(envs) + " environment(s) now" +
               (older.empty() ? "" : "; " + older) + "); nothing else changed";
    else if (plan.kind == BlessPlan::Pruned)
      w.said = older + "; nothing else changed";
    else if (plan.kind == BlessPlan::Replaced)
      w.said = "replaced: " + plan.why +
               (plan.dropped > 0 ? "; the exact digests of " + std::to_string(plan.dropped) +
                                       " other environment(s) dropped (they describe the old state: bless there "
                                       "again to add them)"
                                 : std::string());
    writes.push_back(std::move(w));
  }
  for (const Write& w : writes) {
    write_inside(sel.golden_dir, w.path, w.text);
    if (w.old_text.empty() && !verbose)
      std::cout << "new golden " << w.path << " (" << std::count(w.text.begin(), w.text.end(), '\n')
                << " lines; --verbose shows it)\n";
    else
      std::cout << (verbose ? unified_diff(w.old_text, w.text, w.old_text.empty() ? "/dev/null" : w.path, w.path)
                            : first_lines(unified_diff(w.old_text, w.text, w.path, w.path), kBlessDiffLines));
    if (!w.said.empty()) std::cout << w.path << ": " << w.said << "\n";
  }
  const std::string summary = "fusegate bless: " + std::to_string(writes.size()) + " of " +
                              std::to_string(jobs.size()) + " golden files changed in " + sel.golden_dir +
                              (why.empty() ? "" : " (" + why + ")") + "\n";
  std::cout << summary;
  nodes.hand_back(0, summary);
  return 0;
}

}  // namespace

}  // namespace fg
