// Collectives between rank processes: c10d ProcessGroupGloo on the cpu
// backend, ProcessGroupNCCL (one GPU a rank) on the cuda backend. Every call
// is folded into a sequence, so the harness can check that all ranks issued
// the same collectives.
#pragma once
#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace c10d { class Store; }

namespace fg {

// How far this process got through its collectives, for its heartbeat
// (harness/run/liveness.h): how many it entered, and whether it waits in
// one now. When a run hangs, a rank whose own work stopped has entered
// fewer than the ranks waiting on it (NCCL's calls return at once: those
// ranks went on to enqueue theirs), or as many and waits in none (Gloo's
// calls block until every rank arrives).
struct CollectiveProgress {
  int64_t entered = 0;
  bool inside = false;
};
CollectiveProgress collective_progress();

class Collectives {
 public:
  // Joins the group through a c10d TCPStore at host:port; `backend` is
  // "gloo" or "nccl". A non-empty `prefix` puts every key this group and its
  // exchanges use under it (one store shared by the jobs of a command).
  Collectives(const std::string& host, int port, int rank, int world, int timeout_s,
              const std::string& backend = "gloo", const std::string& prefix = "");
  ~Collectives();
  int rank() const { return rank_; }
  int world() const { return world_; }
  void all_reduce_(at::Tensor& t);                 // sum, in place
  at::Tensor all_gather(const at::Tensor& t);      // concatenated along dim 0
  at::Tensor reduce_scatter(const at::Tensor& t);  // sum, then this rank's slice of dim 0
  void barrier();
  // Every rank publishes `mine` under `key` in the c10d store and gets all
  // ranks' values, in rank order (waits up to the timeout for the others).
  // What fast paths use to exchange shared-memory names or CUDA IPC handles.
  std::vector<std::string> exchange(const std::string& key, const std::string& mine);
  // Adds a collective that runs outside c10d (a fast path's one-shot
  // all-reduce) to the sequence the harness compares across ranks.
  void record(const char* what, const at::Tensor& t) { note(what, t); }
  const std::string& sequence() const { return sequence_; }  // e.g. "all_reduce:bf16[2,64,256];..."
  void reset_sequence() { sequence_.clear(); }

 private:
  void note(const char* what, const at::Tensor& t);
  bool needs_upcast(const at::Tensor& t) const;
  int rank_, world_;
  struct Group;  // the c10d process group or backend, by LibTorch version
  std::shared_ptr<void> store_;  // keeps the c10d store alive
  std::shared_ptr<Group> pg_;
  bool nccl_ = false;
  std::string sequence_;
};

}  // namespace fg
