#include "harness/record/golden_env.h"

#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <limits>

#include "harness/record/compare.h"
#include "harness/record/golden.h"
#include "harness/record/json_read.h"

namespace fg {
using nlohmann::json;

std::string environment_fingerprint(const json& env) {
  json e = env;
  if (e.is_object()) e.erase("fingerprint");
  const std::string text = e.dump();
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(XXH64(text.data(), text.size(), 0)));
  return buf;
}

std::string environment_fingerprint(const record::Environment& env) { return environment_fingerprint(json(env)); }

json golden_of(json rec) {
  json env = rec.contains("env") ? rec["env"] : json::object();
  const std::string fp = environment_fingerprint(env);
  env.erase("fingerprint");
  rec.erase("env");
  rec["environments"] = json::object({{fp, env}});
  rec["format_version"] = kRecordFormatVersion;
  for (auto& r : rec["ranks"]) {
    r.erase("times_ms");
    if (r.contains("gemm_choices") && r["gemm_choices"].is_array())
      for (auto& e : r["gemm_choices"])
        if (e.is_object()) e = json{{"shape", e.value("shape", "")}, {"choice", e.value("choice", "")}};
    if (r.contains("residual_placement") && r["residual_placement"].is_array())
      for (auto& e : r["residual_placement"])
        if (e.is_object()) e = json{{"site", e.value("site", "")}, {"placement", e.value("placement", "")}};
    if (r.contains("outputs") && r["outputs"].is_array())
      for (auto& o : r["outputs"]) {
        if (!o.is_object()) continue;
        if (o.contains("exact")) o["exact"] = json::object({{fp, o["exact"]}});
        if (o.contains("gathered") && o["gathered"].is_object()) o["gathered"].erase("exact");
      }
  }
  return rec;
}

namespace {

json environment_free(json g) {
  g.erase("environments");
  g.erase("env");
  if (!g.contains("ranks") || !g["ranks"].is_array()) return g;
  for (auto& r : g["ranks"]) {
    if (!r.is_object()) continue;
    // what a library does inside a launch: the check counts its device
    // kernels, whose names a new cuBLAS or cuDNN changes
    if (r.contains("kernels") && r["kernels"].is_array())
      for (auto& k : r["kernels"])
        if (k.is_object() && k.contains("device_kernels") && k["device_kernels"].is_array())
          k["device_kernels"] = k["device_kernels"].size();
    // each GEMM's algorithm is the program; how it was timed and where it
    // came from are the bless's
    if (r.contains("gemm_algos") && r["gemm_algos"].is_array())
      for (auto& e : r["gemm_algos"])
        if (e.is_object()) e = json{{"shape", text_of(e, "shape")}, {"algo", text_of(e, "algo")}};
    if (r.contains("outputs") && r["outputs"].is_array())
      for (auto& o : r["outputs"]) {
        if (!o.is_object()) continue;
        o.erase("exact");
        o.erase("fingerprint");
        if (o.contains("gathered") && o["gathered"].is_object()) o["gathered"].erase("fingerprint");
      }
    // the accuracy's figures are this environment's; whether each output
    // passed is not
    if (r.contains("accuracy") && r["accuracy"].is_object()) {
      json kept = {{"status", r["accuracy"].value("status", "")}, {"outputs", json::array()}};
      for (const json& o : array_of(r["accuracy"], "outputs"))
        kept["outputs"].push_back({{"name", text_of(o, "name")}, {"pass", o.value("pass", false)}});
      r["accuracy"] = kept;
    }
  }
  return g;
}

// Every output's fingerprint (and the gathered copy's) of `a` within
// tolerance of `b`'s, matched by rank and name; `why` names the first that
// is not.
bool fingerprints_agree(const json& a, const json& b, std::string* why) {
  auto ra = ranks_by_id(a), rb = ranks_by_id(b);
  for (const auto& [id, rank] : ra) {
    auto other = rb.find(id);
    if (other == rb.end()) continue;  // the environment-free part says so
    auto ob = outputs_by_name(*other->second);
    for (const auto& [name, o] : outputs_by_name(*rank)) {
      auto it = ob.find(name);
      if (it == ob.end()) continue;
      for (const char* part : {"", "gathered"}) {
        const json* x = *part ? field(*o, part) : o;
        const json* y = *part ? field(*it->second, part) : it->second;
        if (!x || !y) continue;
        const json* fx = field(*x, "fingerprint");
        const json* fy = field(*y, "fingerprint");
        std::string w;
        if (fx && fy && !fingerprints_close(*fx, *fy, &w)) {
          *why = "rank " + std::to_string(id) + " output " + name + (*part ? " (gathered)" : "") +
                 ": fingerprint outside tolerance: " + w;
          return false;
        }
      }
    }
  }
  return true;
}

// The digests `golden` holds for environment `fp`, rank by rank and output
// by output, as one text ("" where it holds none).
std::string digests_of(const json& golden, const std::string& fp) {
  std::string out;
  for (const auto& [id, rank] : ranks_by_id(golden))
    for (const auto& [name, o] : outputs_by_name(*rank)) {
      const json* ex = field(*o, "exact");
      const json* d = ex ? field(*ex, fp.c_str()) : nullptr;
      out += std::to_string(id) + "/" + name + "=" + (d ? text_of(d) : std::string("-")) + "\n";
    }
  return out;
}

// The first place two environment-free goldens differ, for a message:
// "ranks/0/kernel_count" (JSON Pointer, as a patch names it).
std::string first_difference(const json& a, const json& b) {
  const json patch = json::diff(a, b);
  if (patch.empty()) return "";
  const json& op = patch[0];
  std::string path = text_of(op, "path");
  const std::string kind = text_of(op, "op");
  if (kind == "replace") {
    const json old = a.at(json::json_pointer(path));
    const std::string was = old.is_primitive() ? old.dump() : "...";
    const std::string now = op["value"].is_primitive() ? op["value"].dump() : "...";
    return path + " " + was + " -> " + now;
  }
  return path + (kind == "add" ? " added" : kind == "remove" ? " removed" : " " + kind);
}

}  // namespace

