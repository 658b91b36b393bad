#include "fusion/logs.h"

#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>

#include "fusion/errors.h"

namespace fg {

bool log_enabled(const std::string& channel) {
  const char* env = std::getenv("FUSEGATE_LOGS");
  if (!env) return false;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ','))
    if (item == channel || item == "all") return true;
  return false;
}

void check_log_views() {
  static const std::set<std::string> known = {"graph_breaks", "fusion", "output_code", "recompiles", "graph", "all"};
  const char* env = std::getenv("FUSEGATE_LOGS");
  if (!env) return;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty() && !known.count(item))
      user_error("FUSEGATE_LOGS: unknown view '" + item +
                 "'; known views: graph_breaks, fusion, output_code, recompiles, graph, all (comma-separated)");
}

void log_write(const std::string& channel, const std::string& text) {
  std::cerr << "[fusegate:" << channel << "] " << text;
  if (!text.empty() && text.back() != '\n') std::cerr << "\n";
  std::cerr.flush();
}

}  // namespace fg
