#include "fusion/fault.h"

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <vector>

#include "fusion/errors.h"

namespace fg {

namespace {

struct Item {
  std::string name, arg;
};

bool is_name(const std::string& s) {
  if (s.empty() || s.size() > 64) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) return false;
  return true;
}

bool is_rank(const std::string& s) {
  if (s.empty() || s.size() > 6) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  return true;
}

std::vector<Item> parse() {
  static const char* const with_arg[] = {"crash", "hang", "hang_before_collective", "crash_in_fast_path", "diverge_fusion", "crash_at"};
  static const char* const plain[] = {"attention_fallback", "occupancy_spill", "exec_ranks"};
  std::vector<Item> out;
  const char* env = std::getenv("FUSEGATE_FAULT");
  if (!env || !*env) return out;
  std::stringstream ss(env);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (item.empty()) continue;
    auto colon = item.find(':');
    Item it{item.substr(0, colon), colon == std::string::npos ? "" : item.substr(colon + 1)};
    bool known = false;
    for (const char* n : with_arg) known = known || (it.name == n && colon != std::string::npos && is_rank(it.arg));
    known = known || ((it.name == "fastpath_edit" || it.name == "perturb" || it.name == "broken_decomposition" ||
                       it.name == "broken_lowering" || it.name == "broken_fast_path" || it.name == "crash_lowering" ||
                       it.name == "hang_lowering") &&
                      colon != std::string::npos && is_name(it.arg));
    known = known || ((it.name == "refuse_fusion" || it.name == "broken_fusion") && it.arg == "reduction");
    known = known || (it.name == "gemm_choice" && (it.arg == "template" || it.arg == "library"));
    known = known || (it.name == "broken_codegen" && (it.arg == "simd" || it.arg == "chunked"));
    known = known || (it.name == "residual_placement" && (it.arg == "gemm" || it.arg == "apart"));
    known = known || (it.name == "swiglu_tile" && (it.arg == "128" || it.arg == "112"));
    for (const char* n : plain) known = known || (it.name == n && colon == std::string::npos);
    if (!known)
      user_error("FUSEGATE_FAULT: unknown fault '" + item +
                 "'; known faults: crash:RANK, hang:RANK, hang_before_collective:RANK, crash_in_fast_path:RANK, diverge_fusion:RANK, crash_at:GRAPH, attention_fallback, fastpath_edit:NAME, perturb:NODE, refuse_fusion:reduction, broken_fusion:reduction, broken_decomposition:OP, broken_lowering:OP, crash_lowering:OP, hang_lowering:OP, broken_fast_path:NAME, broken_codegen:simd|chunked, gemm_choice:template|library, residual_placement:gemm|apart, swiglu_tile:128|112 (comma-separated)");
    out.push_back(it);
  }
  return out;
}

// Parsed once per process (each test sets the variable for the processes it
// starts); attention asks on every forward.
std::vector<Item>& items() {
  static std::vector<Item> parsed = parse();
  return parsed;
}

}  // namespace

bool fault_active(const std::string& name) {
  for (const Item& it : items())
    if (it.name == name && it.arg.empty()) return true;
  return false;
}

void fault_enable(const std::string& name, const std::string& arg) { items().push_back({name, arg}); }

std::string fault_argument(const std::string& name) {
  for (const Item& it : items())
    if (it.name == name) return it.arg;
  return "";
}

std::string replay_env(bool with_bisect) {
  std::string out;
  for (const char* var : {"FUSEGATE_FAULT", "FUSEGATE_BISECT", "ATEN_CPU_CAPABILITY"}) {
    if (!with_bisect && std::strcmp(var, "FUSEGATE_BISECT") == 0) continue;
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    std::string value = v;
    bool plain = true;
    for (char c : value) plain = plain && (std::isalnum(static_cast<unsigned char>(c)) || std::strchr("_:,.-+=/", c));
    if (!plain) {
      std::string q = "'";
      for (char c : value) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
      value = q + "'";
    }
    out += std::string(var) + "=" + value + " ";
  }
  return out;
}

}  // namespace fg
