// The rank launcher: hosts the c10d TCPStore, starts one process per rank
// (each in its own process group, killed if the launcher dies), and waits
// for all of them within the timeout. A crash or a hang stops every rank and
// names the rank; no process is left behind.
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <torch/csrc/distributed/c10d/TCPStore.hpp>
#include <dirent.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>

#include "fusion/capture/session.h"
#include "fusion/errors.h"
#include "fusion/passes/schedule.h"
#include "harness/run/environment.h"
#include "harness/record/golden.h"
#include "harness/record/files.h"
#include "harness/record/golden_env.h"
#include "harness/run/liveness.h"
#include "harness/run/nodes.h"
#include "harness/record/proofs.h"
#include "harness/run/run.h"
#include "harness/run/scratch.h"
#include "harness/run/spawner.h"
#include "fusion/fastpaths/catalog.h"
#include "kernels/cpu/runtime.h"
#include "repros/registry.h"

namespace fg {

namespace {

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

// A rank's record as its worker wrote it (record::part_to_json; an ab
// run's figures as ab_rank wrote them): one that does not read back is
// fusegate's bug, never the user's.
void add_rank(RunOutcome* out, const RunSpec& spec, const std::string& text, int rank) {
  try {
    nlohmann::json j = nlohmann::json::parse(text);
    if (spec.ab_fast_path.empty()) out->record.ranks.push_back(record::part_from_json<record::RankRecord>(j));
    else out->ab_ranks.push_back(record::part_from_json<record::AbRankRecord>(j));
  } catch (const std::exception& e) {
    internal_error("rank " + std::to_string(rank) + "'s record does not read back: " + e.what());
  }
}

std::string last_lines(const std::string& text, int n) {
  size_t pos = text.size();
  while (n-- > 0 && pos > 0) {
    pos = text.rfind('\n', pos - 1);
    if (pos == std::string::npos) { pos = 0; break; }
  }
  return text.substr(pos);
}

// what a worker prints before exiting 1 on RanksDisagree (harness/cli/main.cpp)
constexpr const char* kDisagree = "ranks disagree: ";

bool process_alive(pid_t p) { return p > 0 && (kill(p, 0) == 0 || errno == EPERM); }

// A rank stopped between creating a fast path's shared-memory segment and
// unlinking it (its peer died first) leaves the segment behind. Segments are
// named by their rank's pid (kernels/fastpaths/runtime.cpp:
// /fusegate-<pid>-...): those of dead processes go, once the launcher has
// reaped its ranks, and at every start (a launcher killed by SIGKILL).
void remove_dead_segments() {
  DIR* d = opendir("/dev/shm");
  if (!d) return;
  std::vector<std::string> doomed;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name.rfind("fusegate-", 0) != 0) continue;
    const long pid = std::atol(name.c_str() + 9);
    if (pid > 0 && !process_alive(static_cast<pid_t>(pid))) doomed.push_back("/" + name);
  }
  closedir(d);
  for (const auto& n : doomed) shm_unlink(n.c_str());
}

// What a stop signal (SIGINT, SIGTERM, SIGHUP) must not leave behind: the
// ranks of the run in flight (killed in the handler), then its scratch
// folder and shared memory (removed by launch(), which polls g_stop).
constexpr int kMaxRanks = 256;
volatile sig_atomic_t g_stop = 0;
volatile sig_atomic_t g_in_launch = 0;
volatile sig_atomic_t g_deferred = 0;  // StopDeferred objects alive
pid_t g_ranks[kMaxRanks];
volatile sig_atomic_t g_nranks = 0;

void on_stop_signal(int sig) {
  g_stop = sig;
  for (int i = 0; i < g_nranks; ++i)
    if (g_ranks[i] > 0) {
      kill(-g_ranks[i], SIGKILL);
      kill(g_ranks[i], SIGKILL);
    }
  unlink_inflight_write();
  if (!g_in_launch && !g_deferred) {
    // nothing else in flight: die of the signal, as without the handler
    signal(sig, SIG_DFL);
    raise(sig);
  }
}

