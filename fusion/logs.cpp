#include "fusion/logs.h"

#include <cstdlib>
#include <iostream>
#include <set>
#include <sstream>

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

void log_write(const std::string& channel, const std::string& text) {
  std::cerr << "[fusegate:" << channel << "] " << text;
  if (!text.empty() && text.back() != '\n') std::cerr << "\n";
  std::cerr.flush();
}

}  // namespace fg
