// A command's jobs across nodes: one store, agreement, lock step, the
// verdict handed back (harness/run/nodes.h).
#include "harness/run/nodes.h"

#include <torch/csrc/distributed/c10d/TCPStore.hpp>

#include <chrono>
#include <iostream>
#include <sstream>
#include <thread>

#include "fusion/errors.h"

namespace fg {

namespace {

const std::string kKey = "fusegate-cmd/";

std::string first_line(const std::string& s) {
  std::string t = s.substr(0, s.find('\n'));
  while (!t.empty() && t.back() == ' ') t.pop_back();
  return t;
}

std::string where(const NodeSpec& n) { return n.master_addr + ":" + std::to_string(n.master_port); }

void put(c10d::TCPStore& store, const std::string& key, const std::string& value) {
  store.set(key, std::vector<uint8_t>(value.begin(), value.end()));
}

std::string take(c10d::TCPStore& store, const std::string& key) {
  std::vector<uint8_t> v = store.get(key);
  return std::string(v.begin(), v.end());
}

// "<code>\n<text>"
std::pair<int, std::string> split_verdict(const std::string& v) {
  const size_t nl = v.find('\n');
  return {std::atoi(v.substr(0, nl).c_str()), nl == std::string::npos ? "" : v.substr(nl + 1)};
}

}  // namespace

LocalStore serve_local_store(int timeout_s) {
  LocalStore s;
  s.store = open_node_store(NodeSpec{}, timeout_s);
  s.port = s.store->getPort();
  return s;
}

std::unique_ptr<c10d::TCPStore> open_node_store(const NodeSpec& n, int timeout_s) {
  c10d::TCPStoreOptions so;
  so.port = static_cast<uint16_t>(n.master_port);  // 0: any free port
  so.isServer = n.node_rank == 0;
  so.waitWorkers = false;
  so.timeout = std::chrono::seconds(timeout_s);
  try {
    return std::make_unique<c10d::TCPStore>(n.master_addr, so);
  } catch (const std::exception& e) {
    cannot_test(n.node_rank == 0
                    ? "node 0 cannot serve the c10d store on port " + std::to_string(n.master_port) + " (" +
                          first_line(e.what()) + "): pick a free --master-port"
                    : "node " + std::to_string(n.node_rank) + ": node 0's store at " + where(n) +
                          " did not answer within " + std::to_string(timeout_s) +
                          " s: start node 0 with the same --nnodes, --master-addr and --master-port");
  }
}

CommandNodes::CommandNodes(const NodeSpec& nodes, int timeout_s) : nodes_(nodes), timeout_s_(timeout_s) {
  if (multi()) store_ = open_node_store(nodes_, timeout_s_);
}

CommandNodes::~CommandNodes() = default;

std::string CommandNodes::wait_for(const std::string& key, int seconds, const std::string& what) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  try {
    while (!store_->check({key})) {
      if (std::chrono::steady_clock::now() > deadline) cannot_test(what);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    return take(*store_, key);
  } catch (const CannotTest&) {
    throw;
  } catch (const std::exception& e) {
    cannot_test("node " + std::to_string(nodes_.node_rank) + ": node 0's store at " + where(nodes_) +
                " went away (" + first_line(e.what()) + "): node 0 stopped; its output says why");
  }
}

std::string CommandNodes::job_list(const std::string& command, const std::vector<std::string>& job_ids) {
  std::string list = command;
  for (const auto& id : job_ids) list += "\n" + id;
  return list;
}

bool CommandNodes::join(const std::string& command, const std::vector<std::string>& job_ids, int* code,
                        std::string* text) {
  if (!multi() || leader()) return true;
  put(*store_, kKey + "jobs/" + std::to_string(nodes_.node_rank), job_list(command, job_ids));
  return await_go(kKey + "agreed", "confirm the job list", code, text);
}

void CommandNodes::agree(const std::string& command, const std::vector<std::string>& job_ids) {
  if (!multi() || !leader()) return;
  const std::string restart = "start every node with the same command, flags and repro folders, each with its own "
                              "--node-rank";
  std::string absent;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s_);
  for (int node = 1; node < nodes_.nnodes; ++node) {
    while (!store_->check({kKey + "jobs/" + std::to_string(node)}) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    if (!store_->check({kKey + "jobs/" + std::to_string(node)})) {
      absent += (absent.empty() ? "" : ", ") + std::to_string(node);
      absent_.insert(node);
    }
  }
  if (!absent.empty())
    cannot_test("node(s) " + absent + " never arrived at " + where(nodes_) + " within " + std::to_string(timeout_s_) +
                " s; nothing was run (" + restart + ")");
  auto lines = [](const std::string& text) {
    std::vector<std::string> v;
    std::istringstream in(text);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  };
  const std::vector<std::string> ours = lines(job_list(command, job_ids));
  for (int node = 1; node < nodes_.nnodes; ++node) {
    const std::vector<std::string> theirs = lines(take(*store_, kKey + "jobs/" + std::to_string(node)));
    if (theirs == ours) continue;
    size_t i = 0;
    while (i < ours.size() && i < theirs.size() && ours[i] == theirs[i]) ++i;
    auto at = [](const std::vector<std::string>& v, size_t k) {
      return k < v.size() ? "'" + v[k] + "'" : std::string("nothing");
    };
    // line 0 is the command, line k the k-th job
    const std::string n = std::to_string(node);
    user_error(i == 0 ? "node " + n + " runs another command: " + at(theirs, 0) + " where node 0 runs " +
                            at(ours, 0) + "; nothing was run: " + restart
                      : "node " + n + " would run other jobs than node 0: job " + std::to_string(i) + " is " +
                            at(ours, i) + " on node 0 and " + at(theirs, i) + " on node " + n + " (node 0 has " +
                            std::to_string(ours.size() - 1) + " jobs, node " + n + " " +
                            std::to_string(theirs.size() - 1) + "); nothing was run: " + restart);
  }
  put(*store_, kKey + "agreed", "go");
}

RunOutcome CommandNodes::launch_job(RunSpec spec, int index) {
  static_cast<NodeSpec&>(spec) = nodes_;
  if (multi()) {
    spec.store = store_.get();
    spec.store_prefix = "job" + std::to_string(index) + "/";
  }
  return launch(spec);
}

bool CommandNodes::follow(int index, int* code, std::string* text) {
  if (!multi() || leader()) return true;
  return await_go(kKey + "step/" + std::to_string(index), "say anything about job " + std::to_string(index + 1),
                  code, text);
}

bool CommandNodes::await_go(const std::string& key, const std::string& what, int* code, std::string* text) {
  const std::string verdict = kKey + "verdict";
  // node 0 may still be finishing a job: its deadline, and a margin for
  // gathering and comparing
  const int seconds = timeout_s_ + 30;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  try {
    while (true) {
      if (store_->check({verdict})) {
        std::tie(*code, *text) = this->verdict();
        return false;
      }
      if (store_->check({key})) return true;
      if (std::chrono::steady_clock::now() > deadline)
        cannot_test("node " + std::to_string(nodes_.node_rank) + ": node 0 did not " + what + " within " +
                    std::to_string(seconds) + " s");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  } catch (const CannotTest&) {
    throw;
  } catch (const std::exception& e) {
    cannot_test("node " + std::to_string(nodes_.node_rank) + ": node 0's store at " + where(nodes_) +
                " went away (" + first_line(e.what()) + "): node 0 stopped; its output says why");
  }
}

void CommandNodes::go_on(int index) {
  if (multi() && leader()) put(*store_, kKey + "step/" + std::to_string(index), "go");
}

void CommandNodes::hand_back(int code, const std::string& text) {
  if (!multi() || !leader()) return;
  put(*store_, kKey + "verdict", std::to_string(code) + "\n" + text);
  wait_taken();
}

void CommandNodes::wait_taken() {
  // the store lives in this process: it stays up until every node has its
  // verdict (a node that died is waited for 10 s at most)
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(std::min(timeout_s_, 10));
  // (a node that may still be starting is waited for too: node 0 can stop
  // on bad input before the others have joined; one found absent by agree()
  // is not)
  for (int node = 1; node < nodes_.nnodes; ++node) {
    if (absent_.count(node)) continue;
    while (!store_->check({kKey + "taken/" + std::to_string(node)}) && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::pair<int, std::string> CommandNodes::verdict() {
  auto v = split_verdict(wait_for(kKey + "verdict", timeout_s_ + 30,
                                  "node " + std::to_string(nodes_.node_rank) + ": node 0 gave no verdict within " +
                                      std::to_string(timeout_s_ + 30) + " s"));
  try {
    put(*store_, kKey + "taken/" + std::to_string(nodes_.node_rank), "1");
  } catch (const std::exception&) {
    // node 0 stopped waiting: the verdict is here all the same
  }
  return v;
}

std::vector<std::string> job_ids(const std::vector<NodeJob>& jobs) {
  std::vector<std::string> ids;
  for (const NodeJob& j : jobs) ids.push_back(j.id);
  return ids;
}

int follow_jobs(CommandNodes& nodes, const std::vector<NodeJob>& jobs, const std::string& command) {
  int code = 0;
  std::string text;
  if (!nodes.join(command, job_ids(jobs), &code, &text))
    return print_leader_verdict({code, text}, command, nodes.node_rank());
  for (size_t i = 0; i < jobs.size(); ++i) {
    std::cerr << "fusegate: running " << jobs[i].id << " (node " << nodes.node_rank() << ")\n";
    RunOutcome o = nodes.launch_job(jobs[i].spec, static_cast<int>(i));
    if (o.exit_code != 0) std::cerr << "fusegate " << command << ": " << o.message << "\n";
    if (!nodes.follow(static_cast<int>(i), &code, &text))
      return print_leader_verdict({code, text}, command, nodes.node_rank());
  }
  return print_leader_verdict(nodes.verdict(), command, nodes.node_rank());
}

int lead_jobs(CommandNodes& nodes, const std::function<int()>& body) {
  try {
    return body();
  } catch (const UserError& e) {
    nodes.hand_back(2, std::string("error: ") + e.what());
    throw;
  } catch (const CannotTest& e) {
    nodes.hand_back(125, std::string("cannot test: ") + e.what());
    throw;
  }
}

int print_leader_verdict(const std::pair<int, std::string>& v, const std::string& command, int node_rank) {
  std::cout << "fusegate " << command << ": node " << node_rank << ": node 0's verdict (exit " << v.first << "):\n"
            << v.second;
  if (!v.second.empty() && v.second.back() != '\n') std::cout << "\n";
  return v.first;
}

}  // namespace fg