// Leftovers of launchers and fuzz runs that died without cleaning up
// (SIGKILL, a crash): scratch folders whose owner is gone
// (harness/run/scratch.h), and fast path segments whose rank is gone.
void sweep_stale_runs() {
  sweep_scratch("fusegate-run-");
  sweep_scratch("fusegate-fuzz-");
  remove_dead_segments();
}

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

StopDeferred::StopDeferred() { ++g_deferred; }
StopDeferred::~StopDeferred() { --g_deferred; }
int stop_signal() { return g_stop; }
void die_of_signal(int sig) {
  signal(sig, SIG_DFL);
  raise(sig);
  _exit(128 + sig);
}

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &sa, nullptr);
}

RunOutcome launch(const RunSpec& spec) {
  validate_spec(spec);
  RunOutcome out;
  const bool multi = spec.nnodes > 1;
  const std::string where = spec.master_addr + ":" + std::to_string(spec.master_port);
  std::unique_ptr<c10d::TCPStore> store_holder;
  try {
    // a command's shared store (harness/run/nodes.h), or one for this run alone
    if (!spec.store) store_holder = open_node_store(spec, spec.timeout_s);
  } catch (const CannotTest& e) {
    out.exit_code = 125;
    out.message = e.what();
    return out;
  }
  c10d::TCPStore& store = spec.store ? *spec.store : *store_holder;
  int port = store.getPort();
  // every node says it arrived, so that node 0 can name one that did not
  const std::string node_key = spec.store_prefix + "fusegate-node/";
  if (multi) store.set(node_key + "arrived/" + std::to_string(spec.node_rank), std::vector<uint8_t>{'1'});

  sweep_stale_runs();
  const Scratch scratch("fusegate-run-");  // removed on every return
  const std::string dir = scratch.dir();
  {
    // whose folder this is, for the next launcher's sweep if this one dies
    std::ofstream pid_file(dir + "/launcher.pid");
    pid_file << ::getpid() << "\n";
  }
  g_nranks = 0;
  g_in_launch = 1;
  struct LaunchScope {
    ~LaunchScope() {
      g_nranks = 0;
      g_in_launch = 0;
    }
  } scope;
  std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  // one slot a rank of the world; this node starts ranks first..first+local-1
  const int first = spec.first_rank(), local = spec.local_world();
  std::vector<pid_t> pids(static_cast<size_t>(spec.world), -1);
  for (int rank = first; rank < first + local; ++rank) {
    std::vector<std::string> args = {self, "_worker", spec.repro, "--mode", mode_letter(spec.mode), "--world-size",
                                     std::to_string(spec.world), "--fusion", policy_name(spec.fusion), "--backend",
                                     backend_name(spec.backend),
                                     "--rank", std::to_string(rank), "--port", std::to_string(port), "--out",
                                     dir + "/rank" + std::to_string(rank) + ".json", "--timeout",
                                     std::to_string(spec.timeout_s), "--iters", std::to_string(spec.iters)};
    if (spec.cuda_graphs) args.push_back("--cuda-graphs");
    if (spec.warmup_ms > 0)
      for (const std::string& a : {std::string("--warmup-ms"), std::to_string(spec.warmup_ms)}) args.push_back(a);
    if (multi)
      for (const std::string& a : {std::string("--master-addr"), spec.master_addr, std::string("--nnodes"),
                                   std::to_string(spec.nnodes), std::string("--node-rank"),
                                   std::to_string(spec.node_rank)})
        args.push_back(a);
    args.push_back("--fast-paths");
    args.push_back(spec.fast_paths.text());
    if (!spec.golden_dir.empty()) {
      args.push_back("--golden-dir");
      args.push_back(spec.golden_dir);
    }
    if (!spec.ab_fast_path.empty()) {
      args.push_back("--ab");
      args.push_back(spec.ab_fast_path);
    }
    if (!spec.profile.empty()) {
      args.push_back("--profile");
      args.push_back(std::filesystem::absolute(spec.profile).string());
    }
    if (!spec.save_tensors.empty()) {
      args.push_back("--save-tensors");
      args.push_back(std::filesystem::absolute(spec.save_tensors).string());
    }
    for (const auto& d : spec.fg_dirs) { args.push_back("--repro-dir"); args.push_back(d); }
    if (!spec.store_prefix.empty()) {
      args.push_back("--store-prefix");
      args.push_back(spec.store_prefix);
    }
    const std::string log = dir + "/rank" + std::to_string(rank) + ".log";
    // a CPU rank from the spawner (harness/run/spawner.h), else fork + exec
    pid_t pid = spec.backend == Backend::Cpu ? spawn_rank(args, log) : -1;
    if (pid < 0) pid = fork();
    if (pid == 0) {
      setpgid(0, 0);
      prctl(PR_SET_PDEATHSIG, SIGKILL);
      FILE* f = freopen(log.c_str(), "w", stderr);
      (void)f;
      std::vector<char*> argv;
      for (auto& a : args) argv.push_back(a.data());
      argv.push_back(nullptr);
      execv(self.c_str(), argv.data());
      _exit(127);
    }
    pids[static_cast<size_t>(rank)] = pid;
    if (rank - first < kMaxRanks) {
      g_ranks[rank - first] = pid;
      g_nranks = rank - first + 1;
    }
  }

  auto kill_all = [&] {
    for (pid_t p : pids)
      if (p > 0) { kill(-p, SIGKILL); kill(p, SIGKILL); }
    for (pid_t& p : pids)
      if (p > 0) { waitpid(p, nullptr, 0); p = -1; }
    remove_dead_segments();
  };
  auto progress = [&](int rank) {
    return trim(read_text(dir + "/rank" + std::to_string(rank) + ".json.progress"));
  };
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(spec.timeout_s);
  // multi-node: a node's outcome ("<exit code>\n<message>", 0 when its
  // ranks finished and their records are in the store)
  auto done_key = [&](int node) { return node_key + "done/" + std::to_string(node); };
  auto publish = [&](const RunOutcome& o) {
    if (!multi) return;
    const std::string v = std::to_string(o.exit_code) + "\n" + o.message;
    try {
      store.set(done_key(spec.node_rank), std::vector<uint8_t>(v.begin(), v.end()));
    } catch (const std::exception&) {
      // node 0 is gone: it decides nothing now, and this node says why below
    }
  };
  // the first other node that reported a failure, as this node's outcome
  // (its own ranks then wait on that node's dead ones)
  auto remote_failure = [&](RunOutcome* o) {
    for (int node = 0; node < spec.nnodes; ++node) {
      if (node == spec.node_rank) continue;
      std::vector<uint8_t> v;
      try {
        if (!store.check({done_key(node)})) continue;
        v = store.get(done_key(node));
      } catch (const std::exception& e) {
        // node 0's store is gone, and node 0 with it
        o->exit_code = 125;
        o->node_lost = true;
        o->message = "node 0's store at " + where + " went away (" + trim(last_lines(e.what(), 1)) + ")";
        return true;
      }
      std::string text(v.begin(), v.end());
      const size_t nl = text.find('\n');
      const int code = std::atoi(text.substr(0, nl).c_str());
      if (code == 0) continue;
      o->exit_code = code;
      o->message = "node " + std::to_string(node) + ": " + (nl == std::string::npos ? "" : text.substr(nl + 1));
      return true;
    }
    return false;
  };
  // node 0: the nodes that never joined the store, as the reason its ranks
  // failed or hung waiting for theirs
  auto never_arrived = [&](RunOutcome* o) {
    if (!multi || spec.node_rank != 0) return false;
    std::string absent;
    for (int node = 1; node < spec.nnodes; ++node)
      if (!store.check({node_key + "arrived/" + std::to_string(node)}))
        absent += (absent.empty() ? "" : ", ") + std::to_string(node);
    if (absent.empty()) return false;
    o->exit_code = 125;
    o->node_lost = true;
    o->message = "node(s) " + absent + " never arrived at " + where + " within " + std::to_string(spec.timeout_s) +
                 " s; all ranks stopped (start every node with --nnodes " + std::to_string(spec.nnodes) +
                 ", the same --master-addr and --master-port, and its own --node-rank)";
    return true;
  };
  auto last_remote_check = std::chrono::steady_clock::now();
  int alive = local;
  while (alive > 0) {
    if (multi && std::chrono::steady_clock::now() - last_remote_check > std::chrono::milliseconds(250)) {
      last_remote_check = std::chrono::steady_clock::now();
      if (remote_failure(&out)) {
        kill_all();
        remove_tree(dir);
        return out;
      }
    }
    if (const int sig = g_stop) {
      // stopped from outside: the handler killed the ranks; clean up, then
      // die of the signal
      kill_all();
      remove_tree(dir);
      g_nranks = 0;
      signal(sig, SIG_DFL);
      raise(sig);
    }
    for (int rank = 0; rank < spec.world; ++rank) {
      pid_t& p = pids[static_cast<size_t>(rank)];
      if (p <= 0) continue;
      int status = 0;
      if (waitpid(p, &status, WNOHANG) != p) continue;
      p = -1;
      --alive;
      bool ok = WIFEXITED(status) && WEXITSTATUS(status) == 0;
      if (ok) continue;
      std::string log = read_text(dir + "/rank" + std::to_string(rank) + ".log");
      kill_all();
      if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
        out.exit_code = 2;
        out.message = "rank " + std::to_string(rank) + ": " + trim(last_lines(log, 3));
      } else if (const size_t at = log.find(kDisagree);
                 WIFEXITED(status) && WEXITSTATUS(status) == 1 && at != std::string::npos) {
        // the ranks compiled differently: a regression, found in seconds
        out.exit_code = 1;
        out.failure = "disagree";
        const size_t from = at + std::strlen(kDisagree);
        out.message = trim(log.substr(from, log.find('\n', from) - from));
      } else if (WIFEXITED(status) && WEXITSTATUS(status) == 125 && log.find("cannot test: ") != std::string::npos) {
        // the rank found this machine unable to run it (no GPU): not a crash
        out.exit_code = 125;
        out.message = "rank " + std::to_string(rank) + ": " + trim(last_lines(log, 3));
      } else {
        out.exit_code = 125;
        out.failure = "crash";
        std::string how = WIFSIGNALED(status) ? std::string("killed by signal ") + std::to_string(WTERMSIG(status)) +
                                                    " (" + strsignal(WTERMSIG(status)) + ")"
                                              : "exit code " + std::to_string(WEXITSTATUS(status));
        out.message = "rank " + std::to_string(rank) + " crashed (" + how + ") during '" + progress(rank) +
                      "'; all ranks stopped. Its last output:\n" + last_lines(log, 8);
      }
      remove_tree(dir);
      if (out.exit_code != 2 && !never_arrived(&out) && multi) {
        // a rank of another node that died first takes this node's ranks
        // down with it: give its report a second to arrive, and show both
        // (which came first is not known here)
        RunOutcome remote;
        for (int i = 0; i < 50 && !remote_failure(&remote); ++i)
          std::this_thread::sleep_for(std::chrono::milliseconds(20));
        if (remote.exit_code != 0) {
          out.exit_code = remote.exit_code;
          out.node_lost = remote.node_lost;
          out.message = remote.message + "\n(and on node " + std::to_string(spec.node_rank) + ": " + out.message + ")";
        }
      }
      publish(out);
      return out;
    }
    if (alive > 0 && std::chrono::steady_clock::now() > deadline) {
      // a rank whose heartbeat stopped is the one that stopped answering
      // (the others, waiting on it in a collective, still beat); without
      // one, the hung rank is the one that got least far
      std::string culprit, waiting;
      double stalest = 0;
      for (int rank = 0; rank < spec.world; ++rank) {
        if (pids[static_cast<size_t>(rank)] <= 0) continue;
        std::error_code ec;
        const auto t = std::filesystem::last_write_time(dir + "/rank" + std::to_string(rank) + ".json.heartbeat", ec);
        if (ec) continue;
        const double age =
            std::chrono::duration<double>(std::filesystem::file_time_type::clock::now() - t).count();
        if (age > 2.0 && age > stalest) {
          stalest = age;
          culprit = std::to_string(rank) + " (stopped answering: no heartbeat for " +
                    std::to_string(static_cast<int>(age)) + " s; last step: '" + progress(rank) + "')";
        }
      }
      if (culprit.empty()) {
        // every rank beats: the one whose own work stopped is behind the
        // others in collectives (a compute thread that hangs between them)
        std::vector<std::pair<int, HeartbeatState>> states;
        for (int rank = 0; rank < spec.world; ++rank) {
          HeartbeatState h;
          if (pids[static_cast<size_t>(rank)] > 0 &&
              read_heartbeat(read_text(dir + "/rank" + std::to_string(rank) + ".json.heartbeat"), &h))
            states.push_back({rank, h});
        }
        std::string why;
        const int behind = rank_behind(states, &why);
        if (behind >= 0)
          culprit = std::to_string(behind) + " (" + why + "; last step: '" + progress(behind) + "')";
      }
      int worst = culprit.empty() ? 1 << 30 : -(1 << 30);
      const std::vector<std::string> steps = {"joining the process group", "joined", "warm-up forward",
                                              "choosing residual placement", "choosing GEMM algorithms", "choosing GEMM templates or library calls",
                                              "measured forward", "reference runs", "A/B: generic path",
                                              "A/B: fast path", "A/B: fp64 reference", "done"};
      for (int rank = 0; rank < spec.world; ++rank) {
        if (pids[static_cast<size_t>(rank)] <= 0) continue;
        std::string st = progress(rank);
        int idx = -1;
        for (size_t i = 0; i < steps.size(); ++i)
          if (st == steps[i]) idx = static_cast<int>(i);
        if (st.find("on purpose") != std::string::npos) idx = -2;
        if (idx < worst) { worst = idx; culprit = std::to_string(rank) + " (last step: '" + st + "')"; }
      }
      for (int rank = 0; rank < spec.world; ++rank)
        if (pids[static_cast<size_t>(rank)] > 0 && culprit.rfind(std::to_string(rank) + " ", 0) != 0)
          waiting += (waiting.empty() ? "" : ", ") + std::to_string(rank) + " ('" + progress(rank) + "')";
      kill_all();
      remove_tree(dir);
      out.exit_code = 125;
      // a node that never joined, or one that failed, explains the wait
      if (never_arrived(&out) || (multi && remote_failure(&out))) return out;
      out.failure = "hang";
      out.message = "rank " + culprit + " did not finish within " + std::to_string(spec.timeout_s) +
                    " s (hung)" + (waiting.empty() ? "" : "; ranks waiting on it: " + waiting) +
                    "; all ranks stopped (raise --timeout if the run is just slow)";
      publish(out);
      return out;
    }
    if (alive > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }

  // what the ranks printed (FUSEGATE_LOGS views, prints) goes to stderr
  for (int rank = first; rank < first + local; ++rank) {
    std::istringstream log(read_text(dir + "/rank" + std::to_string(rank) + ".log"));
    std::string line;
    while (std::getline(log, line)) std::cerr << "[rank " << rank << "] " << line << "\n";
  }
  out.record.format_version = kRecordFormatVersion;
  out.record.repro = spec.repro;
  out.record.mode = mode_letter(spec.mode);
  out.record.world_size = spec.world;
  out.record.backend = backend_name(spec.backend);
  out.record.fusion = policy_name(spec.fusion);
  out.record.fast_paths = spec.fast_paths.text();
  out.record.env = environment(spec.backend);
  // the nodes the ranks spanned, where more than one (a configuration of
  // its own: a one-host fast path is blocked across nodes)
  if (multi) out.record.nodes = spec.nnodes;
  if (!multi) {
    for (int rank = 0; rank < spec.world; ++rank)
      add_rank(&out, spec, read_text(dir + "/rank" + std::to_string(rank) + ".json"), rank);
    remove_tree(dir);
    return out;
  }
  // multi-node: every node puts its ranks' records into the store; node 0
  // gathers them all and decides, the others are done once theirs are in
  auto record_key = [&](int rank) { return node_key + "record/" + std::to_string(rank); };
  auto env_key = [&](int node) { return node_key + "env/" + std::to_string(node); };
  try {
    // each node's environment, which node 0 holds against its own
    const std::string env_text = nlohmann::json(*out.record.env).dump();
    store.set(env_key(spec.node_rank), std::vector<uint8_t>(env_text.begin(), env_text.end()));
    for (int rank = first; rank < first + local; ++rank) {
      const std::string text = read_text(dir + "/rank" + std::to_string(rank) + ".json");
      store.set(record_key(rank), std::vector<uint8_t>(text.begin(), text.end()));
    }
  } catch (const std::exception& e) {
    remove_tree(dir);
    out.exit_code = 125;
    out.message = "node " + std::to_string(spec.node_rank) + ": could not hand its records to node 0 at " + where +
                  " (" + trim(last_lines(e.what(), 1)) + ")";
    return out;
  }
  remove_tree(dir);
  publish(out);
  if (spec.node_rank != 0) {
    out.record = record::RunRecord();
    out.message = "node " + std::to_string(spec.node_rank) + " ran ranks " + std::to_string(first) + ".." +
                  std::to_string(first + local - 1) + "; node 0 gathers the record";
    return out;
  }
  // node 0 waits for every other node's outcome until the run's deadline
  for (int node = 1; node < spec.nnodes; ++node) {
    while (!store.check({done_key(node)})) {
      if (std::chrono::steady_clock::now() > deadline) {
        out.record = record::RunRecord();
        out.exit_code = 125;
        out.node_lost = true;
        out.message = "node " + std::to_string(node) + " did not report within " + std::to_string(spec.timeout_s) +
                      " s (its ranks hang, or its launcher died)";
        return out;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  if (remote_failure(&out)) {
    out.record = record::RunRecord();
    return out;
  }
  for (int rank = 0; rank < spec.world; ++rank) {
    std::vector<uint8_t> v = store.get(record_key(rank));
    add_rank(&out, spec, std::string(v.begin(), v.end()), rank);
  }
  // ranks on nodes of other environments: the run's environment is none of
  // them (a key that differs from every golden's), and says which differ
  std::vector<std::string> differ;
  for (int node = 1; node < spec.nnodes; ++node) {
    std::vector<uint8_t> v = store.get(env_key(node));
    const std::string d = environment_difference(
        *out.record.env, nlohmann::json::parse(std::string(v.begin(), v.end())).get<record::Environment>());
    if (!d.empty()) differ.push_back("node " + std::to_string(node) + ": " + d);
  }
  if (!differ.empty()) {
    std::string all;
    for (const auto& d : differ) all += (all.empty() ? "" : "; ") + d;
    (*out.record.env)["nodes_differ"] = all;
    (*out.record.env)["fingerprint"] = environment_fingerprint(*out.record.env);
  }
  return out;
}

}  // namespace fg
