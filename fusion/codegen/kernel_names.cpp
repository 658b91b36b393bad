#include <algorithm>
#include <set>

#include "fusion/codegen/kernel.h"

namespace fg {

std::vector<std::string> kernel_ops(const LoweredGraph& g, const std::vector<int>& nodes) {
  std::set<std::string> s;
  for (int n : nodes)
    for (const auto& o : g.nodes[static_cast<size_t>(n)].origins) s.insert(o);
  // '_' sorts before letters, so _to_copy and _unsafe_view come first as in
  // Inductor's names
  return {s.begin(), s.end()};
}

std::string kernel_name(const std::string& backend, const std::string& kind, const std::vector<std::string>& ops,
                        int index) {
  std::string n = backend + "_" + kind + "_fused";
  for (const auto& o : ops) n += "_" + o;
  return n + "_" + std::to_string(index);
}

}  // namespace fg
