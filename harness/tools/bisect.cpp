// fusegate bisect: the one application of a compiler stage (a
// decomposition, a lowering, a fusion decision, a rewrite, a fast path site,
// a codegen variant) whose switching-on turns a repro bad. Bad is the
// predicate's (--predicate, or the one the run as configured fails):
//   accuracy  an output of a rank fails its check against its fp64 run
//   crash     a rank dies (the compiler's internal error, a signal)
//   hang      a rank does not finish within --timeout
//   ranks     the ranks compiled differently (they disagree)
// and kernels / graphs: more kernels, or more graphs or breaks, than the
// golden records, which no application turns on: the report is what
// changed against the golden (the decisions, the breaks). The search, in
// runs:
//   1. as configured: good -> nothing to bisect (exit 0);
//   2. every switchable subsystem off (FUSEGATE_BISECT=...:0): bad -> no
//      subsystem is to blame (capture, an extern or a collective);
//   3. subsystems switched on one by one in pipeline order: the first whose
//      enabling turns good into bad;
//   4. with graph breaks, the first graph whose enabling is bad (limits
//      SUBSYSTEM@GRAPH, fusion/bisect.h), by halving;
//   5. a binary search over that graph's applications, in the order the
//      limits count them: the first k that is bad names the k-th. Where the
//      run as configured left no record (a crash, a hang), counts are not
//      known: k doubles until bad, then halves.
// Every rank reads the same FUSEGATE_BISECT; nothing is written but --json.
#include <stdlib.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <iostream>
#include <map>

#include "fusion/bisect.h"
#include "fusion/errors.h"
#include "fusion/fault.h"
#include "harness/cli/commands.h"
#include "harness/record/compare.h"
#include "harness/record/files.h"
#include "harness/record/golden.h"
#include "harness/record/json_read.h"
#include "harness/run/run.h"
#include "harness/tools/bisect_culprit.h"