std::string environment_free_text(const json& golden) { return dump_record(environment_free(golden)); }

std::string environment_difference(const json& from, const json& to) {
  std::vector<std::string> diff;
  json keys = json::object();
  if (from.is_object())
    for (auto it = from.begin(); it != from.end(); ++it) keys[it.key()] = true;
  if (to.is_object())
    for (auto it = to.begin(); it != to.end(); ++it) keys[it.key()] = true;
  for (auto it = keys.begin(); it != keys.end(); ++it) {
    if (it.key() == "fingerprint") continue;
    const std::string a = text_of(from, it.key().c_str()), b = text_of(to, it.key().c_str());
    if (a != b) diff.push_back(it.key() + " " + (a.empty() ? "(none)" : a) + " -> " + (b.empty() ? "(none)" : b));
  }
  return join(diff, ", ");
}

std::string nearest_environment_difference(const std::map<std::string, record::Environment>& environments,
                                           const record::Environment& env) {
  std::string best;
  size_t fewest = std::numeric_limits<size_t>::max();
  const json to(env);
  for (const auto& [fp, e] : environments) {
    const std::string d = environment_difference(json(e), to);
    const size_t n = d.empty() ? 0 : 1 + static_cast<size_t>(std::count(d.begin(), d.end(), ','));
    if (n < fewest) {
      fewest = n;
      best = d;
    }
  }
  return best;
}

BlessPlan plan_bless(const json* old, const json& fresh) {
  BlessPlan p;
  p.golden = fresh;
  if (!old) return p;  // Created
  const json* envs = field(*old, "environments");
  const json& ours = fresh.at("environments");
  const std::string fp = ours.begin().key();
  const int old_count = envs && envs->is_object() ? static_cast<int>(envs->size()) : 0;
  const bool known = envs && envs->is_object() && envs->contains(fp);
  auto replace = [&](const std::string& why) {
    p.kind = BlessPlan::Replaced;
    p.golden = fresh;
    p.dropped = old_count - (known ? 1 : 0);
    p.why = why;
    return p;
  };
  const json a = environment_free(*old), b = environment_free(fresh);
  if (a != b) return replace(first_difference(a, b));
  // the same environment: its digests decide; if they moved, the state
  // moved, and the other environments' digests describe the old one
  if (known && digests_of(*old, fp) != digests_of(fresh, fp)) return replace("this environment's exact digests changed");
  std::string why;
  if (!known && !fingerprints_agree(*old, fresh, &why)) return replace(why);
  // the same state: the golden is kept as it is, but for environments
  // recorded under another key (another set of fields: an older
  // fusegate's), which no run can match again, and this environment's
  // digests where they are new
  p.golden = *old;
  auto fields = [](const json& e) {
    std::vector<std::string> keys;
    for (auto it = e.begin(); it != e.end(); ++it) keys.push_back(it.key());
    return keys;
  };
  for (auto it = envs->begin(); it != envs->end(); ++it)
    if (fields(*it) != fields(ours.at(fp))) {
      ++p.unmatchable;
      p.golden["environments"].erase(it.key());
      for (auto& r : p.golden["ranks"])
        for (auto& o : r["outputs"]) o["exact"].erase(it.key());
    }
  if (known) {
    p.kind = p.unmatchable > 0 ? BlessPlan::Pruned : BlessPlan::Unchanged;
    return p;
  }
  p.kind = BlessPlan::Added;
  p.golden["environments"][fp] = ours.at(fp);
  auto fresh_ranks = ranks_by_id(fresh);
  for (auto& r : p.golden["ranks"]) {
    auto it = fresh_ranks.find(r.value("rank", -1));
    if (it == fresh_ranks.end()) continue;
    auto outs = outputs_by_name(*it->second);
    for (auto& o : r["outputs"]) {
      auto fo = outs.find(text_of(o, "name"));
      if (fo != outs.end()) o["exact"][fp] = fo->second->at("exact").at(fp);
    }
  }
  return p;
}

}  // namespace fg
