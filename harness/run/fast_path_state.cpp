// Which fast paths a run may take (their proofs) and what each did in the
// graphs that ran (harness/run/run.h).
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "fusion/fastpaths/catalog.h"
#include "harness/run/run.h"
#include "kernels/cpu/runtime.h"

namespace fg {

FastPathProofs device_fast_path_proofs(const std::string& golden_dir, Backend backend, int world) {
  return fast_path_proofs(golden_dir, backend, world, backend == Backend::Cuda ? cuda_device_name() : "");
}

nlohmann::json fast_path_statuses(const std::vector<const CompiledGraphRt*>& graphs, const FastPathSelection& sel,
                                  const std::set<std::string>& forced) {
  std::map<std::string, std::pair<std::string, std::set<std::string>>> by_name;
  for (const auto& f : fast_path_catalog())
    by_name[f.name].first = sel.asks(f.name) || forced.count(f.name) ? kFastPathNotMatched : kFastPathNotSelected;
  for (const CompiledGraphRt* g : graphs)
    for (const auto& [name, st] : g->prog.fast_paths) {
      auto& [status, classes] = by_name[name];
      if (fast_path_status_order(st.status) < fast_path_status_order(status)) status = st.status;
      classes.insert(st.shape_classes.begin(), st.shape_classes.end());
    }
  nlohmann::json out = nlohmann::json::array();
  for (const auto& [name, st] : by_name)
    out.push_back({{"name", name}, {"status", st.first}, {"shape_classes", st.second}});
  return out;
}

}  // namespace fg
