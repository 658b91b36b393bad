// The ATen operators a piece of host code dispatches, seen through
// LibTorch's RecordFunction observers: every operator call that goes through
// the dispatcher on this thread, nested calls included (aten::linear, then the
// aten::t and aten::addmm it calls, ...). On the cpu backend this is what an
// extern "really runs": a change in how LibTorch carries out an extern moves
// these figures even when fusegate's own launch count stays the same.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace fg {

// Counts operator calls by name from construction to destruction; one trace
// per thread at a time.
class AtenOpTrace {
 public:
  AtenOpTrace();
  ~AtenOpTrace();
  AtenOpTrace(const AtenOpTrace&) = delete;
  AtenOpTrace& operator=(const AtenOpTrace&) = delete;
  // Operator name -> calls so far.
  const std::map<std::string, int>& ops() const { return ops_; }

 private:
  std::map<std::string, int> ops_;
  uint64_t handle_ = 0;
  std::map<std::string, int>* outer_ = nullptr;
};

}  // namespace fg
