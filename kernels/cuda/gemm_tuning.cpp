#include "kernels/cuda/gemm_tuning.h"

#include <nlohmann/json.hpp>

#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "kernels/cuda/cublaslt.h"

namespace fg {

namespace {

using nlohmann::json;

// the adopted table, for the record
std::mutex mu;
std::vector<json>& adopted() {
  static auto* t = new std::vector<json>();
  return *t;
}

const char* type_name(LtType t) { return t == LtType::BF16 ? "bf16" : t == LtType::F16 ? "f16" : "f32"; }

json shape_json(const LtGemm& g) {
  return {{"shape", lt_shape_key(g)}, {"type", type_name(g.type)}, {"m", g.m},           {"n", g.n},
          {"k", g.k},                 {"batch", g.batch},           {"bias", g.bias},     {"gelu", g.gelu_tanh},
          {"addend", g.addend}};
}

// The GEMM an entry describes; false if a field is missing or wrong.
bool shape_of(const json& e, LtGemm* g) {
  if (!e.is_object()) return false;
  for (const char* k : {"m", "n", "k", "batch"})
    if (!e.contains(k) || !e[k].is_number_integer() || e[k].get<int64_t>() < 1) return false;
  for (const char* k : {"bias", "gelu", "addend"})
    if (!e.contains(k) || !e[k].is_boolean()) return false;
  if (!e.contains("type") || !e["type"].is_string()) return false;
  const std::string t = e["type"];
  if (t != "bf16" && t != "f16" && t != "f32") return false;
  g->type = t == "bf16" ? LtType::BF16 : t == "f16" ? LtType::F16 : LtType::F32;
  g->m = e["m"];
  g->n = e["n"];
  g->k = e["k"];
  g->batch = e["batch"];
  g->bias = e["bias"];
  g->gelu_tanh = e["gelu"];
  g->addend = e["addend"];
  return e.contains("shape") && e["shape"].is_string() && e["shape"] == lt_shape_key(*g);
}

}  // namespace

void gemm_tuning_start() {
  lt_set_tuning(true);
  std::lock_guard<std::mutex> lock(mu);
  adopted().clear();
}

std::string gemm_tuning_choose(const std::string& known_text) {
  std::map<std::string, json> known;
  if (!known_text.empty()) {
    json k = json::parse(known_text, nullptr, false);
    if (k.is_array())
      for (const json& e : k)
        if (e.is_object() && e.contains("shape") && e["shape"].is_string() && e.contains("algo"))
          known.emplace(e["shape"].get<std::string>(), e);
  }
  json table = json::array();
  for (const LtGemm& g : lt_untuned()) {
    json e = shape_json(g);
    auto it = known.find(lt_shape_key(g));
    LtAlgo a;
    std::string why;
    if (it != known.end() && it->second["algo"].is_string() && lt_algo_from_hex(it->second["algo"], &a)) {
      const json& k = it->second;
      // a choice other than the top-1 is taken only with its check in the
      // forward (recorded before there was one: measured again, and checked)
      const bool unchecked = k.contains("choice") && k["choice"].is_number() && k["choice"].get<int>() > 0 &&
                             !(k.contains("forward") && k["forward"].is_object());
      why = unchecked ? "recorded without its check in the forward" : lt_choose(g, a);
      if (why.empty()) {
        e["algo"] = lt_algo_hex(a);
        e["config"] = lt_algo_text(a);
        // counts as integers, times as numbers: the record reads them so
        for (const char* f : {"choice", "candidates"})
          if (k.contains(f) && k[f].is_number_integer()) e[f] = k[f];
        for (const char* f : {"us", "top1_us"})
          if (k.contains(f) && k[f].is_number()) e[f] = k[f];
        if (k.contains("top1_algo") && k["top1_algo"].is_string()) e["top1_algo"] = k["top1_algo"];
        if (k.contains("forward") && k["forward"].is_object()) e["forward"] = k["forward"];
        e["source"] = k.value("source", std::string("cache"));
        table.push_back(e);
        continue;
      }
      if (!unchecked)
        why = "the recorded choice " + k.value("config", std::string("?")) + " no longer runs: " + why;
    }
    LtMeasured m;
    std::string err = lt_measure(g, 16, &m);
    if (!err.empty()) {
      e["source"] = "top-1";
      e["why"] = (why.empty() ? "" : why + "; ") + "measurement failed: " + err;
      table.push_back(e);
      continue;
    }
    e["algo"] = lt_algo_hex(m.algo);
    e["top1_algo"] = lt_algo_hex(m.top1);
    e["config"] = lt_algo_text(m.algo);
    e["choice"] = m.choice;
    e["candidates"] = m.candidates;
    e["us"] = m.us;
    e["top1_us"] = m.top1_us;
    e["source"] = "measured";
    if (!why.empty()) e["why"] = why;
    table.push_back(e);
  }
  return table.dump();
}

std::string gemm_tuning_adopt(const std::string& text) {
  json table = json::parse(text, nullptr, false);
  if (!table.is_array()) return "the GEMM choice table is not a JSON array";
  std::lock_guard<std::mutex> lock(mu);
  for (const json& e : table) {
    LtGemm g;
    if (!shape_of(e, &g)) return "a GEMM choice table entry has a wrong shape: " + e.dump();
    json mine = e;
    LtAlgo a;
    if (e.contains("algo")) {
      if (!e["algo"].is_string() || !lt_algo_from_hex(e["algo"], &a))
        return "a GEMM choice table entry has no 128-digit algo: " + e.dump();
      std::string why = lt_choose(g, a);
      if (!why.empty()) {
        // rank 0 ran it; a rank whose cuBLASLt refuses it is not like rank 0
        return "rank 0's choice for " + e["shape"].get<std::string>() + " does not run here: " + why;
      }
    }
    if (e.contains("top1_algo")) {
      // the forward check runs the top-1 on every rank: refused here, it
      // must fail now, before any rank waits on another in that check
      LtAlgo t;
      if (!e["top1_algo"].is_string() || !lt_algo_from_hex(e["top1_algo"], &t))
        return "a GEMM choice table entry has a top1_algo that is not 128 hex digits: " + e.dump();
      std::string why = lt_fits(g, t);
      if (!why.empty())
        return "rank 0's top-1 for " + e["shape"].get<std::string>() + " does not run here: " + why;
    }
    adopted().push_back(mine);
  }
  return "";
}

namespace {

// The ways of running a check in the forward has kept the choice in:
// "graph" (CUDA graph replays) and "host" (host launches). Its "checked"
// field, or for a record from before that field, the words of its "how"
// (a failed capture timed host launches).
std::set<std::string> forward_checked(const json& f) {
  std::set<std::string> modes;
  if (f.contains("checked") && f["checked"].is_array()) {
    for (const json& m : f["checked"])
      if (m.is_string()) modes.insert(m.get<std::string>());
    return modes;
  }
  modes.insert(f.value("how", "").find("CUDA graph replay") != std::string::npos ? "graph" : "host");
  return modes;
}

}  // namespace

std::vector<std::string> gemm_tuning_unchecked(bool graph) {
  std::lock_guard<std::mutex> lock(mu);
  std::vector<std::string> out;
  for (const json& e : adopted())
    if (e.contains("algo") && e.contains("choice") && e["choice"].is_number() && e["choice"].get<int>() > 0 &&
        e.contains("top1_algo") && e["top1_algo"].is_string() &&
        (!e.contains("forward") || !e["forward"].is_object() || !forward_checked(e["forward"]).count(graph ? "graph" : "host")))
      out.push_back(e["shape"]);
  return out;
}

namespace {

// The adopted entry of `shape` (under mu), or null.
json* adopted_entry(const std::string& shape) {
  for (json& e : adopted())
    if (e.value("shape", "") == shape) return &e;
  return nullptr;
}

}  // namespace

std::string gemm_tuning_try(const std::string& shape, bool choice) {
  LtGemm g;
  LtAlgo a;
  {
    std::lock_guard<std::mutex> lock(mu);
    const json* e = adopted_entry(shape);
    // (internal errors: gemm_tuning_unchecked names only adopted entries
    // holding both algorithms, and adopt read them)
    if (!e || !shape_of(*e, &g)) return "internal error: no adopted GEMM choice for " + shape;
    const char* field = choice ? "algo" : "top1_algo";
    if (!e->contains(field) || !(*e)[field].is_string() || !lt_algo_from_hex((*e)[field], &a))
      return "internal error: the adopted entry of " + shape + " has no " + field;
  }
  return lt_choose(g, a);
}

std::string gemm_tuning_settle(const std::string& shape, bool keep_choice, double choice_ms, double top1_ms,
                               int choice_faster_rounds, int rounds, const std::string& how, bool graph) {
  {
    std::lock_guard<std::mutex> lock(mu);
    json* e = adopted_entry(shape);
    if (!e) return "internal error: no adopted GEMM choice for " + shape;
    auto ms = [](double v) { return std::round(v * 1e4) / 1e4; };
    // the ways of running this choice was kept in, this one added
    std::set<std::string> checked = {graph ? "graph" : "host"};
    if (keep_choice && e->contains("forward") && (*e)["forward"].is_object())
      for (const std::string& m : forward_checked((*e)["forward"])) checked.insert(m);
    json f = {{"how", how},
              {"graph", graph},
              {"checked", json(std::vector<std::string>(checked.begin(), checked.end()))},
              {"choice", e->value("choice", 0)},
              {"choice_config", e->value("config", std::string())},
              {"choice_ms", ms(choice_ms)},
              {"top1_ms", ms(top1_ms)},
              {"choice_faster_rounds", std::to_string(choice_faster_rounds) + " of " + std::to_string(rounds)},
              {"kept", keep_choice ? "choice" : "top-1"}};
    if (!keep_choice) {
      LtAlgo t;
      if (!e->contains("top1_algo") || !(*e)["top1_algo"].is_string() || !lt_algo_from_hex((*e)["top1_algo"], &t))
        return "internal error: the adopted entry of " + shape + " has no top1_algo";
      (*e)["algo"] = (*e)["top1_algo"];
      (*e)["config"] = lt_algo_text(t);
      (*e)["choice"] = 0;
      if (e->contains("top1_us")) (*e)["us"] = (*e)["top1_us"];
    }
    (*e)["forward"] = f;
  }
  return gemm_tuning_try(shape, keep_choice);
}

std::string gemm_tuning_table() {
  std::lock_guard<std::mutex> lock(mu);
  return json(adopted()).dump();
}

std::string gemm_tuning_record() {
  std::lock_guard<std::mutex> lock(mu);
  json out = json::array();
  std::map<std::string, int> fallbacks;
  for (const auto& [k, n] : lt_fallbacks()) fallbacks[k] = n;
  for (json e : adopted()) {
    e["fallbacks"] = fallbacks.count(e["shape"]) ? fallbacks[e["shape"]] : 0;
    out.push_back(e);
  }
  for (const LtGemm& g : lt_untuned()) {
    json e = shape_json(g);
    e["source"] = "top-1";
    e["why"] = "not in rank 0's table (rank 0 ran no GEMM of this shape)";
    out.push_back(e);
  }
  return out.dump();
}

std::string gemm_tuning_library() { return "cuBLASLt " + std::to_string(lt_version()); }

}  // namespace fg
