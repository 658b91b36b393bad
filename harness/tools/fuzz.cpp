// fusegate fuzz (harness/tools/fuzz.h): the jobs, their supervisor and the
// finding files; one graph judged in fuzz_check.cpp, a finding made small in
// fuzz_minimize.cpp.
#include "harness/tools/fuzz.h"
#include "harness/run/scratch.h"
#include "harness/run/run.h"
#include "harness/tools/fuzz_parts.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <xxhash.h>

#include <chrono>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <ATen/Parallel.h>
#include <nlohmann/json.hpp>

#include "fusion/errors.h"
#include "fusion/fault.h"
#include "fusion/ir/text.h"
#include "fusion/passes/schedule.h"
#include "harness/run/digest.h"
#include "harness/run/forward.h"
#include "harness/tools/fuzz_gen.h"
#include "harness/record/files.h"
#include "harness/record/json_read.h"
#include "harness/run/nodes.h"
#include "harness/run/run.h"
#include "kernels/collectives/collectives.h"
#include "repros/registry.h"

namespace fg {

namespace {


// What a job (or the whole run) saw.
struct Tally {
  int64_t graphs = 0, refused = 0;
  std::map<int, int64_t> by_world;             // graphs run at each world size
  std::set<std::string> covered;               // op names of the graphs run
  std::map<std::string, uint64_t> refusals;    // what eager refused: the first seed of each
  std::vector<nlohmann::json> findings;
};

nlohmann::json tally_json(const Tally& t) {
  nlohmann::json by_world = nlohmann::json::object();
  for (const auto& [w, n] : t.by_world) by_world[std::to_string(w)] = n;
  nlohmann::json refusals = nlohmann::json::array();
  for (const auto& [why, seed] : t.refusals) refusals.push_back({{"why", why}, {"seed", seed}});
  return {{"graphs", t.graphs},       {"refused_by_eager", t.refused},
          {"graphs_by_world", by_world}, {"ops_covered", std::vector<std::string>(t.covered.begin(), t.covered.end())},
          {"refusals", refusals},     {"findings", t.findings}};
}

void add_tally(Tally& into, const nlohmann::json& j) {
  into.graphs += j.at("graphs").get<int64_t>();
  into.refused += j.at("refused_by_eager").get<int64_t>();
  for (const auto& [w, n] : j.at("graphs_by_world").items()) into.by_world[std::stoi(w)] += n.get<int64_t>();
  for (const auto& op : j.at("ops_covered")) into.covered.insert(op.get<std::string>());
  for (const auto& r : j.at("refusals"))
    if (into.refusals.size() < 5) into.refusals.emplace(r.at("why").get<std::string>(), r.at("seed").get<uint64_t>());
  for (const auto& f : j.at("findings")) into.findings.push_back(f);
}

std::string policies_text(const FuzzOptions& o) {
  std::string s;
  for (FusionPolicy p : o.policies) s += (s.empty() ? "" : ",") + std::string(policy_name(p));
  return s;
}

std::set<std::string> op_universe(const FuzzOptions& o) {
  std::set<std::string> u;
  for (int w : o.worlds) {
    auto part = fuzz_op_universe(w);
    u.insert(part.begin(), part.end());
  }
  return u;
}

std::string progress_line(const Tally& t, double secs, size_t universe) {
  char buf[200];
  std::snprintf(buf, sizeof buf, "fuzz: %lld graphs in %.0f s (%.2f/s), ops %zu/%zu, %zu findings",
                static_cast<long long>(t.graphs), secs, secs > 0 ? t.graphs / secs : 0.0, t.covered.size(), universe,
                t.findings.size());
  return buf;
}

// Job `job` of `jobs`: graphs first, first + jobs, ... (first is job, or
// where a restarted job goes on; seed o.seed + index) at
// world size fr.world, until the time, the graph count or the findings run
// out (at world size > 1 the ranks agree each time to go on). `note` is
// called before each graph with where the job is, `after` after each.
FuzzGenOptions gen_options(const FuzzOptions& o, int world) {
  FuzzGenOptions gen;
  gen.max_ops = o.max_ops;
  gen.half = o.backend != Backend::Cpu;
  gen.world = world;
  return gen;
}

// The prefix of a job's files in a supervised run's folder: one set a life.
std::string job_stem(const std::string& dir, int job, int life) {
  return dir + "/job" + std::to_string(job) + "." + std::to_string(life);
}

void run_job(const FuzzOptions& o, int job, int jobs, int64_t first, FuzzRank& fr, Tally& t,
             const std::function<void(const std::string&)>& note, const std::function<void()>& after,
             double deadline_s, const std::function<double()>& elapsed) {
  namespace fs = std::filesystem;
  const std::string who =
      !o.minify_out.empty() ? "minify: " : jobs > 1 ? "fuzz job " + std::to_string(job) + ": " : "fuzz: ";
  for (int64_t index = first;; index += jobs) {
    bool go = elapsed() < deadline_s && (o.graphs == 0 || index < o.graphs) &&
              static_cast<int>(t.findings.size()) < o.max_findings;
    if (fr.world > 1) {  // every rank goes on, or none
      for (const auto& v : exchange_verdicts(fr, nlohmann::json(go))) go = go && v.get<bool>();
    }
    if (!go) break;
    const uint64_t seed = o.seed + static_cast<uint64_t>(index);
    note("graph " + std::to_string(index) + " (seed " + std::to_string(seed) + ")");
    FuzzGraph fg = fuzz_graph(o, index, fr.world);
    if (o.print_graphs && fr.rank == 0)
      std::cerr << "# graph " << index << " (seed " << seed << ")\n" << print_graph(fg.graph) << std::flush;
    ++t.graphs;
    ++t.by_world[fr.world];
    const std::string name = o.graph_text.empty() ? fuzz_name(fg.graph) : o.graph_name;
    std::string why;
    std::optional<FuzzFinding> f = fuzz_check(fg.graph, name, o, fr, &why);
    if (!f) {
      ++t.refused;
      if (t.refusals.size() < 5 && !t.refusals.count(why)) t.refusals[why] = seed;
      after();
      continue;
    }
    t.covered.insert(fg.ops.begin(), fg.ops.end());
    if (f->kind.empty()) {
      after();
      continue;
    }
    note("minimizing graph " + std::to_string(index) + " (seed " + std::to_string(seed) + ")");
    t.findings.push_back(write_finding(o, fr, fg.graph, *f, index, seed, who));
    after();
  }
}

}  // namespace

FuzzGraph fuzz_graph(const FuzzOptions& o, int64_t index, int world) {
  if (o.graph_text.empty()) return generate_graph(o.seed + static_cast<uint64_t>(index), gen_options(o, world));
  FuzzGraph f;
  f.graph = parse_graph(o.graph_text, o.graph_name + ".fg");
  for (const Node& n : f.graph.nodes)
    if (n.op != Op::Input) f.ops.insert(op_name(n.op));
  return f;
}

namespace {

// The summary both ways of running print, and write with --json.
int summarize(const FuzzOptions& o, const Tally& t, double secs, bool tty) {
  if (!o.minify_out.empty()) {  // fusegate minify: the one graph's verdict
    if (tty) std::cerr << "\r";
    if (!t.findings.empty()) {
      const nlohmann::json& f = t.findings[0];
      std::cout << "fusegate minify: " << o.graph_name << ": " << f.at("kind").get<std::string>() << " under --fusion "
                << f.at("fusion").get<std::string>() << " at world size " << f.at("world_size").get<int>() << ": "
                << f.at("nodes").get<int>() << " -> " << f.at("minimized_nodes").get<int>() << " nodes in "
                << f.value("checks", 0) << " checks (" << static_cast<int>(secs) << " s); wrote "
                << f.at("file").get<std::string>() << "\n";
      return 1;
    }
    if (t.refused) {
      std::cout << "fusegate minify: " << o.graph_name << ": eager refused it: "
                << (t.refusals.empty() ? std::string("?") : t.refusals.begin()->first) << " (cannot test)\n";
      return 125;
    }
    std::cout << "fusegate minify: " << o.graph_name << " passes (mode C, world size " << o.worlds[0]
              << ", --fusion " << policies_text(o) << "): nothing to minify\n";
    return 0;
  }
  const std::set<std::string> universe = op_universe(o);
  std::cerr << (tty ? "\r" : "") << progress_line(t, secs, universe.size()) << "\n";
  std::string missing;
  for (const auto& op : universe)
    if (!t.covered.count(op)) missing += (missing.empty() ? "" : " ") + op;
  std::string worlds;
  for (const auto& [w, n] : t.by_world)
    worlds += (worlds.empty() ? "" : ", ") + std::to_string(n) + " at world size " + std::to_string(w);
  std::cout << "fusegate fuzz: seed " << o.seed << ", --fusion " << policies_text(o) << ", " << backend_name(o.backend)
            << ", --jobs " << o.jobs << ": " << t.graphs << " graphs in " << static_cast<int>(secs) << " s ("
            << (secs > 0 ? t.graphs / secs : 0) << " graphs/s" << (worlds.empty() ? "" : "; " + worlds) << "), ops "
            << t.covered.size() << "/" << universe.size() << (missing.empty() ? "" : " (never: " + missing + ")")
            << ", " << t.findings.size() << " findings"
            << (t.refused ? ", " + std::to_string(t.refused) + " graphs eager refused (a generator bug)" : "") << "\n";
  for (const auto& [why, seed] : t.refusals) std::cout << "  eager refused seed " << seed << ": " << why << "\n";
  if (!o.json_out.empty()) {
    nlohmann::json j = tally_json(t);
    j.update({{"seed", o.seed},
              {"fusion", policies_text(o)},
              {"backend", backend_name(o.backend)},
              {"world_sizes", o.worlds},
              {"jobs", o.jobs},
              {"fast_paths", o.fast_paths},
              {"seconds", secs},
              {"graphs_per_second", secs > 0 ? t.graphs / secs : 0},
              {"ops_total", universe.size()}});
    write_atomic(o.json_out, j.dump(2) + "\n");
  }
  if (t.graphs == 0 && t.findings.empty()) cannot_test("fuzz ran no graph (--seconds or --graphs too small)");
  return t.findings.empty() && t.refused == 0 ? 0 : 1;
}

nlohmann::json options_json(const FuzzOptions& o) {
  std::vector<int> policies;
  for (FusionPolicy p : o.policies) policies.push_back(static_cast<int>(p));
  return {{"seconds", o.seconds},       {"graphs", o.graphs},
          {"seed", o.seed},             {"backend", static_cast<int>(o.backend)},
          {"policies", policies},       {"max_ops", o.max_ops},
          {"findings_dir", o.findings_dir}, {"max_findings", o.max_findings},
          {"worlds", o.worlds},         {"jobs", o.jobs},
          {"fast_paths", o.fast_paths}, {"golden_dir", o.golden_dir},
          {"timeout_s", o.timeout_s}, {"print_graphs", o.print_graphs},
          {"graph_text", o.graph_text}, {"graph_name", o.graph_name},
          {"minify_out", o.minify_out}, {"gate_accuracy", o.gate_accuracy},
          {"mode", mode_letter(o.mode)}, {"breaks_allowed", o.breaks_allowed}};
}

FuzzOptions options_from(const nlohmann::json& j) {
  FuzzOptions o;
  o.seconds = j.at("seconds").get<double>();
  o.graphs = j.at("graphs").get<int64_t>();
  o.seed = j.at("seed").get<uint64_t>();
  o.backend = static_cast<Backend>(j.at("backend").get<int>());
  o.policies.clear();
  for (int p : j.at("policies").get<std::vector<int>>()) o.policies.push_back(static_cast<FusionPolicy>(p));
  o.max_ops = j.at("max_ops").get<int>();
  o.findings_dir = j.at("findings_dir").get<std::string>();
  o.max_findings = j.at("max_findings").get<int>();
  o.worlds = j.at("worlds").get<std::vector<int>>();
  o.jobs = j.at("jobs").get<int>();
  o.fast_paths = j.at("fast_paths").get<std::string>();
  o.golden_dir = j.at("golden_dir").get<std::string>();
  o.timeout_s = j.at("timeout_s").get<int>();
  o.print_graphs = j.at("print_graphs").get<bool>();
  o.graph_text = j.at("graph_text").get<std::string>();
  o.graph_name = j.at("graph_name").get<std::string>();
  o.minify_out = j.at("minify_out").get<std::string>();
  o.gate_accuracy = j.at("gate_accuracy").get<bool>();
  o.mode = parse_mode(j.at("mode").get<std::string>());
  o.breaks_allowed = j.at("breaks_allowed").get<bool>();
  return o;
}

std::string trim_text(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

std::string file_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The graph index in a job's status line ("graph I (seed S)" or
// "minimizing graph I (seed S)"); -1: none yet.
int64_t status_index(const std::string& where) {
  const size_t at = where.find("graph ");
  return at == std::string::npos ? -1 : std::strtoll(where.c_str() + at + 6, nullptr, 10);
}

// The supervisor of --jobs > 1 or a world size > 1 (see harness/tools/fuzz.h).
// A job that dies or hangs is a finding (its graph written unminimized, the
// job's ranks having died with it) and starts again at its next graph, a
// new life: its ranks' files and store keys carry the life's number.
int supervise(const FuzzOptions& o) {
  namespace fs = std::filesystem;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const bool tty = isatty(2);
  // SIGINT/SIGTERM: the jobs stopped and the scratch folder removed before
  // the supervisor dies of the signal; SIGKILL: the jobs die with it
  // (PR_SET_PDEATHSIG) and the next fusegate sweeps the folder
  const StopDeferred deferred;
  sweep_scratch("fusegate-fuzz-");
  const Scratch scratch("fusegate-fuzz-");
  const std::string dir = scratch.dir();
  write_atomic(dir + "/options.json", options_json(o).dump(2) + "\n");
  const LocalStore store = serve_local_store(o.timeout_s);
  const int port = store.port;
  const std::string self = fs::read_symlink("/proc/self/exe").string();
  struct Rank {
    int job, life, rank;
    pid_t pid;
    bool running = true;
  };
  std::vector<Rank> ranks;
  std::vector<int> lives(static_cast<size_t>(o.jobs), 0);  // the current life of each job
  auto world_of = [&](int j) { return o.worlds[static_cast<size_t>(j) % o.worlds.size()]; };
  auto stem = [&](int j, int life) { return job_stem(dir, j, life); };
  auto start_job = [&](int j, int64_t first) {
    const int life = lives[static_cast<size_t>(j)];
    const double left = o.seconds - elapsed();
    for (int r = 0; r < world_of(j); ++r) {
      std::vector<std::string> args = {self, "_fuzzjob", "--dir", dir, "--job", std::to_string(j), "--life",
                                       std::to_string(life), "--from", std::to_string(first), "--seconds-left",
                                       std::to_string(left), "--rank", std::to_string(r), "--port",
                                       std::to_string(port)};
      pid_t pid = fork();
      if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        std::vector<char*> argv;
        for (auto& a : args) argv.push_back(a.data());
        argv.push_back(nullptr);
        execv(self.c_str(), argv.data());
        _exit(127);
      }
      if (pid < 0) cannot_test("fuzz: cannot start job " + std::to_string(j));
      ranks.push_back({j, life, r, pid});
    }
  };
  for (int j = 0; j < o.jobs; ++j) start_job(j, j);
  auto status_of = [&](int j, int life, int r) {
    std::string s = file_text(stem(j, life) + ".rank" + std::to_string(r) + ".status");
    return s.empty() ? std::string("starting") : s;
  };
  Tally lost;  // what the supervisor itself found: jobs that died or hung
  int worst_exit = 0;  // a job's 2 (bad input) or 125 (cannot test)
  auto stop_job = [&](int j) {
    for (Rank& x : ranks)
      if (x.job == j && x.running) {
        kill(x.pid, SIGKILL);
        waitpid(x.pid, nullptr, 0);
        x.running = false;
      }
  };
  // the tally of every life of every job so far: a life that ended wrote
  // its .json, one that died left the .progress of its last graph
  auto tally_now = [&] {
    Tally now = lost;
    for (int j = 0; j < o.jobs; ++j)
      for (int life = 0; life <= lives[static_cast<size_t>(j)]; ++life) {
        std::string p = file_text(stem(j, life) + ".json");
        if (p.empty()) p = file_text(stem(j, life) + ".progress");
        try {
          if (!p.empty()) add_tally(now, nlohmann::json::parse(p));
        } catch (const std::exception&) {  // being rewritten: the next look
        }
      }
    return now;
  };
  auto lose = [&](const Rank& x, const std::string& what) {
    const int j = x.job, world = world_of(j);
    const std::string where = trim_text(status_of(j, x.life, x.rank));
    stop_job(j);
    std::cerr << (tty ? "\n" : "") << "fuzz job " << j << " rank " << x.rank << " " << what << " on " << where << "\n";
    const int64_t index = status_index(where);
    nlohmann::json seed = nullptr;
    std::string file;
    if (index >= 0) {
      // the graph it was on, unminimized (a graph that kills its job is
      // not shrunk: each try could take a job down)
      seed = o.seed + static_cast<uint64_t>(index);
      const Graph g = fuzz_graph(o, index, world).graph;
      file = o.findings_dir + "/" + fuzz_name(g) + ".fg";
      const std::string cmd = replay_env() + "fusegate run --graph " + file + replay_flags(o, nullptr, world);
      fs::create_directories(o.findings_dir);
      write_atomic(file, "# fusegate fuzz finding: job " + std::to_string(j) + " rank " + std::to_string(x.rank) + " " +
                             what + " on this graph (under --fusion " + policies_text(o) + ")\n# from graph " +
                             std::to_string(index) + " of fusegate fuzz --seed " + std::to_string(o.seed) + " (seed " +
                             std::to_string(seed.get<uint64_t>()) + "; not minimized)\n# replay: " + cmd + "\n" +
                             print_graph(g));
      std::cerr << "  wrote " << file << "\n  replay: " << cmd << "\n";
    }
    lost.findings.push_back({{"kind", what.find("silent") != std::string::npos ? "hang" : "crash"},
                             {"detail", "job " + std::to_string(j) + " rank " + std::to_string(x.rank) + " " + what},
                             {"at", where},
                             {"seed", seed},
                             {"world_size", world},
                             {"file", file},
                             {"replays", false}});
    // the job goes on at its next graph while time, graphs and findings last
    const int64_t next = index >= 0 ? index + o.jobs : j;
    if (elapsed() < o.seconds && (o.graphs == 0 || next < o.graphs) &&
        static_cast<int>(tally_now().findings.size()) < o.max_findings * o.jobs) {
      ++lives[static_cast<size_t>(j)];
      start_job(j, next);
    }
  };
  double last_line = -1;
  const size_t universe = op_universe(o).size();
  for (;;) {
    if (const int sig = stop_signal()) {
      for (int j = 0; j < o.jobs; ++j) stop_job(j);
      remove_tree(dir);
      die_of_signal(sig);
    }
    bool any = false;
    for (size_t k = 0; k < ranks.size(); ++k) {  // lose() may add ranks
      Rank x = ranks[k];
      if (!x.running) continue;
      int st = 0;
      pid_t got = waitpid(x.pid, &st, WNOHANG);
      if (got == 0) {
        any = true;
        // a job silent 3 timeouts long: hung (each rank notes each graph and check)
        struct stat sb {};
        const std::string sf = stem(x.job, x.life) + ".rank" + std::to_string(x.rank) + ".status";
        if (::stat(sf.c_str(), &sb) == 0 && std::time(nullptr) - sb.st_mtime > 3 * o.timeout_s)
          lose(x, "was silent for " + std::to_string(3 * o.timeout_s) + " s");
        continue;
      }
      ranks[k].running = false;
      // a job that died of the stop (Ctrl-C reaches its process group too)
      // is no finding: the supervisor stops below
      if (stop_signal()) continue;
      if (WIFSIGNALED(st)) {
        lose(x, std::string("was killed by signal ") + std::to_string(WTERMSIG(st)) + " (" + strsignal(WTERMSIG(st)) +
                    ")");
        any = true;
      } else if (WIFEXITED(st) && WEXITSTATUS(st) != 0 && WEXITSTATUS(st) != 1) {
        const int code = WEXITSTATUS(st);
        if (code == 2 || code == 125) {
          worst_exit = std::max(worst_exit, code);
          stop_job(x.job);
        } else {
          lose(x, "exited " + std::to_string(code));
          any = true;
        }
      }
    }
    // the line: every job's progress so far
    if (any && o.minify_out.empty() && (tty || elapsed() - last_line >= 30)) {
      const Tally now = tally_now();
      if (tty) std::cerr << "\r" << progress_line(now, elapsed(), universe) << std::flush;
      else std::cerr << progress_line(now, elapsed(), universe) << "\n";
      last_line = elapsed();
    }
    if (!any) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  if (const int sig = stop_signal()) {  // stopped during the last pass
    remove_tree(dir);
    die_of_signal(sig);
  }
  const Tally t = tally_now();
  if (worst_exit) {
    std::cerr << "fuzz: a job stopped with exit code " << worst_exit << " (its message is above)\n";
    return worst_exit;
  }
  return summarize(o, t, elapsed(), tty);
}

}  // namespace

// A written graph with a collective needs a process group, of one rank at
// world size 1 (a block's all-reduce in `fusegate minify`).
static bool needs_group(const FuzzOptions& o) {
  if (o.graph_text.empty()) return false;
  for (const Node& n : parse_graph(o.graph_text, o.graph_name + ".fg").nodes)
    if (fusion_kind(n.op) == FusionKind::Collective) return true;
  return false;
}

namespace {

int emit_graphs(const FuzzOptions& o) {
  const int world = o.worlds.front();
  for (int64_t i = 0; i < o.graphs; ++i) {
    const uint64_t seed = o.seed + static_cast<uint64_t>(i);
    const FuzzGraph fg = generate_graph(seed, gen_options(o, world));
    std::string text = "# fusegate fuzz --emit: the graph of seed " + std::to_string(seed) + " (--max-ops " +
                             std::to_string(o.max_ops) + ", world size " + std::to_string(world) + ", backend " +
                             backend_name(o.backend) + ")\n" + print_graph(fg.graph);
    if (text.back() != '\n') text += "\n";
    write_atomic(o.emit_dir + "/fuzz_" + std::to_string(seed) + ".fg", text);
  }
  std::cout << "fuzz: wrote " << o.graphs << " graphs (seeds " << o.seed << " to "
            << o.seed + static_cast<uint64_t>(o.graphs - 1) << ") into " << o.emit_dir << "\n";
  return 0;
}

}  // namespace

int cmd_fuzz(const FuzzOptions& o) {
  if (!o.emit_dir.empty()) return emit_graphs(o);
  if (o.jobs > 1 || o.worlds != std::vector<int>{1} || needs_group(o)) return supervise(o);
  // one job at world size 1: in this process
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const bool tty = isatty(2);
  const size_t universe = op_universe(o).size();
  FuzzRank fr;
  fr.proofs = device_fast_path_proofs(o.golden_dir, o.backend, 1);
  Tally t;
  double last_line = -1;
  run_job(
      o, 0, 1, 0, fr, t, [](const std::string&) {},
      [&] {
        if (!tty && elapsed() - last_line < 30) return;
        if (tty) std::cerr << "\r" << progress_line(t, elapsed(), universe) << std::flush;
        else std::cerr << progress_line(t, elapsed(), universe) << "\n";
        last_line = elapsed();
      },
      o.seconds, elapsed);
  return summarize(o, t, elapsed(), tty);
}

int fuzz_job_main(const FuzzJobSpec& spec) {
  at::set_num_threads(1);  // jobs share the cores; the ranks of a job compute the same bits
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  const std::string& dir = spec.dir;
  const int job = spec.job, rank = spec.rank;
  const FuzzOptions o = options_from(nlohmann::json::parse(file_text(dir + "/options.json")));
  const int world = o.worlds[static_cast<size_t>(job) % o.worlds.size()];
  const std::string stem = job_stem(dir, job, spec.life);
  const std::string status = stem + ".rank" + std::to_string(rank) + ".status";
  write_atomic(status, "joining the process group\n");
  if (o.backend == Backend::Cuda) cuda_select_device(rank);
  std::unique_ptr<Collectives> coll;
  if (world > 1 || needs_group(o))
    coll = std::make_unique<Collectives>("127.0.0.1", spec.port, rank, world, o.timeout_s,
                                         o.backend == Backend::Cuda ? "nccl" : "gloo",
                                         "job" + std::to_string(job) + "." + std::to_string(spec.life) + "/");
  // FUSEGATE_FAULT=diverge_fusion:R: rank R alone compiles with another
  // fusion rule (what the ranks' agreement must catch)
  if (fault_argument("diverge_fusion") == std::to_string(rank)) fault_enable("refuse_fusion", "reduction");
  FuzzRank fr;
  fr.coll = coll.get();
  fr.rank = rank;
  fr.world = world;
  fr.proofs = device_fast_path_proofs(o.golden_dir, o.backend, world);
  Tally t;
  run_job(
      o, job, o.jobs, spec.first, fr, t,
      [&](const std::string& where) {
        write_atomic(status, where + "\n");
        // FUSEGATE_FAULT=crash:R or hang:R: rank R of every job aborts or
        // stops answering at its first graph, in its first life (the
        // supervisor must name it, and go on); crash_at:I kills the rank 0
        // that runs graph I
        if (spec.life == 0 && fault_argument("crash") == std::to_string(rank)) std::abort();
        if (spec.life == 0 && fault_argument("hang") == std::to_string(rank))
          for (;;) std::this_thread::sleep_for(std::chrono::seconds(60));
        if (rank == 0 && !fault_argument("crash_at").empty() && where.rfind("graph ", 0) == 0 &&
            std::to_string(status_index(where)) == fault_argument("crash_at"))
          std::abort();
      },
      [&] {  // after each graph: what a supervisor counts if this rank dies next
        if (rank == 0) write_atomic(stem + ".progress", tally_json(t).dump() + "\n");
      },
      spec.seconds_left, elapsed);
  if (rank == 0) write_atomic(stem + ".json", tally_json(t).dump() + "\n");
  if (coll) coll->barrier();  // no rank leaves while another may still need the group
  return t.findings.empty() && t.refused == 0 ? 0 : 1;
}

}  // namespace fg
