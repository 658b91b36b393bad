#include "fusion/bisect.h"

#include <cstdlib>
#include <sstream>

#include "fusion/errors.h"

namespace fg {

const std::vector<std::string>& bisect_subsystems() {
  static const std::vector<std::string> s = {"decompositions", "fast_paths", "gemm_epilogue", "tp_rewrite",
                                             "lowerings",      "decisions",  "codegen_variants"};
  return s;
}

int64_t bisect_limit(const BisectLimits& l, const std::string& subsystem) {
  if (subsystem == "decompositions") return l.decompositions;
  if (subsystem == "lowerings") return l.lowerings;
  if (subsystem == "fast_paths") return l.fast_paths;
  if (subsystem == "gemm_epilogue") return l.gemm_epilogue;
  if (subsystem == "tp_rewrite") return l.tp_rewrite;
  if (subsystem == "decisions") return l.decisions;
  if (subsystem == "codegen_variants") return l.codegen_variants;
  return -1;
}

BisectLimits parse_bisect(const std::string& text) {
  BisectLimits l;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    const std::string name = item.substr(0, colon);
    const std::string k = colon == std::string::npos ? "" : item.substr(colon + 1);
    bool digits = !k.empty() && k.size() < 10;
    for (char c : k) digits = digits && c >= '0' && c <= '9';
    int64_t* slot = name == "decompositions"  ? &l.decompositions
                    : name == "lowerings"     ? &l.lowerings
                    : name == "fast_paths"    ? &l.fast_paths
                    : name == "gemm_epilogue" ? &l.gemm_epilogue
                    : name == "tp_rewrite"    ? &l.tp_rewrite
                    : name == "decisions"     ? &l.decisions
                    : name == "codegen_variants" ? &l.codegen_variants
                                              : nullptr;
    if (!slot || !digits)
      user_error("FUSEGATE_BISECT: '" + item +
                 "' is not SUBSYSTEM:K; subsystems: decompositions, fast_paths, gemm_epilogue, tp_rewrite, lowerings, "
                 "decisions, codegen_variants; K a count");
    *slot = std::stoll(k);
  }
  return l;
}

const BisectLimits& bisect_limits() {
  static const BisectLimits l = [] {
    const char* env = std::getenv("FUSEGATE_BISECT");
    return env ? parse_bisect(env) : BisectLimits{};
  }();
  return l;
}

}  // namespace fg
