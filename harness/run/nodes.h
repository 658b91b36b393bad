// The nodes of one command that runs several jobs (check, bless, prove).
// On one node this is a plain loop over launch(). Across nodes (--nnodes K)
// every node runs the same command: node 0 serves one c10d store for the
// whole command, every job's keys (its ranks' included) live under their own
// prefix in it, and the nodes go in lock step:
//   1. each node posts the list of jobs it would run; node 0 compares them
//      and says go, or names the first difference (exit 2 on every node);
//   2. job i runs on every node (each its slice of the ranks); node 0
//      gathers the record and decides, then says go on, or stop;
//   3. node 0 hands its verdict (exit code and text) to every node, which
//      prints it and exits with that code; node 0 keeps the store up until
//      each node has taken it, or for at most its timeout.
#pragma once
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "harness/run/run.h"

namespace fg {

class CommandNodes {
 public:
  // Serves (node 0) or joins the command's store; 125 (CannotTest) if
  // neither can be done within `timeout_s`.
  CommandNodes(const NodeSpec& nodes, int timeout_s);
  ~CommandNodes();
  CommandNodes(const CommandNodes&) = delete;
  CommandNodes& operator=(const CommandNodes&) = delete;

  bool multi() const { return nodes_.nnodes > 1; }
  bool leader() const { return nodes_.node_rank == 0; }
  int node_rank() const { return nodes_.node_rank; }

  // Step 1: every node must mean the same command and jobs. The other
  // nodes post their lists (join: false when node 0 stopped the command
  // instead, with its verdict in *code and *text); node 0 compares them with
  // its own (agree): a difference is bad input (UserError naming the first
  // differing job), a node that never posts its list is 125 within the
  // timeout. Node 0 agrees after its own checks of the input (goldens,
  // quarantine), so that bad input there stops every node at once.
  bool join(const std::string& command, const std::vector<std::string>& job_ids, int* code, std::string* text);
  void agree(const std::string& command, const std::vector<std::string>& job_ids);

  // Runs job `index` of the agreed list: on every node its slice of the
  // ranks; node 0's outcome carries the whole record.
  RunOutcome launch_job(RunSpec spec, int index);

  // Step 2, the other nodes: waits for node 0's word on job `index`. True:
  // go on. False: node 0 stopped the command; `*code` and `*text` are its
  // verdict.
  bool follow(int index, int* code, std::string* text);
  // Step 2, node 0: the others may go on past job `index`.
  void go_on(int index);

  // Step 3. Node 0: hands (code, text) to every other node and waits until
  // each has taken it (at most the timeout). Others: waits for node 0's
  // verdict; returns it.
  void hand_back(int code, const std::string& text);
  std::pair<int, std::string> verdict();

 private:
  static std::string job_list(const std::string& command, const std::vector<std::string>& job_ids);
  bool await_go(const std::string& key, const std::string& what, int* code, std::string* text);
  std::string wait_for(const std::string& key, int seconds, const std::string& what);
  void wait_taken();
  NodeSpec nodes_;
  int timeout_s_;
  std::unique_ptr<c10d::TCPStore> store_;
  std::set<int> absent_;  // nodes that never posted their job list
};

// Serves (node 0) or joins the c10d store at master_addr:master_port within
// `timeout_s`; CannotTest naming what to do if it cannot.
std::unique_ptr<c10d::TCPStore> open_node_store(const NodeSpec& nodes, int timeout_s);

// A store served on a free port of 127.0.0.1 for child processes to join
// (fuzz's jobs), up while `store` lives; its users need not see the c10d
// headers.
struct LocalStore {
  std::shared_ptr<c10d::TCPStore> store;
  int port = 0;
};
LocalStore serve_local_store(int timeout_s);

// A follower's ending: prints node 0's verdict and returns its exit code.
int print_leader_verdict(const std::pair<int, std::string>& v, const std::string& command, int node_rank);

// One job of a command: its id (tp_block_llama/C/w2/cpu, as the verdicts
// name it) and what runs.
struct NodeJob {
  RunSpec spec;
  std::string id;
};
std::vector<std::string> job_ids(const std::vector<NodeJob>& jobs);

// A node other than 0: runs its ranks of every job in step with node 0,
// then prints node 0's verdict and returns its exit code.
int follow_jobs(CommandNodes& nodes, const std::vector<NodeJob>& jobs, const std::string& command);

// Node 0's body of a command: what it throws (bad input, cannot test) is
// handed to the other nodes as the verdict first, then thrown on.
int lead_jobs(CommandNodes& nodes, const std::function<int()>& body);

}  // namespace fg
