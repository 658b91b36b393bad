#include "fusion/bisect.h"

#include <cstdlib>
#include <map>
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

namespace {

struct Item {
  int graph;      // -1: every graph
  int64_t limit;  // -1: none
};

int64_t* slot_of(BisectLimits& l, const std::string& name) {
  return name == "decompositions"     ? &l.decompositions
         : name == "lowerings"        ? &l.lowerings
         : name == "fast_paths"       ? &l.fast_paths
         : name == "gemm_epilogue"    ? &l.gemm_epilogue
         : name == "tp_rewrite"       ? &l.tp_rewrite
         : name == "decisions"        ? &l.decisions
         : name == "codegen_variants" ? &l.codegen_variants
                                      : nullptr;
}

bool all_digits(const std::string& k) {
  bool digits = !k.empty() && k.size() < 10;
  for (char c : k) digits = digits && c >= '0' && c <= '9';
  return digits;
}

struct Parsed {
  std::vector<std::pair<std::string, Item>> items;  // subsystem name, its item
};

Parsed parse_items(const std::string& text) {
  Parsed p;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    const size_t colon = item.find(':');
    std::string name = item.substr(0, colon);
    const std::string k = colon == std::string::npos ? "" : item.substr(colon + 1);
    int graph = -1;
    bool ok = true;
    if (const size_t at = name.find('@'); at != std::string::npos) {
      ok = all_digits(name.substr(at + 1));
      if (ok) graph = std::stoi(name.substr(at + 1));
      name = name.substr(0, at);
    }
    BisectLimits probe;
    ok = ok && slot_of(probe, name) && (all_digits(k) || k == "all");
    if (!ok)
      user_error("FUSEGATE_BISECT: '" + item +
                 "' is not SUBSYSTEM:K or SUBSYSTEM@GRAPH:K; subsystems: decompositions, fast_paths, gemm_epilogue, "
                 "tp_rewrite, lowerings, decisions, codegen_variants; K a count, or all");
    p.items.push_back({name, Item{graph, k == "all" ? -1 : std::stoll(k)}});
  }
  return p;
}

const Parsed& process_items() {
  static const Parsed p = [] {
    const char* env = std::getenv("FUSEGATE_BISECT");
    return env ? parse_items(env) : Parsed{};
  }();
  return p;
}

BisectLimits resolve(const Parsed& p, int graph) {
  BisectLimits l;
  // every-graph items first, then this graph's, whatever their order
  for (int pass = 0; pass < 2; ++pass)
    for (const auto& [name, it] : p.items)
      if ((pass == 0 && it.graph < 0) || (pass == 1 && it.graph == graph)) *slot_of(l, name) = it.limit;
  return l;
}

thread_local int current_graph = 0;

}  // namespace

BisectLimits parse_bisect(const std::string& text, int graph) { return resolve(parse_items(text), graph); }

const BisectLimits& bisect_limits() {
  thread_local std::map<int, BisectLimits> of_graph;
  auto it = of_graph.find(current_graph);
  if (it == of_graph.end()) it = of_graph.emplace(current_graph, resolve(process_items(), current_graph)).first;
  return it->second;
}

bool bisect_per_graph() {
  for (const auto& [name, it] : process_items().items)
    if (it.graph >= 0) return true;
  return false;
}

BisectGraph::BisectGraph(int graph) : previous_(current_graph) { current_graph = graph; }
BisectGraph::~BisectGraph() { current_graph = previous_; }

}  // namespace fg
