// One forward of a repro in this process, and the inputs every run of it
// gets: what a rank (harness/run/worker.cpp) and the fuzzer (harness/tools/fuzz.cpp)
// share, so that a finding replays under `fusegate run` on the same inputs.
#pragma once
#include <ATen/core/Tensor.h>

#include <map>
#include <string>
#include <vector>

#include "kernels/cpu/runtime.h"
#include "repros/registry.h"

namespace fg {

// Input `s` of `repro`: the full tensor from a generator seeded by the repro
// and input names (the same on every rank and world size), then this rank's
// shard.
at::Tensor make_input(const std::string& repro, const InputSpec& s, int rank, int world);

// Writes `inputs` and `outputs` into folder `dir` (made if missing): each
// tensor's bytes, contiguous, as <role>_<k>.bin, and tensors.json (written
// last) listing for each role its tensors' names, dtypes (as .fg spells them),
// shapes and files. Every file is written atomically.
void save_tensors(const std::string& dir, const std::vector<std::pair<std::string, at::Tensor>>& inputs,
                  const std::vector<std::pair<std::string, at::Tensor>>& outputs);

struct ForwardResult {
  std::vector<at::Tensor> outputs;  // on the host, contiguous
  int graph_count = 0;
  std::vector<GraphBreak> breaks;
  std::vector<std::string> graph_hashes;
};

// One forward of `r` in `mode` on `ex`; with `upcast`, floating inputs in fp64.
ForwardResult forward(const Repro& r, Mode mode, AtenExecutor& ex, const std::map<std::string, at::Tensor>& inputs,
                      bool upcast);

}  // namespace fg