namespace fg {

using nlohmann::json;

namespace {

enum class Predicate { Auto, Accuracy, Crash, Hang, Ranks, Kernels, Graphs };

Predicate parse_predicate(const std::string& s) {
  if (s == "auto") return Predicate::Auto;
  if (s == "accuracy") return Predicate::Accuracy;
  if (s == "crash") return Predicate::Crash;
  if (s == "hang") return Predicate::Hang;
  if (s == "ranks") return Predicate::Ranks;
  if (s == "kernels") return Predicate::Kernels;
  if (s == "graphs") return Predicate::Graphs;
  user_error("--predicate: '" + s + "' is not one of auto, accuracy, crash, hang, ranks, kernels, graphs");
}

const char* predicate_name(Predicate p) {
  switch (p) {
    case Predicate::Accuracy: return "accuracy";
    case Predicate::Crash: return "crash";
    case Predicate::Hang: return "hang";
    case Predicate::Ranks: return "ranks";
    case Predicate::Kernels: return "kernels";
    case Predicate::Graphs: return "graphs";
    default: return "auto";
  }
}

// a figure as the record writes it ("null" for NaN), "" when absent
std::string figure_text(const std::optional<double>& x) { return x ? json(*x).dump() : ""; }

// FUSEGATE_BISECT limits: subsystem -> graph (-1 every graph) -> K (-1 all)
using Limits = std::map<std::string, std::map<long long, long long>>;

std::string limits_text(const Limits& limits) {
  std::string s;
  for (const auto& sub : bisect_subsystems()) {
    auto it = limits.find(sub);
    if (it == limits.end()) continue;
    for (const auto& [g, k] : it->second)
      s += (s.empty() ? "" : ",") + sub + (g < 0 ? "" : "@" + std::to_string(g)) + ":" +
           (k < 0 ? "all" : std::to_string(k));
  }
  return s;
}

// One judged run.
struct Step {
  int verdict = -1;  // 0 good, 1 bad, -1 cannot test
  std::string why;
  std::optional<record::RunRecord> record;  // a run that finished
  std::string failure;                      // RunOutcome::failure
};

// A launch's message on one line: a crash's first line (the rank and its
// step) and the last line the rank printed (what it died of).
std::string one_line(const std::string& s) {
  const size_t nl = s.find('\n');
  std::string head = s.substr(0, nl);
  const size_t cut = head.find("; all ranks stopped");
  if (cut != std::string::npos) head = head.substr(0, cut);
  if (nl == std::string::npos) return head;
  std::string rest = s.substr(nl + 1);
  while (!rest.empty() && (rest.back() == '\n' || rest.back() == ' ')) rest.pop_back();
  const size_t last = rest.rfind('\n');
  rest = last == std::string::npos ? rest : rest.substr(last + 1);
  return rest.empty() ? head : head + ": " + rest;
}

// An accuracy failure's first output, or "".
std::string accuracy_failure(const record::RunRecord& rec) {
  for (const auto& [rank, r] : record::ranks_by_id(rec))
    if (r->accuracy && r->accuracy->status.value_or("") != "pass")
      for (const record::AccuracyOutput& a : r->accuracy->outputs)
        if (!a.pass.value_or(true))
          return "rank " + std::to_string(rank) + " output " + a.name + ": rmse vs fp64 " +
                 figure_text(a.rmse_vs_fp64) + ", eager's " + figure_text(a.eager_rmse_vs_fp64);
  return "";
}

Step judge(const RunOutcome& o, Predicate p) {
  Step s;
  s.failure = o.failure;
  const bool ran = o.exit_code == 0;
  if (ran) s.record = o.record;
  const std::string failed = o.failure;
  if (!ran) {
    const bool ours = (p == Predicate::Crash && failed == "crash") || (p == Predicate::Hang && failed == "hang") ||
                      (p == Predicate::Ranks && failed == "disagree");
    s.verdict = ours ? 1 : -1;
    s.why = (failed.empty() ? "" : failed + ": ") + one_line(o.message);
    return s;
  }
  if (p == Predicate::Accuracy) {
    s.why = accuracy_failure(o.record);
    s.verdict = s.why.empty() ? 0 : 1;
    return s;
  }
  s.verdict = 0;  // crash, hang, ranks: it finished, and the ranks agreed
  return s;
}

// The largest graph count of the record's ranks.
long long graphs_of(const record::RunRecord& rec) {
  long long n = 1;
  for (const auto& [rank, r] : record::ranks_by_id(rec)) n = std::max(n, r->graph_count.value_or(1));
  return n;
}

// The run as configured passed what it was judged by: the golden decides
// whether kernels or graphs regressed. Returns the exit code, or -1 when no
// golden finding of `p` (auto: any) failed.
int golden_report(const RunSpec& base, const record::RunRecord& full, Predicate p, const std::string& json_out,
                  const json& steps) {
  const std::string gpath = golden_path(base.golden_dir, backend_name(base.backend), base.repro,
                                        mode_letter(base.mode), base.world, policy_name(base.fusion),
                                        base.fast_paths.text());
  std::optional<record::RunRecord> golden = load_golden(gpath);
  if (!golden) {
    if (p == Predicate::Kernels || p == Predicate::Graphs) {
      std::cout << "fusegate bisect: --predicate " << predicate_name(p) << " compares with the golden, and there is "
                << "none at " << gpath << " (bless one from a good state first): cannot test\n";
      return 125;
    }
    return -1;
  }
  Verdict gv = compare_with_golden(full, &*golden, gpath, base.repro, "");
  std::vector<std::string> lines;
  bool regressed = false;
  for (const Finding& f : gv.findings) {
    const std::string& m = f.message;
    const bool kernels = m.find("kernel") != std::string::npos || m.find("fusion decisions changed") != std::string::npos;
    const bool graphs = m.find("graph_count") != std::string::npos || m.find("graph_break") != std::string::npos ||
                        m.find("graph break") != std::string::npos;
    const bool wanted = p == Predicate::Kernels ? kernels : p == Predicate::Graphs ? graphs : true;
    if (!wanted) continue;
    if (f.kind == VerdictKind::Fail) regressed = true;
    if (f.kind == VerdictKind::Fail || m.find("fusion decisions changed") != std::string::npos) lines.push_back(m);
  }
  if (!regressed) return -1;
  std::cout << "fusegate bisect: " << base.repro
            << (p == Predicate::Auto ? "'s outputs pass their accuracy check, but the run"
                                     : std::string(" (--predicate ") + predicate_name(p) + "): the run")
            << " regressed against " << gpath << ": not a search (no application of a stage turns it on: "
            << "a fusion refused, a break added, a rule changed); what changed:\n";
  for (std::string l : lines) {
    for (size_t at = l.find('\n'); at != std::string::npos; at = l.find('\n', at + 1)) l.insert(at + 1, "  ");
    std::cout << "  " << l << "\n";
  }
  if (!json_out.empty())
    write_atomic(json_out, dump_record({{"result", "regression against the golden"},
                                        {"predicate", predicate_name(p)},
                                        {"golden", gpath},
                                        {"findings", lines},
                                        {"steps", steps}}));
  return 1;
}

}  // namespace

int cmd_bisect(const RunSpec& base, const BisectOptions& opts) {
  if (base.mode == Mode::Eager) user_error("bisect searches compiled graphs: use --mode B or C");
  Predicate pred = parse_predicate(opts.predicate);
  validate_spec(base);
  const std::string& json_out = opts.json_out;
  const auto& subs = bisect_subsystems();
  int step = 0;
  int bound = 0;  // 0: not known
  json steps = json::array();
  auto write_json = [&](json j) {
    j["predicate"] = predicate_name(pred);
    j["steps"] = steps;
    if (!json_out.empty()) write_atomic(json_out, dump_record(j));
  };
  // runs once under `limits`; bad input inside a rank (a fault naming no
  // node) is bad input of the bisection, never a commit to skip
  // runs `spec` once under `limits` (mode A: none, `what` says so); bad
  // input inside a rank is bad input of the bisection
  auto run_spec = [&](const RunSpec& spec, const Limits& limits, Predicate p, const std::string& what) -> Step {
    const std::string env = limits_text(limits);
    if (env.empty()) unsetenv("FUSEGATE_BISECT");
    else setenv("FUSEGATE_BISECT", env.c_str(), 1);
    RunOutcome o = launch(spec);
    unsetenv("FUSEGATE_BISECT");
    ++step;
    if (o.exit_code == 2) user_error(o.message);
    // (auto: the first run; a crash, a hang or a disagreement is then bad)
    Step s = judge(o, p == Predicate::Auto ? Predicate::Accuracy : p);
    if (p == Predicate::Auto && s.verdict < 0 && !o.failure.empty()) s.verdict = 1;
    const std::string label = what.empty() ? "FUSEGATE_BISECT=" + (env.empty() ? std::string("(none)") : env) : what;
    std::cout << "step " << step << (bound > 0 && what.empty() ? " of at most " + std::to_string(bound) : "") << ": "
              << label << ": "
              << (s.verdict == 0 ? "good" : s.verdict == 1 ? "bad (" + s.why + ")" : "cannot test (" + s.why + ")")
              << "\n"
              << std::flush;
    steps.push_back({{"limits", what.empty() ? env : what},
                     {"verdict", s.verdict == 0 ? "good" : s.verdict == 1 ? "bad" : "cannot test"}});
    if (o.exit_code != 0) steps.back()["failure"] = o.failure.empty() ? "other" : o.failure;
    return s;
  };
  auto run = [&](const Limits& limits, Predicate p) { return run_spec(base, limits, p, ""); };
  auto cannot = [&](const std::string& why) {
    std::cout << "fusegate bisect: " << why << " (cannot test)\n";
    write_json({{"result", "cannot test"}, {"why", why}});
    return 125;
  };

  // 1. as configured, judged by the predicate (auto: what it fails)
  Step full = run({}, pred);
  if (pred == Predicate::Auto) {
    pred = full.record ? (accuracy_failure(*full.record).empty() ? Predicate::Auto : Predicate::Accuracy)
           : full.failure == "crash"    ? Predicate::Crash
           : full.failure == "hang"     ? Predicate::Hang
           : full.failure == "disagree" ? Predicate::Ranks
                                        : Predicate::Auto;
    if (!full.record && pred == Predicate::Auto) return cannot("the run as configured did not finish: " + full.why);
    if (!full.record) std::cout << "(predicate " << predicate_name(pred) << ": how the run as configured fails)\n";
  }
  if (full.verdict < 0) return cannot("the run as configured fails another way than --predicate " +
                                      std::string(predicate_name(pred)) + ": " + full.why);
  if (full.verdict == 0 || pred == Predicate::Kernels || pred == Predicate::Graphs) {
    if (full.record && (pred == Predicate::Auto || pred == Predicate::Kernels || pred == Predicate::Graphs)) {
      const int rc = golden_report(base, *full.record, pred, json_out, steps);
      if (rc >= 0) return rc;
    }
    const std::string gpath = golden_path(base.golden_dir, backend_name(base.backend), base.repro,
                                          mode_letter(base.mode), base.world, policy_name(base.fusion),
                                          base.fast_paths.text());
    std::cout << "fusegate bisect: " << base.repro << " is good as configured ("
              << (pred == Predicate::Auto || pred == Predicate::Accuracy
                      ? std::string("every output passes its accuracy check") +
                            (std::filesystem::exists(gpath) ? ", and the run matches its golden" : "")
                      : std::string("by --predicate ") + predicate_name(pred))
              << "): nothing to bisect\n";
    write_json({{"result", "nothing to bisect"}});
    return 0;
  }

  // what the run as configured made, where it left a record
  std::map<std::string, size_t> counts;  // subsystem -> applications, all graphs
  const bool known = full.record.has_value();
  if (known)
    for (const auto& s : subs) counts[s] = applications(*full.record, s).size();
  auto tried = [&](const std::string& s) { return !known || counts[s] > 0; };
  if (known) {
    size_t biggest = 1;
    int applied = 0;
    for (const auto& [s, n] : counts) {
      biggest = std::max(biggest, n);
      applied += n > 0 ? 1 : 0;
    }
    bound = 2 + applied + static_cast<int>(std::ceil(std::log2(static_cast<double>(biggest)))) +
            static_cast<int>(std::ceil(std::log2(static_cast<double>(graphs_of(*full.record)))));
  }

  // 2. everything off (a subsystem the run never applied needs no limit:
  // the replay commands name only those that matter)
  Limits off;
  for (const auto& s : subs)
    if (tried(s)) off[s][-1] = 0;
  Step none = run(off, pred);
  if (none.verdict < 0) return cannot("with every subsystem off the run fails another way: " + none.why);
  if (none.verdict == 1) {
    // the stage before them: capture. Mode A runs the repro op by op with
    // nothing captured; bad there too, the compiler is not to blame. (Not
    // for accuracy: eager is what the accuracy check holds the compiled
    // run to, and mode A records no such check.)
    Step e;
    e.verdict = 0;
    if (pred != Predicate::Accuracy) {
      RunSpec eager = base;
      eager.mode = Mode::Eager;
      e = run_spec(eager, {}, pred, "mode A (eager, nothing captured)");
    }
    if (e.verdict == 1) {
      std::cout << "fusegate bisect: bad in eager too (mode A, nothing captured or compiled): not the compiler; "
                   "look at the repro, ATen and the collectives\n";
      write_json({{"result", "bad in eager"}});
      return 1;
    }
    std::cout << "fusegate bisect: bad with every switchable subsystem off (FUSEGATE_BISECT=" << limits_text(off)
              << (off.count("lowerings") ? ": every op a library call" : "") << ")"
              << (pred == Predicate::Accuracy ? "" : e.verdict == 0 ? " and good in eager (mode A)" : ", eager not judged")
              << "\n"
              << "  stage: capture; no decomposition, lowering, fusion decision, rewrite or fast path is to blame: "
                 "look at what capture made (its graphs, breaks and guards), the library calls (GEMMs, attention, "
                 "ATen) and the collectives (fusegate explain "
              << base.repro << ")\n";
    write_json({{"result", "bad with every subsystem off"}, {"stage", "capture"}});
    return 1;
  }
  const long long graphs = known ? graphs_of(*full.record) : graphs_of(*none.record);

  // 3. the first subsystem whose enabling turns good into bad
  std::string culprit_sub;
  Limits limits = off;
  record::RunRecord below = *none.record;  // the good run with the culprit subsystem off
  std::optional<record::RunRecord> bad_record;  // a bad run with a record (accuracy)
  for (const auto& s : subs) {
    if (!tried(s)) continue;
    // (counts not known: the good run before lists the first application
    // each limit held back; a subsystem it lists none of would apply
    // nowhere, its limit left as is)
    if (!known && !held_back(below, s, -1)) {
      limits.erase(s);
      continue;
    }
    limits.erase(s);  // on, unlimited
    if (limits.empty()) {  // every applied subsystem on: the run as configured, known bad
      bad_record = full.record;
      culprit_sub = s;
      break;
    }
    Step st = run(limits, pred);
    if (st.verdict < 0) return cannot("switching on " + s + " fails another way: " + st.why);
    if (st.verdict == 1) {
      culprit_sub = s;
      bad_record = st.record;
      break;
    }
    below = *st.record;
  }
  if (culprit_sub.empty())
    return cannot("bad as configured but good with every subsystem switched on in turn: the result is not "
                  "reproducible");
  const std::string s = culprit_sub;

  // 4. with graph breaks, the first graph whose enabling is bad: graphs
  // before it on, graphs after it off (counts per graph: fusion/bisect.h)
  std::vector<long long> cand;  // graphs that may hold the culprit
  for (long long g = 0; g < graphs; ++g)
    if (known ? !applications(*full.record, s, g).empty() : held_back(below, s, g).has_value()) cand.push_back(g);
  long long graph = cand.empty() ? 0 : cand.front();
  auto with = [&](size_t upto, long long k) {  // graphs cand[0..upto) all on, cand[upto] at k
    Limits l = limits;
    if (graphs == 1) {
      l[s] = {{-1, k}};
      return l;
    }
    l[s] = {{-1, 0}};
    for (size_t i = 0; i < upto; ++i) l[s][cand[i]] = -1;
    l[s][cand[upto]] = k;
    return l;
  };
  // the smallest x in [lo, hi] whose run is bad (hi known bad), halving; a
  // good run is kept as `below` (the run at the answer - 1), a bad one's
  // record as the bad record; nullopt: a run failed another way (said)
  int rc = 0;
  auto first_bad = [&](long long lo, long long hi, const std::function<Limits(long long)>& at,
                       const std::string& what) -> std::optional<long long> {
    while (lo < hi) {
      const long long mid = (lo + hi) / 2;
      Step st = run(at(mid), pred);
      if (st.verdict < 0) {
        rc = cannot(what + std::to_string(mid) + " fails another way: " + st.why);
        return std::nullopt;
      }
      if (st.verdict == 1) {
        hi = mid;
        bad_record = st.record;
      } else {
        lo = mid + 1;
        below = *st.record;
      }
    }
    return lo;
  };
  size_t at = 0;
  if (graphs > 1 && cand.size() > 1) {
    // (cand.back() on: every graph on, known bad)
    const auto i = first_bad(0, static_cast<long long>(cand.size()) - 1,
                             [&](long long x) { return with(static_cast<size_t>(x), -1); }, "graph index ");
    if (!i) return rc;
    at = static_cast<size_t>(*i);
    graph = cand[at];
  }

  // 5. the first application in that graph that is bad
  long long lo = 1, hi = -1;  // hi: the smallest count known bad (-1: not yet)
  if (known) hi = static_cast<long long>(applications(*full.record, s, graph).size());
  if (hi < 0) {
    for (long long k = 1;; k *= 2) {
      Step st = run(with(at, k), pred);
      if (st.verdict < 0) return cannot(s + ":" + std::to_string(k) + " fails another way: " + st.why);
      if (st.verdict == 1) {
        hi = k;
        bad_record = st.record;
        break;
      }
      const long long made = static_cast<long long>(applications(*st.record, s, graph).size());
      if (made < k)
        return cannot("good with all " + std::to_string(made) + " applications of " + s + " in graph " +
                      std::to_string(graph) + ", bad with the subsystem on: the result is not reproducible");
      below = *st.record;
      lo = k + 1;
    }
  }
  const auto first = first_bad(lo, hi, [&](long long x) { return with(at, x); }, s + ":");
  if (!first) return rc;
  const long long k = *first;
  const std::string bad_env = limits_text(with(at, k));
  const std::string good_env = limits_text(with(at, k - 1));
  // the culprit: the k-th application in the bad run's record, or, where
  // the bad run left none (a crash, a hang), the one the good run's limit
  // held back
  std::optional<Application> entry;
  std::vector<Application> apps;
  if (bad_record) {
    apps = applications(*bad_record, s, graph);
    if (static_cast<long long>(apps.size()) >= k) entry = apps[static_cast<size_t>(k - 1)];
  } else {
    entry = held_back(below, s, graph);
  }
  if (!entry)
    return cannot("the runs do not name application " + std::to_string(k) + " of " + s + " in graph " +
                  std::to_string(graph));
  const size_t of_total = known ? applications(*full.record, s, graph).size() : 0;
  std::string flags = " --mode " + std::string(mode_letter(base.mode)) + " --world-size " + std::to_string(base.world);
  if (base.backend != Backend::Cpu) flags += " --backend " + std::string(backend_name(base.backend));
  if (base.fusion != FusionPolicy::Default) flags += " --fusion " + std::string(policy_name(base.fusion));
  if (!base.fast_paths.is_default()) flags += " --fast-paths " + base.fast_paths.text();
  if (pred == Predicate::Hang) flags += " --timeout " + std::to_string(base.timeout_s);
  // the folders a repro came from (a fuzz finding's, a --repro-dir), all but
  // the shipped one
  for (const auto& d : base.fg_dirs)
    if (std::filesystem::path(d).lexically_normal().string().find("repros/fg") == std::string::npos)
      flags += " --repro-dir '" + d + "'";
  std::cout << "\nfusegate bisect: " << base.repro << ": the culprit is application " << k
            << (of_total ? " of " + std::to_string(of_total) : "") << " of " << s
            << (graphs > 1 ? " in graph " + std::to_string(graph) + " of " + std::to_string(graphs) : "") << " ("
            << step << " runs; predicate " << predicate_name(pred) << ")\n"
            << "  stage: " << s << "; rule: " << rule_of(*entry, s) << "\n"
            << "  " << describe(*entry) << "\n";
  std::cout << source_excerpt(*entry, base.golden_dir, base.fg_dirs);
  // (explain compiles under the bad limits: only where that cannot crash or hang)
  if (pred == Predicate::Accuracy) std::cout << culprit_kernel(base, bad_env, *entry);
  const std::string env = replay_env(false);  // FUSEGATE_FAULT and the like, as this search saw them
  std::cout << "  replay, good: " << env << "FUSEGATE_BISECT=" << good_env << " fusegate run " << base.repro << flags
            << "\n"
            << "  replay, bad:  " << env << "FUSEGATE_BISECT=" << bad_env << " fusegate run " << base.repro << flags
            << "\n";
  json j = {{"result", "culprit"}, {"subsystem", s},   {"application", k},  {"graph", graph},
            {"graphs", graphs},    {"entry", entry->to_json()}, {"good", good_env}, {"bad", bad_env},
            {"runs", step}};
  if (known) j["applications"] = of_total;
  write_json(j);
  return 1;
}

}  // namespace fg
